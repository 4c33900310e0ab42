// SPDX-License-Identifier: MIT
/*
 * The pipelined gunzip (daemon/import/kineto/gunzip.c: inflate on a second
 * thread) gives exactly what the serial path gives: the same timeline on
 * success, and on failure the same error, offset, message and byte counts
 * — for truncated and corrupted gzip, multi-member streams, a JSON error
 * mid-stream and the size cap, from memory and from a regular file, at
 * several chunk sizes; with each inflate backend (ISA-L where built in,
 * and zlib), which agree except on where corrupt data is noticed. A
 * progress callback counts this process's threads to check that the
 * second thread really ran (and did not for serial).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "test.h"
#include "import_test.h"
#include "import/import.h"
#include "timeline/timeline.h"

static int max_threads;
static bool zlib_mode; /* import_opts.inflate_zlib for this pass */

static int count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A joined thread can linger in /proc/self/task for a moment: wait for the
 * previous import's inflate thread to be gone (at most 2 s). */
static void settle(void)
{
	for (int i = 0; i < 2000 && count_threads() > 1; i++)
		usleep(1000);
}

static void on_progress(void *arg, uint64_t bytes)
{
	int n = count_threads();

	(void)arg;
	(void)bytes;
	max_threads = n > max_threads ? n : max_threads;
}

/* A Kineto-like document of about `events` events whose numbers vary
 * enough that its gzip is well over the 64 KiB the pipe needs. */
static char *make_doc(int events, size_t *len)
{
	size_t cap = (size_t)events * 220 + 256, n = 0;
	char *s = malloc(cap);
	unsigned seed = 7;

	n += (size_t)snprintf(s + n, cap - n, "{\"traceEvents\": [\n");
	for (int i = 0; i < events; i++) {
		seed = seed * 1103515245u + 12345u;
		n += (size_t)snprintf(s + n, cap - n,
				      "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"op%u\",\"pid\":%d,"
				      "\"tid\":%d,\"ts\":%d.%03u,\"dur\":%u,\"args\":{"
				      "\"correlation\":%d,\"stream\":7}}\n",
				      i ? "," : "", i % 2 ? "kernel" : "cuda_runtime",
				      (seed >> 8) % 97, i % 2 ? 0 : 1, i % 2 ? 7 : 11, 1000 + i * 3,
				      (seed >> 12) % 1000, (seed >> 16) % 50 + 1, i / 2 + 1);
	}
	n += (size_t)snprintf(s + n, cap - n, "]}\n");
	*len = n;
	return s;
}

struct run {
	int err;
	struct import_result res;
	struct timeline *tl;
	int threads;
};

