// SPDX-License-Identifier: MIT
/* The timeline of a live capture from its GPU job intervals (live.h). */
#include "live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_launch_abi.h" /* enum gpu_api: aux32 of a launch */
#include "capture/capture.h"
#include "capture/gpumatch.h"
#include "timeline_int.h"

/* Launch entry points by enum gpu_api, and the Kineto category of each. */
static const struct {
	const char *name, *cat;
} api[GPU_API_MAX] = {
	[GPU_API_UNKNOWN] = {"launch", "cuda_runtime"},
	[GPU_API_ZE_APPEND] = {"zeCommandListAppendLaunchKernel", "xpu_runtime"},
	[GPU_API_ZE_COOPERATIVE] = {"zeCommandListAppendLaunchCooperativeKernel", "xpu_runtime"},
	[GPU_API_ZE_INDIRECT] = {"zeCommandListAppendLaunchKernelIndirect", "xpu_runtime"},
	[GPU_API_ZE_WITH_PARAMS] = {"zeCommandListAppendLaunchKernelWithParameters", "xpu_runtime"},
	[GPU_API_ZE_WITH_ARGS] = {"zeCommandListAppendLaunchKernelWithArguments", "xpu_runtime"},
	[GPU_API_ZE_USDT] = {"zeCommandListAppendLaunchKernel", "xpu_runtime"},
	[GPU_API_CU_LAUNCH] = {"cuLaunchKernel", "cuda_driver"},
	[GPU_API_CU_LAUNCH_EX] = {"cuLaunchKernelEx", "cuda_driver"},
	[GPU_API_CU_COOPERATIVE] = {"cuLaunchCooperativeKernel", "cuda_driver"},
	[GPU_API_HIP_LAUNCH] = {"hipLaunchKernel", "cuda_runtime"},
	[GPU_API_HIP_MODULE_LAUNCH] = {"hipModuleLaunchKernel", "cuda_runtime"},
	[GPU_API_HIP_EXT_LAUNCH] = {"hipExtLaunchKernel", "cuda_runtime"},
};

/* A name interned once per distinct source (tl string id + 1; 0 = not yet)
 * with the flags its text gives. */
struct name {
	uint32_t id1, flags;
};

/* The categories of CUPTI rows, as Kineto writes them (kinds.c). */
enum { C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC, C_RUNTIME, C_DRIVER, C_ANNOTATION, C_N };
static const char *const cupti_cat[C_N] = {"kernel",	     "gpu_memcpy",   "gpu_memset",
					   "cuda_sync",	     "cuda_runtime", "cuda_driver",
					   "user_annotation"};
/* enum gpu_cupti_kind -> category; a graph launch is GPU work like a kernel */
static const uint8_t cupti_kind_cat[] = {C_KERNEL, C_MEMCPY, C_MEMSET, C_SYNC, C_KERNEL};
#define CUPTI_KINDS (sizeof(cupti_kind_cat) / sizeof(cupti_kind_cat[0]))

struct live {
	const struct capture *c;
	struct timeline *tl;
	struct gpu_match m;
	uint32_t cat_kernel;
	/* CUPTI rows: categories (with their kind), names per capture string
	 * id as they are, and the engine name of an unnamed interval */
	struct name cat[C_N];
	uint8_t cat_kind[C_N];
	struct name *cname, unnamed[CUPTI_KINDS + 2]; /* + a call's, a mark's */
	bool cupti;				      /* the rank being built has CUPTI records */
	/* per capture string id (ids past nstrs share slot 0, as they read as
	 * no string): the kernel named by a launch; an interval's own name,
	 * plain and as a copy ("Memcpy …") */
	struct name *kname, *ename[2];
	struct name api_name[GPU_API_MAX], api_cat[GPU_API_MAX];
	uint8_t api_kind[GPU_API_MAX];
};

