// SPDX-License-Identifier: MIT
/*
 * GPU job pairing (gpu_job_pair.h). A fixed slab of jobs, a chained hash
 * index over their current key and a doubly linked age list (oldest first)
 * so that lookup, insert, re-key, removal and eviction are all O(1).
 */
#include "gpu_job_pair.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX

enum key_tag { KEY_NONE = 0, KEY_OBJ = 1, KEY_FENCE = 2 };

struct job {
	uint8_t ktag; /* enum key_tag; KEY_NONE = free slot */
	bool has_submit, has_start;
	uint8_t group, engine;
	uint64_t a, b; /* obj, or (ctx, seqno) */
	uint64_t submit_ns, start_ns;
	uint64_t ctx, seqno, tag;
	uint32_t pid, tid, uid, comm, stack;
	uint32_t hnext;	       /* hash chain */
	uint32_t older, newer; /* age list */
};

struct gj_pair {
	struct gj_pair_ops ops;
	struct job *jobs;
	uint32_t cap, used;
	uint32_t *heads; /* nbuckets chain heads */
	uint32_t mask;
	uint32_t free_head; /* free slots chained through hnext */
	uint32_t oldest, newest;
	struct gj_stats st;
};

static uint32_t bucket(const struct gj_pair *p, uint8_t tag, uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ (b * 0xC2B2AE3D27D4EB4Full) ^ tag) * 0x9E3779B97F4A7C15ull;
	return (uint32_t)(h ^ (h >> 32)) & p->mask;
}

int gj_pair_new(size_t capacity, const struct gj_pair_ops *ops, struct gj_pair **ret)
{
	if (!capacity || capacity > (1u << 24) || !ops || !ops->emit)
		return -EINVAL;
	struct gj_pair *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	uint32_t nb = 16;
	while (nb < capacity * 2)
		nb *= 2;
	p->jobs = calloc(capacity, sizeof(*p->jobs));
	p->heads = malloc(nb * sizeof(*p->heads));
	if (!p->jobs || !p->heads) {
		free(p->jobs);
		free(p->heads);
		free(p);
		return -ENOMEM;
	}
	memset(p->heads, 0xff, nb * sizeof(*p->heads));
	p->ops = *ops;
	p->cap = (uint32_t)capacity;
	p->mask = nb - 1;
	for (uint32_t i = 0; i < p->cap; i++)
		p->jobs[i].hnext = i + 1 < p->cap ? i + 1 : NIL;
	p->free_head = 0;
	p->oldest = p->newest = NIL;
	*ret = p;
	return 0;
}

static uint32_t find(const struct gj_pair *p, uint8_t tag, uint64_t a, uint64_t b)
{
	for (uint32_t i = p->heads[bucket(p, tag, a, b)]; i != NIL; i = p->jobs[i].hnext)
		if (p->jobs[i].ktag == tag && p->jobs[i].a == a && p->jobs[i].b == b)
			return i;
	return NIL;
}

static void hash_link(struct gj_pair *p, uint32_t i)
{
	uint32_t *h = &p->heads[bucket(p, p->jobs[i].ktag, p->jobs[i].a, p->jobs[i].b)];
	p->jobs[i].hnext = *h;
	*h = i;
}

static void hash_unlink(struct gj_pair *p, uint32_t i)
{
	uint32_t *h = &p->heads[bucket(p, p->jobs[i].ktag, p->jobs[i].a, p->jobs[i].b)];
	while (*h != i)
		h = &p->jobs[*h].hnext;
	*h = p->jobs[i].hnext;
}

/* Take slot i out of the index and the age list and free it. Its ids must
 * have been handed on (emit) or released by the caller. */
static void drop(struct gj_pair *p, uint32_t i)
{
	struct job *j = &p->jobs[i];
	hash_unlink(p, i);
	if (j->older != NIL)
		p->jobs[j->older].newer = j->newer;
	else
		p->oldest = j->newer;
	if (j->newer != NIL)
		p->jobs[j->newer].older = j->older;
	else
		p->newest = j->older;
	j->ktag = KEY_NONE;
	j->hnext = p->free_head;
	p->free_head = i;
	p->used--;
}

static void release(struct gj_pair *p, uint32_t i)
{
	struct job *j = &p->jobs[i];
	if (p->ops.release && (j->comm || j->stack))
		p->ops.release(p->ops.arg, j->comm, j->stack);
	drop(p, i);
}

static void rekey(struct gj_pair *p, uint32_t i, uint8_t tag, uint64_t a, uint64_t b)
{
	hash_unlink(p, i);
	p->jobs[i].ktag = tag;
	p->jobs[i].a = a;
	p->jobs[i].b = b;
	hash_link(p, i);
}

/* A new job, newest in the age list; evicts the oldest when full. */
static uint32_t insert(struct gj_pair *p, uint8_t tag, uint64_t a, uint64_t b)
{
	if (p->free_head == NIL) {
		p->st.evicted++;
		release(p, p->oldest);
	}
	uint32_t i = p->free_head;
	struct job *j = &p->jobs[i];
	p->free_head = j->hnext;
	memset(j, 0, sizeof(*j));
	j->ktag = tag;
	j->a = a;
	j->b = b;
	j->engine = 0xff;
	hash_link(p, i);
	j->older = p->newest;
	j->newer = NIL;
	if (p->newest != NIL)
		p->jobs[p->newest].newer = i;
	else
		p->oldest = i;
	p->newest = i;
	p->used++;
	return i;
}

