// SPDX-License-Identifier: MIT
/*
 * Import driver: the source's bytes (src.c: memory or read()),
 * transparent gzip (ISA-L or zlib inflate, gzdec.c; detected by the 1f 8b
 * magic, multi-member), fed to the JSON tokenizer chunk by chunk.
 * Memory: one input and one output chunk, the tokenizer's scratch, and the
 * events kept.
 * A large gzip file or buffer is inflated on a second thread (gunzip.c),
 * pipelined with the parse through a few bounded chunks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gunzip.h"
#include "kineto.h"
#include "kineto_spec.h"
#include "src.h"

/* 64 KiB: a gzip piece inflated on the second thread is still in cache
 * when the parser reads it (256 KiB pieces: nccl_parser_config's pipelined
 * import ~18 % slower). */
#define DEF_CHUNK (64u * 1024)
#define DEF_MAX_BYTES (64ull << 30)
#define PIPE_MIN_IN (64u * 1024)  /* compressed bytes worth a thread */
#define PIPE_MIN_PLAIN (1u << 20) /* plain bytes worth a thread */
/* Parsed bytes of an input of known size after which its event
 * arrays get room for the whole input at once (kimp_reserve): an eighth
 * of the input, at most RESERVE_AFTER. Growing them 4x at a time instead
 * copied 2.1 M rows (200 MB) of a 1 GB import and populated 264 MB of
 * arrays that were then dropped: fresh memory, which on a VM costs about
 * as much as parsing its size of JSON (bench/import/bench_pages). Below
 * 4 MiB they doubled by realloc(): on a generated 10 MB trace imported
 * again and again, ~1600 page faults an import (glibc handed the grown
 * blocks back each time), 2.6x its import time (bench_import). */
#define RESERVE_AFTER (16u << 20)

struct importer {
	struct json_tok tok;
	struct kimp k;
	struct import_result *res;
	const struct import_opts *o;
	uint64_t max_bytes;
	struct src *s;
	/* input of known size (a plain file's or buffer's, or the one a
	 * gzip trailer states): JSON bytes in all, the parsed bytes after
	 * which the event arrays get their room for it (kimp_reserve), and
	 * whether they got it */
	uint64_t total, reserve_at;
	bool reserved;
};

static int set_err(struct importer *im, int err, uint64_t off, const char *msg)
{
	struct import_result *res = im->res;

	res->error = err;
	res->error_offset = off;
	snprintf(res->error_msg, sizeof(res->error_msg), "%s", msg);
	return err;
}

/* What the first bytes inflated from a gzip input are when they cannot be
 * JSON: a second gzip layer, or an Nsight SQLite export (read only
 * uncompressed, from a file: nsys_fd.c). NULL when they may be JSON. A
 * prefix of either magic suffices: JSON starts with neither byte. */
static const char *inner_format(const uint8_t *p, size_t n)
{
	static const char sqlite_magic[] = "SQLite format 3";

	if (p[0] == 0x1f && (n < 2 || p[1] == 0x8b))
		return "a gzip file inside a gzip file: decompress it once first";
	if (!memcmp(p, sqlite_magic, n < sizeof(sqlite_magic) ? n : sizeof(sqlite_magic)))
		return "an Nsight SQLite export compressed with gzip: decompress it first "
		       "(gunzip FILE), then import the .sqlite file";
	return NULL;
}

