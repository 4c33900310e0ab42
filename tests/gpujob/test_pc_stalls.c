// SPDX-License-Identifier: MIT
/*
 * `folded --weight stalls` on NVIDIA PC samples (STORE_REC_GPU_PC, store.h):
 * the stall frames after the kernel frame, the stall reason without
 * CUPTI's prefix, offsets when there is no SASS text (and the text from
 * the hook when there is), the CPU stack of the latest launch of that
 * kernel name in that pid at or before the drain, samples summed.
 *
 * pid 300 "train": gemm launched @10 µs from stack S1 and @50 from S2;
 * PC samples drained @40 (gemm +0x1a0 barrier 30, long_scoreboard 12; an
 * unnamed reason 4) join S1, @90 (gemm +0x1a0 barrier 8) joins S2; relu
 * (never launched in the capture) samples stand on no stack; pid 301's
 * gemm samples do not take pid 300's launches.
 *
 * Then the SASS text a saved capture keeps (capture/capsass.h): used
 * without any hook, through an encode / decode as after a restart, the
 * hook asked only for what it lacks; and the section's decoder on hostile
 * bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/capbuild.h"
#include "capture/capsass.h"
#include "folded.h"
#include "membuf.h"
#include "test.h"

#define T0 1000000000000ull
#define US 1000ull
#define STALLED "smsp__pcsamp_warps_issue_stalled_"

static void launch(struct capture *c, uint32_t pid, uint32_t comm, const char *k, uint64_t ts,
		   uint32_t stack)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + ts * US,
				     .pid = pid,
				     .tid = pid,
				     .comm = comm,
				     .stack = stack,
				     .name = cb_str(c, k),
				     .type = STORE_REC_GPU_LAUNCH,
				     .aux32 = 7});
}

static void pcs(struct capture *c, uint32_t pid, uint32_t comm, const char *k, uint64_t ts,
		uint32_t pc, const char *reason, uint32_t samples)
{
	cb_put(c, (struct store_rec){.ts_ns = T0 + ts * US,
				     .pid = pid,
				     .comm = comm,
				     .name = cb_str(c, k),
				     .type = STORE_REC_GPU_PC,
				     .aux32 = samples,
				     .aux = {0xabcdef, (uint64_t)cb_str(c, reason) << 32 | pc}});
}

static struct capture *scene(void)
{
	struct capture *c = cb_live(T0, T0 + 1000 * US);
	uint32_t train = cb_str(c, "train"), other = cb_str(c, "other");
	const uint64_t s1[] = {0x1002, 0x1001}, s2[] = {0x2002, 0x1001};
	uint32_t S1 = cb_stack(c, s1, 2, 0), S2 = cb_stack(c, s2, 2, 0);

	launch(c, 300, train, "gemm", 10, S1);
	pcs(c, 300, train, "gemm", 40, 0x1a0, STALLED "barrier", 30);
	pcs(c, 300, train, "gemm", 40, 0x1a0, STALLED "long_scoreboard", 12);
	pcs(c, 300, train, "gemm", 40, 0x40, "stall_9", 4);
	launch(c, 300, train, "gemm", 50, S2);
	pcs(c, 300, train, "gemm", 90, 0x1a0, STALLED "barrier", 8);
	pcs(c, 300, train, "relu", 90, 0x10, STALLED "wait", 3);
	pcs(c, 301, other, "gemm", 95, 0x20, STALLED "wait", 5);
	return c;
}

static void test_offsets(void)
{
	struct capture *c = scene();
	struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS};
	struct folded_totals t;
	struct membuf b = {0};

	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_STREQ(b.p, "other;gemm_[G];+0x20_[g];wait_[g] 5\n"
			 "train;0x1001;0x1002;gemm_[G];+0x1a0_[g];barrier_[g] 30\n"
			 "train;0x1001;0x1002;gemm_[G];+0x1a0_[g];long_scoreboard_[g] 12\n"
			 "train;0x1001;0x1002;gemm_[G];+0x40_[g];stall_9_[g] 4\n"
			 "train;0x1001;0x2002;gemm_[G];+0x1a0_[g];barrier_[g] 8\n"
			 "train;relu_[G];+0x10_[g];wait_[g] 3\n");
	CHECK_EQ_U64(t.weight, 62);
	CHECK_EQ_U64(t.samples, 6);
	free(b.p);
	capture_free(c);
}

static const char *insn(void *ctx, uint32_t pid, uint64_t crc, const char *name, uint32_t pc)
{
	static char s[64];

	(*(int *)ctx)++;
	if (crc != 0xabcdef || strcmp(name, "gemm") || pid != 300)
		return NULL;
	snprintf(s, sizeof(s), "BAR.SYNC;DEFER @%x", pc); /* ';' must not split the frame */
	return s;
}

