// SPDX-License-Identifier: MIT
/*
 * Import driver: the fd's bytes (or a memory buffer), transparent gzip
 * (zlib inflate, detected by the 1f 8b magic, multi-member), fed to the
 * JSON tokenizer chunk by chunk. Memory: one input and one output chunk,
 * the tokenizer's scratch, and the events kept.
 *
 * A regular file is mapped (read-only, MAP_PRIVATE) a window at a time
 * instead of read(): the copy out of the page cache was ~10 % of the
 * import. The data is still fed in chunk_size pieces, so offsets, caps and
 * results are those of the read() path. The fd is a client's, and a file
 * truncated under a mapping raises SIGBUS on the next access; so mapping
 * is only used when this process leaves SIGBUS at its default, in which
 * case a handler is installed once: a fault inside the window this thread
 * is reading gets the rest of the window replaced by zero pages (the read
 * then sees zeros, nothing jumps out of half-done work) and the import
 * fails with -EIO "trace file shrank during import" (also when the file
 * ends up shorter than what was read from the mapping: the tail of its last
 * page reads as zeros without a fault); any other SIGBUS gets
 * the default action as before. Everything else (pipes, sockets, a SIGBUS
 * handler of the application's own, mmap failing) uses read(). After the
 * size seen at the start, reading continues with read(), so a file still
 * growing is read as before.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "kineto.h"

#define DEF_CHUNK (256u * 1024)
#define DEF_MAX_BYTES (64ull << 30)
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

struct src {
	int fd; /* -1: memory */
	const uint8_t *mem;
	size_t mem_len, mem_off;
	/* mapped regular file: window [win, win + win_len) at file offset
	 * win_off; pos = next byte in it; map_end = size seen at the start */
	bool mapped;
	uint8_t *win;
	size_t win_len, pos;
	uint64_t win_off, map_end;
	uint64_t map_hi; /* file offset up to which mapped bytes were fed */
	uint8_t *in, *out;
	size_t chunk;
	bool gz, gz_started, gz_done;
	z_stream zs;
	uint64_t bytes_in;
	uint32_t io_timeout_ms;
};

static void src_unmap(struct src *s)
{
	if (s->win) {
		guard_lo = guard_hi = NULL;
		munmap(s->win, s->win_len);
		s->win = NULL;
	}
}

/* Regular file, SIGBUS handled, mmap works: map its first window. */
static void src_map_start(struct src *s)
{
	struct sigaction cur_sa;
	struct stat st;
	off_t cur;

	pthread_once(&bus_once, bus_install);
	/* still ours? (the application may have installed its own since) */
	if (!bus_ok || sigaction(SIGBUS, NULL, &cur_sa) < 0 || !(cur_sa.sa_flags & SA_SIGINFO) ||
	    cur_sa.sa_sigaction != on_sigbus)
		return;
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	cur = lseek(s->fd, 0, SEEK_CUR);
	if (cur < 0 || st.st_size <= cur + 4096) /* small files: read() is as good */
		return;
	s->map_end = (uint64_t)st.st_size;
	s->win_off = (uint64_t)cur; /* first window starts here (page-aligned below) */
	s->win_len = s->pos = 0;
	s->mapped = true;
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
	s->map_hi = s->win_off + s->pos;
	s->bytes_in += k;
	return (ssize_t)k;
}

/* Next piece of raw input, at most n bytes: *at points into the caller's
 * buffer for a memory source (no copy), else at buf after a read(). */
static ssize_t src_raw(struct src *s, uint8_t *buf, size_t n, const uint8_t **at)
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
		if (r > 0)
			s->bytes_in += (uint64_t)r;
		return r < 0 ? -errno : r;
	}
}

struct importer {
	struct json_tok tok;
	struct kimp k;
	struct import_result *res;
	const struct import_opts *o;
	uint64_t max_bytes;
};

static int set_err(struct importer *im, int err, uint64_t off, const char *msg)
{
	struct import_result *res = im->res;

	res->error = err;
	res->error_offset = off;
	snprintf(res->error_msg, sizeof(res->error_msg), "%s", msg);
	return err;
}