static void set_submitter(struct job *j, const struct gj_event *e)
{
	j->has_submit = true;
	j->submit_ns = e->ts_ns;
	j->pid = e->pid;
	j->tid = e->tid;
	j->uid = e->uid;
	j->comm = e->comm;
	j->stack = e->stack;
}

static void emit(struct gj_pair *p, uint32_t i, const struct gj_event *e)
{
	struct job *j = &p->jobs[i];
	struct gj_interval iv = {
		.ctx = j->ctx ? j->ctx : e->ctx,
		.seqno = j->ctx ? j->seqno : e->seqno,
		.tag = j->tag ? j->tag : e->tag,
		.pid = j->pid,
		.tid = j->tid,
		.uid = j->uid,
		.comm = j->comm,
		.stack = j->stack,
		.group = j->group,
		.engine = j->engine != 0xff ? j->engine : e->engine,
	};
	iv.start_ns = j->has_start ? j->start_ns : j->submit_ns;
	iv.submit_ns = j->has_submit ? j->submit_ns : iv.start_ns;
	if (iv.submit_ns > iv.start_ns) /* events recorded on CPUs a little apart */
		iv.submit_ns = iv.start_ns;
	iv.end_ns = e->ts_ns;
	if (iv.end_ns < iv.start_ns) {
		p->st.negative++;
		iv.end_ns = iv.start_ns;
	}
	iv.flags = (j->has_start ? 0 : GJ_IV_NO_START) | (j->has_submit ? 0 : GJ_IV_NO_SUBMIT);
	p->st.intervals++;
	drop(p, i); /* ids move to the interval */
	p->ops.emit(p->ops.arg, &iv);
}

/* The pending job an event refers to, or NIL. */
static uint32_t lookup(const struct gj_pair *p, const struct gj_event *e)
{
	/* By address first: a job keyed by it is the one this event is about,
	 * even when a stale job still holds the same fence key. */
	uint32_t i = e->obj ? find(p, KEY_OBJ, e->obj, 0) : NIL;
	if (i == NIL && !e->obj_key)
		i = find(p, KEY_FENCE, e->ctx, e->seqno);
	return i;
}

static void fill_fence(struct gj_pair *p, uint32_t i, const struct gj_event *e)
{
	struct job *j = &p->jobs[i];
	j->group = e->group;
	if (!j->tag)
		j->tag = e->tag;
	if (e->engine != 0xff)
		j->engine = e->engine;
	if (e->obj_key || j->ktag == KEY_FENCE)
		return;
	/* The fence is known now: key the job by it from here on. */
	uint32_t old = find(p, KEY_FENCE, e->ctx, e->seqno);
	if (old != NIL && old != i) {
		p->st.stale++;
		release(p, old);
	}
	j->ctx = e->ctx;
	j->seqno = e->seqno;
	rekey(p, i, KEY_FENCE, e->ctx, e->seqno);
}

static uint32_t insert_for(struct gj_pair *p, const struct gj_event *e)
{
	uint32_t i = e->obj_key ? insert(p, KEY_OBJ, e->obj, 0)
				: insert(p, KEY_FENCE, e->ctx, e->seqno);
	if (!e->obj_key) {
		p->jobs[i].ctx = e->ctx;
		p->jobs[i].seqno = e->seqno;
	}
	p->jobs[i].group = e->group;
	p->jobs[i].tag = e->tag;
	if (e->engine != 0xff)
		p->jobs[i].engine = e->engine;
	return i;
}

void gj_pair_feed(struct gj_pair *p, const struct gj_event *e)
{
	uint32_t i = lookup(p, e);

	switch (e->ev) {
	case GJ_SUBMIT:
		p->st.submitted++;
		if (i != NIL && p->jobs[i].has_submit) {
			p->st.stale++;
			release(p, i);
			i = NIL;
		}
		if (i == NIL)
			i = insert_for(p, e);
		else
			fill_fence(p, i, e);
		set_submitter(&p->jobs[i], e);
		return;
	case GJ_START:
		p->st.started++;
		if (i != NIL && p->jobs[i].has_start) {
			p->st.dup_start++;
			return;
		}
		if (i == NIL)
			i = insert_for(p, e);
		else
			fill_fence(p, i, e);
		p->jobs[i].has_start = true;
		p->jobs[i].start_ns = e->ts_ns;
		return;
	case GJ_END:
		if (i == NIL) {
			p->st.unmatched_end++;
			return;
		}
		emit(p, i, e);
		return;
	case GJ_FREE:
		if (i != NIL) {
			p->st.abandoned++;
			release(p, i);
		}
		return;
	}
	/* unknown kind: the submitter's ids would leak otherwise */
	if (p->ops.release && (e->comm || e->stack))
		p->ops.release(p->ops.arg, e->comm, e->stack);
}

void gj_pair_stats(const struct gj_pair *p, struct gj_stats *st)
{
	*st = p->st;
	st->pending = p->used;
}

void gj_pair_free(struct gj_pair *p)
{
	if (!p)
		return;
	while (p->oldest != NIL)
		release(p, p->oldest);
	free(p->jobs);
	free(p->heads);
	free(p);
}
