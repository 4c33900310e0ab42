// SPDX-License-Identifier: MIT
/*
 * The symbolizer object: process snapshots, the object cache and the kernel
 * table, all behind one mutex that is never held across file I/O. The
 * pieces themselves (sym_internal.h) are immutable and reference-counted,
 * so a worker resolves frames without the lock. Capture symbolization is in
 * symcap.c.
 */
#include "sym_priv.h"

#include "procmapq.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NBUCKETS 4096

uint64_t sym_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t sym_nspid(const char *proc_dir, uint32_t pid)
{
	char path[128], buf[4096];
	uint32_t ns = pid;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/status", proc_dir, pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "NSpid:", 6))
			continue;
		/* "NSpid:\t4242\t17": the last one is the innermost namespace */
		char *p = buf + 6, *e;
		for (;;) {
			unsigned long v = strtoul(p, &e, 10);
			if (e == p)
				break;
			ns = (uint32_t)v;
			p = e;
		}
		break;
	}
	fclose(f);
	return ns ? ns : pid;
}

/* A path longer than the buffer is cut: it then fails to open, which the
 * symbolizer survives like any missing file. */
static void set_path(char *dst, size_t len, const char *v, const char *def1, const char *def2)
{
	if (v)
		snprintf(dst, len, "%s", v);
	else
		snprintf(dst, len, "%s%s", def1, def2);
}

int sym_new(const struct sym_opts *opts, struct symbolizer **ret)
{
	struct sym_opts o = opts ? *opts : (struct sym_opts){0};
	struct symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->buckets = calloc(NBUCKETS, sizeof(*s->buckets));
	if (!s->buckets) {
		free(s);
		return -ENOMEM;
	}
	s->max_objects = o.max_objects ? o.max_objects : 256;
	s->max_object_bytes = o.max_object_bytes ? o.max_object_bytes : (256u << 20);
	s->max_symbols = o.max_symbols_per_object ? o.max_symbols_per_object : (4u << 20);
	s->max_procs = o.max_procs ? o.max_procs : 16384;
	s->exited_ttl_ns = o.exited_ttl_ns ? o.exited_ttl_ns : 600ull * 1000000000ull;
	s->refresh_ns = opts ? o.refresh_ns : 10ull * 1000000000ull;
	s->lines = o.lines;
	s->demangle = !o.no_demangle;
	s->py_name = o.py_name;
	s->py_ctx = o.py_ctx;
	set_path(s->proc_dir, sizeof(s->proc_dir), o.proc_dir, "/proc", "");
	set_path(s->kallsyms_path, sizeof(s->kallsyms_path), o.kallsyms_path, s->proc_dir,
		 "/kallsyms");
	set_path(s->modules_path, sizeof(s->modules_path), o.modules_path, s->proc_dir, "/modules");
	set_path(s->debug_dir, sizeof(s->debug_dir), o.debug_dir, "/usr/lib/debug", "");
	set_path(s->jit_dir, sizeof(s->jit_dir), o.jit_dir, "/tmp", "");
	set_path(s->notes_path, sizeof(s->notes_path), o.kernel_notes, "/sys/kernel/notes", "");
	s->lru.lprev = s->lru.lnext = &s->lru;
	pthread_mutex_init(&s->lock, NULL);
	*ret = s;
	return 0;
}

void sym_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t b = 0; b < NBUCKETS; b++)
		for (struct sym_proc *p = s->buckets[b], *n; p; p = n) {
			n = p->hnext;
			procmaps_free(p->maps);
			free(p);
		}
	for (size_t i = 0; i < s->nobjs; i++)
		symobj_free(s->objs[i]);
	free(s->objs);
	free(s->buckets);
	ksyms_free(s->ks);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* ---- process snapshots (callers hold s->lock) ---- */

static struct sym_proc *proc_find(struct symbolizer *s, uint32_t pid)
{
	struct sym_proc *p = s->buckets[pid % NBUCKETS];
	while (p && p->pid != pid)
		p = p->hnext;
	return p;
}

static void lru_unlink(struct sym_proc *p)
{
	p->lprev->lnext = p->lnext;
	p->lnext->lprev = p->lprev;
}

