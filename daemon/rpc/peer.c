// SPDX-License-Identifier: MIT
/*
 * Whether a connecting peer is privileged, decided once at accept from the
 * credentials the kernel fixed when the peer called connect(): the
 * SO_PEERCRED uid and gid and the SO_PEERGROUPS supplementary groups.
 *
 * Never from /proc/PID of the SO_PEERCRED pid: by the time the daemon
 * accepts, that pid may have exec()ed a setuid-root program (or the peer
 * forked, the child keeping the socket and the parent exec()ing one), and
 * its capabilities then say nothing about who connected.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "capjob.h"
#include "config.h"
#include "server_int.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

/* Is gid among the peer's supplementary groups? False when the kernel
 * cannot tell (before 4.13): the admin group then counts by the primary
 * gid only, which errs on the side of less privilege. */
static bool peer_in_group(int fd, gid_t gid)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE || len == 0)
			return false;
		/* len now holds the size the groups need */
		groups = malloc(len);
		if (!groups || getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			free(groups);
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid) {
			found = true;
			break;
		}
	if (groups != small)
		free(groups);
	return found;
}

bool rpc_peer_privileged(int fd, uid_t uid, gid_t gid, const struct config *cfg)
{
	if (uid == 0)
		return true;
	if (!cfg->admin_group_set)
		return false;
	return gid == cfg->admin_gid || peer_in_group(fd, cfg->admin_gid);
}

/* An integer sysctl under /proc/sys, or def when it cannot be read. */
static long read_sysctl(const char *path, long def)
{
	char buf[32];
	long v = def;
	FILE *f = fopen(path, "re");

	if (!f)
		return def;
	if (fgets(buf, sizeof(buf), f))
		v = strtol(buf, NULL, 10);
	fclose(f);
	return v;
}

/*
 * The kernel's own rule for that user (kallsyms_show_value() without
 * CAP_SYSLOG): kernel addresses are shown only with kptr_restrict 0 and
 * perf_event_paranoid at most 1. Read for each request, so that tightening
 * either applies at once; unreadable counts as restrictive.
 */
void rpc_peer_view(const struct rpc_req *req, struct render_view *v)
{
	*v = (struct render_view){0};
	if (req->privileged)
		return;
	v->kernel_hidden = read_sysctl("/proc/sys/kernel/kptr_restrict", 2) != 0 ||
			   read_sysctl("/proc/sys/kernel/perf_event_paranoid", 2) > 1;
}
