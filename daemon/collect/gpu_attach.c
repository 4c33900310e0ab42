// SPDX-License-Identifier: MIT
/*
 * The GPU launch collector's probes on each runtime library file
 * (gpu_launch_int.h). Attaching a library's 10-20 uprobes takes tens to
 * hundreds of ms (symbol look-ups, one perf event each) and removing each
 * waits for an RCU grace period, so both run on the libuv thread pool while
 * the collector runs on a loop, and the results are applied on the loop:
 * RPCs stay answered meanwhile. A library released while its attach is in
 * flight is marked dead and freed when the job ends; so is the collector's
 * state when the collector is freed first (the skeleton's programs stay
 * valid for the jobs until then).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <uv.h>

#include "gpu_launch_abi.h"
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "gpu_launch_int.h"
#include "log.h"

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
	{"__hipRegisterFunction", P_HIP_REG, true, 0},
	{"hipModuleGetFunction", P_NAME13, true, 0},
	{"hipLaunchKernel", P_HIP_LAUNCH, false, GPU_API_HIP_LAUNCH},
	{"hipLaunchKernel_spt", P_HIP_LAUNCH, false, GPU_API_HIP_LAUNCH},
	{"hipExtLaunchKernel", P_HIP_LAUNCH, false, GPU_API_HIP_EXT_LAUNCH},
	{"hipModuleLaunchKernel", P_CU_LAUNCH, false, GPU_API_HIP_MODULE_LAUNCH},
};

/* One library's attach, run on the thread pool: its own copy of what it
 * needs, results applied to the library on the loop. */
struct attach_work {
	uv_work_t w;
	struct gl_priv *p;
	struct gl_lib *l;
	enum gpu_runtime rt;
	char path[PATH_MAX + 64]; /* through the mapping process's root */
	char lib_path[PATH_MAX];  /* as the daemon's maps view names it */
	dev_t dev;		  /* the mapped file, from the maps line */
	ino_t ino;
	struct bpf_link *links[GL_MAX_LINKS];
	unsigned nlinks, errors;
	bool usdt;
	bool unread; /* the file could not be read: no probe tried */
	double ms;   /* how long the attach took */
	char err[160];
};

static bool add_link(struct attach_work *a, struct bpf_link *link)
{
	if (a->nlinks == GL_MAX_LINKS) {
		bpf_link__destroy(link);
		return false;
	}
	a->links[a->nlinks++] = link;
	return true;
}

