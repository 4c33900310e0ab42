/* SPDX-License-Identifier: MIT */
/*
 * XXH64 (xxHash, 64-bit, seed 0), streaming: identical to the reference
 * XXH64() of the bytes fed. The importer hashes the bytes of each trace file
 * it reads and the critical-path overlay hashes the file it is given again,
 * so a trace that is not the capture's own is refused instead of being
 * marked by position.
 *
 * Why not SHA-256: the hash runs on the import's read path, at the speed of
 * the parser (1 GB/s and more for plain JSON); a portable SHA-256 does about
 * 115 MB/s and would become the import's bottleneck, where XXH64 costs a few
 * percent. What it guards against is a wrong file handed over by mistake
 * (two traces of one program differ in few bytes), for which 64 bits make a
 * collision negligible; it is no defence against a file crafted to collide,
 * and needs none: the overlay only goes back to the client that sent it.
 *
 * The hash is Debian's libxxhash (the reference implementation, well kept
 * and vectorized); this wrapper keeps its state inline, so callers embed it
 * without an allocation.
 */
#ifndef GPUPROF_IMPORT_XXH64_H
#define GPUPROF_IMPORT_XXH64_H

#include <stddef.h>
#include <stdint.h>

#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t's layout, to embed it */
#include <xxhash.h>

struct xxh64 {
	XXH64_state_t st;
	uint64_t len; /* bytes hashed */
};

void xxh64_init(struct xxh64 *s);
void xxh64_update(struct xxh64 *s, const void *p, size_t n);
/* The hash of the bytes fed so far (s may go on being fed). */
uint64_t xxh64_digest(const struct xxh64 *s);

#endif /* GPUPROF_IMPORT_XXH64_H */
