// SPDX-License-Identifier: MIT
/*
 * CPU call stacks. Per (pid, tid) of the clipped rows, nest
 * the events the way HTA's old common/call_stack.py does (its comparator and
 * a stable sort), then walk the stacks depth first, linking each op's start
 * and end with its children and consecutive top-level ops with dependency
 * edges. Events without nodes (annotations) shape the stack but add no edges.
 */
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

struct pt {
	int64_t time, dur;
	uint32_t idx; /* traceEvents index */
	uint32_t pos;
	int8_t type; /* +1 start, -1 end */
};

/* call_stack.py:compare_events, verbatim (including its odd mixed cases). */
static int cmp_pt(const struct pt *x, const struct pt *y)
{
	if (x->idx == y->idx)
		return x->type == 1 ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->type == y->type) {
		if (x->type == 1) {
			if (x->dur == y->dur)
				return x->idx < y->idx ? -1 : x->idx > y->idx;
			return x->dur < y->dur ? 1 : -1;
		}
		if (x->dur == y->dur)
			return x->idx < y->idx ? 1 : x->idx > y->idx ? -1 : 0;
		return x->dur < y->dur ? -1 : 1;
	}
	if (x->dur > 0 && y->dur > 0)
		return x->type == 1 ? 1 : -1;
	if (x->dur == 0 && y->dur == 0)
		return x->idx < y->idx ? -1 : 1;
	return x->type == 1 ? -1 : 1;
}

/* Stable merge sort: Python's sort is stable and the comparator is not a
 * strict total order in every mixed case, so keep the input order on ties. */
static void msort(struct pt *v, struct pt *tmp, size_t n)
{
	size_t h = n / 2, i = 0, j = h, k = 0;

	if (n < 2)
		return;
	msort(v, tmp, h);
	msort(v + h, tmp, n - h);
	while (i < h && j < n)
		tmp[k++] = cmp_pt(&v[j], &v[i]) < 0 ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

struct grp {
	int64_t pid, tid;
	uint32_t pos;
};

static int grp_cmp(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->pos > y->pos) - (x->pos < y->pos);
}

/* The one tid whose cpu_op/user_annotation rows have a name containing s
 * (HTA's _get_tid_for_event), or 0 (Python's falsy "none"). */
static int64_t tid_for(struct cp_build *b, const char *s)
{
	int64_t tid = 0;
	bool found = false;

	for (uint32_t p = 0; p < b->r->nev; p++) {
		const struct tl_event *e = &b->r->ev[p];

		if (!b->clip[p] || (e->kind != TL_K_CPU_OP && e->kind != TL_K_USER_ANNOTATION) ||
		    !strstr(cpb_name(b, p), s))
			continue;
		if (found && e->tid != tid)
			return 0;
		found = true;
		tid = e->tid;
	}
	return tid;
}

struct walk {
	struct cp_build *b;
	int32_t last, last_parent;
	int depth;
};

static bool lock_node(const struct cp_build *b, int32_t n)
{
	return b->r->ev[b->g->ev[b->g->nodes[n].ev].pos].flags & TL_EV_RUNTIME_LOCK;
}

/* _shares_cuda_runtime_lock: both lock events and not an (end, start) pair. */
static bool shares_lock(const struct cp_build *b, int32_t a, int32_t c)
{
	return lock_node(b, a) && lock_node(b, c) &&
	       (b->g->nodes[a].is_start || !b->g->nodes[c].is_start);
}

static void visit(struct walk *w, uint32_t pos, int32_t parent, bool enter)
{
	struct cp_build *b = w->b;
	int32_t s = b->nstart[pos], e = b->nend[pos], to = enter ? s : e;

	if (s < 0 || e < 0)
		return;
	if (w->last >= 0 && !shares_lock(b, w->last, to)) {
		enum cp_edge_type t = enter && w->depth == 0 ? CP_E_DEPENDENCY : CP_E_OPERATOR;
		bool zero = !enter && b->g->nodes[s].is_blocking; /* Q11 */

		cpb_attribute(b, cpb_edge(b, w->last, to, t, zero), w->last_parent);
	}
	w->last = to;
	w->last_parent = parent;
	w->depth += enter ? 1 : -1;
}

