// SPDX-License-Identifier: MIT
/*
 * The data behind the interactive heat map (heatmap.h): per cell (second x
 * bucket) the counts of its stacks, so the page can draw the flame graph of
 * any range of cells itself.
 *
 *   names  string table: each distinct (frame name, kernel side) once, with
 *          its palette colour (so the browser needs no palette of its own)
 *   nodes  stack table: (parent, name) per node, node 0 the root "all",
 *          numbered depth-first with siblings in frame-wise byte order, so
 *          laying nodes out in id order is the flame graph's order
 *   cells  per non-empty cell: (leaf node, count) pairs
 *
 * A record's frames are exactly its folded line (folded_liner, the text of
 * folded_write()), split on ';', so a range's flame graph is the one
 * `gpuprofctl flamegraph --start-ns/--end-ns` draws. Each distinct
 * (pid, stack, comm, name) is resolved once.
 *
 * Bounded (bound()): while the estimate of the embedded bytes passes
 * max_bytes, the buckets are coarsened (rows of a second merged, down to
 * 200 ms) when the cells are most of it, else the frames whose count over
 * the whole capture is under a rising minimum are merged into their
 * callers. Either way every cell keeps its total.
 */
#include "heatmap_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "util.h"

#define NS_PER_S 1000000000ull
#define MIN_COARSE_ROWS 5 /* coarsening stops at 200 ms buckets */

static unsigned digits(uint64_t v)
{
	unsigned n = 1;
	while (v >= 10)
		v /= 10, n++;
	return n;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	return gpd_grow(p, cap, need, size, 1024);
}

/* ---- (cell, node) -> count ------------------------------------------------ */

static int pairs_add(struct heatdata *d, uint64_t key, uint64_t n)
{
	if (d->npairs && d->pairs[d->npairs - 1].key == key) { /* runs of one stack */
		d->pairs[d->npairs - 1].count = sat_add(d->pairs[d->npairs - 1].count, n);
		return 0;
	}
	if (grow((void **)&d->pairs, &d->pcap, d->npairs + 1, sizeof(*d->pairs)) < 0)
		return -ENOMEM;
	d->pairs[d->npairs++] = (struct hd_pair){key, n};
	return 0;
}

/*
 * Group the pairs by cell (a counting sort: cells in order, nodes within a
 * cell in no particular order) and merge the pairs of equal (cell, node),
 * each cell's nodes found through a per-node mark: linear time.
 */
static int pairs_sort(struct heatdata *d)
{
	size_t n = d->npairs, ncells = d->rows * d->cols, nn = d->nodes.n + 1, o = 0;
	size_t *cnt = calloc(ncells + 1, sizeof(*cnt));
	uint32_t *mark = calloc(nn, sizeof(*mark)), *slot = malloc(nn * sizeof(*slot));
	struct hd_pair *tmp = malloc((n ? n : 1) * sizeof(*tmp));
	int r = -ENOMEM;
	if (!cnt || !mark || !slot || !tmp)
		goto out;
	for (size_t i = 0; i < n; i++)
		cnt[(d->pairs[i].key >> 32) + 1]++;
	for (size_t c = 0; c < ncells; c++)
		cnt[c + 1] += cnt[c];
	for (size_t i = 0; i < n; i++)
		tmp[cnt[d->pairs[i].key >> 32]++] = d->pairs[i];
	for (size_t i = 0; i < n; i++) {
		uint32_t node = (uint32_t)tmp[i].key, cell1 = (uint32_t)(tmp[i].key >> 32) + 1;
		if (mark[node] == cell1) {
			d->pairs[slot[node]].count =
				sat_add(d->pairs[slot[node]].count, tmp[i].count);
			continue;
		}
		mark[node] = cell1;
		slot[node] = (uint32_t)o;
		d->pairs[o++] = tmp[i];
	}
	d->npairs = o;
	r = 0;
out:
	free(cnt);
	free(mark);
	free(slot);
	free(tmp);
	return r;
}

