// SPDX-License-Identifier: MIT
/*
 * The CAPSEC_XE_EU_STALL section loader, xe_sec_decode() (daemon/xe/
 * section.c). A section that decodes is then read the way the RPC methods
 * read it: kernel look-ups by every row's id, every kernel's strings and
 * launch stack, and the three writers (folded with and without the cgroup
 * root and a pid filter, iaprof, flamescope with a bucket taken from the
 * input) into a sink that reads every byte it is given.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "section.h"

static int sink(void *ctx, const void *buf, size_t len)
{
	const volatile uint8_t *p = buf;
	uint8_t acc = 0;

	for (size_t i = 0; i < len; i++)
		acc ^= p[i];
	*(size_t *)ctx += len + acc * 0;
	return 0;
}

static void touch(const struct xe_capdata *d, struct xe_sec_str s)
{
	size_t len;
	const char *p = xe_sec_str(d, s, &len);

	if (len)
		(void)((const volatile char *)p)[0], (void)((const volatile char *)p)[len - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xe_capdata d;
	struct xe_out_totals t;
	char why[256];
	size_t out = 0;

	int r = xe_sec_decode(data, size, &d, why, sizeof(why));
	if (r < 0) {
		if (r != -EBADMSG && r != -ENOMEM)
			abort();
		if (d.mem || d.h)
			abort(); /* a failed decode leaves nothing to free */
		return 0;
	}
	for (uint32_t i = 0; i < d.h->nkernels; i++) {
		const struct xe_sec_kernel *k = &d.k[i];

		if (xe_sec_kernel(&d, k->id) != k)
			abort();
		touch(&d, k->name);
		touch(&d, k->file);
		touch(&d, k->comm);
		touch(&d, k->cgroup);
		for (uint16_t j = 0; j < k->nips; j++)
			(void)((const volatile uint64_t *)d.ips)[k->ips_off + j];
	}
	for (uint32_t i = 0; i < d.h->nrows; i++)
		if (d.rows[i].kid && !xe_sec_kernel(&d, d.rows[i].kid))
			abort();
	if (xe_sec_kernel(&d, 0))
		abort();

	uint32_t pid = d.h->nkernels ? d.k[0].pid : 0;
	struct xe_out_opts o[] = {
	    {0},
	    {.cgroup = true, .pid = pid},
	    {.pid = pid + 1, .bucket_ns = d.h->interval_ns ^ d.h->epoch_ns},
	};
	/* Flamescope prints one line per bucket from the first to the last
	 * sample (up to 2^22 of them, by design): keep the span to a few
	 * thousand buckets so each exec stays fast. */
	uint64_t t0 = UINT64_MAX, t1 = 0;

	for (uint32_t i = 0; i < d.h->nrows; i++) {
		uint64_t ns = (uint64_t)d.rows[i].iv * d.h->interval_ns;

		t0 = ns < t0 ? ns : t0;
		t1 = ns > t1 ? ns : t1;
	}
	uint64_t min_bucket = t1 > t0 ? (t1 - t0) / 4096 + 1 : 1;

	for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++) {
		uint64_t b = o[i].bucket_ns ? o[i].bucket_ns : 100000000ull;

		if (b < min_bucket)
			o[i].bucket_ns = min_bucket;
		r = xe_write_folded(&d, &o[i], NULL, NULL, sink, &out, &t);
		if (r < 0 && r != -ENOMEM)
			abort();
		r = xe_write_iaprof(&d, &o[i], NULL, NULL, sink, &out, &t);
		if (r < 0 && r != -ENOMEM)
			abort();
		r = xe_write_flamescope(&d, &o[i], sink, &out, &t);
		if (r < 0 && r != -ENOMEM && r != -EFBIG && r != -E2BIG)
			abort();
	}
	xe_sec_finish(&d);
	if (d.mem || d.h)
		abort();
	return 0;
}