/* Intern s[0..len) into *slot unless done; its id, or -ENOMEM / -E2BIG. */
static int64_t intern(struct live *L, struct name *slot, const char *s, size_t len)
{
	if (!slot->id1) {
		int64_t id = strtab_intern(&L->tl->st, s, len);
		if (id < 0)
			return id;
		slot->id1 = (uint32_t)id + 1;
		slot->flags = tl_flags_from_name(s, len);
	}
	return slot->id1 - 1;
}

static uint32_t str_slot(const struct capture *c, uint32_t id)
{
	return id > c->nstrs ? 0 : id;
}

/* A kernel name string id's text up to the NUL before a launch's
 * geometry. */
static const char *kernel_name(const struct capture *c, uint32_t name, size_t *len)
{
	const char *s = capture_str(c, name, len);
	const char *nul = s ? memchr(s, '\0', *len) : NULL;
	if (nul)
		*len = (size_t)(nul - s);
	return s ? s : "";
}

/* The name of interval iv: the kernel of its last launch (record index
 * li, or NULL), as the CUPTI join names a launch known only by handle
 * (gpumatch.h), or its engine, "Memcpy …" on a copy engine. */
static const struct name *interval_name(struct live *L, const struct store_rec *iv,
					const struct store_rec *last, uint32_t li, int *err)
{
	struct name *slot;
	const char *s;
	char buf[160];
	size_t len;

	if (last) {
		uint32_t kn = gpu_launch_name(L->m.name, li, last);

		slot = &L->kname[str_slot(L->c, kn)];
		if (!slot->id1) {
			s = kernel_name(L->c, kn, &len);
			*err = (int)intern(L, slot, s, len);
		}
		return slot;
	}
	bool copy = gpu_engine_is_copy(iv->cpu >> 8, iv->cpu & 0xff);
	slot = &L->ename[copy][str_slot(L->c, iv->name)];
	if (slot->id1)
		return slot;
	s = capture_str(L->c, iv->name, &len);
	if (!s || !len)
		s = "gpu job", len = 7;
	if (copy) {
		int n = snprintf(buf, sizeof(buf), "Memcpy %.*s", (int)len, s);
		s = buf;
		len = n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
	}
	*err = (int)intern(L, slot, s, len);
	return slot;
}

static int push_interval(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *iv = &L->c->recs[i];
	const struct store_rec *last = NULL;
	uint32_t li = 0;
	int err = 0;

	if (L->m.count[i]) {
		li = L->m.launch[L->m.first[i] + L->m.count[i] - 1];
		last = &L->c->recs[li];
	}
	const struct name *nm = interval_name(L, iv, last, li, &err);
	if (err < 0)
		return err;
	struct tl_event e = {
		.ts_ns = (int64_t)iv->ts_ns,
		.dur_ns = (int64_t)iv->dur_ns,
		.pid = 0,
		.tid = (int64_t)iv->aux[0],
		.stream = (int64_t)iv->aux[0],
		/* launch probes' ids: not shown beside CUPTI's (live.h) */
		.correlation = last && last->aux[1] && !L->cupti ? (int64_t)last->aux[1] : -1,
		.external_id = -1,
		.index = r->nev,
		.name = nm->id1 - 1,
		.cat = L->cat_kernel,
		.kind = TL_K_KERNEL,
		.device = 0,
	};
	e.flags = nm->flags | TL_EV_GPU_SIDE;
	if (e.correlation >= 0)
		e.flags |= TL_EV_GPU_KERNEL_FILTER;
	err = tl_rank_push(r, cap, &e, NULL);
	return err == -ERANGE ? 0 : err; /* ts + dur past int64 ns: skipped */
}

