// SPDX-License-Identifier: MIT
/* XXH64 (xxHash, seed 0); see xxh64.h for why the importer needs one. */
#include <string.h>

#include "xxh64.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/* Little-endian loads, whatever the host (memcpy: one load on x86). */
static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t round1(uint64_t acc, uint64_t in)
{
	return rotl(acc + in * P2, 31) * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v)
{
	return (acc ^ round1(0, v)) * P1 + P4;
}

static void stripe(uint64_t v[4], const uint8_t *p)
{
	v[0] = round1(v[0], le64(p));
	v[1] = round1(v[1], le64(p + 8));
	v[2] = round1(v[2], le64(p + 16));
	v[3] = round1(v[3], le64(p + 24));
}

void xxh64_init(struct xxh64 *s)
{
	memset(s, 0, sizeof(*s));
	s->v[0] = P1 + P2;
	s->v[1] = P2;
	s->v[2] = 0;
	s->v[3] = -P1;
}

void xxh64_update(struct xxh64 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	s->len += n;
	if (s->nbuf) {
		size_t k = 32 - s->nbuf < n ? 32 - s->nbuf : n;

		memcpy(s->buf + s->nbuf, p, k);
		s->nbuf += k;
		p += k;
		n -= k;
		if (s->nbuf < 32)
			return;
		stripe(s->v, s->buf);
		s->nbuf = 0;
	}
	for (; n >= 32; p += 32, n -= 32)
		stripe(s->v, p);
	memcpy(s->buf, p, n);
	s->nbuf = n;
}

uint64_t xxh64_digest(const struct xxh64 *s)
{
	const uint8_t *p = s->buf, *end = s->buf + s->nbuf;
	uint64_t h;

	if (s->len >= 32) {
		h = rotl(s->v[0], 1) + rotl(s->v[1], 7) + rotl(s->v[2], 12) + rotl(s->v[3], 18);
		for (int i = 0; i < 4; i++)
			h = merge(h, s->v[i]);
	} else {
		h = P5;
	}
	h += s->len;
	for (; p + 8 <= end; p += 8)
		h = rotl(h ^ round1(0, le64(p)), 27) * P1 + P4;
	if (p + 4 <= end) {
		h = rotl(h ^ (uint64_t)le32(p) * P1, 23) * P2 + P3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl(h ^ *p * P5, 11) * P1;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}
