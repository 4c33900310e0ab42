// SPDX-License-Identifier: MIT
/* OA PEC report decoding and metrics (xe_drm.h, the OA unit). */
#include "oa.h"

#include <string.h>

#include "store/store.h"

static uint64_t u64_at(const uint8_t *p, unsigned idx)
{
	uint64_t v;

	memcpy(&v, p + idx * 8, 8);
	return v;
}

bool xe_oa_parse(const uint8_t *rec, size_t len, struct xe_oa_sample *s)
{
	uint64_t rpt;

	if (len < 68 * 8)
		return false;
	/* rpt_id, time, ctx_id, ticks, pec0..pec31, busy (= pec32), ... */
	rpt = u64_at(rec, 0);
	s->time = u64_at(rec, 1) & ((1ull << 56) - 1);
	s->ticks = u64_at(rec, 3) & 0xFFFFFFFFull;
	s->busy = u64_at(rec, 36);
	s->tile = (uint32_t)(rpt >> 32) & 3;
	s->reason = (uint32_t)(rpt >> 19) & 0x7F;
	s->source = (uint32_t)(rpt >> 25) & 0x3F;
	return true;
}

/* iaprof's ((dt*100)/(freq/100000))*100 keeps dt*100 in range for any
 * span of a few seconds; same here, with a guard for low freqs. */
static uint64_t ticks_to_ns(uint64_t dt, uint64_t freq)
{
	if (freq >= 100000)
		return ((dt * 100) / (freq / 100000)) * 100;
	return freq ? dt * 1000000000ull / freq : 0;
}

bool xe_oa_step(struct xe_oa_state *st, const struct xe_oa_sample *cur, uint64_t *mhz,
		uint64_t *busy_pct)
{
	struct xe_oa_sample prev = st->prev;
	uint64_t dt, dticks, dbusy, dns;
	bool had = st->have_prev;

	st->prev = *cur;
	st->have_prev = true;
	if (!had || !st->ts_freq_hz)
		return false;
	/* Modular differences: time wraps at 56 bits, ticks at 32. */
	dt = (cur->time - prev.time) & ((1ull << 56) - 1);
	dticks = (cur->ticks - prev.ticks) & 0xFFFFFFFFull;
	dbusy = cur->busy - prev.busy;
	dns = ticks_to_ns(dt, st->ts_freq_hz);
	if (!dns || !dticks)
		return false;
	*mhz = dticks * 1000 / dns;
	*busy_pct = dbusy >= dticks ? 100 : dbusy * 100 / dticks;
	return true;
}

int xe_oa_store(struct store *s, uint64_t ts_ns, uint16_t gt, uint64_t mhz, uint64_t busy_pct)
{
	static const char *const names[2] = {"frequency-MHz", "busy-percent"};
	uint64_t vals[2] = {mhz, busy_pct};
	int n = 0;

	for (int i = 0; i < 2; i++) {
		uint32_t name = store_str_intern(s, names[i], strlen(names[i]));
		struct store_rec rec = {
			.ts_ns = ts_ns,
			.name = name,
			.type = STORE_REC_GPU_METRIC,
			.cpu = gt,
			.aux = {vals[i], 0},
		};

		if (!name)
			continue;
		store_append(s, &rec);
		n++;
	}
	return n;
}

int xe_oa_ingest(struct xe_oa_state *st, struct store *s, uint16_t gt, const uint8_t *buf,
		 size_t len, size_t stride, uint64_t now_ns, uint64_t *bad)
{
	struct xe_oa_sample o, last;
	size_t n = stride ? len / stride : 0;
	int added = 0;

	if (!n || !xe_oa_parse(buf + (n - 1) * stride, stride, &last)) {
		*bad += n;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t mhz, busy, back;

		if (!xe_oa_parse(buf + i * stride, stride, &o)) {
			(*bad)++;
			continue;
		}
		back = ticks_to_ns((last.time - o.time) & ((1ull << 56) - 1), st->ts_freq_hz);
		if (xe_oa_step(st, &o, &mhz, &busy) && s)
			added += xe_oa_store(s, back < now_ns ? now_ns - back : 0, gt, mhz, busy);
	}
	return added;
}