/* The file at p, holding data[0..n), open read-write at offset 0. */
static int file_with(const char *p, const void *data, size_t n)
{
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	CHECK_EQ_U64((uint64_t)write(fd, data, n), n);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Import from memory, or through a temporary regular file when path. */
static void run_one(const unsigned char *gz, size_t n, uint32_t chunk, uint64_t max_bytes,
		    bool serial, const char *path, struct run *r)
{
	struct import_opts o = { .rank = -1, .chunk_size = chunk, .max_bytes = max_bytes,
				 .no_inflate_thread = serial, .inflate_zlib = zlib_mode,
				 .progress = on_progress };

	timeline_new(&r->tl);
	settle();
	max_threads = 0;
	if (path) {
		int fd = file_with(path, gz, n);

		r->err = timeline_import_fd(fd, &o, r->tl, &r->res);
		close(fd);
	} else {
		r->err = timeline_import_buf(gz, n, &o, r->tl, &r->res);
	}
	r->threads = max_threads;
}

static void same(const unsigned char *gz, size_t n, uint32_t chunk, uint64_t max_bytes,
		 const char *path, bool expect_pipe)
{
	struct run a, b;

	run_one(gz, n, chunk, max_bytes, false, path, &a);
	run_one(gz, n, chunk, max_bytes, true, path, &b);
	CHECK_EQ_INT(a.err, b.err);
	CHECK_EQ_U64(a.res.error_offset, b.res.error_offset);
	CHECK_STREQ(a.res.error_msg, b.res.error_msg);
	CHECK_EQ_U64(a.res.bytes_in, b.res.bytes_in);
	CHECK_EQ_U64(a.res.bytes_json, b.res.bytes_json);
	CHECK_EQ_U64(a.res.events_kept, b.res.events_kept);
	CHECK_EQ_U64(a.res.warnings_total, b.res.warnings_total);
	CHECK_EQ_INT(a.res.gzip, b.res.gzip);
	CHECK(timeline_equal(a.tl, b.tl));
	if (b.res.bytes_json) /* (no progress call when nothing was parsed) */
		CHECK_EQ_INT(b.threads, 1); /* serial: this thread only */
	if (!zlib_mode && strcmp(import_inflate_backend(), "zlib")) {
		/* ISA-L against zlib: the same outcome. Only the size of
		 * the pieces each inflates (so the JSON bytes parsed before
		 * a failure) and where it sees corrupt data may differ. */
		bool bad_gz = strstr(a.res.error_msg, "gzip") != NULL;
		struct run z;

		zlib_mode = true;
		run_one(gz, n, chunk, max_bytes, true, path, &z);
		zlib_mode = false;
		CHECK_EQ_INT(z.err, a.err);
		CHECK_EQ_INT(z.res.gzip, a.res.gzip);
		if (!strncmp(a.res.error_msg, "truncated gzip", 14))
			CHECK_STREQ(z.res.error_msg, a.res.error_msg);
		if (!bad_gz) { /* a JSON error, the cap, or success */
			CHECK_STREQ(z.res.error_msg, a.res.error_msg);
			CHECK_EQ_U64(z.res.error_offset, a.res.error_offset);
		}
		if (!a.err) {
			CHECK_EQ_U64(z.res.bytes_in, a.res.bytes_in);
			CHECK_EQ_U64(z.res.bytes_json, a.res.bytes_json);
			CHECK_EQ_U64(z.res.events_kept, a.res.events_kept);
			CHECK(timeline_equal(z.tl, a.tl));
		}
		timeline_free(z.tl);
	}
	/* Past 10 chunks of output (the pipe holds 8) the inflate thread
	 * was still waiting for a free chunk at the first progress call. */
	if (expect_pipe && two_cpus() && a.res.bytes_json > 10ull * (chunk ? chunk : 64 * 1024))
		CHECK(a.threads >= 2);
	timeline_free(a.tl);
	timeline_free(b.tl);
}

static void cases(const unsigned char *gz, size_t n, size_t doc_len, const char *path)
{
	static const uint32_t chunks[] = { 4096, 65536, 0 };

	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		same(gz, n, chunks[c], 0, path, true); /* whole */
		for (int k = 1; k <= 3; k++) /* truncated */
			same(gz, n - n * (size_t)k / 4 + 64 * 1024 * (k == 3), chunks[c], 0, path,
			     true);
		same(gz, n - 1, chunks[c], 0, path, true);
		for (int k = 1; k <= 3; k++) { /* corrupted: deflate data or CRC */
			unsigned char *bad = malloc(n);
			size_t at = k == 3 ? n - 6 : n * (size_t)k / 3;

			memcpy(bad, gz, n);
			bad[at] ^= 0x55;
			same(bad, n, chunks[c], 0, path, true);
			free(bad);
		}
		same(gz, n, chunks[c], doc_len / 2, path, true); /* import cap */
	}
}

static char *doc, path[] = "/tmp/gpuprof-gzpipe-XXXXXX";
static size_t doc_len;

