/* SPDX-License-Identifier: MIT */
/* Kineto semantics on top of the JSON tokenizer: builds one tl_rank. */
#ifndef GPUPROF_IMPORT_KINETO_H
#define GPUPROF_IMPORT_KINETO_H

#include <string.h>

#include "import.h"
#include "jsontok.h"
#include "memcap.h"
#include "timeline_int.h"

enum role { R_SKIP, R_TOP, R_EVENTS, R_EVENT, R_ARGS, R_ARGS_ARR, R_DIST, R_DEVS, R_DEV };

enum key {
	K_NONE,
	/* top */
	K_TRACE_EVENTS,
	K_DIST,
	K_DEVPROPS,
	K_TRACE_NAME,
	K_BASE_TIME,
	K_RANK,
	/* event */
	K_PH,
	K_CAT,
	K_NAME,
	K_TS,
	K_DUR,
	K_PID,
	K_TID,
	K_ARGS,
	K_ID,
	/* args */
	K_STREAM,
	K_CORR,
	K_EXT_ID,
	K_DEVICE,
	K_CONTEXT,
	K_QUEUED,
	K_BYTES,
	K_WAIT_STREAM,
	K_WAIT_CORR,
	K_WAIT_EVID,
	K_COLL,
	K_DTYPE,
	K_IN_NEL,
	K_OUT_NEL,
	K_GROUP_SIZE,
	K_PG_NAME,
	K_PG_DESC,
	K_PG_RANKS,
	K_IN_SPLIT,
	K_OUT_SPLIT,
	K_GRID,
	K_BLOCK,
	K_META_NAME,
	K_LABELS,
	/* deviceProperties[] */
	K_D_ID,
	K_D_NAME,
	K_D_MEM,
	K_D_MAJOR,
	K_D_MINOR,
	K_D_SMS,
	K_D_WARP,
	K_D_TPB,
	K_D_TPSM,
	K_D_REGS,
	K_D_SHMEM,
};

enum { KF_TS = 1, KF_DUR = 2, KF_CAT = 4, KF_PH = 8, KF_ID = 16, KF_NAME = 32 };
#define NAME_DONE 0x80000000u

/* Scratch for the event being parsed. */
struct kev {
	uint32_t index;
	uint32_t have; /* KF_* bits */
	char ph;
	bool ts_float, dur_bad, ts_bad;
	uint32_t name, cat;
	bool cat_trace;
	int64_t ts_ns, dur_ns;
	double ts_d, dur_d;
	int64_t pid, tid;
	uint32_t pidtid_flags;
	int64_t stream, correlation, external_id, device;
	uint32_t meta_value;
	bool has_args;
	struct tl_args a;
};

#define KIMP_SC_BITS 8
/* kimp_intern() cache entry: id 0 = empty. */
struct kimp_sc {
	uint64_t a, b;
	uint32_t len, id;
};

/* Two words that, with the length, identify s[0..n) when n <= 16; n >= 1.
 * Overlapping loads: no byte beyond s[n - 1] is read. */
static inline void key_words(const char *s, size_t n, uint64_t *a, uint64_t *b)
{
	if (n >= 8) {
		memcpy(a, s, 8);
		memcpy(b, s + n - 8, 8);
	} else if (n >= 4) {
		uint32_t x, y;

		memcpy(&x, s, 4);
		memcpy(&y, s + n - 4, 4);
		*a = x;
		*b = y;
	} else {
		*a = (uint64_t)(uint8_t)s[0] | (uint64_t)(uint8_t)s[n / 2] << 8 |
		     (uint64_t)(uint8_t)s[n - 1] << 16;
		*b = 0;
	}
}

struct kimp {
	struct strtab *st;
	struct tl_rank *r;
	struct tl_build cap;
	struct import_result *res;
	uint32_t max_events;

