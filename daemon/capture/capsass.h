/* SPDX-License-Identifier: MIT */
/*
 * The CAPSEC_CUPTI_SASS extra section of a capture: the SASS text of the
 * instructions the capture's NVIDIA PC samples (STORE_REC_GPU_PC) point at,
 * resolved when the capture was saved, so that `folded --weight stalls`,
 * flame graphs, heat maps and the pprof export show instructions after a
 * restart or on another host, without the cubins, nvdisasm or the process.
 * Text only (no code), only for (cubin, function, offset) keys the
 * capture's own records name, and only what the capture's owner could see
 * (the writer, collect/cupti_sass.c, decides that).
 *
 * Payload, little-endian (docs/capture-format.md):
 *   u32 version (1), u32 count, u32 missing, u32 capped,
 *   count x { u64 cubin_crc; u32 name; u32 pc; u16 len; u8 text[len] }
 * sorted by (crc, name, pc), strictly; name is a string id of the
 * capture (the PC records' function name), 1..nstrs; text 1..255 bytes of
 * printable ASCII or UTF-8 (no control byte). missing: keys of the
 * capture's records that had no text (no cubin kept or visible to the
 * owner, no nvdisasm, not in its output); capped: keys left out by the
 * bounds below. A section of another version is ignored (not an error), so
 * a later writer does not make older readers refuse the capture.
 */
#ifndef GPUPROF_CAPTURE_CAPSASS_H
#define GPUPROF_CAPTURE_CAPSASS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct capture;

#define CAPSEC_CUPTI_SASS 0x4353 /* "CS": CUPTI SASS */
#define CAPSASS_VERSION 1
#define CAPSASS_HDR_LEN 16u
#define CAPSASS_ENT_FIXED 18u	     /* an entry without its text */
#define CAPSASS_MAX_ENTRIES 65536u   /* instructions per capture */
#define CAPSASS_MAX_TEXT 255u	     /* bytes of one instruction's text */
#define CAPSASS_MAX_BYTES (4u << 20) /* the whole payload */

struct capsass_ent {
	uint64_t crc;
	uint32_t name, pc;
	uint32_t off; /* of the text, into capsass.base */
	uint16_t len;
};

/* A decoded section; base points into the section's data (the capture's
 * extra), so it lives as long as the capture. */
struct capsass {
	const char *base;
	struct capsass_ent *ents; /* sorted */
	size_t n;
	uint32_t missing, capped;
};

/*
 * Decode and check the section data (len bytes) against c's string table.
 * 0 with *out filled; 0 with an empty *out for a section of another
 * version; -EBADMSG with why ("entry 3: name id 99 out of range (12
 * strings)"); -ENOMEM. capsass_finish() frees what it holds.
 */
int capsass_decode(const struct capture *c, const void *data, size_t len, struct capsass *out,
		   char *why, size_t whylen);
void capsass_finish(struct capsass *s);

/* The text of (crc, name, pc), not NUL-terminated, or NULL. */
const char *capsass_find(const struct capsass *s, uint64_t crc, uint32_t name, uint32_t pc,
			 size_t *len);

/*
 * Decode c's section, if it has one (an empty *out otherwise). Also checks
 * that there is at most one. What the loader (capdecode.c) and the writer
 * (capfile.c) call, so every file written loads back.
 */
int capsass_of_capture(const struct capture *c, struct capsass *out, char *why, size_t whylen);

/* Building a section (the writer, on the saving worker). */
struct capsass_builder {
	struct capsass_ent *ents; /* off: into text */
	size_t n, cap;
	char *text;
	size_t text_len, text_cap;
	uint32_t missing, capped;
};

/* Add the text of a key: control bytes become spaces, blanks at the ends
 * dropped, cut at CAPSASS_MAX_TEXT. Past the bounds the key is counted in
 * capped. Returns 0 or -ENOMEM. A key added twice keeps its first text. */
int capsass_add(struct capsass_builder *b, uint64_t crc, uint32_t name, uint32_t pc,
		const char *text);
/* The section's bytes (malloc()ed) into *buf: 0, -ENODATA when there is
 * nothing to say (no entry, nothing missing or capped), -ENOMEM. */
int capsass_encode(struct capsass_builder *b, void **buf, size_t *len);
void capsass_builder_finish(struct capsass_builder *b);

#endif
