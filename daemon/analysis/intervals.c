// SPDX-License-Identifier: MIT
/*
 * The analysis framework: GPU rows in time order across streams, HTA's
 * interval union (4.12) and measures over it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int gpu_merge_init(struct gpu_merge *m, const struct tl_rank *r)
{
	*m = (struct gpu_merge){.r = r};
	if (!r->nstreams)
		return 0;
	if (!(m->h = malloc(r->nstreams * sizeof(*m->h))))
		return -ENOMEM;
	for (uint32_t j = 0; j < r->nstreams; j++) {
		const struct tl_stream *st = &r->streams[j];
		struct gm_head x;
		uint32_t i;

		if (!st->count)
			continue;
		x = (struct gm_head){ev_ts(r, &r->ev[r->by_stream[st->first]]), j, st->first,
				     st->first + st->count};
		/* sift up */
		for (i = m->n++; i > 0; i = (i - 1) / 2) {
			struct gm_head *p = &m->h[(i - 1) / 2];

			if (gm_before(p, &x))
				break;
			m->h[i] = *p;
		}
		m->h[i] = x;
	}
	return 0;
}

void gpu_merge_free(struct gpu_merge *m)
{
	free(m->h);
	m->h = NULL;
	m->n = 0;
}

int gpu_unions(struct actx *c, const struct tl_rank *r, uint32_t want, int64_t u[1u << KT_COUNT],
	       uint32_t rows[KT_COUNT])
{
	enum { NSETS = 1u << KT_COUNT };
	struct ival_acc acc[NSETS] = {0};
	uint8_t sets[KT_COUNT][NSETS], nsets[KT_COUNT] = {0};
	struct gpu_merge m;
	const struct tl_event *e;
	bool bad = false;

	for (unsigned S = 1; S < NSETS; S++)
		for (int t = 0; t < KT_COUNT; t++)
			if ((want >> S & 1) && (S >> t & 1))
				sets[t][nsets[t]++] = (uint8_t)S;
	if (gpu_merge_init(&m, r) < 0)
		return -ENOMEM;
	while ((e = gpu_merge_next(&m))) {
		enum ktype t = ktype_of(c, e->name);
		int64_t s, d;

		if (!nsets[t])
			continue;
		s = ev_ts(r, e);
		d = ev_dur(r, e);
		if ((bad = d < 0 || m.unsorted))
			break;
		rows[t]++;
		for (unsigned i = 0; i < nsets[t]; i++)
			ival_acc_add(&acc[sets[t][i]], s, s + d);
	}
	bad |= m.unsorted;
	gpu_merge_free(&m);
	if (bad)
		return 1;
	for (unsigned S = 0; S < NSETS; S++)
		u[S] = ival_acc_total(&acc[S]);
	return 0;
}

size_t ival_merge(struct ival *v, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	ival_sort(v, n);
	/* A row opens a new group only when it starts after every earlier end:
	 * touching intervals merge, and the result ignores tie order (4.12). */
	for (size_t i = 1; i < n; i++) {
		if (v[i].s <= v[k].e) {
			if (v[i].e > v[k].e)
				v[k].e = v[i].e;
		} else {
			v[++k] = v[i];
		}
	}
	return k + 1;
}

int64_t ival_total(const struct ival *v, size_t n)
{
	int64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += v[i].e - v[i].s;
	return t;
}

int64_t ival_overlap(const struct ival *a, size_t na, const struct ival *b, size_t nb)
{
	size_t i = 0, j = 0;
	int64_t t = 0;

	while (i < na && j < nb) {
		int64_t s = a[i].s > b[j].s ? a[i].s : b[j].s;
		int64_t e = a[i].e < b[j].e ? a[i].e : b[j].e;

		if (e > s)
			t += e - s;
		if (a[i].e < b[j].e)
			i++;
		else
			j++;
	}
	return t;
}
