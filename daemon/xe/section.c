// SPDX-License-Identifier: MIT
/* Decoder of the CAPSEC_XE_EU_STALL section (format in section.h). The
 * bytes come from a capture file, so every field is checked. */
#include "section.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the section is written in host order, which must be little-endian"
#endif

static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static bool str_ok(const struct xe_sec_hdr *h, struct xe_sec_str s)
{
	return s.off <= h->blob_len && s.len <= h->blob_len - s.off;
}

int xe_sec_decode(const void *buf, size_t len, struct xe_capdata *out, char *why, size_t whylen)
{
	const struct xe_sec_hdr *h = buf;
	uint64_t need;
	uint8_t *mem;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h))
		return bad(why, whylen, "section shorter than its header");
	if (h->magic != XE_SEC_MAGIC || h->version != XE_SEC_VERSION)
		return bad(why, whylen, "bad magic or version %u", h->version);
	if (!h->interval_ns)
		return bad(why, whylen, "interval 0");
	need = sizeof(*h) + (uint64_t)h->nkernels * sizeof(struct xe_sec_kernel) +
	       (uint64_t)h->nrows * sizeof(struct xe_row) + (uint64_t)h->nips * 8 + h->blob_len;
	if (need != len)
		return bad(why, whylen, "size %zu, counts say %llu", len, (unsigned long long)need);
	/* malloc'ed copy: aligned for the u64 fields whatever buf was. */
	mem = malloc(len ? len : 1);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, buf, len);
	out->mem = mem;
	out->h = (const struct xe_sec_hdr *)mem;
	out->k = (const struct xe_sec_kernel *)(out->h + 1);
	out->rows = (const struct xe_row *)(out->k + h->nkernels);
	out->ips = (const uint64_t *)(out->rows + h->nrows);
	out->blob = (const char *)(out->ips + h->nips);

	for (uint32_t i = 0; i < h->nkernels; i++) {
		const struct xe_sec_kernel *k = &out->k[i];

		if (!k->id || (i && k->id <= out->k[i - 1].id))
			goto fail_kernel;
		if (k->ips_off > h->nips || k->nips > h->nips - k->ips_off)
			goto fail_kernel;
		if (!str_ok(h, k->name) || !str_ok(h, k->file) || !str_ok(h, k->comm) ||
		    !str_ok(h, k->cgroup))
			goto fail_kernel;
	}
	for (uint32_t i = 0; i < h->nrows; i++) {
		uint32_t kid = out->rows[i].kid;

		if (kid && !xe_sec_kernel(out, kid)) {
			/* kid read first: finish frees the rows and clears out */
			xe_sec_finish(out);
			return bad(why, whylen, "row %u names unknown kernel %u", i, kid);
		}
	}
	return 0;
fail_kernel:
	xe_sec_finish(out);
	return bad(why, whylen, "kernel entry out of order or out of bounds");
}

void xe_sec_finish(struct xe_capdata *d)
{
	free(d->mem);
	memset(d, 0, sizeof(*d));
}

const struct xe_sec_kernel *xe_sec_kernel(const struct xe_capdata *d, uint32_t id)
{
	uint32_t lo = 0, hi = d->h ? d->h->nkernels : 0;

	while (id && lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (d->k[mid].id == id)
			return &d->k[mid];
		if (d->k[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
