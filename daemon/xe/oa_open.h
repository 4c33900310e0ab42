/* SPDX-License-Identifier: MIT */
/*
 * Opening an OA stream on real hardware (xe_drm.h, the OA unit): the OA unit query,
 * the metric-set id, the property chain, STREAM_OPEN, IOCTL_INFO. The
 * pieces that interpret or build kernel structs are pure functions over
 * byte buffers so tests check them against the documented layouts; the
 * ioctls run only in xe_oa_stream_open (behind struct xe_obs_ops).
 */
#ifndef GPUPROF_XE_OA_OPEN_H
#define GPUPROF_XE_OA_OPEN_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"
#include "xe_uapi.h"

/* The metric set iaprof uses (xe_drm.h, the OA unit). */
#define XE_OA_METRIC_UUID "0c47fabe-3bbf-4b82-9efb-ff7b30f73d90"
/* OA_FORMAT: DRM_XE_OA_FMT_TYPE_PEC | counter_sel 1 << 8 | counter_size 1 << 16 |
 * bc_report 0 << 24 (xe_drm.h, the OA unit): the 576-byte PEC report of oa.h. */
#define XE_OA_FORMAT_PEC (XE_OA_FMT_TYPE_PEC | 1u << 8 | 1u << 16)
#define XE_OA_NPROPS 6

struct xe_oa_unit_info {
	uint32_t id, type;
	uint64_t capabilities, ts_freq, num_engines;
};

/*
 * Walk a DRM_XE_DEVICE_QUERY_OA_UNITS reply of len bytes (xe_uapi.h) and
 * return the first OAG unit. Returns 0, -ENOENT (no OAG unit) or -EPROTO
 * (a unit or its engine list runs past len).
 */
int xe_oa_find_oag(const void *buf, size_t len, struct xe_oa_unit_info *out);

struct xe_prop {
	uint32_t id;
	uint64_t value;
};

/* Fill p[0..n) as a drm_xe_ext_set_property chain: name SET_PROPERTY,
 * each next_extension pointing at the following one, the last 0. */
void xe_props_chain(struct xe_ext_set_property *p, const struct xe_prop *kv, size_t n);

/* The OA STREAM_OPEN chain (xe_drm.h, the OA unit): OA_UNIT_ID, SAMPLE_OA = 1,
 * OA_METRIC_SET, OA_FORMAT = XE_OA_FORMAT_PEC, OA_PERIOD_EXPONENT,
 * OA_DISABLED = 1 (opened disabled, enabled by the stream). */
void xe_oa_props(struct xe_ext_set_property p[XE_OA_NPROPS], uint32_t unit, uint64_t metric_set,
		 uint32_t exponent);

/*
 * OA_PERIOD_EXPONENT for a sampling period: the largest e in 0..31 with
 * 2^(e+1) ticks of ts_freq no longer than period_ns; period_ns 0 gives
 * iaprof's floor(log2(ts_freq)) - 1 (about one report a second).
 */
uint32_t xe_oa_exponent(uint64_t ts_freq, uint64_t period_ns);

/*
 * The id under which the kernel registered metric set uuid for the DRM
 * device of render node (e.g. "renderD128"): sysfs_drm (normally
 * "/sys/class/drm") /<node>/device/drm/card<N> names the card, and
 * /<card>/metrics/<uuid>/id holds the id. Returns 0, -ENOENT (not
 * registered, or no card for the node) or -EPROTO (unparsable id).
 */
int xe_oa_metric_set_id(const char *sysfs_drm, const char *node, const char *uuid, uint64_t *id);

/*
 * Open the OA stream of cfg (cfg->oa_unit / oa_metric_set / oa_exponent)
 * on cfg->drm_fd: STREAM_OPEN, then IOCTL_INFO for the OA buffer size
 * (*oa_buf_size, may be NULL). Returns the non-blocking, close-on-exec
 * fd or -errno. The stream is enabled later, by the stream's enable op.
 */
int xe_oa_stream_open(const struct xe_stream_cfg *cfg, uint64_t *oa_buf_size);

#endif
