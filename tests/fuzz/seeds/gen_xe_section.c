// SPDX-License-Identifier: MIT
/*
 * Writes the xe_section seed corpus: CAPSEC_XE_EU_STALL sections exported
 * by the real code (xe_ktab_add / xe_ingest / xe_export) the way
 * tests/xe/test_xe.c drives it, plus xe_decode seeds (the harness's input
 * layout: selector, version/kernel count, kernels, records).
 *   gen_xe_section SECTION_DIR [DECODE_DIR]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "xe.h"
#include "xe/xe_test_util.h" /* put_bits, IBA, NS_IV */

/* bit of the 'send' counter and the IP width per layout */
static const unsigned send_bit[] = {61, 61, 93}, ip_bits[] = {29, 29, 61};
static const char *const decs[] = {"pvc", "xe2", "xe3p"};

static void rec_at(uint8_t *rec, int l, uint64_t ip, unsigned cnt)
{
	memset(rec, 0, 64);
	put_bits(rec, 0, ip_bits[l], ip);
	put_bits(rec, send_bit[l], 8, cnt);
	put_bits(rec, send_bit[l] + 24, 8, cnt + 1); /* sync on pvc/xe2, sbid on xe3p */
}

static void put(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
	printf("%s: %zu bytes\n", path, len);
}

static void section(const char *dir, const char *name, int l, int nk, int nrec, int filter)
{
	const struct xe_decoder *d = xe_decoder_by_name(decs[l]);
	struct xe_config cfg = {.max_deferred = 4, .defer_intervals = 2};
	uint64_t stack[3] = {0x401000, 0x402000, 0x403000};
	uint8_t recs[64 * 16];
	struct xe *x;
	void *buf;
	size_t len;

	if (xe_new(&cfg, 0, &x) < 0)
		exit(1);
	for (int i = 0; i < nk; i++) {
		struct xe_kernel_info k = {
		    .gpu_addr = IBA + 0x10000 * (uint64_t)(i + 1), .size = 0x1000, .iba = IBA,
		    .pid = 42 + (uint32_t)(i & 1), .uid = 1000 + (uint32_t)(i & 1),
		    .name = i == 2 ? "" : (i & 1 ? "softmax" : "gemm_kernel"),
		    .file = i & 1 ? NULL : "model.zebin", .comm = "python3",
		    .cgroup = i == 0 ? "/system.slice/a.service" : NULL,
		    .ustack = stack, .nustack = (uint16_t)(i % 4)};
		xe_ktab_add(x, &k);
	}
	for (int b = 0; b < 3; b++) {
		for (int i = 0; i < nrec; i++)
			rec_at(recs + 64 * i, l,
			       (0x10000 * (uint64_t)(i % (nk + 1) + 1) + 0x40 * (uint64_t)b) >> 3,
			       (unsigned)(i + b + 1));
		xe_ingest(x, d, recs, 64 * (size_t)nrec, 64, (uint64_t)b * NS_IV + 1);
	}
	xe_retry_deferred(x, 3 * NS_IV, true);
	struct xe_export_filter f = {.uid_filter = true, .uid = 1000};

	if (xe_export(x, 0, 3 * NS_IV, filter ? &f : NULL, &buf, &len) < 0 || !len)
		exit(1);
	put(dir, name, buf, len);
	free(buf);
	xe_free(x);
}

/* xe_decode input: sel, ver, kernels (24 B each), records */
static void decode_seed(const char *dir, const char *name, uint8_t sel, int nk, int nrec)
{
	uint8_t in[2 + 7 * 24 + 64 * 16];
	size_t off = 2;
	int l = sel & 3;

	if (l == 3)
		l = 1;
	in[0] = sel;
	in[1] = (uint8_t)(l == 1 ? 20 : 35) & ~7u;
	in[1] |= (uint8_t)nk;
	if ((sel & 3) == 3)
		in[1] = (uint8_t)(16 + nk); /* 16..23: Xe2 */
	for (int i = 0; i < nk; i++, off += 24) {
		uint64_t a = IBA + 0x10000 * (uint64_t)(i + 1), iba = IBA;
		uint32_t size = 0x1000;

		memcpy(in + off, &a, 8);
		memcpy(in + off + 8, &iba, 8);
		memcpy(in + off + 16, &size, 4);
		in[off + 20] = (uint8_t)(40 + i);
		in[off + 21] = (uint8_t)(0x55 + i);
		in[off + 22] = (uint8_t)(i * 7 + 3);
		in[off + 23] = 0;
	}
	for (int i = 0; i < nrec; i++, off += 64)
		rec_at(in + off, l, (0x10000 * (uint64_t)(i % (nk + 1) + 1) + 8 * (uint64_t)i) >> 3,
		       (unsigned)i + 1);
	put(dir, name, in, off);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	section(argv[1], "xe2-2kernels", 1, 2, 6, 0);
	section(argv[1], "xe2-uid-filter", 1, 3, 6, 1);
	section(argv[1], "pvc-3kernels-stacks", 0, 3, 8, 0);
	section(argv[1], "xe3p-unattributed", 2, 1, 4, 0);
	if (argc > 2) {
		decode_seed(argv[2], "pvc-2k", 0x00, 2, 8);
		decode_seed(argv[2], "xe2-3k-small-tables", 0x31, 3, 12);
		decode_seed(argv[2], "xe3p-1k", 0x02, 1, 6);
		decode_seed(argv[2], "by-version-xe2-stride128", 0x0b, 2, 8);
		decode_seed(argv[2], "xe2-no-kernels-fast-iv", 0xc1, 0, 10);
	}
	return 0;
}
