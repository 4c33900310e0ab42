/* SPDX-License-Identifier: MIT */
/*
 * Xe devices on this host: DRM render nodes whose driver is "xe", their
 * main GTs and EU-stall parameters (DRM_XE_DEVICE_QUERY_EU_STALL), and the
 * real xe_obs_ops (observation ioctls on the DRM fd).
 */
#ifndef GPUPROF_XE_DEVICE_H
#define GPUPROF_XE_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

#define XE_MAX_GTS 16

struct xe_gt_desc {
	struct xe_stream_cfg cfg;    /* ready for xe_stream_new (EU stall) */
	uint16_t ip_major, ip_minor; /* graphics IP version (IGA platform) */
	uint64_t rates[16];	     /* advertised rates, fastest first */
	unsigned nrates;
};

/* The device's OA stream (xe_drm.h, the OA unit), filled by xe_device_probe_oa. */
struct xe_oa_desc {
	bool ok;		  /* cfg is ready for xe_stream_new */
	struct xe_stream_cfg cfg; /* oa = true; rate = OA timestamp Hz */
	uint64_t oa_buf_size;	  /* from IOCTL_INFO at the last open; 0 unknown */
	char why[200];		  /* !ok: "unavailable: ..." */
};

struct xe_device {
	char node[64]; /* /dev/dri/renderD128 */
	int fd;
	uint16_t devid;
	unsigned ngts;
	struct xe_gt_desc gts[XE_MAX_GTS];
	struct xe_oa_desc oa;
};

/* The ioctl-backed ops. ctx: NULL for EU stall; for an OA stream the
 * device's struct xe_oa_desc (open stores oa_buf_size there). */
extern const struct xe_obs_ops xe_device_ops;

/* DRM_XE_DEVICE_QUERY two-call protocol: *out malloc()ed; returns its
 * size or -errno (-ENODATA for an empty reply). */
int xe_device_query(int fd, uint32_t what, void **out);

/*
 * Prepare d's OA stream: first OAG unit of the OA_UNITS query, metric set
 * XE_OA_METRIC_UUID registered in sysfs_drm (NULL: /sys/class/drm), period
 * exponent for period_ns (0: iaprof's, about 1 s). Sets d->oa (ok, or why
 * "unavailable: ...") and returns 0 or -errno.
 */
int xe_device_probe_oa(struct xe_device *d, uint64_t period_ns, const char *sysfs_drm);

/*
 * Find xe devices and their EU-stall-capable main GTs. rate 0 picks the
 * slowest advertised rate (iaprof's choice; least overhead for always-on).
 * Returns how many devices were filled into devs (0 with why set when none
 * is usable: no DRM, no xe, kernel < 6.15, no permission...).
 */
int xe_devices_probe(struct xe_device *devs, int max, uint64_t rate, char *why, size_t whylen);
void xe_device_close(struct xe_device *d);

/* Pure helpers, tested: kernel release "6.15.0-rc1" >= 6.15? */
bool xe_kernel_release_ok(const char *release);
/* Choose a rate: the advertised one nearest to want (0: slowest,
 * UINT64_MAX: fastest). */
uint64_t xe_pick_rate(const uint64_t *rates, unsigned n, uint64_t want);

#endif
