// SPDX-License-Identifier: MIT
/*
 * Xe EU-stall unit tests, all hardware-free: the per-generation record
 * decoders, the kernel interval table and weak (batch-buffer) kernels, and
 * probing on this host. Attribution: test_xe_attr.c; the stream state
 * machine: test_xe_stream.c.
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

#include "decode.h"
#include "device.h"
#include "xe.h"
#include "xe_int.h"
#include "xe_test_util.h"

static void test_decoders(void)
{
	for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); l++) {
		const struct layout *L = &layouts[l];
		const struct xe_decoder *d = xe_decoder_by_name(L->dec);
		uint8_t rec[64];
		struct xe_sample s;

		CHECK(d != NULL);
		if (!d)
			continue;
		CHECK_EQ_INT(d->ip_bits, L->ip_bits);
		/* distinct value per field, every counter bit exercised */
		for (int pass = 0; pass < 3; pass++) {
			uint64_t ip = pass == 0 ? 0x1234567 : (pass == 1 ? (1ull << L->ip_bits) - 1 : 8);

			memset(rec, pass == 2 ? 0xFF : 0, sizeof(rec));
			put_bits(rec, 0, L->ip_bits, ip);
			for (int r = 0; r < XE_NREASONS; r++)
				if (L->pos[r] != NA)
					put_bits(rec, L->pos[r], 8,
						 pass == 1 ? 0xFF : (uint64_t)(r * 17 + 3 + pass));
			if (L->ex_id != NA) {
				put_bits(rec, L->ex_id, 3, 5);
				put_bits(rec, L->end, 1, 1);
			}
			d->decode(rec, &s);
			CHECK_EQ_U64(s.ip, ip);
			for (int r = 0; r < XE_NREASONS; r++) {
				unsigned want = L->pos[r] == NA ? 0
					       : (pass == 1 ? 0xFF : (unsigned)(r * 17 + 3 + pass));
				if (s.cnt[r] != want)
					TEST_FAIL_AT("%s pass %d reason %s: %u != %u", L->dec, pass,
						     xe_reason_names[r], s.cnt[r], want);
			}
			if (L->ex_id != NA) {
				CHECK_EQ_INT(s.ex_id, 5);
				CHECK_EQ_INT(s.end_flag, 1);
			}
		}
	}
	/* version table */
	CHECK(xe_decoder_find(12, 60) == xe_decoder_by_name("pvc"));
	CHECK(xe_decoder_find(20, 4) == xe_decoder_by_name("xe2"));
	CHECK(xe_decoder_find(30, 0) == xe_decoder_by_name("xe2"));
	CHECK(xe_decoder_find(35, 0) == xe_decoder_by_name("xe3p"));
	CHECK(xe_decoder_find(12, 55) == NULL);
	CHECK(xe_decoder_find(12, 70) == NULL);
	CHECK_STREQ(xe_reason_names[XE_R_INST_FETCH], "inst_fetch");
	CHECK_STREQ(xe_reason_names[XE_R_TDR], "tdr");
}

static void test_interval_table(void)
{
	struct xe *x;
	struct xe_config cfg = {.max_kernels = 4};
	const struct xe_decoder *d = xe_decoder_by_name("pvc");
	uint8_t rec[64];
	struct xe_stats st;

	CHECK_EQ_INT(xe_new(&cfg, 0, &x), 0);
	/* ranges in random order; look-ups at edges */
	uint64_t starts[] = {0x5000, 0x1000, 0x3000};

	for (int i = 0; i < 3; i++)
		CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = starts[i],
								     .size = 0x1000, .pid = 1}),
			     0);
	/* 0x1000..0x1fff, 0x3000.., 0x5000..; 0x2000 is a hole */
	uint64_t probes[] = {0x1000, 0x1ff8, 0x2000, 0x3008, 0x5ff8, 0x6000};
	uint64_t want_attr[] = {1, 2, 2, 3, 4, 4};

	for (int i = 0; i < 6; i++) {
		memset(rec, 0, sizeof(rec));
		put_bits(rec, 0, 29, probes[i] >> 3);
		put_bits(rec, 29, 8, 1); /* PVC active */
		xe_ingest(x, d, rec, 64, 64, 0);
		xe_get_stats(x, &st);
		CHECK_EQ_U64(st.attributed, want_attr[i]);
	}
	/* overlap: a new kernel at 0x1800 replaces 0x1000's range */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x1800, .size = 0x100}), 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 4);
	memset(rec, 0, sizeof(rec));
	put_bits(rec, 0, 29, 0x1000 >> 3);
	put_bits(rec, 29, 8, 1);
	xe_ingest(x, d, rec, 64, 64, 0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.deferred_now, 3); /* holes 0x2000, 0x6000, and now 0x1000 */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000}), -ENOSPC);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 1ull << 40}),
		     -EINVAL);
	xe_free(x);
}

