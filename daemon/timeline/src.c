// SPDX-License-Identifier: MIT
/*
 * Importer input sources (moved out of import.c). A regular file is mapped
 * (read-only, MAP_PRIVATE) a window at a time instead of read(): the copy
 * out of the page cache was ~10 % of the import. The data is still handed
 * out in chunk_size pieces, so offsets, caps and results are those of the
 * read() path. The fd is a client's, and a file truncated under a mapping
 * raises SIGBUS on the next access; so mapping is only used when this
 * process leaves SIGBUS at its default, in which case a handler is
 * installed once: a fault inside the window this thread is reading gets the
 * rest of the window replaced by zero pages (the read then sees zeros,
 * nothing jumps out of half-done work) and the importer fails with -EIO
 * "trace file shrank during import" (src_guard_take(); also when the file
 * ends up shorter than what was read from the mapping: the tail of its last
 * page reads as zeros without a fault); any other SIGBUS gets the default
 * action as before. Everything else (pipes, sockets, a SIGBUS handler of
 * the application's own, mmap failing) uses read(), and so does a large
 * plain file read on the pipe's thread (import.c: it copies the bytes into
 * its pieces anyway). After the size seen at the start, reading continues
 * with read(), so a file still growing is read as before. A file cut while
 * read() reads it (an early end, or shorter at the end than what was
 * read) gives the same -EIO error (src_shrank()).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src.h"

#define MAP_WIN (16u << 20) /* bytes mapped at a time: bounds the RSS it adds */

/* This thread's mapped window, for the SIGBUS handler (initial-exec TLS:
 * no allocation on access from a signal handler). */
static __thread uint8_t *guard_lo __attribute__((tls_model("initial-exec")));
static __thread uint8_t *guard_hi __attribute__((tls_model("initial-exec")));
static __thread volatile sig_atomic_t guard_hit __attribute__((tls_model("initial-exec")));
static struct sigaction bus_old;
static bool bus_ok; /* our handler is installed */
static long page_size;
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uint8_t *a = si->si_addr, *lo = guard_lo, *hi = guard_hi;

	if (lo && a >= lo && a < hi) {
		uint8_t *start = (uint8_t *)((uintptr_t)a & ~(uintptr_t)(page_size - 1));

		if (mmap(start, (size_t)(hi - start), PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
			guard_hit = 1;
			return; /* the faulting read is retried and sees zeros */
		}
	}
	/* not ours: back to the previous (default) action */
	sigaction(SIGBUS, &bus_old, NULL);
	if (si->si_code <= 0) /* sent, not a fault: deliver it again */
		raise(sig);
	(void)uc;
}

static void bus_install(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO };

	page_size = sysconf(_SC_PAGESIZE);
	if (page_size <= 0 || (page_size & (page_size - 1)))
		return;
	if (sigaction(SIGBUS, NULL, &bus_old) < 0 || (bus_old.sa_flags & SA_SIGINFO) ||
	    bus_old.sa_handler != SIG_DFL)
		return; /* the application handles SIGBUS itself: use read() */
	sigemptyset(&sa.sa_mask);
	bus_ok = sigaction(SIGBUS, &sa, NULL) == 0;
}

void src_unmap(struct src *s)
{
	if (s->win) {
		guard_lo = guard_hi = NULL;
		munmap(s->win, s->win_len);
		s->win = NULL;
	}
}

/* Regular file, SIGBUS handled, mmap works: map its first window. */
void src_map_start(struct src *s)
{
	struct sigaction cur_sa;
	struct stat st;
	off_t cur;

	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (cur = lseek(s->fd, 0, SEEK_CUR)) < 0)
		return;
	s->regular = true;
	s->file_size = (uint64_t)st.st_size;
	s->file_hi = (uint64_t)cur;
	pthread_once(&bus_once, bus_install);
	/* still ours? (the application may have installed its own since) */
	if (!bus_ok || sigaction(SIGBUS, NULL, &cur_sa) < 0 || !(cur_sa.sa_flags & SA_SIGINFO) ||
	    cur_sa.sa_sigaction != on_sigbus)
		return;
	if (st.st_size <= cur + 4096) /* small files: read() is as good */
		return;
	s->map_end = (uint64_t)st.st_size;
	s->win_off = (uint64_t)cur; /* first window starts here (page-aligned below) */
	s->win_len = s->pos = 0;
	s->mapped = true;
}

