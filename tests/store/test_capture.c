// SPDX-License-Identifier: MIT
/* Captures in memory: take (window, pid and uid filters), lookups, extras,
 * and encode/decode round trips. */
#include "capture/capture.h"
#include "capture_util.h"
#include "test.h"

#include <errno.h>
#include <zlib.h>

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Rewrite the file header's version, header CRC included. */
static void set_version(uint8_t *buf, uint32_t v)
{
	put_u32(buf + 8, v);
	put_u32(buf + 16, (uint32_t)crc32(0, buf, 16));
}

static void test_take_window(void)
{
	struct store *s = fill_store(100);
	struct capture *c = NULL;

	CHECK_EQ_INT(capture_take(s, NULL, 200, 499, &c), 0);
	CHECK_EQ_U64(c->nrecs, 30);
	CHECK_EQ_U64(c->recs[0].ts_ns, 200);
	CHECK_EQ_U64(c->recs[29].ts_ns, 490);
	CHECK_EQ_U64(c->t0_ns, 200);
	CHECK_EQ_U64(c->t1_ns, 499);
	CHECK_EQ_INT(c->kind, CAPTURE_LIVE);
	CHECK(c->created_realtime_ns > 0);
	CHECK_EQ_U64(c->store_evicted_in_window, 0);
	/* Only the strings and stacks used are copied, renumbered densely. */
	CHECK_EQ_INT(c->nstrs, 3); /* the comms; "early" is outside */
	CHECK_EQ_INT(c->nstacks, 5);
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		size_t len;
		uint16_t nu, nk;
		const uint64_t *ips = capture_stack(c, r->stack, &nu, &nk);
		const char *comm = capture_str(c, r->comm, &len);

		CHECK(r->comm >= 1 && r->comm <= c->nstrs);
		CHECK(comm && len == 5 && comm[0] == 'c');
		CHECK_EQ_INT(comm[4] - '0', r->pid % 3);
		CHECK(ips && nu == 2 && nk == 1);
		CHECK_EQ_U64(ips[0], 0x1000 + (r->ts_ns / 10) % 5);
		CHECK_EQ_INT(r->name, 0);
	}
	capture_free(c);
	CHECK_EQ_INT(capture_take(s, NULL, 500, 400, &c), -EINVAL);
	store_free(s);
}

static void test_take_filters(void)
{
	struct store *s = fill_store(100);
	int32_t pids[2] = { 101, 104 };
	struct capture_filter f = { .pids = pids, .npids = 2 };
	struct capture *c = NULL;

	CHECK_EQ_INT(capture_take(s, &f, 0, UINT64_MAX, &c), 0);
	CHECK_EQ_U64(c->nrecs, 20); /* pid = 100 + i % 10 */
	CHECK_EQ_INT(c->npids, 2);
	CHECK_EQ_INT(c->pids[1], 104);
	for (size_t i = 0; i < c->nrecs; i++)
		CHECK(c->recs[i].pid == 101 || c->recs[i].pid == 104);
	capture_free(c);

	f = (struct capture_filter){ .uid_filter = true, .uid = 1001 };
	CHECK_EQ_INT(capture_take(s, &f, 0, UINT64_MAX, &c), 0);
	CHECK_EQ_U64(c->nrecs, 50); /* uid = 1000 + i % 2 */
	CHECK(c->uid_filter);
	CHECK_EQ_INT(c->filter_uid, 1001);
	for (size_t i = 0; i < c->nrecs; i++)
		CHECK_EQ_INT(c->recs[i].uid, 1001);
	capture_free(c);

	f.npids = CAPTURE_MAX_PIDS + 1;
	f.pids = pids;
	CHECK_EQ_INT(capture_take(s, &f, 0, 1, &c), -EINVAL);
	store_free(s);
}

static void test_take_after_eviction(void)
{
	struct store *s = fill_store(2000); /* 64 KiB budget: 512 slots */
	struct capture *c = NULL;

	CHECK_EQ_INT(capture_take(s, NULL, 0, UINT64_MAX, &c), 0);
	CHECK_EQ_U64(c->nrecs, 512);
	CHECK(c->store_evicted_in_window >= 2000 - 512);
	capture_free(c);
	/* A window that starts after everything evicted lost nothing. */
	CHECK_EQ_INT(capture_take(s, NULL, (2000 - 512) * 10, UINT64_MAX, &c), 0);
	CHECK_EQ_U64(c->store_evicted_in_window, 0);
	capture_free(c);
	store_free(s);
}

