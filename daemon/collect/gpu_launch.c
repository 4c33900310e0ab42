// SPDX-License-Identifier: MIT
/*
 * GPU launch collector (userspace half of bpf/gpu_launch.bpf.c).
 *
 * Discovery: the BPF watcher reports processes that mmap a watched runtime
 * library executable, and the exec, exit and fork of those processes; one
 * /proc scan at start finds those already running. Each process's maps
 * name the library file; probes go on the file (pid -1: a uprobe on an
 * inode fires in every process that maps it), once per file, and come off
 * when the last process mapping it is gone (gpu_attach.c, on the thread
 * pool).
 *
 * Launch records become STORE_REC_GPU_LAUNCH (gpu_launch.h has the field
 * convention); their stacks are trimmed to start at the call site, outside
 * the runtime's own frames. With gpu.stack_sample N > 1 the BPF side walks
 * the stack of 1 launch in N per call site; the others get the stack last
 * seen there (gpu_sites.h).
 */
#include "gpu_launch.h"
#include "rbloop.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

/* bpf/gpu_launch.h: the record layout. Spelled with its directory because
 * this directory has a gpu_launch.h of its own (the collector's API). */
#include "../../bpf/gpu_launch.h"
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "gpu_sites.h"
#include "libscan.h"
#include "log.h"
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
	c->priv = p;
	return p;
}