static int feed(struct importer *im, const uint8_t *p, size_t n)
{
	int err;

	/* a cancelled import (its client left, the daemon stops) ends within
	 * a chunk, even one that never waits for data */
	if (im->o && im->o->cancel && atomic_load_explicit(im->o->cancel, memory_order_relaxed))
		return set_err(im, -ECANCELED, im->tok.offset, "import cancelled");
	if (im->tok.offset + n > im->max_bytes) {
		char m[128];

		snprintf(m, sizeof(m), "trace larger than the import cap of %llu bytes",
			 (unsigned long long)im->max_bytes);
		return set_err(im, -EFBIG, im->max_bytes, m);
	}
	if (im->s->gz && im->tok.offset == 0 && n) {
		const char *what = inner_format(p, n);

		if (what)
			return set_err(im, -EBADMSG, 0, what);
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
	if (!im->reserved && im->total && im->tok.offset >= im->reserve_at) {
		im->reserved = true;
		/* no room: the arrays grow as they fill, as before. The
		 * room is populated ahead only for a size known to be true:
		 * a gzip trailer's is the file's claim, checked at its end */
		(void)kimp_reserve(&im->k, im->tok.offset, im->total,
				   !(im->o && im->o->no_inflate_thread) && !im->s->gz);
	}
	if (im->o && im->o->progress)
		im->o->progress(im->o->progress_arg, im->tok.offset);
	return 0;
}

static uint8_t *serial_out(void *arg)
{
	return ((struct importer *)arg)->s->out;
}

static int serial_put(void *arg, uint8_t *buf, size_t n)
{
	return n ? feed(arg, buf, n) : 0;
}

/* Worth a second thread: a large input that cannot block forever
 * (gunzip.c), fed in chunks big enough that handing them over is cheap,
 * and a second CPU this process may run on. A gzip input inflates there
 * from 64 KiB (compressed) on; a plain one, which the thread only copies
 * and parses part of, from 1 MiB on. */
static bool use_pipe(const struct importer *im, const struct src *s)
{
	uint64_t min = s->gz ? PIPE_MIN_IN : PIPE_MIN_PLAIN;

	if ((im->o && im->o->no_inflate_thread) || s->chunk < 4096 || !bigalloc_two_cpus())
		return false;
	if (s->fd < 0)
		return s->mem_len >= min;
	return s->regular && s->file_size >= min;
}

/* The rest of the source after its first r bytes at in, inflated or
 * copied on a second thread that also parses whole events ahead of this
 * one (kineto_spec.h); every piece goes to feed() in order, or is adopted.
 * 1: no thread could be started (nothing read: go on serially). */
static int pump_pipe(struct importer *im, struct src *s, const uint8_t *in, ssize_t r)
{
	struct kspec_ctx ctx;
	struct kspec_map map = {0};
	bool have_ctx = false;
	struct kseg *seg;
	struct gz_pipe *g;
	const uint8_t *p;
	char msg[200];
	ssize_t n;
	int err = 0;

	if (gz_pipe_start(s, in, r, !s->gz, im->o ? (enum gz_spec)im->o->spec : GZ_SPEC_AUTO, &g) <
	    0)
		return 1;
	while ((n = gz_pipe_next(g, &p, &seg, msg, sizeof(msg))) > 0) {
		size_t a, b;

		/* the thread parsed whole events of this piece: feed up to
		 * them, take them if the parse got there in the state they
		 * assumed, feed the rest */
		if (kseg_span(seg, &a, &b) && im->tok.offset + (uint64_t)n <= im->max_bytes) {
			if ((err = feed(im, p, a)) < 0)
				break;
			if ((err = kseg_adopt(seg, &ctx, &map, &im->k, &im->tok)) < 0) {
				char m[256];

				/* as feed() words a consumer's reason */
				snprintf(m, sizeof(m), "%s at byte %llu",
					 im->k.err[0] ? im->k.err : "out of memory",
					 (unsigned long long)im->tok.offset);
				set_err(im, err, im->tok.offset, m);
				break;
			}
			if (err)
				im->res->bytes_spec += b - a;
			a = err ? b : a;
			p += a;
			n -= (ssize_t)a;
		}
		if ((err = feed(im, p, (size_t)n)) < 0)
			break;
		if (!have_ctx && kspec_ctx_take(&ctx, &im->k, &im->tok)) {
			gz_pipe_spec(g, &ctx);
			have_ctx = true;
		}
	}
	if (n <= 0)
		err = n < 0 ? set_err(im, (int)n, im->tok.offset, msg) : 0;
	gz_pipe_stop(g);
	kspec_map_free(&map);
	return err;
}

/* The gzip stream after its first r bytes at in, inflated serially or on
 * a second thread; every piece goes to feed() in order. */
static int pump_gz(struct importer *im, struct src *s, const uint8_t *in, ssize_t r)
{
	struct gz_io io = {.out = serial_out, .put = serial_put, .arg = im};
	char msg[200];
	int err;

	if (use_pipe(im, s) && (err = pump_pipe(im, s, in, r)) <= 0)
		return err;
	err = gz_inflate_src(s, in, r, &io, msg, sizeof(msg));
	return err < 0 && msg[0] ? set_err(im, err, im->tok.offset, msg) : err;
}

/* The uncompressed size a gzip input's trailer states (ISIZE: its last
 * member's, modulo 2^32), as kimp_reserve's estimate of the JSON bytes; 0
 * when there is none, or when it is below the compressed size (wrapped
 * past 4 GiB, or not a trailer). Only a hint: a wrong one costs room. */
static uint64_t gz_size_hint(const struct src *s)
{
	uint64_t clen, isize;
	uint8_t t[4];

	if (s->fd < 0) {
		clen = s->mem_len;
		if (clen < 18)
			return 0;
		memcpy(t, s->mem + clen - 4, 4);
	} else {
		clen = s->file_size;
		if (!s->regular || clen < 18 || pread(s->fd, t, 4, (off_t)(clen - 4)) != 4)
			return 0;
	}
	isize = (uint64_t)t[0] | (uint64_t)t[1] << 8 | (uint64_t)t[2] << 16 | (uint64_t)t[3] << 24;
	return isize >= clen ? isize : 0;
}

/* Pump the whole source through the tokenizer. */
static int pump(struct importer *im, struct src *s)
{
	const uint8_t *in, *in2;
	ssize_t r;
	int err;

	r = src_raw(s, s->in, s->chunk, &in);
	if (r == 1) { /* tiny chunks: make sure the magic is visible */
		/* A memory source is read in place and has no buffer (s->in
		 * is NULL: no pointer arithmetic on it); either way in2 ==
		 * in + 1. */
		ssize_t r2 = src_raw(s, s->in ? s->in + 1 : NULL, 1, &in2);

		r = r2 < 0 ? r2 : 1 + r2;
	}
	if (r < 0)
		return set_err(im, (int)r, 0, "read error");
	if (r >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		s->gz = true;
		if (gz_begin(s, im->o && im->o->inflate_zlib) < 0)
			return set_err(im, -ENOMEM, 0, "gzip init failed");
	}
	im->total = s->gz	 ? gz_size_hint(s)
		    : s->fd < 0	 ? s->mem_len
		    : s->regular ? s->file_size
				 : 0;
	im->reserve_at = im->total / 8 < RESERVE_AFTER ? im->total / 8 : RESERVE_AFTER;
	if (s->gz) {
		err = pump_gz(im, s, in, r);
		if (err < 0)
			return err;
	}
	if (!s->gz && r > 0 && use_pipe(im, s)) {
		if ((err = pump_pipe(im, s, in, r)) <= 0) {
			if (err < 0)
				return err;
			r = 0; /* all of it went through the pipe */
		}
	}
	while (!s->gz && r > 0) {
		if ((err = feed(im, in, (size_t)r)) < 0)
			return err;
		r = src_raw(s, s->in, s->chunk, &in);
		if (r < 0)
			return set_err(im, (int)r, im->tok.offset, "read error");
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
	struct tl_memcap mem;
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
		  o && o->max_events && o->max_events < UINT32_MAX - 1 ? o->max_events
								       : UINT32_MAX - 1);
	tl_memcap_init(&mem, o, tl);
	if (mem.o)
		im.k.mem = &mem;
	json_tok_init(&im.tok, &kineto_sax, &im.k, o ? o->max_depth : 0, o ? o->max_string : 0);
	im.s = s;
	if (s->fd >= 0)
		src_probe(s);
	err = pump(&im, s);
	kimp_stop_pop(&im.k); /* before the rank is finalized, kept or freed */
	/* The file was cut while it was read (read() met an early end, or
	 * it is now shorter than what was read). */
	if (src_shrank(s)) {
		res->error_msg[0] = '\0';
		err = set_err(&im, -EIO, im.tok.offset, "trace file shrank during import");
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
	if (im.k.rounding) { /* later rows were flagged as they were pushed */
		r->flags |= TL_RANK_HTA_ROUNDING;
		for (uint32_t i = 0; i < im.k.rounding_from && i < r->nev; i++)
			if (tl_ev_hta_dur_ns(&r->ev[i]) < 0)
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
	gz_end(s);
	free(s->in);
	free(s->out);
	tl_rank_free(r);
	return err;
}

int timeline_import_fd(int fd, const struct import_opts *o, struct timeline *tl,
		       struct import_result *res)
{
	struct src s = {.fd = fd,
			.io_timeout_ms = o ? o->io_timeout_ms : 0,
			.cancel = o ? o->cancel : NULL,
			.digest = o ? o->digest : NULL};

	return import_src(&s, o, tl, res);
}

int timeline_import_buf(const void *buf, size_t len, const struct import_opts *o,
			struct timeline *tl, struct import_result *res)
{
	struct src s = {.fd = -1, .mem = buf, .mem_len = len, .digest = o ? o->digest : NULL};

	return import_src(&s, o, tl, res);
}

const char *import_warn_name(enum import_warn w)
{
	static const char *const n[IMPORT_W_COUNT] = {
		[IMPORT_W_MISSING_TS] = "missing_ts",	 [IMPORT_W_BAD_NUMBER] = "bad_number",
		[IMPORT_W_NEG_DUR] = "negative_dur",	 [IMPORT_W_UNKNOWN_PH] = "unknown_ph",
		[IMPORT_W_BAD_UTF8] = "bad_utf8",	 [IMPORT_W_STR_TRUNC] = "string_truncated",
		[IMPORT_W_DUPLICATE] = "duplicate",	 [IMPORT_W_BAD_FIELD] = "bad_field",
		[IMPORT_W_TOO_MANY] = "too_many_events",
	};

	return (unsigned)w < IMPORT_W_COUNT ? n[w] : "unknown";
}

const char *import_inflate_backend(void)
{
	return gz_backend_name(false);
}
