// SPDX-License-Identifier: MIT
/*
 * BPF program run time (bpfstats.h). The programs are found among the
 * daemon's own descriptors rather than asked of each collector: every
 * collector's programs are there, and none of them has to know.
 */
#include "bpfstats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "snap.h"

#define BPFSTATS_MAX 256 /* distinct program names reported */

struct prog_sum {
	char name[BPF_OBJ_NAME_LEN];
	unsigned long long run_ns, runs;
};

struct prog_seen {
	struct prog_sum sums[BPFSTATS_MAX];
	unsigned nsums;
	uint32_t ids[1024]; /* programs counted: one program has many fds */
	unsigned nids;
};

int bpfstats_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	return fd < 0 ? -errno : fd;
}

static bool kernel_accounts(void)
{
	char c = '0';
	int fd = open("/proc/sys/kernel/bpf_stats_enabled", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	if (read(fd, &c, 1) != 1)
		c = '0';
	close(fd);
	return c == '1';
}

static bool seen_id(struct prog_seen *ps, uint32_t id)
{
	for (unsigned i = 0; i < ps->nids; i++)
		if (ps->ids[i] == id)
			return true;
	if (ps->nids < sizeof(ps->ids) / sizeof(ps->ids[0]))
		ps->ids[ps->nids++] = id;
	return false;
}

static void add_prog(struct prog_seen *ps, int fd)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	unsigned i;

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0 || seen_id(ps, info.id))
		return;
	for (i = 0; i < ps->nsums; i++)
		if (!strncmp(ps->sums[i].name, info.name, sizeof(info.name)))
			break;
	if (i == ps->nsums) {
		if (ps->nsums == BPFSTATS_MAX)
			return;
		snprintf(ps->sums[i].name, sizeof(ps->sums[i].name), "%.*s", (int)sizeof(info.name),
			 info.name);
		ps->nsums++;
	}
	ps->sums[i].run_ns += info.run_time_ns;
	ps->sums[i].runs += info.run_cnt;
}

void bpfstats_emit(struct msnap *s, bool on)
{
	struct prog_seen *ps;
	struct dirent *de;
	DIR *d;

	if (!on && !kernel_accounts())
		return;
	ps = calloc(1, sizeof(*ps));
	d = opendir("/proc/self/fd");
	if (!ps || !d)
		goto out;
	while ((de = readdir(d))) {
		char path[64], target[64];
		ssize_t n;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n = readlink(path, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, "anon_inode:bpf-prog"))
			add_prog(ps, fd);
	}
	msnap_family(s, "gpuprof_bpf_program_run_seconds", MSNAP_COUNTER, "seconds",
		     "Time the daemon's BPF programs ran, by program name "
		     "(kernel BPF statistics).");
	for (unsigned i = 0; i < ps->nsums; i++)
		msnap_add(s, (double)ps->sums[i].run_ns / 1e9, "program", ps->sums[i].name, NULL);
	msnap_family(s, "gpuprof_bpf_program_runs", MSNAP_COUNTER, NULL,
		     "Times the daemon's BPF programs ran, by program name "
		     "(kernel BPF statistics).");
	for (unsigned i = 0; i < ps->nsums; i++)
		msnap_add(s, (double)ps->sums[i].runs, "program", ps->sums[i].name, NULL);
out:
	if (d)
		closedir(d);
	free(ps);
}