static int feed(struct importer *im, const uint8_t *p, size_t n)
{
	int err;

	if (im->tok.offset + n > im->max_bytes) {
		char m[128];

		snprintf(m, sizeof(m), "trace larger than the import cap of %llu bytes",
			 (unsigned long long)im->max_bytes);
		return set_err(im, -EFBIG, im->max_bytes, m);
	}
	err = json_tok_feed(&im->tok, (const char *)p, n);
	if (err < 0) {
		if (im->k.err[0]) { /* the consumer's own reason (e.g. out of memory) */
			char m[256];

			snprintf(m, sizeof(m), "%s at byte %llu", im->k.err,
				 (unsigned long long)im->tok.err_offset);
			return set_err(im, err, im->tok.err_offset, m);
		}
		return set_err(im, err, im->tok.err_offset, im->tok.err);
	}
	if (im->o && im->o->progress)
		im->o->progress(im->o->progress_arg, im->tok.offset);
	return 0;
}

/* Pump the whole source through the tokenizer. */
static int pump(struct importer *im, struct src *s)
{
	const uint8_t *in, *in2;
	ssize_t r;
	int err, zr;

	r = src_raw(s, s->in, s->chunk, &in);
	if (r == 1) { /* tiny chunks: make sure the magic is visible */
		/* Memory and mapped sources read in place and have no buffer
		 * (s->in is NULL: no pointer arithmetic on it); either way
		 * in2 == in + 1. */
		ssize_t r2 = src_raw(s, s->in ? s->in + 1 : NULL, 1, &in2);

		r = r2 < 0 ? r2 : 1 + r2;
	}
	if (r < 0)
		return set_err(im, (int)r, 0, "read error");
	if (r >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		s->gz = true;
		if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
			return set_err(im, -ENOMEM, 0, "zlib init failed");
		s->gz_started = true;
	}
	while (r > 0) {
		if (!s->gz) {
			if ((err = feed(im, in, (size_t)r)) < 0)
				return err;
		} else {
			s->zs.next_in = (Bytef *)(uintptr_t)in; /* zlib only reads it */
			s->zs.avail_in = (uInt)r;
			while (s->zs.avail_in) {
				if (s->gz_done) { /* another gzip member follows */
					if (inflateReset(&s->zs) != Z_OK)
						return set_err(im, -EBADMSG, im->tok.offset,
							       "gzip reset failed");
					s->gz_done = false;
				}
				s->zs.next_out = s->out;
				s->zs.avail_out = (uInt)s->chunk;
				zr = inflate(&s->zs, Z_NO_FLUSH);
				if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
					char m[200];

					snprintf(m, sizeof(m),
						 "corrupt gzip data (%s) at compressed byte %llu",
						 s->zs.msg ? s->zs.msg : "inflate error",
						 (unsigned long long)(s->bytes_in - s->zs.avail_in));
					return set_err(im, -EBADMSG, im->tok.offset, m);
				}
				size_t got = s->chunk - s->zs.avail_out;

				if (got && (err = feed(im, s->out, got)) < 0)
					return err;
				if (zr == Z_STREAM_END)
					s->gz_done = true;
				else if (zr == Z_BUF_ERROR && !got)
					break;
			}
		}
		r = src_raw(s, s->in, s->chunk, &in);
		if (r < 0)
			return set_err(im, (int)r, im->tok.offset, "read error");
	}
	if (s->gz && !s->gz_done) {
		char m[200];

		snprintf(m, sizeof(m), "truncated gzip stream after %llu compressed bytes",
			 (unsigned long long)s->bytes_in);
		return set_err(im, -EBADMSG, im->tok.offset, m);
	}
	if ((err = json_tok_end(&im->tok)) < 0)
		return set_err(im, err, im->tok.err_offset, im->tok.err);
	return 0;
}

