// SPDX-License-Identifier: MIT
/*
 * Capture file format v2, the writer (docs/capture-format.md): explicit
 * little-endian serialisation, never raw structs, so the file does not
 * depend on padding or host byte order. The reader is capdecode.c.
 */
#include "capture/capture-int.h"
#include "capture/capsass.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static bool add_ok(size_t *acc, size_t v)
{
	if (v > SIZE_MAX - *acc)
		return false;
	*acc += v;
	return true;
}

/* ---- encoding ---- */

static uint8_t *section(uint8_t *p, uint32_t type, size_t len)
{
	put32(&p, type);
	put32(&p, 0);
	put64(&p, len);
	put32(&p, 0); /* CRC, patched once the payload is written */
	put32(&p, 0);
	return p;
}

static void seal(uint8_t *sec_hdr, size_t len)
{
	uint8_t *q = sec_hdr + 16;

	put32(&q, capfile_sec_crc(sec_hdr, sec_hdr + CAPFILE_SEC_HDR_LEN, len));
}

int capture_encode(const struct capture *c, void **buf, size_t *len)
{
	size_t name_len, strs_len = 4, stacks_len = 4, meta_len, recs_len, total = CAPFILE_HDR_LEN;
	uint8_t *out, *p, *h;

	if (!c || !buf || !len || c->npids > CAPTURE_MAX_PIDS || c->state > CAPTURE_READY ||
	    (unsigned)c->kind > CAPTURE_IMPORT)
		return -EINVAL;
	name_len = strnlen(c->name, CAPTURE_NAME_MAX);
	if (name_len == CAPTURE_NAME_MAX)
		return -EINVAL;
	meta_len = CAPFILE_META_FIXED + name_len + 4 * (size_t)c->npids;
	/* Refuse what the decoder would reject, so every file we write
	 * loads back. */
	for (uint32_t i = 1; i <= c->nstrs; i++) {
		size_t l;

		if (!capture_str(c, i, &l) || !add_ok(&strs_len, 4 + l))
			return -EINVAL;
	}
	for (uint32_t i = 1; i <= c->nstacks; i++) {
		uint16_t nu, nk;

		if (!capture_stack(c, i, &nu, &nk) ||
		    !add_ok(&stacks_len, 4 + 8 * ((size_t)nu + nk)))
			return -EINVAL;
	}
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->comm > c->nstrs || r->name > c->nstrs || r->stack > c->nstacks ||
		    store_rec_cgroup(r) > c->nstrs || store_rec_detail(r) > c->nstrs)
			return -EINVAL;
	}
	{
		struct capsass s;
		int r = capsass_of_capture(c, &s, NULL, 0);

		capsass_finish(&s);
		if (r < 0)
			return r == -EBADMSG ? -EINVAL : r;
	}
	if (c->nrecs > (SIZE_MAX - 8) / CAPFILE_REC_LEN)
		return -E2BIG;
	recs_len = 8 + CAPFILE_REC_LEN * c->nrecs;
	if (!add_ok(&total, 4 * CAPFILE_SEC_HDR_LEN) || !add_ok(&total, meta_len) ||
	    !add_ok(&total, strs_len) || !add_ok(&total, stacks_len) || !add_ok(&total, recs_len))
		return -E2BIG;
	for (size_t i = 0; i < c->nextras; i++)
		if (!capture_extra_type_ok(c->extras[i].type) ||
		    !add_ok(&total, CAPFILE_SEC_HDR_LEN + c->extras[i].len))
			return -EINVAL;
	if (c->nextras > UINT32_MAX - 4)
		return -E2BIG;

	out = p = malloc(total);
	if (!out)
		return -ENOMEM;
	memcpy(p, CAPFILE_MAGIC, 8);
	p += 8;
	put32(&p, CAPTURE_FORMAT_VERSION);
	put32(&p, (uint32_t)(4 + c->nextras));
	put32(&p, capfile_crc(out, 16));

	h = p;
	p = section(p, CAPSEC_META, meta_len);
	put64(&p, c->id);
	put32(&p, c->owner_uid);
	put32(&p, (uint32_t)c->kind);
	put32(&p, (uint32_t)c->state);
	put32(&p, c->uid_filter ? 1 : 0);
	put32(&p, c->filter_uid);
	put32(&p, c->npids);
	put64(&p, c->created_realtime_ns);
	put64(&p, c->t0_ns);
	put64(&p, c->t1_ns);
	put64(&p, (uint64_t)c->mono_to_realtime_ns);
	put64(&p, c->store_evicted_in_window);
	put64(&p, c->warnings);
	put32(&p, (uint32_t)name_len);
	memcpy(p, c->name, name_len);
	p += name_len;
	for (uint32_t i = 0; i < c->npids; i++)
		put32(&p, (uint32_t)c->pids[i]);
	seal(h, meta_len);

	h = p;
	p = section(p, CAPSEC_STRINGS, strs_len);
	put32(&p, c->nstrs);
	for (uint32_t i = 1; i <= c->nstrs; i++) {
		size_t l;
		const char *s = capture_str(c, i, &l);

		put32(&p, (uint32_t)l);
		memcpy(p, s, l);
		p += l;
	}
	seal(h, strs_len);

	h = p;
	p = section(p, CAPSEC_STACKS, stacks_len);
	put32(&p, c->nstacks);
	for (uint32_t i = 1; i <= c->nstacks; i++) {
		uint16_t nu, nk;
		const uint64_t *ips = capture_stack(c, i, &nu, &nk);

		put16(&p, nu);
		put16(&p, nk);
		for (size_t k = 0; k < (size_t)nu + nk; k++)
			put64(&p, ips[k]);
	}
	seal(h, stacks_len);

	h = p;
	p = section(p, CAPSEC_RECORDS, recs_len);
	put64(&p, c->nrecs);
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		put64(&p, r->ts_ns);
		if (r->type == STORE_REC_GPU_LAUNCH) { /* explicit: byte order */
			put32(&p, r->cgroup);
			put32(&p, 0);
		} else {
			put64(&p, r->dur_ns);
		}
		put32(&p, r->pid);
		put32(&p, r->tid);
		put32(&p, r->uid);
		put32(&p, r->comm);
		put32(&p, r->stack);
		put32(&p, r->name);
		put16(&p, r->type);
		put16(&p, r->cpu);
		put32(&p, r->aux32);
		put64(&p, r->aux[0]);
		put64(&p, r->aux[1]);
	}
	seal(h, recs_len);

	for (size_t i = 0; i < c->nextras; i++) {
		h = p;
		p = section(p, c->extras[i].type, c->extras[i].len);
		if (c->extras[i].len)
			memcpy(p, c->extras[i].data, c->extras[i].len);
		p += c->extras[i].len;
		seal(h, c->extras[i].len);
	}
	*buf = out;
	*len = total;
	return 0;
}
