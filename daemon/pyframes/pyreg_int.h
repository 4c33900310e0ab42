/* SPDX-License-Identifier: MIT */
/* The registry of Python processes, shared by pyreg.c (recognition,
 * frame table, status) and pysplice.c (per-sample splicing). */
#ifndef GPUPROF_PYREG_INT_H
#define GPUPROF_PYREG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyreg.h"

#define PYREG_PROC_BUCKETS 1024
#define PYREG_CODE_SLOTS 1024 /* per process: (code, instr) -> frame id */

/* Reserved frame ids */
#define PYREG_ID_FULL 1	     /* the table is full */
#define PYREG_ID_TRUNCATED 2 /* more Python frames than were read */
#define PYREG_ID_FIRST 3

enum pyp_state {
	PYP_PENDING, /* not recognized yet: scanning, or retried on a later sample */
	PYP_READY,   /* layout in BPF, frames read */
	PYP_NONE,    /* not a CPython this reader handles: cause says why */
};

/* Why a process has no Python frames (yet). Decisions use these; the text
 * shown in status is the table's in pyreg.c, or the reader's own. */
enum pyp_cause {
	PYC_NONE,
	PYC_NO_PYTHON_FILE, /* nothing mapped is named like an interpreter: not listed */
	PYC_NOT_CPYTHON,    /* no _PyRuntime in any mapped file (reader's text) */
	PYC_STARTING,	    /* the interpreter is not initialized yet: retried */
	PYC_UNSUPPORTED,    /* a version or build the reader refuses (reader's text) */
	PYC_UNREADABLE,	    /* its memory cannot be read */
	PYC_GONE,	    /* it exited before it could be read */
	PYC_BPF_LAYOUT,	    /* its layout does not fit the BPF reader */
	PYC_MAP_FULL,	    /* the BPF map of Python processes is full */
	PYC_COUNT,
};

struct pyp_code {
	uint64_t code;
	uint32_t ident; /* the code object's, as BPF read it */
	int32_t instr;
	uint32_t id; /* 0: empty */
};

struct pyscan;

struct pyp {
	struct pyp *next;
	uint32_t pid;
	uint8_t state, tries;
	enum pyp_cause cause;
	uint64_t next_try_ns;
	struct pyf_proc *pf;
	struct pyscan *scan; /* the attach running on the thread pool, if any */
	char reason[120];    /* the reader's text for its causes, else empty */
	uint32_t version;
	uint64_t eval[4][2];
	unsigned neval;
	struct pyp_code *codes; /* PYREG_CODE_SLOTS, on first use */
	/* frames not named: unreadable (the process gone, memory unmapped),
	 * or their code object freed between the sample and its naming */
	uint64_t samples, with_frames, unresolved, replaced;
	uint64_t exe_dev, exe_ino;   /* the program attached to (an exec changes it) */
	uint64_t next_exec_check_ns; /* samples without frames: check exe_* again */
};

/* One distinct (function, file, line) */
struct pyname {
	char *qual, *file;
	int line;
	uint32_t hash;
};

/*
 * Names are read by symbolization jobs on other threads while the loop
 * adds more: entries live in chunks that never move, are complete before
 * nnames (released) covers them, and are freed only with the registry.
 */
#define PYREG_NAME_CHUNK 4096
#define PYREG_NAME_CHUNKS 256 /* at most 1M distinct frames */

struct pyreg {
	struct pyreg_opts o;
	pyreg_maps_fn maps_src; /* pyreg_set_maps_source() */
	void *maps_src_arg;
	uint64_t maps_shared; /* processes looked at through it */
	char proc_dir[200];
	int map_fd;
	uint32_t generation;
	struct pyp *buckets[PYREG_PROC_BUCKETS];
	unsigned nprocs;
	struct pyname *chunks[PYREG_NAME_CHUNKS]; /* ids below PYREG_ID_FIRST unused */
	uint32_t nnames;			  /* atomic: written by the loop only */
	uint32_t *htab; /* open addressing, ids; size hcap (power of two) */
	uint32_t hcap;
	size_t bytes;
	uint64_t table_full, procs_full, samples;
	/* time spent interpreting, naming and splicing the Python frames of
	 * records that carried some, and how many: the daemon side's added
	 * cost per Python sample (status python.splice_ns_mean) */
	uint64_t splice_ns, spliced;
	uint64_t spliced_sub;		/* of those, with a subinterpreter's frames */
	unsigned scanning;		/* attach scans on the thread pool now */
	uint64_t scans, scans_deferred; /* done; put off for want of a slot */
	double scan_ms_max;
	bool freeing; /* pyreg_free() ran while scans were out */
};

/* pyreg.c */
/*
 * The process to splice a sample of, or NULL: retries a pending attach
 * when due, and notices an exec the collectors missed. Counts the sample.
 * with_frames: BPF read Python nodes for it.
 */
struct pyp *pyreg_sample_proc(struct pyreg *r, uint32_t pid, bool with_frames);
/* The id of (qual, file, line) in the frame table; PYREG_ID_FULL when full. */
uint32_t pyreg_intern(struct pyreg *r, const char *qual, const char *file, int line);

#endif
