/* SPDX-License-Identifier: MIT */
/* Shared between capture.c, capfile.c, capdecode.c and capio.c; not for other parts. */
#ifndef GPUPROF_CAPTURE_INT_H
#define GPUPROF_CAPTURE_INT_H

#include "capture/capture.h"

#include <zlib.h>

/* Layout constants; docs/capture-format.md has the byte-by-byte map. */
#define CAPFILE_MAGIC "GPUPROFC"
#define CAPFILE_HDR_LEN 20u
#define CAPFILE_SEC_HDR_LEN 24u
#define CAPFILE_META_FIXED 84u
#define CAPFILE_REC_LEN 64u

/* Explicit little-endian access: the format never depends on host order
 * or struct padding. */
static inline void put16(uint8_t **p, uint16_t v)
{
	(*p)[0] = (uint8_t)v;
	(*p)[1] = (uint8_t)(v >> 8);
	*p += 2;
}

static inline void put32(uint8_t **p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		(*p)[i] = (uint8_t)(v >> (8 * i));
	*p += 4;
}

static inline void put64(uint8_t **p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		(*p)[i] = (uint8_t)(v >> (8 * i));
	*p += 8;
}

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline uint32_t capfile_crc(const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc32_z(0, Z_NULL, 0), p, n);
}

/* A section's CRC covers its type, flags and length (the first 16 bytes
 * of its header) and then its payload: a flipped type bit must not turn
 * RECORDS into an unknown, silently kept, extra section. */
static inline uint32_t capfile_sec_crc(const uint8_t *hdr, const uint8_t *payload, size_t n)
{
	return (uint32_t)crc32_z(capfile_crc(hdr, 16), payload, n);
}

/* Free the tables and extras, keep the header fields. */
void capture_free_data(struct capture *c);

/* Types that may be stored as opaque extras: anything but the core four. */
static inline bool capture_extra_type_ok(uint32_t type)
{
	return type != 0 && type < CAPSEC_TYPE_MAX && type != CAPSEC_META &&
	       type != CAPSEC_STRINGS && type != CAPSEC_STACKS && type != CAPSEC_RECORDS;
}

/*
 * Decode into an existing capture (capture_decode and the loader). On
 * -EBADMSG the tables are freed but the META fields, when the META
 * section itself was valid, are left in c for the damaged-file report.
 */
int capture_decode_into(struct capture *c, const void *buf, size_t len, char *why, size_t whylen);

#endif
