// SPDX-License-Identifier: MIT
/*
 * Driver-side GPU job collector (gpu_job.h, docs/collectors.md "GPU jobs").
 *
 * One skeleton instance per tracepoint group (xe, i915, dma_fence), each
 * with only its own programs autoloaded, so that a group whose BTF is
 * missing or whose load is refused takes nothing else down. The first
 * instance loaded owns the ring buffer, the drop counter and the stack
 * staging area; the others reuse those maps (bpf_map__reuse_fd), so one
 * rbloop drains everything.
 */
#include "gpu_job.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "gpu_job_abi.h"
#include "gpd.h"
#include "gpu_job.skel.h"
#include "gpu_job_int.h"
#include "log.h"
#include "pyframes/pyreg.h"
#include "rbloop.h"
#include "store/store.h"

#define GJ_TICK_MS 200
#define GJ_DRAIN_BUDGET 8192

/* Every program, its group, and whether the group needs it. */
static const struct gj_prog {
	uint8_t group;
	const char *tp; /* tracepoint: tp_btf/<tp>, BTF typedef btf_trace_<tp> */
	bool required;
} gj_progs[] = {
	{GPU_JOB_G_XE, "xe_sched_job_create", true},
	{GPU_JOB_G_XE, "xe_sched_job_run", true},
	{GPU_JOB_G_XE, "xe_hw_fence_signal", true},
	{GPU_JOB_G_XE, "xe_sched_job_free", false},
	{GPU_JOB_G_I915, "i915_request_add", true},
	{GPU_JOB_G_I915, "i915_request_in", false}, /* low-level tracepoints only */
	{GPU_JOB_G_I915, "i915_request_out", false},
	{GPU_JOB_G_I915, "i915_request_retire", false}, /* the end without _out */
	{GPU_JOB_G_FENCE, "dma_fence_init", true},
	{GPU_JOB_G_FENCE, "dma_fence_emit", false},
	{GPU_JOB_G_FENCE, "dma_fence_signaled", true},
	{GPU_JOB_G_FENCE, "dma_fence_destroy", false},
};
#define GJ_NPROGS (sizeof(gj_progs) / sizeof(gj_progs[0]))

static const char *const group_module[GPU_JOB_G_COUNT] = {"xe", "i915", NULL};

static const char *gj_group_name(unsigned g)
{
	static const char *const n[GPU_JOB_G_COUNT] = {"xe", "i915", "dma_fence"};
	return g < GPU_JOB_G_COUNT ? n[g] : "?";
}

static struct bpf_program *prog_for(struct gpu_job_bpf *s, const char *tp)
{
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, s->obj)
	{
		const char *sec = bpf_program__section_name(prog);
		if (!strncmp(sec, "tp_btf/", 7) && !strcmp(sec + 7, tp))
			return prog;
	}
	return NULL;
}

static size_t prog_index(const char *tp)
{
	size_t i = 0;
	while (i < GJ_NPROGS - 1 && strcmp(gj_progs[i].tp, tp))
		i++;
	return i;
}

/* Which of the group's tracepoints this kernel has (BTF typedef
 * btf_trace_<tp> in vmlinux or in the driver module's split BTF). */
static int probe_group(struct gj_priv *p, unsigned g, struct btf *vmlinux, bool *want)
{
	struct gj_group *gr = &p->groups[g];
	struct btf *btf = vmlinux, *mod = NULL;
	char path[64], name[96];
	unsigned nwant = 0;

	if (group_module[g]) {
		snprintf(path, sizeof(path), "%s/%s", p->btf_dir, group_module[g]);
		if (access(path, R_OK) < 0) {
			snprintf(gr->reason, sizeof(gr->reason), "no %s BTF (module not loaded)",
				 group_module[g]);
			return -ENOENT;
		}
		mod = btf__parse_split(path, vmlinux);
		if (!mod) {
			snprintf(gr->reason, sizeof(gr->reason), "%s BTF unreadable: %s", path,
				 strerror(errno));
			return -ENOENT;
		}
		btf = mod;
	}
	for (size_t i = 0; i < GJ_NPROGS; i++) {
		if (gj_progs[i].group != g)
			continue;
		snprintf(name, sizeof(name), "btf_trace_%s", gj_progs[i].tp);
		want[i] = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) > 0;
		if (!want[i] && gj_progs[i].required) {
			snprintf(gr->reason, sizeof(gr->reason), "no tracepoint %s in the %s BTF",
				 gj_progs[i].tp, group_module[g] ? group_module[g] : "kernel");
			btf__free(mod);
			return -ENOENT;
		}
		nwant += want[i];
	}
	btf__free(mod);
	/* i915: request_out is the true end when the low-level tracepoints
	 * exist; retire would end every request a second time. */
	if (g == GPU_JOB_G_I915) {
		size_t out = prog_index("i915_request_out"),
		       retire = prog_index("i915_request_retire");
		if (want[out])
			want[retire] = false;
		else if (!want[retire]) {
			snprintf(gr->reason, sizeof(gr->reason),
				 "no i915_request_out or i915_request_retire tracepoint");
			return -ENOENT;
		}
	}
	return nwant ? 0 : -ENOENT;
}

