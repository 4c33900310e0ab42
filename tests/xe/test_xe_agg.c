// SPDX-License-Identifier: MIT
/*
 * Xe EU-stall aggregation under load: the hot cache in front of the rows
 * (pushed-out entries, u16 counters merged before they wrap, interval
 * changes) and the in-place eviction of the oldest intervals, checked row
 * by row against a plain array model. Also: the batch decoders agree with
 * the single-record ones on random records.
 */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#include "decode.h"
#include "section.h"
#include "xe.h"

#define IBA 0x800000000000ull
#define NS_IV 100000000ull
#define KBASE (IBA + 0x100000)

static uint64_t rng = 88172645463325252ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* An Xe2 record (Xe PRMs): ip at bits 0-28, "other" at 37-44, "sync" at 85-92. */
static void xe2_rec(uint8_t *rec, uint64_t ip, unsigned other, unsigned sync)
{
	uint64_t w0 = (ip & 0x1FFFFFFFull) | ((uint64_t)other << 37);
	uint64_t w1 = (uint64_t)sync << 21;

	memset(rec, 0, 64);
	for (int i = 0; i < 8; i++) {
		rec[i] = (uint8_t)(w0 >> (8 * i));
		rec[8 + i] = (uint8_t)(w1 >> (8 * i));
	}
}

/*
 * ivs intervals of nrec records each over noff offsets of one kernel, one
 * offset taking a tenth of them at 255 (so its hot entry is merged on the
 * u16 limit). ref[iv * noff + off/8] is the model of "other"; "sync" is
 * always 1, so it must equal the number of samples.
 */
static void run_model(unsigned ivs, unsigned nrec, unsigned noff, uint32_t max_rows)
{
	const struct xe_decoder *d = xe_decoder_by_name("xe2");
	struct xe_config cfg = {.max_rows = max_rows};
	uint32_t *ref = calloc((size_t)ivs * noff, sizeof(uint32_t));
	uint32_t *nref = calloc((size_t)ivs * noff, sizeof(uint32_t));
	uint8_t *buf = malloc(64 * 512);
	uint64_t distinct = 0;
	struct xe_stats st;
	struct xe *x;

	CHECK(ref && nref && buf);
	CHECK_EQ_INT(xe_new(&cfg, 0, &x), 0);
	CHECK_EQ_INT(xe_ktab_add(x, &(struct xe_kernel_info){.gpu_addr = KBASE,
							     .size = (uint64_t)noff * 8,
							     .iba = IBA,
							     .pid = 7,
							     .name = "k"}),
		     0);
	for (unsigned iv = 0; iv < ivs; iv++) {
		for (unsigned done = 0; done < nrec;) {
			unsigned m = nrec - done < 512 ? nrec - done : 512;

			for (unsigned i = 0; i < m; i++) {
				bool hot = xorshift() % 10 == 0;
				unsigned off = hot ? 5 : (unsigned)(xorshift() % noff);
				unsigned v = hot ? 255 : 1 + (unsigned)(xorshift() % 255);

				xe2_rec(buf + 64 * i, (KBASE - IBA) / 8 + off, v, 1);
				if (!nref[iv * noff + off]++)
					distinct++;
				ref[iv * noff + off] += v;
			}
			/* batches at two times inside the interval */
			CHECK_EQ_U64(xe_ingest(x, d, buf, 64 * m, 64, iv * NS_IV + (done & 1)), m);
			done += m;
		}
	}
	xe_get_stats(x, &st);
	CHECK_EQ_U64(st.attributed, (uint64_t)ivs * nrec);
	CHECK_EQ_U64(st.rows + st.rows_evicted, distinct);
	if (max_rows && max_rows < distinct)
		CHECK(st.rows_evicted > 0);

	void *sec;
	size_t len;
	struct xe_capdata cd;
	char why[128];
	uint32_t min_iv = UINT32_MAX, *seen = calloc(ivs, sizeof(uint32_t));

	CHECK_EQ_INT(xe_export(x, 0, ivs * NS_IV, NULL, &sec, &len), 0);
	CHECK_EQ_INT(xe_sec_decode(sec, len, &cd, why, sizeof(why)), 0);
	CHECK_EQ_U64(cd.h->nrows, st.rows);
	for (uint32_t i = 0; i < cd.h->nrows; i++) {
		const struct xe_row *r = &cd.rows[i];
		size_t at = (size_t)r->iv * noff + r->off / 8;

		if (r->iv >= ivs || r->kid != 1 || r->off % 8 || r->off / 8 >= noff) {
			TEST_FAIL_AT("row %u: iv %u kid %u off %u", i, r->iv, r->kid, r->off);
			break;
		}
		if (r->cnt[XE_R_OTHER] != ref[at] || r->cnt[XE_R_SYNC] != nref[at])
			TEST_FAIL_AT("iv %u off %#x: other %u want %u, sync %u want %u", r->iv,
				     r->off, r->cnt[XE_R_OTHER], ref[at], r->cnt[XE_R_SYNC],
				     nref[at]);
		seen[r->iv]++;
		if (r->iv < min_iv)
			min_iv = r->iv;
	}
	/* every interval from the oldest retained on is complete */
	for (unsigned iv = min_iv; iv < ivs; iv++) {
		uint32_t want = 0;

		for (unsigned o = 0; o < noff; o++)
			want += nref[iv * noff + o] != 0;
		if (seen[iv] != want)
			TEST_FAIL_AT("interval %u: %u rows, model has %u", iv, seen[iv], want);
	}
	CHECK(min_iv < ivs);
	xe_sec_finish(&cd);
	free(sec);
	free(seen);
	xe_free(x);
	free(ref);
	free(nref);
	free(buf);
}

static void test_hot_cache(void)
{
	/* few offsets, no eviction: hot entries merged on interval change and
	 * on the u16 limit */
	run_model(4, 20000, 512, 0);
	/* more offsets per interval than the hot cache holds: push-outs */
	run_model(3, 60000, 40000, 1u << 18);
}

static void test_eviction(void)
{
	/* rows limit far below the distinct keys: many in-place evictions,
	 * with clusters that wrap around the table's end */
	run_model(30, 3000, 1500, 2048);
	run_model(12, 5000, 4000, 4096);
}

static void test_decode_n(void)
{
	static const char *const names[] = {"pvc", "xe2", "xe3p"};
	uint8_t recs[96 * 16];
	struct xe_sample one, many[16];

	for (size_t i = 0; i < sizeof(recs); i++)
		recs[i] = (uint8_t)xorshift();
	for (int l = 0; l < 3; l++) {
		const struct xe_decoder *d = xe_decoder_by_name(names[l]);

		/* a stride larger than 64 (record_size comes from the query) */
		d->decode_n(recs, 16, 96, many);
		for (int i = 0; i < 16; i++) {
			d->decode(recs + 96 * i, &one);
			if (one.ip != many[i].ip || memcmp(one.cnt, many[i].cnt, XE_NREASONS) ||
			    one.ex_id != many[i].ex_id || one.end_flag != many[i].end_flag)
				TEST_FAIL_AT("%s record %d: decode_n differs", names[l], i);
		}
	}
}

int main(void)
{
	RUN(test_decode_n);
	RUN(test_hot_cache);
	RUN(test_eviction);
	return test_summary();
}
