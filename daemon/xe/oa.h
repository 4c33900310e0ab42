/* SPDX-License-Identifier: MIT */
/*
 * OA (observation architecture) PEC reports -> the two metrics iaprof
 * prints per interval, GPU frequency and busy percentage (xe_drm.h, the OA unit),
 * appended to the store as STORE_REC_GPU_METRIC time series.
 */
#ifndef GPUPROF_XE_OA_H
#define GPUPROF_XE_OA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XE_OA_PEC_REPORT_BYTES 576 /* 68 u64 + 32 pad (xe_drm.h, the OA unit) */

struct xe_oa_sample {
	uint64_t time;	/* OA timestamp, 56 bits, wraps */
	uint64_t ticks; /* GPU clock ticks, 32 bits, wraps */
	uint64_t busy;	/* PEC counter 32 */
	uint32_t reason, source, tile;
};

struct xe_oa_state {
	uint64_t ts_freq_hz; /* OA timestamp frequency (the GT's reference clock) */
	bool have_prev;
	struct xe_oa_sample prev;
};

/* Parse one PEC report; false when len is short. */
bool xe_oa_parse(const uint8_t *rec, size_t len, struct xe_oa_sample *s);
/* Feed a report; true with the metrics over the span since the previous
 * one (false for the first, or a span of zero time or ticks). */
bool xe_oa_step(struct xe_oa_state *st, const struct xe_oa_sample *cur, uint64_t *mhz,
		uint64_t *busy_pct);

struct store;
/* Append both metrics at ts_ns for a GT; returns records appended. */
int xe_oa_store(struct store *s, uint64_t ts_ns, uint16_t gt, uint64_t mhz, uint64_t busy_pct);

/*
 * The OA stream's sink: the whole stride-byte reports of one read at
 * now_ns (CLOCK_MONOTONIC). Each report's time is now_ns minus its OA
 * timestamp's distance to the newest report of the read, so the series
 * keeps the hardware's spacing. Returns records appended to s; *bad
 * counts reports too short to parse.
 */
int xe_oa_ingest(struct xe_oa_state *st, struct store *s, uint16_t gt, const uint8_t *buf,
		 size_t len, size_t stride, uint64_t now_ns, uint64_t *bad);

#endif