static void test_one_member(void)
{
	unsigned char *gz;
	size_t n = gzip_members(doc, doc_len, 1, &gz);

	CHECK(n > 128 * 1024); /* well past the pipe's minimum */
	cases(gz, n, doc_len, NULL);
	cases(gz, n, doc_len, path);
	free(gz);
}

static void test_three_members(void)
{
	unsigned char *gz;
	size_t n = gzip_members(doc, doc_len, 3, &gz);

	cases(gz, n, doc_len, NULL);
	free(gz);
}

static void test_json_error(void)
{
	unsigned char *gz;
	size_t n;

	doc[doc_len / 2] = '#';
	n = gzip_members(doc, doc_len, 1, &gz);
	doc[doc_len / 2] = ' ';
	cases(gz, n, doc_len, NULL);
	cases(gz, n, doc_len, path);
	free(gz);
}

static void test_small_is_serial(void)
{
	unsigned char *gz;
	size_t n = gzip_members(doc, 20000, 1, &gz); /* under 64 KiB compressed */
	struct run r;

	same(gz, n, 0, 0, NULL, false);
	run_one(gz, n, 0, 0, false, NULL, &r);
	CHECK_EQ_INT(r.threads, 1);
	timeline_free(r.tl);
	free(gz);
}

/* Reads of a few bytes: gzip headers, block boundaries and trailers split
 * across reads (the inflate state carries them), truncated inside the
 * header, the data and the trailer, several members. */
static void test_tiny_reads(void)
{
	static const uint32_t chunks[] = { 1, 2, 3, 17 };
	unsigned char *gz, *gz3;
	size_t n = gzip_members(doc, 12000, 1, &gz), n3 = gzip_members(doc, 12000, 3, &gz3);

	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		same(gz, n, chunks[c], 0, NULL, false);
		same(gz3, n3, chunks[c], 0, NULL, false);
		same(gz, 5, chunks[c], 0, NULL, false);
		same(gz, n / 2, chunks[c], 0, NULL, false);
		same(gz, n - 1, chunks[c], 0, NULL, false);
		same(gz3, n3 - n3 / 3, chunks[c], 0, NULL, false);
	}
	free(gz);
	free(gz3);
}

/* Bytes after the last member are not a gzip member: an error with either
 * backend, and the same text (a newline: "truncated gzip stream", junk
 * longer than a header: "incorrect header check"). */
static void test_trailing_junk(void)
{
	static const char *const junk[] = { "\n", "not gzip at all, twenty+ bytes" };
	unsigned char *gz;
	size_t n = gzip_members(doc, 12000, 1, &gz);

	for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
		size_t jl = strlen(junk[j]);
		unsigned char *b = malloc(n + jl);
		struct run r;

		memcpy(b, gz, n);
		memcpy(b + n, junk[j], jl);
		run_one(b, n + jl, 0, 0, true, NULL, &r);
		CHECK_EQ_INT(r.err, -EBADMSG);
		CHECK(strstr(r.res.error_msg, "gzip") != NULL);
		timeline_free(r.tl);
		same(b, n + jl, 0, 0, NULL, false);
		free(b);
	}
	free(gz);
}

static int shrink_fd = -1;

static void shrink_once(void *arg, uint64_t bytes)
{
	(void)arg;
	(void)bytes;
	if (shrink_fd >= 0 && ftruncate(shrink_fd, 100) == 0)
		shrink_fd = -1;
}

/* data[0..n) written to a file that is cut to 100 bytes after the first
 * parsed piece, imported serially and through the pipe: the import fails
 * cleanly, the same way on both paths: read() meets the end before the
 * size seen at the start, -EIO "trace file shrank during import" (or the
 * gzip stream ends early, -EBADMSG). */
