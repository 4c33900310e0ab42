// SPDX-License-Identifier: MIT
/*
 * The batch-buffer parser's host path (daemon/xe/cs.c) past a single parse:
 * the retry list, limits, the kernel-table feed (weak KSPs, table sizes,
 * EU-stall attribution), the dump loader and the status JSON. Buffers from
 * cs_cases.h; no GPU, no privileges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "cs_run.h"
#include "decode.h"
#include "xe.h"
#include "xe_int.h"
#include "xe_test_util.h"

/* Not readable yet: waits, and is parsed when the memory arrives. */
static void test_retry(void)
{
	struct run t;
	struct xe_cs_stats st;
	struct cs_case c = {0};
	struct cs_buf *d;

	run_case(&t, case_missing);
	CHECK_EQ_INT(t.status, GPU_CS_RETRY);
	CHECK_EQ_U64(t.r.stop_addr, VA_D + 0x40);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.retry_now, 1);
	CHECK_EQ_U64(kernels(t.x), 0);

	/* another address space's buffer does not wake it */
	d = cs_new_buf(&c, VA_D);
	for (int i = 0; i < 16; i++)
		bb_noop(d);
	bb_walker(d, 1, 0x7000);
	bb_end(d);
	CHECK_EQ_INT(xe_cs_add_buffer(t.cs, t.x, ASID + 1, d->gpu, d->dw, d->n * 4), 0);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.retry_now, 1);
	CHECK_EQ_INT(xe_cs_add_buffer(t.cs, t.x, ASID, d->gpu, d->dw, d->n * 4), 0);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.retry_now, 0);
	CHECK_EQ_U64(st.retry_ok, 1);
	CHECK_EQ_U64(st.status[GPU_CS_DONE], 1);
	CHECK_EQ_U64(kernels(t.x), 1);
	done(&t);

	/* never arrives: given up after max_attempts timer retries */
	run_case(&t, case_zeros);
	CHECK_EQ_INT(t.status, GPU_CS_RETRY);
	CHECK_EQ_U64(t.r.stop_addr, VA_A + 4ull * (40 + 2 + 40));
	CHECK_EQ_INT(t.r.nksp, 2);
	for (int i = 0; i < 5; i++)
		xe_cs_retry(t.cs, t.x);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.retry_now, 0);
	CHECK_EQ_U64(st.retry_given_up, 1);
	CHECK_EQ_U64(st.status[GPU_CS_RETRY], 5); /* first parse + 4 retries */
	done(&t);
	cs_case_free(&c);
}

/* Bounded: the retry list and the buffers keep to their limits. */
static void test_limits(void)
{
	struct xe_cs *cs;
	struct xe_cs_stats st;
	uint32_t dw[64] = {0};

	CHECK_EQ_INT(
	    xe_cs_new(&(struct xe_cs_config){.max_buffers = 4, .max_bytes = 1024, .max_retry = 3},
		      &cs),
	    0);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(
		    xe_cs_add_buffer(cs, NULL, 1, 0x10000 + 0x1000 * (uint64_t)i, dw, sizeof(dw)),
		    0);
	for (int i = 0; i < 10; i++)
		CHECK_EQ_INT(
		    xe_cs_submit(cs, NULL,
				 &(struct xe_cs_submit){.asid = 2, .batch = 0x1000 * (uint64_t)i},
				 NULL),
		    GPU_CS_RETRY);
	xe_cs_get_stats(cs, &st);
	CHECK_EQ_U64(st.buffers, 4);
	CHECK_EQ_U64(st.bytes, 4 * sizeof(dw));
	CHECK_EQ_U64(st.buffers_evicted, 6);
	CHECK_EQ_U64(st.retry_now, 3);
	CHECK_EQ_U64(st.retry_dropped, 7);
	/* overlapping replaces, bad ranges are refused */
	CHECK_EQ_INT(xe_cs_add_buffer(cs, NULL, 1, 0x19000 + 16, dw, 16), 0);
	xe_cs_get_stats(cs, &st);
	CHECK_EQ_U64(st.buffers, 4);
	CHECK_EQ_INT(xe_cs_add_buffer(cs, NULL, 1, 0x2, dw, 16), -EINVAL);
	CHECK_EQ_INT(xe_cs_add_buffer(cs, NULL, 1, 0x1000, dw, 0), -EINVAL);
	CHECK_EQ_INT(xe_cs_add_buffer(cs, NULL, 1, 0x1000, dw, 2048), -EINVAL);
	CHECK_EQ_INT(xe_cs_add_buffer(cs, NULL, 1, 0xFFFFFFFFFFF0ull, dw, 32), -EINVAL);
	xe_cs_free(cs);
	xe_cs_free(NULL);
}

