/* SPDX-License-Identifier: MIT */
/* The Python frame reader's own state, shared by its .c files. */
#ifndef GPUPROF_PYF_INT_H
#define GPUPROF_PYF_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyframes.h"
#include "pystack_abi.h"

#define PYF_NONE UINT32_MAX /* a field this version does not have */

/* Bounds on what a (possibly lying) process can make us do. */
#define PYF_MAX_INTERPS 64	/* interpreters walked */
#define PYF_MAX_THREADS 4096	/* thread states walked per interpreter */
#define PYF_MAX_WALK 2048	/* frames visited per stack, shims included */
#define PYF_MAX_STR 512		/* code points of a name or file */
#define PYF_MAX_LINETABLE 65536 /* bytes of a line table */
#define PYF_CODE_SLOTS 2048	/* code objects cached (direct-mapped) */
#define PYF_TID_SLOTS 256	/* TID -> thread state cached (direct-mapped) */
#define PYF_MAX_EVAL 4		/* code ranges of the frame evaluator */

enum pyf_chain {
	PYF_CHAIN_FRAMEOBJ, /* 3.9/3.10: tstate->frame, PyFrameObject.f_back */
	PYF_CHAIN_CFRAME,   /* 3.11/3.12: tstate->cframe->current_frame, .previous */
	PYF_CHAIN_DIRECT,   /* 3.13+: tstate->current_frame, .previous */
};

enum pyf_lines {
	PYF_LINES_LNOTAB,    /* 3.9 co_lnotab */
	PYF_LINES_PEP626,    /* 3.10 co_linetable */
	PYF_LINES_LOCATIONS, /* 3.11+ location table */
};

/* Byte offsets of the fields the reader uses; PYF_NONE where absent. */
struct pyf_layout {
	unsigned minor;
	enum pyf_chain chain;
	enum pyf_lines lines;
	bool lasti_units; /* 3.10: f_lasti counts 2-byte code units */
	bool tagged_code; /* 3.14+: f_executable is a tagged _PyStackRef */
	uint32_t rt_interp_head;
	uint32_t is_next, is_threads_head;
	uint32_t ts_next, ts_interp, ts_frame, ts_cframe, ts_thread_id, ts_native_tid;
	uint32_t cf_current, cf_previous;
	uint32_t fo_back, fo_code, fo_lasti;
	uint32_t if_previous, if_code, if_instr, if_is_entry, if_owner;
	uint32_t co_firstlineno, co_filename, co_name, co_qualname, co_linetable;
	uint32_t co_firsttraceable, co_code_adaptive;
	uint32_t str_ascii_size, str_compact_size; /* where compact string data starts */
	char source[32];
};

/*
 * The file holding _PyRuntime as the process maps it: what the cache of
 * code objects that are part of the interpreter's image (pyfstatic.c)
 * needs to name them from the file rather than from the process.
 */
#define PYF_MAX_SEGS 8
struct pyf_image {
	bool known;
	uint64_t dev, ino, size; /* the file's identity, with its times */
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint64_t bias;		     /* address in the process = bias + ELF vaddr */
	uint64_t map_start, map_end; /* a mapping of it, for /proc/PID/map_files */
	unsigned nseg;
	struct {
		uint64_t vaddr, filesz, offset; /* PT_LOAD: the part backed by the file */
	} seg[PYF_MAX_SEGS];
};

/* A code object as last seen, with the fields that tell it is still the
 * same object. */
struct pyf_code {
	uint64_t addr; /* 0: empty */
	uint64_t type, filename, name, qualname, linetable;
	int32_t firstlineno;
	uint32_t ident; /* pystack_code_ident(), as BPF computes it at a sample */
	/* bytes of the prologue (MAKE_CELL, COPY_FREE_VARS, RETURN_GENERATOR,
	 * 3.10's GEN_START...), whose instructions take firstlineno */
	int32_t prologue;
	char *qual, *file;
	uint8_t *table;
	uint32_t table_len;
};

struct pyf_proc {
	uint32_t pid;
	int mem_fd;
	char proc_dir[200];
	char reason[160]; /* empty: supported */
	enum pyf_refusal refusal;
	uint32_t version;
	struct pyf_layout lay;
	/* runtime addresses in the target */
	uint64_t runtime, code_type, bytes_type, unicode_type;
	uint64_t runtime_size;		/* st_size of _PyRuntime, 0 unknown */
	char module[64];		/* base name of the file holding _PyRuntime */
	uint64_t eval[PYF_MAX_EVAL][2]; /* _PyEval_EvalFrameDefault's code, absolute */
	unsigned neval;
	struct pyf_image img; /* the file holding _PyRuntime */
	/* 3.9/3.10: offset of the kernel TID in glibc's struct pthread, found
	 * by matching thread states against /proc/PID/task; -1 unknown */
	int pthread_tid_off;
	bool pthread_tid_weak; /* found with a single thread: re-found on a miss */
	/* PYF_CODE_SLOTS, allocated on first use, each entry on its slot's
	 * first use: a short-lived process names a few dozen, and zeroing a
	 * whole table of entries (180 KiB) for each was a large part of what
	 * naming a new process's first frames cost */
	struct pyf_code **codes;
	/* thread states found, re-validated on every use */
	struct {
		uint32_t tid, ns_tid;
		uint64_t tstate;
	} tids[PYF_TID_SLOTS];
};