/* Open and load one group's instance. 0, or a reason in the group. */
static int load_group(struct gj_priv *p, unsigned g, const bool *want)
{
	struct gj_group *gr = &p->groups[g];
	struct gpu_job_bpf *s = gpu_job_bpf__open();
	int r;

	if (!s) {
		snprintf(gr->reason, sizeof(gr->reason), "BPF open failed: %s", strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < GJ_NPROGS; i++) {
		struct bpf_program *prog = prog_for(s, gj_progs[i].tp);
		if (prog)
			bpf_program__set_autoload(prog, gj_progs[i].group == g && want[i]);
	}
	s->rodata->user_stacks = p->user_stacks;
	s->rodata->wakeup_bytes = p->ringbuf_bytes / 8;
	/* gpu.stack_bytes 0, or no unwinder: frame pointers in BPF. */
	s->rodata->stack_bytes = p->c->gpd->unwinder ? p->c->gpd->cfg.gpu_stack_bytes : 0;
	s->rodata->copy_below = p->ringbuf_bytes / 2;
	r = bpf_map__set_max_entries(s->maps.events, (uint32_t)p->ringbuf_bytes);
	/* one map of Python processes for every program (pyframes/pyreg.h) */
	if (r == 0 && pyreg_map_fd(p->c->gpd->pyreg) >= 0)
		r = bpf_map__reuse_fd(s->maps.py_procs, pyreg_map_fd(p->c->gpd->pyreg));
	if (!r) /* one staging slot per possible CPU */
		r = bpf_map__set_max_entries(s->maps.scratch, (uint32_t)p->ncpus);
	if (!r && p->owner) {
		r = bpf_map__reuse_fd(s->maps.events, bpf_map__fd(p->owner->maps.events));
		if (!r)
			r = bpf_map__reuse_fd(s->maps.drops, bpf_map__fd(p->owner->maps.drops));
		/* One staging area for all groups: their programs nest on a
		 * CPU, and its busy mark must be seen across them. */
		if (!r)
			r = bpf_map__reuse_fd(s->maps.scratch, bpf_map__fd(p->owner->maps.scratch));
	}
	if (!r)
		r = gpu_job_bpf__load(s);
	if (r) {
		snprintf(gr->reason, sizeof(gr->reason), "BPF load failed: %s",
			 strerror(r < 0 ? -r : errno));
		gpu_job_bpf__destroy(s);
		return r < 0 ? r : -errno;
	}
	gr->skel = s;
	if (!p->owner)
		p->owner = s;
	return 0;
}

static void unload_group(struct gj_priv *p, unsigned g)
{
	struct gj_group *gr = &p->groups[g];
	for (unsigned i = 0; i < gr->nlinks; i++)
		bpf_link__destroy(gr->links[i]);
	gr->nlinks = 0;
	/* The owner's maps stay alive while other instances hold their fds
	 * (reuse_fd dups them), so destroy order does not matter. */
	if (gr->skel != p->owner)
		gpu_job_bpf__destroy(gr->skel);
	gr->skel = NULL;
}

static int attach_group(struct gj_priv *p, unsigned g)
{
	struct gj_group *gr = &p->groups[g];
	for (size_t i = 0; i < GJ_NPROGS; i++) {
		struct bpf_program *prog;
		if (gj_progs[i].group != g || !(prog = prog_for(gr->skel, gj_progs[i].tp)) ||
		    !bpf_program__autoload(prog))
			continue;
		struct bpf_link *l = bpf_program__attach(prog);
		if (!l) {
			int r = -errno;
			snprintf(gr->reason, sizeof(gr->reason), "attach to %s refused: %s",
				 gj_progs[i].tp, strerror(-r));
			for (unsigned k = 0; k < gr->nlinks; k++)
				bpf_link__destroy(gr->links[k]);
			gr->nlinks = 0;
			return r;
		}
		gr->links[gr->nlinks++] = l;
		gr->tracepoints[gr->ntps++] = gj_progs[i].tp;
	}
	return 0;
}

/* ---- records ----------------------------------------------------------- */

static void read_counters(struct gj_priv *p)
{
	uint64_t lost = 0;

	if (p->owner)
		rbloop_percpu_sum(p->owner->maps.drops, 0, p->percpu, p->ncpus, &lost);
	p->lost = lost;
	if (p->pair) {
		struct gj_stats st;
		gj_pair_stats(p->pair, &st);
		p->c->drops = p->lost + p->local_drops + st.evicted;
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct gj_priv *p = ctx;

	if (gj_record_ok(data, size))
		gj_feed_record(p, data, size);
	else
		p->local_drops++;
	return rbloop_took(&p->rbl);
}

static void on_tick(void *arg)
{
	read_counters(arg);
}

/* ---- lifecycle --------------------------------------------------------- */

static struct gj_priv *priv_get(struct collector *c)
{
	if (c->priv)
		return c->priv;
	struct gj_priv *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = c;
	p->ringbuf_bytes = GPU_JOB_DEFAULT_RINGBUF_BYTES;
	p->pending = c->gpd->cfg.gpu_jobs_pending;
	p->user_stacks = true;
	snprintf(p->btf_dir, sizeof(p->btf_dir), "/sys/kernel/btf");
	c->priv = p;
	return p;
}

static void update_state(struct gj_priv *p)
{
	char why[256] = "";
	size_t off = 0;
	unsigned nattached = 0;

	for (unsigned g = 0; g < GPU_JOB_G_COUNT; g++) {
		if (p->groups[g].attached) {
			nattached++;
			continue;
		}
		off += (size_t)snprintf(why + off, off < sizeof(why) ? sizeof(why) - off : 0,
					"%s%s: %s", off ? "; " : "", gj_group_name(g),
					p->groups[g].reason);
		if (off >= sizeof(why))
			off = sizeof(why) - 1;
	}
	if (nattached)
		collector_set_state(p->c, COLLECTOR_ATTACHED, "%s", why);
	else
		collector_set_state(p->c, COLLECTOR_UNAVAILABLE, "%s", why);
}

static int gj_open(struct collector *c)
{
	struct gj_priv *p = priv_get(c);
	struct btf *vmlinux;
	int r;

	if (!p)
		return -ENOMEM;
	if (p->owner)
		return 0;
	r = libbpf_num_possible_cpus();
	if (r <= 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cannot count CPUs: %s",
				    strerror(r ? -r : EINVAL));
		return 0;
	}
	p->ncpus = r;
	p->percpu = calloc((size_t)p->ncpus, sizeof(*p->percpu));
	if (!p->percpu)
		return -ENOMEM;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE,
				    "no kernel BTF (tp_btf programs need it): %s", strerror(errno));
		return 0;
	}
	for (unsigned g = 0; g < GPU_JOB_G_COUNT; g++) {
		bool want[GJ_NPROGS] = {false};
		if (probe_group(p, g, vmlinux, want) == 0 && load_group(p, g, want) == 0)
			log_info("gpu_jobs: %s programs loaded", gj_group_name(g));
	}
	btf__free(vmlinux);
	if (!p->owner) {
		update_state(p);
		return 0;
	}
	r = gj_pair_new(p->pending, &(struct gj_pair_ops){gj_emit, gj_release, p}, &p->pair);
	if (r < 0)
		return r;
	gj_fence_names_load(p);
	return 0;
}

