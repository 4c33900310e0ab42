// SPDX-License-Identifier: MIT
/*
 * Capture file format v1, the reader. Its input is untrusted (a file a
 * crash or a disk may have mangled; the fuzzer feeds it anything):
 *
 *  - every length is checked against the bytes that remain, with
 *    subtraction on the known-smaller side so nothing can wrap;
 *  - counts are capped by the bytes each element needs at minimum before
 *    anything is allocated, so no allocation exceeds about twice the
 *    section length;
 *  - ids in records are checked against the tables;
 *  - every failure is -EBADMSG with a reason naming the byte or section.
 */
#include "capture/capture-int.h"
#include "capture/capsass.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fuzzers cannot forge CRCs; in a fuzzing build they are checked but not
 * enforced so the parsers behind them get explored
 * (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION is the libFuzzer/OSS-Fuzz
 * convention). */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CRC_ENFORCED 0
#else
#define CRC_ENFORCED 1
#endif

struct rd {
	const uint8_t *buf; /* whole file: offsets in messages are absolute */
	size_t len;
	char *why;
	size_t whylen;
	uint32_t version; /* the file's format version */
};

__attribute__((format(printf, 2, 3))) static int bad(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->why && r->whylen) {
		va_start(ap, fmt);
		vsnprintf(r->why, r->whylen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

static int dec_meta(struct rd *r, struct capture *c, size_t off, size_t n)
{
	const uint8_t *p = r->buf + off;
	uint32_t kind, state, uidf, npids, name_len;

	if (n < CAPFILE_META_FIXED)
		return bad(r, "META section too short (%zu < %u bytes)", n, CAPFILE_META_FIXED);
	kind = get32(p + 12);
	state = get32(p + 16);
	uidf = get32(p + 20);
	npids = get32(p + 28);
	name_len = get32(p + 80);
	if (kind > CAPTURE_IMPORT)
		return bad(r, "META: unknown kind %u", kind);
	if (state > CAPTURE_READY)
		return bad(r, "META: bad state %u", state);
	if (uidf > 1)
		return bad(r, "META: bad uid_filter %u", uidf);
	if (npids > CAPTURE_MAX_PIDS)
		return bad(r, "META: %u pids exceed the limit of %u", npids, CAPTURE_MAX_PIDS);
	if (name_len >= CAPTURE_NAME_MAX)
		return bad(r, "META: name length %u exceeds %u", name_len, CAPTURE_NAME_MAX - 1);
	if (n - CAPFILE_META_FIXED < name_len + 4 * (size_t)npids)
		return bad(r, "truncated at byte %zu (META name and pids)", off + n);
	if (memchr(p + CAPFILE_META_FIXED, '\0', name_len))
		return bad(r, "META: name contains a NUL byte");

	/* Trailing bytes beyond the pids are fields of a later minor
	 * revision: ignored, so old daemons read newer files. */
	c->id = get64(p);
	c->owner_uid = get32(p + 8);
	c->kind = (enum capture_kind)kind;
	c->state = (enum capture_state)state;
	c->uid_filter = uidf;
	c->filter_uid = get32(p + 24);
	c->npids = npids;
	c->created_realtime_ns = get64(p + 32);
	c->t0_ns = get64(p + 40);
	c->t1_ns = get64(p + 48);
	c->mono_to_realtime_ns = (int64_t)get64(p + 56);
	c->store_evicted_in_window = get64(p + 64);
	c->warnings = get64(p + 72);
	memset(c->name, 0, sizeof(c->name));
	memcpy(c->name, p + CAPFILE_META_FIXED, name_len);
	memset(c->pids, 0, sizeof(c->pids));
	for (uint32_t i = 0; i < npids; i++)
		c->pids[i] = (int32_t)get32(p + CAPFILE_META_FIXED + name_len + 4 * i);
	return 0;
}

static int dec_strings(struct rd *r, struct capture *c, size_t off, size_t n)
{
	size_t pos = 4, blob_max;
	uint32_t count;

	if (n < 4)
		return bad(r, "truncated at byte %zu (string count)", off + n);
	count = get32(r->buf + off);
	/* Each string needs at least its 4-byte length. */
	if (count > (n - 4) / 4)
		return bad(r, "STRINGS: count %u needs more than the section's %zu bytes", count,
			   n);
	blob_max = n - 4 - 4 * (size_t)count;
	if (blob_max > UINT32_MAX)
		return bad(r, "STRINGS: section too large (%zu bytes)", n);
	c->strs = malloc((count ? count : 1) * sizeof(*c->strs));
	c->str_blob = malloc(blob_max ? blob_max : 1);
	if (!c->strs || !c->str_blob)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		uint32_t l;

		if (n - pos < 4)
			return bad(r, "truncated at byte %zu (string %u length)", off + n, i + 1);
		l = get32(r->buf + off + pos);
		pos += 4;
		/* Leave room for the lengths still to come: the blob was
		 * sized on that assumption (n - pos >= 4 * left holds by
		 * induction). */
		if (l > n - pos - 4 * (size_t)(count - 1 - i))
			return bad(r, "truncated at byte %zu (string %u wants %u bytes)", off + n,
				   i + 1, l);
		memcpy(c->str_blob + c->str_blob_len, r->buf + off + pos, l);
		c->strs[i] = (struct capture_str){.off = (uint32_t)c->str_blob_len, .len = l};
		c->str_blob_len += l;
		pos += l;
		c->nstrs = i + 1;
	}
	if (pos != n)
		return bad(r, "STRINGS: %zu unused bytes at byte %zu", n - pos, off + pos);
	return 0;
}

static int dec_stacks(struct rd *r, struct capture *c, size_t off, size_t n)
{
	size_t pos = 4, ips_max;
	uint32_t count;

	if (n < 4)
		return bad(r, "truncated at byte %zu (stack count)", off + n);
	count = get32(r->buf + off);
	/* Each stack needs at least its two 2-byte frame counts. */
	if (count > (n - 4) / 4)
		return bad(r, "STACKS: count %u needs more than the section's %zu bytes", count, n);
	ips_max = (n - 4 - 4 * (size_t)count) / 8;
	if (ips_max > UINT32_MAX)
		return bad(r, "STACKS: section too large (%zu bytes)", n);
	c->stacks = malloc((count ? count : 1) * sizeof(*c->stacks));
	c->ips = malloc((ips_max ? ips_max : 1) * sizeof(*c->ips));
	if (!c->stacks || !c->ips)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		uint16_t nu, nk;
		size_t nf;

		if (n - pos < 4)
			return bad(r, "truncated at byte %zu (stack %u header)", off + n, i + 1);
		nu = get16(r->buf + off + pos);
		nk = get16(r->buf + off + pos + 2);
		nf = (size_t)nu + nk;
		pos += 4;
		/* As for strings: the later headers must still fit. */
		if (nf > (n - pos - 4 * (size_t)(count - 1 - i)) / 8)
			return bad(r, "truncated at byte %zu (stack %u wants %zu frames)", off + n,
				   i + 1, nf);
		for (size_t k = 0; k < nf; k++)
			c->ips[c->nips + k] = get64(r->buf + off + pos + 8 * k);
		c->stacks[i] = (struct capture_stack){.off = (uint32_t)c->nips,
						      .nuser = nu,
						      .nkernel = nk};
		c->nips += nf;
		pos += 8 * nf;
		c->nstacks = i + 1;
	}
	if (pos != n)
		return bad(r, "STACKS: %zu unused bytes at byte %zu", n - pos, off + pos);
	return 0;
}

