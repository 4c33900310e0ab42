// SPDX-License-Identifier: MIT
/*
 * EU-stall samples of the pprof export (pprof.c): the capture's
 * CAPSEC_XE_EU_STALL rows summed over intervals per (kernel, instruction
 * offset), one Sample each with one value per stall reason. Stack, leaf
 * first: the instruction as a location in the kernel's GPU mapping
 * (address = kernel start + offset, function "NAME_[G]"), then the CPU
 * stack that launched the kernel, resolved through the capture's symbols
 * like every other stack (capframes). Unattributed rows: one location
 * "[unattributed]_[G]" at the IBA-relative address, pid 0.
 */
#include "pprof_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "section.h"

struct xe_sums {
	struct bmap keys; /* (kid, off) */
	uint64_t (*cnt)[XE_NREASONS];
	size_t cap;
};

static int sums_add(struct xe_sums *s, const struct xe_row *row)
{
	uint32_t key[2] = {row->kid, row->off};
	uint32_t id = bmap_intern(&s->keys, key, sizeof(key), NULL);
	if (!id)
		return -ENOMEM;
	if (id > s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 1024;
		uint64_t(*nv)[XE_NREASONS] = realloc(s->cnt, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		memset(nv + s->cap, 0, (nc - s->cap) * sizeof(*nv));
		s->cnt = nv;
		s->cap = nc;
	}
	for (int r = 0; r < XE_NREASONS; r++)
		s->cnt[id - 1][r] += row->cnt[r];
	return 0;
}

/* The instruction's location: "NAME_[G]" (or "0xSTART_[G]") in the
 * kernel's mapping, or the unattributed pseudo-kernel. */
static uint64_t gpu_loc(struct pprof *x, const struct xe_sec_kernel *k, uint32_t off)
{
	char name[512];
	size_t nl;
	const char *s = k ? xe_sec_str(x->xe, k->name, &nl) : "[unattributed]";
	if (!k)
		nl = strlen(s);
	if (k && !nl)
		nl = (size_t)snprintf(name, sizeof(name), "0x%" PRIx64, k->start);
	else
		memcpy(name, s, nl < sizeof(name) - 5 ? nl : (nl = sizeof(name) - 5));
	memcpy(name + nl, "_[G]", 4);
	if (!k)
		return pprof_loc(x, name, nl + 4, off, 0, NULL, 0, 0);
	return pprof_loc(x, name, nl + 4, k->start + off, pprof_map(x, PMAP_GPU, k->id), NULL, 0,
			 0);
}

int pprof_xe_samples(struct pprof *x, struct pb *out, size_t iv0, size_t nv, uint64_t *events)
{
	const struct xe_capdata *d = x->xe;
	struct xe_sums s = {0};
	uint64_t vals[PPROF_MAX_VALUES];
	int r = 0;

	bmap_init(&s.keys);
	for (uint32_t i = 0; i < d->h->nrows && r == 0; i++)
		r = sums_add(&s, &d->rows[i]);
	for (uint32_t id = 1; r == 0 && id <= s.keys.n; id++) {
		size_t kl, comml = 0;
		uint32_t key[2];
		memcpy(key, bmap_key(&s.keys, id, &kl), sizeof(key));
		const struct xe_sec_kernel *k = xe_sec_kernel(d, key[0]);
		const char *comm = k ? xe_sec_str(d, k->comm, &comml) : "[unattributed]";
		x->locv[0] = gpu_loc(x, k, key[1]);
		/* a linked launch stack resolves like any stack of the capture;
		 * one from a section written before stacks were linked stays raw */
		if (k && k->stack)
			capframes_get(x->f, k->pid, k->stack);
		else if (k)
			capframes_raw(x->f, d->ips + k->ips_off, k->nips);
		else
			x->f->n = 0;
		size_t n = pprof_frames(x, x->f, 1);
		memset(vals, 0, sizeof(vals));
		for (int rr = 0; rr < XE_NREASONS && iv0 + rr < nv; rr++)
			vals[iv0 + rr] = s.cnt[id - 1][rr];
		pprof_sample(x, out, n, vals, nv, k ? k->pid : 0, comm, k ? comml : strlen(comm));
		(*events)++;
	}
	bmap_finish(&s.keys);
	free(s.cnt);
	return r;
}
