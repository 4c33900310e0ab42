// SPDX-License-Identifier: MIT
/*
 * The three EU-stall record layouts (the Xe PRMs' EU-stall record). Bit numbers count
 * little-endian over the 64-byte record; w0..w2 are its first three
 * little-endian u64 words.
 */
#include "decode.h"

#include <string.h>

const char *const xe_reason_names[XE_NREASONS] = {
	[XE_R_ACTIVE] = "active", [XE_R_CONTROL] = "control",	    [XE_R_PIPESTALL] = "pipestall",
	[XE_R_SEND] = "send",	  [XE_R_DIST_ACC] = "dist_acc",	    [XE_R_SBID] = "sbid",
	[XE_R_SYNC] = "sync",	  [XE_R_INST_FETCH] = "inst_fetch", [XE_R_OTHER] = "other",
	[XE_R_TDR] = "tdr",
};

static inline uint64_t le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* Counters common to PVC and Xe2: bits 37..100. */
static inline void decode_mid(uint64_t w0, uint64_t w1, struct xe_sample *s)
{
	s->cnt[XE_R_OTHER] = (uint8_t)(w0 >> 37);
	s->cnt[XE_R_CONTROL] = (uint8_t)(w0 >> 45);
	s->cnt[XE_R_PIPESTALL] = (uint8_t)(w0 >> 53);
	s->cnt[XE_R_SEND] = (uint8_t)((w0 >> 61) | (w1 << 3));
	s->cnt[XE_R_DIST_ACC] = (uint8_t)(w1 >> 5);
	s->cnt[XE_R_SBID] = (uint8_t)(w1 >> 13);
	s->cnt[XE_R_SYNC] = (uint8_t)(w1 >> 21);
	s->cnt[XE_R_INST_FETCH] = (uint8_t)(w1 >> 29);
}

/* PVC: active at 29-36, no tdr, no ex_id/end_flag. */
static inline void decode_pvc(const uint8_t *rec, struct xe_sample *s)
{
	uint64_t w0 = le64(rec), w1 = le64(rec + 8);

	s->ip = w0 & 0x1FFFFFFFull;
	s->cnt[XE_R_ACTIVE] = (uint8_t)(w0 >> 29);
	s->cnt[XE_R_TDR] = 0;
	decode_mid(w0, w1, s);
	s->ex_id = 0;
	s->end_flag = 0;
}

/* Xe2 (20..34): tdr takes PVC's active bits, active moves to 101-108. */
static inline void decode_xe2(const uint8_t *rec, struct xe_sample *s)
{
	uint64_t w0 = le64(rec), w1 = le64(rec + 8);

	s->ip = w0 & 0x1FFFFFFFull;
	s->cnt[XE_R_TDR] = (uint8_t)(w0 >> 29);
	decode_mid(w0, w1, s);
	s->cnt[XE_R_ACTIVE] = (uint8_t)(w1 >> 37);
	s->ex_id = (uint8_t)((w1 >> 45) & 7);
	s->end_flag = (uint8_t)((w1 >> 48) & 1);
}

/* Xe3p (>= 35): a 61-bit IP shifts every counter up by 32 bits. */
static inline void decode_xe3p(const uint8_t *rec, struct xe_sample *s)
{
	uint64_t w0 = le64(rec), w1 = le64(rec + 8), w2 = le64(rec + 16);

	s->ip = w0 & ((1ull << 61) - 1);
	s->cnt[XE_R_TDR] = (uint8_t)((w0 >> 61) | (w1 << 3));
	s->cnt[XE_R_OTHER] = (uint8_t)(w1 >> 5);
	s->cnt[XE_R_CONTROL] = (uint8_t)(w1 >> 13);
	s->cnt[XE_R_PIPESTALL] = (uint8_t)(w1 >> 21);
	s->cnt[XE_R_SEND] = (uint8_t)(w1 >> 29);
	s->cnt[XE_R_DIST_ACC] = (uint8_t)(w1 >> 37);
	s->cnt[XE_R_SBID] = (uint8_t)(w1 >> 45);
	s->cnt[XE_R_SYNC] = (uint8_t)(w1 >> 53);
	s->cnt[XE_R_INST_FETCH] = (uint8_t)((w1 >> 61) | (w2 << 3));
	s->cnt[XE_R_ACTIVE] = (uint8_t)(w2 >> 5);
	s->ex_id = (uint8_t)((w2 >> 13) & 7);
	s->end_flag = (uint8_t)((w2 >> 16) & 1);
}

#define DECODE_N(name)                                                                           \
	static void name##_n(const uint8_t *buf, size_t n, size_t stride, struct xe_sample *out) \
	{                                                                                        \
		for (size_t i = 0; i < n; i++, buf += stride)                                    \
			name(buf, &out[i]);                                                      \
	}
DECODE_N(decode_pvc)
DECODE_N(decode_xe2)
DECODE_N(decode_xe3p)

/* PVC is graphics IP 12.60; 12.55/12.70/12.71 (DG2, MTL, ARL) have no
 * EU-stall stream (the kernel supports XE_PVC and GRAPHICS_VER >= 20
 * only, the xe driver's EU-stall stream). Xe3 (30.xx) keeps the Xe2 layout. */
static const struct xe_decoder decoders[] = {
	{"pvc", 1260, 1260, 29, decode_pvc, decode_pvc_n},
	{"xe2", 2000, 3499, 29, decode_xe2, decode_xe2_n},
	{"xe3p", 3500, 9999, 61, decode_xe3p, decode_xe3p_n},
};

const struct xe_decoder *xe_decoder_find(unsigned ver_major, unsigned ver_minor)
{
	unsigned v = ver_major * 100 + (ver_minor > 99 ? 99 : ver_minor);

	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++)
		if (v >= decoders[i].ver_min && v <= decoders[i].ver_max)
			return &decoders[i];
	return NULL;
}

const struct xe_decoder *xe_decoder_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++)
		if (!strcmp(decoders[i].name, name))
			return &decoders[i];
	return NULL;
}