int gpu_launch_set_pid_hook(struct collector *c, void (*fn)(void *arg, uint32_t pid), void *arg)
{
	struct gl_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	p->pid_hook = fn;
	p->pid_hook_arg = arg;
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

/* ------------------------------------------------------------------ */
/* Processes                                                           */

static struct gl_proc **proc_slot(struct gl_priv *p, uint32_t pid)
{
	struct gl_proc **pp = &p->procs[(pid * 2654435761u) % GL_PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static void proc_drop(struct gl_priv *p, uint32_t pid)
{
	struct gl_proc **pp = proc_slot(p, pid), *pr = *pp;

	if (!pr)
		return;
	*pp = pr->next;
	for (unsigned i = 0; i < pr->nlibs; i++)
		gl_lib_put(p, pr->libs[i]);
	gpu_sites_drop_pid(&p->sites, p->c->gpd->store, pid);
	if (p->skel) {
		bpf_map__delete_elem(p->skel->maps.usdt_pids, &pid, sizeof(pid), 0);
		bpf_map__delete_elem(p->skel->maps.tracked, &pid, sizeof(pid), 0);
	}
	p->nprocs--;
	free(pr);
}


/* (Re)read pid's maps and make its set of libraries match them. */
static void proc_scan(struct gl_priv *p, uint32_t pid)
{
	struct libscan_hit *hits = malloc(GL_MAX_LIBS_PER_PROC * sizeof(*hits));
	struct gl_proc **pp, *pr, *old;
	uint32_t one = 1;
	bool usdt = false;
	int n;

	if (!hits) {
		p->local_drops++;
		return;
	}
	n = libscan_pid(NULL, pid, hits, GL_MAX_LIBS_PER_PROC);
	if (n <= 0) {
		/* Gone already, or it unmapped the library: forget it. */
		proc_drop(p, pid);
		goto out;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr) {
		p->local_drops++;
		goto out;
	}
	pr->pid = pid;
	for (int i = 0; i < n; i++) {
		struct gl_lib *l = gl_lib_get(p, &hits[i], pid);

		if (!l)
			continue;
		l->nprocs++;
		pr->libs[pr->nlibs++] = l;
		usdt |= l->usdt;
		for (unsigned k = 0; k < hits[i].nranges &&
				     pr->nranges < sizeof(pr->ranges) / sizeof(pr->ranges[0]);
		     k++) {
			pr->ranges[pr->nranges].lo = hits[i].ranges[k].lo;
			pr->ranges[pr->nranges].hi = hits[i].ranges[k].hi;
			pr->nranges++;
		}
	}
	/* Swap in the new view; references on libraries move over first
	 * so a library mapped before and after keeps its probes. */
	pp = proc_slot(p, pid);
	old = *pp;
	if (old) {
		pr->launched = old->launched;
		pr->next = old->next;
		*pp = pr;
		for (unsigned i = 0; i < old->nlibs; i++)
			gl_lib_put(p, old->libs[i]);
		free(old);
	} else {
		pr->next = NULL;
		*pp = pr;
		p->nprocs++;
		if (p->pid_hook)
			p->pid_hook(p->pid_hook_arg, pid);
	}
	bpf_map__update_elem(p->skel->maps.tracked, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY);
	if (usdt)
		bpf_map__update_elem(p->skel->maps.usdt_pids, &pid, sizeof(pid), &one, sizeof(one),
				     BPF_ANY);
out:
	free(hits);
	gl_state_update(p);
}

static void proc_fork(struct gl_priv *p, uint32_t child, uint32_t parent)
{
	struct gl_proc *pa = *proc_slot(p, parent), *ch;

	if (!pa || *proc_slot(p, child)) {
		proc_scan(p, child);
		return;
	}
	ch = malloc(sizeof(*ch));
	if (!ch) {
		p->local_drops++;
		return;
	}
	*ch = *pa;
	ch->pid = child;
	ch->launched = false;
	for (unsigned i = 0; i < ch->nlibs; i++)
		ch->libs[i]->nprocs++;
	ch->next = *proc_slot(p, child);
	*proc_slot(p, child) = ch;
	p->nprocs++;
	if (p->pid_hook)
		p->pid_hook(p->pid_hook_arg, child);
	gl_state_update(p);
}

static void initial_scan(struct gl_priv *p)
{
	DIR *d = opendir("/proc");
	struct libscan_hit hit;
	struct dirent *de;

	if (!d) {
		log_warn("gpu: cannot scan /proc: %s", strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid || pid > UINT32_MAX || pid == (unsigned long)getpid())
			continue;
		/* Cheap first pass (one hit, no allocation); most processes
		 * map no runtime. */
		if (libscan_pid(NULL, (uint32_t)pid, &hit, 1) > 0)
			proc_scan(p, (uint32_t)pid);
	}
	closedir(d);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */

static bool in_runtime(const struct gl_proc *pr, uint64_t ip)
{
	for (unsigned i = 0; i < pr->nranges; i++)
		if (ip >= pr->ranges[i].lo && ip < pr->ranges[i].hi)
			return true;
	return false;
}

static uint32_t intern_name(struct store *s, const struct gpu_launch_rec *r)
{
	char buf[GPU_LAUNCH_NAME_LEN + 96];
	size_t len;
	int n;

	if (r->flags & GPU_LAUNCH_F_NAME) {
		len = strnlen(r->name, sizeof(r->name));
		memcpy(buf, r->name, len);
	} else {
		len = (size_t)snprintf(buf, sizeof(buf), "0x%" PRIx64,
				       (uint64_t)(r->handle ? r->handle : r->gpu_addr));
	}
	if (r->flags & (GPU_LAUNCH_F_GRID | GPU_LAUNCH_F_BLOCK)) {
		buf[len++] = '\0';
		n = 0;
		if (r->flags & GPU_LAUNCH_F_GRID)
			n = snprintf(buf + len, sizeof(buf) - len, "grid=%u,%u,%u", r->grid[0],
				     r->grid[1], r->grid[2]);
		if (r->flags & GPU_LAUNCH_F_BLOCK)
			n += snprintf(buf + len + n, sizeof(buf) - len - (size_t)n,
				      "%sblock=%u,%u,%u", n ? " " : "", r->block[0], r->block[1],
				      r->block[2]);
		len += (size_t)n;
	}
	return store_str_intern(s, buf, len);
}

/* A launch that located its kernel in GPU memory (NEO's USDT): tell the
 * kernel hook (the EU-stall kernel table), with the trimmed stack. */
static void report_kernel(struct gl_priv *p, const struct gpu_launch_rec *r, const uint64_t *ips,
			  uint16_t nips)
{
	char name[GPU_LAUNCH_NAME_LEN + 1], comm[GPU_LAUNCH_COMM_LEN + 1];
	size_t len = strnlen(r->name, sizeof(r->name));

	memcpy(name, r->name, len);
	name[len] = '\0';
	len = strnlen(r->comm, sizeof(r->comm));
	memcpy(comm, r->comm, len);
	comm[len] = '\0';
	struct gpu_launch_kernel k = {
		.gpu_addr = r->gpu_addr,
		.size = r->isa_size,
		.iba = r->iba,
		.pid = r->pid,
		.uid = r->uid,
		.name = (r->flags & GPU_LAUNCH_F_NAME) && name[0] ? name : NULL,
		.comm = comm,
		.ustack = nips ? ips : NULL,
		.nustack = nips,
	};

	p->kernel_hook(p->kernel_hook_arg, &k);
}

static void on_launch(struct gl_priv *p, const struct gpu_launch_rec *r, size_t size)
{
	struct store *s = p->c->gpd->store;
	uint64_t ips[GPU_LAUNCH_MAX_FRAMES + 1];
	struct gl_proc *pr;
	unsigned n = r->nuser, skip = 0;
	uint32_t comm, stack, name;
	struct store_rec rec;

	if (r->nuser > GPU_LAUNCH_MAX_FRAMES ||
	    size < GPU_LAUNCH_HDR_BYTES + (size_t)r->nuser * sizeof(uint64_t)) {
		p->local_drops++;
		return;
	}
	pr = *proc_slot(p, r->pid);
	if (r->flags & GPU_LAUNCH_F_NOSTACK) {
		stack = gpu_sites_get(&p->sites, s, r->pid, r->tid, r->handle, r->caller);
		if (!stack) {
			/* Nothing remembered (a record lost, a slot reused):
			 * the call site alone, and the next launch there takes
			 * a full stack again. */
			struct gpu_site_key k = {.tid = r->tid, .handle = r->handle,
						 .caller = r->caller};

			bpf_map__delete_elem(p->skel->maps.sites, &k, sizeof(k), 0);
			ips[0] = r->caller;
			stack = store_stack_intern(s, ips, 1, 0);
		}
		goto append;
	}
	p->sites.taken++;
	memcpy(ips, r->ips, n * sizeof(uint64_t));
	/* At an entry probe the call site is the return address at the
	 * stack pointer; frame-pointer unwinding from the first instruction
	 * skips it on kernels or functions the kernel's fix-up misses. */
	if (r->caller && n >= 1 && (n < 2 || ips[1] != r->caller)) {
		memmove(&ips[2], &ips[1], (n - 1) * sizeof(uint64_t));
		ips[1] = r->caller;
		n++;
	}
	if (n > GPU_LAUNCH_MAX_FRAMES)
		n = GPU_LAUNCH_MAX_FRAMES;
	while (pr && skip < n && in_runtime(pr, ips[skip]))
		skip++;
	if (!skip && n)
		skip = 1; /* at least the probed entry point itself */
	stack = n > skip ? store_stack_intern(s, ips + skip, (uint16_t)(n - skip), 0) : 0;
	if (stack && p->stack_sample > 1 && r->caller)
		gpu_sites_put(&p->sites, s, r->pid, r->tid, r->handle, r->caller, stack);
append:
	if (r->gpu_addr && p->kernel_hook)
		report_kernel(p, r, ips + skip, n > skip ? (uint16_t)(n - skip) : 0);
	if (pr && !pr->launched) {
		pr->launched = true;
		if (p->pid_hook)
			p->pid_hook(p->pid_hook_arg, r->pid);
	}
	comm = store_str_intern(s, r->comm, strnlen(r->comm, sizeof(r->comm)));
	name = intern_name(s, r);
	if (!comm || !name || (n > skip && !stack) || ((r->flags & GPU_LAUNCH_F_NOSTACK) && !stack)) {
		if (comm)
			store_str_unref(s, comm);
		if (name)
			store_str_unref(s, name);
		if (stack)
			store_stack_unref(s, stack);
		p->local_drops++;
		return;
	}
	rec = (struct store_rec){
		.ts_ns = r->ts_ns,
		.pid = r->pid,
		.tid = r->tid,
		.uid = r->uid,
		.comm = comm,
		.stack = stack,
		.name = name,
		.type = STORE_REC_GPU_LAUNCH,
		.cpu = r->cpu,
		.aux32 = r->api,
		.aux = {r->queue, r->correlation},
	};
	store_append(s, &rec);
	p->c->events++;
}

static void on_proc(struct gl_priv *p, const struct gpu_proc_rec *r)
{
	p->proc_events++;
	switch (r->event) {
	case GPU_PROC_MMAP:
		proc_scan(p, r->pid);
		break;
	case GPU_PROC_EXEC:
		/* The old image's mappings are gone; the new one's
		 * libraries arrive as mmap events of their own. */
		proc_drop(p, r->pid);
		gl_state_update(p);
		break;
	case GPU_PROC_EXIT:
		proc_drop(p, r->pid);
		gl_state_update(p);
		break;
	case GPU_PROC_FORK:
		proc_fork(p, r->pid, r->ppid);
		break;
	default:
		p->local_drops++;
	}
}

static void read_counters(struct gl_priv *p)
{
	if (!p->skel || !p->percpu)
		return;
	rbloop_percpu_sum(p->skel->maps.counters, 0, p->percpu, p->ncpus, &p->lost);
	rbloop_percpu_sum(p->skel->maps.counters, 1, p->percpu, p->ncpus, &p->unnamed);
	p->c->drops = p->lost + p->local_drops;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct gl_priv *p = ctx;
	const uint16_t *hdr = data;

	if (size < 4 || hdr[1] != GPU_LAUNCH_REC_VERSION)
		p->local_drops++;
	else if (hdr[0] == GPU_LAUNCH_REC_TYPE && size >= GPU_LAUNCH_HDR_BYTES)
		on_launch(p, data, size);
	else if (hdr[0] == GPU_PROC_REC_TYPE && size >= sizeof(struct gpu_proc_rec))
		on_proc(p, data);
	else
		p->local_drops++;
	p->c->drops = p->lost + p->local_drops;
	return rbloop_took(&p->rbl);
}

/* Timer housekeeping, after each timer drain (rbloop). */
static void on_tick(void *arg)
{
	read_counters(arg);
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */

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
	r = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_KPROBE, NULL);
	if (r <= 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE,
				    "BPF not supported: kprobe/uprobe programs %s",
				    r == 0 ? "are not available in this kernel" : strerror(-r));
		return 0;
	}
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
	p->skel = gpu_launch_bpf__open();
	if (!p->skel) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF open failed: %s",
				    strerror(errno));
		release_bpf(p);
		return 0;
	}
	for (int i = 0; i < GPU_RT_COUNT && i < GPU_WATCH_MAX; i++)
		snprintf((char *)p->skel->rodata->watch[i], GPU_WATCH_LEN, "%s",
			 libscan_prefix(i));
	p->skel->rodata->wakeup_bytes = p->ringbuf_bytes / 8;
	p->stack_sample = c->gpd ? c->gpd->cfg.gpu_stack_sample : 1;
	p->skel->rodata->stack_sample = p->stack_sample;
	/* The narrow mmap hook needs its tracepoint (5.11+) and
	 * bpf_task_pt_regs() (5.15+); without them only the fallback loads. */
	if (!btf_has_type("btf_trace_mmap_lock_released", BTF_KIND_TYPEDEF) ||
	    !libbpf_probe_bpf_helper(BPF_PROG_TYPE_TRACING, BPF_FUNC_task_pt_regs, NULL))
		bpf_program__set_autoload(p->skel->progs.gl_mmap_unlock, false);
	r = bpf_map__set_max_entries(p->skel->maps.events, (uint32_t)p->ringbuf_bytes);
	if (!r)
		r = gpu_launch_bpf__load(p->skel);
	if (r) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF load failed: %s",
				    strerror(r < 0 ? -r : errno));
		release_bpf(p);
		return 0;
	}
	log_info("gpu: launch probes loaded, ring buffer %zu bytes", p->ringbuf_bytes);
	return 0;
}

