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
	struct xe_stream_cfg cfg; /* ready for xe_stream_new (EU stall) */
	uint64_t rates[16];	  /* advertised rates, fastest first */
	unsigned nrates;
};

struct xe_device {
	char node[64]; /* /dev/dri/renderD128 */
	int fd;
	uint16_t devid;
	unsigned ngts;
	struct xe_gt_desc gts[XE_MAX_GTS];
};

/* The ioctl-backed ops; ctx unused (NULL). */
extern const struct xe_obs_ops xe_device_ops;

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
/* Choose a rate: the advertised one nearest to want (0: slowest). */
uint64_t xe_pick_rate(const uint64_t *rates, unsigned n, uint64_t want);

#endif
