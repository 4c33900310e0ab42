// SPDX-License-Identifier: MIT
/*
 * Kernel names for launches the probes knew only by function handle
 * (gpumatch.h, m->name): from the CUPTI kernel interval joined to the
 * launch, then per process from what those joins taught about the handle.
 */
#include "gpumatch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

/* name[] while it is built: a launch or handle that was offered two
 * different names is left unnamed */
#define AMBIGUOUS UINT32_MAX

bool gpu_name_handle(const char *s, size_t len, uint64_t *h)
{
	uint64_t v = 0;
	size_t i;

	if (!s || len < 3 || s[0] != '0' || s[1] != 'x')
		return false;
	for (i = 2; i < len && s[i]; i++) {
		unsigned d;

		if (s[i] >= '0' && s[i] <= '9')
			d = (unsigned)(s[i] - '0');
		else if (s[i] >= 'a' && s[i] <= 'f')
			d = (unsigned)(s[i] - 'a' + 10);
		else
			return false;
		if (i >= 18) /* more than 16 digits */
			return false;
		v = v << 4 | d;
	}
	if (h)
		*h = v;
	return i > 2 && v;
}

/* The handle of launch r named "0x<hex>", in *h (gpu_name_handle). */
static bool handle_of(const struct capture *c, const struct store_rec *r, uint64_t *h)
{
	size_t len;
	const char *s = capture_str(c, r->name, &len);

	return gpu_name_handle(s, len, h);
}

static bool same_name(const struct capture *c, uint32_t a, uint32_t b)
{
	size_t la, lb;
	const char *sa, *sb;

	if (a == b)
		return true;
	sa = capture_str(c, a, &la);
	sb = capture_str(c, b, &lb);
	return sa && sb && la == lb && !memcmp(sa, sb, la);
}

/* One more name offered for *slot: the first is kept, a different one
 * makes it ambiguous. */
static void offer(const struct capture *c, uint32_t *slot, uint32_t name)
{
	if (!*slot)
		*slot = name;
	else if (*slot != AMBIGUOUS && !same_name(c, *slot, name))
		*slot = AMBIGUOUS;
}

/* (pid, uid, handle) -> name, open addressing; name 0 = empty slot. It
 * grows with the distinct handles learnt (a few hundred kernels in a real
 * process), never past twice the launches that taught one. */
struct hname {
	uint64_t handle;
	uint32_t pid, uid, name;
};

struct htab {
	struct hname *v;
	size_t mask, used;
};

static size_t hslot(const struct hname *v, size_t mask, uint32_t pid, uint32_t uid, uint64_t h)
{
	uint64_t x = (h ^ ((uint64_t)pid << 32 | uid)) * 0x9E3779B97F4A7C15ull;
	size_t s = (size_t)(x ^ (x >> 29)) & mask;

	while (v[s].name && (v[s].handle != h || v[s].pid != pid || v[s].uid != uid))
		s = (s + 1) & mask;
	return s;
}

/* The slot of (pid, uid, h), added if new (its name 0 until the caller
 * sets one, at once); NULL when out of memory. */
static struct hname *hadd(struct htab *t, uint32_t pid, uint32_t uid, uint64_t h)
{
	size_t s;

	if ((t->used + 1) * 2 > t->mask + 1 || !t->v) {
		size_t cap = t->v ? 2 * (t->mask + 1) : 64;
		struct hname *v = calloc(cap, sizeof(*v));

		if (!v)
			return NULL;
		for (size_t i = 0; t->v && i <= t->mask; i++)
			if (t->v[i].name)
				v[hslot(v, cap - 1, t->v[i].pid, t->v[i].uid, t->v[i].handle)] =
					t->v[i];
		free(t->v);
		t->v = v;
		t->mask = cap - 1;
	}
	s = hslot(t->v, t->mask, pid, uid, h);
	if (!t->v[s].name) {
		t->v[s] = (struct hname){h, pid, uid, 0};
		t->used++;
	}
	return &t->v[s];
}