static void lru_append(struct symbolizer *s, struct sym_proc *p)
{
	p->lprev = s->lru.lprev;
	p->lnext = &s->lru;
	s->lru.lprev->lnext = p;
	s->lru.lprev = p;
}

/* Unlink p; returns its maps for the caller to release after unlocking. */
static struct sym_maps *proc_remove(struct symbolizer *s, struct sym_proc *p)
{
	struct sym_proc **pp = &s->buckets[p->pid % NBUCKETS];
	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	lru_unlink(p);
	s->nprocs--;
	s->procs_evicted++;
	struct sym_maps *m = p->maps;
	free(p);
	return m && --m->refs == 0 ? m : NULL;
}

/*
 * Install a fresh snapshot for pid (creating the entry, evicting the least
 * recently seen one at max_procs). Returns the snapshot to free after
 * unlocking, if any: the one replaced or evicted, or maps itself when even
 * the entry could not be allocated.
 */
static struct sym_maps *proc_set(struct symbolizer *s, uint32_t pid, struct sym_maps *maps,
				 uint64_t now, bool seen, struct sym_maps **evicted)
{
	struct sym_proc *p = proc_find(s, pid);
	struct sym_maps *old = NULL;
	*evicted = NULL;
	if (!p) {
		if (s->nprocs >= s->max_procs && s->lru.lnext != &s->lru)
			*evicted = proc_remove(s, s->lru.lnext);
		p = calloc(1, sizeof(*p));
		if (!p)
			return --maps->refs == 0 ? maps : NULL;
		p->pid = pid;
		p->hnext = s->buckets[pid % NBUCKETS];
		s->buckets[pid % NBUCKETS] = p;
		s->nprocs++;
		p->last_seen_ns = now;
		lru_append(s, p);
	} else {
		old = p->maps && --p->maps->refs == 0 ? p->maps : NULL;
	}
	if (seen) {
		p->last_seen_ns = now;
		lru_unlink(p);
		lru_append(s, p);
	}
	p->maps = maps;
	p->snap_ns = now;
	return old;
}

static void note(struct symbolizer *s, uint32_t pid, bool force)
{
	struct sym_maps *maps, *old, *ev;
	uint64_t now = sym_now_ns();
	if (!s || !pid)
		return;
	pthread_mutex_lock(&s->lock);
	struct sym_proc *p = proc_find(s, pid);
	if (p && !force && (!s->refresh_ns || now - p->snap_ns < s->refresh_ns)) {
		p->last_seen_ns = now;
		lru_unlink(p);
		lru_append(s, p);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	if (p) /* no second reader while this one reads the file */
		p->snap_ns = now;
	pthread_mutex_unlock(&s->lock);

	if (procmaps_read(s->proc_dir, pid, &maps) < 0)
		return;
	maps->refs = 1;
	maps->read_ns = now;
	pthread_mutex_lock(&s->lock);
	old = proc_set(s, pid, maps, now, true, &ev);
	pthread_mutex_unlock(&s->lock);
	procmaps_free(old);
	procmaps_free(ev);
}

void sym_note_pid(struct symbolizer *s, uint32_t pid)
{
	note(s, pid, false);
}

void sym_note_exec(struct symbolizer *s, uint32_t pid)
{
	note(s, pid, true);
}

struct sym_maps *sym_proc_snapshot(struct symbolizer *s, uint32_t pid, bool *alive)
{
	struct sym_maps *fresh = NULL, *old = NULL, *ev = NULL, *m;
	uint64_t now = sym_now_ns();

	*alive = pid && procmaps_read(s->proc_dir, pid, &fresh) == 0;
	pthread_mutex_lock(&s->lock);
	if (fresh) {
		fresh->read_ns = now;
		fresh->refs = 2; /* the cache's and ours */
		old = proc_set(s, pid, fresh, now, false, &ev);
		m = fresh; /* without memory for the entry, ours alone (refs 1) */
	} else {
		struct sym_proc *p = pid ? proc_find(s, pid) : NULL;
		m = p ? p->maps : NULL;
		if (m)
			m->refs++;
	}
	pthread_mutex_unlock(&s->lock);
	procmaps_free(old);
	procmaps_free(ev);
	return m;
}

int sym_fresh_maps(struct symbolizer *s, uint32_t pid, uint64_t max_age_ns,
		   void (*each)(void *ctx, const struct pmq_map *m, const char *name), void *ctx)
{
	uint64_t now = sym_now_ns();
	struct sym_maps *ms = NULL;
	int r = -ENOENT;

	if (!s || !pid)
		return -ENOENT;
	pthread_mutex_lock(&s->lock);
	struct sym_proc *p = proc_find(s, pid);
	/* snap_ns later than the read: a re-read (an exec) failed since, and
	 * what is held may be the program before the exec */
	if (p && p->maps && p->maps->read_ns == p->snap_ns && now - p->maps->read_ns < max_age_ns) {
		ms = p->maps;
		ms->refs++;
	}
	pthread_mutex_unlock(&s->lock);
	if (!ms)
		return r;
	/* a snapshot cut at its bound misses mappings: no use to a walker */
	r = ms->n >= SYM_MAX_MAPPINGS ? -E2BIG : 0;
	for (size_t i = 0; !r && i < ms->n; i++) {
		const struct sym_map *m = &ms->m[i];
		struct pmq_map q = {
			.start = m->start,
			.end = m->end,
			.off = m->off,
			.ino = m->ino,
			.dev_major = m->dev_major,
			.dev_minor = m->dev_minor,
			.flags = PMQ_EXEC,
		};

		each(ctx, &q, sym_map_path(ms, m));
	}
	sym_maps_put(s, ms);
	return r;
}

void sym_maps_put(struct symbolizer *s, struct sym_maps *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&s->lock);
	bool last = --m->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		procmaps_free(m);
}

