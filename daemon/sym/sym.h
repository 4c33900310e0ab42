/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer: turns the raw instruction pointers of a capture's stacks
 * into function names, once, when the capture completes, and stores the
 * result in the capture itself (a CAPSEC_SYMBOLS section, see symtab.h) so
 * renderers work after the process exited and after a daemon restart.
 *
 *   kernel frames  /proc/kallsyms, sorted, reloaded when /proc/modules changes
 *   user frames    /proc/PID/maps snapshot (first sight + symbolization time)
 *                  -> ELF object (cached by build-id) -> .symtab / .dynsym
 *                  -> optional file:line from DWARF
 *   JIT code       /tmp/perf-PID.map for addresses outside file mappings
 *
 * Names produced: "func", "libfoo.so+0x1a2b" (object known, no symbol covers
 * the address; the offset is the ELF virtual address, what addr2line takes),
 * "[vdso]"-style names of special mappings, and "[unknown]".
 *
 * Thread-safety: every function may be called from any thread. One mutex
 * guards the process and object caches and is held only for lookups and
 * insertions; files are read and parsed outside it. sym_note_pid() is meant
 * for the event loop: a hash look-up, plus one read of /proc/PID/maps the
 * first time a pid is seen (and again every refresh_ns while it is seen).
 *
 * Docs: docs/symbolization.md.
 */
#ifndef GPUPROF_SYM_H
#define GPUPROF_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture;
struct symbolizer;

struct sym_opts {
	/* Object cache (LRU over objects no symbolization is using). */
	size_t max_objects;	       /* default 256 */
	size_t max_object_bytes;       /* symbol tables, all objects; default 256 MiB */
	size_t max_symbols_per_object; /* default 4M; more are ignored */
	/* Process snapshots: an entry whose process exited and which was not
	 * seen for exited_ttl_ns is dropped; at max_procs the least recently
	 * seen entry is dropped whatever its state. */
	size_t max_procs;	/* default 16384 */
	uint64_t exited_ttl_ns; /* default 10 min */
	/* sym_note_pid() re-reads the maps of a pid it already knows when its
	 * snapshot is older than this (0: only on first sight); default 10 s */
	uint64_t refresh_ns;
	/* Record file:line (from DWARF) for each user frame. Keeps the file of
	 * each cached object with DWARF open. Default off. */
	bool lines;
	/* Keep C++/Rust names mangled (config symbols.demangle = false); by
	 * default user frames are demangled once per distinct name. */
	bool no_demangle;
	/* Where to look, for tests and odd hosts; NULL = the usual place. */
	const char *proc_dir;	   /* "/proc" */
	const char *kallsyms_path; /* "<proc_dir>/kallsyms" */
	const char *modules_path;  /* "<proc_dir>/modules" */
	const char *debug_dir;	   /* "/usr/lib/debug" */
	const char *jit_dir;	   /* "/tmp" (perf-PID.map) */
	const char *kernel_notes;  /* "/sys/kernel/notes" (the kernel's build id) */
	/* Names of the user "addresses" with bit 63 set, which are no
	 * addresses: Python frames spliced into stacks (pyframes/pyreg.h).
	 * Called from any thread; fills name and line ("file:line"), false
	 * for an unknown one. NULL: such frames are "[unknown]". */
	bool (*py_name)(const void *ctx, uint64_t ip, char *name, size_t len, char *line,
			size_t linelen);
	const void *py_ctx;
};

struct sym_stats {
	size_t procs;				 /* process snapshots held */
	size_t objects;				 /* ELF objects cached */
	size_t object_bytes;			 /* their symbol tables */
	size_t kernel_symbols;			 /* 0 when kallsyms is restricted */
	bool kernel_restricted;			 /* kallsyms shows zero addresses */
	uint64_t objects_loaded, objects_failed; /* since start */
	uint64_t procs_evicted;
	uint64_t captures; /* sym_symbolize_capture() calls that succeeded */
};

/* Create a symbolizer; opts may be NULL (all defaults). Nothing is read
 * until first use. Returns 0 or -ENOMEM; *ret untouched on failure. */
int sym_new(const struct sym_opts *opts, struct symbolizer **ret);
/* Free it and every cache. NULL is a no-op. No call may be in flight. */
void sym_free(struct symbolizer *s);

/*
 * A pid was seen (a sample, a launch). Snapshots its executable mappings the
 * first time (and every refresh_ns after), so frames resolve after the
 * process is gone. Never fails visibly; pid 0 is ignored.
 */
void sym_note_pid(struct symbolizer *s, uint32_t pid);
/* The pid runs a new program (exec): snapshot its mappings again now,
 * however recent the last snapshot. */
void sym_note_exec(struct symbolizer *s, uint32_t pid);

/*
 * Hand over the executable mappings of pid's snapshot when it was read less
 * than max_age_ns ago (by sym_note_pid() or sym_note_exec() just before):
 * each() gets them in address order, outside the lock. Lets the unwinder's
 * first sight of a new process use the read just made instead of reading
 * the mappings again. 0; -ENOENT when there is no such snapshot, -E2BIG
 * when it was cut at its bound (the reader must read for itself).
 */
struct pmq_map;
int sym_fresh_maps(struct symbolizer *s, uint32_t pid, uint64_t max_age_ns,
		   void (*each)(void *ctx, const struct pmq_map *m, const char *name), void *ctx);

/*
 * Resolve every frame of every (record pid, stack) pair present in c and
 * attach the result as the capture's CAPSEC_SYMBOLS section (replacing an
 * older one). Non-leaf frames are looked up at ip - 1 (they are return
 * addresses). Reads files; run it on a worker thread, before the capture is
 * published to readers or saved (the capture is modified). Returns 0, or
 * -ENOMEM (capture unchanged). Frames that cannot be resolved are not
 * errors: they get the fallback names above.
 */
int sym_symbolize_capture(struct symbolizer *s, struct capture *c);

/*
 * Demangle the GPU kernel names of c's launch and interval records in place
 * (unless the symbolizer was made with no_demangle): once per distinct
 * string, ids unchanged, SYCL typeinfo names without "typeinfo name for ".
 * Run it where sym_symbolize_capture() runs, before anything copies the
 * names (the live timeline). Returns 0 or -ENOMEM (names partly done).
 */
int sym_demangle_kernels(struct symbolizer *s, struct capture *c);

/*
 * Resolve one address, exactly (no ip - 1), into buf (always NUL-terminated
 * when len > 0). kernel selects kallsyms; otherwise the pid's snapshot (taken
 * now if the pid is new). line, when non-NULL, receives "file:line" or "".
 * Returns 0 when a symbol was found, -ENOENT when buf holds a fallback name
 * ("[unknown]", "lib.so+0x..."). For tests and debugging RPCs.
 */
int sym_resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel, char *buf,
		size_t len, char *line, size_t linelen);

void sym_get_stats(struct symbolizer *s, struct sym_stats *st);

#endif