static int import_src(struct src *s, const struct import_opts *o, struct timeline *tl,
		      struct import_result *res)
{
	struct import_result dummy;
	struct importer im;
	struct tl_rank *r;
	int err;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	memset(&im, 0, sizeof(im));
	im.res = res;
	im.o = o;
	im.max_bytes = o && o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
	s->chunk = o && o->chunk_size ? o->chunk_size : DEF_CHUNK;
	s->in = s->fd >= 0 ? malloc(s->chunk + 2) : NULL; /* memory is fed in place */
	s->out = malloc(s->chunk);
	r = tl_rank_alloc(0);
	if ((s->fd >= 0 && !s->in) || !s->out || !r) {
		err = set_err(&im, -ENOMEM, 0, "out of memory");
		goto out;
	}
	kimp_init(&im.k, &tl->st, r, res,
		  o && o->max_events && o->max_events < UINT32_MAX - 1 ? o->max_events :
									 UINT32_MAX - 1);
	json_tok_init(&im.tok, &kineto_sax, &im.k, o ? o->max_depth : 0, o ? o->max_string : 0);
	guard_hit = 0;
	if (s->fd >= 0)
		src_map_start(s);
	err = pump(&im, s);
	src_unmap(s);
	/* Zeros were read in place of a truncated file: in whole pages past
	 * the new end (SIGBUS, handled) or in the tail of its last page. */
	if (s->map_hi) {
		struct stat st;

		if (fstat(s->fd, &st) == 0 && (uint64_t)st.st_size < s->map_hi)
			guard_hit = 1;
	}
	if (guard_hit) {
		res->error_msg[0] = '\0';
		err = set_err(&im, -EIO, im.tok.offset, "trace file shrank during import");
		guard_hit = 0;
	}
	res->bytes_in = s->bytes_in;
	res->bytes_json = im.tok.offset;
	res->gzip = s->gz;
	if (err < 0)
		goto out_tok;

	if (im.k.have_rank)
		r->rank = (int32_t)im.k.rank, r->flags |= TL_RANK_FROM_DIST_INFO;
	else
		r->rank = o && o->rank >= 0 ? o->rank : 0;
	if (im.k.rounding) {
		r->flags |= TL_RANK_HTA_ROUNDING;
		for (uint32_t i = 0; i < r->nev; i++)
			if (r->ev[i].hta_end_us < r->ev[i].hta_ts_us)
				r->ev[i].flags |= TL_EV_HTA_DUR_NEG;
	}
	{
		int64_t d = tl_rank_mark_duplicates(r);

		if (d < 0) {
			err = set_err(&im, (int)d, 0, "out of memory");
			goto out_tok;
		}
		res->warnings[IMPORT_W_DUPLICATE] += (uint64_t)d;
		res->warnings_total += (uint64_t)d;
	}
	res->rank = r->rank;
	res->events_raw = r->raw_events;
	res->flows = r->nflows;
	if ((err = tl_insert_rank(tl, r)) < 0) {
		char m[96];

		snprintf(m, sizeof(m), "rank %d is already in the timeline", r->rank);
		set_err(&im, err, 0, m);
		goto out_tok;
	}
	r = NULL; /* owned by tl now */
	if (!(o && o->no_finalize)) {
		err = timeline_finalize(tl, o ? o->finalize_flags : 0);
		if (err < 0) {
			set_err(&im, err, 0, "out of memory while indexing");
			goto out_tok;
		}
	}
	res->events_kept = timeline_rank(tl, res->rank)->nev;
out_tok:
	json_tok_finish(&im.tok);
	kimp_finish(&im.k);
out:
	if (s->gz_started)
		inflateEnd(&s->zs);
	free(s->in);
	free(s->out);
	tl_rank_free(r);
	return err;
}

int timeline_import_fd(int fd, const struct import_opts *o, struct timeline *tl,
		       struct import_result *res)
{
	struct src s = { .fd = fd, .io_timeout_ms = o ? o->io_timeout_ms : 0 };

	return import_src(&s, o, tl, res);
}

int timeline_import_buf(const void *buf, size_t len, const struct import_opts *o,
			struct timeline *tl, struct import_result *res)
{
	struct src s = { .fd = -1, .mem = buf, .mem_len = len };

	return import_src(&s, o, tl, res);
}

const char *import_warn_name(enum import_warn w)
{
	static const char *const n[IMPORT_W_COUNT] = {
		[IMPORT_W_MISSING_TS] = "missing_ts",
		[IMPORT_W_BAD_NUMBER] = "bad_number",
		[IMPORT_W_NEG_DUR] = "negative_dur",
		[IMPORT_W_UNKNOWN_PH] = "unknown_ph",
		[IMPORT_W_BAD_UTF8] = "bad_utf8",
		[IMPORT_W_STR_TRUNC] = "string_truncated",
		[IMPORT_W_DUPLICATE] = "duplicate",
		[IMPORT_W_BAD_FIELD] = "bad_field",
		[IMPORT_W_TOO_MANY] = "too_many_events",
	};

	return (unsigned)w < IMPORT_W_COUNT ? n[w] : "unknown";
}
