// SPDX-License-Identifier: MIT
/*
 * capture_add_stacks(): stacks that sections other than RECORDS refer to
 * (the EU-stall profile's launch stacks) join the capture's own table, so
 * the symbolizer and the renderers treat them like any record's stack.
 */
#include "capture/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static uint64_t stack_hash(const uint64_t *ips, uint16_t nu, uint16_t nk)
{
	uint64_t h = ((uint64_t)nu << 16 | nk) * 0x9E3779B97F4A7C15ull;
	for (size_t i = 0; i < (size_t)nu + nk; i++)
		h = (h ^ ips[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static bool same(const struct capture *c, uint32_t id, const struct capture_newstack *s)
{
	uint16_t nu, nk;
	const uint64_t *ips = capture_stack(c, id, &nu, &nk);
	size_t k = (size_t)s->nuser + s->nkernel;
	return ips && nu == s->nuser && nk == s->nkernel &&
	       (!k || !memcmp(ips, s->ips, k * sizeof(*ips)));
}

int capture_add_stacks(struct capture *c, const struct capture_newstack *in, size_t n,
		       uint32_t *ids)
{
	size_t frames = 0, cap = 16;
	for (size_t i = 0; i < n; i++)
		frames += (size_t)in[i].nuser + in[i].nkernel;
	if (c->nstacks + n > UINT32_MAX / 2 || c->nips + frames > UINT32_MAX)
		return -E2BIG;
	while (cap < 2 * ((size_t)c->nstacks + n))
		cap *= 2;
	uint32_t *slot = calloc(cap, sizeof(*slot)); /* stack id, 0 = empty */
	uint64_t *ips = realloc(c->ips, (c->nips + frames + 1) * sizeof(*ips));
	if (ips)
		c->ips = ips;
	struct capture_stack *st =
		ips ? realloc(c->stacks, ((size_t)c->nstacks + n + 1) * sizeof(*st)) : NULL;
	if (st)
		c->stacks = st;
	struct capture_stackref *refs =
		st ? realloc(c->stackrefs, (c->nstackrefs + n + 1) * sizeof(*refs)) : NULL;
	if (refs)
		c->stackrefs = refs;
	if (!slot || !refs) {
		free(slot);
		return -ENOMEM; /* the tables may have grown; their contents are intact */
	}
	for (uint32_t id = 1; id <= c->nstacks; id++) {
		uint16_t nu, nk;
		const uint64_t *p = capture_stack(c, id, &nu, &nk);
		if (!p)
			continue;
		size_t s = stack_hash(p, nu, nk) & (cap - 1);
		while (slot[s])
			s = (s + 1) & (cap - 1);
		slot[s] = id;
	}
	for (size_t i = 0; i < n; i++) {
		const struct capture_newstack *ns = &in[i];
		size_t s = stack_hash(ns->ips, ns->nuser, ns->nkernel) & (cap - 1);
		while (slot[s] && !same(c, slot[s], ns))
			s = (s + 1) & (cap - 1);
		if (!slot[s]) {
			size_t k = (size_t)ns->nuser + ns->nkernel;
			if (k)
				memcpy(c->ips + c->nips, ns->ips, k * sizeof(*c->ips));
			c->stacks[c->nstacks] =
				(struct capture_stack){(uint32_t)c->nips, ns->nuser, ns->nkernel};
			c->nips += k;
			slot[s] = ++c->nstacks;
		}
		ids[i] = slot[s];
		c->stackrefs[c->nstackrefs++] =
			(struct capture_stackref){ns->pid, ns->uid, slot[s]};
	}
	free(slot);
	return 0;
}