static int one_stack(struct cp_build *b, const struct grp *gr, size_t n, struct pt *pts,
		     struct pt *tmp, int32_t *parent, int32_t *child, int32_t *sib, int32_t *tail)
{
	const struct tl_rank *r = b->r;
	struct walk w = {b, CP_NONE, CP_NONE, 0};
	int32_t root_child = CP_NONE, root_tail = CP_NONE, *stk = (int32_t *)tmp;
	size_t np = 0, ns = 0;

	for (size_t i = 0; i < n; i++) {
		const struct tl_event *e = &r->ev[gr[i].pos];
		int64_t d = ev_dur(r, e) > 0 ? ev_dur(r, e) : 0;

		pts[np++] = (struct pt){ev_ts(r, e), d, e->index, gr[i].pos, 1};
		pts[np++] = (struct pt){ev_ts(r, e) + d, d, e->index, gr[i].pos, -1};
		child[gr[i].pos] = sib[gr[i].pos] = tail[gr[i].pos] = parent[gr[i].pos] = CP_NONE;
	}
	msort(pts, tmp, np);
	/* tmp is free again: reuse it as the nesting stack of positions */
	for (size_t i = 0; i < np; i++) {
		uint32_t p = pts[i].pos;

		if (pts[i].type == 1) {
			int32_t par = ns ? stk[ns - 1] : CP_NONE;
			int32_t *head = par < 0 ? &root_child : &child[par];
			int32_t *tl = par < 0 ? &root_tail : &tail[par];

			parent[p] = par;
			if (*tl < 0)
				*head = (int32_t)p;
			else
				sib[*tl] = (int32_t)p;
			*tl = (int32_t)p;
			stk[ns++] = (int32_t)p;
		} else if (ns) {
			ns--; /* pops the top, whichever event it is (as HTA) */
		}
	}
	/* iterative DFS from the root's children, in start order */
	ns = 0;
	for (int32_t c = root_child; c >= 0; c = sib[c]) {
		stk[ns++] = c;
		visit(&w, (uint32_t)c, parent[c], true);
		while (ns) {
			int32_t top = stk[ns - 1], next;

			/* child[] doubles as "next child to visit" */
			next = child[top];
			if (next >= 0) {
				child[top] = sib[next];
				stk[ns++] = next;
				visit(&w, (uint32_t)next, parent[next], true);
			} else {
				visit(&w, (uint32_t)top, parent[top], false);
				ns--;
			}
		}
	}
	return 0;
}

int cpb_call_stacks(struct cp_build *b)
{
	const struct tl_rank *r = b->r;
	size_t n = 0, cap = (size_t)r->nev + 1;
	struct grp *gr = malloc(cap * sizeof(*gr));
	struct pt *pts = malloc(2 * cap * sizeof(*pts)), *tmp = malloc(2 * cap * sizeof(*tmp));
	int32_t *parent = malloc(cap * sizeof(int32_t)), *child = malloc(cap * sizeof(int32_t));
	int32_t *sib = malloc(cap * sizeof(int32_t)), *tail = malloc(cap * sizeof(int32_t));
	int64_t fwd, bwd;
	int rc = -ENOMEM;

	if (!gr || !pts || !tmp || !parent || !child || !sib || !tail)
		goto out;
	/* Backward on its own thread is merged into the forward thread */
	fwd = tid_for(b, "forward");
	bwd = tid_for(b, "autograd");
	for (uint32_t p = 0; p < r->nev; p++) {
		int64_t tid = r->ev[p].tid;

		if (!b->clip[p])
			continue;
		if (fwd && bwd && fwd != bwd && tid == bwd)
			tid = fwd;
		gr[n++] = (struct grp){r->ev[p].pid, tid, p};
	}
	qsort(gr, n, sizeof(*gr), grp_cmp); /* groupby(["pid", "tid"]) order */
	rc = 0;
	for (size_t a = 0, z; a < n; a = z) {
		bool any_pos = false, all_neg = true;

		for (z = a; z < n && gr[z].pid == gr[a].pid && gr[z].tid == gr[a].tid; z++) {
			any_pos |= r->ev[gr[z].pos].stream > 0;
			all_neg &= r->ev[gr[z].pos].stream < 0;
		}
		/* infer_device_type: only all-negative-stream groups are CPU */
		if (any_pos || !all_neg)
			continue;
		rc = one_stack(b, gr + a, z - a, pts, tmp, parent, child, sib, tail);
		if (rc)
			break;
	}
out:
	free(gr);
	free(pts);
	free(tmp);
	free(parent);
	free(child);
	free(sib);
	free(tail);
	return rc;
}