/* ---- the stack table ------------------------------------------------------ */

static uint32_t name_id(struct heatdata *d, const char *s, size_t len, bool kernel)
{
	if (grow((void **)&d->scratch, &d->scratchcap, len + 1, 1) < 0)
		return 0;
	d->scratch[0] = kernel;
	memcpy(d->scratch + 1, s, len);
	return bmap_intern(&d->names, d->scratch, len + 1, NULL);
}

uint32_t hd_node(struct heatdata *d, uint32_t parent, const char *s, size_t len)
{
	bool kernel = parent && (d->node[parent].kernel || d->node[parent].dash);
	uint32_t nm = name_id(d, s, len, kernel), key[2] = {parent, nm};
	bool added;
	if (!nm)
		return 0;
	uint32_t id = bmap_intern(&d->nodes, key, sizeof(key), &added);
	if (!id || grow((void **)&d->node, &d->nodecap, (size_t)id + 1, sizeof(*d->node)) < 0)
		return 0;
	if (added)
		d->node[id] = (struct hd_node){parent, nm, kernel, len == 1 && s[0] == '-', 0};
	return id;
}

uint32_t hd_line_leaf(struct heatdata *d, const char *p, size_t len)
{
	const char *end = p + len;
	uint32_t n = 0;
	for (;;) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *e = semi ? semi : end;
		if (!(n = hd_node(d, n, p, (size_t)(e - p))) || !semi)
			return n;
		p = semi + 1;
	}
}

/* ---- building ------------------------------------------------------------- */

int hd_grid(struct heatdata *d, const struct capture *c, uint64_t t0, uint64_t t1)
{
	d->t0 = t0;
	/* columns start at the capture's window so seconds line up with it */
	if (c->t0_ns && c->t0_ns <= d->t0)
		d->t0 = c->t0_ns;
	d->rows = NS_PER_S / d->bucket;
	d->cols = (t1 - d->t0) / NS_PER_S + 1;
	if (d->cols > HM_MAX_CELLS / d->rows)
		return -E2BIG;
	if (!(d->cells = calloc(d->rows * d->cols, sizeof(*d->cells))))
		return -ENOMEM;
	d->node = calloc(1024, sizeof(*d->node));
	if (!d->node)
		return -ENOMEM;
	d->nodecap = 1024;
	if (!name_id(d, "all", 3, false)) /* names[0] */
		return -ENOMEM;
	d->node[0] = (struct hd_node){0, 1, false, false, 0};
	return 0;
}

int hd_add(struct heatdata *d, uint64_t ts, uint32_t leaf, uint64_t n)
{
	uint64_t dt = ts - d->t0;
	uint64_t cell = dt / NS_PER_S * d->rows + dt % NS_PER_S / d->bucket;
	if (pairs_add(d, cell << 32 | leaf, n) < 0)
		return -ENOMEM;
	d->cells[cell] = sat_add(d->cells[cell], n);
	d->records++;
	return 0;
}

/* Merge every f rows of a second into one. */
static int coarsen(struct heatdata *d, uint64_t f)
{
	uint64_t rows = d->rows / f;
	for (size_t i = 0; i < d->npairs; i++) {
		uint64_t cell = d->pairs[i].key >> 32, node = d->pairs[i].key & 0xffffffffu;
		cell = cell / d->rows * rows + cell % d->rows / f;
		d->pairs[i].key = cell << 32 | node;
	}
	if (pairs_sort(d) < 0)
		return -ENOMEM;
	for (uint64_t k = 0; k < d->rows * d->cols; k++) {
		uint64_t n = d->cells[k];
		d->cells[k] = 0;
		d->cells[k / d->rows * rows + k % d->rows / f] += n;
	}
	d->rows = rows;
	d->bucket *= f;
	return 0;
}