static int attach_uprobe(struct attach_work *a, const struct probe_spec *ps)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .func_name = ps->sym, .bpf_cookie = ps->cookie);
	struct bpf_link *link;

	link = bpf_program__attach_uprobe_opts(prog_of(a->p->skel, ps->prog), -1, a->path, 0, &o);
	if (!link)
		return -errno;
	add_link(a, link);
	if (!ps->ret)
		return 0;
	LIBBPF_OPTS(bpf_uprobe_opts, ro, .func_name = ps->sym, .retprobe = true);
	link = bpf_program__attach_uprobe_opts(a->p->skel->progs.gl_name_ret, -1, a->path, 0, &ro);
	if (!link)
		return -errno;
	add_link(a, link);
	return 0;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Which of names a->path defines (and NEO's launch USDT, has_sdt). */
static int scan(const struct attach_work *a, const char *const *names, size_t n, bool *present,
		bool *has_sdt)
{
	return libscan_symbols(a->path, names, n, present,
			       a->rt == GPU_RT_NEO ? "level_zero" : NULL, "launch_kernel", has_sdt);
}

/* Put the runtime's probes on the file. Missing entry points are skipped:
 * runtimes differ by version. Touches only a and the skeleton's programs. */
static void attach_run(uv_work_t *w)
{
	struct attach_work *a = (struct attach_work *)w;
	const struct probe_spec *specs = NULL;
	size_t n = 0, launches = 0;
	const char *names[16];
	bool present[16];
	bool has_sdt = false;
	int r, first_err = 0;
	double t0 = mono_ms();

	switch (a->rt) {
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
	r = scan(a, names, n, present, &has_sdt);
	if (r == -ENOENT) {
		/* The path does not resolve under the process's own root (a
		 * chroot, a mount over its directory in its mount namespace;
		 * or the process is gone). The daemon's own view of the path
		 * serves when it is the same file: uprobes go on the inode. */
		struct stat st;

		if (stat(a->lib_path, &st) == 0 && st.st_dev == a->dev && st.st_ino == a->ino) {
			snprintf(a->path, sizeof(a->path), "%s", a->lib_path);
			r = scan(a, names, n, present, &has_sdt);
		}
	}
	if (r < 0) {
		snprintf(a->err, sizeof(a->err), "reading the library: %s", strerror(-r));
		a->errors++;
		a->unread = true;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (!present[i])
			continue;
		r = attach_uprobe(a, &specs[i]);
		if (r < 0) {
			a->errors++;
			if (!first_err)
				first_err = r;
			log_debug("gpu: uprobe %s in %s: %s", specs[i].sym, a->lib_path,
				  strerror(-r));
			continue;
		}
		if (specs[i].cookie)
			launches++;
	}
	if (a->rt == GPU_RT_NEO && has_sdt) {
		struct bpf_link *link =
			bpf_program__attach_usdt(a->p->skel->progs.gl_ze_usdt_launch, -1, a->path,
						 "level_zero", "launch_kernel", NULL);
		if (link && add_link(a, link)) {
			a->usdt = true;
			launches++;
		} else if (!link) {
			first_err = -errno;
			a->errors++;
		}
		/* Debug zebins (kernel names + ISA); older patches lack the
		 * probe (-ENOENT): not an error. */
		link = bpf_program__attach_usdt(a->p->skel->progs.gl_ze_usdt_compile, -1, a->path,
						"level_zero", "compile_kernel", NULL);
		if (link) {
			add_link(a, link);
		} else if ((r = -errno) != -ENOENT) {
			log_debug("gpu: USDT compile_kernel in %s: %s", a->lib_path, strerror(-r));
			if (!first_err)
				first_err = r;
			a->errors++;
		}
	}
	if (first_err)
		snprintf(a->err, sizeof(a->err), "some probes refused: %s", strerror(-first_err));
	else if (!launches && a->rt != GPU_RT_NEO)
		snprintf(a->err, sizeof(a->err), "no launch entry point found");
out:
	a->ms = mono_ms() - t0;
}

/* Destroy links: on the thread pool while the collector runs on a loop,
 * else here. */
struct detach_work {
	uv_work_t w;
	struct gl_priv *p;
	unsigned n;
	struct bpf_link *links[GL_MAX_LINKS];
};

static void detach_run(uv_work_t *w)
{
	struct detach_work *d = (struct detach_work *)w;

	for (unsigned i = 0; i < d->n; i++)
		bpf_link__destroy(d->links[i]);
}

/* A USDT link's detach returns its spec ids to the skeleton's USDT
 * manager: the skeleton must outlive the job (counted in inflight). */
static void detach_done(uv_work_t *w, int status)
{
	struct gl_priv *p = ((struct detach_work *)w)->p;

	(void)status;
	free(w);
	p->inflight--;
	if (p->freeing && !p->inflight)
		gl_priv_release(p);
}

static void links_destroy(struct gl_priv *p, struct bpf_link **links, unsigned n)
{
	uv_loop_t *loop = p->c && p->c->gpd && rbloop_running(&p->rbl) ? p->c->gpd->loop : NULL;
	struct detach_work *d = loop && n ? malloc(sizeof(*d)) : NULL;

	if (d) {
		d->p = p;
		d->n = n;
		memcpy(d->links, links, n * sizeof(links[0]));
		if (uv_queue_work(loop, &d->w, detach_run, detach_done) == 0) {
			p->inflight++;
			return;
		}
		free(d);
	}
	for (unsigned i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
}

/* On the loop: hand the results to the library, or drop them with it. */
static void attach_apply(struct attach_work *a)
{
	struct gl_priv *p = a->p;
	struct gl_lib *l = a->l;
	uint32_t one = 1;

	p->attach_errors += a->errors;
	l->attaching = false;
	if (l->dead) {
		links_destroy(p, a->links, a->nlinks);
		free(l);
		return;
	}
	memcpy(l->links, a->links, a->nlinks * sizeof(a->links[0]));
	l->nlinks = a->nlinks;
	l->usdt = a->usdt;
	l->unread = a->unread;
	snprintf(l->err, sizeof(l->err), "%s", a->err);
	log_info("gpu: %s %s: %u probes in %.0f ms%s%s%s", libscan_runtime_name(l->rt), l->path,
		 l->nlinks, a->ms, l->usdt ? " (USDT launch_kernel)" : "", l->err[0] ? "; " : "",
		 l->err);
	/* Processes already mapping it now defer Level Zero launches to the
	 * USDT (new ones learn it in the process scan). */
	for (unsigned b = 0; l->usdt && b < GL_PROC_BUCKETS; b++)
		for (struct gl_proc *pr = p->procs[b]; pr; pr = pr->next)
			for (unsigned i = 0; i < pr->nlibs; i++)
				if (pr->libs[i] == l)
					bpf_map__update_elem(p->skel->maps.usdt_pids, &pr->pid,
							     sizeof(pr->pid), &one, sizeof(one),
							     BPF_ANY);
	if (p->c)
		gl_state_update(p);
}

static void attach_done(uv_work_t *w, int status)
{
	struct attach_work *a = (struct attach_work *)w;
	struct gl_priv *p = a->p;

	(void)status; /* not cancelled: nothing calls uv_cancel() */
	p->inflight--;
	attach_apply(a);
	free(a);
	if (p->freeing && !p->inflight)
		gl_priv_release(p);
}

static void lib_attach(struct gl_priv *p, struct gl_lib *l, uint32_t pid)
{
	struct attach_work *a = calloc(1, sizeof(*a));
	uv_loop_t *loop = p->c->gpd && rbloop_running(&p->rbl) ? p->c->gpd->loop : NULL;

	if (!a) {
		snprintf(l->err, sizeof(l->err), "out of memory");
		p->attach_errors++;
		return;
	}
	a->p = p;
	a->l = l;
	a->rt = l->rt;
	snprintf(a->path, sizeof(a->path), "/proc/%" PRIu32 "/root%s", pid, l->path);
	snprintf(a->lib_path, sizeof(a->lib_path), "%s", l->path);
	a->dev = l->dev;
	a->ino = l->ino;
	l->attaching = true;
	if (loop && uv_queue_work(loop, &a->w, attach_run, attach_done) == 0) {
		p->inflight++;
		return;
	}
	attach_run(&a->w);
	attach_apply(a);
	free(a);
}

struct gl_lib *gl_lib_get(struct gl_priv *p, const struct libscan_hit *h, uint32_t pid)
{
	struct gl_lib *l;

	for (l = p->libs; l; l = l->next)
		if (l->dev == h->dev && l->ino == h->ino) {
			/* The process its attach went through could not show
			 * the file (gone already, or its root hides the path):
			 * try again through this one, by the path this one
			 * maps it from (the old path may name another file). */
			if (l->unread && !l->attaching) {
				snprintf(l->path, sizeof(l->path), "%s", h->path);
				lib_attach(p, l, pid);
			}
			return l;
		}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->dev = h->dev;
	l->ino = h->ino;
	l->rt = h->rt;
	snprintf(l->path, sizeof(l->path), "%s", h->path);
	l->next = p->libs;
	p->libs = l;
	p->nlibs++;
	lib_attach(p, l, pid);
	return l;
}

void gl_lib_put(struct gl_priv *p, struct gl_lib *l)
{
	struct gl_lib **pp;

	if (--l->nprocs)
		return;
	log_info("gpu: %s %s: no process maps it any more, probes removed",
		 libscan_runtime_name(l->rt), l->path);
	for (pp = &p->libs; *pp; pp = &(*pp)->next)
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	p->nlibs--;
	if (l->attaching) {
		l->dead = true; /* attach_apply() frees it */
		return;
	}
	links_destroy(p, l->links, l->nlinks);
	l->nlinks = 0;
	free(l);
}
