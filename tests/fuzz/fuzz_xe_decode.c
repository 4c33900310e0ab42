// SPDX-License-Identifier: MIT
/*
 * The Intel Xe EU-stall record decoders (daemon/xe/decode.c: PVC, Xe2/Xe3,
 * Xe3p) and the attribution path behind them (core.c, prof.c): the kernel
 * interval table, the deferral ring, the aggregation rows and the export
 * of a window as a CAPSEC_XE_EU_STALL section.
 *
 * Input:
 *   byte 0   bits 0-1 the decoder (pvc, xe2, xe3p; 3 = by graphics version
 *            from byte 1), bits 2-3 the record stride (64, 32, 128, 24),
 *            bits 4-7 smaller table limits, a short interval, an epoch
 *   byte 1   graphics IP major (for bits 0-1 == 3); low 3 bits also the
 *            number of kernels
 *   kernels  n x 24 bytes: gpu_addr u64, iba u64, size u32, pid u8,
 *            flags u8 (names, stack depth), time step u16
 *   records  the rest, ingested in batches whose size and clock come from
 *            the kernels' bytes; kernels of one pid are forgotten midway.
 * Then: every record is accounted for (empty + attributed + unattributed +
 * waiting == records), the exported section decodes and every writer runs
 * over it.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "output.h"
#include "section.h"
#include "xe.h"

#define NS_IV 100000000ull

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int sink(void *ctx, const void *buf, size_t len)
{
	(void)buf;
	*(size_t *)ctx += len;
	return 0;
}

static const char *names[] = {NULL, "gemm_kernel", "", "softmax\ttab\nnewline;semi"};

static void check_accounting(struct xe *x)
{
	struct xe_stats st;

	xe_get_stats(x, &st);
	if (st.empty + st.attributed + st.unattributed + st.deferred_now != st.records) {
		fprintf(stderr, "records %llu != empty %llu + attributed %llu + unattributed %llu"
				" + waiting %llu\n",
			(unsigned long long)st.records, (unsigned long long)st.empty,
			(unsigned long long)st.attributed, (unsigned long long)st.unattributed,
			(unsigned long long)st.deferred_now);
		abort();
	}
	if (st.late_attributed > st.attributed || st.late_attributed > st.deferred)
		abort();
}

static void export_and_render(struct xe *x, uint64_t t1, const struct xe_export_filter *f)
{
	struct xe_capdata cd;
	struct xe_out_totals t;
	char why[256];
	void *buf = NULL;
	size_t len = 0, out = 0;

	if (xe_export(x, 0, t1, f, &buf, &len) < 0)
		return;
	if (!len) {
		free(buf);
		return;
	}
	if (xe_sec_decode(buf, len, &cd, why, sizeof(why)) < 0) {
		fprintf(stderr, "exported section does not decode: %s\n", why);
		abort();
	}
	struct xe_out_opts o = {.cgroup = len & 1, .pid = 0, .bucket_ns = NS_IV};

	if (xe_write_folded(&cd, &o, NULL, NULL, sink, &out, &t) < 0 ||
	    xe_write_iaprof(&cd, &o, NULL, NULL, sink, &out, &t) < 0 ||
	    xe_write_flamescope(&cd, &o, sink, &out, &t) < 0)
		abort();
	xe_sec_finish(&cd);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const decs[] = {"pvc", "xe2", "xe3p"};
	static const size_t strides[] = {64, 32, 128, 24};
	const struct xe_decoder *d;
	struct xe *x;

	if (size < 2)
		return 0;
	uint8_t sel = data[0], ver = data[1];
	size_t stride = strides[(sel >> 2) & 3];

	if ((sel & 3) == 3) {
		d = xe_decoder_find(ver, data[1] ^ 0x3c);
		if (!d)
			return 0;
	} else {
		d = xe_decoder_by_name(decs[sel & 3]);
	}
	if (!d)
		abort();
	/* Every layout reads its first 24 bytes (Xe3p: three words). */
	if (stride < 24)
		abort();

	/* Tables far below the defaults (32 MiB of rows): each exec stays
	 * fast, and the full-table paths are reached. */
	struct xe_config cfg = {.max_kernels = 64, .max_deferred = 256, .max_rows = 1024};

	if (sel & 0x10) {
		cfg.max_kernels = 4;
		cfg.max_deferred = 4;
	}
	if (sel & 0x20) {
		cfg.max_rows = 8;
		cfg.defer_intervals = 2;
	}
	if (sel & 0x40)
		cfg.interval_ns = 1000;
	if (xe_new(&cfg, sel & 0x80 ? 5 * NS_IV : 0, &x) < 0)
		return 0;

	/* the decoder alone on the first record: the fields stay in range */
	if (size >= 2 + 64) {
		struct xe_sample s;

		d->decode(data + 2, &s);
		if (d->ip_bits < 64 && (s.ip >> d->ip_bits))
			abort();
		if (s.ex_id > 7 || s.end_flag > 1)
			abort();
	}

	size_t nk = ver & 7, off = 2;
	uint16_t steps[8] = {0};
	uint8_t rmpid = 0;
	uint64_t stack[4];

	for (size_t i = 0; i < nk && off + 24 <= size; i++, off += 24) {
		const uint8_t *p = data + off;
		uint8_t flags = p[21];

		for (int j = 0; j < 4; j++)
			stack[j] = rd64(p) + (uint64_t)j * 16;
		struct xe_kernel_info k = {
		    .gpu_addr = rd64(p),
		    .iba = rd64(p + 8),
		    .size = rd32(p + 16),
		    .pid = p[20],
		    .uid = p[20] & 3,
		    .name = names[flags & 3],
		    .file = names[(flags >> 2) & 3],
		    .comm = names[(flags >> 4) & 3],
		    .cgroup = flags & 0x40 ? "/system.slice/a.service" : NULL,
		    .ustack = stack,
		    .nustack = (uint16_t)((flags >> 6) & 3),
		};
		steps[i] = (uint16_t)(p[22] | p[23] << 8);
		if (i == 0)
			rmpid = p[20];
		int r = xe_ktab_add(x, &k);

		if (r < 0 && r != -EINVAL && r != -ENOSPC && r != -ENOMEM)
			abort();
	}

	/* the records, in up to 8 batches at advancing times */
	uint64_t now = 0;
	size_t left = size - off;
	const uint8_t *rec = data + off;

	for (int b = 0; b < 8 && left; b++) {
		size_t want = b == 7 ? left : (size_t)(steps[b] % 16 + 1) * stride;

		if (want > left)
			want = left;
		size_t n = xe_ingest(x, d, rec, want, stride, now);

		if (n != want / stride)
			abort();
		rec += want;
		left -= want;
		now += (uint64_t)steps[b] * (NS_IV / 64);
		if (b == 3)
			xe_ktab_remove_pid(x, rmpid);
		check_accounting(x);
	}

	struct xe_export_filter f = {.uid_filter = true, .uid = 1};

	export_and_render(x, now, &f);
	xe_retry_deferred(x, now, sel & 1);
	check_accounting(x);
	export_and_render(x, now + NS_IV, NULL);
	xe_retry_deferred(x, now, true);
	check_accounting(x);
	{
		struct xe_stats st;

		xe_get_stats(x, &st);
		if (st.deferred_now)
			abort();
	}
	xe_free(x);
	return 0;
}