static void gj_stop(struct collector *c);

static int gj_start(struct collector *c)
{
	struct gj_priv *p = c->priv;

	if (!p || !p->owner || rbloop_running(&p->rbl))
		return 0;
	unsigned nattached = 0;
	for (unsigned g = 0; g < GPU_JOB_G_COUNT; g++) {
		struct gj_group *gr = &p->groups[g];
		gr->ntps = 0;
		if (gr->skel && attach_group(p, g) == 0) {
			gr->attached = true;
			gr->reason[0] = '\0';
			nattached++;
		}
	}
	if (!nattached) { /* every group refused: nothing to drain */
		update_state(p);
		return 0;
	}
	if (rbloop_start(&p->rbl, c, "gpu_jobs", bpf_map__fd(p->owner->maps.events), on_event, p,
			 GJ_DRAIN_BUDGET, GJ_TICK_MS, on_tick, p) < 0) {
		gj_stop(c); /* the collector says why */
		return 0;
	}
	update_state(p);
	return 0;
}

static void gj_stop(struct collector *c)
{
	struct gj_priv *p = c->priv;

	if (!p)
		return;
	for (unsigned g = 0; g < GPU_JOB_G_COUNT; g++) {
		struct gj_group *gr = &p->groups[g];
		for (unsigned i = 0; i < gr->nlinks; i++)
			bpf_link__destroy(gr->links[i]);
		gr->nlinks = 0;
		gr->attached = false;
	}
	rbloop_stop(&p->rbl); /* delivers what was committed before the detach */
	read_counters(p);
	if (c->state == COLLECTOR_ATTACHED)
		collector_set_state(c, COLLECTOR_OFF, NULL);
}

