/* SPDX-License-Identifier: MIT */
/*
 * The CAPSEC_XE_EU_STALL capture section: one window of the EU-stall
 * profile, self-contained (kernel metadata copied in). Little-endian,
 * version 1 (docs/xe.md):
 *
 *   header   64 B   struct xe_sec_hdr
 *   kernels  nkernels x struct xe_sec_kernel (80 B), ascending id; stack:
 *            the launch stack's id in the capture's stack table
 *            (xe_sec_link_stacks), 0 = none (also sections written before
 *            the field: it was padding, written 0)
 *   rows     nrows    x struct xe_row (64 B): iv, kid, off, 0, cnt[10], 0, 0
 *   ips      nips     x u64: launch stacks, leaf first (kernel.ips_off/nips)
 *   blob     blob_len bytes of string text (offsets/lengths in kernels)
 *
 * kid 0 in a row means unattributed: off is then the IBA-relative address
 * (ip << 3). The decoder checks every count, offset and reference.
 */
#ifndef GPUPROF_XE_SECTION_H
#define GPUPROF_XE_SECTION_H

#include <stddef.h>
#include <stdint.h>

#include "xe_int.h"

#define XE_SEC_MAGIC 0x45585047u /* "GPXE" */
#define XE_SEC_VERSION 1

struct xe_sec_hdr {
	uint32_t magic;
	uint16_t version, flags;
	uint32_t nkernels, nrows, nips, blob_len;
	uint64_t interval_ns, epoch_ns; /* interval n covers epoch + n * interval_ns */
	uint64_t unattributed;		/* records given up on (whole daemon, cumulative) */
	uint64_t deferred_now;		/* still waiting when exported */
	uint64_t records;		/* records decoded (cumulative) */
};

struct xe_sec_str {
	uint32_t off, len;
};

struct xe_sec_kernel {
	uint32_t id, pid, uid, ips_off;
	uint64_t start, size, iba;
	struct xe_sec_str name, file, comm, cgroup;
	uint16_t nips, pad;
	uint32_t stack; /* capture stack id of the launch stack; 0 = none */
};

_Static_assert(sizeof(struct xe_sec_hdr) == 64, "section header");
_Static_assert(sizeof(struct xe_sec_kernel) == 80, "section kernel");

/* A decoded section: pointers into one owned copy of the bytes. */
struct xe_capdata {
	void *mem;
	const struct xe_sec_hdr *h;
	const struct xe_sec_kernel *k;
	const struct xe_row *rows;
	const uint64_t *ips;
	const char *blob;
};

/* Decode (copies buf). Returns 0, -EBADMSG with why, or -ENOMEM. */
int xe_sec_decode(const void *buf, size_t len, struct xe_capdata *out, char *why, size_t whylen);
void xe_sec_finish(struct xe_capdata *d);
/* Kernel of an id (ids ascend: binary search), or NULL (also for 0). */
const struct xe_sec_kernel *xe_sec_kernel(const struct xe_capdata *d, uint32_t id);
/* A string of a kernel ("" when absent). */
static inline const char *xe_sec_str(const struct xe_capdata *d, struct xe_sec_str s, size_t *len)
{
	*len = s.len;
	return d->blob + s.off;
}

#endif
