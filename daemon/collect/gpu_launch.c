// SPDX-License-Identifier: MIT
/*
 * GPU launch collector (userspace half of bpf/gpu_launch.bpf.c): the ops
 * table, BPF load and attach, status.
 *
 * Discovery: the BPF watcher reports processes that mmap a watched runtime
 * library executable, and the exec, exit and fork of those processes; one
 * /proc scan at start finds those already running (gpu_launch_proc.c).
 * Each process's maps name the library file; probes go on the file (pid
 * -1: a uprobe on an inode fires in every process that maps it), once per
 * file, and come off when the last process mapping it is gone
 * (gpu_attach.c, on the thread pool). Launch records become
 * STORE_REC_GPU_LAUNCH (gpu_launch_rec.c).
 */
#include "gpu_launch.h"
#include "bpf_perm.h"
#include "rbloop.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "gpu_launch_abi.h" /* the record layout the BPF program writes */
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "gpu_sites.h"
#include "libscan.h"
#include "log.h"
#include "pyframes/pyreg.h"
#include "store/store.h"

#include "gpu_launch_int.h"

static struct gl_priv *priv_get(struct collector *c)
{
	struct gl_priv *p = c->priv;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = c;
	p->ringbuf_bytes = GPU_LAUNCH_DEFAULT_RINGBUF_BYTES;
	p->cg.mnt_fd = -1;
	c->priv = p;
	return p;
}

int gpu_launch_set_pid_hook(struct collector *c, collector_pid_fn fn, void *arg)
{
	struct gl_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	collector_pid_hook_set(&p->pid_hook, fn, arg);
	return 0;
}

int gpu_launch_set_kernel_hook(struct collector *c, gpu_launch_kernel_fn fn, void *arg)
{
	struct gl_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	p->kernel_hook = fn;
	p->kernel_hook_arg = arg;
	return 0;
}

int gpu_launch_set_zebin_hook(struct collector *c, const struct gpu_launch_zebin_hook *h)
{
	struct gl_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	if (h)
		p->zebin_hook = *h;
	else
		memset(&p->zebin_hook, 0, sizeof(p->zebin_hook));
	return 0;
}

void gl_state_update(struct gl_priv *p)
{
	char watching[160] = "";
	size_t off = 0;

	if (p->c->state != COLLECTOR_ATTACHED)
		return;
	for (int i = 0; i < GPU_RT_COUNT && off < sizeof(watching); i++)
		off += (size_t)snprintf(watching + off, sizeof(watching) - off, "%s%s*",
					i ? ", " : "", libscan_prefix(i));
	/* The costly fallback is worth a word in the one-line status. */
	const char *wide = p->mmap_hook && strstr(p->mmap_hook, "sys_exit")
				   ? "; mmap watcher on sys_exit (see mmap_hook_note)"
				   : "";

	if (!p->nlibs)
		snprintf(p->c->reason, sizeof(p->c->reason),
			 "idle: no process maps a GPU runtime; watching %s%s", watching, wide);
	else
		snprintf(p->c->reason, sizeof(p->c->reason),
			 "probing %u runtime librar%s in %u process%s%s", p->nlibs,
			 p->nlibs == 1 ? "y" : "ies", p->nprocs, p->nprocs == 1 ? "" : "es", wide);
}

/* Something for the self-test uprobe to sit on. */
__attribute__((noinline, used)) int gpu_launch_selftest_target(int x);
__attribute__((noinline, used)) int gpu_launch_selftest_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* Attach one uprobe to this process's own code, through the same PMU path
 * the library probes use: a kernel without uprobes, or a policy refusing
 * them, shows up here with a reason instead of as silence later. */
static int uprobe_selftest(struct gl_priv *p)
{
	uint64_t addr = (uint64_t)(uintptr_t)&gpu_launch_selftest_target;
	char line[512], path[PATH_MAX];
	struct bpf_link *link;
	uint64_t lo, hi, off;
	long file_off = -1;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char perms[8];

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64, &lo, &hi, perms, &off) ==
			    4 &&
		    addr >= lo && addr < hi) {
			file_off = (long)(addr - lo + off);
			break;
		}
	}
	fclose(f);
	if (file_off < 0 || !realpath("/proc/self/exe", path))
		return -ENOENT;
	link = bpf_program__attach_uprobe(p->skel->progs.gl_selftest, false, getpid(), path,
					  (size_t)file_off);
	if (!link)
		return -errno;
	bpf_link__destroy(link);
	return 0;
}