static void test_sass_text(void)
{
	struct capture *c = scene();
	const uint32_t pids[] = {300};
	int calls = 0;
	struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS, .pids = pids, .npids = 1,
				.insn = insn, .insn_ctx = &calls};
	struct folded_totals t;
	struct membuf b = {0};

	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_STREQ(b.p, "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];barrier_[g] 30\n"
			 "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];long_scoreboard_[g] 12\n"
			 "train;0x1001;0x1002;gemm_[G];BAR.SYNC:DEFER @40_[g];stall_9_[g] 4\n"
			 "train;0x1001;0x2002;gemm_[G];BAR.SYNC:DEFER @1a0_[g];barrier_[g] 8\n"
			 "train;relu_[G];+0x10_[g];wait_[g] 3\n");
	CHECK(calls >= 5);
	CHECK_EQ_U64(t.weight, 57);
	free(b.p);
	capture_free(c);
}

/* the other weights do not count PC samples */
static void test_other_weights(void)
{
	struct capture *c = scene();
	struct folded_opts o = {.weight = FOLDED_WEIGHT_LAUNCHES};
	struct folded_totals t;
	struct membuf b = {0};

	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, &t), 0);
	CHECK_EQ_U64(t.weight, 2);
	free(b.p);
	capture_free(c);
}

/* A SASS section for scene(): text for pid 300's gemm at 0x1a0 and 0x40
 * (each record has its own copy of the name, hence its own id). */
static void add_sass(struct capture *c)
{
	struct capsass_builder b = {0};
	void *buf;
	size_t len;

	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		size_t l;
		const char *n = capture_str(c, r->name, &l);
		uint32_t pc = (uint32_t)r->aux[1];

		if (r->type != STORE_REC_GPU_PC || r->pid != 300 || l != 4 || memcmp(n, "gemm", 4))
			continue;
		CHECK_EQ_INT(capsass_add(&b, r->aux[0], r->name, pc,
					 pc == 0x40 ? "\tLDG.E R2, [R2.64] \t" : "BAR.SYNC\x01 0x0"),
			     0);
	}
	CHECK_EQ_INT(capsass_add(&b, 1, 0, 0, "no name: missing"), 0);
	CHECK_EQ_INT(capsass_encode(&b, &buf, &len), 0);
	CHECK_EQ_INT(capture_adopt_extra(c, CAPSEC_CUPTI_SASS, buf, len), 0);
	capsass_builder_finish(&b);
}

static const char sass_lines[] =
	"other;gemm_[G];+0x20_[g];wait_[g] 5\n"
	"train;0x1001;0x1002;gemm_[G];BAR.SYNC  0x0_[g];barrier_[g] 30\n"
	"train;0x1001;0x1002;gemm_[G];BAR.SYNC  0x0_[g];long_scoreboard_[g] 12\n"
	"train;0x1001;0x1002;gemm_[G];LDG.E R2, [R2.64]_[g];stall_9_[g] 4\n"
	"train;0x1001;0x2002;gemm_[G];BAR.SYNC  0x0_[g];barrier_[g] 8\n"
	"train;relu_[G];+0x10_[g];wait_[g] 3\n";