static void check_shrinks(const void *data, size_t n)
{
	int errs[2];

	for (int serial = 0; serial < 2; serial++) {
		/* 4 KiB chunks: read() must not have the whole file already */
		struct import_opts o = { .rank = -1, .chunk_size = 4096,
					 .no_inflate_thread = serial, .inflate_zlib = zlib_mode,
					 .progress = shrink_once };
		struct import_result res;
		struct timeline *tl;
		int fd = file_with(path, data, n);

		shrink_fd = fd;
		timeline_new(&tl);
		errs[serial] = timeline_import_fd(fd, &o, tl, &res);
		CHECK(errs[serial] == -EIO || errs[serial] == -EBADMSG);
		CHECK(res.error_msg[0] != '\0');
		if (errs[serial] == -EIO)
			CHECK_STREQ(res.error_msg, "trace file shrank during import");
		CHECK_EQ_INT(timeline_nranks(tl), 0); /* left unchanged */
		timeline_free(tl);
		close(fd);
	}
	CHECK_EQ_INT(errs[0], errs[1]);
}

/* The gzip file shrinks while the inflate thread reads it. */
static void test_file_shrinks(void)
{
	unsigned char *gz;
	size_t n = gzip_members(doc, doc_len, 1, &gz);

	check_shrinks(gz, n);
	free(gz);
}

/* The plain file shrinks, read serially and on the second thread through
 * the pipe; both report the cut file. */
static void test_plain_file_shrinks(void)
{
	check_shrinks(doc, doc_len);
}

/* A plain file of over 33 MiB (until 2026-11-26 the serial path mapped it
 * in 16 MiB windows), read serially and on the second thread through the
 * pipe: the same outcome, whole, truncated and under the import cap. */
static void test_plain_windows(void)
{
	size_t n;
	char *big = make_doc(300000, &n);
	static const uint32_t chunks[] = { 4096, 0 };

	CHECK(n > 2 * (16u << 20) + (1u << 20));
	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		same((const unsigned char *)big, n, chunks[c], 0, path, true);
		same((const unsigned char *)big, n - n / 3, chunks[c], 0, path, true);
		same((const unsigned char *)big, n, chunks[c], n / 2 + 12345, path, true);
	}
	free(big);
}

/* Events whose text is `pad` bytes longer each: n1 of them padded by
 * pad1, then n2 padded by pad2. The importer sizes its event arrays from
 * the first eighth (at most 16 MiB) of a plain input of known size; a
 * change of density past that point makes the estimate too small (the
 * arrays then grow as before) or too large (room never written). */
static char *make_skewed(int n1, int pad1, int n2, int pad2, size_t *len)
{
	size_t cap = (size_t)n1 * (size_t)(pad1 + 200) + (size_t)n2 * (size_t)(pad2 + 200) + 64;
	char *s = malloc(cap), *fill = malloc((size_t)(pad1 > pad2 ? pad1 : pad2) + 1);
	size_t n = 0;

	memset(fill, 'x', (size_t)(pad1 > pad2 ? pad1 : pad2));
	n += (size_t)snprintf(s + n, cap - n, "{\"traceEvents\": [\n");
	for (int i = 0; i < n1 + n2; i++) {
		int pad = i < n1 ? pad1 : pad2;

		n += (size_t)snprintf(s + n, cap - n,
				      "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"op%d\","
				      "\"pid\":1,\"tid\":%d,\"ts\":%d,\"dur\":2,\"args\":{"
				      "\"correlation\":%d,\"pad\":\"%.*s\"}}\n",
				      i ? "," : "", i % 3 ? "cpu_op" : "cuda_runtime", i % 13,
				      i % 2, 1000 + i, i + 1, pad, fill);
	}
	n += (size_t)snprintf(s + n, cap - n, "]}\n");
	free(fill);
	*len = n;
	return s;
}

