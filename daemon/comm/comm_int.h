/* SPDX-License-Identifier: MIT */
/* Internals of the communication metrics (daemon/comm). */
#ifndef GPUPROF_COMM_INT_H
#define GPUPROF_COMM_INT_H

#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>

#include "comm.h"
#include "timeline/timeline.h"

enum ctag { TAG_DP = 0, TAG_TP, TAG_PP, TAG_EP, TAG_OTHER, TAG_N };
extern const char *const tag_name[TAG_N];

enum ctype {
	CT_ALLREDUCE = 0, CT_ALLGATHER, CT_REDUCESCATTER, CT_ALLTOALL, CT_SENDRECV, CT_SEND,
	CT_RECV, CT_BROADCAST, CT_REDUCE, CT_GATHER, CT_SCATTER, CT_BARRIER, CT_UNKNOWN, CT_N
};
extern const char *const ctype_name[CT_N];

/* One communication kernel. Times in ns (file clock). */
struct cev {
	int64_t s, e;
	int64_t bytes; /* S as nccl-tests counts it; -1 unknown */
	int64_t stream;
	int32_t n; /* group size, -1 unknown */
	uint32_t group; /* index into cctx.groups */
	uint8_t tag, type;
	uint16_t pad;
	int32_t iter; /* iteration on its rank, -1 outside every iteration */
};

/* struct ival, ival_total() and ival_overlap() come from the timeline
 * analyses (one implementation of interval sums and intersections). */
#include "analysis/internal.h"

/* A process group (or NCCL communicator) seen in the capture. */
struct cgroup {
	uint32_t key; /* string id: pg name, else description, else ranks text */
	uint32_t name, desc, ranks_text; /* string ids, 0 absent */
	int32_t size; /* group size, -1 */
	uint8_t tag;
	const char *source; /* how the tag was decided (static string) */
	uint64_t events;
	uint64_t nranks_seen;
};

struct crule {
	regex_t re;
	bool has_re;
	regex_t coll;
	bool has_coll;
	int32_t *ranks; /* exact PG ranks, sorted as given */
	uint32_t nranks;
	uint8_t tag;
};

/* Per selected rank: its comm events (by start), other GPU work, iterations. */
struct crank {
	const struct tl_rank *r;
	struct cev *ev;
	uint32_t nev;
	struct ival *comp, *mem; /* compute kernels, memcpy/memset (by start) */
	uint32_t ncomp, nmem;
	struct ival *iters; /* iteration windows, by start */
	uint32_t niters;
	double link_bw; /* B_hw for this rank (bytes/s), 0 unknown */
	int64_t comm_total_ns; /* every comm kernel's duration, inside iterations or not */
};

struct cctx {
	const struct timeline *tl;
	const cJSON *params, *defaults;
	char *err;
	size_t errlen;
	bool oom;

	/* params */
	bool has_rank;
	int32_t rank;
	double link_bw; /* request/config B_hw, 0 = from the device name */
	const char *iter_name; /* NULL = ProfilerStep#N */
	bool iter_prefix;
	int64_t size[TAG_N]; /* tp/pp/dp/ep given by the user, 0 unknown */
	bool windows;
	int64_t top;
	struct crule *rules;
	uint32_t nrules;

	uint8_t *sclass; /* per string id: 0 unseen, 1 comm kernel, 2 compute, 3 other */
	int8_t *coll_type; /* per string id: collective type + 1, 0 unseen, -1 none */
	int8_t *el_size; /* per string id: dtype size + 1, 0 unseen, -1 unknown */
	uint32_t nstrs;
	uint32_t wait_id; /* string id of "wait", 0 if absent */
	uint32_t *group_of; /* per string id (group key): group index + 1 */
	struct cgroup *groups;
	uint32_t ngroups, groups_cap;

	struct crank *ranks;
	uint32_t nranks;
	bool iter_marks; /* some rank had iteration annotations */
};

/* comm_params.c */
int cerr(struct cctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const cJSON *cparam(const struct cctx *c, const char *key);
int comm_parse_params(struct cctx *c);
void comm_free_rules(struct cctx *c);
/* Tag of group g: user rules, then names, then sizes/stride, else OTHER. */
void comm_tag_group(struct cctx *c, struct cgroup *g, uint8_t type);

/* comm_extract.c */
int comm_extract(struct cctx *c);
int64_t dtype_size(const char *s);
double busbw_factor(uint8_t type, int32_t n);

/* comm_util.c */
void sort_cev(struct cev *v, uint32_t n, struct cev *tmp); /* by start, stable */
void sort_ival(struct ival *v, uint32_t n, struct ival *tmp);
uint32_t ival_merge_sorted(struct ival *v, uint32_t n); /* in place, sorted input */
/* Union of two merged lists into out (room for na + nb); returns count. */
uint32_t ival_union2(const struct ival *a, uint32_t na, const struct ival *b, uint32_t nb,
		     struct ival *out);
int cmp_double(const void *a, const void *b);
/* Linear interpolation between closest ranks (numpy default, type 7);
 * v sorted ascending; NaN when n == 0. */
double pctl(const double *v, size_t n, double p);
/* Same value without sorting (quickselect; reorders v). */
double pctl_unsorted(double *v, size_t n, double p);

/* comm_metrics.c */
int comm_metrics(struct cctx *c, cJSON *root);

/* comm_straggler.c */
int comm_straggler(struct cctx *c, cJSON *root);

/* JSON helpers that record allocation failure. */
cJSON *cj_obj(struct cctx *c, cJSON *parent, const char *key);
cJSON *cj_arr(struct cctx *c, cJSON *parent, const char *key);
void cj_num(struct cctx *c, cJSON *o, const char *key, double v); /* NaN → null */
void cj_str(struct cctx *c, cJSON *o, const char *key, const char *s);
void cj_bool(struct cctx *c, cJSON *o, const char *key, bool v);
void cj_push(struct cctx *c, cJSON *arr, cJSON *item);

static inline double ns_us(double ns)
{
	return ns / 1000.0;
}

#endif