static int push_launch(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *l = &L->c->recs[i];
	unsigned a = l->aux32 < GPU_API_MAX ? l->aux32 : GPU_API_UNKNOWN;
	if (!L->api_cat[a].id1) { /* first use: name, then category */
		const char *nm = api[a].name, *cat = api[a].cat;
		int64_t e = intern(L, &L->api_name[a], nm, strlen(nm));
		if (e >= 0)
			e = intern(L, &L->api_cat[a], cat, strlen(cat));
		if (e < 0)
			return (int)e;
		L->api_kind[a] = tl_kind_from_cat(cat, strlen(cat));
	}
	struct tl_event e = {
		.ts_ns = (int64_t)l->ts_ns,
		.dur_ns = 0, /* the probes see the call, not its return */
		.pid = l->pid,
		.tid = l->tid,
		.stream = -1,
		.correlation = l->aux[1] ? (int64_t)l->aux[1] : -1,
		.external_id = -1,
		.index = r->nev,
		.name = L->api_name[a].id1 - 1,
		.cat = L->api_cat[a].id1 - 1,
		.kind = L->api_kind[a],
		.device = -1,
	};
	e.flags = L->api_name[a].flags | TL_EV_LAUNCH_ANY;
	int err = tl_rank_push(r, cap, &e, NULL);
	return err == -ERANGE ? 0 : err; /* ts + dur past int64 ns: skipped */
}

/* A CUPTI category's id, interned on first use. */
static int64_t cat_id(struct live *L, unsigned c)
{
	if (!L->cat[c].id1)
		L->cat_kind[c] = tl_kind_from_cat(cupti_cat[c], strlen(cupti_cat[c]));
	return intern(L, &L->cat[c], cupti_cat[c], strlen(cupti_cat[c]));
}

/* The name of a CUPTI record as the collector wrote it; an unnamed
 * interval gets its engine's ("cuda/kernel"). */
static const struct name *cupti_name(struct live *L, const struct store_rec *x, int *err)
{
	struct name *slot = &L->cname[str_slot(L->c, x->name)];
	const char *s;
	char buf[32];
	size_t len = 0;

	if (slot->id1)
		return slot;
	s = capture_str(L->c, x->name, &len);
	if (s && len) {
		*err = (int)intern(L, slot, s, len);
		return slot;
	}
	unsigned k = x->cpu & 0xff; /* shown intervals are of known kinds */
	if (x->type == STORE_REC_GPU_INTERVAL) {
		s = gpu_engine_name(GPU_ENGINE_CUPTI, k, buf, sizeof(buf));
	} else if (x->type == STORE_REC_GPU_API) {
		k = CUPTI_KINDS;
		s = "cuda call";
	} else {
		k = CUPTI_KINDS + 1;
		s = "nvtx";
	}
	slot = &L->unnamed[k < CUPTI_KINDS + 2 ? k : 0];
	if (!slot->id1)
		*err = (int)intern(L, slot, s, strlen(s));
	return slot;
}

static int push_row(struct tl_rank *r, struct tl_build *cap, struct tl_event *e,
		    const struct tl_args *a)
{
	e->index = r->nev;
	int err = tl_rank_push(r, cap, e, a);
	return err == -ERANGE ? 0 : err; /* ts + dur past int64 ns: skipped */
}

/*
 * GPU activity as Kineto writes it: GPU row pid = device, tid = stream;
 * "Event Sync" and "Context Sync" have no stream (-1), as in Kineto's
 * traces, and count as GPU rows by their name (HTA's GPUKernelFilter).
 */
