// SPDX-License-Identifier: MIT
/*
 * String ids for the wire: kernel, API, marker and domain names travel
 * once per connection as GPI_STRING records. The table is bounded
 * (NAMES_N ids, open addressing over the text's hash); when a name finds
 * no free slot near its home it takes the home slot over and the id is
 * redefined on the wire before its next use, which the wire allows.
 * Sender thread only: no locks.
 */
#include <stdlib.h>
#include <string.h>

#include "inject.h"

#define NAMES_N 4096u /* ids 1..NAMES_N, a power of two */
#define PROBE 16u

#define PTR_CACHE 1024u /* a power of two */

struct name {
	char *text; /* NULL: free */
	uint32_t len;
	uint32_t epoch; /* bumped when the slot takes another text */
	uint64_t hash;
	int sent; /* defined on the current connection */
};

static struct name names[NAMES_N];

/* CUPTI's kernel and function names are shared strings: their address
 * finds the id without hashing and probing (a mangled name runs to
 * hundreds of bytes). A plain compare still confirms the text, since a
 * module unload may free a name and another take its address. */
static struct {
	const char *ptr;
	uint32_t id, epoch;
} ptr_cache[PTR_CACHE];

static uint64_t fnv1a(const char *s, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

static int take(struct name *n, const char *text, uint32_t len, uint64_t h)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -1;
	memcpy(copy, text, len);
	copy[len] = 0;
	free(n->text);
	n->text = copy;
	n->len = len;
	n->hash = h;
	n->sent = 0;
	n->epoch++;
	return 0;
}

uint32_t names_intern(const char *text, int *define)
{
	uint32_t len, home, i;
	uint64_t h;

	*define = 0;
	if (!text)
		return 0;
	len = (uint32_t)strnlen(text, GPI_STRING_MAX);
	h = fnv1a(text, len);
	home = (uint32_t)(h & (NAMES_N - 1));
	for (i = 0; i < PROBE; i++) {
		struct name *n = &names[(home + i) & (NAMES_N - 1)];

		if (n->text && n->hash == h && n->len == len && !memcmp(n->text, text, len))
			break;
		if (!n->text)
			break;
	}
	if (i == PROBE)
		i = 0; /* recycle the home slot */
	struct name *n = &names[(home + i) & (NAMES_N - 1)];

	if (!n->text || n->hash != h || n->len != len || memcmp(n->text, text, len)) {
		if (take(n, text, len, h))
			return 0;
	}
	*define = !n->sent;
	return ((home + i) & (NAMES_N - 1)) + 1;
}

uint32_t names_intern_const(const char *text, int *define)
{
	size_t slot = ((uintptr_t)text >> 3) & (PTR_CACHE - 1);
	uint32_t id;

	*define = 0;
	if (!text)
		return 0;
	id = ptr_cache[slot].id;
	if (ptr_cache[slot].ptr == text && id && names[id - 1].epoch == ptr_cache[slot].epoch &&
	    !strncmp(names[id - 1].text, text, names[id - 1].len) &&
	    (names[id - 1].len == GPI_STRING_MAX || !text[names[id - 1].len])) {
		*define = !names[id - 1].sent;
		return id;
	}
	id = names_intern(text, define);
	if (id) {
		ptr_cache[slot].ptr = text;
		ptr_cache[slot].id = id;
		ptr_cache[slot].epoch = names[id - 1].epoch;
	}
	return id;
}

const char *names_text(uint32_t id, uint32_t *len)
{
	if (!id || id > NAMES_N || !names[id - 1].text)
		return NULL;
	*len = names[id - 1].len;
	return names[id - 1].text;
}

void names_mark_sent(uint32_t id)
{
	if (id && id <= NAMES_N)
		names[id - 1].sent = 1;
}

void names_forget_sent(void)
{
	for (uint32_t i = 0; i < NAMES_N; i++)
		names[i].sent = 0;
}