	uint8_t *cat_kind; /* per string id: kind + 1, 0 = not computed */
	uint32_t ncat_kind;
	uint32_t *name_flags; /* per string id: flags | NAME_DONE */
	uint32_t nname_flags;

	uint32_t depth;
	uint8_t role[16];
	uint8_t key[16];
	uint32_t arr_elem;

	struct kev e;
	struct tl_device dev;

	bool have_rank;
	int64_t rank;
	bool rounding;
	uint32_t rounding_from; /* rows before this one were pushed before rounding */
	/* A speculative piece parse (kineto_spec.c): stop at the end of the
	 * events array. */
	bool spec;
	/* spec: ids interned in this segment, in first-use order */
	uint32_t gen;	    /* the segment's number, from 1 */
	uint32_t *seen_gen; /* per id: gen of its last noted use */
	uint32_t seen_cap;
	uint32_t *first;
	uint32_t nfirst, first_cap;
	/* populates the reserved room of ev and args (kimp_reserve) */
	struct bigalloc_popper pop;
	/* the import's memory limit and reservation; NULL: none (the
	 * speculative parses, whose pieces are bounded) */
	struct tl_memcap *mem;
	char err[200];
	struct kimp_sc sc[1u << KIMP_SC_BITS];
};

extern const struct json_sax kineto_sax;

/* Shared by kineto.c (containers, keys) and kineto_event.c (values). */
void kimp_warn(struct kimp *k, enum import_warn w);
int kimp_oom(struct kimp *k, int err);
/* One more element of traceEvents; -E2BIG (message in k->err) past
 * UINT32_MAX of them (so every index stays below TL_NO_INDEX). */
int kimp_count_raw(struct kimp *k);
int kimp_intern(struct kimp *k, const struct jv *v, uint32_t *id);
bool kimp_get_i64(struct kimp *k, const struct jv *v, int64_t *out, bool quiet_str);
int kimp_set_time(struct kimp *k, const struct jv *v, int64_t *ns, double *d, bool *bad);
int kimp_on_value(void *ctx, const struct jv *v);
int kimp_on_end(void *ctx, char type);
uint8_t kimp_cat_kind(struct kimp *k, uint32_t cat);
uint32_t kimp_name_flags(struct kimp *k, uint32_t name);

/* r must be allocated; kimp_finish frees caches, not r. */
int kimp_init(struct kimp *k, struct strtab *st, struct tl_rank *r, struct import_result *res,
	      uint32_t max_events);
void kimp_finish(struct kimp *k);
/* Before ev or args grow by add_ev / add_args rows: the populate thread
 * stops if they are about to move. */
static inline void kimp_pop_guard(struct kimp *k, uint32_t add_ev, uint32_t add_args)
{
	if (k->pop.running && ((uint64_t)k->r->nev + add_ev > k->cap.ev_cap ||
			       (uint64_t)k->r->nargs + add_args > k->cap.args_cap))
		bigalloc_popper_stop(&k->pop);
}

/* Before ev and args grow by add_ev / add_args rows: the import's memory
 * then, with the copy a move of the arrays makes, within its limits.
 * 0, or -EFBIG with k->err set. */
int kimp_mem_grow(struct kimp *k, uint32_t add_ev, uint32_t add_args, uint32_t add_meta);

/* done of total input bytes parsed: give the event and args arrays room for
 * the counts the rest of the input will likely bring, in one move (see
 * bigalloc_reserve; a file of events of one kind is the likely case), and
 * (populate) start populating that room at idle priority (bigalloc_popper). More rows than
 * that just grow the arrays as before (the populate thread stops first).
 * 0 or -ENOMEM. */
int kimp_reserve(struct kimp *k, uint64_t done, uint64_t total, bool populate);
/* At the end of the input: the populate thread stops, and the room it
 * populated past the rows in use goes back (kimp_finish does it too). */
void kimp_stop_pop(struct kimp *k);

#endif /* GPUPROF_IMPORT_KINETO_H */