/* The bytes of the embedded data (an upper bound: node ids before
 * renumbering), *pairs_bytes of them in the cells. Marks the nodes written
 * (node.used: referenced by a pair, or an ancestor of one). */
static uint64_t estimate(struct heatdata *d, uint64_t *pairs_bytes)
{
	uint64_t bytes = 320; /* the fixed part */
	size_t nn = d->nodes.n + 1;
	for (size_t i = 0; i < nn; i++)
		d->node[i].used = 0;
	d->node[0].used = 1;
	for (size_t i = 0; i < d->npairs;) {
		uint64_t cell = d->pairs[i].key >> 32, k = 0;
		for (; i < d->npairs && d->pairs[i].key >> 32 == cell; i++, k++) {
			uint64_t node = d->pairs[i].key & 0xffffffffu;
			d->node[node].used = 1;
			bytes += digits(node) + digits(d->pairs[i].count) + 2;
		}
		bytes += digits(cell) + digits(k) + 3;
	}
	*pairs_bytes = bytes;
	for (size_t i = nn; i-- > 1;)
		if (d->node[i].used)
			d->node[d->node[i].parent].used = 1;
	for (size_t i = 0; i < nn; i++)
		if (d->node[i].used)
			bytes += digits(i) + digits(d->node[i].name) + 2 +
				 d->name_bytes[d->node[i].name - 1];
	return bytes;
}

/*
 * Merge the nodes whose count over the whole capture is under min into
 * their nearest ancestor that stays (as a flame graph's minimum width
 * drops narrow frames): a pair's count moves up to that ancestor, so every
 * cell keeps its total and wide frames keep their widths.
 */
static int prune(struct heatdata *d, uint64_t min)
{
	size_t nn = d->nodes.n + 1;
	uint64_t *tot = calloc(nn, sizeof(*tot));
	uint32_t *map = malloc(nn * sizeof(*map));
	if (!tot || !map) {
		free(tot);
		free(map);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->npairs; i++)
		tot[d->pairs[i].key & 0xffffffffu] += d->pairs[i].count;
	for (size_t i = nn; i-- > 1;) /* parents have smaller ids */
		tot[d->node[i].parent] = sat_add(tot[d->node[i].parent], tot[i]);
	map[0] = 0;
	for (size_t i = 1; i < nn; i++) {
		map[i] = tot[i] >= min ? (uint32_t)i : map[d->node[i].parent];
		d->pruned += tot[i] && tot[i] < min; /* merged now (earlier ones hold 0) */
	}
	for (size_t i = 0; i < d->npairs; i++) {
		uint64_t node = d->pairs[i].key & 0xffffffffu;
		d->pairs[i].key = (d->pairs[i].key >> 32) << 32 | map[node];
	}
	free(tot);
	free(map);
	return pairs_sort(d);
}

static int js_count(void *ctx, const void *buf, size_t len)
{
	(void)ctx, (void)buf, (void)len;
	return 0;
}

/* Bytes each name takes in the string table (escaped, quoted, colour). */
static int name_sizes(struct heatdata *d)
{
	struct wbuf *w = malloc(sizeof(*w));
	d->name_bytes = malloc((d->names.n + 1) * sizeof(*d->name_bytes));
	if (!w || !d->name_bytes) {
		free(w);
		return -ENOMEM;
	}
	wb_init(w, js_count, NULL);
	for (uint32_t id = 1; id <= d->names.n; id++) {
		size_t len;
		const char *s = bmap_key(&d->names, id, &len);
		uint64_t before = w->total;
		hm_js_str(w, s + 1, len - 1);
		d->name_bytes[id - 1] = (uint32_t)(w->total - before) + 24; /* "",  "rgb(...)", */
	}
	free(w);
	return 0;
}

/* The coarsening factor to the next row count that divides a second's
 * rows, or 0 when coarsening would pass MIN_COARSE_ROWS. */