static void gl_stop(struct collector *c);

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
	if (rbloop_start(&p->rbl, c, "gpu", bpf_map__fd(p->skel->maps.events), on_event, p,
			 GL_DRAIN_BUDGET, GL_TICK_MS, on_tick, p) < 0) {
		gl_stop(c); /* the collector says why */
		return 0;
	}
	collector_set_state(c, COLLECTOR_ATTACHED, NULL);
	/* After the watcher is on, so no process falls in between. */
	initial_scan(p);
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
	read_counters(p);
	for (unsigned b = 0; b < GL_PROC_BUCKETS; b++)
		while (p->procs[b])
			proc_drop(p, p->procs[b]->pid);
	sites_forget(p);
	p->mmap_hook = NULL;
	if (c->state == COLLECTOR_ATTACHED)
		collector_set_state(c, COLLECTOR_OFF, NULL);
}

static void gl_status(struct collector *c, cJSON *obj)
{
	struct gl_priv *p = c->priv;
	cJSON *w, *libs;

	if (!p)
		return;
	read_counters(p);
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
	cJSON_AddNumberToObject(obj, "lost", (double)p->lost);
	cJSON_AddNumberToObject(obj, "unnamed_launches", (double)p->unnamed);
	cJSON_AddNumberToObject(obj, "attach_errors", (double)p->attach_errors);
	cJSON_AddNumberToObject(obj, "process_events", (double)p->proc_events);
	cJSON_AddStringToObject(obj, "mmap_hook", p->mmap_hook ? p->mmap_hook : "none");
	if (p->mmap_hook_note[0])
		cJSON_AddStringToObject(obj, "mmap_hook_note", p->mmap_hook_note);
	cJSON_AddNumberToObject(obj, "stack_sample", p->stack_sample);
	cJSON_AddNumberToObject(obj, "stacks_taken", (double)p->sites.taken);
	cJSON_AddNumberToObject(obj, "stacks_reused", (double)p->sites.reused);
	cJSON_AddNumberToObject(obj, "stack_misses", (double)p->sites.misses);
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
		/* Attach / detach jobs still use the programs: the last one frees. */
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
