// SPDX-License-Identifier: MIT
/*
 * One CUPTI library connection: who it is (fixed at accept, from the
 * kernel), the watch on its process, its reads, its end.
 *
 * Identity. The pid and uid are SO_PEERCRED's, which the kernel fixed at
 * connect(); nothing a message says about a pid or uid is read. The
 * records' owner (store_rec.uid, what the unprivileged filter compares) is
 * the userspace form of bpf/owner.bpf.h's rule, taken from the process at
 * accept: the uid when every uid and gid of the process is one value, the
 * uids are the connecting uid, no capability is permitted and the process
 * is dumpable (/proc/PID is owned by it, task_dump_owner()); 0 for root;
 * else GPUPROF_OWNER_ROOT_ONLY. The /proc reads are bracketed by the pidfd:
 * if the process is gone when they end, the pid may be another's and the
 * connection is refused.
 *
 * Pid reuse. The connection lives as long as the process that connected:
 * its pidfd (SO_PEERPIDFD, or pidfd_open() checked against the socket's
 * credentials on kernels before 6.5) is polled, and when it exits the
 * messages already queued are read and the connection is closed. A child
 * that inherited the socket cannot go on feeding records under a pid the
 * kernel may hand to someone else.
 */
#include "cupti_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector.h"
#include "gpd.h"
#include "owner_abi.h"
#include "store/store.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

/* Messages read per wake-up, so one busy peer cannot hold the loop. */
#define CUPTI_READS_PER_WAKE 64

void cupti_warn(struct cupti *cu, const char *fmt, ...)
{
	uint64_t now = gpd_now_ns();
	char line[256];
	va_list ap;

	/* one line a second at most: a hostile peer reconnecting in a loop
	 * must not flood the journal */
	if (now < cu->log_next_ns) {
		cu->log_suppressed++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (cu->log_suppressed)
		log_warn("cupti: %s (%u similar lines suppressed)", line, cu->log_suppressed);
	else
		log_warn("cupti: %s", line);
	cu->log_suppressed = 0;
	cu->log_next_ns = now + 1000000000ull;
}

static bool process_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
}

