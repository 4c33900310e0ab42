// SPDX-License-Identifier: MIT
/*
 * numpy 1.24's argsort(kind="quicksort") for int64 keys: introsort with
 * median-of-3 pivots, insertion sort below 16 elements and a heapsort
 * fallback (numpy/core/src/npysort/quicksort.cpp, aquicksort_ and
 * heapsort.cpp, aheapsort_). It is not stable; HTA's queue-length series
 * (HTA's queue length) depend on the order it leaves equal timestamps in, so the
 * exact algorithm is reproduced rather than any stable sort.
 */
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

#define SMALL_QUICKSORT 15
#define PYA_QS_STACK 128

#define SWAP(a, b)                 \
	do {                       \
		uint32_t _t = (a); \
		(a) = (b);         \
		(b) = _t;          \
	} while (0)

static void aheapsort(const int64_t *v, uint32_t *tosort, ptrdiff_t n)
{
	uint32_t *a = tosort - 1; /* 1-based heap indexing, as numpy */
	uint32_t tmp;
	ptrdiff_t i, j, l;

	for (l = n >> 1; l > 0; --l) {
		tmp = a[l];
		for (i = l, j = l << 1; j <= n;) {
			if (j < n && v[a[j]] < v[a[j + 1]])
				j += 1;
			if (v[tmp] < v[a[j]]) {
				a[i] = a[j];
				i = j;
				j += j;
			} else {
				break;
			}
		}
		a[i] = tmp;
	}
	for (; n > 1;) {
		tmp = a[n];
		a[n] = a[1];
		n -= 1;
		for (i = 1, j = 2; j <= n;) {
			if (j < n && v[a[j]] < v[a[j + 1]])
				j++;
			if (v[tmp] < v[a[j]]) {
				a[i] = a[j];
				i = j;
				j += j;
			} else {
				break;
			}
		}
		a[i] = tmp;
	}
}

static int msb(size_t n)
{
	int depth = 0;

	while (n >>= 1)
		depth++;
	return depth;
}

void np_argsort_i64(const int64_t *v, uint32_t *idx, size_t num)
{
	uint32_t *pl, *pr, *pm, *pi, *pj, *pk, vi;
	uint32_t *stack[PYA_QS_STACK], **sptr = stack;
	int depth[PYA_QS_STACK], *psdepth = depth;
	int cdepth;
	int64_t vp;

	for (size_t i = 0; i < num; i++)
		idx[i] = (uint32_t)i;
	if (num < 2)
		return;
	pl = idx;
	pr = idx + num - 1;
	cdepth = msb(num) * 2;
	for (;;) {
		if (cdepth < 0) {
			aheapsort(v, pl, pr - pl + 1);
			goto stack_pop;
		}
		while ((pr - pl) > SMALL_QUICKSORT) {
			pm = pl + ((pr - pl) >> 1);
			if (v[*pm] < v[*pl])
				SWAP(*pm, *pl);
			if (v[*pr] < v[*pm])
				SWAP(*pr, *pm);
			if (v[*pm] < v[*pl])
				SWAP(*pm, *pl);
			vp = v[*pm];
			pi = pl;
			pj = pr - 1;
			SWAP(*pm, *pj);
			for (;;) {
				do
					++pi;
				while (v[*pi] < vp);
				do
					--pj;
				while (vp < v[*pj]);
				if (pi >= pj)
					break;
				SWAP(*pi, *pj);
			}
			pk = pr - 1;
			SWAP(*pi, *pk);
			/* push the larger partition */
			if (pi - pl < pr - pi) {
				*sptr++ = pi + 1;
				*sptr++ = pr;
				pr = pi - 1;
			} else {
				*sptr++ = pl;
				*sptr++ = pi - 1;
				pl = pi + 1;
			}
			*psdepth++ = --cdepth;
		}
		/* insertion sort */
		for (pi = pl + 1; pi <= pr; ++pi) {
			vi = *pi;
			vp = v[vi];
			pj = pi;
			pk = pi - 1;
			while (pj > pl && vp < v[*pk])
				*pj-- = *pk--;
			*pj = vi;
		}
	stack_pop:
		if (sptr == stack)
			break;
		pr = *(--sptr);
		pl = *(--sptr);
		cdepth = *(--psdepth);
	}
}
