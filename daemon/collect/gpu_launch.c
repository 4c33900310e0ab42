// SPDX-License-Identifier: MIT
/*
 * GPU launch collector (userspace half of bpf/gpu_launch.bpf.c).
 *
 * Discovery: the BPF watcher reports processes that mmap a watched runtime
 * library executable, and the exec, exit and fork of those processes; one
 * /proc scan at start finds those already running. Each process's maps
 * name the library file; probes go on the file (pid -1: a uprobe on an
 * inode fires in every process that maps it), once per file, and come off
 * when the last process mapping it is gone.
 *
 * Launch records become STORE_REC_GPU_LAUNCH (gpu_launch.h has the field
 * convention); their stacks are trimmed to start at the call site, outside
 * the runtime's own frames.
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
#include <bpf/libbpf.h>

/* bpf/gpu_launch.h: the record layout. Spelled with its directory because
 * this directory has a gpu_launch.h of its own (the collector's API). */
#include "../../bpf/gpu_launch.h"
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "libscan.h"
#include "log.h"
#include "store/store.h"

#define GL_TICK_MS 200
#define GL_DRAIN_BUDGET 8192
#define GL_PROC_BUCKETS 256
#define GL_MAX_LIBS_PER_PROC 8
#define GL_MAX_LINKS 24

/* One runtime library file (dev, ino) with probes on it. */
struct gl_lib {
	struct gl_lib *next;
	dev_t dev;
	ino_t ino;
	enum gpu_runtime rt;
	char path[PATH_MAX];
	struct bpf_link *links[GL_MAX_LINKS];
	unsigned nlinks;
	unsigned nprocs; /* processes mapping it: the probes' refcount */
	bool usdt;	 /* NEO's launch USDT attached */
	char err[160];	 /* why some or all probes are missing */
};

struct gl_proc {
	struct gl_proc *next;
	uint32_t pid;
	bool launched; /* pid hook called after the first launch */
	unsigned nlibs;
	struct gl_lib *libs[GL_MAX_LIBS_PER_PROC];
	unsigned nranges; /* executable ranges of those libraries */
	struct {
		uint64_t lo, hi;
	} ranges[GL_MAX_LIBS_PER_PROC * 2];
};

struct gl_priv {
	struct collector *c;
	struct gpu_launch_bpf *skel;
	struct bpf_link *watch_links[4];
	struct rbloop rbl; /* the ring buffer on the loop, between start and stop */
	size_t ringbuf_bytes;
	int ncpus;
	uint64_t *percpu;

	struct gl_lib *libs;
	unsigned nlibs;
	struct gl_proc *procs[GL_PROC_BUCKETS];
	unsigned nprocs;

	uint64_t lost, unnamed, local_drops, attach_errors, proc_events;

	void (*pid_hook)(void *arg, uint32_t pid);
	void *pid_hook_arg;
};

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

/* ------------------------------------------------------------------ */
/* Probes per library                                                  */

struct probe_spec {
	const char *sym;
	int prog; /* index into progs() below */
	bool ret; /* also the naming return probe */
	uint16_t cookie;
};

enum {
	P_ZE_CREATE,
	P_ZE_GS,
	P_ZE_LAUNCH,
	P_ZE_INDIRECT,
	P_ZE_ARGS,
	P_NAME13,
	P_CU_KGF,
	P_CU_LAUNCH,
	P_CU_EX,
	P_HIP_REG,
	P_HIP_LAUNCH,
};

static struct bpf_program *prog_of(struct gpu_launch_bpf *s, int which)
{
	switch (which) {
	case P_ZE_CREATE:
		return s->progs.gl_ze_kernel_create;
	case P_ZE_GS:
		return s->progs.gl_ze_set_group_size;
	case P_ZE_LAUNCH:
		return s->progs.gl_ze_launch;
	case P_ZE_INDIRECT:
		return s->progs.gl_ze_launch_indirect;
	case P_ZE_ARGS:
		return s->progs.gl_ze_launch_args;
	case P_NAME13:
		return s->progs.gl_name_out1_name3;
	case P_CU_KGF:
		return s->progs.gl_cu_kernel_get_function;
	case P_CU_LAUNCH:
		return s->progs.gl_cu_launch;
	case P_CU_EX:
		return s->progs.gl_cu_launch_ex;
	case P_HIP_REG:
		return s->progs.gl_hip_register_function;
	case P_HIP_LAUNCH:
		return s->progs.gl_hip_launch;
	}
	return NULL;
}