/* The pidfd of the connecting process. */
static int peer_pidfd(int fd, pid_t pid)
{
	struct ucred uc;
	socklen_t len = sizeof(int);
	int pidfd = -1;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0)
		return pidfd;
	/* the kernel knows the option, the process is gone: opening the pid
	 * now could open another process that has it since */
	if (errno != ENOPROTOOPT && errno != EINVAL)
		return -ESRCH;
	/* Before 6.5: open the pid, then check that the socket's pid is
	 * still a live process, so the pidfd is of the one that connected
	 * unless it exited and the pid was reused in between, which needs a
	 * full pid wrap within this call. */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	len = sizeof(uc);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.pid != pid ||
	    !process_alive(pidfd)) {
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

/* What /proc says of pid: all uids and gids equal to uid / one gid, no
 * permitted capability, dumpable. */
static bool proc_readable_by(pid_t pid, uid_t uid, char comm[16])
{
	char path[64], line[256];
	unsigned u[4], g[4];
	unsigned long long cap = ~0ull;
	struct stat st;
	int seen = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(comm, 16, f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4)
			seen |= 1;
		else if (sscanf(line, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4)
			seen |= 2;
		else if (sscanf(line, "CapPrm: %llx", &cap) == 1)
			seen |= 4;
	}
	fclose(f);
	if (seen != 7 || cap)
		return false;
	for (int i = 0; i < 4; i++)
		if (u[i] != uid || g[i] != g[0])
			return false;
	return st.st_uid == uid && st.st_gid == g[0];
}

static unsigned peers_of(const struct cupti *cu, uid_t uid)
{
	unsigned n = 0;

	for (const struct cupti_peer *p = cu->peers; p; p = p->next)
		n += !p->dead && p->uid == uid;
	return n;
}

static void on_closed(uv_handle_t *h)
{
	struct cupti_peer *p = h->data;
	struct cupti *cu = p->cu;

	if (--p->closing)
		return;
	close(p->fd);
	close(p->pidfd);
	free(p);
	cupti_handle_closed(cu);
}

void cupti_peer_close(struct cupti_peer *p, enum cupti_close why, const char *fmt, ...)
{
	struct cupti *cu = p->cu;
	struct cupti_peer **pp;
	va_list ap;

	if (p->dead)
		return;
	p->dead = true;
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
		va_end(ap);
	}
	cu->tot.closed[why]++;
	if (why == CUPTI_CLOSE_MALFORMED || why == CUPTI_CLOSE_NO_HELLO)
		cupti_warn(cu, "closed pid %u (uid %u, %s): %s", p->pid, p->uid, p->comm_text,
			   p->last_error);
	if (p->pc.lib_seen) {
		memmove(&cu->pc_closed[1], &cu->pc_closed[0],
			(CUPTI_PC_CLOSED - 1) * sizeof(cu->pc_closed[0]));
		cu->pc_closed[0].pid = p->pid;
		cu->pc_closed[0].owner = p->owner;
		cu->pc_closed[0].closed_ns = gpd_now_ns();
		cu->pc_closed[0].s = p->pc.lib;
		if (cu->npc_closed < CUPTI_PC_CLOSED)
			cu->npc_closed++;
	}
	if (p->lib.seen)
		cupti_libsum_add(&cu->tot.lib, &p->lib.s);
	for (pp = &cu->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	cu->npeers--;
	cupti_strtab_clear(cu, &p->strs);
	cupti_pc_clear(cu, &p->pc);
	if (p->comm)
		store_str_unref(cu->store, p->comm);
	p->comm = 0;
	cu->closing++;
	p->closing = 2;
	uv_close((uv_handle_t *)&p->sock_poll, on_closed);
	uv_close((uv_handle_t *)&p->pid_poll, on_closed);
}

/* Read up to max messages; false once the peer is closed. */
static bool read_some(struct cupti_peer *p, unsigned max)
{
	struct cupti *cu = p->cu;

	for (unsigned i = 0; i < max && !p->dead; i++) {
		ssize_t n = recv(p->fd, cu->buf, GPI_MSG_MAX, MSG_DONTWAIT | MSG_TRUNC);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return true;
			cupti_peer_close(p, CUPTI_CLOSE_HANGUP, "recv: %s", strerror(errno));
			return false;
		}
		if (n == 0) {
			cupti_peer_close(p, CUPTI_CLOSE_HANGUP, NULL);
			return false;
		}
		if ((size_t)n > GPI_MSG_MAX) {
			cupti_peer_close(p, CUPTI_CLOSE_MALFORMED, "message of %zd bytes (max %u)",
					 n, GPI_MSG_MAX);
			return false;
		}
		if (cupti_decode(p, cu->buf, (size_t)n, gpd_now_ns()) < 0) {
			cupti_peer_close(p, CUPTI_CLOSE_MALFORMED, NULL);
			return false;
		}
	}
	return !p->dead;
}

static void on_sock(uv_poll_t *h, int status, int events)
{
	struct cupti_peer *p = h->data;

	if (p->dead)
		return;
	if (status < 0) {
		cupti_peer_close(p, CUPTI_CLOSE_HANGUP, "poll: %s", uv_strerror(status));
		return;
	}
	if (!read_some(p, CUPTI_READS_PER_WAKE))
		return;
	if (events & UV_DISCONNECT)
		cupti_peer_close(p, CUPTI_CLOSE_HANGUP, NULL);
}

/* The process that connected exited: what it queued before is its own;
 * read that (bounded), then end the connection. */
static void on_exit_(uv_poll_t *h, int status, int events)
{
	struct cupti_peer *p = h->data;

	(void)status;
	(void)events;
	if (p->dead)
		return;
	if (read_some(p, CUPTI_READS_PER_WAKE))
		cupti_peer_close(p, CUPTI_CLOSE_EXITED, "process exited");
}

void cupti_peer_tick(struct cupti_peer *p, uint64_t now_ns)
{
	if (!p->dead && p->state == CUPTI_PEER_HELLO && now_ns >= p->hello_deadline_ns)
		cupti_peer_close(p, CUPTI_CLOSE_NO_HELLO, "no hello within %llu ms",
				 (unsigned long long)(p->cu->lim.hello_timeout_ns / 1000000));
}

