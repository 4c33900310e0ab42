/* SPDX-License-Identifier: MIT */
/* The unwinder's own state, shared by unwind.c, uwproc.c and uwrule.c. */
#ifndef GPUPROF_UNWIND_INT_H
#define GPUPROF_UNWIND_INT_H

#include <elfutils/libdw.h>
#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "unwind.h"

/* DWARF register numbers on x86-64 (System V psABI). */
#define UW_REG_RBP 6
#define UW_REG_RSP 7
#define UW_REG_RA 16

/* How one register (or the CFA) of the caller is recovered. */
enum uw_how {
	UW_UNDEF = 0, /* not recoverable: for the return address, the end of the stack */
	UW_SAME,      /* unchanged by this frame */
	UW_AT_CFA,    /* saved at CFA + off */
	UW_REG_OFF,   /* value of register reg + off (the CFA's usual rule) */
	UW_EXPR,      /* a DWARF expression (PLT stubs, signal frames) */
	UW_BAD,	      /* a rule this unwinder does not follow */
};

struct uw_loc {
	uint8_t how;   /* enum uw_how */
	uint8_t reg;   /* UW_REG_OFF: DWARF register */
	uint8_t value; /* UW_EXPR: the expression computes the value, not an address */
	uint8_t nops;  /* UW_EXPR */
	int32_t off;
	Dwarf_Op *ops; /* UW_EXPR: owned by the rule */
};

/* What the CFI says at one address: how to find the caller's frame. */
struct uw_rule {
	uint64_t pc; /* ELF virtual address looked up; 0 = empty slot */
	bool found;  /* CFI covers pc; else the object has no row for it */
	bool signal; /* a signal trampoline's frame (its caller's pc is exact) */
	struct uw_loc cfa, ra, rbp;
};

struct uw_obj {
	dev_t dev;
	ino_t ino;
	int fd;	     /* -1 for the vDSO image */
	void *image; /* vDSO: our own copy of the image */
	Elf *elf;
	uint64_t entry; /* e_entry: the program's (or ld.so's) first instruction */
	Dwarf_CFI *eh;	/* .eh_frame (dwarf_getcfi_elf), may be NULL */
	Dwarf *dw;	/* for .debug_frame, opened on first miss */
	Dwarf_CFI *dbg; /* owned by dw */
	bool dw_tried;
	/* PT_LOAD segments: file offset -> virtual address */
	size_t nloads;
	struct {
		uint64_t off, filesz, vaddr;
	} loads[16];
	/* rule cache: open addressing on pc, power-of-two slots */
	struct uw_rule *rules;
	size_t nslots, nrules;
	size_t bytes;	   /* accounted: this struct, rules and their expressions */
	size_t base_bytes; /* what stays after a flush of the rule cache */
	unsigned refs;	   /* process mappings using it */
	uint64_t last_used;
	struct uw_obj *next; /* hash chain */
	char name[64];	     /* base name, for status */
};

struct uw_map {
	uint64_t start, end, pgoff;
	struct uw_obj *obj; /* NULL: anonymous or unreadable (frame pointers) */
};

struct uw_proc {
	uint32_t pid;
	struct uw_map *maps;
	size_t nmaps;
	uint64_t read_ns;   /* when maps were read; 0 = never could */
	uint64_t miss_page; /* page of the last address no mapping held */
	bool gone;	    /* a re-read found the process gone: its snapshot is all there is */
	uint64_t last_used;
	uint64_t samples, truncated, frames_cfi, frames_fp;
	struct uw_proc *next; /* hash chain */
};

#define UW_PROC_BUCKETS 1024
#define UW_OBJ_BUCKETS 256

struct unwind_stats {
	uint64_t samples, complete, truncated;
	uint64_t trunc_copy;   /* needed stack beyond the copied bytes */
	uint64_t trunc_norule; /* an address no CFI covers and no frame pointer explains */
	uint64_t trunc_nomaps; /* the process was gone before its mappings were read */
	uint64_t trunc_depth;  /* more frames than max_frames */
	uint64_t trunc_bad;    /* a rule gave a frame that does not move up the stack */
	uint64_t frames, frames_cfi, frames_fp;
	uint64_t bytes_copied; /* stack bytes received */
	uint64_t ns_total;
	uint64_t ns_hist[32];	  /* log2 buckets of per-sample unwinding time */
	uint32_t ns_recent[1024]; /* the last walks' times, for percentiles */
	uint64_t maps_reads, maps_refreshes, objs_loaded, objs_failed;
	uint64_t maps_queries; /* PROCMAP_QUERY ioctls: mappings read one by one */
	uint64_t maps_shared;  /* first sights served by another reader's read */
	uint64_t refresh_unknown, refresh_failed; /* re-reads: an address outside, a failed walk */
	uint64_t procs_evicted, objs_evicted, rule_flushes, objs_over_budget;
};

struct unwinder {
	size_t budget, bytes;
	unsigned max_frames;
	char proc_dir[200];
	uint64_t tick;
	struct uw_proc *procs[UW_PROC_BUCKETS];
	size_t nprocs;
	struct uw_obj *objs[UW_OBJ_BUCKETS];
	size_t nobjs;
	struct uw_obj *vdso; /* the kernel's vDSO, same image in every 64-bit process */
	bool vdso_tried;
	bool maps_text;		 /* read /proc/PID/maps as text: no PROCMAP_QUERY (or asked to) */
	unwind_maps_fn maps_src; /* unwind_set_maps_source() */
	void *maps_src_arg;
	struct uw_rule scratch; /* a rule the budget left no room to cache */
	/* the process being read or walked: never evicted under itself */
	const struct uw_proc *busy;
	struct unwind_stats st;
};

uint64_t uw_now_ns(void);

/* uwproc.c: processes and objects */
/* The process's snapshot, read on first use; NULL when it cannot be read. */
struct uw_proc *uw_proc_get(struct unwinder *u, uint32_t pid);
/* The cached snapshot, if any; reads nothing. */
struct uw_proc *uw_proc_lookup(struct unwinder *u, uint32_t pid);
/* Re-read the mappings (an address outside every mapping: dlopen, exec),
 * at most every min_age_ns. true when re-read. */
bool uw_proc_refresh(struct unwinder *u, struct uw_proc *p, uint64_t min_age_ns);
const struct uw_map *uw_proc_find(const struct uw_proc *p, uint64_t addr);
void uw_proc_free(struct unwinder *u, struct uw_proc *p);
void uw_obj_put(struct unwinder *u, struct uw_obj *o);
void uw_obj_free(struct uw_obj *o);
/* Stay within the budget: drop least recently used processes, then idle
 * objects, then rule caches. */
void uw_trim(struct unwinder *u, const struct uw_proc *keep);
void uw_trim_to(struct unwinder *u, const struct uw_proc *keep, size_t target);
/* Count .debug_frame's sections against the budget before libdw reads
 * them; false when they cannot fit. */
bool uw_obj_debug_room(struct unwinder *u, struct uw_obj *o);
bool uw_obj_vaddr(const struct uw_obj *o, uint64_t file_off, uint64_t *vaddr);

/* uwrule.c: CFI rows as compact rules */
/* The rule at ELF address pc (cached). NULL on allocation failure. */
const struct uw_rule *uw_rule_get(struct unwinder *u, struct uw_obj *o, uint64_t pc);
void uw_rules_flush(struct unwinder *u, struct uw_obj *o);

#endif
