// SPDX-License-Identifier: MIT
/*
 * Import driver: read() loop on an fd (or a memory buffer), transparent
 * gzip (zlib inflate, detected by the 1f 8b magic, multi-member), feeding
 * the JSON tokenizer chunk by chunk. Memory: one input and one output
 * chunk, the tokenizer's scratch, and the events kept.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "kineto.h"

#define DEF_CHUNK (256u * 1024)
#define DEF_MAX_BYTES (64ull << 30)

struct src {
	int fd; /* -1: memory */
	const uint8_t *mem;
	size_t mem_len, mem_off;
	uint8_t *in, *out;
	size_t chunk;
	bool gz, gz_started, gz_done;
	z_stream zs;
	uint64_t bytes_in;
	uint32_t io_timeout_ms;
};

static ssize_t src_raw(struct src *s, uint8_t *buf, size_t n)
{
	if (s->fd < 0) {
		size_t k = s->mem_len - s->mem_off;

		if (k > n)
			k = n;
		memcpy(buf, s->mem + s->mem_off, k);
		s->mem_off += k;
		s->bytes_in += k;
		return (ssize_t)k;
	}
	for (;;) {
		ssize_t r = read(s->fd, buf, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			/* A client's pipe, switched to O_NONBLOCK by the daemon:
			 * wait for data, but never longer than io_timeout_ms. */
			struct pollfd p = {.fd = s->fd, .events = POLLIN};
			int pr = poll(&p, 1, s->io_timeout_ms > 0 ? (int)s->io_timeout_ms : -1);
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
	ssize_t r;
	int err, zr;

	r = src_raw(s, s->in, s->chunk);
	if (r == 1) { /* tiny chunks: make sure the magic is visible */
		ssize_t r2 = src_raw(s, s->in + 1, 1);

		r = r2 < 0 ? r2 : 1 + r2;
	}
	if (r < 0)
		return set_err(im, (int)r, 0, "read error");
	if (r >= 2 && s->in[0] == 0x1f && s->in[1] == 0x8b) {
		s->gz = true;
		if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
			return set_err(im, -ENOMEM, 0, "zlib init failed");
		s->gz_started = true;
	}
	while (r > 0) {
		if (!s->gz) {
			if ((err = feed(im, s->in, (size_t)r)) < 0)
				return err;
		} else {
			s->zs.next_in = s->in;
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
		r = src_raw(s, s->in, s->chunk);
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
	s->in = malloc(s->chunk + 2);
	s->out = malloc(s->chunk);
	r = tl_rank_alloc(0);
	if (!s->in || !s->out || !r) {
		err = set_err(&im, -ENOMEM, 0, "out of memory");
		goto out;
	}
	kimp_init(&im.k, &tl->st, r, res,
		  o && o->max_events && o->max_events < UINT32_MAX - 1 ? o->max_events :
									 UINT32_MAX - 1);
	json_tok_init(&im.tok, &kineto_sax, &im.k, o ? o->max_depth : 0, o ? o->max_string : 0);
	err = pump(&im, s);
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
