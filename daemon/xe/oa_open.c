// SPDX-License-Identifier: MIT
/* The OA stream open on hardware (xe_drm.h, the OA unit; layouts in xe_uapi.h). */
#include "oa_open.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/ioctl.h>
#include <unistd.h>

int xe_oa_find_oag(const void *buf, size_t len, struct xe_oa_unit_info *out)
{
	const uint8_t *p = buf;
	struct xe_query_oa_units h;
	size_t off = sizeof(h);

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, p, sizeof(h));
	for (uint32_t i = 0; i < h.num_oa_units; i++) {
		struct xe_oa_unit u;

		if (len - off < sizeof(u))
			return -EPROTO;
		memcpy(&u, p + off, sizeof(u));
		/* elements vary in size: 72 bytes plus 8 per engine */
		if (u.num_engines > (len - off - sizeof(u)) / 8)
			return -EPROTO;
		if (u.oa_unit_type == XE_OA_UNIT_TYPE_OAG) {
			*out = (struct xe_oa_unit_info){
				.id = u.oa_unit_id,
				.type = u.oa_unit_type,
				.capabilities = u.capabilities,
				.ts_freq = u.oa_timestamp_freq,
				.num_engines = u.num_engines,
			};
			return 0;
		}
		off += sizeof(u) + (size_t)u.num_engines * 8;
	}
	return -ENOENT;
}

void xe_props_chain(struct xe_ext_set_property *p, const struct xe_prop *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		p[i] = (struct xe_ext_set_property){
			.name = XE_EXT_SET_PROPERTY,
			.property = kv[i].id,
			.value = kv[i].value,
		};
		p[i].next_extension = i + 1 < n ? (uintptr_t)&p[i + 1] : 0;
	}
}

void xe_oa_props(struct xe_ext_set_property p[XE_OA_NPROPS], uint32_t unit, uint64_t metric_set,
		 uint32_t exponent)
{
	const struct xe_prop kv[XE_OA_NPROPS] = {
		{XE_OA_PROP_OA_UNIT_ID, unit},
		{XE_OA_PROP_SAMPLE_OA, 1},
		{XE_OA_PROP_OA_METRIC_SET, metric_set},
		{XE_OA_PROP_OA_FORMAT, XE_OA_FORMAT_PEC},
		{XE_OA_PROP_OA_PERIOD_EXPONENT, exponent},
		{XE_OA_PROP_OA_DISABLED, 1},
	};

	xe_props_chain(p, kv, XE_OA_NPROPS);
}

uint32_t xe_oa_exponent(uint64_t ts_freq, uint64_t period_ns)
{
	uint32_t e = 0;

	if (!ts_freq)
		return 0;
	if (!period_ns) {
		while (e < 63 && (ts_freq >> (e + 1)))
			e++;
		return e ? e - 1 : 0; /* floor(log2(freq)) - 1 */
	}
	/* 2^(e+1) / freq <= period, i.e. 2^(e+1) * 1e9 <= period * freq */
	for (e = 0; e < 31; e++) {
		unsigned __int128 lhs = (unsigned __int128)1000000000u << (e + 2);

		if (lhs > (unsigned __int128)period_ns * ts_freq)
			break;
	}
	return e;
}

static int read_u64_file(const char *path, uint64_t *v)
{
	char buf[32], *end;
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (end == buf || errno || (*end && *end != '\n'))
		return -EPROTO;
	return 0;
}

int xe_oa_metric_set_id(const char *sysfs_drm, const char *node, const char *uuid, uint64_t *id)
{
	char path[512], card[64] = "";
	struct dirent *de;
	DIR *d;
	int r;

	/* the card of a render node: <sysfs>/renderD128/device/drm/cardN */
	snprintf(path, sizeof(path), "%s/%s/device/drm", sysfs_drm, node);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "card", 4) && strlen(de->d_name) < sizeof(card)) {
			snprintf(card, sizeof(card), "%s", de->d_name);
			break;
		}
	closedir(d);
	if (!card[0])
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/metrics/%s/id", sysfs_drm, card, uuid);
	r = read_u64_file(path, id);
	return r == -EPROTO ? r : r < 0 ? -ENOENT : 0;
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	int r;

	do {
		r = ioctl(fd, req, arg);
	} while (r < 0 && (errno == EINTR || errno == EAGAIN));
	return r < 0 ? -errno : r;
}

int xe_oa_stream_open(const struct xe_stream_cfg *cfg, uint64_t *oa_buf_size)
{
	struct xe_ext_set_property p[XE_OA_NPROPS];
	struct xe_observation_param op = {
		.observation_type = XE_OBS_TYPE_OA,
		.observation_op = XE_OBS_OP_STREAM_OPEN,
		.param = (uintptr_t)&p[0],
	};
	struct xe_oa_stream_info info = {0};
	int fd, r;

	xe_oa_props(p, cfg->oa_unit, cfg->oa_metric_set, cfg->oa_exponent);
	fd = xioctl(cfg->drm_fd, XE_IOCTL_OBSERVATION, &op);
	if (fd < 0)
		return fd;
	/* INFO is OA-only (xe_drm.h); an older kernel without it still streams */
	r = xioctl(fd, XE_OBS_IOCTL_INFO, &info);
	if (oa_buf_size)
		*oa_buf_size = r < 0 ? 0 : info.oa_buf_size;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}
