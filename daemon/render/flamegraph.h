/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs, differential flame graphs, the sub-second heat map and the
 * standard exports (Chrome/Perfetto trace JSON, pprof). All are pure
 * functions writing through a folded_write_fn callback, so the RPC layer
 * runs them in a capjob worker and writes through a bounded fdout.
 *
 * Flame graphs are drawn from a fold_set: folded-stack lines ("a;b;c 12")
 * either read from any folded file (foldedin.c: bounded, malformed lines
 * counted and skipped) or produced from a capture by folded_write() itself
 * (so symbols and aggregation live in one place, folded.c). A fold_set has
 * two sides: side 0 alone for a flame graph, A = 0 and B = 1 for a diff.
 */
#ifndef GPUPROF_FLAMEGRAPH_H
#define GPUPROF_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "folded.h"

struct capture;

#define FOLD_MAX_LINE (64u << 10)   /* longer lines are counted and skipped */
#define FOLD_MAX_DEPTH 1024u	    /* frames per stack; deeper lines skipped */
#define FOLD_COUNT_MAX (1ull << 53) /* larger counts saturate (exact in a double) */

/* ---- folded input ---------------------------------------------------- */

struct fold_stats {
	uint64_t lines[2];  /* accepted lines per side */
	uint64_t total[2];  /* sum of their counts (saturating) */
	uint64_t malformed; /* no count, empty stack, or too deep */
	uint64_t too_long;  /* longer than FOLD_MAX_LINE */
	uint64_t saturated; /* counts cut to FOLD_COUNT_MAX */
	uint64_t bytes;	    /* input bytes seen */
};

struct fold_set;

/* max_bytes bounds the text held (0 = 1 GiB): feeding more gives -EFBIG. */
int fold_set_new(uint64_t max_bytes, struct fold_set **ret);
void fold_set_free(struct fold_set *s);
/* Feed folded text in any chunking; a trailing line without '\n' is taken
 * by fold_set_end(). Returns 0, -ENOMEM or -EFBIG. */
int fold_set_feed(struct fold_set *s, int side, const void *buf, size_t len);
int fold_set_end(struct fold_set *s, int side);
/* Read an fd to EOF (each wait bounded by timeout_ms; -ETIMEDOUT). */
int fold_set_read_fd(struct fold_set *s, int side, int fd, int timeout_ms);
/* The folded stacks of a capture (folded_write()) into side. */
int fold_set_add_capture(struct fold_set *s, int side, const struct capture *c,
			 const struct folded_opts *o, struct folded_totals *t);
const struct fold_stats *fold_set_stats(const struct fold_set *s);

/* ---- flame graph SVG --------------------------------------------------- */

struct flame_opts {
	const char *title;     /* NULL: "Flame Graph" / "Differential Flame Graph" */
	const char *subtitle;  /* NULL: none */
	const char *countname; /* NULL: "samples" */
	double minwidth;       /* px; narrower frames are pruned; <= 0: 0.1 */
	unsigned width;	       /* image width in px; 0: 1200 */
	bool icicle;	       /* root at the top (top-down) */
	bool diff;	       /* side 0 = A, side 1 = B: width by B, colour by B - A */
	bool normalize;	       /* diff: scale A's total to B's */
	const char *heat_hint; /* heat map: the command line a cell range maps to */
};

struct flame_totals {
	uint64_t frames; /* frames drawn */
	uint64_t pruned; /* frames under minwidth */
	uint64_t total;	 /* count of the root (B's for a diff) */
	uint32_t depth;	 /* deepest frame drawn */
};

/* Render s. Returns 0, -ENODATA when there is nothing to draw, -ENOMEM, or
 * the writer's error. Sorts s's lines (not otherwise modified). */
int flame_render(struct fold_set *s, const struct flame_opts *o, folded_write_fn fn, void *ctx,
		 struct flame_totals *t);

/* ---- sub-second heat map ------------------------------------------------- */

/*
 * An interactive SVG: the heat map (columns = seconds, rows = buckets, colour
 * = count), and, embedded, each cell's stacks, so choosing a range of cells
 * draws its flame graph in the page (heatmap.c, heatdata.c).
 */
struct heatmap_opts {
	uint64_t bucket_ns;  /* rows; must divide a second; 0: 20 ms, or
				    * coarser (to 200 ms) while the busiest
				    * cell would hold under 5 */
	uint64_t capture_id; /* for the command line shown on selection */
	const char *title;
	enum folded_weight weight; /* what a cell counts (CPU samples by default) */
	bool no_kernel;		   /* leave kernel frames out of the stacks */
	uint64_t max_bytes;	   /* bound on the embedded stack data; 0: 4 MiB */
	bool eu_stall;		   /* count the EU-stall section's rows instead */
	struct render_view view;   /* what the peer may see */
};

struct heatmap_totals {
	uint64_t samples, columns, rows, max_cell;
	uint64_t bucket_ns;	    /* the rows' bucket, after any coarsening */
	uint64_t min_count, pruned; /* frames under min_count in all merged into callers
					   (0: none), how many */
	uint64_t nodes, names;	    /* stack and string table entries written */
	uint64_t data_bytes;	    /* bytes of the embedded data */
};

int heatmap_render(const struct capture *c, const struct heatmap_opts *o, folded_write_fn fn,
		   void *ctx, struct heatmap_totals *t);

/* ---- exports ------------------------------------------------------------- */

struct export_totals {
	uint64_t events; /* trace events / pprof samples written */
	uint64_t frames; /* stack frames / locations */
	uint64_t bytes;
};

/* Chrome / Perfetto trace JSON (traceEvents + stackFrames). view (NULL:
 * everything) is what the peer may see, as for folded_opts. */
int chrome_export(const struct capture *c, const struct render_view *view, folded_write_fn fn,
		  void *ctx, struct export_totals *t);

/* pprof profile.proto, gzip-compressed. period_ns: CPU sampling period
 * (cpu/nanoseconds = count * period); 0 leaves that value type out. */
int pprof_export(const struct capture *c, const struct render_view *view, uint64_t period_ns,
		 folded_write_fn fn, void *ctx, struct export_totals *t);

/* pprof_export() whose default sample type (the one `go tool pprof`
 * shows without -sample_index; else the last) is sample_type: "samples",
 * "launches", "gpu", "stall_samples" (NVIDIA PC samples) or an EU-stall
 * reason. -ENOENT when the profile has no such type. */
int pprof_export_typed(const struct capture *c, const struct render_view *view, uint64_t period_ns,
		       const char *sample_type, folded_write_fn fn, void *ctx,
		       struct export_totals *t);

/* Labels a caller adds to every sample of a process, after "comm" and
 * "pid" (continuous profiles add its cgroup and systemd unit): up to max
 * (key, value) pairs, NUL-terminated strings that stay valid until the
 * export returns; returns how many. Called on the exporting thread. */
#define PPROF_MAX_EXTRA_LABELS 4
typedef size_t (*pprof_label_fn)(void *arg, uint32_t pid, const char **keys, const char **vals,
				 size_t max);

/* pprof_export() with labels (NULL: none, the same output). */
int pprof_export_labelled(const struct capture *c, const struct render_view *view,
			  uint64_t period_ns, pprof_label_fn labels, void *labels_arg,
			  folded_write_fn fn, void *ctx, struct export_totals *t);

#endif