int src_map_stop(struct src *s)
{
	uint64_t off = s->win_off + s->pos;

	if (!s->mapped)
		return 0;
	src_unmap(s);
	s->mapped = false;
	return lseek(s->fd, (off_t)off, SEEK_SET) < 0 ? -errno : 0;
}

bool src_shrank(const struct src *s)
{
	struct stat st;

	return s->regular && fstat(s->fd, &st) == 0 &&
	       ((uint64_t)st.st_size < s->file_hi || (uint64_t)st.st_size < s->file_size);
}

/* Next piece of a mapped file; 0 with s->mapped cleared at map_end or
 * when mmap fails (the file offset is then set there for read()). */
static ssize_t src_map(struct src *s, size_t n, const uint8_t **at)
{
	size_t k;

	if (s->pos == s->win_len) {
		uint64_t off = s->win_off + s->win_len, base, len;
		struct stat st;
		void *m;

		src_unmap(s);
		/* a file that shrank since: map only what is left, so a plain
		 * truncation reads like read() would (end of input) */
		if (fstat(s->fd, &st) == 0 && (uint64_t)st.st_size < s->map_end)
			s->map_end = (uint64_t)st.st_size;
		if (off >= s->map_end) {
			s->mapped = false;
			if (lseek(s->fd, (off_t)off, SEEK_SET) < 0)
				return -errno;
			return 0;
		}
		base = off & ~(uint64_t)(page_size - 1);
		len = s->map_end - base < MAP_WIN ? s->map_end - base : MAP_WIN;
		m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, s->fd, (off_t)base);
		if (m == MAP_FAILED) { /* e.g. an address-space limit: read() */
			s->mapped = false;
			if (lseek(s->fd, (off_t)off, SEEK_SET) < 0)
				return -errno;
			return 0;
		}
		madvise(m, len, MADV_SEQUENTIAL);
#ifdef MADV_POPULATE_READ
		/* page tables for the whole window in one call: a fault per
		 * 64 KiB (fault-around) was ~3 % of a 1 GB import, and an
		 * exception is dear in a VM. Advice only: it fails (EFAULT)
		 * where the file shrank, and those pages fault as before. */
		madvise(m, len, MADV_POPULATE_READ);
#endif
		s->win = m;
		s->win_len = len;
		s->win_off = base;
		s->pos = off - base;
		guard_lo = s->win;
		guard_hi = s->win + len;
	}
	k = s->win_len - s->pos < n ? s->win_len - s->pos : n;
	*at = s->win + s->pos;
	s->pos += k;
	s->file_hi = s->win_off + s->pos;
	s->bytes_in += k;
	return (ssize_t)k;
}

ssize_t src_raw(struct src *s, uint8_t *buf, size_t n, const uint8_t **at)
{
	if (s->fd < 0) {
		size_t k = s->mem_len - s->mem_off;

		if (k > n)
			k = n;
		*at = s->mem + s->mem_off;
		s->mem_off += k;
		s->bytes_in += k;
		return (ssize_t)k;
	}
	if (s->mapped) {
		ssize_t k = src_map(s, n, at);

		if (k != 0 || s->mapped)
			return k;
		/* past the size seen at the start: read() whatever followed */
	}
	*at = buf;
	for (;;) {
		ssize_t r = read(s->fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			/* A client's pipe, switched to O_NONBLOCK by the daemon:
			 * wait for data, but never longer than io_timeout_ms. */
			struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
			int pr = poll(&pfd, 1, s->io_timeout_ms > 0 ? (int)s->io_timeout_ms : -1);
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0)
				return -ETIMEDOUT;
			if (pr < 0)
				return -errno;
			continue;
		}
		if (r > 0) {
			s->bytes_in += (uint64_t)r;
			s->file_hi += (uint64_t)r;
		}
		return r < 0 ? -errno : r;
	}
}

bool src_guard_take(void)
{
	bool hit = guard_hit != 0;

	guard_hit = 0;
	return hit;
}

void src_guard_own(const struct src *s, bool own)
{
	guard_lo = guard_hi = NULL;
	if (own && s->win) {
		guard_hi = s->win + s->win_len;
		guard_lo = s->win;
	}
}