static int dec_records(struct rd *r, struct capture *c, size_t off, size_t n)
{
	uint64_t count;

	if (n < 8)
		return bad(r, "truncated at byte %zu (record count)", off + n);
	count = get64(r->buf + off);
	if ((n - 8) % CAPFILE_REC_LEN || count != (n - 8) / CAPFILE_REC_LEN)
		return bad(r, "RECORDS: count %llu does not match the section's %zu bytes",
			   (unsigned long long)count, n);
	c->recs = malloc((count ? count : 1) * sizeof(*c->recs));
	if (!c->recs)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		const uint8_t *p = r->buf + off + 8 + CAPFILE_REC_LEN * i;

		c->recs[i] = (struct store_rec){
			.ts_ns = get64(p),
			.dur_ns = get64(p + 8),
			.pid = get32(p + 16),
			.tid = get32(p + 20),
			.uid = get32(p + 24),
			.comm = get32(p + 28),
			.stack = get32(p + 32),
			.name = get32(p + 36),
			.type = get16(p + 40),
			.cpu = get16(p + 42),
			.aux32 = get32(p + 44),
			.aux = {get64(p + 48), get64(p + 56)},
		};
		/* v3: a detail string id in aux[1]'s high half; before, no
		 * writer made such records, so those bits meant nothing */
		if (r->version < 3 && store_rec_detail(&c->recs[i]))
			c->recs[i].aux[1] &= UINT32_MAX;
		if (c->recs[i].type != STORE_REC_GPU_LAUNCH)
			continue;
		/* v2: cgroup string id, then 4 zero bytes; v1 had a dur_ns
		 * no launch ever set, and no cgroup */
		if (r->version < 2) {
			c->recs[i].dur_ns = 0;
		} else {
			c->recs[i].cgroup = get32(p + 8);
			c->recs[i].cgroup_rsv = get32(p + 12);
			if (c->recs[i].cgroup_rsv)
				return bad(r, "record %zu: launch bytes 12..15 not zero", i);
		}
	}
	c->nrecs = count;
	return 0;
}

/* Extras that refer into the core tables are checked like the records:
 * the SASS text of PC samples names functions by string id. */
static int dec_extras(struct rd *r, struct capture *c)
{
	struct capsass s;
	int ret = capsass_of_capture(c, &s, r->why, r->whylen);

	capsass_finish(&s);
	return ret;
}