static const struct probe_spec ze_probes[] = {
	{"zeKernelCreate", P_ZE_CREATE, true, 0},
	{"zeKernelSetGroupSize", P_ZE_GS, false, 0},
	{"zeCommandListAppendLaunchKernel", P_ZE_LAUNCH, false, GPU_API_ZE_APPEND},
	{"zeCommandListAppendLaunchCooperativeKernel", P_ZE_LAUNCH, false, GPU_API_ZE_COOPERATIVE},
	{"zeCommandListAppendLaunchKernelWithParameters", P_ZE_LAUNCH, false,
	 GPU_API_ZE_WITH_PARAMS},
	{"zeCommandListAppendLaunchKernelIndirect", P_ZE_INDIRECT, false, GPU_API_ZE_INDIRECT},
	{"zeCommandListAppendLaunchKernelWithArguments", P_ZE_ARGS, false, GPU_API_ZE_WITH_ARGS},
};

static const struct probe_spec cuda_probes[] = {
	{"cuModuleGetFunction", P_NAME13, true, 0},
	{"cuLibraryGetKernel", P_NAME13, true, 0},
	{"cuKernelGetFunction", P_CU_KGF, true, 0},
	{"cuLaunchKernel", P_CU_LAUNCH, false, GPU_API_CU_LAUNCH},
	{"cuLaunchKernel_ptsz", P_CU_LAUNCH, false, GPU_API_CU_LAUNCH},
	{"cuLaunchCooperativeKernel", P_CU_LAUNCH, false, GPU_API_CU_COOPERATIVE},
	{"cuLaunchKernelEx", P_CU_EX, false, GPU_API_CU_LAUNCH_EX},
	{"cuLaunchKernelEx_ptsz", P_CU_EX, false, GPU_API_CU_LAUNCH_EX},
};

static const struct probe_spec hip_probes[] = {
	{"__hipRegisterFunction", P_HIP_REG, false, 0},
	{"hipModuleGetFunction", P_NAME13, true, 0},
	{"hipLaunchKernel", P_HIP_LAUNCH, false, GPU_API_HIP_LAUNCH},
	{"hipLaunchKernel_spt", P_HIP_LAUNCH, false, GPU_API_HIP_LAUNCH},
	{"hipExtLaunchKernel", P_HIP_LAUNCH, false, GPU_API_HIP_EXT_LAUNCH},
	{"hipModuleLaunchKernel", P_CU_LAUNCH, false, GPU_API_HIP_MODULE_LAUNCH},
};

static bool add_link(struct gl_lib *l, struct bpf_link *link)
{
	if (l->nlinks == GL_MAX_LINKS) {
		bpf_link__destroy(link);
		return false;
	}
	l->links[l->nlinks++] = link;
	return true;
}

static int attach_uprobe(struct gl_priv *p, struct gl_lib *l, const char *path,
			 const struct probe_spec *ps)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = ps->sym, .bpf_cookie = ps->cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog_of(p->skel, ps->prog), -1, path, 0, &o);
	if (!link)
		return -errno;
	add_link(l, link);
	if (!ps->ret)
		return 0;
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .func_name = ps->sym, .retprobe = true);
	link = bpf_program__attach_uprobe_opts(p->skel->progs.gl_name_ret, -1, path, 0, &ro);
	if (!link)
		return -errno;
	add_link(l, link);
	return 0;
}

/* Put the runtime's probes on l's file, reached through pid's root (the
 * path in its maps is in its own mount namespace). Missing entry points are
 * skipped: runtimes differ by version. */