/* pyfattach.c: the process's memory */
/* Read exactly len bytes at addr; -EFAULT on a short or failed read. */
int pyf_read(struct pyf_proc *p, uint64_t addr, void *buf, size_t len);
/* Inspections of an interpreter's file answered from what an earlier one
 * read (pyfattach.c), since start. */
uint64_t pyf_elf_cache_hits(void);
int pyf_read_u64(struct pyf_proc *p, uint64_t addr, uint64_t *v);
/* len bytes at each of addr[0..n) into buf + i * len, in one system call
 * where it can (process_vm_readv); how many, from the first, were read
 * whole (the rest: the caller reads them itself). */
unsigned pyf_read_many(struct pyf_proc *p, const uint64_t *addr, uint8_t *buf, size_t len,
		       unsigned n);

/* pyflayout.c: offsets */
/* The written-down layout of 3.9-3.12; false for another minor. */
bool pyf_layout_table(unsigned minor, struct pyf_layout *lay);
/* The layout from a _Py_DebugOffsets image (3.13+), slots u64 words read
 * from the start of _PyRuntime; code_basicsize is PyCode_Type's
 * tp_basicsize, the anchor of the code-object group. NULL or a reason. */
const char *pyf_layout_debug_offsets(const uint64_t *slots, size_t nslots, unsigned minor,
				     uint64_t code_basicsize, struct pyf_layout *lay);

/* pyfline.c: line tables; off is the instruction's byte offset (-1: before
 * the first, giving first). The line, or -1 when the range has none. */
int pyf_line_lnotab(const uint8_t *t, size_t n, int first, int32_t off);
int pyf_line_pep626(const uint8_t *t, size_t n, int first, int32_t off);
int pyf_line_locations(const uint8_t *t, size_t n, int first, int32_t off);

/* pyfchain.c: a chain's interpretation, node by node (leaf first), shared
 * by the user-space walk and pyf_from_nodes(). */
struct pyf_runs {
	const struct pyf_layout *l;
	struct pyf_frame *out;
	unsigned max, n;    /* out's size, frames written */
	unsigned run_start; /* the first frame of the current run */
};

/* The code object a node names (3.14+: f_executable's tag bits masked). */
static inline uint64_t pyf_node_code(const struct pyf_layout *l, const struct pystack_node *nd)
{
	return l->tagged_code ? nd->code & ~7ull : nd->code;
}

/*
 * Add one node: a shim ends the current run (its address the marker), a
 * frame with code is written, a 3.11 entry frame ends its run with
 * entry_marker. 0, or PYF_TRUNCATED when out is full.
 */
int pyf_chain_add(struct pyf_runs *c, const struct pystack_node *nd, uint64_t entry_marker);

/* pyfcode.c */
void pyf_codes_free(struct pyf_proc *p);
/* len code points of width 1, 2 or 4 bytes as UTF-8 (malloc'd); NUL, lone
 * surrogates and code points past U+10FFFF become '?'. */
char *pyf_str_utf8(const uint8_t *raw, size_t len, size_t width);

/* pyfattach.c: p->img from the file mapped at [start, end) at offset 0
 * (tests: any ELF file the process maps). 0 or negative errno. */
int pyf_image_from_mapping(struct pyf_proc *p, uint64_t start, uint64_t end);

/*
 * pyfstatic.c: code objects that lie in the interpreter's image (3.11 and
 * 3.12 deep-freeze their frozen modules' code into it), named from the
 * file, shared by every process of that file. c holds the identifying
 * fields just read from the process; on success its qual, file and table
 * are set (malloc'd copies, as code_load() makes). -ENOENT: not such an
 * object (the caller reads it from the process), or the file could not be
 * read.
 */
int pyf_static_load(struct pyf_proc *p, struct pyf_code *c);

/* Where the bytes of a code object's ident start (pystack_code_ident()):
 * the PYSTACK_CODE_IDENT_BYTES that end with co_linetable. */
static inline uint32_t pyf_ident_off(const struct pyf_layout *l)
{
	return l->co_linetable + 8 - PYSTACK_CODE_IDENT_BYTES;
}

#endif