/* A KSP never overrides a kernel the launch probes named (weak adds). */
static void test_ksp_keeps_probe_name(void)
{
	struct run t;
	struct cs_case c = {0};
	struct cs_buf *a = cs_new_buf(&c, VA_A);

	bb_sba(a, IBA1, 0);
	bb_walker(a, 1, 0x1000);
	bb_walker(a, 1, 0x2000);
	bb_end(a);
	memset(&t, 0, sizeof(t));
	CHECK_EQ_INT(xe_cs_new(NULL, &t.cs), 0);
	CHECK_EQ_INT(xe_new(NULL, 0, &t.x), 0);
	CHECK_EQ_INT(xe_ktab_add(t.x, &(struct xe_kernel_info){.gpu_addr = IBA1 + 0x2000,
								.size = 0x400, .iba = IBA1,
								.pid = 9, .name = "usdt_named"}),
		     0);
	CHECK_EQ_INT(xe_cs_add_buffer(t.cs, t.x, ASID, a->gpu, a->dw, a->n * 4), 0);
	CHECK_EQ_INT(xe_cs_submit(t.cs, t.x,
				  &(struct xe_cs_submit){.asid = ASID, .pid = 9, .batch = VA_A},
				  NULL),
		     GPU_CS_DONE);
	CHECK_STREQ(kname_at(t.x, 0x2000), "usdt_named");
	CHECK_STREQ(kname_at(t.x, 0x23f8), "usdt_named");
	/* the KSP before it fills the gap, up to the named kernel */
	const char *gap = kname_at(t.x, 0x1ff8);

	CHECK(kname_at(t.x, 0x1000) == gap && gap && strcmp(gap, "usdt_named") != 0);
	CHECK_EQ_U64(kernels(t.x), 2);
	done(&t);
	cs_case_free(&c);
}

/* Neighbouring kernels get the gap between them as their size, so they
 * do not take each other's range in the kernel table. */
static void test_ktab_sizes(void)
{
	struct run t;
	struct xe_cs_stats st;
	struct cs_case c = {0};
	struct cs_buf *a = cs_new_buf(&c, VA_A);

	bb_sba(a, IBA1, 0);
	bb_walker(a, 1, 0x1000);
	bb_walker(a, 1, 0x3000);
	bb_walker(a, 1, 0x2000); /* between the two: shrinks the first */
	bb_end(a);
	memset(&t, 0, sizeof(t));
	CHECK_EQ_INT(xe_cs_new(NULL, &t.cs), 0);
	CHECK_EQ_INT(xe_new(NULL, 0, &t.x), 0);
	CHECK_EQ_INT(xe_cs_add_buffer(t.cs, t.x, ASID, a->gpu, a->dw, a->n * 4), 0);
	CHECK_EQ_INT(xe_cs_submit(t.cs, t.x,
				  &(struct xe_cs_submit){.asid = ASID, .pid = 9, .batch = VA_A},
				  NULL),
		     GPU_CS_DONE);
	xe_cs_get_stats(t.cs, &st);
	/* three kernels; the first re-added smaller twice (0x2000, then 0x1000) */
	CHECK_EQ_U64(st.ktab_added, 5);
	CHECK_EQ_U64(st.ktab_refused, 0);
	CHECK_EQ_U64(kernels(t.x), 5);
	/* a second submission of the same batch adds nothing new */
	xe_cs_submit(t.cs, t.x, &(struct xe_cs_submit){.asid = ASID, .pid = 9, .batch = VA_A},
		     NULL);
	xe_cs_get_stats(t.cs, &st);
	CHECK_EQ_U64(st.ktab_added, 5);
	done(&t);
	cs_case_free(&c);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

static void test_dump(void)
{
	struct cs_case c = {0};
	struct xe_cs *cs;
	struct xe *x;
	struct xe_cs_stats st;
	char why[200];
	uint8_t *d;
	size_t n = 0, blen;

	case_chain(&c);
	d = calloc(1, 1 << 16);
	memcpy(d, "GPUCSDMP", 8);
	put32(d + 8, 1);
	n = 16;
	/* the submission first: it waits for B and C */
	put32(d + n, 1); /* A */
	blen = (size_t)c.b[0].n * 4;
	put32(d + n + 4, (uint32_t)(16 + blen));
	put32(d + n + 8, ASID);
	put64(d + n + 16, c.b[0].gpu);
	memcpy(d + n + 24, c.b[0].dw, blen);
	n += 24 + blen;
	put32(d + n, 2);
	put32(d + n + 4, 24);
	put32(d + n + 8, ASID);
	put32(d + n + 12, 77);
	put32(d + n + 16, 1000);
	put64(d + n + 24, VA_A);
	n += 32;
	put32(d + n, 99); /* an unknown record type is skipped */
	put32(d + n + 4, 3);
	n += 11;
	for (unsigned i = 1; i < c.nbufs; i++) {
		blen = (size_t)c.b[i].n * 4;
		put32(d + n, 1);
		put32(d + n + 4, (uint32_t)(16 + blen));
		put32(d + n + 8, ASID);
		put64(d + n + 16, c.b[i].gpu);
		memcpy(d + n + 24, c.b[i].dw, blen);
		n += 24 + blen;
	}
	CHECK_EQ_INT(xe_cs_new(NULL, &cs), 0);
	CHECK_EQ_INT(xe_new(NULL, 0, &x), 0);
	CHECK_EQ_INT(xe_cs_load(cs, x, d, n, why, sizeof(why)), 1);
	xe_cs_get_stats(cs, &st);
	CHECK_EQ_U64(st.status[GPU_CS_RETRY], 2); /* waited for B, then for C */
	CHECK_EQ_U64(st.retry_ok, 1);
	CHECK_EQ_U64(st.ksps, 4);
	/* 4 kernels, and 3 re-adds as neighbours arrived (sizes shrink) */
	CHECK_EQ_U64(st.ktab_added, 7);
	CHECK_EQ_U64(kernels(x), 7);

	/* damaged dumps: clear errors, nothing past the damage */
	CHECK_EQ_INT(xe_cs_load(cs, x, d, 10, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "magic") != NULL);
	CHECK_EQ_INT(xe_cs_load(cs, x, d, n - 1, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "longer than the dump") != NULL);
	put32(d + 8, 2);
	CHECK_EQ_INT(xe_cs_load(cs, x, d, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "version") != NULL);
	put32(d + 8, 1);
	put32(d + 16 + 24 + (size_t)c.b[0].n * 4 + 4, 20); /* submit record of 20 bytes */
	CHECK_EQ_INT(xe_cs_load(cs, x, d, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "24 bytes") != NULL);
	xe_cs_free(cs);
	xe_free(x);
	free(d);
	cs_case_free(&c);
}

static void test_status_json(void)
{
	struct run t;
	cJSON *o = cJSON_CreateObject(), *b;

	run_case(&t, case_xehp);
	xe_cs_status(t.cs, o);
	b = cJSON_GetObjectItem(o, "batch_parser");
	CHECK(b != NULL);
	CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(b, "path")), "host");
	CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(b, "reason")) != NULL);
	CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(b, "submits")), 1);
	CHECK_EQ_INT(
	    cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(b, "ends"), "done")), 1);
	CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(b, "ksps")), 1);
	CHECK_STREQ(xe_cs_status_name(GPU_CS_RETRY), "retry");
	CHECK_STREQ(xe_cs_status_name(99), "unknown");
	cJSON_Delete(o);
	done(&t);
}

