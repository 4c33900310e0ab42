/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), streaming. The importer hashes the bytes of each
 * trace file it reads and the critical-path overlay hashes the file it is
 * given again, so a trace that is not the capture's own is refused instead
 * of being marked by position. A digest rather than a checksum: two traces
 * of one program differ in few bytes, and nothing here is hot enough for
 * the cost to matter (the parser is slower than the hash).
 */
#ifndef GPUPROF_TIMELINE_SHA256_H
#define GPUPROF_TIMELINE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed */
	uint8_t buf[64];
	size_t nbuf;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *p, size_t n);
/* The digest as 64 lower-case hex digits and a NUL; s is spent. */
void sha256_hex(struct sha256 *s, char out[SHA256_HEX_LEN + 1]);

#endif /* GPUPROF_TIMELINE_SHA256_H */