/* Import doc from a pipe: no size known, so no estimate. */
static void import_unsized(const char *d, size_t n, struct timeline **tl, struct import_result *res)
{
	int p[2];
	pid_t child;

	CHECK_EQ_INT(pipe(p), 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		close(p[0]);
		for (size_t off = 0; off < n;) {
			ssize_t w = write(p[1], d + off, n - off);

			if (w <= 0)
				_exit(1);
			off += (size_t)w;
		}
		_exit(0);
	}
	close(p[1]);
	timeline_new(tl);
	CHECK_EQ_INT(timeline_import_fd(p[0], &(struct import_opts){ .rank = -1 }, *tl, res), 0);
	close(p[0]);
	CHECK_EQ_INT(waitpid(child, NULL, 0), child);
}

/* The arrays sized from the first eighth: whether the rest of the input
 * has fewer or more events per byte, the import from a file (estimate)
 * and from memory (estimate, in place) equal the import from a pipe
 * (none), serial and pipelined alike. */
static void test_reserve_estimate(void)
{
	static const int shape[][4] = {
		{ 20000, 1000, 200000, 10 }, /* sparse, then 10x as many: grows */
		{ 200000, 10, 12000, 1000 }, /* dense, then sparse: room unused */
		/* the same under 4 MiB of rows (realloc()ed, not huge pages) */
		{ 2000, 1000, 20000, 10 },
		{ 20000, 10, 1200, 1000 },
	};

	for (size_t k = 0; k < sizeof(shape) / sizeof(shape[0]); k++) {
		size_t n;
		char *d = make_skewed(shape[k][0], shape[k][1], shape[k][2], shape[k][3], &n);
		struct import_result res;
		struct timeline *ref;
		struct run a;

		/* the estimate is taken inside the first part (an event's
		 * text there is pad1 + ~180 bytes) */
		CHECK((n / 8 < (16u << 20) ? n / 8 : (16u << 20)) <
		      (size_t)shape[k][0] * (size_t)(shape[k][1] + 150));
		import_unsized(d, n, &ref, &res);
		CHECK_EQ_U64(res.events_kept, (uint64_t)(shape[k][0] + shape[k][2]));
		for (int serial = 0; serial < 2; serial++) {
			run_one((const unsigned char *)d, n, 0, 0, serial, path, &a);
			CHECK_EQ_INT(a.err, 0);
			CHECK(timeline_equal(a.tl, ref));
			timeline_free(a.tl);
			run_one((const unsigned char *)d, n, 0, 0, serial, NULL, &a);
			CHECK_EQ_INT(a.err, 0);
			CHECK(timeline_equal(a.tl, ref));
			timeline_free(a.tl);
		}
		timeline_free(ref);
		free(d);
	}
}

/* gpuprofctl import draws its progress from the file offset of its copy
 * of the descriptor (cmd_import.c): the offset must move with the import,
 * not jump at its end (as it did while the importer read files through a
 * mapping). For each progress call, the offset of a dup() of the fd. */
static int offset_fd = -1;
static uint64_t offset_mid, offset_last;
static bool offset_back;

static void on_offset(void *arg, uint64_t bytes)
{
	off_t off = lseek(offset_fd, 0, SEEK_CUR);
	uint64_t size = *(const uint64_t *)arg;

	(void)bytes;
	if (off < 0 || (uint64_t)off < offset_last)
		offset_back = true;
	offset_last = off < 0 ? offset_last : (uint64_t)off;
	if (off > 0 && (uint64_t)off < size)
		offset_mid++;
}

static void test_offset_follows(void)
{
	unsigned char *gz;
	size_t ngz = gzip_members(doc, doc_len, 1, &gz);

	for (int plain = 0; plain < 2; plain++)
		for (int serial = 0; serial < 2; serial++) {
			const void *data = plain ? (const void *)doc : gz;
			uint64_t size = plain ? doc_len : ngz;
			struct import_opts o = { .rank = -1, .no_inflate_thread = serial,
						 .progress = on_offset, .progress_arg = &size };
			struct import_result res;
			struct timeline *tl;
			int fd = file_with(path, data, size);

			offset_fd = dup(fd);
			offset_mid = offset_last = 0;
			offset_back = false;
			timeline_new(&tl);
			CHECK_EQ_INT(timeline_import_fd(fd, &o, tl, &res), 0);
			CHECK(!offset_back);
			CHECK(offset_mid > 0); /* seen part way */
			CHECK_EQ_U64((uint64_t)lseek(offset_fd, 0, SEEK_CUR), size);
			timeline_free(tl);
			close(offset_fd);
			close(fd);
		}
	free(gz);
}

