/* SPDX-License-Identifier: MIT */
/* The pprof encoder's pieces shared by pprof.c (the profile, CPU and GPU
 * samples) and pprof_xe.c (EU-stall samples). */
#ifndef GPUPROF_PPROF_INT_H
#define GPUPROF_PPROF_INT_H

#include "render_int.h"
#include "flamegraph.h" /* pprof_label_fn */

#include "store/store.h"

struct xe_capdata;
struct capture;

/* Values per Sample at most: samples, cpu, launches, gpu, the EU-stall
 * reasons, NVIDIA stall samples (pprof.c checks it) */
#define PPROF_MAX_VALUES 16

/* A growing protobuf message; err sticks at the first -ENOMEM. */
struct pb {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void pb_u64(struct pb *b, unsigned field, uint64_t v); /* varint; 0 left out */
void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n);

/* Keys of the mapping table (one Mapping message each). */
enum pprof_map_kind {
	PMAP_KERNEL = 0, /* [kernel.kallsyms], idx 0 */
	PMAP_FILE = 1,	 /* the symbols section's mapping idx */
	PMAP_GPU = 2,	 /* the EU-stall section's kernel id idx */
};

struct pprof {
	struct bmap strs, funcs, locs, maps;
	struct pb tmp, msg;
	struct capframes *f;	     /* its syms give the file mappings */
	const struct xe_capdata *xe; /* NULL without EU-stall samples */
	pprof_label_fn labels;	     /* extra per-process labels, or NULL */
	void *labels_arg;
	uint64_t locv[2 * STORE_MAX_FRAMES + 3];
	/* one more label for the next pprof_sample(), when slabel_key is set */
	const char *slabel_key, *slabel;
	size_t slabel_len;
};

/* Index of s in the string table (made valid UTF-8). */
uint64_t pprof_str(struct pprof *x, const char *s, size_t len);
/* Mapping id (1-based) of a key; 0 on -ENOMEM. */
uint32_t pprof_map(struct pprof *x, enum pprof_map_kind kind, uint32_t idx);
/* Location id of (address, function name, mapping id 0 = none, source
 * file and line: NULL/0 when unknown). */
uint64_t pprof_loc(struct pprof *x, const char *name, size_t len, uint64_t ip, uint32_t map,
		   const char *file, size_t filelen, uint32_t line);
/* Locations of f's current frames, leaf first, from x->locv[at]; returns
 * the new count. */
size_t pprof_frames(struct pprof *x, const struct capframes *f, size_t at);
/* One Sample of x->locv[0..nloc) with labels comm and pid, into out. */
void pprof_sample(struct pprof *x, struct pb *out, size_t nloc, const uint64_t *vals, size_t nvals,
		  uint32_t pid, const char *comm, size_t commlen);

/* pprof_xe.c: the EU-stall samples, one per (kernel, offset), values at
 * vals[iv0 .. iv0 + XE_NREASONS) of nv; *events counts them. */
int pprof_xe_samples(struct pprof *x, struct pb *out, size_t iv0, size_t nv, uint64_t *events);

/* pprof_pc.c: whether c has NVIDIA PC samples; the samples, one per
 * (pid, launch stack, kernel, instruction, stall reason), the count at
 * vals[iv] of nv; *events counts them. */
bool pprof_pc_present(const struct capture *c);
int pprof_pc_samples(struct pprof *x, struct pb *out, const struct capture *c, size_t iv, size_t nv,
		     uint64_t *events);

#endif
