/* SPDX-License-Identifier: MIT */
/* Internals of the communication metrics (daemon/analysis/comm). */
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
	CT_ALLREDUCE = 0,
	CT_ALLGATHER,
	CT_REDUCESCATTER,
	CT_ALLTOALL,
	CT_SENDRECV,
	CT_SEND,
	CT_RECV,
	CT_BROADCAST,
	CT_REDUCE,
	CT_GATHER,
	CT_SCATTER,
	CT_BARRIER,
	CT_UNKNOWN,
	CT_N
};
extern const char *const ctype_name[CT_N];

/* One communication kernel (times in ns, file clock); 32 bytes, as the
 * metrics stream millions of them. */
#define CEV_MAX_GROUPS (1u << 25)
_Static_assert(CT_N <= 16 && TAG_N <= 8, "struct cev's tag/type bit-fields");
struct cev {
	int64_t s, e;
	int64_t bytes;	     /* S as nccl-tests counts it; -1 unknown */
	int32_t n;	     /* group size, -1 unknown */
	uint32_t group : 25; /* index into cctx.groups */
	uint32_t tag : 3;    /* enum ctag */
	uint32_t type : 4;   /* enum ctype */
};

/* struct ival, ival_total() and ival_overlap() come from the timeline
 * analyses (one implementation of interval sums and intersections). */
#include "analysis/internal.h"

/* A process group (or NCCL communicator) seen in the capture. */
struct cgroup {
	uint32_t key;			 /* string id: pg name, else description, else ranks text */
	uint32_t name, desc, ranks_text; /* string ids, 0 absent */
	int32_t size;			 /* group size, -1 */
	uint8_t tag;			 /* of its events that no "collective" rule moves */
	const char *source;		 /* how the tag was decided (static string) */
	/* per collective type: the tag (TTAG_UNSET until the first event of
	 * the type); tag_rule: a "collective" rule decided it */
	uint8_t ttag[CT_N];
	bool tag_rule[CT_N];
	uint64_t events;
	uint64_t tevents[CT_N];
	uint64_t nranks_seen;
};
#define TTAG_UNSET 0xff

struct crule {
	regex_t re;
	bool has_re;
	regex_t coll;
	bool has_coll;
	int32_t *ranks; /* exact PG ranks, sorted as given */
	uint32_t nranks;
	uint8_t tag;
};

/* Why a rank's last step is not counted. */
enum left_out { LO_NONE = 0, LO_INCOMPLETE, LO_HTA, LO_OLD_CAPTURE };

/* Per selected rank: its comm events (by start), other GPU work (in the
 * context's shared buffers while the rank is processed), iterations. */
struct crank {
	const struct tl_rank *r;
	struct cev *ev;
	uint32_t nev;
	struct ival *comp, *mem; /* compute kernels, memcpy/memset (by start) */
	uint32_t ncomp, nmem;
	struct ival *iters; /* iteration windows, by start */
	uint32_t niters;
	double link_bw; /* B_hw for this rank (bytes/s), 0 unknown */
	bool tail;	/* the step filter's dropped rows are read too */
	/* the last step, when left out: why (enum left_out), its start, and
	 * for LO_INCOMPLETE its kernels against the fewest of the earlier steps */
	uint8_t left_out;
	int64_t left_start;
	uint32_t left_kernels, left_min;
	int64_t left_comm_ns;  /* iterations=hta: the tail's comm kernel time, not read */
	int64_t comm_total_ns; /* every comm kernel's duration, inside iterations or not */
};

/*
 * Straggler view, built as the ranks go by: instance k of a process group
 * (its k-th kernel on each rank, issue order) keeps the earliest and the
 * latest start over the ranks so far, the rank that started last (the
 * first of equals) and that kernel's type. Memory: one rank's events.
 */
struct sginst {
	int64_t lo, hi;
	uint32_t last; /* index into cctx.ranks */
	uint8_t type;
};

struct sggroup {
	struct sginst *v;
	uint32_t n, cap;
	uint32_t cur;		   /* the current rank's kernels of the group so far */
	uint32_t with, nmin, nmax; /* ranks with kernels of the group; their min/max count */
};

/* Buffers reused from rank to rank (sized for the largest), so the pages
 * are faulted in once per analysis, not once per rank. */
struct cbuf {
	struct cev *ev;
	struct ival *comp, *mem;
	void *tmp;     /* sort scratch */
	uint64_t *gpu; /* bit per event position: GPU-side (in by_stream) */
	size_t cap, gpu_words;
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
	double link_bw;	       /* request/config B_hw, 0 = from the device name */
	const char *iter_name; /* NULL = ProfilerStep#N */
	bool iter_prefix;
	int64_t size[TAG_N]; /* tp/pp/dp/ep given by the user, 0 unknown */
	bool windows;
	bool hta_iters; /* iterations=hta: without the step HTA's filter drops */
	int64_t top;
	struct crule *rules;
	uint32_t nrules;

	uint8_t *sclass;    /* per string id: 0 unseen, 1 comm kernel, 2 compute, 3 other */
	int8_t *coll_type;  /* per string id: collective type + 1, 0 unseen, -1 none */
	int8_t *el_size;    /* per string id: dtype size + 1, 0 unseen, -1 unknown */
	uint8_t *iter_mark; /* with iter_name, per string id: 0 unseen, 1 mark, 2 not */
	uint32_t nstrs;
	uint32_t wait_id;   /* string id of "wait", 0 if absent */
	uint32_t *group_of; /* per string id (group key): group index + 1 */
	struct cgroup *groups;
	uint32_t ngroups, groups_cap;
	uint32_t *gcount;	/* per group: comm events of the rank being extracted */
	uint64_t tcount[TAG_N]; /* per tag: comm events of the rank being extracted */
	struct sggroup *sg;	/* per group */
	uint32_t nsg;

