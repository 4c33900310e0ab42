/* SPDX-License-Identifier: MIT */
/*
 * EU-stall record decoding, one decoder per record layout, picked from a
 * table keyed by graphics IP version (the Xe PRMs' EU-stall record). Records are
 * read with explicit little-endian loads and shifts, never with compiler
 * bitfields: iaprof's bitfield struct puts end_flag at the wrong bit
 * (the Xe PRMs' EU-stall record "Gotchas").
 */
#ifndef GPUPROF_XE_DECODE_H
#define GPUPROF_XE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stall reasons in iaprof's column order (iaprof's output), which is also the
 * order every output of ours uses. Always printed by name. */
enum xe_reason {
	XE_R_ACTIVE,
	XE_R_CONTROL,
	XE_R_PIPESTALL,
	XE_R_SEND,
	XE_R_DIST_ACC,
	XE_R_SBID,
	XE_R_SYNC,
	XE_R_INST_FETCH,
	XE_R_OTHER,
	XE_R_TDR,
	XE_NREASONS,
};

extern const char *const xe_reason_names[XE_NREASONS];

struct xe_sample {
	uint64_t ip; /* in 8-byte units, relative to the instruction base (the Xe PRMs) */
	uint8_t cnt[XE_NREASONS];
	uint8_t ex_id, end_flag; /* Xe2+ only; 0 on PVC */
};

typedef void (*xe_decode_fn)(const uint8_t *rec, struct xe_sample *s);
/* n records at stride bytes apart into out[0..n): the hot path's loop,
 * one per layout so the per-record decode is inlined. */
typedef void (*xe_decode_n_fn)(const uint8_t *buf, size_t n, size_t stride, struct xe_sample *out);

struct xe_decoder {
	const char *name;
	/* graphics IP version range, as major * 100 + minor, inclusive */
	unsigned ver_min, ver_max;
	unsigned ip_bits; /* width of the IP field */
	xe_decode_fn decode;
	xe_decode_n_fn decode_n;
};

/* The decoder for a graphics IP version (e.g. 12.60 PVC, 20.04 BMG), or
 * NULL when that version has no EU-stall sampling (the kernel refuses it
 * too: the xe driver's EU-stall stream). */
const struct xe_decoder *xe_decoder_find(unsigned ver_major, unsigned ver_minor);
/* By name ("pvc", "xe2", "xe3p"), for tests and the bench. */
const struct xe_decoder *xe_decoder_by_name(const char *name);

/* Sum of the reason counters of one sample. */
static inline unsigned xe_sample_total(const struct xe_sample *s)
{
	unsigned t = 0;

	for (int i = 0; i < XE_NREASONS; i++)
		t += s->cnt[i];
	return t;
}

#endif