static void gj_status(struct collector *c, cJSON *obj)
{
	struct gj_priv *p = c->priv;
	struct gj_stats st = {0};
	cJSON *groups;

	if (!p)
		return;
	read_counters(p);
	groups = cJSON_AddArrayToObject(obj, "groups");
	for (unsigned g = 0; groups && g < GPU_JOB_G_COUNT; g++) {
		struct gj_group *gr = &p->groups[g];
		cJSON *o = cJSON_CreateObject(), *tps;
		if (!o)
			break;
		cJSON_AddStringToObject(o, "name", gj_group_name(g));
		cJSON_AddStringToObject(o, "state",
					gr->attached		     ? "attached"
					: gr->skel && !gr->reason[0] ? "off"
								     : "unavailable");
		cJSON_AddStringToObject(o, "reason", gr->reason);
		tps = cJSON_AddArrayToObject(o, "tracepoints");
		for (unsigned i = 0; tps && gr->attached && i < gr->ntps; i++)
			cJSON_AddItemToArray(tps, cJSON_CreateString(gr->tracepoints[i]));
		cJSON_AddNumberToObject(o, "events", (double)gr->events);
		cJSON_AddItemToArray(groups, o);
	}
	if (p->pair)
		gj_pair_stats(p->pair, &st);
	cJSON_AddNumberToObject(obj, "pending", (double)st.pending);
	cJSON_AddNumberToObject(obj, "pending_max", (double)p->pending);
	cJSON_AddNumberToObject(obj, "intervals", (double)st.intervals);
	cJSON_AddNumberToObject(obj, "evicted", (double)st.evicted);
	cJSON_AddNumberToObject(obj, "stale", (double)st.stale);
	cJSON_AddNumberToObject(obj, "unmatched_end", (double)st.unmatched_end);
	cJSON_AddNumberToObject(obj, "abandoned", (double)st.abandoned);
	cJSON_AddNumberToObject(obj, "filtered", (double)p->filtered);
	cJSON_AddNumberToObject(obj, "ringbuf_bytes", (double)p->ringbuf_bytes);
	cJSON_AddNumberToObject(obj, "lost", (double)p->lost);
	cJSON_AddNumberToObject(obj, "stack_bytes", p->owner ? p->owner->rodata->stack_bytes : 0);
	cJSON_AddNumberToObject(obj, "stacks_fp_fallback", (double)p->stacks_fp_fallback);
}

static void gj_free(struct collector *c)
{
	struct gj_priv *p = c->priv;

	if (!p)
		return;
	gj_stop(c);
	for (unsigned g = 0; g < GPU_JOB_G_COUNT; g++)
		unload_group(p, g);
	gpu_job_bpf__destroy(p->owner);
	p->owner = NULL;
	gj_pair_free(p->pair); /* releases the pending jobs' store references */
	gj_fence_names_free(p);
	free(p->percpu);
	free(p);
	c->priv = NULL;
}

const struct collector_ops gpu_job_collector_ops = {
	.name = "gpu_jobs",
	.open = gj_open,
	.start = gj_start,
	.stop = gj_stop,
	.status = gj_status,
	.free = gj_free,
};
