// SPDX-License-Identifier: MIT
/*
 * Flamescope: the profile cut into fixed buckets (default 100 ms) so a
 * sub-second heat map can show when stalls happened, one TSV line per
 * bucket from the first to the last with samples (empty buckets included:
 * a heat map needs the gaps).
 */
#include "output.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int xe_write_flamescope(const struct xe_capdata *d, const struct xe_out_opts *o, xe_write_fn fn,
			void *ctx, struct xe_out_totals *t)
{
	uint32_t n = d->h ? d->h->nrows : 0;
	uint64_t bucket = o && o->bucket_ns ? o->bucket_ns : 100000000ull;
	uint64_t t0 = UINT64_MAX, t1 = 0, nb;
	struct xe_out_totals tot = {0};
	uint64_t(*sum)[XE_NREASONS] = NULL;
	uint32_t *top = NULL;
	char line[1024];
	int r = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t ns = (uint64_t)d->rows[i].iv * d->h->interval_ns;

		t0 = ns < t0 ? ns : t0;
		t1 = ns > t1 ? ns : t1;
	}
	static const char hdr[] = "# t_ms\ttotal\tactive\tcontrol\tpipestall\tsend\tdist_acc"
				  "\tsbid\tsync\tinst_fetch\tother\ttdr\ttop_kernel\n";

	r = fn(ctx, hdr, sizeof(hdr) - 1);
	if (r < 0 || !n)
		goto out;
	nb = (t1 - t0) / bucket + 1;
	if (nb > (1u << 22)) {
		r = -E2BIG; /* a bucket too small for the window */
		goto out;
	}
	sum = calloc(nb, sizeof(*sum));
	top = calloc(nb, sizeof(*top));
	if (!sum || !top) {
		r = -ENOMEM;
		goto out;
	}
	/* Rows are sorted by kernel: one pass per kernel, keeping per bucket
	 * the kernel with the most samples so far. */
	uint64_t *best = calloc(nb, sizeof(*best));
	uint64_t *cur = calloc(nb, sizeof(*cur));

	if (!best || !cur) {
		free(best);
		free(cur);
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i, kid = d->rows[i].kid;
		const struct xe_sec_kernel *k = xe_sec_kernel(d, kid);

		while (j < n && d->rows[j].kid == kid)
			j++;
		if (o && o->pid && (!k || k->pid != o->pid)) {
			i = j;
			continue;
		}
		memset(cur, 0, nb * sizeof(*cur));
		for (uint32_t q = i; q < j; q++) {
			const struct xe_row *rw = &d->rows[q];
			uint64_t b = ((uint64_t)rw->iv * d->h->interval_ns - t0) / bucket;

			for (int rr = 0; rr < XE_NREASONS; rr++) {
				sum[b][rr] += rw->cnt[rr];
				cur[b] += rw->cnt[rr];
			}
		}
		for (uint64_t b = 0; b < nb; b++) {
			if (cur[b] > best[b]) {
				best[b] = cur[b];
				top[b] = kid;
			}
		}
		i = j;
	}
	free(best);
	free(cur);
	for (uint64_t b = 0; b < nb && r == 0; b++) {
		uint64_t total = 0;
		int len;
		const struct xe_sec_kernel *k = xe_sec_kernel(d, top[b]);
		const char *name = "-";
		size_t nlen = 1;

		for (int rr = 0; rr < XE_NREASONS; rr++)
			total += sum[b][rr];
		if (total && k)
			name = xe_sec_str(d, k->name, &nlen);
		else if (total)
			name = "[unattributed]", nlen = strlen(name);
		if (!nlen)
			name = "[unnamed]", nlen = strlen(name);
		len = snprintf(line, sizeof(line), "%" PRIu64 "\t%" PRIu64, b * bucket / 1000000,
			       total);
		for (int rr = 0; rr < XE_NREASONS; rr++)
			len += snprintf(line + len, sizeof(line) - (size_t)len, "\t%" PRIu64,
					sum[b][rr]);
		len += snprintf(line + len, sizeof(line) - (size_t)len, "\t%.*s\n",
				(int)(nlen > 512 ? 512 : nlen), name);
		/* tabs or newlines in a name would break the columns */
		for (int c = len - 2; c > 0 && line[c] != '\t'; c--)
			if ((unsigned char)line[c] < 0x20)
				line[c] = ' ';
		r = fn(ctx, line, (size_t)len);
		tot.lines++;
		tot.samples += total;
	}
out:
	if (t)
		*t = tot;
	free(sum);
	free(top);
	return r;
}