static int push_cupti(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *x = &L->c->recs[i];
	unsigned k = x->cpu & 0xff;
	uint32_t corr = (uint32_t)x->aux[1], st = STORE_CUPTI_STREAM(x->aux[0]);
	size_t len;
	int err = 0;

	if (k >= CUPTI_KINDS)
		return 0; /* a kind this build does not know: not guessed at */
	unsigned c = cupti_kind_cat[k];
	int64_t cat = cat_id(L, c);
	const struct name *nm = cupti_name(L, x, &err);
	if (cat < 0 || err < 0)
		return cat < 0 ? (int)cat : err;
	const char *text = timeline_str(L->tl, nm->id1 - 1, &len);
	uint32_t dev = c == C_SYNC ? gpu_match_sync_device(&L->m, x)
				   : STORE_CUPTI_DEVICE(x->aux[0]);
	struct tl_event e = {
		.ts_ns = (int64_t)x->ts_ns,
		.dur_ns = (int64_t)x->dur_ns,
		.pid = dev,
		.stream = st == UINT32_MAX ? -1 : (int64_t)st,
		.correlation = corr ? (int64_t)corr : -1,
		.external_id = -1,
		.name = nm->id1 - 1,
		.cat = (uint32_t)cat,
		.kind = L->cat_kind[c],
		.sync = c == C_SYNC ? tl_sync_from_name(text, len) : TL_SYNC_NONE,
		.device = (int32_t)dev,
		.flags = nm->flags,
	};
	if (e.sync == TL_SYNC_EVENT || e.sync == TL_SYNC_CONTEXT)
		e.stream = -1;
	e.tid = e.stream;
	if (e.stream != -1)
		e.flags |= TL_EV_GPU_SIDE;
	if ((e.stream >= 0 && e.correlation >= 0) || e.sync == TL_SYNC_EVENT ||
	    e.sync == TL_SYNC_CONTEXT)
		e.flags |= TL_EV_GPU_KERNEL_FILTER;
	struct tl_args a = {
		.wait_on_stream = -1,
		.wait_on_event_record_corr = -1,
		.wait_on_event_id = c == C_SYNC && x->aux32 ? (int64_t)x->aux32 : -1,
		.queued = -1,
		.bytes = c == C_MEMCPY || c == C_MEMSET ? (int64_t)STORE_BYTES64(x->aux32) : -1,
		.in_msg_nelems = -1,
		.out_msg_nelems = -1,
		.group_size = -1,
		.context = STORE_CUPTI_CONTEXT(x->aux[0]),
		.grid = {-1, -1, -1},
		.block = {-1, -1, -1},
	};
	/* the cudaEventRecord a wait waits on, as Kineto writes it: the
	 * stream it was recorded on and its call's correlation id */
	uint32_t w = L->m.wait ? L->m.wait[i] : 0;
	if (w) {
		const struct store_rec *ev = &L->c->recs[w - 1];
		a.wait_on_stream = (int32_t)STORE_CUPTI_STREAM(ev->aux[0]);
		a.wait_on_event_record_corr = (uint32_t)ev->aux[1];
	}
	return push_row(r, cap, &e, &a);
}

/* A runtime / driver call on its thread, with its real duration and
 * CUPTI's correlation id (which its GPU rows carry). */
static int push_api(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *x = &L->c->recs[i];
	unsigned c = x->cpu == 1 ? C_DRIVER : C_RUNTIME;
	uint32_t corr = (uint32_t)x->aux[1];
	int err = 0;

	if (L->m.call && L->m.call[i])
		return 0; /* the driver call a runtime call made: shown as that one */
	int64_t cat = cat_id(L, c);
	const struct name *nm = cupti_name(L, x, &err);
	if (cat < 0 || err < 0)
		return cat < 0 ? (int)cat : err;
	struct tl_event e = {
		.ts_ns = (int64_t)x->ts_ns,
		.dur_ns = (int64_t)x->dur_ns,
		.pid = x->pid,
		.tid = x->tid,
		.stream = -1,
		.correlation = corr ? (int64_t)corr : -1,
		.external_id = -1,
		.name = nm->id1 - 1,
		.cat = (uint32_t)cat,
		.kind = L->cat_kind[c],
		.device = -1,
		.flags = nm->flags,
	};
	return push_row(r, cap, &e, NULL);
}