/* The name learnt for (pid, uid, h), or 0. */
static uint32_t hfind(const struct htab *t, uint32_t pid, uint32_t uid, uint64_t h)
{
	size_t s;

	if (!t->v)
		return 0;
	s = hslot(t->v, t->mask, pid, uid, h);
	return t->v[s].name == AMBIGUOUS ? 0 : t->v[s].name;
}

/* A CUPTI kernel interval joined to a launch named by handle: that launch
 * in *launch. False for anything else. */
static bool teaches(const struct capture *c, const struct gpu_match *m, size_t i, uint32_t *launch)
{
	const struct store_rec *r = &c->recs[i], *l;
	uint64_t h;

	if (!m->count[i] || !gpu_is_cupti(r) || (r->cpu & 0xff) != GPU_CUPTI_KERNEL || !r->name)
		return false;
	*launch = m->launch[m->first[i]];
	l = &c->recs[*launch];
	/* the join is within one pid already; a name is also only taken
	 * from records of the launch's own owner */
	return l->pid == r->pid && l->uid == r->uid && handle_of(c, l, &h);
}

/* Each launch named by handle that joined a kernel: the table of what its
 * handle is called. 0 or -ENOMEM. */
static int learn(const struct capture *c, const uint32_t *name, struct htab *t)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		struct hname *e;
		uint64_t h;

		if (!name[i] || !handle_of(c, r, &h))
			continue;
		if (!(e = hadd(t, r->pid, r->uid, h)))
			return -ENOMEM;
		if (name[i] == AMBIGUOUS)
			e->name = AMBIGUOUS;
		else
			offer(c, &e->name, name[i]);
	}
	return 0;
}

int gpu_match_names(const struct capture *c, struct gpu_match *m)
{
	struct htab t = {0};
	uint32_t *name = NULL, l;
	uint64_t h;

	/* what each joined launch's kernels call it; nothing is allocated
	 * for a capture whose launches all had names */
	for (size_t i = 0; i < c->nrecs; i++) {
		if (!teaches(c, m, i, &l))
			continue;
		if (!name && !(name = calloc(c->nrecs + 1, sizeof(*name))))
			return -ENOMEM;
		offer(c, &name[l], c->recs[i].name);
	}
	if (!name)
		return 0;
	if (learn(c, name, &t) < 0) {
		free(t.v);
		free(name);
		return -ENOMEM;
	}
	/* the rest of the same (pid, owner, handle); ambiguity undone */
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->type != STORE_REC_GPU_LAUNCH)
			continue;
		if (name[i] == AMBIGUOUS)
			name[i] = 0;
		else if (name[i])
			m->nnamed_join++;
		else if (handle_of(c, r, &h) && (name[i] = hfind(&t, r->pid, r->uid, h)))
			m->nnamed_handle++;
	}
	free(t.v);
	if (m->nnamed_join || m->nnamed_handle)
		m->name = name;
	else
		free(name);
	return 0;
}

int gpu_launch_names(const struct capture *c, uint32_t **ret)
{
	struct gpu_match m;
	bool cupti = false, by_handle = false;
	uint64_t h;
	int err;

	*ret = NULL;
	/* the join only where it can name something: CUPTI intervals and a
	 * launch named by handle */
	for (size_t i = 0; i < c->nrecs && !(cupti && by_handle); i++) {
		const struct store_rec *r = &c->recs[i];

		cupti |= gpu_is_cupti(r);
		by_handle |= r->type == STORE_REC_GPU_LAUNCH && !by_handle && handle_of(c, r, &h);
	}
	if (!cupti || !by_handle)
		return 0;
	if ((err = gpu_match_build(c, &m)) < 0)
		return err;
	*ret = m.name;
	m.name = NULL;
	gpu_match_finish(&m);
	return 0;
}
