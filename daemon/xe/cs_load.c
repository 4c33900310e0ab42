// SPDX-License-Identifier: MIT
/*
 * Batch-buffer dumps (docs/gpu-cs.md, "Dump format"): how GPU memory and
 * submissions captured by other means than the BPF hooks reach the host
 * parser. Little-endian, every length checked against what is left.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cs.h"

#define DUMP_MAGIC "GPUCSDMP"
#define DUMP_VERSION 1
#define DUMP_HDR 16
#define REC_HDR 8
#define REC_BUFFER 1
#define REC_SUBMIT 2
#define BUFFER_HDR 16 /* asid, pad, gpu_addr */
#define SUBMIT_LEN 24 /* asid, pid, uid, pad, batch */

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static int bad(char *why, size_t whylen, size_t off, const char *what)
{
	if (why && whylen)
		snprintf(why, whylen, "batch-buffer dump at byte %zu: %s", off, what);
	return -EBADMSG;
}

int xe_cs_load(struct xe_cs *cs, struct xe *x, const void *buf, size_t len, char *why,
	       size_t whylen)
{
	const uint8_t *p = buf;
	size_t off = DUMP_HDR;
	int nsub = 0, r;

	if (len < DUMP_HDR || memcmp(p, DUMP_MAGIC, 8) != 0)
		return bad(why, whylen, 0, "not a batch-buffer dump (magic GPUCSDMP)");
	if (le32(p + 8) != DUMP_VERSION)
		return bad(why, whylen, 8, "unsupported version");
	while (off < len) {
		uint32_t type, rlen;
		const uint8_t *q;

		if (len - off < REC_HDR)
			return bad(why, whylen, off, "record header cut short");
		type = le32(p + off);
		rlen = le32(p + off + 4);
		if (rlen > len - off - REC_HDR)
			return bad(why, whylen, off, "record longer than the dump");
		q = p + off + REC_HDR;
		switch (type) {
		case REC_BUFFER:
			if (rlen <= BUFFER_HDR)
				return bad(why, whylen, off, "buffer record without bytes");
			r = xe_cs_add_buffer(cs, x, le32(q), le64(q + 8), q + BUFFER_HDR,
					     rlen - BUFFER_HDR);
			if (r == -EINVAL)
				return bad(
					why, whylen, off,
					"buffer unaligned, beyond 48 bits or over the size limit");
			if (r < 0)
				return r;
			break;
		case REC_SUBMIT:
			if (rlen != SUBMIT_LEN)
				return bad(why, whylen, off, "submit record is not 24 bytes");
			r = xe_cs_submit(cs, x,
					 &(struct xe_cs_submit){.asid = le32(q),
								.pid = le32(q + 4),
								.uid = le32(q + 8),
								.batch = le64(q + 16)},
					 NULL);
			if (r < 0)
				return r;
			nsub++;
			break;
		default: /* a later version's record: skipped by its length */
			break;
		}
		off += REC_HDR + (size_t)rlen;
	}
	return nsub;
}
