// SPDX-License-Identifier: MIT
/*
 * The Nsight Systems importer, timeline_import_nsys_buf() (daemon/timeline/
 * nsys*.c): `nsys export --type sqlite` files, opened read-only from memory
 * (sqlite3_deserialize) with a progress-handler budget. The SQLite library
 * itself is not instrumented; what is fuzzed is our reading of whatever
 * tables, column types and values a file holds: strings, kernels, runtime
 * calls, NVTX ranges and their NCCL payload blobs. Limits are small so the
 * limit paths are reached. An import that succeeds must survive
 * encode/decode unchanged (that is how imports are persisted), and a
 * second import of the same bytes goes to the next free ranks.
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
	struct import_opts o = {
		.rank = size & 1 ? -1 : 3,
		.max_bytes = 4u << 20,
		.max_string = 256,
		.max_events = 20000,
	};
	struct import_result res;
	struct timeline *tl = NULL, *tl2 = NULL;
	void *enc = NULL;
	size_t elen = 0;
	char why[256];

	if (timeline_new(&tl) < 0)
		return 0;
	int r = timeline_import_nsys_buf(data, size, &o, tl, &res);
	if (r < 0) {
		if (res.error != r)
			abort();
		if (timeline_nranks(tl) != 0) {
			fprintf(stderr, "failed import left %u rank(s)\n", timeline_nranks(tl));
			abort();
		}
		goto out;
	}
	if (res.format != IMPORT_FMT_NSYS || res.nranks != timeline_nranks(tl))
		abort();
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
	/* Small inputs only: the same export again, after the first. */
	if (size <= 16384 && res.nranks) {
		uint32_t before = timeline_nranks(tl);
		o.rank = -1;
		r = timeline_import_nsys_buf(data, size, &o, tl, &res);
		if (r == 0 && timeline_nranks(tl) != before + res.nranks)
			abort();
	}
out:
	free(enc);
	timeline_free(tl2);
	timeline_free(tl);
	return 0;
}
