/* SPDX-License-Identifier: MIT */
/*
 * The slice of the Xe observation uAPI the EU-stall and OA streams use,
 * written from the layouts in xe_drm.h (the
 * build hosts ship no xe_drm.h: Debian 12's libdrm predates it). The sizes
 * are checked below against the sizes xe_drm.h gives so a typo cannot reach an ioctl.
 */
#ifndef GPUPROF_XE_UAPI_H
#define GPUPROF_XE_UAPI_H

#include <stdint.h>

/* xe_drm.h: DRM_IOWR('d', 0x40 + 0x00, 40 B) and DRM_IOW('d', 0x40 + 0x0b, 32 B). */
#define XE_IOCTL_DEVICE_QUERY 0xc0286440u
#define XE_IOCTL_OBSERVATION 0x4020644bu

/* xe_drm.h: ioctls on the stream fd. */
#define XE_OBS_IOCTL_ENABLE 0x6900u
#define XE_OBS_IOCTL_DISABLE 0x6901u
#define XE_OBS_IOCTL_INFO 0x6904u

/* xe_drm.h */
#define XE_OBS_TYPE_OA 0
#define XE_OBS_TYPE_EU_STALL 1
#define XE_OBS_OP_STREAM_OPEN 0
#define XE_EXT_SET_PROPERTY 0
#define XE_EU_STALL_PROP_GT_ID 1
#define XE_EU_STALL_PROP_SAMPLE_RATE 2
#define XE_EU_STALL_PROP_WAIT_NUM_REPORTS 3
#define XE_QUERY_CONFIG 2
#define XE_QUERY_GT_LIST 3
#define XE_QUERY_OA_UNITS 8
#define XE_QUERY_EU_STALL 10
#define XE_GT_TYPE_MAIN 0
#define XE_CONFIG_REV_AND_DEVICE_ID 0
#define XE_CONFIG_VA_BITS 3

/* xe_drm.h, the OA unit: OA stream properties. */
#define XE_OA_PROP_OA_UNIT_ID 1
#define XE_OA_PROP_SAMPLE_OA 2
#define XE_OA_PROP_OA_METRIC_SET 3
#define XE_OA_PROP_OA_FORMAT 4
#define XE_OA_PROP_OA_PERIOD_EXPONENT 5
#define XE_OA_PROP_OA_DISABLED 6
#define XE_OA_FMT_TYPE_PEC 5
#define XE_OA_UNIT_TYPE_OAG 0

struct xe_observation_param {
	uint64_t extensions;
	uint64_t observation_type;
	uint64_t observation_op;
	uint64_t param;
};

struct xe_ext_set_property {
	uint64_t next_extension;
	uint32_t name;
	uint32_t pad0;
	uint32_t property;
	uint32_t pad;
	uint64_t value;
	uint64_t reserved[2];
};

struct xe_device_query {
	uint64_t extensions;
	uint32_t query;
	uint32_t size;
	uint64_t data;
	uint64_t reserved[2];
};

struct xe_query_gt {
	uint16_t type, tile_id, gt_id, pad[3];
	uint32_t reference_clock;
	uint64_t near_mem_regions, far_mem_regions;
	uint16_t ip_ver_major, ip_ver_minor, ip_ver_rev, pad2;
	uint64_t reserved[7];
};

struct xe_query_gt_list {
	uint32_t num_gt, pad;
	struct xe_query_gt gt_list[];
};

struct xe_query_eu_stall {
	uint64_t extensions;
	uint64_t capabilities;
	uint64_t record_size;
	uint64_t per_xecore_buf_size;
	uint64_t reserved[5];
	uint64_t num_sampling_rates;
	uint64_t sampling_rates[];
};

struct xe_query_config {
	uint32_t num_params, pad;
	uint64_t info[];
};

/* DRM_XE_DEVICE_QUERY_OA_UNITS reply (xe_drm.h; xe_drm.h, the OA unit names the
 * fields but not the layout): a 16-byte header, then variable-size units of
 * 72 bytes plus num_engines 8-byte engine_class_instance entries. Newer
 * headers split reserved[0] into gt_id + reserved1[3]; older leave it 0. */
struct xe_query_oa_units {
	uint64_t extensions;
	uint32_t num_oa_units, pad;
	/* units follow */
};

struct xe_oa_unit {
	uint64_t extensions;
	uint32_t oa_unit_id, oa_unit_type;
	uint64_t capabilities;
	uint64_t oa_timestamp_freq;
	uint64_t reserved[4];
	uint64_t num_engines;
	/* num_engines x { u16 engine_class, engine_instance, gt_id, pad } */
};

/* DRM_XE_OBSERVATION_IOCTL_INFO (xe_drm.h) */
struct xe_oa_stream_info {
	uint64_t extensions;
	uint64_t oa_buf_size;
	uint64_t reserved[3];
};

_Static_assert(sizeof(struct xe_observation_param) == 32, "xe_drm.h");
_Static_assert(sizeof(struct xe_ext_set_property) == 48, "xe_drm.h");
_Static_assert(sizeof(struct xe_device_query) == 40, "xe_drm.h");
_Static_assert(sizeof(struct xe_query_gt) == 96, "xe_drm.h");
_Static_assert(sizeof(struct xe_query_eu_stall) == 80, "xe_drm.h");
_Static_assert(sizeof(struct xe_query_oa_units) == 16, "xe_drm.h");
_Static_assert(sizeof(struct xe_oa_unit) == 72, "xe_drm.h");
_Static_assert(sizeof(struct xe_oa_stream_info) == 40, "xe_drm.h");

#endif