static int dec_sections(struct rd *r, struct capture *c)
{
	uint32_t nsec, seen = 0;
	size_t off = CAPFILE_HDR_LEN;
	int ret;

	if (r->len < CAPFILE_HDR_LEN)
		return bad(r, "truncated at byte %zu (file header)", r->len);
	if (memcmp(r->buf, CAPFILE_MAGIC, 8) != 0)
		return bad(r, "bad magic");
	if (CRC_ENFORCED && get32(r->buf + 16) != capfile_crc(r->buf, 16))
		return bad(r, "header crc mismatch");
	r->version = get32(r->buf + 8);
	if (r->version < 1 || r->version > CAPTURE_FORMAT_VERSION)
		return bad(r, "unsupported format version %u", r->version);
	nsec = get32(r->buf + 12);
	if (nsec > (r->len - CAPFILE_HDR_LEN) / CAPFILE_SEC_HDR_LEN)
		return bad(r, "section count %u exceeds what %zu bytes can hold", nsec, r->len);

	for (uint32_t i = 0; i < nsec; i++) {
		const uint8_t *h = r->buf + off;
		uint32_t type, flags;
		uint64_t slen;

		if (r->len - off < CAPFILE_SEC_HDR_LEN)
			return bad(r, "truncated at byte %zu (section %u header)", r->len, i);
		type = get32(h);
		flags = get32(h + 4);
		slen = get64(h + 8);
		off += CAPFILE_SEC_HDR_LEN;
		if (slen > r->len - off)
			return bad(r,
				   "truncated at byte %zu (section %u wants %llu bytes at byte %zu)",
				   r->len, i, (unsigned long long)slen, off);
		if (CRC_ENFORCED && get32(h + 16) != capfile_sec_crc(h, r->buf + off, slen))
			return bad(r, "section %u crc mismatch", i);
		if (type == 0 || type >= CAPSEC_TYPE_MAX)
			return bad(r, "section %u has invalid type %u", i, type);
		/* v1 defines no flags; a writer that needs one bumps the
		 * version. Zero is checked so every header byte is covered:
		 * a flipped bit anywhere in the file is caught. */
		if (flags || get32(h + 20))
			return bad(r, "section %u has non-zero flags/reserved fields", i);
		if (!capture_extra_type_ok(type)) {
			if (seen & (1u << type))
				return bad(r, "section %u repeats type %u", i, type);
			seen |= 1u << type;
		}
		switch (type) {
		case CAPSEC_META:
			ret = dec_meta(r, c, off, slen);
			break;
		case CAPSEC_STRINGS:
			ret = dec_strings(r, c, off, slen);
			break;
		case CAPSEC_STACKS:
			ret = dec_stacks(r, c, off, slen);
			break;
		case CAPSEC_RECORDS:
			ret = dec_records(r, c, off, slen);
			break;
		default:
			ret = capture_add_extra(c, type, r->buf + off, slen);
		}
		if (ret < 0)
			return ret;
		off += slen;
	}
	if (off != r->len)
		return bad(r, "%zu trailing bytes at byte %zu", r->len - off, off);
	/* Our writer always emits all four, even when empty. */
	for (uint32_t t = CAPSEC_META; t <= CAPSEC_RECORDS; t++)
		if (!(seen & (1u << t)))
			return bad(r, "no section of type %u", t);
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *rec = &c->recs[i];

		uint32_t sid = rec->comm > rec->name ? rec->comm : rec->name;

		if (store_rec_cgroup(rec) > sid)
			sid = store_rec_cgroup(rec);
		if (store_rec_detail(rec) > sid)
			sid = store_rec_detail(rec);
		if (sid > c->nstrs)
			return bad(r, "record %zu: string id %u out of range (%u strings)", i, sid,
				   c->nstrs);
		if (rec->stack > c->nstacks)
			return bad(r, "record %zu: stack id %u out of range (%u stacks)", i,
				   rec->stack, c->nstacks);
	}
	return dec_extras(r, c);
}

int capture_decode_into(struct capture *c, const void *buf, size_t len, char *why, size_t whylen)
{
	struct rd r = {.buf = buf, .len = len, .why = why, .whylen = whylen};
	int ret;

	if (why && whylen)
		why[0] = '\0';
	if (!buf && len)
		return -EINVAL;
	if (!buf)
		r.buf = (const uint8_t *)"";
	ret = dec_sections(&r, c);
	if (ret < 0)
		capture_free_data(c);
	if (ret == -ENOMEM && why && whylen)
		snprintf(why, whylen, "out of memory");
	return ret;
}

int capture_decode(const void *buf, size_t len, struct capture **ret, char *why, size_t whylen)
{
	struct capture *c;
	int r = capture_new(&c);

	if (r < 0)
		return r;
	r = capture_decode_into(c, buf, len, why, whylen);
	if (r < 0) {
		capture_free(c);
		return r;
	}
	*ret = c;
	return 0;
}