static uint64_t coarser(const struct heatdata *d)
{
	for (uint64_t f = 2; d->rows / f >= MIN_COARSE_ROWS; f++)
		if (d->rows % f == 0)
			return f;
	return 0;
}

/*
 * The default bucket on a sparse capture: at a low rate (49 Hz on one
 * thread) a 20 ms cell holds 0 or 1 samples, so every cell with any is the
 * same full red and the page shows where samples are, not how many. Merge
 * rows until the busiest cell holds AUTO_MIN_MAX (shades to compare) or
 * the rows reach MIN_COARSE_ROWS. The chosen bucket is the page's as if
 * asked: only the data bound's coarsening is reported as such.
 */
#define AUTO_MIN_MAX 5

/* The busiest cell if every g rows of a second were one. */
static uint64_t merged_max(const struct heatdata *d, uint64_t g)
{
	uint64_t max = 0;
	for (uint64_t k = 0; k < d->rows * d->cols; k += g) {
		uint64_t n = 0;
		for (uint64_t j = 0; j < g; j++)
			n = sat_add(n, d->cells[k + j]);
		max = n > max ? n : max;
	}
	return max;
}

static int auto_bucket(struct heatdata *d)
{
	uint64_t f = 1;
	/* every divisor of the rows, not coarser()'s chain (50 rows: 10 is
	 * not reached from 25) */
	for (uint64_t g = 1; d->rows / g >= MIN_COARSE_ROWS; g++) {
		if (d->rows % g)
			continue;
		f = g;
		if (merged_max(d, g) >= AUTO_MIN_MAX)
			break;
	}
	if (f > 1 && coarsen(d, f) < 0)
		return -ENOMEM;
	d->bucket0 = d->bucket;
	return 0;
}

/*
 * Fit the data under max_bytes: while over, coarsen the buckets when the
 * cells are most of it (merging rows merges their pairs), otherwise merge
 * narrow frames into their callers with a rising minimum count (what a big
 * stack table needs), until it fits or only the root is left.
 */
static int bound(struct heatdata *d, uint64_t max_bytes)
{
	uint64_t total = 0, pairs_bytes, f;
	if (name_sizes(d) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < d->npairs; i++)
		total = sat_add(total, d->pairs[i].count);
	d->bytes = estimate(d, &pairs_bytes);
	while (d->bytes > max_bytes) {
		if (pairs_bytes * 2 > d->bytes && (f = coarser(d))) {
			if (coarsen(d, f) < 0)
				return -ENOMEM;
		} else if (d->min_count <= total && d->min_count < UINT64_MAX / 4) {
			/* 2, 8, 32...; large weights (ns) start higher */
			uint64_t start = total >> 24 > 2 ? total >> 24 : 2;
			d->min_count = d->min_count ? d->min_count * 4 : start;
			if (prune(d, d->min_count) < 0)
				return -ENOMEM;
		} else {
			break;
		}
		d->bytes = estimate(d, &pairs_bytes);
	}
	return 0;
}

static int sibling_cmp(const void *a, const void *b, void *ctx)
{
	const struct heatdata *d = ctx;
	size_t lx, ly;
	const char *x = bmap_key(&d->names, d->node[*(const uint32_t *)a].name, &lx);
	const char *y = bmap_key(&d->names, d->node[*(const uint32_t *)b].name, &ly);
	/* skip the kernel byte: siblings share it */
	size_t n = lx < ly ? lx : ly;
	int c = memcmp(x + 1, y + 1, n ? n - 1 : 0);
	return c ? c : (lx < ly ? -1 : lx > ly);
}

/*
 * Depth-first order of the used nodes with siblings in frame-wise byte
 * order (folded lines sorted with ';' below every byte give the same):
 * seq[new] = old, newid[old] = new; the names they use numbered by first
 * use (newname[id] = index + 1, nameseq[index] = id).
 */
