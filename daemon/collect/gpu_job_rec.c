// SPDX-License-Identifier: MIT
/*
 * GPU job collector, record side: BPF records into the pairer (a
 * submission's user stack unwound by CFI when BPF copied it), intervals
 * into the store (gpu_job_abi.h lists the fields), and the names of dma_fence
 * implementations (their ops functions, from /proc/kallsyms) that decide which
 * fences the dma_fence fallback keeps.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/gpu_engine.h"
#include "gpd.h"
#include "gpu_job_int.h"
#include "log.h"
#include "store/store.h"
#include "pyframes/pyreg.h"
#include "unwind/unwind.h"

#define GJ_FNAMES_MAX 1024
#define GJ_FNAMES_RELOAD_NS (10ull * 1000000000ull)

/*
 * Fences the fallback leaves out, by their ops functions (text symbols, in
 * /proc/kallsyms without CONFIG_KALLSYMS_ALL too): containers signalled by
 * their members (they would double-count the members' time) and the
 * scheduler's "scheduled" fence, which marks a start, not a piece of work.
 */
static const char *const skip_fns[] = {
	"dma_fence_chain_get_driver_name",
	"dma_fence_array_get_driver_name",
	"dma_fence_stub_get_name",
	"drm_sched_fence_release_scheduled",
	NULL,
};

static int fname_cmp(const void *a, const void *b)
{
	const struct gj_fence_name *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void gj_fence_names_free(struct gj_priv *p)
{
	free(p->fnames);
	p->fnames = NULL;
	p->nfnames = 0;
}

void gj_fence_names_load(struct gj_priv *p)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct gj_fence_name *v;
	size_t n = 0;
	char line[512];

	p->fnames_loaded_ns = gpd_now_ns();
	if (!f)
		return;
	v = calloc(GJ_FNAMES_MAX, sizeof(*v));
	if (!v) {
		fclose(f);
		return;
	}
	while (n < GJ_FNAMES_MAX && fgets(line, sizeof(line), f)) {
		unsigned long long addr;
		char type, name[256];
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr ||
		    !strstr(name, "fence") ||
		    !(strstr(name, "get_driver_name") || strstr(name, "_get_name") ||
		      strstr(name, "release")))
			continue;
		v[n].addr = addr;
		for (size_t k = 0; skip_fns[k]; k++)
			v[n].skip |= !strcmp(name, skip_fns[k]);
		/* "i915_fence_get_driver_name" -> "i915_fence" */
		char *suffix = strstr(name, "_get_driver_name");
		if (suffix && !suffix[16])
			*suffix = '\0';
		snprintf(v[n].name, sizeof(v[n].name), "%.47s", name);
		n++;
	}
	fclose(f);
	qsort(v, n, sizeof(*v), fname_cmp);
	gj_fence_names_free(p);
	p->fnames = v;
	p->nfnames = n;
}

static const struct gj_fence_name *fence_name(struct gj_priv *p, uint64_t ops)
{
	struct gj_fence_name key = {.addr = ops};
	const struct gj_fence_name *hit =
		p->nfnames ? bsearch(&key, p->fnames, p->nfnames, sizeof(key), fname_cmp) : NULL;
	if (!hit && ops && gpd_now_ns() - p->fnames_loaded_ns > GJ_FNAMES_RELOAD_NS) {
		gj_fence_names_load(p); /* a driver module loaded since */
		hit = p->nfnames ? bsearch(&key, p->fnames, p->nfnames, sizeof(key), fname_cmp)
				 : NULL;
	}
	return hit;
}

/* The fallback keeps a fence unless it is a container or a scheduled
 * fence, or a driver group that is attached already reports its work. */
static bool fence_wanted(struct gj_priv *p, uint64_t driver_fn, uint64_t release_fn)
{
	const struct gj_fence_name *rel = release_fn ? fence_name(p, release_fn) : NULL;
	const struct gj_fence_name *n = fence_name(p, driver_fn);
	if (rel && rel->skip)
		return false;
	if (!n)
		return true;
	if (n->skip)
		return false;
	if (p->groups[GPU_JOB_G_XE].attached && !strncmp(n->name, "xe_", 3))
		return false;
	if (p->groups[GPU_JOB_G_I915].attached && !strncmp(n->name, "i915_", 5))
		return false;
	return true;
}

bool gj_record_ok(const void *data, size_t size)
{
	const struct gpu_job_hdr *h = data;

	if (size < sizeof(*h) || h->type != GPU_JOB_REC_TYPE || h->version != GPU_JOB_REC_VERSION ||
	    h->group >= GPU_JOB_G_COUNT || h->nuser > GPU_JOB_MAX_FRAMES)
		return false;
	if (!(h->flags & GPU_JOB_F_USER))
		return h->nuser == 0; /* only full records carry frames */
	return size >= GPU_JOB_FULL_BYTES + (size_t)h->nuser * sizeof(uint64_t);
}

