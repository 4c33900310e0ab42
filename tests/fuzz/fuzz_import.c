// SPDX-License-Identifier: MIT
/*
 * The trace importer, timeline_import_buf(): Kineto / Chrome trace JSON,
 * plain or gzip (detected by its magic). Limits are small so the limit
 * paths are reached, and the read size varies with the input's length so
 * tokens split across reads are exercised (and, for gzip, which inflate
 * backend runs). A trace that imports must survive encode/decode unchanged
 * (that is how imports are persisted).
 */
#include "fuzz.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "import/import.h"
#include "timeline/timeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t chunks[] = {0, 1, 3, 17, 4096};
	struct import_opts o = {
		.rank = -1,
		.max_bytes = 4u << 20, /* gzip bombs stop here */
		.max_depth = 24,
		.max_string = 256,
		.max_events = 20000,
		.chunk_size = chunks[size % 5],
		/* gzip: both inflate backends (ISA-L where built in, zlib) */
		.inflate_zlib = (size / 5) % 2,
	};
	struct import_result res;
	struct timeline *tl = NULL, *tl2 = NULL;
	void *enc = NULL;
	size_t elen = 0;
	char why[256];

	/* One byte per read is slow on large inputs; keep it for small ones. */
	if (o.chunk_size == 1 && size > 4096)
		o.chunk_size = 0;
	if (timeline_new(&tl) < 0)
		return 0;
	int r = timeline_import_buf(data, size, &o, tl, &res);
	if (r < 0) {
		if (res.error != r)
			abort();
		goto out;
	}
	if (timeline_encode(tl, &enc, &elen) == 0) {
		if (timeline_decode(enc, elen, &tl2, why, sizeof(why)) < 0) {
			fprintf(stderr, "imported timeline does not decode: %s\n", why);
			abort();
		}
		if (!timeline_equal(tl, tl2)) {
			fprintf(stderr, "imported timeline changed through encode/decode\n");
			abort();
		}
	}
out:
	free(enc);
	timeline_free(tl2);
	timeline_free(tl);
	return 0;
}