static int order(struct heatdata *d)
{
	size_t nn = d->nodes.n + 1, m = 0, top = 0;
	uint32_t *start = calloc(nn + 1, sizeof(*start)), *kids = malloc(nn * sizeof(*kids));
	uint32_t *stack = malloc(nn * sizeof(*stack));
	int r = -ENOMEM;
	d->seq = malloc(nn * sizeof(*d->seq));
	d->newid = malloc(nn * sizeof(*d->newid));
	d->newname = calloc(d->names.n + 1, sizeof(*d->newname));
	d->nameseq = malloc((d->names.n + 1) * sizeof(*d->nameseq));
	if (!start || !kids || !stack || !d->seq || !d->newid || !d->newname || !d->nameseq)
		goto out;
	for (size_t i = 1; i < nn; i++)
		if (d->node[i].used)
			start[d->node[i].parent + 1]++;
	for (size_t i = 0; i < nn; i++)
		start[i + 1] += start[i];
	memcpy(stack, start, nn * sizeof(*stack)); /* fill cursors */
	for (size_t i = 1; i < nn; i++)
		if (d->node[i].used)
			kids[stack[d->node[i].parent]++] = (uint32_t)i;
	for (size_t i = 0; i < nn; i++)
		if (start[i + 1] - start[i] > 1)
			qsort_r(kids + start[i], start[i + 1] - start[i], sizeof(*kids),
				sibling_cmp, d);
	stack[top++] = 0;
	while (top) {
		uint32_t v = stack[--top], nm = d->node[v].name;
		d->seq[m] = v;
		d->newid[v] = (uint32_t)m++;
		if (!d->newname[nm]) {
			d->nameseq[d->nnames] = nm;
			d->newname[nm] = (uint32_t)++d->nnames;
		}
		for (uint32_t k = start[v + 1]; k-- > start[v];)
			stack[top++] = kids[k];
	}
	d->nseq = m;
	r = 0;
out:
	free(start);
	free(kids);
	free(stack);
	return r;
}

int heatdata_build(const struct capture *c, const struct heatmap_opts *o, struct heatdata **ret)
{
	struct folded_opts fo = {.no_kernel = o->no_kernel, .weight = o->weight, .view = o->view};
	struct folded_liner *l = NULL;
	struct heatdata *d = calloc(1, sizeof(*d));
	int r = -ENOMEM;
	if (!d)
		return -ENOMEM;
	d->bucket = d->bucket0 = o->bucket_ns ? o->bucket_ns : 20000000ull;
	bmap_init(&d->names);
	bmap_init(&d->nodes);
	r = -EINVAL;
	if (d->bucket < 1000000 || d->bucket > NS_PER_S || NS_PER_S % d->bucket)
		goto fail; /* rows must tile a second: 1 ms .. 1 s, dividing it */
	if (o->eu_stall)
		r = hd_collect_xe(d, c, &o->view);
	else if ((r = folded_liner_new(c, &fo, &l)) == 0)
		r = hd_collect(d, c, l);
	if (r < 0 || (r = pairs_sort(d)) < 0 || /* one pair per (cell, node) from here */
	    (!o->bucket_ns && (r = auto_bucket(d)) < 0) ||
	    (r = bound(d, o->max_bytes ? o->max_bytes : HM_DEFAULT_MAX_BYTES)) < 0 ||
	    (r = order(d)) < 0)
		goto fail;
	folded_liner_free(l);
	free(d->keys);
	d->keys = NULL;
	*ret = d;
	return 0;
fail:
	folded_liner_free(l);
	heatdata_free(d);
	return r;
}

void heatdata_free(struct heatdata *d)
{
	if (!d)
		return;
	bmap_finish(&d->names);
	bmap_finish(&d->nodes);
	free(d->keys);
	free(d->node);
	free(d->pairs);
	free(d->cells);
	free(d->name_bytes);
	free(d->scratch);
	free(d->seq);
	free(d->newname);
	free(d->newid);
	free(d->nameseq);
	free(d);
}
