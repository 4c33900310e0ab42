// SPDX-License-Identifier: MIT
/*
 * Decode + attribute throughput on one core: Xe2 records spread over 64
 * kernels of 16 KiB each (plus 1 % with no kernel, which defer), fed in
 * 256 KiB batches as the stream reads them. Prints records/s.
 *
 *   bench_xe [records=50000000] [layout=xe2] [spread=hot|uniform]
 *
 * hot: each kernel's samples fall in a 2 KiB hot loop (256 instructions),
 * as stalls concentrate in practice; uniform: anywhere in its 16 KiB, the
 * worst case for the aggregation table (every sample a cache miss).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"
#include "xe.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void put_bits(uint8_t *rec, unsigned lo, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++, lo++)
		if ((v >> i) & 1)
			rec[lo / 8] |= (uint8_t)(1u << (lo % 8));
}

int main(int argc, char **argv)
{
	uint64_t total = argc > 1 ? strtoull(argv[1], NULL, 10) : 50000000ull;
	const char *lay = argc > 2 ? argv[2] : "xe2";
	bool uniform = argc > 3 && !strcmp(argv[3], "uniform");
	const struct xe_decoder *d = xe_decoder_by_name(lay);
	const uint64_t iba = 0x800000000000ull;
	const size_t batch = 4096; /* records: 256 KiB */
	uint8_t *buf = calloc(batch, 64);
	struct xe *x;
	struct xe_stats st;
	bool xe3p = !strcmp(lay, "xe3p");

	if (!d || !buf || xe_new(NULL, 0, &x) < 0)
		return 1;
	for (unsigned k = 0; k < 64; k++) {
		char name[32];

		snprintf(name, sizeof(name), "kernel_%u", k);
		xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = iba + 0x100000 + k * 0x4000ull,
							.size = 0x4000, .iba = iba, .pid = 1,
							.name = name});
	}
	srand(1);
	for (size_t i = 0; i < batch; i++) {
		uint8_t *r = buf + i * 64;
		/* runs of 16 records in one kernel, like a busy EU's samples */
		unsigned k = (unsigned)(i / 16) % 64, off = (unsigned)(rand() % (uniform ? 0x4000 : 0x800)) & ~7u;
		uint64_t addr = 0x100000 + k * 0x4000ull + off;

		if (i % 100 == 99)
			addr = 0x40000000 - 8 * i; /* no kernel there */
		put_bits(r, 0, xe3p ? 61 : 29, addr >> 3);
		/* "other" and "sync": bits 37 / 85, or 69 / 117 on Xe3p (Xe PRMs) */
		put_bits(r, xe3p ? 69 : 37, 8, 1 + (unsigned)rand() % 3);
		put_bits(r, xe3p ? 117 : 85, 8, (unsigned)rand() % 2);
	}
	double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t done = 0, ns = 0;

	while (done < total) {
		/* a read every 2 ms of simulated time: rows follow intervals */
		done += xe_ingest(x, d, buf, batch * 64, 64, ns);
		ns += 2000000;
	}
	double dt = clock_s(CLOCK_MONOTONIC) - t0, dc = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;

	xe_get_stats(x, &st);
	/* CPU time too: on a shared machine wall time counts other tenants */
	printf("xe decode+attribute (%s, %s): %llu records in %.3f s = %.1f M records/s "
	       "(CPU %.3f s = %.1f M records/s; attributed %llu, deferred/unattributed %llu, "
	       "rows %llu, evicted %llu)\n",
	       d->name, uniform ? "uniform" : "hot", (unsigned long long)done, dt, done / dt / 1e6,
	       dc, done / dc / 1e6,
	       (unsigned long long)st.attributed,
	       (unsigned long long)(st.deferred_now + st.unattributed),
	       (unsigned long long)st.rows, (unsigned long long)st.rows_evicted);
	xe_free(x);
	free(buf);
	return 0;
}