/* Batch-buffer KSPs (weak) never override a kernel a launch probe named. */
static void test_weak_add(void)
{
	struct xe *x;
	struct xe_stats st;

	CHECK_EQ_INT(xe_new(&(struct xe_config){0}, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10000, .size = 0x1000,
							     .pid = 7, .name = "named"}),
		     0);
	/* a KSP inside the named kernel: no-op, the name survives */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10400, .size = 0x100,
							     .pid = 7, .name = "ksp_in",
							     .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 1);
	CHECK_STREQ(kname_at(x, 0x10400), "named");
	CHECK_STREQ(kname_at(x, 0x10000), "named");
	/* a KSP before it with the default 64 KiB size: clipped to the gap */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x8000, .pid = 7,
							     .name = "ksp_gap", .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 2);
	CHECK_STREQ(kname_at(x, 0x8000), "ksp_gap");
	CHECK_STREQ(kname_at(x, 0xfff8), "ksp_gap");
	CHECK_STREQ(kname_at(x, 0x10000), "named");
	CHECK(kname_at(x, 0x11000) == NULL); /* not extended past the named one */
	/* its repeat is a look-up, not a new entry */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x8000, .pid = 7,
							     .name = "ksp_gap", .weak = true}),
		     0);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.kernels, 2);
	/* weak over weak: the VA-reuse rule (the newer one takes the range) */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x800,
							     .pid = 7, .name = "ksp_new",
							     .weak = true}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "ksp_new");
	CHECK(kname_at(x, 0x8000) == NULL); /* the old guess left the index */
	/* named over weak: replaces it */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x100,
							     .pid = 7, .name = "named2"}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "named2");
	/* a weak one at a named kernel's very start is refused too */
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x9000, .size = 0x100,
							     .pid = 7, .name = "ksp_same",
							     .weak = true}),
		     0);
	CHECK_STREQ(kname_at(x, 0x9000), "named2");
	xe_free(x);
}

/* symbols.demangle: a new kernel's name is demangled once when added (SYCL
 * typeinfo names lose their prefix); off, it stays as the runtime gave it. */
static void test_demangled_names(void)
{
	struct xe *x;

	CHECK_EQ_INT(xe_new(&(struct xe_config){.demangle = true}, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10000, .size = 0x100,
							     .pid = 7, .name = "_ZTSZ4mainE6kernel"}),
		     0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x20000, .size = 0x100,
							     .pid = 7, .name = "_Z6vecaddPfS_S_"}),
		     0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x30000, .size = 0x100,
							     .pid = 7, .name = "plain_c"}),
		     0);
	CHECK_STREQ(kname_at(x, 0x10000), "main::kernel");
	CHECK_STREQ(kname_at(x, 0x20000), "vecadd(float*, float*, float*)");
	CHECK_STREQ(kname_at(x, 0x30000), "plain_c");
	xe_free(x);
	CHECK_EQ_INT(xe_new(&(struct xe_config){0}, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = 0x10000, .size = 0x100,
							     .pid = 7, .name = "_ZTSZ4mainE6kernel"}),
		     0);
	CHECK_STREQ(kname_at(x, 0x10000), "_ZTSZ4mainE6kernel");
	xe_free(x);
}

/* Probing on this host: with no xe device the reason says why (and the
 * collector reports exactly that as "unavailable"). */
static void test_probe(void)
{
	struct xe_device devs[2];
	char why[200] = "";
	uint64_t rates[] = {251, 502, 753, 1004, 1255, 1506, 1757};
	int n = xe_devices_probe(devs, 2, 0, why, sizeof(why));

	CHECK(n >= 0);
	if (n == 0) {
		CHECK(why[0] != '\0');
		fprintf(stderr, "probe: %s\n", why);
	}
	for (int i = 0; i < n; i++)
		xe_device_close(&devs[i]);
	CHECK(xe_kernel_release_ok("6.15.0-rc1"));
	CHECK(xe_kernel_release_ok("7.0.1"));
	CHECK(!xe_kernel_release_ok("6.14.9-arch1"));
	CHECK_EQ_U64(xe_pick_rate(rates, 7, 0), 1757); /* default: the slowest */
	CHECK_EQ_U64(xe_pick_rate(rates, 7, 500), 502);
	CHECK_EQ_U64(xe_pick_rate(rates, 7, UINT64_MAX), 251); /* xe.sample_rate = fastest */
}

int main(void)
{
	RUN(test_probe);
	RUN(test_decoders);
	RUN(test_interval_table);
	RUN(test_weak_add);
	RUN(test_demangled_names);
	return test_summary();
}
