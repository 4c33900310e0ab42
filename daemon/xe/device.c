// SPDX-License-Identifier: MIT
/* Device discovery and the ioctl-backed stream ops (xe_drm.h). */
#include "device.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <xf86drm.h>

#include "oa.h"
#include "oa_open.h"
#include "xe_uapi.h"

bool xe_kernel_release_ok(const char *rel)
{
	unsigned maj = 0, min = 0;

	if (sscanf(rel, "%u.%u", &maj, &min) != 2)
		return false;
	return maj > 6 || (maj == 6 && min >= 15);
}

uint64_t xe_pick_rate(const uint64_t *rates, unsigned n, uint64_t want)
{
	uint64_t best = 0, bd = UINT64_MAX;

	if (!n)
		return 0;
	if (!want)
		return rates[n - 1]; /* sorted fastest to slowest (xe_drm.h) */
	if (want == UINT64_MAX)
		return rates[0];
	for (unsigned i = 0; i < n; i++) {
		uint64_t dd = rates[i] > want ? rates[i] - want : want - rates[i];

		if (dd < bd)
			bd = dd, best = rates[i];
	}
	return best;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do {
		r = ioctl(fd, req, arg);
	} while (r < 0 && (errno == EINTR || errno == EAGAIN));
	return r < 0 ? -errno : r;
}

/* Two-call query protocol (xe_drm.h): size first, then data. */
int xe_device_query(int fd, uint32_t what, void **out)
{
	struct xe_device_query q = {.query = what};
	void *buf;
	int r = xioctl(fd, XE_IOCTL_DEVICE_QUERY, &q);

	if (r < 0)
		return r;
	if (!q.size)
		return -ENODATA;
	buf = calloc(1, q.size);
	if (!buf)
		return -ENOMEM;
	q.data = (uintptr_t)buf;
	r = xioctl(fd, XE_IOCTL_DEVICE_QUERY, &q);
	if (r < 0) {
		free(buf);
		return r;
	}
	*out = buf;
	return (int)q.size;
}