static void test_lookup_bounds(void)
{
	struct capture *c = NULL;
	uint16_t nu = 9, nk = 9;
	size_t len = 9;

	CHECK_EQ_INT(capture_new(&c), 0);
	CHECK(capture_str(c, 0, &len) == NULL);
	CHECK_EQ_INT(len, 0);
	CHECK(capture_str(c, 1, NULL) == NULL);
	CHECK(capture_stack(c, 1, &nu, &nk) == NULL);
	CHECK_EQ_INT(nu + nk, 0);
	CHECK(capture_str(NULL, 1, NULL) == NULL);
	CHECK_EQ_INT(capture_add_extra(c, CAPSEC_META, "x", 1), -EINVAL);
	CHECK_EQ_INT(capture_add_extra(c, 0, "x", 1), -EINVAL);
	CHECK_EQ_INT(capture_add_extra(c, 77, "abc", 3), 0);
	CHECK(capture_find_extra(c, 77) && capture_find_extra(c, 77)->len == 3);
	CHECK(capture_find_extra(c, 78) == NULL);
	capture_free(c);
	capture_free(NULL);
}

static void test_roundtrip(void)
{
	struct capture *c = sample_capture(), *d = NULL;
	void *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	char why[256];

	CHECK_EQ_INT(capture_encode(c, &buf, &len), 0);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), 0);
	if (d) {
		CHECK(captures_equal(c, d));
		CHECK(capture_find_extra(d, CAPSEC_SYMBOLS) != NULL);
		CHECK(capture_find_extra(d, 4242) != NULL);
		/* Extras are written back byte for byte. */
		CHECK_EQ_INT(capture_encode(d, &buf2, &len2), 0);
		CHECK_EQ_U64(len2, len);
		CHECK(buf2 && memcmp(buf, buf2, len) == 0);
	}
	free(buf2);
	capture_free(d);
	free(buf);
	capture_free(c);
}

static void test_roundtrip_empty(void)
{
	struct capture *c = NULL, *d = NULL;
	void *buf = NULL;
	size_t len = 0;

	capture_new(&c);
	CHECK_EQ_INT(capture_encode(c, &buf, &len), 0);
	CHECK_EQ_INT(capture_decode(buf, len, &d, NULL, 0), 0);
	CHECK(d && captures_equal(c, d));
	free(buf);
	capture_free(d);
	/* A record pointing past the tables cannot be encoded. */
	c->recs = calloc(1, sizeof(*c->recs));
	c->nrecs = 1;
	c->recs[0].comm = 1;
	CHECK_EQ_INT(capture_encode(c, &buf, &len), -EINVAL);
	capture_free(c);
}

static void test_decode_reasons(void)
{
	struct capture *c = sample_capture(), *d = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[256];

	capture_encode(c, (void **)&buf, &len);
	CHECK_EQ_INT(capture_decode(buf, 10, &d, why, sizeof(why)), -EBADMSG);
	CHECK_STREQ(why, "truncated at byte 10 (file header)");
	buf[0] = 'X';
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK_STREQ(why, "bad magic");
	buf[0] = 'G';
	buf[20 + 24] ^= 1; /* first byte of the META payload */
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK_STREQ(why, "section 0 crc mismatch");
	buf[20 + 24] ^= 1;
	buf[len - 1] ^= 1; /* the last section's reserved field: must be 0 */
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), -EBADMSG);
	buf[len - 1] ^= 1;
	CHECK_EQ_INT(capture_decode(buf, len - 1, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "truncated at byte") != NULL);
	CHECK(d == NULL);
	CHECK_EQ_INT(capture_decode(NULL, 0, &d, why, sizeof(why)), -EBADMSG);
	free(buf);
	capture_free(c);
}

/* Launches keep their cgroup through capture_take (renumbered like comm
 * and name) and the file; a version 1 file loads with no cgroup, a newer
 * version is refused. */
