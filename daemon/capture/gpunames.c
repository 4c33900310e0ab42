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

/*
 * The handle of a launch named "0x<hex>" (the launch collector's name for
 * a kernel it has no name for, possibly followed by a NUL and the launch
 * geometry), in *h. False for any other name, and for handle 0 (nothing
 * the driver hands out).
 */
static bool handle_of(const struct capture *c, const struct store_rec *r, uint64_t *h)
{
	size_t len, i;
	const char *s = capture_str(c, r->name, &len);
	uint64_t v = 0;

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
	*h = v;
	return i > 2 && v;
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

/* (pid, uid, handle) -> name, open addressing; name 0 = empty slot. */
struct hname {
	uint64_t handle;
	uint32_t pid, uid, name;
};

struct htab {
	struct hname *v;
	size_t mask;
};

static size_t hslot(const struct htab *t, uint32_t pid, uint32_t uid, uint64_t h)
{
	uint64_t x = (h ^ ((uint64_t)pid << 32 | uid)) * 0x9E3779B97F4A7C15ull;
	size_t s = (size_t)(x ^ (x >> 29)) & t->mask;

	while (t->v[s].name && (t->v[s].handle != h || t->v[s].pid != pid || t->v[s].uid != uid))
		s = (s + 1) & t->mask;
	return s;
}

/* A CUPTI kernel interval joined to its launch: the launch and its name to
 * learn. False for anything else. */
static bool joined_kernel(const struct capture *c, const struct gpu_match *m, size_t i,
			  uint32_t *launch)
{
	const struct store_rec *r = &c->recs[i], *l;

	if (!gpu_is_cupti(r) || (r->cpu & 0xff) != GPU_CUPTI_KERNEL || !r->name || !m->count[i])
		return false;
	*launch = m->launch[m->first[i]];
	l = &c->recs[*launch];
	/* the join is within one pid already; a name is also only taken
	 * from records of the launch's own owner */
	return l->pid == r->pid && l->uid == r->uid;
}

int gpu_match_names(const struct capture *c, struct gpu_match *m)
{
	struct htab t = {0};
	size_t nlearn = 0, cap = 16;
	uint32_t *name;
	uint64_t h;

	for (size_t i = 0; i < c->nrecs; i++)
		nlearn += gpu_is_cupti(&c->recs[i]) && m->count[i];
	if (!nlearn)
		return 0;
	/* sized by the launches that can teach a name: at most half full */
	while (cap < 2 * nlearn)
		cap *= 2;
	name = calloc(c->nrecs + 1, sizeof(*name));
	t.v = calloc(cap, sizeof(*t.v));
	t.mask = cap - 1;
	if (!name || !t.v) {
		free(name);
		free(t.v);
		return -ENOMEM;
	}
	/* what each joined launch's interval calls it, and its handle */
	for (size_t i = 0; i < c->nrecs; i++) {
		uint32_t l;

		if (!joined_kernel(c, m, i, &l) || !handle_of(c, &c->recs[l], &h))
			continue;
		offer(c, &name[l], c->recs[i].name);
	}
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		size_t s;

		if (!name[i] || r->type != STORE_REC_GPU_LAUNCH || !handle_of(c, r, &h))
			continue;
		s = hslot(&t, r->pid, r->uid, h);
		if (!t.v[s].name)
			t.v[s] = (struct hname){h, r->pid, r->uid, 0};
		if (name[i] == AMBIGUOUS)
			t.v[s].name = AMBIGUOUS;
		else
			offer(c, &t.v[s].name, name[i]);
	}
	/* the rest of the same (pid, owner, handle); ambiguity undone */
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->type != STORE_REC_GPU_LAUNCH)
			continue;
		if (name[i]) {
			if (name[i] == AMBIGUOUS)
				name[i] = 0;
			else
				m->nnamed_join++;
			continue;
		}
		if (!handle_of(c, r, &h))
			continue;
		size_t s = hslot(&t, r->pid, r->uid, h);
		if (t.v[s].name && t.v[s].name != AMBIGUOUS) {
			name[i] = t.v[s].name;
			m->nnamed_handle++;
		}
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
	bool cupti = false;
	int err;

	*ret = NULL;
	for (size_t i = 0; i < c->nrecs && !cupti; i++)
		cupti = gpu_is_cupti(&c->recs[i]);
	if (!cupti)
		return 0;
	if ((err = gpu_match_build(c, &m)) < 0)
		return err;
	*ret = m.name;
	m.name = NULL;
	gpu_match_finish(&m);
	return 0;
}
