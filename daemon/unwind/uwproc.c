// SPDX-License-Identifier: MIT
/*
 * The unwinder's processes (snapshots of their executable mappings) and
 * objects (ELF files with their CFI, shared by every process that maps
 * them), both least-recently-used under one byte budget.
 *
 * Files are opened through /proc/PID/map_files/START-END: the very file
 * the process mapped, whether it was deleted or replaced since, or lives in
 * another mount namespace (a container). Objects are keyed by the device
 * and inode the mapping shows in /proc/PID/maps, so a process whose files
 * are all cached costs one read of its executable mappings (an ioctl per
 * mapping where the kernel has PROCMAP_QUERY) and no file opened. (A file
 * rewritten in place keeps its inode; its mappings then show the new
 * contents too.)
 *
 * Object files are untrusted input, owned by whoever ran the program:
 * - read with ELF_C_READ (pread into memory), never mmap: a file its owner
 *   truncates under us cannot SIGBUS the daemon;
 * - never from a FUSE file system, whose server (any user, with fusermount)
 *   could hold a read forever and with it the event loop: such objects
 *   unwind by frame pointers;
 * - the sections libdw reads (.eh_frame and its index, or the .debug_*
 *   sections for .debug_frame) are counted against the budget before they
 *   are read, and an object that cannot fit is not loaded (frame pointers).
 */
#include "unwind_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <gelf.h>

#include "log.h"
#include "procmapq.h"
#include "util.h"

/* Fixed estimate of what libelf/libdw hold per open object besides our
 * rule cache (descriptors, section headers, parsed CIEs/FDEs). */
#define UW_OBJ_OVERHEAD 16384
#define UW_MAPS_MAX_BYTES (4u << 20) /* a /proc/PID/maps larger than this is cut */

uint64_t uw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned proc_bucket(uint32_t pid)
{
	return (pid * 2654435761u) % UW_PROC_BUCKETS;
}

