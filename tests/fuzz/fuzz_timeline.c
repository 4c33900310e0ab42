// SPDX-License-Identifier: MIT
/*
 * The CAPSEC_TIMELINE decoder, timeline_decode(). A timeline that decodes
 * must encode and decode again to an equal timeline.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "timeline/timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timeline *tl = NULL, *tl2 = NULL;
	void *enc = NULL;
	size_t elen = 0;
	char why[256];

	int r = timeline_decode(data, size, &tl, why, sizeof(why));
	if (r < 0) {
		if (r != -EBADMSG && r != -ENOTSUP && r != -ENOMEM)
			abort();
		return 0;
	}
	/* Accessors the analyses use, over every rank. */
	for (uint32_t i = 0; i < timeline_nranks(tl); i++)
		if (!timeline_rank_at(tl, i))
			abort();
	for (uint32_t i = 0; i < timeline_nstrs(tl) && i < 4096; i++) {
		size_t len;
		if (!timeline_str(tl, i, &len))
			abort();
	}
	if (timeline_encode(tl, &enc, &elen) == 0) {
		if (timeline_decode(enc, elen, &tl2, why, sizeof(why)) < 0) {
			fprintf(stderr, "re-encoded timeline does not decode: %s\n", why);
			abort();
		}
		if (!timeline_equal(tl, tl2)) {
			fprintf(stderr, "timeline changed through encode/decode\n");
			abort();
		}
	}
	free(enc);
	timeline_free(tl2);
	timeline_free(tl);
	return 0;
}
