// SPDX-License-Identifier: MIT
/*
 * The persisted-capture loader's core, capture_decode(). The input is a
 * capture file; the CRCs in a copy of it are fixed up first when its
 * structure allows, so the section decoders behind them are reached in
 * every build (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION also skips the
 * check in the fuzzing build) and a regression replays the same way in a
 * plain build. A capture that decodes must encode, and decode again to
 * the same bytes: the loader and writer agree on everything they accept.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capsass.h"
#include "capture/capture-int.h"

static void fix_crcs(uint8_t *b, size_t len)
{
	if (len < CAPFILE_HDR_LEN)
		return;
	uint8_t *p = b + 16;
	put32(&p, capfile_crc(b, 16));
	size_t off = CAPFILE_HDR_LEN;
	while (len - off >= CAPFILE_SEC_HDR_LEN) {
		uint8_t *h = b + off;
		uint64_t slen = get64(h + 8);
		off += CAPFILE_SEC_HDR_LEN;
		if (slen > len - off)
			return;
		p = h + 16;
		put32(&p, capfile_sec_crc(h, b + off, (size_t)slen));
		off += (size_t)slen;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	struct capture *c = NULL, *c2 = NULL;
	char why[256];
	void *enc = NULL, *enc2 = NULL;
	size_t elen = 0, elen2 = 0;

	if (!b)
		return 0;
	memcpy(b, data, size);
	fix_crcs(b, size);
	int r = capture_decode(b, size, &c, why, sizeof(why));
	if (r < 0) {
		if (r != -EBADMSG && r != -ENOMEM)
			abort();
		if (r == -EBADMSG && (!why[0] || !memchr(why, '\0', sizeof(why))))
			abort(); /* every rejection says why */
		goto out;
	}
	/* Lookups the renderers do, on every id a record may carry. */
	for (size_t i = 0; i < c->nrecs; i++) {
		size_t l;
		uint16_t nu, nk;
		const char *s = capture_str(c, c->recs[i].comm, &l);
		if (s && l)
			(void)((volatile const char *)s)[l - 1];
		s = capture_str(c, store_rec_cgroup(&c->recs[i]), &l); /* launches */
		if (s && l)
			(void)((volatile const char *)s)[l - 1];
		const uint64_t *ips = capture_stack(c, c->recs[i].stack, &nu, &nk);
		if (ips && (nu || nk))
			(void)((volatile const uint64_t *)ips)[nu + nk - 1];
	}
	/* The SASS text of PC samples (capture/capsass.h), looked up as the
	 * renderers do: every entry finds itself, its text in bounds. */
	struct capsass sass;
	if (capsass_of_capture(c, &sass, why, sizeof(why)) < 0)
		abort(); /* the loader checked it */
	for (size_t i = 0; i < sass.n; i++) {
		size_t l;
		const char *t = capsass_find(&sass, sass.ents[i].crc, sass.ents[i].name,
					     sass.ents[i].pc, &l);
		if (!t || !l || l > CAPSASS_MAX_TEXT)
			abort();
		(void)((volatile const char *)t)[l - 1];
	}
	capsass_finish(&sass);
	if (capture_encode(c, &enc, &elen) < 0)
		goto out;
	if (capture_decode(enc, elen, &c2, why, sizeof(why)) < 0) {
		fprintf(stderr, "re-encoded capture does not decode: %s\n", why);
		abort();
	}
	if (capture_encode(c2, &enc2, &elen2) < 0)
		goto out;
	if (elen != elen2 || memcmp(enc, enc2, elen)) {
		fprintf(stderr, "encode/decode/encode is not stable (%zu vs %zu bytes)\n", elen,
			elen2);
		abort();
	}
out:
	free(enc);
	free(enc2);
	capture_free(c);
	capture_free(c2);
	free(b);
	return 0;
}