static unsigned obj_bucket(dev_t dev, ino_t ino)
{
	return (unsigned)(((uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev) >> 40) %
	       UW_OBJ_BUCKETS;
}

/* Segments of an ELF file, for file offset -> virtual address. */
static int load_segments(struct uw_obj *o)
{
	size_t n;

	if (elf_getphdrnum(o->elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n && o->nloads < sizeof(o->loads) / sizeof(o->loads[0]); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(o->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->loads[o->nloads].off = ph.p_offset;
		o->loads[o->nloads].filesz = ph.p_filesz;
		o->loads[o->nloads].vaddr = ph.p_vaddr;
		o->nloads++;
	}
	return o->nloads ? 0 : -ENOEXEC;
}

bool uw_obj_vaddr(const struct uw_obj *o, uint64_t file_off, uint64_t *vaddr)
{
	for (size_t i = 0; i < o->nloads; i++)
		if (file_off >= o->loads[i].off &&
		    file_off - o->loads[i].off < o->loads[i].filesz) {
			*vaddr = file_off - o->loads[i].off + o->loads[i].vaddr;
			return true;
		}
	return false;
}

void uw_obj_free(struct uw_obj *o)
{
	if (!o)
		return;
	for (size_t i = 0; o->rules && i < o->nslots; i++)
		if (o->rules[i].pc)
			free(o->rules[i].cfa.ops), free(o->rules[i].ra.ops),
				free(o->rules[i].rbp.ops);
	free(o->rules);
	if (o->eh)
		dwarf_cfi_end(o->eh);
	if (o->dw)
		dwarf_end(o->dw);
	if (o->elf)
		elf_end(o->elf);
	if (o->fd >= 0)
		close(o->fd);
	free(o->image);
	free(o);
}

#define FUSE_SUPER_MAGIC 0x65735546

/* Bytes of the sections whose name starts with prefix (what libdw will
 * read into memory for them). */
static uint64_t section_bytes(Elf *e, const char *prefix)
{
	size_t shstrndx, len = strlen(prefix);
	Elf_Scn *scn = NULL;
	uint64_t sum = 0;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strncmp(name, prefix, len))
			sum += sh.sh_size;
	}
	return sum;
}

/* Make room for need more bytes; false when the budget cannot hold them. */
static bool room_for(struct unwinder *u, uint64_t need)
{
	if (u->bytes + need > u->budget)
		uw_trim_to(u, NULL, u->budget > need ? u->budget - need : 0);
	return u->bytes + need <= u->budget;
}

/* Open the ELF and its .eh_frame; x86-64 ELF64 only. */
static int obj_open_elf(struct unwinder *u, struct uw_obj *o)
{
	GElf_Ehdr eh;
	uint64_t need;

	if (!o->elf)
		return -EINVAL;
	if (elf_kind(o->elf) != ELF_K_ELF || !gelf_getehdr(o->elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	if (load_segments(o) < 0)
		return -ENOEXEC;
	o->entry = eh.e_entry;
	need = section_bytes(o->elf, ".eh_frame");
	if (!room_for(u, o->bytes + need)) {
		u->st.objs_over_budget++;
		return -ENOBUFS;
	}
	o->bytes += need;
	o->base_bytes = o->bytes;
	/* NULL when there is no .eh_frame: then .debug_frame is tried
	 * (uwrule.c), then frame pointers. */
	o->eh = dwarf_getcfi_elf(o->elf);
	return 0;
}

bool uw_obj_debug_room(struct unwinder *u, struct uw_obj *o)
{
	uint64_t need = section_bytes(o->elf, ".debug_");

	if (!need || !room_for(u, need)) {
		if (need)
			u->st.objs_over_budget++;
		return false;
	}
	o->bytes += need;
	o->base_bytes += need;
	u->bytes += need;
	return true;
}

static struct uw_obj *obj_new(struct unwinder *u)
{
	struct uw_obj *o = calloc(1, sizeof(*o));

	if (!o)
		return NULL;
	o->fd = -1;
	o->bytes = o->base_bytes = sizeof(*o) + UW_OBJ_OVERHEAD;
	o->last_used = ++u->tick;
	return o;
}

/* The kernel's vDSO: every 64-bit process maps the same image, so ours
 * (at AT_SYSINFO_EHDR) stands for all. Copied: libelf keeps no pointer into
 * memory we do not own. */
static struct uw_obj *vdso_get(struct unwinder *u)
{
	const unsigned char *img = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	struct uw_obj *o;
	size_t size = 0;
	GElf_Ehdr eh;
	Elf *e;

	if (u->vdso_tried)
		return u->vdso;
	u->vdso_tried = true;
	if (!img)
		return NULL;
	/* The image's size: the end of its section headers (they come last). */
	e = elf_memory((char *)img, 1 << 16);
	if (e && gelf_getehdr(e, &eh))
		size = eh.e_shoff + (size_t)eh.e_shnum * eh.e_shentsize;
	if (e)
		elf_end(e);
	if (!size || size > (1 << 16))
		return NULL;
	o = obj_new(u);
	if (!o)
		return NULL;
	o->image = malloc(size);
	if (!o->image) {
		uw_obj_free(o);
		return NULL;
	}
	memcpy(o->image, img, size);
	o->elf = elf_memory(o->image, size);
	if (obj_open_elf(u, o) < 0) {
		uw_obj_free(o);
		return NULL;
	}
	snprintf(o->name, sizeof(o->name), "[vdso]");
	o->refs = 1; /* held by the unwinder for its whole life */
	o->bytes += size;
	o->base_bytes = o->bytes;
	u->bytes += o->bytes;
	u->vdso = o;
	return o;
}

/* A cached object, by the device and inode /proc/PID/maps shows: a cached
 * object costs no system call, which is what makes a new process cheap. */
static struct uw_obj *obj_lookup(struct unwinder *u, dev_t dev, ino_t ino)
{
	for (struct uw_obj *o = u->objs[obj_bucket(dev, ino)]; o; o = o->next)
		if (o->dev == dev && o->ino == ino) {
			o->refs++;
			o->last_used = ++u->tick;
			return o;
		}
	return NULL;
}

/* Open the object behind a file mapping that is not cached yet. */
static struct uw_obj *obj_open(struct unwinder *u, uint32_t pid, uint64_t start, uint64_t end,
			       const char *path, dev_t dev, ino_t ino)
{
	char mf[320];
	struct statfs sfs;
	struct stat st;
	struct uw_obj *o;
	const char *base;
	int fd;

	snprintf(mf, sizeof(mf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, u->proc_dir, pid,
		 start, end);
	fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) || fstatfs(fd, &sfs) ||
	    sfs.f_type == FUSE_SUPER_MAGIC) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	o = obj_new(u);
	if (!o) {
		close(fd);
		return NULL;
	}
	o->fd = fd;
	o->dev = dev;
	o->ino = ino;
	base = strrchr(path, '/');
	snprintf(o->name, sizeof(o->name), "%s", base ? base + 1 : path);
	o->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (obj_open_elf(u, o) < 0) {
		u->st.objs_failed++;
		uw_obj_free(o);
		return NULL;
	}
	u->st.objs_loaded++;
	o->refs = 1;
	o->next = u->objs[obj_bucket(o->dev, o->ino)];
	u->objs[obj_bucket(o->dev, o->ino)] = o;
	u->nobjs++;
	u->bytes += o->bytes;
	return o;
}

void uw_obj_put(struct unwinder *u, struct uw_obj *o)
{
	(void)u;
	if (o && o->refs)
		o->refs--; /* idle objects stay cached until the budget wants room */
}

static void maps_release(struct unwinder *u, struct uw_proc *p)
{
	for (size_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].obj != u->vdso)
			uw_obj_put(u, p->maps[i].obj);
	u->bytes -= p->nmaps * sizeof(*p->maps);
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
}

/* The mappings being read, grown as they come. */
struct maps_acc {
	struct uw_map *maps;
	size_t n, cap;
};

static int acc_add(struct unwinder *u, struct maps_acc *a, const struct uw_map *m)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		struct uw_map *nm = realloc(a->maps, cap * sizeof(*nm));

		if (!nm) {
			if (m->obj != u->vdso)
				uw_obj_put(u, m->obj);
			return -ENOMEM;
		}
		a->maps = nm;
		a->cap = cap;
	}
	a->maps[a->n++] = *m;
	return 0;
}