static void test_capture_text(void)
{
	struct capture *c = scene(), *c2 = NULL;
	int calls = 0;
	struct folded_opts o = {.weight = FOLDED_WEIGHT_STALLS};
	struct membuf b = {0};
	void *enc;
	size_t len;
	char why[256];

	add_sass(c);
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, &b, NULL), 0);
	CHECK_STREQ(b.p, sass_lines);
	/* saved and loaded again: the same text, no cubin, no hook */
	CHECK_EQ_INT(capture_encode(c, &enc, &len), 0);
	CHECK_EQ_INT(capture_decode(enc, len, &c2, why, sizeof(why)), 0);
	membuf_reset(&b);
	CHECK_EQ_INT(folded_write(c2, &o, membuf_write, &b, NULL), 0);
	CHECK_STREQ(b.p, sass_lines);
	/* a hook is asked only for the keys the capture has no text for */
	o.insn = insn;
	o.insn_ctx = &calls;
	membuf_reset(&b);
	CHECK_EQ_INT(folded_write(c2, &o, membuf_write, &b, NULL), 0);
	CHECK_EQ_INT(calls, 2); /* relu +0x10, pid 301's gemm +0x20 */
	/* the heat map's per-record lines keep each instruction apart */
	struct folded_liner *l;
	struct folded_key k;
	uint64_t n;
	const char *text;
	CHECK_EQ_INT(folded_liner_new(c2, &(struct folded_opts){.weight = FOLDED_WEIGHT_STALLS}, &l),
		     0);
	for (size_t i = 0; i < c2->nrecs; i++) {
		if (!folded_liner_match(l, &c2->recs[i], &k, &n) || k.pc != 0x40)
			continue;
		CHECK_EQ_INT(folded_liner_line(l, &k, &text, &len), 0);
		static const char tail[] = "LDG.E R2, [R2.64]_[g];stall_9_[g]";
		CHECK(len > sizeof(tail) &&
		      !memcmp(text + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1));
		CHECK_EQ_U64(n, 4);
	}
	folded_liner_free(l);
	free(enc);
	capture_free(c2);
	free(b.p);
	capture_free(c);
}

/* A capture of scene() with sec as its SASS section, through the loader. */
static int load_with(const void *sec, size_t seclen, char *why, size_t whylen)
{
	struct capture *c = scene(), *c2 = NULL;
	void *enc = NULL;
	size_t len;
	int r;

	CHECK_EQ_INT(capture_add_extra(c, CAPSEC_CUPTI_SASS, sec, seclen), 0);
	/* the writer refuses what the loader would */
	r = capture_encode(c, &enc, &len);
	if (r == 0) {
		r = capture_decode(enc, len, &c2, why, whylen);
	} else {
		CHECK_EQ_INT(r, -EINVAL);
		/* the loader, on the same bytes the writer would have made */
		struct capture *plain = scene();
		CHECK_EQ_INT(capture_encode(plain, &enc, &len), 0);
		capture_free(plain);
		r = capsass_decode(c, sec, seclen, &(struct capsass){0}, why, whylen);
		CHECK_EQ_INT(r, -EBADMSG);
	}
	free(enc);
	capture_free(c2);
	capture_free(c);
	return r;
}

static size_t put_ent(uint8_t *p, uint64_t crc, uint32_t name, uint32_t pc, const char *t,
		      uint16_t len)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(crc >> 8 * i);
	for (int i = 0; i < 4; i++) {
		p[8 + i] = (uint8_t)(name >> 8 * i);
		p[12 + i] = (uint8_t)(pc >> 8 * i);
	}
	p[16] = (uint8_t)len;
	p[17] = (uint8_t)(len >> 8);
	memcpy(p + 18, t, strlen(t));
	return 18 + strlen(t);
}

static size_t hdr(uint8_t *p, uint32_t version, uint32_t count)
{
	memset(p, 0, 16);
	p[0] = (uint8_t)version;
	memcpy(p + 4, &count, 4); /* little-endian host: the tests run on x86 and arm64 */
	return 16;
}