static void test_launch_cgroup(void)
{
	struct store_config cfg = {.budget_bytes = 64 * 1024};
	struct capture *c = NULL, *d = NULL;
	struct store *s = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[256];

	CHECK_EQ_INT(store_new(&cfg, &s), 0);
	for (uint32_t i = 0; i < 4; i++) {
		const char *cg = i % 2 ? "/b.slice/job.scope" : "/a.slice";
		struct store_rec r = {.ts_ns = i, .pid = 7, .type = STORE_REC_GPU_LAUNCH,
				      .comm = store_str_intern(s, "app", 3),
				      .name = store_str_intern(s, "k", 1)};

		r.cgroup = store_str_intern(s, cg, strlen(cg));
		store_append(s, &r);
	}
	CHECK_EQ_INT(capture_take(s, NULL, 0, UINT64_MAX, &c), 0);
	CHECK(c && c->nrecs == 4 && c->nstrs == 4);
	for (size_t i = 0; c && i < c->nrecs; i++) {
		const char *want = i % 2 ? "/b.slice/job.scope" : "/a.slice";
		const char *got = capture_str(c, store_rec_cgroup(&c->recs[i]), &len);

		CHECK(got && len == strlen(want) && !memcmp(got, want, len));
	}
	CHECK_EQ_INT(capture_encode(c, (void **)&buf, &len), 0);
	CHECK_EQ_INT(get_u32(buf + 8), CAPTURE_FORMAT_VERSION);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), 0);
	CHECK(d && captures_equal(c, d));
	capture_free(d);
	d = NULL;
	/* version 1: the same bytes were a launch's (always 0) dur_ns */
	set_version(buf, 1);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), 0);
	for (size_t i = 0; d && i < d->nrecs; i++) {
		CHECK_EQ_INT(store_rec_cgroup(&d->recs[i]), 0);
		CHECK_EQ_U64(d->recs[i].dur_ns, 0);
		CHECK_EQ_INT(d->recs[i].name, c->recs[i].name);
	}
	capture_free(d);
	d = NULL;
	set_version(buf, CAPTURE_FORMAT_VERSION + 1);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "unsupported format version"));
	free(buf);
	capture_free(c);
	store_free(s);
}

/* A CUPTI interval's and a mark's detail string go through capture_take
 * (renumbered) and the file; a version 2 file loads without them. */
static void test_detail(void)
{
	struct store_config cfg = {.budget_bytes = 64 * 1024};
	struct capture *c = NULL, *d = NULL;
	struct store *s = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	char why[256];
	const char *got;

	CHECK_EQ_INT(store_new(&cfg, &s), 0);
	for (uint32_t i = 0; i < 3; i++) {
		/* strings interned in another order than the capture's */
		uint32_t x = store_str_intern(s, "unused", 6);
		const char *det = i ? "NCCL" : "grid [2,1,1] block [64,1,1]";
		struct store_rec r = {.ts_ns = i, .pid = 7,
				      .name = store_str_intern(s, "k", 1)};

		r.type = i ? STORE_REC_MARK : STORE_REC_GPU_INTERVAL;
		r.cpu = i ? 1 : GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL;
		r.aux[1] = (uint64_t)store_str_intern(s, det, strlen(det)) << 32 | (i + 40);
		store_append(s, &r);
		store_str_unref(s, x);
	}
	CHECK_EQ_INT(capture_take(s, NULL, 0, UINT64_MAX, &c), 0);
	CHECK(c && c->nrecs == 3 && c->nstrs == 3);
	for (size_t i = 0; c && i < c->nrecs; i++) {
		const char *want = i ? "NCCL" : "grid [2,1,1] block [64,1,1]";

		got = capture_str(c, store_rec_detail(&c->recs[i]), &len);
		CHECK(got && len == strlen(want) && !memcmp(got, want, len));
		CHECK_EQ_U64(c->recs[i].aux[1] & UINT32_MAX, i + 40);
	}
	CHECK_EQ_INT(capture_encode(c, (void **)&buf, &len), 0);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), 0);
	CHECK(d && captures_equal(c, d));
	capture_free(d);
	d = NULL;
	set_version(buf, 2);
	CHECK_EQ_INT(capture_decode(buf, len, &d, why, sizeof(why)), 0);
	for (size_t i = 0; d && i < d->nrecs; i++) {
		CHECK_EQ_INT(store_rec_detail(&d->recs[i]), 0);
		CHECK_EQ_U64(d->recs[i].aux[1], i + 40);
	}
	capture_free(d);
	/* a detail past the string table is refused both ways */
	c->recs[0].aux[1] |= (uint64_t)99 << 32;
	free(buf);
	buf = NULL;
	CHECK_EQ_INT(capture_encode(c, (void **)&buf, &len), -EINVAL);
	free(buf);
	capture_free(c);
	store_free(s);
}

int main(void)
{
	RUN(test_take_window);
	RUN(test_take_filters);
	RUN(test_take_after_eviction);
	RUN(test_lookup_bounds);
	RUN(test_roundtrip);
	RUN(test_roundtrip_empty);
	RUN(test_decode_reasons);
	RUN(test_launch_cgroup);
	RUN(test_detail);
	return test_summary();
}