static void acc_drop(struct unwinder *u, struct maps_acc *a)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->maps[i].obj != u->vdso)
			uw_obj_put(u, a->maps[i].obj);
	free(a->maps);
	a->maps = NULL;
	a->n = a->cap = 0;
}

/* Read the executable mappings of p from /proc/PID/maps as text. */
static int maps_read_text(struct unwinder *u, struct uw_proc *p, struct maps_acc *a)
{
	char path[256], *buf = NULL, *line, *save = NULL;
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", u->proc_dir, p->pid);
	r = gpd_read_text(path, UW_MAPS_MAX_BYTES, &buf, &len);
	if (r < 0)
		return r;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, off, ino;
		unsigned maj, min;
		char perms[8];
		int pathpos = 0;
		struct uw_map m;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &pathpos) < 7 ||
		    perms[2] != 'x')
			continue;
		m = (struct uw_map){.start = start, .end = end, .pgoff = off};
		if (pathpos && line[pathpos] == '/') {
			m.obj = obj_lookup(u, makedev(maj, min), (ino_t)ino);
			if (!m.obj)
				m.obj = obj_open(u, p->pid, start, end, line + pathpos,
						 makedev(maj, min), (ino_t)ino);
		} else if (pathpos && !strcmp(line + pathpos, "[vdso]")) {
			m.obj = vdso_get(u);
		}
		if (acc_add(u, a, &m) < 0)
			break;
	}
	free(buf);
	return 0;
}

#define UW_MAPS_MAX 65536 /* executable mappings kept per process */

/*
 * The executable mappings of p through PROCMAP_QUERY (procmapq.h): only
 * those, as binary fields, and a path only for an object not cached yet. The
 * text of every mapping and its parsing were most of what a new process cost
 * the unwinder on a host that starts many (a compiler's cc1 has ten
 * executable mappings among forty). -ENOTTY where the kernel has no such
 * ioctl (before 6.11, or proc_dir is not procfs).
 */
