/* SPDX-License-Identifier: MIT */
/*
 * Pieces of the symbolizer, each immutable once built so that worker
 * threads can read them without a lock (sym.c counts references):
 * the kernel symbol table, a process's executable mappings, a JIT map and
 * a loaded ELF object. Exposed to tests/sym/.
 */
#ifndef GPUPROF_SYM_INTERNAL_H
#define GPUPROF_SYM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- procmaps.c ---- */

/* Read a whole file (a /proc file: st_size is 0) into a malloc()ed,
 * NUL-terminated buffer. -EFBIG beyond max bytes. */
int sym_read_all(int fd, size_t max, char **buf, size_t *len);

/* ---- kallsyms.c ---- */

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset into blob */
	uint32_t mod;  /* offset into blob; 0 = vmlinux ("" at offset 0) */
};

struct ksyms {
	struct ksym *syms;
	size_t n;
	char *blob;
	size_t blob_len;
	bool restricted; /* every address read as 0 (kptr_restrict) */
	uint64_t modules_hash;
	int refs; /* sym.c, under its lock */
};

/* Parse a kallsyms file (text symbols only), sorted by address. */
int ksyms_load(const char *path, struct ksyms **ret);
void ksyms_free(struct ksyms *k);
/* Name of the function containing addr, or NULL; *mod gets the module
 * name or "" (may be NULL). */
const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, const char **mod);
/* Cheap fingerprint of /proc/modules (FNV-1a of its content); 0 when the
 * file is absent (a kernel without modules never reloads). */
uint64_t ksyms_modules_hash(const char *path);
/* The GNU build id in an ELF note list such as /sys/kernel/notes (the
 * running kernel's); 0 with *len = 0 when there is none, -errno when the
 * file cannot be read. id holds SYM_BUILD_ID_MAX bytes. */
int ksyms_build_id(const char *notes_path, uint8_t *id, size_t *len);
/* Same over a buffer (for tests). */
size_t ksyms_notes_build_id(const uint8_t *p, size_t n, uint8_t *id);

/* ---- procmaps.c ---- */

enum sym_map_kind {
	SYM_MAP_FILE = 0,
	SYM_MAP_ANON = 1,    /* no path: JIT code lives here */
	SYM_MAP_SPECIAL = 2, /* "[vdso]", "[vsyscall]", ... */
};

struct sym_map {
	uint64_t start, end, off; /* [start, end), file offset of start */
	uint64_t ino;
	uint32_t dev_major, dev_minor;
	uint32_t path; /* offset into paths (NUL-terminated) */
	uint8_t kind;  /* enum sym_map_kind */
	bool deleted;  /* " (deleted)" was stripped from the path */
	bool exe;      /* the process's executable (/proc/PID/exe) */
};

struct sym_maps {
	uint32_t pid;
	struct sym_map *m; /* executable mappings, sorted by start */
	size_t n;
	char *paths;
	size_t paths_len;
	int refs;	  /* sym.c, under its lock */
	uint64_t read_ns; /* sym.c: when the read began (sym_fresh_maps) */
};

#define SYM_MAX_MAPPINGS 65536
#define SYM_MAX_MAPS_BYTES (64u << 20)

/* Read <proc_dir>/<pid>/maps, marking the executable's mappings (exe).
 * -ENOENT/-ESRCH when the process is gone. */
int procmaps_read(const char *proc_dir, uint32_t pid, struct sym_maps **ret);
/* Parse maps text (for tests). */
int procmaps_parse(const char *text, size_t len, uint32_t pid, struct sym_maps **ret);
void procmaps_free(struct sym_maps *m);
const struct sym_map *procmaps_find(const struct sym_maps *m, uint64_t addr);
static inline const char *sym_map_path(const struct sym_maps *ms, const struct sym_map *m)
{
	return ms->paths + m->path;
}

/* ---- jitmap.c: perf-PID.map ---- */

struct jitsym {
	uint64_t start, size;
	uint32_t name, seq;
};

struct jitmap {
	struct jitsym *syms;
	size_t n;
	char *blob;
	size_t blob_len;
};

#define SYM_MAX_JIT_SYMS (1u << 20)

/* Parse "START SIZE name" lines (hex, optional 0x); bad lines are skipped.
 * -ENOENT when there is no file. Later lines win over earlier ones. */
int jitmap_read(int fd, struct jitmap **ret);
int jitmap_parse(const char *text, size_t len, struct jitmap **ret);
void jitmap_free(struct jitmap *j);
const char *jitmap_lookup(const struct jitmap *j, uint64_t addr);

/* ---- symobj.c: one ELF object ---- */

struct objsym {
	uint64_t addr, size;
	uint32_t name; /* offset into strs */
	uint32_t rank; /* which alias wins at one address: lower is better */
};

struct objload {
	uint64_t off, filesz, vaddr;
	bool exec;
};

#define SYM_BUILD_ID_MAX 64

struct sym_obj {
	/* identity: build-id when the file has one, else the file key */
	uint8_t build_id[SYM_BUILD_ID_MAX];
	size_t build_id_len;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns;

	struct objload *loads;
	size_t nloads;
	struct objsym *syms;
	size_t nsyms;
	char *strs;
	size_t strs_len;
	size_t bytes;	      /* memory accounted to the cache */
	bool from_debug_file; /* symbols came from a separate .debug file */
	bool from_minidebug;  /* .gnu_debugdata added local functions */

	/* DWARF, only when loaded with lines; guarded by dw_lock (libdw is
	 * not safe for concurrent use of one handle). */
	pthread_mutex_t dw_lock;
	void *dw_image; /* the file, read whole (symobj.c says why) */
	void *dw_elf;	/* Elf * over dw_image */
	void *dw;	/* Dwarf * */

	/* sym.c's cache bookkeeping, under its lock */
	int refs;
	uint64_t last_used;
};

struct symobj_opts {
	size_t max_symbols;
	bool lines;
	size_t max_dwarf_bytes; /* a file with DWARF larger than this gets no
				 * lines (it is read whole); 0: 512 MiB */
	const char *debug_dir;	/* "/usr/lib/debug" */
	const char *root;	/* prefix for debuglink look-ups ("" or "/proc/PID/root") */
	const char *path;	/* the object's path inside root (for .gnu_debuglink) */
};

/* Open root/path for reading as a regular file. root "" opens path as is;
 * otherwise ("/proc/PID/root") path is resolved inside that root
 * (openat2 RESOLVE_IN_ROOT), so a container's absolute symlinks cannot
 * point the daemon at the host's files. Returns an fd or -errno. */
int sym_open_in_root(const char *root, const char *path);

/* Load from an open regular file (fd is not kept; dup()ed for DWARF).
 * Returns 0, -ENOEXEC for non-ELF or malformed files, -ENOMEM. */
int symobj_load(int fd, const struct symobj_opts *o, struct sym_obj **ret);
void symobj_free(struct sym_obj *o);
/* Build-id of an open file; 0 with *len = 0 when it has none. */
int symobj_read_build_id(int fd, uint8_t *id, size_t *len);
/* File offset -> ELF virtual address through the PT_LOAD headers. */
bool symobj_file_to_vaddr(const struct sym_obj *o, uint64_t off, uint64_t *vaddr);
/* Name of the function covering vaddr, or NULL. */
const char *symobj_lookup(const struct sym_obj *o, uint64_t vaddr);
/* "file:line" of vaddr into buf; 0, or -ENOENT without DWARF for it. */
int symobj_srcline(struct sym_obj *o, uint64_t vaddr, char *buf, size_t len);

#endif
