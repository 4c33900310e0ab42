// SPDX-License-Identifier: MIT
/*
 * Seeds for fuzz_gpu_cs: every named batch-buffer case of
 * tests/xe/cs_cases.h (built from the documented encodings) as the
 * harness's input: selector byte, extra submission, then a dump with the
 * case's buffers and its submission.
 *
 *   ninja -C build tests/fuzz/gen_gpu_cs && build/tests/fuzz/gen_gpu_cs DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xe/cs_cases.h"

static uint8_t out[1 << 20];
static size_t n;

static void put8(uint8_t v)
{
	if (n == sizeof(out))
		abort();
	out[n++] = v;
}

static void put32le(uint32_t v)
{
	for (int i = 0; i < 4; i++)
		put8((uint8_t)(v >> (8 * i)));
}

static void put64le(uint64_t v)
{
	put32le((uint32_t)v);
	put32le((uint32_t)(v >> 32));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < CS_NNAMED; i++) {
		struct cs_case c = {0};
		char path[4096];
		FILE *f;

		cs_named[i].fn(&c);
		n = 0;
		put8((uint8_t)(1 | (i & 1) << 1 | 4)); /* xe core, some small limits, retries */
		put64le(c.b[c.nbufs - 1].gpu);	       /* the extra submission: the last buffer */
		put8(0);
		memcpy(out + n, "GPUCSDMP", 8);
		n += 8;
		put32le(1);
		put32le(0);
		/* the submission first when the case chains: it waits for the rest */
		put32le(2);
		put32le(24);
		put32le(0);
		put32le(7);
		put32le(1000);
		put32le(0);
		put64le(c.start);
		for (unsigned b = 0; b < c.nbufs; b++) {
			uint32_t len = c.b[b].n * 4;

			if (n + 24 + len > sizeof(out) || c.b[b].n > 4096)
				len = 4096 * 4; /* the limit case: the first 4096 commands */
			put32le(1);
			put32le(16 + len);
			put32le(0);
			put32le(0);
			put64le(c.b[b].gpu);
			for (uint32_t k = 0; k < len / 4; k++)
				put32le(c.b[b].dw[k]);
		}
		snprintf(path, sizeof(path), "%s/%s", argv[1], cs_named[i].name);
		f = fopen(path, "wb");
		if (!f || fwrite(out, 1, n, f) != n || fclose(f) != 0) {
			perror(path);
			return 1;
		}
		cs_case_free(&c);
	}
	return 0;
}
