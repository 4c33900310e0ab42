// SPDX-License-Identifier: MIT
/*
 * Frame resolution: mapping -> object (cached by build-id, else by file
 * identity) -> ELF virtual address -> function; JIT maps for anonymous
 * code; kallsyms for the kernel.
 */
#include "sym_priv.h"
#include "symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the object cache (callers hold s->lock) ---- */

static struct sym_obj *obj_find_file(struct symbolizer *s, const struct stat *st)
{
	int64_t mt = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	for (size_t i = 0; i < s->nobjs; i++) {
		struct sym_obj *o = s->objs[i];
		if (o->ino == st->st_ino && o->dev == st->st_dev && o->size == st->st_size &&
		    o->mtime_ns == mt)
			return o;
	}
	return NULL;
}

static struct sym_obj *obj_find_id(struct symbolizer *s, const uint8_t *id, size_t len)
{
	for (size_t i = 0; len && i < s->nobjs; i++) {
		struct sym_obj *o = s->objs[i];
		if (o->build_id_len == len && !memcmp(o->build_id, id, len))
			return o;
	}
	return NULL;
}

static struct sym_obj *obj_hold(struct symbolizer *s, struct sym_obj *o)
{
	if (o) {
		o->refs++;
		o->last_used = ++s->tick;
	}
	return o;
}

/* Pick up to n unreferenced least-recently-used victims over the limits. */
static size_t obj_evict(struct symbolizer *s, struct sym_obj **out, size_t n)
{
	size_t k = 0;
	while (k < n && (s->nobjs > s->max_objects || s->obj_bytes > s->max_object_bytes)) {
		size_t best = SIZE_MAX;
		for (size_t i = 0; i < s->nobjs; i++)
			if (!s->objs[i]->refs &&
			    (best == SIZE_MAX || s->objs[i]->last_used < s->objs[best]->last_used))
				best = i;
		if (best == SIZE_MAX)
			break;
		out[k++] = s->objs[best];
		s->obj_bytes -= s->objs[best]->bytes;
		s->objs[best] = s->objs[--s->nobjs];
	}
	return k;
}

void sym_objs_trim(struct symbolizer *s)
{
	struct sym_obj *victims[16];
	size_t n;
	do {
		pthread_mutex_lock(&s->lock);
		n = obj_evict(s, victims, 16);
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < n; i++)
			symobj_free(victims[i]);
	} while (n == 16);
}

/* Insert o, held once for the caller, unless another thread loaded the same
 * object meanwhile: then o is freed and the cached one returned, held.
 * NULL (o freed) when the cache cannot grow. */
static struct sym_obj *obj_insert(struct symbolizer *s, struct sym_obj *o)
{
	struct sym_obj *have, *victims[8];
	size_t nv = 0;
	struct stat key = {
		.st_dev = o->dev,
		.st_ino = o->ino,
		.st_size = o->size,
		.st_mtim = {o->mtime_ns / 1000000000, o->mtime_ns % 1000000000},
	};

	pthread_mutex_lock(&s->lock);
	have = o->build_id_len ? obj_find_id(s, o->build_id, o->build_id_len) : NULL;
	if (!have)
		have = obj_find_file(s, &key);
	if (!have && s->nobjs == s->objs_cap) {
		size_t nc = s->objs_cap ? s->objs_cap * 2 : 64;
		struct sym_obj **no = realloc(s->objs, nc * sizeof(*no));
		if (no) {
			s->objs = no;
			s->objs_cap = nc;
		}
	}
	if (have) {
		obj_hold(s, have);
	} else if (s->nobjs < s->objs_cap) {
		s->objs[s->nobjs++] = o;
		s->obj_bytes += o->bytes;
		s->objects_loaded++;
		obj_hold(s, o);
		nv = obj_evict(s, victims, 8);
		have = o;
		o = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	symobj_free(o);
	for (size_t i = 0; i < nv; i++)
		symobj_free(victims[i]);
	return have;
}

static void obj_put(struct symbolizer *s, struct sym_obj *o)
{
	pthread_mutex_lock(&s->lock);
	o->refs--;
	pthread_mutex_unlock(&s->lock);
}

/* fd, if it is the file the mapping maps (by inode: /proc/PID/maps gives
 * no more), else closed and -ESTALE. */
static int same_file(int fd, const struct sym_map *m)
{
	struct stat st;
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == 0 && st.st_ino == m->ino)
		return fd;
	close(fd);
	return -ESTALE;
}

