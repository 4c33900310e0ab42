// SPDX-License-Identifier: MIT
/*
 * The CAPSEC_SYMBOLS decoder, sym_table_decode(). A table that decodes is
 * then read the way the folded renderer reads it: lookups of (pid, stack)
 * pairs taken from the input itself, every frame's name and line text, and
 * (version 2) its mapping's file and build id.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symtab.h"

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void touch(const struct sym_table *t, uint32_t idx)
{
	size_t len;
	const char *s = sym_table_name(t, idx, &len);
	if (!s)
		abort();
	if (len)
		(void)((volatile const char *)s)[len - 1];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_table *t = NULL;
	char why[256];

	int r = sym_table_decode(data, size, &t, why, sizeof(why));
	if (r < 0) {
		if (r != -EBADMSG && r != -ENOMEM)
			abort();
		return 0;
	}
	/* The entries section starts after the header and the names; probe
	 * with every (pid, stack) pair found at any 4-byte step, which hits
	 * the real entries and plenty of misses. */
	for (size_t off = 0; off + 8 <= size && off < 4096; off += 4) {
		struct sym_frames f;
		if (!sym_table_find(t, rd32(data + off), rd32(data + off + 4), &f))
			continue;
		for (unsigned i = 0; i < (unsigned)f.nuser + f.nkernel; i++) {
			touch(t, f.names[i]);
			if (f.lines)
				touch(t, f.lines[i]);
			const struct sym_mapping *m = f.maps ? sym_table_map(t, f.maps[i]) : NULL;
			if (m) {
				touch(t, m->file);
				touch(t, m->build_id);
			}
		}
		if (!!f.lines != sym_table_has_lines(t))
			abort();
	}
	touch(t, 0);
	touch(t, UINT32_MAX);
	(void)sym_table_entries(t);
	for (uint32_t i = 0; i <= sym_table_nmaps(t) + 1; i++)
		if (sym_table_map(t, i) && (!i || i > sym_table_nmaps(t)))
			abort();
	sym_table_free(t);
	return 0;
}