void sym_sweep(struct symbolizer *s, uint64_t now)
{
	struct sym_maps *dead[32];
	size_t ndead = 0;

	pthread_mutex_lock(&s->lock);
	if (now - s->last_sweep_ns < s->exited_ttl_ns / 4) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	s->last_sweep_ns = now;
	/* Oldest first; stop at the first entry seen recently. */
	for (struct sym_proc *p = s->lru.lnext, *n; p != &s->lru && ndead < 32; p = n) {
		n = p->lnext;
		if (now - p->last_seen_ns < s->exited_ttl_ns)
			break;
		if (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH) {
			struct sym_maps *m = proc_remove(s, p);
			if (m)
				dead[ndead++] = m;
		}
	}
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < ndead; i++)
		procmaps_free(dead[i]);
}

/* ---- kernel ---- */

struct ksyms *sym_kernel_get(struct symbolizer *s)
{
	uint64_t h = ksyms_modules_hash(s->modules_path);
	struct ksyms *k, *fresh = NULL, *old = NULL;

	pthread_mutex_lock(&s->lock);
	bool stale = !s->ks || s->ks->modules_hash != h;
	pthread_mutex_unlock(&s->lock);
	if (stale && ksyms_load(s->kallsyms_path, &fresh) == 0) {
		fresh->modules_hash = h;
		fresh->refs = 1;
		if (fresh->restricted)
			log_debug("kallsyms shows no addresses (kptr_restrict): kernel frames "
				  "stay [unknown]");
	}
	pthread_mutex_lock(&s->lock);
	if (fresh) {
		if (s->ks && --s->ks->refs == 0)
			old = s->ks;
		s->ks = fresh;
	}
	k = s->ks;
	if (k)
		k->refs++;
	pthread_mutex_unlock(&s->lock);
	ksyms_free(old);
	return k;
}

void sym_kernel_put(struct symbolizer *s, struct ksyms *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&s->lock);
	bool last = --k->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		ksyms_free(k);
}

void sym_get_stats(struct symbolizer *s, struct sym_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	st->procs = s->nprocs;
	st->objects = s->nobjs;
	st->object_bytes = s->obj_bytes;
	st->kernel_symbols = s->ks ? s->ks->n : 0;
	st->kernel_restricted = s->ks && s->ks->restricted;
	st->objects_loaded = s->objects_loaded;
	st->objects_failed = s->objects_failed;
	st->procs_evicted = s->procs_evicted;
	st->captures = s->captures;
	pthread_mutex_unlock(&s->lock);
}