/* An NVTX range or mark: a user annotation on its thread. */
static int push_mark(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *x = &L->c->recs[i];
	int err = 0;
	int64_t cat = cat_id(L, C_ANNOTATION);
	const struct name *nm = cupti_name(L, x, &err);

	if (cat < 0 || err < 0)
		return cat < 0 ? (int)cat : err;
	struct tl_event e = {
		.ts_ns = (int64_t)x->ts_ns,
		.dur_ns = (int64_t)x->dur_ns,
		.pid = x->pid,
		.tid = x->tid,
		.stream = -1,
		.correlation = -1,
		.external_id = -1,
		.name = nm->id1 - 1,
		.cat = (uint32_t)cat,
		.kind = L->cat_kind[C_ANNOTATION],
		.device = -1,
		.flags = nm->flags,
	};
	return push_row(r, cap, &e, NULL);
}

/* An NVTX range or mark from the CUPTI library (store.h). */
static bool is_nvtx(const struct store_rec *r)
{
	return r->type == STORE_REC_MARK && r->cpu == 1;
}

/* Whether the pid of the records ev[0..n) is shown with CUPTI's rows. */
static bool has_cupti(const struct capture *c, const struct gpu_key *ev, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct store_rec *x = &c->recs[ev[k].idx];
		if (x->type == STORE_REC_GPU_API || gpu_is_cupti(x))
			return true;
	}
	return false;
}

/* Whether record x becomes a row of a rank that has CUPTI records (cupti)
 * or not. */
static bool shown(const struct live *L, const struct store_rec *x, size_t i, bool cupti)
{
	switch (x->type) {
	case STORE_REC_GPU_LAUNCH: /* with CUPTI, the API calls stand for them */
		return !cupti;
	case STORE_REC_GPU_INTERVAL:
		return !gpu_is_cupti(x) || (x->cpu & 0xff) < CUPTI_KINDS;
	case STORE_REC_GPU_API:
		return !L->m.call || !L->m.call[i];
	default:
		return is_nvtx(x);
	}
}

/* One rank from the records ev[0..n) of one pid, by (ts, record index);
 * its events array sized once. */
static int add_rank(struct live *L, const struct gpu_key *ev, size_t n)
{
	struct tl_build cap = {0};
	struct tl_rank *r = tl_rank_alloc((int32_t)ev[0].pid);
	size_t rows = 0;
	int err = 0;

	L->cupti = has_cupti(L->c, ev, n);
	for (size_t k = 0; k < n; k++)
		rows += shown(L, &L->c->recs[ev[k].idx], ev[k].idx, L->cupti);
	if (!r || !(r->ev = malloc((rows + 1) * sizeof(*r->ev)))) {
		tl_rank_free(r);
		return -ENOMEM;
	}
	cap.ev_cap = (uint32_t)rows + 1;
	bigalloc_prefault(r->ev, rows * sizeof(*r->ev), &cap.ev_pop, rows * sizeof(*r->ev));
	for (size_t k = 0; k < n && !err; k++) {
		uint32_t i = ev[k].idx;
		const struct store_rec *x = &L->c->recs[i];

		if (!shown(L, x, i, L->cupti))
			continue;
		if (x->type == STORE_REC_GPU_LAUNCH)
			err = push_launch(L, r, &cap, i);
		else if (gpu_is_cupti(x))
			err = push_cupti(L, r, &cap, i);
		else if (x->type == STORE_REC_GPU_INTERVAL)
			err = push_interval(L, r, &cap, i);
		else if (x->type == STORE_REC_GPU_API)
			err = push_api(L, r, &cap, i);
		else
			err = push_mark(L, r, &cap, i);
	}
	r->raw_events = r->parsed_events = r->nev;
	if (!err)
		err = tl_insert_rank(L->tl, r);
	if (err)
		tl_rank_free(r);
	return err;
}

/* The records of c a timeline may show (launches, intervals, API calls,
 * NVTX marks) by (pid, ts, record index): *n of them. */
