// SPDX-License-Identifier: MIT
/*
 * The folded-stack reader (render/foldedin.c) and the flame graph drawn
 * from what it accepted. Byte 0: bit 0 a differential graph (the input is
 * split in two at its middle, A and B), bits 1-3 the feed size (lines cut
 * across feeds). The rest is folded text.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdlib.h>

#include "render/flamegraph.h"

static int sink(void *ctx, const void *buf, size_t len)
{
	*(size_t *)ctx += len;
	if (len)
		(void)((volatile const char *)buf)[len - 1];
	return 0;
}

static int feed(struct fold_set *s, int side, const uint8_t *p, size_t n, size_t chunk)
{
	for (size_t off = 0; off < n; off += chunk) {
		int r = fold_set_feed(s, side, p + off, n - off < chunk ? n - off : chunk);
		if (r < 0)
			return r;
	}
	return fold_set_end(s, side);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[] = {1, 2, 7, 64, 512, 4096, 65536, 1 << 20};
	struct fold_set *s;
	struct flame_opts o = {0};
	struct flame_totals t;
	size_t out = 0;

	if (size < 1)
		return 0;
	o.diff = data[0] & 1;
	size_t chunk = chunks[(data[0] >> 1) & 7];
	data++;
	size--;
	if (fold_set_new(1 << 20, &s) < 0)
		return 0;
	int r;
	if (o.diff) {
		r = feed(s, 0, data, size / 2, chunk);
		if (r == 0)
			r = feed(s, 1, data + size / 2, size - size / 2, chunk);
	} else {
		r = feed(s, 0, data, size, chunk);
	}
	if (r == 0) {
		r = flame_render(s, &o, sink, &out, &t);
		if (r < 0 && r != -ENODATA && r != -ENOMEM)
			abort();
	} else if (r != -EFBIG && r != -ENOMEM) {
		abort();
	}
	fold_set_free(s);
	return 0;
}