/*
 * The mapped file. While the process lives, /proc/PID/map_files/START-END
 * is the very file mapped there (root may open it: CAP_SYS_ADMIN), whatever
 * happened to its path since: deleted, replaced, shadowed by a mount, or
 * only reachable in the process's mount namespace. Without it, the path
 * inside the process's root, then the host's path, each only if it still
 * is the mapped inode: a library upgraded under a process falls back to
 * "lib.so+0x..." rather than to another build's names.
 */
static int open_object(struct sym_pctx *pc, const struct sym_map *m, const char *path)
{
	char buf[384];
	int fd = -1;
	if (pc->alive) {
		snprintf(buf, sizeof(buf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
			 pc->s->proc_dir, pc->pid, m->start, m->end);
		fd = sym_open_in_root("", buf);
		if (fd < 0)
			fd = same_file(sym_open_in_root(pc->root, path), m);
	}
	if (fd < 0)
		fd = same_file(sym_open_in_root("", path), m);
	return fd;
}

static struct sym_obj *get_object(struct sym_pctx *pc, const struct sym_map *m)
{
	struct symbolizer *s = pc->s;
	const char *path = sym_map_path(pc->maps, m);
	struct sym_obj *o = NULL;
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t idlen = 0;
	struct stat st;
	struct symobj_opts op = {
		.max_symbols = s->max_symbols,
		.lines = s->lines,
		/* a DWARF image counts against the object cache: one that would
	     * take more than a quarter of it gets no lines */
		.max_dwarf_bytes = s->max_object_bytes / 4,
		.debug_dir = s->debug_dir,
		.root = pc->alive ? pc->root : "",
		.path = path,
	};

	int fd = open_object(pc, m, path);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out;
	pthread_mutex_lock(&s->lock);
	o = obj_hold(s, obj_find_file(s, &st));
	pthread_mutex_unlock(&s->lock);
	if (o)
		goto out;
	if (symobj_read_build_id(fd, id, &idlen) < 0)
		goto failed;
	pthread_mutex_lock(&s->lock);
	o = obj_hold(s, obj_find_id(s, id, idlen));
	pthread_mutex_unlock(&s->lock);
	if (o)
		goto out;
	if (symobj_load(fd, &op, &o) < 0)
		goto failed;
	o = obj_insert(s, o);
	goto out;
failed:
	log_debug("Cannot read symbols of %s (pid %" PRIu32 ")", path, pc->pid);
	pthread_mutex_lock(&s->lock);
	s->objects_failed++;
	pthread_mutex_unlock(&s->lock);
out:
	if (fd >= 0)
		close(fd);
	return o;
}

int sym_pctx_begin(struct symbolizer *s, uint32_t pid, int64_t uid, struct sym_pctx *pc)
{
	memset(pc, 0, sizeof(*pc));
	pc->s = s;
	pc->pid = pid;
	pc->uid = uid;
	pc->maps = sym_proc_snapshot(s, pid, &pc->alive);
	if (pc->alive)
		snprintf(pc->root, sizeof(pc->root), "%s/%" PRIu32 "/root", s->proc_dir, pid);
	if (pc->maps && pc->maps->n) {
		pc->objs = calloc(pc->maps->n, sizeof(*pc->objs));
		if (!pc->objs) {
			sym_maps_put(s, pc->maps);
			return -ENOMEM;
		}
	}
	return 0;
}

void sym_pctx_end(struct sym_pctx *pc)
{
	for (size_t i = 0; pc->objs && i < pc->maps->n; i++) {
		struct sym_obj *o = pc->objs[i];
		if (!o || o == SYM_OBJ_NONE)
			continue;
		/* objects shared by several mappings are held once per mapping */
		obj_put(pc->s, o);
	}
	free(pc->objs);
	jitmap_free(pc->jit);
	sym_maps_put(pc->s, pc->maps);
	memset(pc, 0, sizeof(*pc));
}

static const struct jitmap *get_jit(struct sym_pctx *pc)
{
	char path[512];
	struct stat st;
	int fd = -1;

	if (pc->jit_tried)
		return pc->jit;
	pc->jit_tried = true;
	if (pc->alive) { /* a container's /tmp and its own pid number */
		uint32_t nspid = sym_nspid(pc->s->proc_dir, pc->pid);
		snprintf(path, sizeof(path), "/tmp/perf-%" PRIu32 ".map", nspid);
		fd = sym_open_in_root(pc->root, path);
	}
	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/perf-%" PRIu32 ".map", pc->s->jit_dir, pc->pid);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	}
	if (fd < 0)
		return NULL;
	/* Anyone may write /tmp/perf-123.map: trust it only from root or the
	 * process's owner, as perf does. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_uid == 0 || (pc->uid >= 0 && st.st_uid == (uid_t)pc->uid)))
		jitmap_read(fd, &pc->jit);
	close(fd);
	return pc->jit;
}

static void copy_name(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s", name);
}

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

int sym_resolve_user(struct sym_pctx *pc, uint64_t addr, unsigned adj, char *buf, size_t len,
		     char *line, size_t linelen, size_t *mapi)
{
	uint64_t look = addr - adj;
	if (line && linelen)
		line[0] = '\0';
	if (addr >> 63) { /* not an address: a Python frame */
		if (mapi)
			*mapi = SIZE_MAX;
		if (pc->s->py_name &&
		    pc->s->py_name(pc->s->py_ctx, addr, buf, len, line, line ? linelen : 0))
			return 0;
		copy_name(buf, len, "[unknown]");
		return -ENOENT;
	}
	if (addr == SYMTAB_IP_TRUNCATED) { /* not an address: the unwinder stopped */
		if (mapi)
			*mapi = SIZE_MAX;
		copy_name(buf, len, SYMTAB_TRUNCATED_NAME);
		return -ENOENT;
	}
	const struct sym_map *m = procmaps_find(pc->maps, look);
	if (mapi)
		*mapi = m && m->kind == SYM_MAP_FILE ? (size_t)(m - pc->maps->m) : SIZE_MAX;
	if (!m || m->kind == SYM_MAP_ANON) {
		const char *n = jitmap_lookup(get_jit(pc), look);
		copy_name(buf, len, n ? n : "[unknown]");
		return n ? 0 : -ENOENT;
	}
	const char *path = sym_map_path(pc->maps, m);
	if (m->kind == SYM_MAP_SPECIAL) {
		copy_name(buf, len, path);
		return -ENOENT;
	}
	size_t i = (size_t)(m - pc->maps->m);
	if (!pc->objs[i])
		pc->objs[i] = get_object(pc, m);
	if (!pc->objs[i])
		pc->objs[i] = SYM_OBJ_NONE;
	struct sym_obj *o = pc->objs[i] == SYM_OBJ_NONE ? NULL : pc->objs[i];
	uint64_t off = look - m->start + m->off, va;
	if (o && symobj_file_to_vaddr(o, off, &va)) {
		const char *n = symobj_lookup(o, va);
		if (n) {
			copy_name(buf, len, n);
			if (line && linelen)
				symobj_srcline(o, va, line, linelen);
			return 0;
		}
		off = va;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, base_name(path), off + adj);
	return -ENOENT;
}

int sym_resolve_kernel(const struct ksyms *k, uint64_t addr, unsigned adj, char *buf, size_t len)
{
	const char *n = ksyms_lookup(k, addr - adj, NULL);
	copy_name(buf, len, n ? n : "[unknown]");
	return n ? 0 : -ENOENT;
}

int sym_resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel, char *buf,
		size_t len, char *line, size_t linelen)
{
	struct sym_pctx pc;
	int r;

	if (line && linelen)
		line[0] = '\0';
	if (kernel) {
		struct ksyms *k = sym_kernel_get(s);
		r = sym_resolve_kernel(k, addr, 0, buf, len);
		sym_kernel_put(s, k);
		return r;
	}
	char p[320];
	struct stat st;
	snprintf(p, sizeof(p), "%s/%" PRIu32, s->proc_dir, pid);
	r = sym_pctx_begin(s, pid, stat(p, &st) == 0 ? (int64_t)st.st_uid : -1, &pc);
	if (r < 0)
		return r;
	r = sym_resolve_user(&pc, addr, 0, buf, len, line, linelen, NULL);
	sym_pctx_end(&pc);
	return r;
}