static void lib_attach(struct gl_priv *p, struct gl_lib *l, uint32_t pid)
{
	const struct probe_spec *specs = NULL;
	size_t n = 0, launches = 0;
	char path[PATH_MAX + 64];
	const char *names[16];
	bool present[16];
	bool has_sdt = false;
	int r, first_err = 0;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/root%s", pid, l->path);
	switch (l->rt) {
	case GPU_RT_ZE:
		specs = ze_probes, n = sizeof(ze_probes) / sizeof(ze_probes[0]);
		break;
	case GPU_RT_CUDA:
		specs = cuda_probes, n = sizeof(cuda_probes) / sizeof(cuda_probes[0]);
		break;
	case GPU_RT_HIP:
		specs = hip_probes, n = sizeof(hip_probes) / sizeof(hip_probes[0]);
		break;
	default:
		break;
	}
	for (size_t i = 0; i < n; i++)
		names[i] = specs[i].sym;
	r = libscan_symbols(path, names, n, present, l->rt == GPU_RT_NEO ? "level_zero" : NULL,
			    "launch_kernel", &has_sdt);
	if (r < 0) {
		snprintf(l->err, sizeof(l->err), "reading the library: %s", strerror(-r));
		p->attach_errors++;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (!present[i])
			continue;
		r = attach_uprobe(p, l, path, &specs[i]);
		if (r < 0) {
			p->attach_errors++;
			if (!first_err)
				first_err = r;
			log_debug("gpu: uprobe %s in %s: %s", specs[i].sym, l->path, strerror(-r));
			continue;
		}
		if (specs[i].cookie)
			launches++;
	}
	if (l->rt == GPU_RT_NEO && has_sdt) {
		struct bpf_link *link = bpf_program__attach_usdt(
			p->skel->progs.gl_ze_usdt_launch, -1, path, "level_zero", "launch_kernel", NULL);
		if (link && add_link(l, link)) {
			l->usdt = true;
			launches++;
		} else if (!link) {
			first_err = -errno;
			p->attach_errors++;
		}
	}
	if (first_err)
		snprintf(l->err, sizeof(l->err), "some probes refused: %s", strerror(-first_err));
	else if (!launches && l->rt != GPU_RT_NEO)
		snprintf(l->err, sizeof(l->err), "no launch entry point found");
	log_info("gpu: %s %s: %u probes%s%s", libscan_runtime_name(l->rt), l->path, l->nlinks,
		 l->usdt ? " (USDT launch_kernel)" : "", l->err[0] ? "; " : "");
}

struct detach_work {
	uv_work_t w;
	unsigned n;
	struct bpf_link *links[GL_MAX_LINKS];
};

static void detach_run(uv_work_t *w)
{
	struct detach_work *d = (struct detach_work *)w;

	for (unsigned i = 0; i < d->n; i++)
		bpf_link__destroy(d->links[i]);
}

static void detach_done(uv_work_t *w, int status)
{
	free(w);
}

/* Removing a uprobe waits for an RCU grace period per probe (tens of ms
 * each on this kernel), so a library's links are destroyed on the thread
 * pool, not on the loop; synchronously only when there is no loop. */
