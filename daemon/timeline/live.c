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

struct live {
	const struct capture *c;
	struct timeline *tl;
	struct gpu_match m;
	uint32_t cat_kernel;
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

/* A launch's kernel name: its name string up to the NUL before geometry. */
static const char *kernel_name(const struct capture *c, const struct store_rec *r, size_t *len)
{
	const char *s = capture_str(c, r->name, len);
	const char *nul = s ? memchr(s, '\0', *len) : NULL;
	if (nul)
		*len = (size_t)(nul - s);
	return s ? s : "";
}

/* The name of interval iv: the kernel of its last launch (or NULL) or its
 * engine, "Memcpy …" on a copy engine. */
static const struct name *interval_name(struct live *L, const struct store_rec *iv,
					const struct store_rec *last, int *err)
{
	struct name *slot;
	const char *s;
	char buf[160];
	size_t len;

	if (last) {
		slot = &L->kname[str_slot(L->c, last->name)];
		if (!slot->id1) {
			s = kernel_name(L->c, last, &len);
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
	int err = 0;

	if (L->m.count[i])
		last = &L->c->recs[L->m.launch[L->m.first[i] + L->m.count[i] - 1]];
	const struct name *nm = interval_name(L, iv, last, &err);
	if (err < 0)
		return err;
	struct tl_event e = {
		.ts_ns = (int64_t)iv->ts_ns,
		.dur_ns = (int64_t)iv->dur_ns,
		.pid = 0,
		.tid = (int64_t)iv->aux[0],
		.stream = (int64_t)iv->aux[0],
		.correlation = last && last->aux[1] ? (int64_t)last->aux[1] : -1,
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

/* One rank from its launches la[0..nl) and intervals iv[0..ni) (one pid,
 * each by (ts, record index)), merged in that order as it goes; its events
 * array sized once. */
static int add_rank(struct live *L, const struct gpu_key *la, size_t nl, const struct gpu_key *iv,
		    size_t ni)
{
	struct tl_build cap = {0};
	struct tl_rank *r = tl_rank_alloc((int32_t)iv[0].pid);
	size_t n = nl + ni, i = 0, j = 0;
	int err = 0;

	if (!r || !(r->ev = malloc(n * sizeof(*r->ev)))) {
		tl_rank_free(r);
		return -ENOMEM;
	}
	cap.ev_cap = (uint32_t)n;
	/* all written */
	bigalloc_prefault(r->ev, n * sizeof(*r->ev), &cap.ev_pop, n * sizeof(*r->ev));
	while (!err && (i < nl || j < ni)) {
		if (j < ni && (i >= nl || iv[j].key < la[i].key ||
			       (iv[j].key == la[i].key && iv[j].idx < la[i].idx)))
			err = push_interval(L, r, &cap, iv[j++].idx);
		else
			err = push_launch(L, r, &cap, la[i++].idx);
	}
	r->raw_events = r->parsed_events = r->nev;
	if (!err)
		err = tl_insert_rank(L->tl, r);
	if (err)
		tl_rank_free(r);
	return err;
}

/* The launches (it[0..nl)) and intervals (it[nl..nl + ni)) of c, each by
 * (pid, ts, record index). */
static int sorted_events(const struct capture *c, size_t nl, size_t ni, struct gpu_key **ret)
{
	struct gpu_key *it = malloc((nl + ni + 1) * sizeof(*it));
	size_t a = 0, b = nl;

	if (!it)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		if (r->type == STORE_REC_GPU_LAUNCH)
			it[a++] = (struct gpu_key){r->ts_ns, r->pid, (uint32_t)i};
		else if (r->type == STORE_REC_GPU_INTERVAL)
			it[b++] = (struct gpu_key){r->ts_ns, r->pid, (uint32_t)i};
	}
	if (gpu_sort_pid_key(it, nl) < 0 || gpu_sort_pid_key(it + nl, ni) < 0) {
		free(it);
		return -ENOMEM;
	}
	*ret = it;
	return 0;
}

static void live_finish(struct live *L)
{
	gpu_match_finish(&L->m);
	free(L->kname);
	free(L->ename[0]);
	free(L->ename[1]);
}

/* The ranks of c, not finalized. 0, -ENODATA, -ENOMEM, -E2BIG. */
static int build(const struct capture *c, struct timeline **ret)
{
	struct live L = {.c = c};
	struct gpu_key *it = NULL;
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
	if (!L.kname || !L.ename[0] || !L.ename[1] || (err = timeline_new(&L.tl)) < 0 ||
	    (err = sorted_events(c, L.m.nlaunches, L.m.nintervals, &it)) < 0) {
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
	const struct gpu_key *la = it, *iv = it + L.m.nlaunches;
	size_t nl = L.m.nlaunches, ni = L.m.nintervals;
	for (size_t i = 0, j = 0; j < ni && !err;) {
		uint32_t pid = iv[j].pid;
		size_t i1, j1;
		while (i < nl && la[i].pid < pid)
			i++;
		for (i1 = i; i1 < nl && la[i1].pid == pid; i1++)
			;
		for (j1 = j; j1 < ni && iv[j1].pid == pid; j1++)
			;
		err = add_rank(&L, la + i, i1 - i, iv + j, j1 - j);
		i = i1;
		j = j1;
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
