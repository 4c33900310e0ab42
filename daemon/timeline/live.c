// SPDX-License-Identifier: MIT
/* The timeline of a live capture from its GPU job intervals (live.h). */
#include "live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../bpf/gpu_launch.h" /* enum gpu_api: aux32 of a launch */
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

struct item {
	uint32_t pid;
	uint64_t ts;
	uint32_t rec;
};

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->rec < y->rec ? -1 : x->rec > y->rec;
}

struct live {
	const struct capture *c;
	struct timeline *tl;
	struct gpu_match m;
	uint32_t cat_kernel;
};

static int64_t intern(struct live *L, const char *s, size_t len)
{
	return strtab_intern(&L->tl->st, s, len);
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

static int push_interval(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *iv = &L->c->recs[i];
	const struct store_rec *last = NULL;
	char buf[160];
	const char *s;
	size_t len;

	if (L->m.count[i])
		last = &L->c->recs[L->m.launch[L->m.first[i] + L->m.count[i] - 1]];
	if (last) {
		s = kernel_name(L->c, last, &len);
	} else {
		s = capture_str(L->c, iv->name, &len);
		if (!s || !len)
			s = "gpu job", len = 7;
		if (gpu_engine_is_copy(iv->cpu >> 8, iv->cpu & 0xff)) {
			int n = snprintf(buf, sizeof(buf), "Memcpy %.*s", (int)len, s);
			s = buf;
			len = n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
		}
	}
	int64_t name = intern(L, s, len);
	if (name < 0)
		return (int)name;
	struct tl_event e = {
	    .ts_ns = (int64_t)iv->ts_ns,
	    .dur_ns = (int64_t)iv->dur_ns,
	    .pid = 0,
	    .tid = (int64_t)iv->aux[0],
	    .stream = (int64_t)iv->aux[0],
	    .correlation = last && last->aux[1] ? (int64_t)last->aux[1] : -1,
	    .external_id = -1,
	    .index = r->nev,
	    .name = (uint32_t)name,
	    .cat = L->cat_kernel,
	    .kind = TL_K_KERNEL,
	    .device = 0,
	};
	e.flags = tl_flags_from_name(s, len) | TL_EV_GPU_SIDE;
	if (e.correlation >= 0)
		e.flags |= TL_EV_GPU_KERNEL_FILTER;
	return tl_rank_push(r, cap, &e, NULL);
}

static int push_launch(struct live *L, struct tl_rank *r, struct tl_build *cap, uint32_t i)
{
	const struct store_rec *l = &L->c->recs[i];
	unsigned a = l->aux32 < GPU_API_MAX ? l->aux32 : GPU_API_UNKNOWN;
	const char *nm = api[a].name, *cat = api[a].cat;
	int64_t name = intern(L, nm, strlen(nm)), catid = intern(L, cat, strlen(cat));
	if (name < 0 || catid < 0)
		return name < 0 ? (int)name : (int)catid;
	struct tl_event e = {
	    .ts_ns = (int64_t)l->ts_ns,
	    .dur_ns = 0, /* the probes see the call, not its return */
	    .pid = l->pid,
	    .tid = l->tid,
	    .stream = -1,
	    .correlation = l->aux[1] ? (int64_t)l->aux[1] : -1,
	    .external_id = -1,
	    .index = r->nev,
	    .name = (uint32_t)name,
	    .cat = (uint32_t)catid,
	    .kind = tl_kind_from_cat(cat, strlen(cat)),
	    .device = -1,
	};
	e.flags = tl_flags_from_name(nm, strlen(nm)) | TL_EV_LAUNCH_ANY;
	return tl_rank_push(r, cap, &e, NULL);
}

/* One rank from items[0..n) (one pid, time order). */
static int add_rank(struct live *L, const struct item *it, size_t n)
{
	struct tl_build cap = {0};
	struct tl_rank *r = tl_rank_alloc((int32_t)it[0].pid);
	int err = 0;

	if (!r)
		return -ENOMEM;
	for (size_t k = 0; k < n && !err; k++)
		err = L->c->recs[it[k].rec].type == STORE_REC_GPU_INTERVAL
			  ? push_interval(L, r, &cap, it[k].rec)
			  : push_launch(L, r, &cap, it[k].rec);
	r->raw_events = r->parsed_events = r->nev;
	if (!err)
		err = tl_insert_rank(L->tl, r);
	if (err)
		tl_rank_free(r);
	return err;
}

int timeline_from_capture(const struct capture *c, struct timeline **ret)
{
	struct live L = {.c = c};
	struct item *it = NULL;
	size_t n = 0;
	int err;

	if ((err = gpu_match_build(c, &L.m)) < 0)
		return err;
	if (!L.m.nintervals) {
		gpu_match_finish(&L.m);
		return -ENODATA;
	}
	if (c->nrecs > INT32_MAX) { /* rank numbers and event positions */
		gpu_match_finish(&L.m);
		return -E2BIG;
	}
	it = malloc((L.m.nintervals + L.m.nlaunches) * sizeof(*it));
	if (!it || (err = timeline_new(&L.tl)) < 0) {
		err = -ENOMEM;
		goto out;
	}
	int64_t k = intern(&L, "kernel", 6);
	if (k < 0) {
		err = (int)k;
		goto out;
	}
	L.cat_kernel = (uint32_t)k;
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == STORE_REC_GPU_INTERVAL ||
		    c->recs[i].type == STORE_REC_GPU_LAUNCH)
			it[n++] = (struct item){c->recs[i].pid, c->recs[i].ts_ns, (uint32_t)i};
	qsort(it, n, sizeof(*it), item_cmp);
	for (size_t a = 0, b; a < n && !err; a = b) {
		bool any = false;
		for (b = a; b < n && it[b].pid == it[a].pid; b++)
			any |= c->recs[it[b].rec].type == STORE_REC_GPU_INTERVAL;
		if (any) /* a pid that only launched has no GPU side here */
			err = add_rank(&L, it + a, b - a);
	}
	if (!err)
		err = timeline_finalize(L.tl, TL_FIN_NO_STEP_FILTER);
out:
	free(it);
	gpu_match_finish(&L.m);
	if (err) {
		timeline_free(L.tl);
		return err;
	}
	*ret = L.tl;
	return 0;
}

int timeline_live_attach(struct capture *c)
{
	struct timeline *tl;
	void *buf;
	size_t len;
	int err;

	if (c->kind != CAPTURE_LIVE || capture_find_extra(c, CAPSEC_TIMELINE))
		return 0;
	err = timeline_from_capture(c, &tl);
	if (err == -ENODATA)
		return 0;
	if (err < 0)
		return err;
	err = timeline_encode(tl, &buf, &len);
	timeline_free(tl);
	if (err < 0)
		return err;
	err = capture_add_extra(c, CAPSEC_TIMELINE, buf, len);
	free(buf);
	return err;
}