static void test_hostile_section(void)
{
	static uint8_t s[CAPSASS_MAX_BYTES + 64];
	char why[256];
	size_t n;

	/* valid: two entries in order */
	n = hdr(s, 1, 2);
	n += put_ent(s + n, 1, 1, 0x10, "NOP", 3);
	n += put_ent(s + n, 1, 1, 0x20, "EXIT", 4);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), 0);
	/* truncated: the last entry's text cut */
	CHECK_EQ_INT(load_with(s, n - 1, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "past the end"));
	/* the header cut */
	CHECK_EQ_INT(load_with(s, 8, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "too short for its header"));
	/* a count the bytes cannot hold */
	n = hdr(s, 1, 1000);
	n += put_ent(s + n, 1, 1, 0x10, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "count 1000 exceeds"));
	/* a name id past the string table, and 0 */
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 999, 0x10, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "entry 0: name id 999 out of range"));
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 0, 0x10, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	/* out of order, and a repeated key */
	n = hdr(s, 1, 2);
	n += put_ent(s + n, 1, 1, 0x20, "NOP", 3);
	n += put_ent(s + n, 1, 1, 0x10, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "entry 1 out of order"));
	n = hdr(s, 1, 2);
	n += put_ent(s + n, 1, 1, 0x20, "NOP", 3);
	n += put_ent(s + n, 1, 1, 0x20, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	/* empty text, text over 255 bytes, a control byte, trailing bytes */
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 1, 0x10, "", 0);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "empty"));
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 1, 0x10, "", 300);
	memset(s + n, 'A', 300);
	CHECK_EQ_INT(load_with(s, n + 300, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "over the limit"));
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 1, 0x10, "N\nP", 3);
	CHECK_EQ_INT(load_with(s, n, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "control byte"));
	n = hdr(s, 1, 1);
	n += put_ent(s + n, 1, 1, 0x10, "NOP", 3);
	CHECK_EQ_INT(load_with(s, n + 2, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "2 trailing bytes"));
	/* oversized */
	memset(s, 0, sizeof(s));
	hdr(s, 1, 0);
	CHECK_EQ_INT(load_with(s, CAPSASS_MAX_BYTES + 1, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "over the"));
	/* another version: left alone, the capture loads */
	n = hdr(s, 2, 77);
	CHECK_EQ_INT(load_with(s, n + 5, why, sizeof(why)), 0);
	/* two sections */
	struct capture *c = scene(), *c2 = NULL;
	void *enc;
	size_t len;
	n = hdr(s, 1, 0);
	CHECK_EQ_INT(capture_add_extra(c, CAPSEC_CUPTI_SASS, s, n), 0);
	CHECK_EQ_INT(capture_add_extra(c, CAPSEC_CUPTI_SASS, s, n), 0);
	CHECK_EQ_INT(capture_encode(c, &enc, &len), -EINVAL);
	capture_free(c);
	(void)c2;
}

/* the builder's bounds: past CAPSASS_MAX_ENTRIES keys are counted capped */
static void test_builder_bounds(void)
{
	struct capsass_builder b = {0};
	struct capsass d;
	struct capture *c = scene();
	void *buf;
	size_t len, tl;

	for (uint32_t i = 0; i < CAPSASS_MAX_ENTRIES + 10; i++)
		CHECK_EQ_INT(capsass_add(&b, 5, 1, CAPSASS_MAX_ENTRIES + 10 - i, "IMAD R1, R2, R3, R4"),
			     0);
	CHECK_EQ_INT(b.capped, 10);
	CHECK_EQ_INT(capsass_encode(&b, &buf, &len), 0);
	CHECK(len <= CAPSASS_MAX_BYTES);
	CHECK_EQ_INT(capsass_decode(c, buf, len, &d, NULL, 0), 0);
	CHECK_EQ_U64(d.n, CAPSASS_MAX_ENTRIES);
	CHECK_EQ_U64(d.capped, 10);
	CHECK(capsass_find(&d, 5, 1, 11, &tl) && tl == 19);
	CHECK(!capsass_find(&d, 5, 1, 10, &tl)); /* added first, capped */
	capsass_finish(&d);
	free(buf);
	capsass_builder_finish(&b);
	capture_free(c);
}

int main(void)
{
	RUN(test_offsets);
	RUN(test_sass_text);
	RUN(test_other_weights);
	RUN(test_capture_text);
	RUN(test_hostile_section);
	RUN(test_builder_bounds);
	return test_summary();
}