static bool btf_has_type(const char *name, int kind)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool r = btf && btf__find_by_name_kind(btf, name, kind) > 0;

	btf__free(btf);
	return r;
}

static void release_bpf(struct gl_priv *p)
{
	gpu_launch_bpf__destroy(p->skel);
	p->skel = NULL;
	free(p->percpu);
	p->percpu = NULL;
	cgpath_finish(&p->cg, NULL); /* gl_stop() dropped the cached strings */
}

static int gl_open(struct collector *c)
{
	struct gl_priv *p = priv_get(c);
	int r;

	if (!p)
		return -ENOMEM;
	if (p->skel)
		return 0;
	/* uprobes are kprobe-type programs. (libbpf cannot probe tp_btf
	 * without a target; a kernel without it fails the load below.) */
	r = bpf_perm_ready(c, BPF_PROG_TYPE_KPROBE, "kprobe/uprobe");
	if (!r)
		return 0;
	p->ncpus = r;
	p->percpu = calloc((size_t)p->ncpus, sizeof(*p->percpu));
	if (!p->percpu)
		return -ENOMEM;
	p->skel = gpu_launch_bpf__open();
	if (!p->skel) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF open failed: %s",
				    strerror(errno));
		release_bpf(p);
		return 0;
	}
	for (int i = 0; i < GPU_RT_COUNT && i < GPU_WATCH_MAX; i++)
		snprintf((char *)p->skel->rodata->watch[i], GPU_WATCH_LEN, "%s", libscan_prefix(i));
	p->skel->rodata->wakeup_bytes = p->ringbuf_bytes / 8;
	p->stack_sample = c->gpd ? c->gpd->cfg.gpu_stack_sample : 1;
	p->skel->rodata->stack_sample = p->stack_sample;
	/* gpu.stack_bytes 0, or no unwinder: frame pointers in BPF. */
	p->skel->rodata->stack_bytes = c->gpd && c->gpd->unwinder ? c->gpd->cfg.gpu_stack_bytes : 0;
	p->skel->rodata->copy_below = p->ringbuf_bytes / 2;
	/* The narrow mmap hook needs its tracepoint (5.11+) and
	 * bpf_task_pt_regs() (5.15+); without them only the fallback loads. */
	if (!btf_has_type("btf_trace_mmap_lock_released", BTF_KIND_TYPEDEF) ||
	    !libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACING, BPF_FUNC_task_pt_regs, NULL))
		bpf_program__set_autoload(p->skel->progs.gl_mmap_unlock, false);
	r = bpf_map__set_max_entries(p->skel->maps.events, (uint32_t)p->ringbuf_bytes);
	/* one map of Python processes for every program (pyframes/pyreg.h) */
	if (r == 0 && c->gpd && pyreg_map_fd(c->gpd->pyreg) >= 0)
		r = bpf_map__reuse_fd(p->skel->maps.py_procs, pyreg_map_fd(c->gpd->pyreg));
	if (!r) /* one staging slot per possible CPU */
		r = bpf_map__set_max_entries(p->skel->maps.scratch, (uint32_t)p->ncpus);
	if (!r)
		r = gpu_launch_bpf__load(p->skel);
	if (r) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF load failed: %s",
				    strerror(r < 0 ? -r : errno));
		release_bpf(p);
		return 0;
	}
	if (cgpath_init(&p->cg, NULL) < 0) {
		release_bpf(p);
		return -ENOMEM;
	}
	if (p->cg.mnt_fd < 0)
		log_info("gpu: %s", p->cg.reason);
	else
		log_info("gpu: launch cgroups resolved under %s (%s)", p->cg.mnt,
			 p->cg.handle_type >= 0 ? "file handles, /proc/PID/cgroup fallback"
						: "/proc/PID/cgroup only");
	log_info("gpu: launch probes loaded, ring buffer %zu bytes, user stacks %s",
		 p->ringbuf_bytes, p->skel->rodata->stack_bytes ? "by CFI" : "by frame pointers");
	return 0;
}

static void gl_stop(struct collector *c);

/* Timer housekeeping, after each timer drain (rbloop). */
static void on_tick(void *arg)
{
	gl_read_counters(arg);
}

/* Attach the watcher's mmap program: the narrow hook unless configured
 * off or refused, else the sys_exit one. Returns the program attached
 * (watch_links[0] set) or the one that failed. */
static struct bpf_program *watcher_mmap(struct gl_priv *p)
{
	struct bpf_program *narrow = p->skel->progs.gl_mmap_unlock;
	int err;

