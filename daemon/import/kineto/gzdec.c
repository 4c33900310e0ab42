// SPDX-License-Identifier: MIT
/*
 * The importer's inflate backends behind one step function (gz_step):
 * Intel ISA-L's igzip (isal_inflate, ISAL_GZIP: header, CRC-32 and size
 * trailer checked; about 3x zlib's speed, its CRC with PCLMULQDQ) where
 * the build found libisal, else zlib. zlib stays available in every build
 * (import_opts.inflate_zlib picks it; the tests run both).
 *
 * Both report the same way: GZ_END at the end of a gzip member (the bytes
 * after it are left unconsumed, for the next member), an error as a short
 * zlib-style reason ("invalid block type", "incorrect data check", ...;
 * ISA-L's codes are mapped to zlib's wording). Truncation and trailing
 * bytes read the same with both; for corrupt data the reason and the
 * compressed offset (where the backend stopped reading: ISA-L reads ahead
 * 8 bytes at a time) depend on where each notices the damage.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifdef GPUPROF_HAVE_ISAL
#include <isa-l/igzip_lib.h>
#endif

#include "gunzip.h"

struct gz_dec {
	z_stream zs;
#ifdef GPUPROF_HAVE_ISAL
	struct inflate_state *is; /* 85 KiB (window, scratch); NULL: zlib */
#endif
	bool isal;
};

const char *gz_backend_name(bool force_zlib)
{
#ifdef GPUPROF_HAVE_ISAL
	if (!force_zlib)
		return "isa-l";
#endif
	(void)force_zlib;
	return "zlib";
}

int gz_begin(struct src *s, bool force_zlib)
{
	struct gz_dec *d = calloc(1, sizeof(*d));

	(void)force_zlib; /* zlib is all a build without ISA-L has */
	if (!d)
		return -ENOMEM;
#ifdef GPUPROF_HAVE_ISAL
	if (!force_zlib) {
		if (!(d->is = malloc(sizeof(*d->is)))) {
			free(d);
			return -ENOMEM;
		}
		d->isal = true;
		isal_inflate_init(d->is);
		d->is->crc_flag = ISAL_GZIP;
		s->gzd = d;
		return 0;
	}
#endif
	if (inflateInit2(&d->zs, 16 + MAX_WBITS) != Z_OK) {
		free(d);
		return -ENOMEM;
	}
	s->gzd = d;
	return 0;
}

void gz_end(struct src *s)
{
	if (!s->gzd)
		return;
	if (!s->gzd->isal)
		inflateEnd(&s->gzd->zs);
#ifdef GPUPROF_HAVE_ISAL
	free(s->gzd->is);
#endif
	free(s->gzd);
	s->gzd = NULL;
}

/* Ready for the next gzip member; 0 or -EBADMSG. */
static int gz_reset(struct gz_dec *d)
{
#ifdef GPUPROF_HAVE_ISAL
	if (d->isal) {
		isal_inflate_reset(d->is);
		d->is->crc_flag = ISAL_GZIP;
		return 0;
	}
#endif
	return inflateReset(&d->zs) == Z_OK ? 0 : -EBADMSG;
}

#ifdef GPUPROF_HAVE_ISAL
static const char *isal_why(int r)
{
	switch (r) {
	case ISAL_INVALID_BLOCK:
		return "invalid block type";
	case ISAL_INVALID_SYMBOL:
		return "invalid code";
	case ISAL_INVALID_LOOKBACK:
		return "invalid distance too far back";
	case ISAL_INVALID_WRAPPER:
		return "incorrect header check";
	case ISAL_UNSUPPORTED_METHOD:
		return "unknown compression method";
	case ISAL_INCORRECT_CHECKSUM:
		return "incorrect data check";
	case ISAL_NEED_DICT:
		return "need dictionary";
	default:
		return "inflate error";
	}
}

static int isal_step(struct inflate_state *is, const uint8_t **in, size_t *avail, uint8_t *out,
		     size_t cap, size_t *got, const char **why)
{
	int r;

	is->next_in = (uint8_t *)(uintptr_t)*in; /* only read */
	is->avail_in = (uint32_t)*avail;
	is->next_out = out;
	is->avail_out = (uint32_t)cap;
	r = isal_inflate(is);
	*got = cap - is->avail_out;
	*in = is->next_in;
	*avail = is->avail_in;
	/* ISAL_END_INPUT & co (> 0): a header cut short, more input needed */
	if (r < 0 || r == ISAL_NEED_DICT) {
		*why = isal_why(r);
		return GZ_ERR;
	}
	return is->block_state == ISAL_BLOCK_FINISH ? GZ_END : GZ_OK;
}
#endif

int gz_step(struct src *s, const uint8_t **in, size_t *avail, uint8_t *out, size_t cap, size_t *got,
	    const char **why)
{
	struct gz_dec *d = s->gzd;
	int zr;

	if (s->gz_done) { /* another gzip member follows */
		if (gz_reset(d) < 0) {
			*got = 0;
			*why = "gzip reset failed";
			return GZ_ERR;
		}
		s->gz_done = false;
	}
#ifdef GPUPROF_HAVE_ISAL
	if (d->isal)
		return isal_step(d->is, in, avail, out, cap, got, why);
#endif
	d->zs.next_in = (Bytef *)(uintptr_t)*in; /* zlib only reads it */
	d->zs.avail_in = (uInt)*avail;
	d->zs.next_out = out;
	d->zs.avail_out = (uInt)cap;
	zr = inflate(&d->zs, Z_NO_FLUSH);
	*got = cap - d->zs.avail_out;
	*in = d->zs.next_in;
	*avail = d->zs.avail_in;
	if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
		*why = d->zs.msg ? d->zs.msg : "inflate error";
		return GZ_ERR;
	}
	return zr == Z_STREAM_END ? GZ_END : GZ_OK;
}
