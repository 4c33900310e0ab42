// SPDX-License-Identifier: MIT
/*
 * pprof export (flamegraph.h): profile.proto from
 * github.com/google/pprof/proto/profile.proto, encoded by hand and
 * gzip-compressed, as `go tool pprof`, Pyroscope and Parca read it.
 *
 *   sample types   samples/count, cpu/nanoseconds (count x period) and,
 *                  when the capture has them, launches/count, gpu/nanoseconds
 *   samples        one per (pid, stack, comm), leaf location first, labels
 *                  "comm" and "pid"; GPU kernels as one-frame "NAME_[G]"
 *                  stacks under their process
 *   locations      one per (address, function); mapping 1 = user space,
 *                  2 = [kernel.kallsyms] (the symbols section has no
 *                  module or build-id information to do better)
 * The string table starts with "" (index 0), as the format requires.
 */
#include "flamegraph.h"
#include "render_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"

struct pb {
	uint8_t *p;
	size_t len, cap;
	int err;
};

static void pb_raw(struct pb *b, const void *p, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (nc < b->len + n)
			nc *= 2;
		uint8_t *np = realloc(b->p, nc);
		if (!np) {
			b->err = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void pb_varint(struct pb *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	pb_raw(b, tmp, n);
}

/* varint field; proto3 leaves zeros out */
static void pb_u64(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

static void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, (uint64_t)field << 3 | 2);
	pb_varint(b, n);
	pb_raw(b, p, n);
}

/* packed repeated varints */
static void pb_packed(struct pb *b, struct pb *tmp, unsigned field, const uint64_t *v, size_t n)
{
	tmp->len = 0;
	for (size_t i = 0; i < n; i++)
		pb_varint(tmp, v[i]);
	if (tmp->err)
		b->err = tmp->err;
	pb_bytes(b, field, tmp->p, tmp->len);
}

struct agg {
	struct bmap keys;
	uint64_t (*v)[2]; /* per key: count, gpu ns */
	size_t cap;
};

static int agg_add(struct agg *a, const void *key, size_t len, uint64_t n, uint64_t ns)
{
	uint32_t id = bmap_intern(&a->keys, key, len, NULL);
	if (!id)
		return -ENOMEM;
	if (id > a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 1024;
		uint64_t(*nv)[2] = realloc(a->v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		memset(nv + a->cap, 0, (nc - a->cap) * sizeof(*nv));
		a->v = nv;
		a->cap = nc;
	}
	a->v[id - 1][0] = sat_add(a->v[id - 1][0], n);
	a->v[id - 1][1] = sat_add(a->v[id - 1][1], ns);
	return 0;
}

struct pprof {
	struct bmap strs, funcs, locs;
	struct pb tmp, msg;
	uint64_t locv[2 * STORE_MAX_FRAMES + 2];
};

/* Index in the string table; protobuf strings must be UTF-8, so invalid
 * bytes (comm and symbol names are arbitrary) become U+FFFD. */
static uint64_t str_idx(struct pprof *x, const char *s, size_t len)
{
	char fixed[4096 * 3];
	size_t i = 0, n = 0;
	while (i < len && utf8_char((const unsigned char *)s + i, len - i))
		i += utf8_char((const unsigned char *)s + i, len - i);
	if (i < len) {
		for (i = 0; i < len && n + 4 <= sizeof(fixed);) {
			size_t k = utf8_char((const unsigned char *)s + i, len - i);
			if (k) {
				memcpy(fixed + n, s + i, k);
				n += k, i += k;
			} else {
				memcpy(fixed + n, "\xef\xbf\xbd", 3);
				n += 3, i++;
			}
		}
		s = fixed;
		len = n;
	}
	uint32_t id = bmap_intern(&x->strs, s, len, NULL);
	if (!id)
		x->msg.err = -ENOMEM;
	return id ? id - 1 : 0;
}

static uint64_t loc_id(struct pprof *x, const char *name, size_t len, uint64_t ip, bool kernel)
{
	uint32_t fid = bmap_intern(&x->funcs, name, len, NULL);
	uint8_t key[13];
	memcpy(key, &ip, 8);
	memcpy(key + 8, &fid, 4);
	key[12] = kernel;
	uint32_t id = fid ? bmap_intern(&x->locs, key, sizeof(key), NULL) : 0;
	if (!id)
		x->msg.err = -ENOMEM;
	return id;
}

static void value_type(struct pprof *x, struct pb *out, unsigned field, const char *type,
		       const char *unit)
{
	struct pb *m = &x->msg;
	m->len = 0;
	pb_u64(m, 1, str_idx(x, type, strlen(type)));
	pb_u64(m, 2, str_idx(x, unit, strlen(unit)));
	pb_bytes(out, field, m->p, m->len);
}

static void sample(struct pprof *x, struct pb *out, const struct capture *c, size_t nloc,
		   const uint64_t *vals, size_t nvals, uint32_t pid, uint32_t comm)
{
	struct pb *m = &x->msg;
	size_t len;
	const char *cs = capture_str(c, comm, &len);
	m->len = 0;
	pb_packed(m, &x->tmp, 1, x->locv, nloc);
	pb_packed(m, &x->tmp, 2, vals, nvals);
	/* labels: built after the packed fields, so into tmp and copied */
	struct pb lab = {0};
	pb_u64(&lab, 1, str_idx(x, "comm", 4));
	pb_u64(&lab, 2, str_idx(x, cs ? cs : "", cs ? len : 0));
	pb_bytes(m, 3, lab.p, lab.len);
	lab.len = 0;
	pb_u64(&lab, 1, str_idx(x, "pid", 3));
	pb_u64(&lab, 3, pid);
	pb_bytes(m, 3, lab.p, lab.len);
	if (lab.err)
		m->err = lab.err;
	free(lab.p);
	pb_bytes(out, 2, m->p, m->len);
	if (m->err)
		out->err = m->err;
}

static int gzip_out(const struct pb *b, folded_write_fn fn, void *ctx, uint64_t *bytes)
{
	z_stream zs = {0};
	enum { CH = 1 << 16 };
	unsigned char *obuf = malloc(CH);
	int r = 0;
	if (!obuf)
		return -ENOMEM;
	if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(obuf);
		return -ENOMEM;
	}
	zs.next_in = b->p;
	zs.avail_in = (uInt)b->len; /* profiles stay far below 4 GiB: capped by the caller */
	int zr;
	do {
		zs.next_out = obuf;
		zs.avail_out = CH;
		zr = deflate(&zs, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			r = -EIO;
			break;
		}
		size_t n = CH - zs.avail_out;
		*bytes += n;
		if (n && (r = fn(ctx, obuf, n)) < 0)
			break;
	} while (zr != Z_STREAM_END);
	deflateEnd(&zs);
	free(obuf);
	return r;
}

int pprof_export(const struct capture *c, uint64_t period_ns, folded_write_fn fn, void *ctx,
		 struct export_totals *t)
{
	struct export_totals tt = {0};
	struct pprof *x = calloc(1, sizeof(*x));
	struct capframes *f = malloc(sizeof(*f));
	struct agg cpu = {0}, gpu = {0};
	struct pb out = {0};
	bool has_launch = false, has_gpu = false;
	int r = -ENOMEM;
	if (!x || !f)
		goto out;
	bmap_init(&x->strs);
	bmap_init(&x->funcs);
	bmap_init(&x->locs);
	bmap_init(&cpu.keys);
	bmap_init(&gpu.keys);
	capframes_init(f, c);

	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *rec = &c->recs[i];
		uint32_t key[3] = {rec->pid, rec->comm, 0};
		if (rec->type == STORE_REC_CPU_SAMPLE) {
			key[2] = rec->stack;
			r = agg_add(&cpu, key, sizeof(key), rec->aux32 ? rec->aux32 : 1, 0);
		} else if (rec->type == STORE_REC_GPU_LAUNCH ||
			   rec->type == STORE_REC_GPU_INTERVAL) {
			bool launch = rec->type == STORE_REC_GPU_LAUNCH;
			has_launch |= launch;
			has_gpu |= !launch;
			key[2] = rec->name;
			r = agg_add(&gpu, key, sizeof(key), launch, launch ? 0 : rec->dur_ns);
		} else {
			continue;
		}
		if (r < 0)
			goto out_f;
	}
	r = -ENODATA;
	if (!cpu.keys.n && !gpu.keys.n)
		goto out_f;

	str_idx(x, "", 0); /* index 0 */
	size_t nv = 1;
	value_type(x, &out, 1, "samples", "count");
	if (period_ns)
		value_type(x, &out, 1, "cpu", "nanoseconds"), nv++;
	size_t iv_launch = nv, iv_gpu;
	if (has_launch)
		value_type(x, &out, 1, "launches", "count"), nv++;
	iv_gpu = nv;
	if (has_gpu)
		value_type(x, &out, 1, "gpu", "nanoseconds"), nv++;

	uint64_t vals[4];
	for (uint32_t id = 1; id <= cpu.keys.n; id++) {
		size_t kl;
		uint32_t k[3];
		memcpy(k, bmap_key(&cpu.keys, id, &kl), sizeof(k));
		size_t n = capframes_get(f, k[0], k[2]);
		for (size_t i = 0; i < n; i++) /* leaf first */
			x->locv[i] = loc_id(x, f->name[n - 1 - i], f->len[n - 1 - i],
					    f->ip[n - 1 - i], f->kernel[n - 1 - i]);
		memset(vals, 0, sizeof(vals));
		vals[0] = cpu.v[id - 1][0];
		if (period_ns)
			vals[1] =
			    vals[0] > UINT64_MAX / period_ns ? UINT64_MAX : vals[0] * period_ns;
		sample(x, &out, c, n, vals, nv, k[0], k[1]);
		tt.events++;
	}
	for (uint32_t id = 1; id <= gpu.keys.n; id++) {
		size_t kl, nl;
		uint32_t k[3];
		char name[512];
		memcpy(k, bmap_key(&gpu.keys, id, &kl), sizeof(k));
		const char *s = capture_str(c, k[2], &nl);
		if (!s || !nl)
			s = "[unknown]", nl = 9;
		if (nl > sizeof(name) - 5)
			nl = sizeof(name) - 5;
		memcpy(name, s, nl);
		memcpy(name + nl, "_[G]", 4);
		x->locv[0] = loc_id(x, name, nl + 4, 0, false);
		memset(vals, 0, sizeof(vals));
		if (has_launch)
			vals[iv_launch] = gpu.v[id - 1][0];
		if (has_gpu)
			vals[iv_gpu] = gpu.v[id - 1][1];
		sample(x, &out, c, 1, vals, nv, k[0], k[1]);
		tt.events++;
	}
	/* mappings */
	static const char *const mapname[] = {"[user]", "[kernel.kallsyms]"};
	for (unsigned i = 0; i < 2; i++) {
		x->msg.len = 0;
		pb_u64(&x->msg, 1, i + 1);
		pb_u64(&x->msg, 3, UINT64_MAX);
		pb_u64(&x->msg, 5, str_idx(x, mapname[i], strlen(mapname[i])));
		pb_u64(&x->msg, 7, 1); /* has_functions */
		pb_bytes(&out, 3, x->msg.p, x->msg.len);
	}
	for (uint32_t id = 1; id <= x->locs.n; id++) {
		size_t kl;
		const uint8_t *k = (const uint8_t *)bmap_key(&x->locs, id, &kl);
		uint64_t ip;
		uint32_t fid;
		memcpy(&ip, k, 8);
		memcpy(&fid, k + 8, 4);
		struct pb line = {0};
		pb_u64(&line, 1, fid);
		x->msg.len = 0;
		pb_u64(&x->msg, 1, id);
		pb_u64(&x->msg, 2, k[12] ? 2 : 1);
		pb_u64(&x->msg, 3, ip);
		pb_bytes(&x->msg, 4, line.p, line.len);
		if (line.err)
			out.err = line.err;
		free(line.p);
		pb_bytes(&out, 4, x->msg.p, x->msg.len);
	}
	for (uint32_t id = 1; id <= x->funcs.n; id++) {
		size_t kl;
		const char *k = bmap_key(&x->funcs, id, &kl);
		uint64_t si = str_idx(x, k, kl);
		x->msg.len = 0;
		pb_u64(&x->msg, 1, id);
		pb_u64(&x->msg, 2, si);
		pb_u64(&x->msg, 3, si);
		pb_bytes(&out, 5, x->msg.p, x->msg.len);
	}
	/* time_nanos etc. intern nothing: the string table can be closed now */
	for (uint32_t id = 1; id <= x->strs.n; id++) {
		size_t kl;
		const char *k = bmap_key(&x->strs, id, &kl);
		pb_bytes(&out, 6, k, kl);
	}
	pb_u64(&out, 9, c->created_realtime_ns);
	pb_u64(&out, 10, c->t1_ns > c->t0_ns ? c->t1_ns - c->t0_ns : 0);
	if (period_ns) {
		x->msg.len = 0;
		pb_u64(&x->msg, 1, str_idx(x, "cpu", 3)); /* already interned: no new entry */
		pb_u64(&x->msg, 2, str_idx(x, "nanoseconds", 11));
		pb_bytes(&out, 11, x->msg.p, x->msg.len);
		pb_u64(&out, 12, period_ns);
	}
	r = out.err ? out.err : x->msg.err ? x->msg.err : x->tmp.err;
	if (r == 0 && out.len > (size_t)UINT32_MAX)
		r = -EFBIG;
	tt.frames = x->locs.n;
	if (r == 0)
		r = gzip_out(&out, fn, ctx, &tt.bytes);
out_f:
	capframes_finish(f);
	bmap_finish(&x->strs);
	bmap_finish(&x->funcs);
	bmap_finish(&x->locs);
	free(x->tmp.p);
	free(x->msg.p);
out:
	if (t)
		*t = tt;
	bmap_finish(&cpu.keys);
	bmap_finish(&gpu.keys);
	free(cpu.v);
	free(gpu.v);
	free(out.p);
	free(x);
	free(f);
	return r;
}
