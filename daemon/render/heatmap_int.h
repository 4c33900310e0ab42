/* SPDX-License-Identifier: MIT */
/*
 * The interactive heat map's internals: heatdata.c builds the cells and the
 * per-cell stacks of a capture (bounded), heatmap.c writes the page.
 */
#ifndef GPUPROF_HEATMAP_INT_H
#define GPUPROF_HEATMAP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "render_int.h"

#define HM_MAX_CELLS (4u << 20)
#define HM_DEFAULT_MAX_BYTES (4ull << 20) /* embedded stack data */

struct hd_node {
	uint32_t parent; /* node id; the root (0) is its own parent */
	uint32_t name;	 /* id in heatdata.names (1-based) */
	bool kernel;	 /* below a "-" separator: the kernel palette */
	bool dash;	 /* the "-" separator itself */
	bool used;	 /* written (referenced by a kept pair, or an ancestor of one) */
};

struct hd_key {
	struct folded_key k;
	uint32_t leaf; /* 0: empty slot */
};

struct hd_pair {
	uint64_t key; /* cell << 32 | node */
	uint64_t count;
};

struct heatdata {
	uint64_t t0;	  /* ns of cell 0's start */
	uint64_t bucket;  /* ns per row (after coarsening) */
	uint64_t bucket0; /* as asked */
	uint64_t rows, cols;
	uint64_t *cells; /* count per cell, cell = col * rows + row */
	uint64_t records;
	struct bmap names; /* kernel byte + frame name */
	struct bmap nodes; /* (parent, name) -> node id */
	struct hd_node *node;
	size_t nodecap;
	struct hd_pair *pairs; /* sorted by key, one per (cell, node) */
	size_t npairs, pcap;
	uint64_t min_count; /* frames with less in all were merged into callers (0: none) */
	uint64_t pruned;    /* frames merged */
	uint64_t bytes;	    /* the estimate the bound was checked with */
	/* depth-first order of the used nodes and their names (order()) */
	uint32_t *seq, *newid, *newname, *nameseq;
	size_t nseq, nnames;
	/* building only */
	struct hd_key *keys; /* folded_key -> leaf, open addressing */
	size_t kcap, kused;
	uint32_t *name_bytes;
	char *scratch;
	size_t scratchcap;
};

/* Build the data of c (o->bucket_ns, weight, no_kernel, max_bytes).
 * -EINVAL for a bucket that does not divide a second, -ENODATA without
 * records, -E2BIG for too many cells, -ENOMEM. */
int heatdata_build(const struct capture *c, const struct heatmap_opts *o, struct heatdata **ret);
void heatdata_free(struct heatdata *d);

/* Building blocks for the sources (heatsrc.c). hd_grid() sizes the grid
 * for times t0..t1 (-E2BIG, -ENOMEM); hd_node() is the node of (parent,
 * name), 0 on -ENOMEM (node 0 is the root); hd_line_leaf() the leaf of a
 * folded line "a;b;c"; hd_add() counts n at ts for leaf. */
int hd_grid(struct heatdata *d, const struct capture *c, uint64_t t0, uint64_t t1);
uint32_t hd_node(struct heatdata *d, uint32_t parent, const char *s, size_t len);
uint32_t hd_line_leaf(struct heatdata *d, const char *p, size_t len);
int hd_add(struct heatdata *d, uint64_t ts, uint32_t leaf, uint64_t n);
/* The records folded_write() counts / the EU-stall section's rows. */
int hd_collect(struct heatdata *d, const struct capture *c, struct folded_liner *l);
int hd_collect_xe(struct heatdata *d, const struct capture *c, const struct render_view *view);

/* A JavaScript string literal body for a script inside the SVG: JSON
 * escaping plus '<', '>' and '&' as \u00XX (so no "]]>" or markup). */
int hm_js_str(struct wbuf *w, const char *s, size_t len);

#endif