/* The point of it all: an EU-stall sample inside a kernel found in a batch
 * is attributed, also one that arrived before the batch was parsed. */
static void test_eu_stall_attribution(void)
{
	const struct xe_decoder *d = xe_decoder_by_name("xe2");
	uint64_t ip = (0x1c40 + 0x80) >> 3; /* IBA-relative, in 8-byte units (the Xe PRMs) */
	uint8_t rec[64] = {0};
	struct xe_stats st;
	struct run t;
	struct cs_case c = {0};
	struct xe *x;

	CHECK(d != NULL);
	if (!d)
		return;
	for (int b = 0; b < 29; b++) /* IP: bits 0-28 */
		if ((ip >> b) & 1)
			rec[b / 8] |= (uint8_t)(1u << (b % 8));
	rec[101 / 8] |= (uint8_t)(3u << (101 % 8)); /* active (bits 101-108) = 3 */

	CHECK_EQ_INT(xe_new(NULL, 0, &x), 0);
	/* the kernel table knows the IBA only once a kernel with it exists, so
	 * the sample waits ... */
	CHECK_EQ_INT(xe_ingest(x, d, rec, sizeof(rec), sizeof(rec), 1000), 1);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.attributed, 0);
	CHECK_EQ_U64(st.deferred_now, 1);
	/* ... until the batch that launched it is parsed */
	memset(&t, 0, sizeof(t));
	CHECK_EQ_INT(xe_cs_new(NULL, &t.cs), 0);
	case_xehp(&c);
	CHECK_EQ_INT(xe_cs_add_buffer(t.cs, x, ASID, c.b[0].gpu, c.b[0].dw, c.b[0].n * 4), 0);
	CHECK_EQ_INT(xe_cs_submit(t.cs, x,
				  &(struct xe_cs_submit){.asid = ASID, .pid = 5, .batch = c.start},
				  NULL),
		     GPU_CS_DONE);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.late_attributed, 1);
	CHECK_EQ_U64(st.deferred_now, 0);
	/* and later samples go straight to it */
	CHECK_EQ_INT(xe_ingest(x, d, rec, sizeof(rec), sizeof(rec), 2000), 1);
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.attributed, 2);
	CHECK_EQ_U64(st.unattributed, 0);
	xe_cs_free(t.cs);
	xe_free(x);
	cs_case_free(&c);
}

int main(void)
{
	RUN(test_retry);
	RUN(test_limits);
	RUN(test_ktab_sizes);
	RUN(test_ksp_keeps_probe_name);
	RUN(test_eu_stall_attribution);
	RUN(test_dump);
	RUN(test_status_json);
	return test_summary();
}