static void refuse(struct cupti *cu, int fd, enum cupti_close why, const char *what, pid_t pid,
		   uid_t uid)
{
	cu->tot.closed[why]++;
	cupti_warn(cu, "refused pid %d (uid %u): %s", (int)pid, (unsigned)uid, what);
	close(fd);
}

int cupti_peer_accept(struct cupti *cu, int fd)
{
	struct cupti_peer *p;
	struct ucred uc = {0};
	socklen_t len = sizeof(uc);
	char comm[16] = "";
	uint32_t owner;
	int pidfd, r;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0 || uc.pid <= 0) {
		/* a peer in a pid namespace we cannot see has pid 0 */
		refuse(cu, fd, CUPTI_CLOSE_CRED, "no peer pid", uc.pid, uc.uid);
		return 0;
	}
	if (cu->npeers >= cu->lim.max_peers) {
		refuse(cu, fd, CUPTI_CLOSE_LIMIT, "cupti.max_peers reached", uc.pid, uc.uid);
		return 0;
	}
	if (uc.uid != 0 && peers_of(cu, uc.uid) >= cu->lim.user_peers) {
		refuse(cu, fd, CUPTI_CLOSE_LIMIT, "cupti.user_peers reached", uc.pid, uc.uid);
		return 0;
	}
	pidfd = peer_pidfd(fd, uc.pid);
	if (pidfd < 0) {
		refuse(cu, fd, CUPTI_CLOSE_CRED, "process gone", uc.pid, uc.uid);
		return 0;
	}
	owner = uc.uid == 0				 ? 0
		: proc_readable_by(uc.pid, uc.uid, comm) ? uc.uid
							 : GPUPROF_OWNER_ROOT_ONLY;
	if (uc.uid == 0)
		proc_readable_by(uc.pid, 0, comm); /* for comm only */
	if (!process_alive(pidfd)) {
		close(pidfd);
		refuse(cu, fd, CUPTI_CLOSE_CRED, "process gone", uc.pid, uc.uid);
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(pidfd);
		close(fd);
		return -ENOMEM;
	}
	p->cu = cu;
	p->fd = fd;
	p->pidfd = pidfd;
	p->pid = (uint32_t)uc.pid;
	p->uid = uc.uid;
	p->owner = owner;
	snprintf(p->comm_text, sizeof(p->comm_text), "%s", comm);
	for (char *c = p->comm_text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	p->comm = store_str_intern(cu->store, p->comm_text, strlen(p->comm_text));
	p->connected_ns = gpd_now_ns();
	p->hello_deadline_ns = p->connected_ns + cu->lim.hello_timeout_ns;
	p->tokens = cu->lim.peer_rate;
	p->tokens_ns = p->connected_ns;
	r = uv_poll_init(cu->loop, &p->sock_poll, fd);
	if (r < 0) {
		if (p->comm)
			store_str_unref(cu->store, p->comm);
		close(pidfd);
		close(fd);
		free(p);
		return r;
	}
	p->sock_poll.data = p;
	r = uv_poll_init(cu->loop, &p->pid_poll, pidfd);
	if (r < 0) { /* the first handle is the loop's now: free it through it */
		if (p->comm)
			store_str_unref(cu->store, p->comm);
		p->dead = true;
		p->closing = 1;
		cu->closing++;
		uv_close((uv_handle_t *)&p->sock_poll, on_closed);
		return r;
	}
	p->sock_poll.data = p;
	p->pid_poll.data = p;
	uv_poll_start(&p->sock_poll, UV_READABLE | UV_DISCONNECT, on_sock);
	uv_poll_start(&p->pid_poll, UV_READABLE, on_exit_);
	p->next = cu->peers;
	cu->peers = p;
	cu->npeers++;
	cu->tot.peers_ever++;
	log_debug("cupti: peer pid %u uid %u (%s) connected, owner %u", p->pid, p->uid,
		  p->comm_text, p->owner);
	return 0;
}
