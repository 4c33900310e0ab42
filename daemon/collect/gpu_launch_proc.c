// SPDX-License-Identifier: MIT
/*
 * GPU launch collector: the processes that map a runtime library
 * (gpu_launch_int.h). The BPF watcher's process records (mmap, exec, exit,
 * fork) and one /proc scan at start keep a table of them, each with the
 * library files it maps (whose probes gpu_attach.c holds while any process
 * maps them) and their executable ranges, which record decoding uses to trim
 * runtime frames off launch stacks.
 */
#include "gpu_launch_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "gpu_launch_abi.h"
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "log.h"
#include "unwind/unwind.h"

static struct gl_proc **proc_slot(struct gl_priv *p, uint32_t pid)
{
	struct gl_proc **pp = &p->procs[(pid * 2654435761u) % GL_PROC_BUCKETS];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

struct gl_proc *gl_proc_find(struct gl_priv *p, uint32_t pid)
{
	return *proc_slot(p, pid);
}

void gl_proc_drop(struct gl_priv *p, uint32_t pid)
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
		gl_proc_drop(p, pid);
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
		collector_pid_hook_call(&p->pid_hook, pid, false);
		/* Its mappings and objects, read while it lives: launch records
		 * are read up to a tick later, when a short-lived process may
		 * be gone, and its stacks would no longer unwind. */
		if (p->c->gpd && p->c->gpd->unwinder)
			unwind_prepare(p->c->gpd->unwinder, pid);
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
	collector_pid_hook_call(&p->pid_hook, child, false);
	gl_state_update(p);
}

void gl_initial_scan(struct gl_priv *p)
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

void gl_on_proc(struct gl_priv *p, const struct gpu_proc_rec *r)
{
	p->proc_events++;
	switch (r->event) {
	case GPU_PROC_MMAP:
		proc_scan(p, r->pid);
		break;
	case GPU_PROC_EXEC:
		/* The old image's mappings are gone; the new one's
		 * libraries arrive as mmap events of their own. */
		gl_proc_drop(p, r->pid);
		gl_state_update(p);
		break;
	case GPU_PROC_EXIT:
		gl_proc_drop(p, r->pid);
		gl_state_update(p);
		break;
	case GPU_PROC_FORK:
		proc_fork(p, r->pid, r->ppid);
		break;
	default:
		p->local_drops++;
	}
}