static int maps_query(struct unwinder *u, struct uw_proc *p, struct maps_acc *a)
{
	char path[256], name[4352];
	uint64_t addr = 0;
	bool vdso_seen = false;
	int fd, r = 0;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", u->proc_dir, p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (a->n < UW_MAPS_MAX) {
		struct pmq_map q;
		struct uw_map m;

		r = pmq_next(fd, addr, PMQ_EXEC, &q, NULL, 0);
		if (r < 0) {
			/* past the last one: the end, unless there was none
			 * at all (no address space left: gone) */
			if (r == -ENOENT)
				r = addr ? 0 : -ESRCH;
			break;
		}
		u->st.maps_queries++;
		if (q.end <= addr)
			break; /* never goes backwards; do not loop if it did */
		addr = q.end;
		m = (struct uw_map){.start = q.start, .end = q.end, .pgoff = q.off};
		if (q.ino) {
			dev_t dev = makedev(q.dev_major, q.dev_minor);

			m.obj = obj_lookup(u, dev, (ino_t)q.ino);
			if (!m.obj && !pmq_name(fd, q.start, name, sizeof(name)) && name[0] == '/')
				m.obj = obj_open(u, p->pid, q.start, q.end, name, dev,
						 (ino_t)q.ino);
		} else if (!vdso_seen && !pmq_name(fd, q.start, name, sizeof(name)) &&
			   !strcmp(name, "[vdso]")) {
			/* one per process: no name asked after it */
			vdso_seen = true;
			m.obj = vdso_get(u);
		}
		if (acc_add(u, a, &m) < 0)
			break;
	}
	close(fd);
	return r;
}

/* Another reader's read older than this is not taken: the samples of a new
 * process follow its first one within the same drain. */
#define UW_SHARED_MAX_AGE_NS (100ull * 1000000ull)

struct shared_ctx {
	struct unwinder *u;
	struct uw_proc *p;
	struct maps_acc *a;
	bool vdso_seen;
	int err;
};

/* One mapping of another reader's read: the objects as maps_query() finds
 * them (by device and inode, opened by path only when not cached). */
static void shared_add(void *ctx, const struct pmq_map *q, const char *name)
{
	struct shared_ctx *sc = ctx;
	struct unwinder *u = sc->u;
	struct uw_map m = {.start = q->start, .end = q->end, .pgoff = q->off};

	if (sc->err || q->end <= q->start || sc->a->n >= UW_MAPS_MAX ||
	    (sc->a->n && q->start < sc->a->maps[sc->a->n - 1].end)) {
		sc->err = sc->err ? sc->err : -EINVAL; /* not in address order: read ourselves */
		return;
	}
	if (q->ino && name[0] == '/') {
		dev_t dev = makedev(q->dev_major, q->dev_minor);

		m.obj = obj_lookup(u, dev, (ino_t)q->ino);
		if (!m.obj)
			m.obj = obj_open(u, sc->p->pid, q->start, q->end, name, dev, (ino_t)q->ino);
	} else if (!sc->vdso_seen && !strcmp(name, "[vdso]")) {
		sc->vdso_seen = true;
		m.obj = vdso_get(u);
	}
	if (acc_add(u, sc->a, &m) < 0)
		sc->err = -ENOMEM;
}

/* Read the executable mappings of p: on first sight from another reader's
 * fresh read where one is at hand (unwind_set_maps_source), else through
 * PROCMAP_QUERY where the kernel has it, else (and for good, once it said
 * no) as text. */
static int maps_read(struct unwinder *u, struct uw_proc *p, bool first)
{
	struct maps_acc a = {0};
	int r = -ENOTTY;

	if (first && u->maps_src) {
		struct shared_ctx sc = {.u = u, .p = p, .a = &a};

		r = u->maps_src(u->maps_src_arg, p->pid, UW_SHARED_MAX_AGE_NS, shared_add, &sc);
		if (!r && !sc.err && a.n) {
			u->st.maps_shared++;
			goto done;
		}
		acc_drop(u, &a);
		r = -ENOTTY;
	}
	if (!u->maps_text) {
		r = maps_query(u, p, &a);
		if (r == -ENOTTY || r == -EINVAL) {
			acc_drop(u, &a);
			u->maps_text = true;
			log_debug("unwind: PROCMAP_QUERY not available (%s): reading maps as text",
				  strerror(-r));
		}
	}
	if (u->maps_text)
		r = maps_read_text(u, p, &a);
	if (r < 0) {
		acc_drop(u, &a);
		return r;
	}
done:
	u->st.maps_reads++;
	maps_release(u, p);
	p->maps = a.maps;
	p->nmaps = a.n;
	u->bytes += a.n * sizeof(*a.maps);
	p->read_ns = uw_now_ns();
	return 0;
}