/* A gzip input's trailer (ISIZE) sizes the event arrays as a plain
 * input's size does: the same skewed shapes, gzip from a file and from
 * memory, serial and pipelined, equal the plain import from a pipe (no
 * estimate). Three members: the hint is the last member's size only (too
 * small). A trailer that lies is corrupt gzip: the import fails as it did
 * without the hint. */
static void test_gz_size_hint(void)
{
	static const int shape[][4] = {
		{ 2000, 1000, 20000, 10 },
		{ 20000, 10, 1200, 1000 },
	};

	for (size_t k = 0; k < sizeof(shape) / sizeof(shape[0]); k++) {
		size_t n, ngz, ngz3;
		char *d = make_skewed(shape[k][0], shape[k][1], shape[k][2], shape[k][3], &n);
		unsigned char *gz, *gz3;
		struct import_result res;
		struct timeline *ref;
		struct run a;

		import_unsized(d, n, &ref, &res);
		ngz = gzip_members(d, n, 1, &gz);
		ngz3 = gzip_members(d, n, 3, &gz3);
		for (int serial = 0; serial < 2; serial++)
			for (int mem = 0; mem < 2; mem++) {
				run_one(gz, ngz, 0, 0, serial, mem ? NULL : path, &a);
				CHECK_EQ_INT(a.err, 0);
				CHECK(a.res.gzip);
				CHECK(timeline_equal(a.tl, ref));
				timeline_free(a.tl);
				run_one(gz3, ngz3, 0, 0, serial, mem ? NULL : path, &a);
				CHECK_EQ_INT(a.err, 0);
				CHECK(timeline_equal(a.tl, ref));
				timeline_free(a.tl);
			}
		/* twice and half the size (room reserved, then a length
		 * error at the end), 4 GiB - 16 (never reached), 17 (below
		 * the compressed size: no hint) */
		for (int lie = 0; lie < 4; lie++) {
			uint32_t isize = lie == 0 ? (uint32_t)(2 * n) : lie == 1 ? (uint32_t)(n / 2) :
					 lie == 2 ? 0xfffffff0u : 17;

			memcpy(gz + ngz - 4, &isize, 4); /* little-endian, as gzip */
			for (int serial = 0; serial < 2; serial++) {
				run_one(gz, ngz, 0, 0, serial, path, &a);
				CHECK_EQ_INT(a.err, -EBADMSG);
				CHECK(strstr(a.res.error_msg, "gzip") != NULL);
				CHECK_EQ_INT(timeline_nranks(a.tl), 0);
				timeline_free(a.tl);
			}
		}
		timeline_free(ref);
		free(gz);
		free(gz3);
		free(d);
	}
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0)
		return 1;
	close(fd);
	doc = make_doc(20000, &doc_len);
	/* the default backend (ISA-L where built in), then zlib */
	printf("inflate backend: %s\n", import_inflate_backend());
	for (int pass = 0; pass < 2; pass++) {
		zlib_mode = pass == 1;
		RUN(test_one_member);
		RUN(test_three_members);
		RUN(test_json_error);
		RUN(test_small_is_serial);
		RUN(test_tiny_reads);
		RUN(test_trailing_junk);
		RUN(test_file_shrinks);
	}
	RUN(test_plain_file_shrinks);
	RUN(test_plain_windows);
	RUN(test_reserve_estimate);
	RUN(test_gz_size_hint);
	RUN(test_offset_follows);
	unlink(path);
	free(doc);
	return test_summary();
}
