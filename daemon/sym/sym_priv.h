/* SPDX-License-Identifier: MIT */
/* The symbolizer's own state, shared by sym.c, symres.c and symcap.c. */
#ifndef GPUPROF_SYM_PRIV_H
#define GPUPROF_SYM_PRIV_H

#include "log.h"
#include "sym.h"
#include "sym_internal.h"

struct sym_proc {
	uint32_t pid;
	uint64_t last_seen_ns; /* sym_note_pid() */
	uint64_t snap_ns;      /* when maps was read */
	struct sym_maps *maps;
	struct sym_proc *hnext;		/* hash chain */
	struct sym_proc *lprev, *lnext; /* by last_seen_ns, oldest first */
};

struct symbolizer {
	size_t max_objects, max_object_bytes, max_symbols, max_procs;
	uint64_t exited_ttl_ns, refresh_ns;
	bool lines, demangle;
	bool (*py_name)(const void *ctx, uint64_t ip, char *name, size_t len, char *line,
			size_t linelen);
	const void *py_ctx;
	char proc_dir[256], kallsyms_path[288], modules_path[288], debug_dir[256], jit_dir[256];
	char notes_path[256];

	pthread_mutex_t lock; /* everything below */
	struct sym_proc **buckets;
	size_t nprocs;
	struct sym_proc lru; /* sentinel */
	uint64_t last_sweep_ns;
	struct sym_obj **objs; /* unordered; LRU by last_used */
	size_t nobjs, objs_cap, obj_bytes;
	uint64_t tick;
	struct ksyms *ks;
	uint64_t objects_loaded, objects_failed, procs_evicted, captures;
};

/* Per-process state of one symbolization pass (symres.c). */
struct sym_pctx {
	struct symbolizer *s;
	uint32_t pid;
	int64_t uid; /* owner a perf map must have besides root; -1 unknown */
	bool alive;
	char root[288];	       /* "/proc/PID/root" while alive, else "" */
	struct sym_maps *maps; /* referenced; NULL: nothing known */
	struct sym_obj **objs; /* per mapping; NULL untried, SYM_OBJ_NONE failed */
	struct jitmap *jit;
	bool jit_tried;
};

#define SYM_OBJ_NONE ((struct sym_obj *)1)

uint64_t sym_now_ns(void);
/* The pid inside the process's own pid namespace (NSpid), else pid. */
uint32_t sym_nspid(const char *proc_dir, uint32_t pid);

/* sym.c */
/* Re-read pid's maps if it lives (replacing the cached snapshot), else the
 * cached one; referenced (sym_maps_put), NULL when none. */
struct sym_maps *sym_proc_snapshot(struct symbolizer *s, uint32_t pid, bool *alive);
void sym_maps_put(struct symbolizer *s, struct sym_maps *m);
/* Drop exited processes not seen for exited_ttl_ns (at most every ttl/4). */
void sym_sweep(struct symbolizer *s, uint64_t now);
/* Kernel table, reloaded first if /proc/modules changed; referenced. */
struct ksyms *sym_kernel_get(struct symbolizer *s);
void sym_kernel_put(struct symbolizer *s, struct ksyms *k);

/* symres.c */
int sym_pctx_begin(struct symbolizer *s, uint32_t pid, int64_t uid, struct sym_pctx *pc);
void sym_pctx_end(struct sym_pctx *pc);
/* Resolve a user address; lookups use addr - adj (1 for return addresses),
 * fallback names show addr. *mapi (may be NULL) receives the index of the
 * file mapping in pc->maps it fell into, SIZE_MAX for none. 0 when a symbol
 * was found, else -ENOENT. */
int sym_resolve_user(struct sym_pctx *pc, uint64_t addr, unsigned adj, char *buf, size_t len,
		     char *line, size_t linelen, size_t *mapi);
int sym_resolve_kernel(const struct ksyms *k, uint64_t addr, unsigned adj, char *buf, size_t len);
/* Release unreferenced objects beyond the cache limits. */
void sym_objs_trim(struct symbolizer *s);

#endif