/*
 * A SUBMIT's user stack for the store, leaf first: unwound from the copy BPF
 * sent (the stack bytes follow the frames), else the frames BPF walked. The
 * copy is only read here; the ring slot holding it is released when the
 * callback returns.
 */
static uint32_t submit_stack(struct gj_priv *p, const struct gpu_job_rec *r, size_t size)
{
	struct store *s = p->c->gpd->store;
	size_t pyoff = GPU_JOB_FULL_BYTES + (size_t)r->nuser * sizeof(uint64_t);
	size_t off = pyoff + (size_t)r->npy * PYSTACK_NODE_BYTES;
	uint64_t ips[STORE_MAX_FRAMES];
	struct pyreg_sample smp = {
		.pid = r->pid,
		.us = &r->us,
		.stack = (const uint8_t *)r + off,
		.stack_avail = size - off,
		.ips = (const uint64_t *)r->ips,
		.nips = r->nuser,
		.nodes = (const uint8_t *)r + pyoff,
		.nnodes = r->npy,
		.pyflags = r->pyflags,
	};
	unsigned n;
	bool fp;

	if (!(r->flags & GPU_JOB_F_USER) || r->npy > PYSTACK_MAX_NODES || off > size)
		return 0;
	pyreg_note_pid(p->c->gpd->pyreg, r->pid, false);
	n = pyreg_user_stack(p->c->gpd->pyreg, p->c->gpd->unwinder, &smp, ips, STORE_MAX_FRAMES,
			     &fp);
	p->stacks_fp_fallback += fp;
	return n ? store_stack_intern(s, ips, (uint16_t)n, 0) : 0;
}

void gj_feed_record(struct gj_priv *p, const struct gpu_job_rec *r, size_t size)
{
	struct store *s = p->c->gpd->store;
	struct gj_event e = {
		.ev = r->ev,
		.group = r->group,
		.engine = r->engine,
		.obj_key = r->flags & GPU_JOB_F_OBJ_KEY,
		.ts_ns = r->ts_ns,
		.obj = r->obj,
		.ctx = r->ctx,
		.seqno = r->seqno,
		.tag = r->ops,
	};

	p->groups[r->group].events++;
	if (r->group == GPU_JOB_G_FENCE && !fence_wanted(p, r->ops, r->release)) {
		p->filtered++;
		return;
	}
	if (r->ev == GPU_JOB_SUBMIT) {
		e.pid = r->pid;
		e.tid = r->tid;
		e.uid = r->uid;
		e.comm = store_str_intern(s, r->comm, strnlen(r->comm, sizeof(r->comm)));
		e.stack = submit_stack(p, r, size);
	}
	gj_pair_feed(p->pair, &e);
}

void gj_release(void *arg, uint32_t comm, uint32_t stack)
{
	struct gj_priv *p = arg;
	struct store *s = p->c->gpd->store;
	if (comm)
		store_str_unref(s, comm);
	if (stack)
		store_stack_unref(s, stack);
}

void gj_emit(void *arg, const struct gj_interval *iv)
{
	struct gj_priv *p = arg;
	struct store *s = p->c->gpd->store;
	char buf[80];
	const char *name;
	uint64_t delay = iv->start_ns - iv->submit_ns;

	if (iv->group == GPU_JOB_G_FENCE) {
		const struct gj_fence_name *n = fence_name(p, iv->tag);
		if (n)
			snprintf(buf, sizeof(buf), "fence/%s", n->name);
		else
			snprintf(buf, sizeof(buf), "fence/0x%" PRIx64, iv->tag);
		name = buf;
	} else {
		name = gpu_engine_name(iv->group, iv->engine, buf, sizeof(buf));
	}
	uint32_t nid = store_str_intern(s, name, strlen(name));
	if (!nid) {
		gj_release(p, iv->comm, iv->stack);
		p->local_drops++;
		return;
	}
	struct store_rec rec = {
		.ts_ns = iv->start_ns,
		.dur_ns = iv->end_ns - iv->start_ns,
		.pid = iv->pid,
		.tid = iv->tid,
		.uid = iv->uid,
		.comm = iv->comm,
		.stack = iv->stack,
		.name = nid,
		.type = STORE_REC_GPU_INTERVAL,
		.cpu = (uint16_t)(iv->group << 8 | iv->engine),
		.aux32 = delay > UINT32_MAX ? UINT32_MAX : (uint32_t)delay,
		.aux = {iv->ctx, 0},
	};
	store_append(s, &rec);
	p->c->events++;
}