	struct crank *ranks;
	uint32_t nranks;
	struct cbuf buf;
	uint64_t comm_events; /* over the ranks extracted so far */
	bool iter_marks;      /* some rank had iteration annotations */
};

/* comm_params.c */
int cerr(struct cctx *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const cJSON *cparam(const struct cctx *c, const char *key);
int comm_parse_params(struct cctx *c);
void comm_free_rules(struct cctx *c);
/* Tag of group g: user rules without "collective", then names, then
 * sizes/stride, else OTHER. */
void comm_tag_group(struct cctx *c, struct cgroup *g);
/* Tag of group g's events of one collective type: the first user rule that
 * matches the group and the type, else the group's tag. */
uint8_t comm_tag_type(struct cctx *c, struct cgroup *g, uint8_t type);

/* comm_extract.c: the selected ranks (c->ranks[].r, link_bw), then each
 * rank's events into the shared buffers (valid until the next rank). */
int comm_select(struct cctx *c);
int comm_extract_rank(struct cctx *c, struct crank *cr);
void cbuf_free(struct cbuf *b);

/* comm_types.c */
bool comm_kernel_name(const char *s);
int type_from_coll(const char *s);	 /* "Collective name" → enum ctype, -1 */
uint8_t type_from_kernel(const char *s); /* NCCL kernel name → enum ctype */
int64_t dtype_size(const char *s);
int64_t bytes_of(uint8_t type, const struct tl_args *a, int64_t el); /* S, -1 unknown */
double busbw_factor(uint8_t type, int32_t n);

/* comm_util.c */
/* n bytes, huge-page backed when large; freed with big_free(p, same n). */
void *big_alloc(size_t n);
void big_free(void *p, size_t n);
/* By start, stable; the result is in v or in tmp (returned). */
struct cev *sort_cev(struct cev *v, uint32_t n, struct cev *tmp);
struct ival *sort_ival(struct ival *v, uint32_t n, struct ival *tmp);
void sort_ival_inplace(struct ival *v, uint32_t n, struct ival *tmp); /* result in v */
/* First index from i on whose start is >= t (v sorted by start; galloping). */
uint32_t first_cev_at(const struct cev *v, uint32_t i, uint32_t n, int64_t t);
uint32_t first_ival_at(const struct ival *v, uint32_t i, uint32_t n, int64_t t);
/* Union of two merged lists into out (room for na + nb); returns count. */
uint32_t ival_union2(const struct ival *a, uint32_t na, const struct ival *b, uint32_t nb,
		     struct ival *out);
/* ival_overlap() of a and b (each sorted, disjoint), b searched for a's span. */
int64_t overlap_window(const struct ival *a, uint32_t na, const struct ival *b, uint32_t nb);
int cmp_double(const void *a, const void *b);
/* Linear interpolation between closest ranks (numpy default, type 7);
 * v sorted ascending; NaN when n == 0. */
double pctl(const double *v, size_t n, double p);
/* Same value without sorting (quickselect; reorders v). */
double pctl_unsorted(double *v, size_t n, double p);

/* comm_metrics.c */
int comm_metrics(struct cctx *c, cJSON *root);

/* comm_straggler.c */
/* Room for the rank's kernels (counts in c->gcount); then every kernel of
 * the rank goes through sg_put() in start order; then comm_straggler_end(). */
int comm_straggler_begin(struct cctx *c);
void comm_straggler_end(struct cctx *c);
int comm_straggler(struct cctx *c, cJSON *root);

static inline void sg_put(struct cctx *c, uint32_t rank, const struct cev *v)
{
	struct sggroup *g = &c->sg[v->group];
	uint32_t k = g->cur++;
	struct sginst *x = &g->v[k];

	if (k == g->n) {
		g->n++;
		*x = (struct sginst){v->s, v->s, rank, v->type};
		return;
	}
	if (v->s < x->lo)
		x->lo = v->s;
	if (v->s > x->hi)
		x->hi = v->s, x->last = rank, x->type = v->type;
}

/* JSON helpers that record allocation failure. Keys must be static strings
 * (they are not copied). */
cJSON *cj_obj(struct cctx *c, cJSON *parent, const char *key);
cJSON *cj_arr(struct cctx *c, cJSON *parent, const char *key);
void cj_num(struct cctx *c, cJSON *o, const char *key, double v); /* NaN → null */
/*
 * A time given in ns as key's value in µs. An integral ns value (every sum
 * of integer timestamps) is written exactly as a raw JSON number with at
 * most 3 decimals: cJSON's printer keeps 15 significant digits, so an
 * absolute start of 4458676639291.351 µs would print as ...291.35. Raw
 * nodes also carry the value in valuedouble; read them with cj_value().
 */
void cj_us(struct cctx *c, cJSON *o, const char *key, double ns); /* NaN → null */
cJSON *cj_us_item(double ns);
/* Bytes: null when there were events but none had a size (unknown, not 0). */
void cj_bytes(struct cctx *c, cJSON *o, const char *key, double bytes, uint64_t events,
	      uint64_t unknown);
/* A number of the result tree, raw (cj_us) or not; NaN otherwise. */
double cj_value(const cJSON *v);
void cj_str(struct cctx *c, cJSON *o, const char *key, const char *s);
void cj_bool(struct cctx *c, cJSON *o, const char *key, bool v);
void cj_push(struct cctx *c, cJSON *arr, cJSON *item);

static inline double ns_us(double ns)
{
	return ns / 1000.0;
}

#endif
