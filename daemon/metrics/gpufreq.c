// SPDX-License-Identifier: MIT
/*
 * GPU clock from sysfs (gpufreq.h). Paths, per card:
 *   xe:   cardN/device/tileT/gtG/freq0/act_freq      (MHz)
 *   i915: cardN/gt/gtG/rps_act_freq_mhz               (MHz, multi-GT kernels)
 *         cardN/gt_act_freq_mhz                       (MHz, GT 0, older kernels)
 */
#include "gpufreq.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "snap.h"

#define GPUFREQ_MAX_CARDS 16

static bool read_mhz(const char *path, double *mhz)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0 || !isdigit((unsigned char)buf[0]))
		return false;
	buf[n] = '\0';
	*mhz = strtod(buf, NULL);
	return true;
}

/* "card" followed by digits only: connectors are cardN-NAME. */
static bool is_card(const char *n)
{
	if (strncmp(n, "card", 4) || !n[4])
		return false;
	for (n += 4; *n; n++)
		if (!isdigit((unsigned char)*n))
			return false;
	return true;
}

static void add(struct msnap *s, const char *card, const char *gt, double mhz)
{
	msnap_add(s, mhz * 1e6, "card", card, "gt", gt, NULL);
}

static void card_xe(struct msnap *s, const char *root, const char *card)
{
	char path[512], gt[16];
	double mhz;

	for (unsigned t = 0; t < 4; t++)
		for (unsigned g = 0; g < 4; g++) {
			snprintf(path, sizeof(path), "%s/%s/device/tile%u/gt%u/freq0/act_freq",
				 root, card, t, g);
			snprintf(gt, sizeof(gt), "%u", g); /* gt numbers are device-wide */
			if (read_mhz(path, &mhz))
				add(s, card, gt, mhz);
		}
}

static void card_i915(struct msnap *s, const char *root, const char *card)
{
	char path[512], gt[16];
	double mhz;
	bool any = false;

	for (unsigned g = 0; g < 4; g++) {
		snprintf(path, sizeof(path), "%s/%s/gt/gt%u/rps_act_freq_mhz", root, card, g);
		snprintf(gt, sizeof(gt), "%u", g);
		if (read_mhz(path, &mhz)) {
			add(s, card, gt, mhz);
			any = true;
		}
	}
	snprintf(path, sizeof(path), "%s/%s/gt_act_freq_mhz", root, card);
	if (!any && read_mhz(path, &mhz))
		add(s, card, "0", mhz);
}

void gpufreq_emit(struct msnap *s, const char *drm_root)
{
	char path[512];
	struct dirent *de;
	unsigned cards = 0;
	DIR *d = opendir(drm_root);

	msnap_family(
		s, "gpuprof_gpu_actual_frequency_hertz", MSNAP_GAUGE, "hertz",
		"GPU clock now, as the xe or i915 driver reports it in sysfs, per card and GT.");
	if (!d)
		return;
	while ((de = readdir(d)) && cards < GPUFREQ_MAX_CARDS) {
		if (!is_card(de->d_name))
			continue;
		cards++;
		snprintf(path, sizeof(path), "%s/%s/device/tile0", drm_root, de->d_name);
		if (access(path, F_OK) == 0)
			card_xe(s, drm_root, de->d_name);
		else
			card_i915(s, drm_root, de->d_name);
	}
	closedir(d);
}