static void lib_detach(struct gl_priv *p, struct gl_lib *l)
{
	struct detach_work *d = p->c->gpd && p->c->gpd->loop && rbloop_running(&p->rbl) ? malloc(sizeof(*d)) : NULL;

	if (d) {
		d->n = l->nlinks;
		memcpy(d->links, l->links, l->nlinks * sizeof(l->links[0]));
		if (uv_queue_work(p->c->gpd->loop, &d->w, detach_run, detach_done) == 0) {
			l->nlinks = 0;
			return;
		}
		free(d);
	}
	for (unsigned i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	l->nlinks = 0;
}

static struct gl_lib *lib_get(struct gl_priv *p, const struct libscan_hit *h, uint32_t pid)
{
	struct gl_lib *l;

	for (l = p->libs; l; l = l->next)
		if (l->dev == h->dev && l->ino == h->ino)
			return l;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->dev = h->dev;
	l->ino = h->ino;
	l->rt = h->rt;
	snprintf(l->path, sizeof(l->path), "%s", h->path);
	lib_attach(p, l, pid);
	l->next = p->libs;
	p->libs = l;
	p->nlibs++;
	return l;
}

static void lib_put(struct gl_priv *p, struct gl_lib *l)
{
	struct gl_lib **pp;

	if (--l->nprocs)
		return;
	log_info("gpu: %s %s: no process maps it any more, probes removed",
		 libscan_runtime_name(l->rt), l->path);
	lib_detach(p, l);
	for (pp = &p->libs; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	p->nlibs--;
	free(l);
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
		lib_put(p, pr->libs[i]);
	if (p->skel) {
		bpf_map__delete_elem(p->skel->maps.usdt_pids, &pid, sizeof(pid), 0);
		bpf_map__delete_elem(p->skel->maps.tracked, &pid, sizeof(pid), 0);
	}
	p->nprocs--;
	free(pr);
}

static void state_update(struct gl_priv *p);

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
		struct gl_lib *l = lib_get(p, &hits[i], pid);

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
			lib_put(p, old->libs[i]);
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
	state_update(p);
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
	state_update(p);
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
	pr = *proc_slot(p, r->pid);
	if (pr) {
		while (skip < n && in_runtime(pr, ips[skip]))
			skip++;
		if (!pr->launched) {
			pr->launched = true;
			if (p->pid_hook)
				p->pid_hook(p->pid_hook_arg, r->pid);
		}
	}
	if (!skip && n)
		skip = 1; /* at least the probed entry point itself */

	comm = store_str_intern(s, r->comm, strnlen(r->comm, sizeof(r->comm)));
	stack = n > skip ? store_stack_intern(s, ips + skip, (uint16_t)(n - skip), 0) : 0;
	name = intern_name(s, r);
	if (!comm || !name || (n > skip && !stack)) {
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
		state_update(p);
		break;
	case GPU_PROC_EXIT:
		proc_drop(p, r->pid);
		state_update(p);
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
	uint64_t lost = 0, unnamed = 0;
	uint32_t k;

	if (!p->skel || !p->percpu)
		return;
	k = 0;
	if (!bpf_map__lookup_elem(p->skel->maps.counters, &k, sizeof(k), p->percpu,
				  sizeof(uint64_t) * (size_t)p->ncpus, 0))
		for (int i = 0; i < p->ncpus; i++)
			lost += p->percpu[i];
	k = 1;
	if (!bpf_map__lookup_elem(p->skel->maps.counters, &k, sizeof(k), p->percpu,
				  sizeof(uint64_t) * (size_t)p->ncpus, 0))
		for (int i = 0; i < p->ncpus; i++)
			unnamed += p->percpu[i];
	p->lost = lost;
	p->unnamed = unnamed;
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

static void state_update(struct gl_priv *p)
{
	char watching[160] = "";
	size_t off = 0;

	if (p->c->state != COLLECTOR_ATTACHED)
		return;
	for (int i = 0; i < GPU_RT_COUNT && off < sizeof(watching); i++)
		off += (size_t)snprintf(watching + off, sizeof(watching) - off, "%s%s*",
					i ? ", " : "", libscan_prefix(i));
	if (!p->nlibs)
		snprintf(p->c->reason, sizeof(p->c->reason),
			 "idle: no process maps a GPU runtime; watching %s", watching);
	else
		snprintf(p->c->reason, sizeof(p->c->reason),
			 "probing %u runtime librar%s in %u process%s", p->nlibs,
			 p->nlibs == 1 ? "y" : "ies", p->nprocs, p->nprocs == 1 ? "" : "es");
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
	watchers[0] = p->skel->progs.gl_sys_exit;
	watchers[1] = p->skel->progs.gl_exec;
	watchers[2] = p->skel->progs.gl_exit;
	watchers[3] = p->skel->progs.gl_fork;
	for (int i = 0; i < 4; i++) {
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
	state_update(p);
	return 0;
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
}

static void gl_free(struct collector *c)
{
	struct gl_priv *p = c->priv;

	if (!p)
		return;
	gl_stop(c);
	release_bpf(p);
	free(p);
	c->priv = NULL;
}

const struct collector_ops gpu_launch_collector_ops = {
	.name = "gpu",
	.open = gl_open,
	.start = gl_start,
	.stop = gl_stop,
	.status = gl_status,
	.free = gl_free,
};