static int sorted_events(const struct capture *c, struct gpu_key **ret, size_t *n)
{
	size_t k = 0;

	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		k += r->type == STORE_REC_GPU_LAUNCH || r->type == STORE_REC_GPU_INTERVAL ||
		     r->type == STORE_REC_GPU_API || is_nvtx(r);
	}
	struct gpu_key *it = malloc((k + 1) * sizeof(*it));
	if (!it)
		return -ENOMEM;
	k = 0;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH || r->type == STORE_REC_GPU_INTERVAL ||
		    r->type == STORE_REC_GPU_API || is_nvtx(r))
			it[k++] = (struct gpu_key){r->ts_ns, r->pid, (uint32_t)i};
	}
	if (gpu_sort_pid_key(it, k) < 0) {
		free(it);
		return -ENOMEM;
	}
	*ret = it;
	*n = k;
	return 0;
}

static void live_finish(struct live *L)
{
	gpu_match_finish(&L->m);
	free(L->kname);
	free(L->ename[0]);
	free(L->ename[1]);
	free(L->cname);
}

/* The ranks of c, not finalized. 0, -ENODATA, -ENOMEM, -E2BIG. */
static int build(const struct capture *c, struct timeline **ret)
{
	struct live L = {.c = c};
	struct gpu_key *it = NULL;
	size_t n = 0;
	int err;

	if ((err = gpu_match_build(c, &L.m)) < 0)
		return err;
	if (!L.m.nintervals) {
		live_finish(&L);
		return -ENODATA;
	}
	if (c->nrecs > INT32_MAX) { /* rank numbers and event positions */
		live_finish(&L);
		return -E2BIG;
	}
	L.kname = calloc((size_t)c->nstrs + 1, sizeof(*L.kname));
	L.ename[0] = calloc((size_t)c->nstrs + 1, sizeof(*L.ename[0]));
	L.ename[1] = calloc((size_t)c->nstrs + 1, sizeof(*L.ename[1]));
	L.cname = calloc((size_t)c->nstrs + 1, sizeof(*L.cname));
	if (!L.kname || !L.ename[0] || !L.ename[1] || !L.cname || (err = timeline_new(&L.tl)) < 0 ||
	    (err = sorted_events(c, &it, &n)) < 0) {
		err = -ENOMEM;
		goto out;
	}
	struct name kernel = {0};
	int64_t k = intern(&L, &kernel, "kernel", 6);
	if (k < 0) {
		err = (int)k;
		goto out;
	}
	L.cat_kernel = (uint32_t)k;
	/* ranks in pid order; a pid that only launched has no GPU side here */
	for (size_t j = 0, j1; j < n && !err; j = j1) {
		bool gpu = false;
		for (j1 = j; j1 < n && it[j1].pid == it[j].pid; j1++)
			gpu |= c->recs[it[j1].idx].type == STORE_REC_GPU_INTERVAL;
		if (gpu)
			err = add_rank(&L, it + j, j1 - j);
	}
out:
	free(it);
	live_finish(&L);
	if (err) {
		timeline_free(L.tl);
		return err;
	}
	*ret = L.tl;
	return 0;
}

int timeline_from_capture(const struct capture *c, struct timeline **ret)
{
	struct timeline *tl;
	int err = build(c, &tl);

	if (err < 0)
		return err;
	if ((err = timeline_finalize(tl, TL_FIN_NO_STEP_FILTER)) < 0) {
		timeline_free(tl);
		return err;
	}
	*ret = tl;
	return 0;
}

/* The section needs the links, not the indexes (decode rebuilds them):
 * the same bytes as timeline_encode() of the finalized timeline. */
int timeline_live_attach(struct capture *c)
{
	struct timeline *tl;
	void *buf = NULL;
	size_t len;
	int err;

	if (c->kind != CAPTURE_LIVE || capture_find_extra(c, CAPSEC_TIMELINE))
		return 0;
	err = build(c, &tl);
	if (err == -ENODATA)
		return 0;
	if (err < 0)
		return err;
	err = tl_link_ranks(tl);
	if (!err)
		err = tl_encode(tl, &buf, &len);
	timeline_free(tl);
	if (!err && (err = capture_adopt_extra(c, CAPSEC_TIMELINE, buf, len)) < 0)
		free(buf);
	return err;
}