	p->mmap_hook_note[0] = '\0';
	if (p->c->gpd && p->c->gpd->cfg.gpu_watcher == CONFIG_GPU_WATCHER_SYS_EXIT) {
		snprintf(p->mmap_hook_note, sizeof(p->mmap_hook_note),
			 "gpu.watcher = sys_exit in the configuration");
	} else if (!bpf_program__autoload(narrow)) {
		snprintf(p->mmap_hook_note, sizeof(p->mmap_hook_note),
			 "kernel lacks the mmap_lock_released tracepoint or bpf_task_pt_regs()");
	} else {
		p->watch_links[0] = bpf_program__attach(narrow);
		if (p->watch_links[0]) {
			p->mmap_hook = "tp_btf/mmap_lock_released";
			return narrow;
		}
		err = errno;
		snprintf(p->mmap_hook_note, sizeof(p->mmap_hook_note),
			 "tp_btf/mmap_lock_released refused: %s", strerror(err));
		log_warn("gpu: %s; falling back to tp_btf/sys_exit", p->mmap_hook_note);
	}
	p->watch_links[0] = bpf_program__attach(p->skel->progs.gl_sys_exit);
	p->mmap_hook = p->watch_links[0] ? "tp_btf/sys_exit" : NULL;
	return p->skel->progs.gl_sys_exit;
}

static int gl_start(struct collector *c)
{
	struct gl_priv *p = c->priv;
	struct bpf_program *watchers[4];
	int r;

	if (!p || !p->skel || rbloop_running(&p->rbl))
		return 0;
	r = uprobe_selftest(p);
	if (r < 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "uprobe attach refused: %s",
				    strerror(-r));
		return 0;
	}
	watchers[0] = watcher_mmap(p);
	watchers[1] = p->skel->progs.gl_exec;
	watchers[2] = p->skel->progs.gl_exit;
	watchers[3] = p->skel->progs.gl_fork;
	for (int i = 0; i < 4; i++) {
		if (i) /* [0] is attached by watcher_mmap() */
			p->watch_links[i] = bpf_program__attach(watchers[i]);
		if (!p->watch_links[i]) {
			r = -errno;
			collector_set_state(c, COLLECTOR_UNAVAILABLE,
					    "library watcher (%s) refused: %s",
					    bpf_program__name(watchers[i]), strerror(-r));
			gl_stop(c);
			return 0;
		}
	}
	if (rbloop_start(&p->rbl, c, "gpu", bpf_map__fd(p->skel->maps.events), gl_on_event, p,
			 GL_DRAIN_BUDGET, GL_TICK_MS, on_tick, p) < 0) {
		gl_stop(c); /* the collector says why */
		return 0;
	}
	collector_set_state(c, COLLECTOR_ATTACHED, NULL);
	/* After the watcher is on, so no process falls in between. */
	gl_initial_scan(p);
	gl_state_update(p);
	return 0;
}

/* Stop: the stacks remembered per call site go, on both sides, so a restart
 * does not send stackless launches for sites userspace no longer knows. */
static void sites_forget(struct gl_priv *p)
{
	struct gpu_site_key k;

	if (p->c->gpd)
		gpu_sites_clear(&p->sites, p->c->gpd->store);
	while (p->skel && !bpf_map__get_next_key(p->skel->maps.sites, NULL, &k, sizeof(k)))
		if (bpf_map__delete_elem(p->skel->maps.sites, &k, sizeof(k), 0))
			break;
}

static void gl_stop(struct collector *c)
{
	struct gl_priv *p = c->priv;

	if (!p)
		return;
	for (int i = 0; i < 4; i++) {
		bpf_link__destroy(p->watch_links[i]);
		p->watch_links[i] = NULL;
	}
	rbloop_stop(&p->rbl); /* delivers what was committed before the detach */
	gl_read_counters(p);
	for (unsigned b = 0; b < GL_PROC_BUCKETS; b++)
		while (p->procs[b])
			gl_proc_drop(p, p->procs[b]->pid);
	sites_forget(p);
	if (p->c->gpd)
		cgpath_clear(&p->cg, p->c->gpd->store);
	p->mmap_hook = NULL;
	if (c->state == COLLECTOR_ATTACHED)
		collector_set_state(c, COLLECTOR_OFF, NULL);
}

