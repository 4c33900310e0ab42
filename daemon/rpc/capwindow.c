// SPDX-License-Identifier: MIT
/*
 * capture.start's window (docs/protocol.md, capture.start): forward
 * (duration_ms), the last span before now (last_ms), or absolute
 * (start_ns, optional end_ns; last_ms with end_ns), in CLOCK_MONOTONIC ns
 * as a capture's "window" reports them, or in CLOCK_REALTIME ns
 * ("clock": "realtime") converted with the daemon's own offset, so that a
 * client in another time namespace or with a drifting clock still names
 * the daemon's records.
 *
 * An absolute window is checked here rather than in the registry because
 * its errors are the caller's to fix: reversed, in the future, longer than
 * a capture may cover, or wholly before what the ring still holds.
 */
#include "capwindow.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gpd.h"
#include "store/store.h"

#define NS_PER_MS ((uint64_t)1000000)

/* Beyond any clock reading in ns a JSON number can carry (year 2116 in
 * CLOCK_REALTIME), and below 2^63 for the offset arithmetic. */
#define WIN_MAX_NS (1ull << 62)

static bool has(const cJSON *params, const char *key)
{
	return cJSON_IsObject(params) && cJSON_GetObjectItemCaseSensitive(params, key);
}

/* *v (in the request's clock) as CLOCK_MONOTONIC; false for a wall-clock
 * time before the monotonic clock's origin (the boot). */
static bool to_mono(bool realtime, uint64_t *v)
{
	int64_t off = realtime ? gpd_mono_to_realtime_ns() : 0;

	if (off > 0 && *v < (uint64_t)off)
		return false;
	*v = (uint64_t)((int64_t)*v - off);
	return true;
}

/* Answer the request with the error; false, to return at once. */
#define bad(req, code, ...) (rpc_error(req, code, NULL, __VA_ARGS__), false)

/* Where the ring's records begin: its oldest record once it has evicted
 * any, else the daemon's start (it has everything since). */
static uint64_t ring_begin(const struct gpd *g)
{
	struct store_stats ss;

	store_get_stats(g->store, &ss);
	return ss.evicted && ss.oldest_ts_ns ? ss.oldest_ts_ns : g->start_mono_ns;
}

/* Reversed or too long: the same in either clock, so judged as given
 * (the request's own numbers in the message). */
static bool check_span(struct rpc_req *req, uint64_t t0, uint64_t t1)
{
	if (t0 > t1)
		return bad(req, GPUPROF_ERR_INVALID_PARAMS,
			   "the window starts at %" PRIu64 " ns, after it ends (%" PRIu64 " ns)",
			   t0, t1);
	if (t1 - t0 > CAPWIN_MAX_MS * NS_PER_MS)
		return bad(req, GPUPROF_ERR_INVALID_PARAMS,
			   "the window is %" PRIu64
			   " ms long, more than a capture may cover (%" PRIu64 " ms)",
			   (t1 - t0) / NS_PER_MS, CAPWIN_MAX_MS);
	return true;
}

/* The absolute window's checks (w->t0_ns, w->t1_ns set, monotonic). */
static bool check_abs(struct rpc_req *req, struct capwin *w, uint64_t now)
{
	uint64_t begin;

	if (w->t1_ns > now)
		return bad(req, GPUPROF_ERR_INVALID_PARAMS,
			   "the window ends at %" PRIu64 " ns, after now (%" PRIu64
			   " ns): record forward with \"duration_ms\"",
			   w->t1_ns, now);
	if (!check_span(req, w->t0_ns, w->t1_ns))
		return false;
	/* records of the window's last moments may still sit in the rings:
	 * drained before the ring is judged and cut */
	if (req->gpd->drain_rings)
		req->gpd->drain_rings(req->gpd);
	begin = ring_begin(req->gpd);
	if (w->t1_ns < begin)
		return bad(req, GPUPROF_ERR_NO_DATA,
			   "the window ends at %" PRIu64
			   " ns, before the oldest record the ring holds (%" PRIu64 " ns)",
			   w->t1_ns, begin);
	return true;
}

bool capwin_param(struct rpc_req *req, const cJSON *params, struct capwin *w)
{
	bool start = has(params, "start_ns"), end = has(params, "end_ns"), realtime = false;
	const char *clock = NULL;
	uint64_t now;

	memset(w, 0, sizeof(*w));
	if (!param_u64(req, params, "duration_ms", false, CAPWIN_MAX_MS, &w->duration_ms) ||
	    !param_u64(req, params, "last_ms", false, CAPWIN_MAX_MS, &w->last_ms) ||
	    !param_u64(req, params, "start_ns", false, WIN_MAX_NS, &w->t0_ns) ||
	    !param_u64(req, params, "end_ns", false, WIN_MAX_NS, &w->t1_ns) ||
	    !param_str(req, params, "clock", 16, &clock))
		return false;
	if ((w->duration_ms != 0) + (w->last_ms != 0) + start != 1) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "give exactly one of \"duration_ms\", \"last_ms\" (above 0) and "
			  "\"start_ns\"");
		return false;
	}
	if (end && w->duration_ms) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"end_ns\" ends a window in the past (with \"start_ns\" or "
			  "\"last_ms\"), not a forward one");
		return false;
	}
	if (clock && strcmp(clock, "monotonic") && strcmp(clock, "realtime")) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"clock\" must be \"monotonic\" or \"realtime\"");
		return false;
	}
	if (clock && !start && !end) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"clock\" applies to \"start_ns\" and \"end_ns\"");
		return false;
	}
	realtime = clock && !strcmp(clock, "realtime");
	w->past = !w->duration_ms;
	w->absolute = start || end;
	if (!w->absolute)
		return true; /* duration_ms or last_ms from now: the registry's */
	if (start && end && !check_span(req, w->t0_ns, w->t1_ns))
		return false;
	now = gpd_now_ns();
	if (end && !to_mono(realtime, &w->t1_ns))
		return bad(req, GPUPROF_ERR_NO_DATA,
			   "the window ends before the boot (CLOCK_REALTIME %" PRIu64
			   " ns is before %" PRIu64 " ns)",
			   w->t1_ns, (uint64_t)gpd_mono_to_realtime_ns());
	/* a start before the boot: the window begins with the clock, as one
	 * partly older than the ring begins with what it holds */
	if (start && !to_mono(realtime, &w->t0_ns))
		w->t0_ns = 0;
	if (!end)
		w->t1_ns = now;
	if (!start) /* last_ms before end_ns */
		w->t0_ns = w->t1_ns > w->last_ms * NS_PER_MS ? w->t1_ns - w->last_ms * NS_PER_MS
							     : 0;
	return check_abs(req, w, now);
}

void capwin_span(const struct capwin *w, uint64_t *t0, uint64_t *t1)
{
	uint64_t now = gpd_now_ns(), span = w->last_ms * NS_PER_MS;

	if (w->absolute) {
		*t0 = w->t0_ns;
		*t1 = w->t1_ns;
	} else {
		*t0 = now > span ? now - span : 0;
		*t1 = now;
	}
}