static int dev_open(void *ctx, const struct xe_stream_cfg *cfg)
{
	/* SAMPLE_RATE, WAIT_NUM_REPORTS and GT_ID, linked by next_extension;
	 * param points at the first (the xe driver's EU-stall stream). */
	const struct xe_prop kv[3] = {
		{XE_EU_STALL_PROP_SAMPLE_RATE, cfg->rate},
		{XE_EU_STALL_PROP_WAIT_NUM_REPORTS,
		 cfg->wait_num_reports ? cfg->wait_num_reports : 1},
		{XE_EU_STALL_PROP_GT_ID, cfg->gt_id},
	};
	struct xe_ext_set_property p[3];
	struct xe_observation_param op = {
		.observation_type = XE_OBS_TYPE_EU_STALL,
		.observation_op = XE_OBS_OP_STREAM_OPEN,
		.param = (uintptr_t)&p[0],
	};
	int fd;

	if (cfg->oa)
		return xe_oa_stream_open(cfg,
					 ctx ? &((struct xe_oa_desc *)ctx)->oa_buf_size : NULL);
	xe_props_chain(p, kv, 3);
	fd = xioctl(cfg->drm_fd, XE_IOCTL_OBSERVATION, &op);
	if (fd < 0)
		return fd;
	/* The fd comes blocking and without O_CLOEXEC (the xe driver's EU-stall stream). */
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int dev_enable(void *ctx, int fd)
{
	(void)ctx;
	return xioctl(fd, XE_OBS_IOCTL_ENABLE, NULL);
}

static int dev_disable(void *ctx, int fd)
{
	(void)ctx;
	return xioctl(fd, XE_OBS_IOCTL_DISABLE, NULL);
}

static ssize_t dev_read(void *ctx, int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	(void)ctx;
	return n < 0 ? -errno : n;
}

static void dev_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

const struct xe_obs_ops xe_device_ops = {
	.open = dev_open,
	.enable = dev_enable,
	.disable = dev_disable,
	.read = dev_read,
	.close = dev_close,
};

/* Fill d's GTs; returns how many are usable, or -errno. */
static int probe_gts(struct xe_device *d, uint64_t want_rate, char *why, size_t whylen)
{
	struct xe_query_gt_list *gl = NULL;
	struct xe_query_eu_stall *es = NULL;
	int r;

	r = xe_device_query(d->fd, XE_QUERY_EU_STALL, (void **)&es);
	if (r < 0) {
		/* -EINVAL: the kernel predates the EU_STALL query (< 6.15);
		 * -ENODEV: a platform without EU stall (the xe driver's EU-stall stream). */
		snprintf(why, whylen, "%s: EU-stall query: %s", d->node, strerror(-r));
		return r;
	}
	if ((size_t)r < sizeof(*es) || es->num_sampling_rates > (r - sizeof(*es)) / 8 ||
	    !es->num_sampling_rates || !es->record_size || es->record_size > 4096) {
		snprintf(why, whylen, "%s: malformed EU-stall query reply", d->node);
		r = -EPROTO;
		goto out;
	}
	r = xe_device_query(d->fd, XE_QUERY_GT_LIST, (void **)&gl);
	if (r < 0) {
		snprintf(why, whylen, "%s: GT list query: %s", d->node, strerror(-r));
		goto out;
	}
	d->ngts = 0;
	for (uint32_t i = 0; i < gl->num_gt && d->ngts < XE_MAX_GTS; i++) {
		const struct xe_query_gt *g = &gl->gt_list[i];
		struct xe_gt_desc *o = &d->gts[d->ngts];
		const struct xe_decoder *dec;

		if ((size_t)r < sizeof(*gl) + (i + 1) * sizeof(*g))
			break;
		if (g->type != XE_GT_TYPE_MAIN)
			continue;
		dec = xe_decoder_find(g->ip_ver_major, g->ip_ver_minor);
		if (!dec) {
			snprintf(why, whylen, "%s: graphics IP %u.%u has no EU-stall layout",
				 d->node, g->ip_ver_major, g->ip_ver_minor);
			continue;
		}
		memset(o, 0, sizeof(*o));
		o->nrates = es->num_sampling_rates > 16 ? 16 : (unsigned)es->num_sampling_rates;
		memcpy(o->rates, es->sampling_rates, o->nrates * 8);
		snprintf(o->cfg.name, sizeof(o->cfg.name), "%s/gt%u", strrchr(d->node, '/') + 1,
			 g->gt_id);
		o->cfg.drm_fd = d->fd;
		o->cfg.gt_id = g->gt_id;
		o->cfg.rate = xe_pick_rate(o->rates, o->nrates, want_rate);
		o->cfg.record_size = es->record_size;
		o->cfg.dec = dec;
		o->ip_major = g->ip_ver_major;
		o->ip_minor = g->ip_ver_minor;
		/* Wake at a quarter of one XeCore buffer, not per row: the
		 * kernel's 5 ms poll worker is what bounds latency anyway. */
		o->cfg.wait_num_reports = (uint32_t)(es->per_xecore_buf_size / es->record_size / 4);
		d->ngts++;
	}
	r = (int)d->ngts;
out:
	free(gl);
	free(es);
	return r;
}

int xe_device_probe_oa(struct xe_device *d, uint64_t period_ns, const char *sysfs_drm)
{
	struct xe_oa_desc *o = &d->oa;
	struct xe_oa_unit_info u;
	uint64_t set;
	void *buf = NULL;
	int r;

	memset(o, 0, sizeof(*o));
	r = xe_device_query(d->fd, XE_QUERY_OA_UNITS, &buf);
	if (r >= 0)
		r = xe_oa_find_oag(buf, (size_t)r, &u);
	free(buf);
	if (r < 0) {
		snprintf(o->why, sizeof(o->why), "unavailable: %s: OA unit query: %s", d->node,
			 r == -ENOENT ? "no OAG unit" : strerror(-r));
		return r;
	}
	/* The register list of the metric set is not documented here, so
	 * only a set the kernel already has (sysfs) is used: no ADD_CONFIG. */
	r = xe_oa_metric_set_id(sysfs_drm ? sysfs_drm : "/sys/class/drm", strrchr(d->node, '/') + 1,
				XE_OA_METRIC_UUID, &set);
	if (r < 0) {
		snprintf(o->why, sizeof(o->why), "unavailable: metric set %s not registered",
			 XE_OA_METRIC_UUID);
		return r;
	}
	snprintf(o->cfg.name, sizeof(o->cfg.name), "%s/oa%u", strrchr(d->node, '/') + 1, u.id);
	o->cfg.drm_fd = d->fd;
	o->cfg.gt_id = d->ngts ? d->gts[0].cfg.gt_id : 0;
	o->cfg.oa = true;
	o->cfg.rate = u.ts_freq;
	o->cfg.oa_unit = u.id;
	o->cfg.oa_metric_set = set;
	o->cfg.oa_exponent = xe_oa_exponent(u.ts_freq, period_ns);
	o->cfg.record_size = XE_OA_PEC_REPORT_BYTES;
	o->ok = true;
	return 0;
}

int xe_devices_probe(struct xe_device *devs, int max, uint64_t rate, char *why, size_t whylen)
{
	struct utsname u;
	DIR *dir;
	struct dirent *de;
	int n = 0, seen = 0;

	snprintf(why, whylen, "no DRM render node (/dev/dri/renderD*)");
	dir = opendir("/dev/dri");
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		struct xe_device *d = &devs[n];
		drmVersionPtr v;

		if (strncmp(de->d_name, "renderD", 7))
			continue;
		memset(d, 0, sizeof(*d));
		snprintf(d->node, sizeof(d->node), "/dev/dri/%.40s", de->d_name);
		d->fd = open(d->node, O_RDWR | O_CLOEXEC);
		if (d->fd < 0) {
			snprintf(why, whylen, "%s: %s", d->node, strerror(errno));
			continue;
		}
		v = drmGetVersion(d->fd);
		if (!v || strcmp(v->name, "xe")) {
			if (!seen)
				snprintf(why, whylen, "no device driven by xe (%s is %s)", d->node,
					 v ? v->name : "unknown");
			drmFreeVersion(v);
			close(d->fd);
			continue;
		}
		drmFreeVersion(v);
		seen++;
		if (uname(&u) == 0 && !xe_kernel_release_ok(u.release)) {
			snprintf(why, whylen, "kernel %s has no xe EU-stall stream (needs 6.15)",
				 u.release);
			close(d->fd);
			continue;
		}
		if (probe_gts(d, rate, why, whylen) <= 0) {
			close(d->fd);
			continue;
		}
		n++;
	}
	closedir(dir);
	return n;
}

void xe_device_close(struct xe_device *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}