static void gl_status(struct collector *c, cJSON *obj)
{
	struct gl_priv *p = c->priv;
	cJSON *w, *libs, *cg;

	if (!p)
		return;
	gl_read_counters(p);
	w = cJSON_AddArrayToObject(obj, "watching");
	for (int i = 0; w && i < GPU_RT_COUNT; i++)
		cJSON_AddItemToArray(w, cJSON_CreateString(libscan_prefix(i)));
	libs = cJSON_AddArrayToObject(obj, "libraries");
	for (struct gl_lib *l = p->libs; libs && l; l = l->next) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			break;
		cJSON_AddStringToObject(o, "path", l->path);
		cJSON_AddStringToObject(o, "runtime", libscan_runtime_name(l->rt));
		cJSON_AddNumberToObject(o, "inode", (double)l->ino);
		cJSON_AddNumberToObject(o, "processes", l->nprocs);
		cJSON_AddNumberToObject(o, "probes", l->nlinks);
		cJSON_AddBoolToObject(o, "usdt", l->usdt);
		if (l->attaching)
			cJSON_AddBoolToObject(o, "attaching", true);
		if (l->err[0])
			cJSON_AddStringToObject(o, "error", l->err);
		cJSON_AddItemToArray(libs, o);
	}
	cJSON_AddNumberToObject(obj, "processes", p->nprocs);
	cJSON_AddNumberToObject(obj, "ringbuf_bytes", (double)p->ringbuf_bytes);
	gl_zebin_status(p, obj);
	cJSON_AddNumberToObject(obj, "lost", (double)p->lost);
	cJSON_AddNumberToObject(obj, "unnamed_launches", (double)p->unnamed);
	cJSON_AddNumberToObject(obj, "attach_errors", (double)p->attach_errors);
	/* attach, detach and zebin jobs on the thread pool: a loop that is
	 * closing waits for them (see collector_ops.free) */
	cJSON_AddNumberToObject(obj, "jobs_in_flight", p->inflight);
	cJSON_AddNumberToObject(obj, "process_events", (double)p->proc_events);
	cJSON_AddStringToObject(obj, "mmap_hook", p->mmap_hook ? p->mmap_hook : "none");
	if (p->mmap_hook_note[0])
		cJSON_AddStringToObject(obj, "mmap_hook_note", p->mmap_hook_note);
	cJSON_AddNumberToObject(obj, "stack_sample", p->stack_sample);
	cJSON_AddNumberToObject(obj, "stacks_taken", (double)p->sites.taken);
	cJSON_AddNumberToObject(obj, "stacks_reused", (double)p->sites.reused);
	cJSON_AddNumberToObject(obj, "stack_misses", (double)p->sites.misses);
	cJSON_AddNumberToObject(obj, "stack_bytes", p->skel ? p->skel->rodata->stack_bytes : 0);
	cJSON_AddNumberToObject(obj, "callers_inserted", (double)p->callers_inserted);
	cJSON_AddNumberToObject(obj, "stacks_fp_fallback", (double)p->stacks_fp_fallback);
	cg = cJSON_AddObjectToObject(obj, "cgroups");
	if (cg && p->cg.mnt_fd < 0) {
		cJSON_AddStringToObject(cg, "unavailable",
					p->cg.reason[0] ? p->cg.reason : "not loaded");
	} else if (cg) {
		cJSON_AddStringToObject(cg, "mount", p->cg.mnt);
		cJSON_AddNumberToObject(cg, "resolved", (double)p->cg.resolved);
		cJSON_AddNumberToObject(cg, "by_file_handle", (double)p->cg.by_handle);
		cJSON_AddNumberToObject(cg, "by_proc", (double)p->cg.by_proc);
		cJSON_AddNumberToObject(cg, "failed", (double)p->cg.failed);
	}
}

void gl_priv_release(struct gl_priv *p)
{
	release_bpf(p);
	free(p);
}

static void gl_free(struct collector *c)
{
	struct gl_priv *p = c->priv;

	if (!p)
		return;
	gl_stop(c);
	c->priv = NULL;
	if (p->inflight) {
		/* Attach / detach jobs still use the programs: the last one
		 * frees. Removing a library's uprobes waits for an RCU grace
		 * period per probe, seconds on a loaded machine; the loop's
		 * owner runs it until they end (collector_ops.free). */
		log_debug("gpu: freed with %u probe job(s) in flight; the loop finishes them",
			  p->inflight);
		p->c = NULL;
		p->freeing = true;
		return;
	}
	gl_priv_release(p);
}

const struct collector_ops gpu_launch_collector_ops = {
	.name = "gpu",
	.open = gl_open,
	.start = gl_start,
	.stop = gl_stop,
	.status = gl_status,
	.free = gl_free,
};