const struct uw_map *uw_proc_find(const struct uw_proc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	/* /proc/PID/maps lists mappings in address order. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

bool uw_proc_refresh(struct unwinder *u, struct uw_proc *p, uint64_t min_age_ns)
{
	if (uw_now_ns() - p->read_ns < min_age_ns)
		return false;
	if (maps_read(u, p, false) < 0) {
		p->read_ns = uw_now_ns(); /* gone: do not retry at once */
		p->gone = true;
		return false;
	}
	u->st.maps_refreshes++;
	return true;
}

void uw_proc_free(struct unwinder *u, struct uw_proc *p)
{
	struct uw_proc **pp = &u->procs[proc_bucket(p->pid)];

	while (*pp && *pp != p)
		pp = &(*pp)->next;
	if (*pp)
		*pp = p->next;
	maps_release(u, p);
	u->bytes -= sizeof(*p);
	u->nprocs--;
	free(p);
}

struct uw_proc *uw_proc_lookup(struct unwinder *u, uint32_t pid)
{
	struct uw_proc *p;

	for (p = u->procs[proc_bucket(pid)]; p; p = p->next)
		if (p->pid == pid)
			return p;
	return NULL;
}

struct uw_proc *uw_proc_get(struct unwinder *u, uint32_t pid)
{
	struct uw_proc *p = uw_proc_lookup(u, pid);

	if (p) {
		p->last_used = ++u->tick;
		return p;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->last_used = ++u->tick;
	p->next = u->procs[proc_bucket(pid)];
	u->procs[proc_bucket(pid)] = p;
	u->nprocs++;
	u->bytes += sizeof(*p);
	u->busy = p;
	if (maps_read(u, p, true) < 0) { /* gone already, or unreadable */
		uw_proc_free(u, p);
		return NULL;
	}
	uw_trim(u, p);
	return p;
}

static struct uw_proc *lru_proc(struct unwinder *u, const struct uw_proc *keep)
{
	struct uw_proc *best = NULL;

	for (unsigned b = 0; b < UW_PROC_BUCKETS; b++)
		for (struct uw_proc *p = u->procs[b]; p; p = p->next)
			if (p != keep && p != u->busy && (!best || p->last_used < best->last_used))
				best = p;
	return best;
}

static struct uw_obj **lru_idle_obj(struct unwinder *u)
{
	struct uw_obj **best = NULL;

	for (unsigned b = 0; b < UW_OBJ_BUCKETS; b++)
		for (struct uw_obj **o = &u->objs[b]; *o; o = &(*o)->next)
			if (!(*o)->refs && (!best || (*o)->last_used < (*best)->last_used))
				best = o;
	return best;
}

void uw_trim(struct unwinder *u, const struct uw_proc *keep)
{
	uw_trim_to(u, keep, u->budget);
}

void uw_trim_to(struct unwinder *u, const struct uw_proc *keep, size_t target)
{
	/* Linear scans: eviction is rare (a budget sized for the host's
	 * working set) and the tables are small. */
	while (u->bytes > target) {
		struct uw_obj **oo = lru_idle_obj(u);
		struct uw_proc *p;

		if (oo) {
			struct uw_obj *o = *oo;

			*oo = o->next;
			u->bytes -= o->bytes;
			u->nobjs--;
			u->st.objs_evicted++;
			uw_obj_free(o);
			continue;
		}
		p = lru_proc(u, keep);
		if (p) {
			uw_proc_free(u, p);
			u->st.procs_evicted++;
			continue;
		}
		/* Only the processes in use remain: empty the rule caches. */
		for (unsigned b = 0; b < UW_OBJ_BUCKETS; b++)
			for (struct uw_obj *o = u->objs[b]; o; o = o->next)
				uw_rules_flush(u, o);
		break;
	}
}
