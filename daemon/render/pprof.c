// SPDX-License-Identifier: MIT
/*
 * pprof export (flamegraph.h): profile.proto from
 * github.com/google/pprof/proto/profile.proto, encoded by hand and
 * gzip-compressed, as `go tool pprof`, Pyroscope and Parca read it.
 *
 *   sample types   samples/count, cpu/nanoseconds (count x period) and,
 *                  when the capture has them, launches/count, gpu/nanoseconds
 *                  one REASON/samples per EU-stall reason (pprof_xe.c),
 *                  stall_samples/count for NVIDIA PC samples (pprof_pc.c)
 *   samples        one per (pid, stack, comm), leaf location first, labels
 *                  "comm" and "pid"; GPU kernels as one-frame "NAME_[G]"
 *                  stacks under their process; EU stalls as (kernel,
 *                  offset) locations on top of the launching CPU stack;
 *                  NVIDIA PC samples as reason <- instruction <- kernel <-
 *                  launching CPU stack, as `folded --weight stalls`
 *   locations      one per (address, function, mapping)
 *   mappings       [kernel.kallsyms]; per process the file mappings the
 *                  symbols section records (path, range, offset, GNU build
 *                  id); per GPU kernel its address range
 * The string table starts with "" (index 0), as the format requires.
 */
#include "flamegraph.h"
#include "pprof_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "capture/capture.h"
#include "capture/gpumatch.h"
#include "section.h"
#include "symtab.h"
#include "xe.h"

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
void pb_u64(struct pb *b, unsigned field, uint64_t v)
{
	if (!v)
		return;
	pb_varint(b, (uint64_t)field << 3);
	pb_varint(b, v);
}

void pb_bytes(struct pb *b, unsigned field, const void *p, size_t n)
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

/* Index in the string table; protobuf strings must be UTF-8, so invalid
 * bytes (comm and symbol names are arbitrary) become U+FFFD. */
uint64_t pprof_str(struct pprof *x, const char *s, size_t len)
{
	char fixed[4096 * 3];
	size_t i = 0, n = 0;
	while (i < len && xml_utf8_char((const unsigned char *)s + i, len - i))
		i += xml_utf8_char((const unsigned char *)s + i, len - i);
	if (i < len) {
		for (i = 0; i < len && n + 4 <= sizeof(fixed);) {
			size_t k = xml_utf8_char((const unsigned char *)s + i, len - i);
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

uint32_t pprof_map(struct pprof *x, enum pprof_map_kind kind, uint32_t idx)
{
	uint32_t key[2] = {kind, idx};
	uint32_t id = bmap_intern(&x->maps, key, sizeof(key), NULL);
	if (!id)
		x->msg.err = -ENOMEM;
	return id;
}

/* A Function is a (name, source file) pair: the key is the name's length,
 * the name, then the file (names may hold any byte, NUL included). */
static uint32_t func_id(struct pprof *x, const char *name, size_t len, const char *file,
			size_t filelen)
{
	char key[2 * SYMTAB_MAX_NAME + 8];
	uint32_t nl = (uint32_t)(len < SYMTAB_MAX_NAME ? len : SYMTAB_MAX_NAME);
	size_t fl = file && filelen < SYMTAB_MAX_NAME ? filelen : 0;
	memcpy(key, &nl, 4);
	memcpy(key + 4, name, nl);
	if (fl)
		memcpy(key + 4 + nl, file, fl);
	return bmap_intern(&x->funcs, key, 4 + nl + fl, NULL);
}

uint64_t pprof_loc(struct pprof *x, const char *name, size_t len, uint64_t ip, uint32_t map,
		   const char *file, size_t filelen, uint32_t line)
{
	uint32_t fid = func_id(x, name, len, file, filelen);
	uint8_t key[20];
	memcpy(key, &ip, 8);
	memcpy(key + 8, &fid, 4);
	memcpy(key + 12, &map, 4);
	memcpy(key + 16, &line, 4);
	uint32_t id = fid ? bmap_intern(&x->locs, key, sizeof(key), NULL) : 0;
	if (!id)
		x->msg.err = -ENOMEM;
	return id;
}

/* "path/file.c:42" -> file and line; false unless it ends in ":digits". */
static bool split_line(const char *s, size_t len, size_t *filelen, uint32_t *line)
{
	size_t i = len;
	uint64_t v = 0, mul = 1;
	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9' && len - i < 9) {
		v += (uint64_t)(s[i - 1] - '0') * mul;
		mul *= 10;
		i--;
	}
	if (i == len || i < 2 || s[i - 1] != ':' || !v)
		return false;
	*filelen = i - 1;
	*line = (uint32_t)v;
	return true;
}

size_t pprof_frames(struct pprof *x, const struct capframes *f, size_t at)
{
	size_t n = f->n;
	for (size_t i = 0; i < n; i++) { /* leaf first */
		size_t k = n - 1 - i;
		/* sections before version 2 record no mappings: kernel frames
		 * then share a [kernel.kallsyms] mapping without build id;
		 * a peer kept from kernel addresses gets none */
		uint32_t map = f->map[k] ? pprof_map(x, PMAP_FILE, f->map[k])
			       : f->kernel[k] && !f->view.kernel_hidden
				       ? pprof_map(x, PMAP_KERNEL, 0)
				       : 0;
		size_t fl = 0, nl = f->len[k];
		uint32_t line = 0;
		if (!split_line(f->line[k], f->linelen[k], &fl, &line))
			fl = 0;
		/* a Python frame, "qualname (short file)_[p]": the function is
		 * the qualified name, the file and line come separately */
		const char *sp = symtab_is_py_name(f->name[k], nl) ? memchr(f->name[k], ' ', nl)
								   : NULL;
		if (sp)
			nl = (size_t)(sp - f->name[k]);
		x->locv[at + i] = pprof_loc(x, f->name[k], nl, f->ip[k], map, f->line[k], fl, line);
	}
	return at + n;
}

static void value_type(struct pprof *x, struct pb *out, unsigned field, const char *type,
		       const char *unit)
{
	struct pb *m = &x->msg;
	m->len = 0;
	pb_u64(m, 1, pprof_str(x, type, strlen(type)));
	pb_u64(m, 2, pprof_str(x, unit, strlen(unit)));
	pb_bytes(out, field, m->p, m->len);
}

void pprof_sample(struct pprof *x, struct pb *out, size_t nloc, const uint64_t *vals, size_t nvals,
		  uint32_t pid, const char *comm, size_t commlen)
{
	struct pb *m = &x->msg;
	m->len = 0;
	pb_packed(m, &x->tmp, 1, x->locv, nloc);
	pb_packed(m, &x->tmp, 2, vals, nvals);
	/* labels: built after the packed fields, so into their own buffer */
	struct pb lab = {0};
	pb_u64(&lab, 1, pprof_str(x, "comm", 4));
	pb_u64(&lab, 2, pprof_str(x, comm ? comm : "", comm ? commlen : 0));
	pb_bytes(m, 3, lab.p, lab.len);
	lab.len = 0;
	pb_u64(&lab, 1, pprof_str(x, "pid", 3));
	pb_u64(&lab, 3, pid);
	pb_bytes(m, 3, lab.p, lab.len);
	const char *keys[PPROF_MAX_EXTRA_LABELS], *labv[PPROF_MAX_EXTRA_LABELS];
	size_t nl = 0;
	if (x->labels)
		nl = x->labels(x->labels_arg, pid, keys, labv, PPROF_MAX_EXTRA_LABELS);
	for (size_t i = 0; i < nl && i < PPROF_MAX_EXTRA_LABELS; i++) {
		lab.len = 0;
		pb_u64(&lab, 1, pprof_str(x, keys[i], strlen(keys[i])));
		pb_u64(&lab, 2, pprof_str(x, labv[i], strlen(labv[i])));
		pb_bytes(m, 3, lab.p, lab.len);
	}
	if (x->slabel_key) {
		lab.len = 0;
		pb_u64(&lab, 1, pprof_str(x, x->slabel_key, strlen(x->slabel_key)));
		pb_u64(&lab, 2, pprof_str(x, x->slabel, x->slabel_len));
		pb_bytes(m, 3, lab.p, lab.len);
	}
	if (lab.err)
		m->err = lab.err;
	free(lab.p);
	pb_bytes(out, 2, m->p, m->len);
	if (m->err)
		out->err = m->err;
}

static void cap_sample(struct pprof *x, struct pb *out, const struct capture *c, size_t nloc,
		       const uint64_t *vals, size_t nvals, uint32_t pid, uint32_t comm)
{
	size_t len;
	const char *cs = capture_str(c, comm, &len);
	pprof_sample(x, out, nloc, vals, nvals, pid, cs, cs ? len : 0);
}

/* The Mapping messages, for the keys pprof_map() handed out. */
static void mappings(struct pprof *x, struct pb *out)
{
	const struct sym_table *t = x->f->syms;
	for (uint32_t id = 1; id <= x->maps.n; id++) {
		size_t kl, fl = 0, bl = 0;
		uint32_t key[2];
		uint64_t start = 0, limit = UINT64_MAX, off = 0;
		const char *file = "[kernel.kallsyms]", *bid = "";
		bool funcs = true;
		memcpy(key, bmap_key(&x->maps, id, &kl), sizeof(key));
		fl = strlen(file);
		if (key[0] == PMAP_FILE) {
			const struct sym_mapping *m = sym_table_map(t, key[1]);
			start = m->start, limit = m->limit, off = m->offset;
			file = sym_table_name(t, m->file, &fl);
			bid = sym_table_name(t, m->build_id, &bl);
			funcs = m->flags & SYMTAB_MAPF_SYMBOLS;
		} else if (key[0] == PMAP_GPU) {
			const struct xe_sec_kernel *k = xe_sec_kernel(x->xe, key[1]);
			start = k->start, limit = k->start + k->size;
			file = xe_sec_str(x->xe, k->file, &fl);
			if (!fl)
				file = xe_sec_str(x->xe, k->name, &fl);
		}
		x->msg.len = 0;
		pb_u64(&x->msg, 1, id);
		pb_u64(&x->msg, 2, start);
		pb_u64(&x->msg, 3, limit);
		pb_u64(&x->msg, 4, off);
		pb_u64(&x->msg, 5, pprof_str(x, file, fl));
		pb_u64(&x->msg, 6, pprof_str(x, bid, bl));
		pb_u64(&x->msg, 7, funcs); /* has_functions */
		pb_bytes(out, 3, x->msg.p, x->msg.len);
	}
}

static void locations_functions(struct pprof *x, struct pb *out)
{
	for (uint32_t id = 1; id <= x->locs.n; id++) {
		size_t kl;
		const uint8_t *k = (const uint8_t *)bmap_key(&x->locs, id, &kl);
		uint64_t ip;
		uint32_t fid, map, lineno;
		memcpy(&ip, k, 8);
		memcpy(&fid, k + 8, 4);
		memcpy(&map, k + 12, 4);
		memcpy(&lineno, k + 16, 4);
		struct pb line = {0};
		pb_u64(&line, 1, fid);
		pb_u64(&line, 2, lineno);
		x->msg.len = 0;
		pb_u64(&x->msg, 1, id);
		pb_u64(&x->msg, 2, map);
		pb_u64(&x->msg, 3, ip);
		pb_bytes(&x->msg, 4, line.p, line.len);
		if (line.err)
			out->err = line.err;
		free(line.p);
		pb_bytes(out, 4, x->msg.p, x->msg.len);
	}
	for (uint32_t id = 1; id <= x->funcs.n; id++) {
		size_t kl;
		const char *k = bmap_key(&x->funcs, id, &kl);
		uint32_t nl;
		memcpy(&nl, k, 4);
		uint64_t si = pprof_str(x, k + 4, nl);
		uint64_t fi = kl > 4 + nl ? pprof_str(x, k + 4 + nl, kl - 4 - nl) : 0;
		x->msg.len = 0;
		pb_u64(&x->msg, 1, id);
		pb_u64(&x->msg, 2, si);
		pb_u64(&x->msg, 3, si);
		pb_u64(&x->msg, 4, fi); /* filename */
		pb_bytes(out, 5, x->msg.p, x->msg.len);
	}
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

/* A CUPTI synchronization interval (store.h): the CPU waiting, not GPU
 * time. */
static bool cupti_sync(const struct store_rec *r)
{
	return r->cpu >> 8 == GPU_ENGINE_CUPTI && (r->cpu & 0xff) == GPU_CUPTI_SYNC;
}

/* Aggregate CPU samples by (pid, comm, stack) and GPU launches/intervals
 * by (pid, comm, name); a launch known only by handle by the kernel name
 * CUPTI gave it (capture/gpumatch.h). */
static int aggregate(const struct capture *c, struct agg *cpu, struct agg *gpu, bool *has_launch,
		     bool *has_gpu)
{
	uint32_t *kname = NULL;
	int r = gpu_launch_names(c, &kname);

	for (size_t i = 0; i < c->nrecs && r >= 0; i++) {
		const struct store_rec *rec = &c->recs[i];
		uint32_t key[3] = {rec->pid, rec->comm, 0};
		if (rec->type == STORE_REC_CPU_SAMPLE) {
			key[2] = rec->stack;
			r = agg_add(cpu, key, sizeof(key), rec->aux32 ? rec->aux32 : 1, 0);
		} else if (rec->type == STORE_REC_GPU_LAUNCH ||
			   (rec->type == STORE_REC_GPU_INTERVAL && !cupti_sync(rec))) {
			bool launch = rec->type == STORE_REC_GPU_LAUNCH;
			*has_launch |= launch;
			*has_gpu |= !launch;
			key[2] = launch ? gpu_launch_name(kname, i, rec) : rec->name;
			r = agg_add(gpu, key, sizeof(key), launch, launch ? 0 : rec->dur_ns);
		}
	}
	free(kname);
	return r < 0 ? r : 0;
}

struct mainmap {
	uint32_t pid, idx;
	uint64_t weight;
};

static int mainmap_cmp(const void *a, const void *b)
{
	const struct mainmap *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void weigh(struct mainmap *mm, size_t n, const struct agg *a, size_t v)
{
	for (uint32_t id = 1; id <= a->keys.n; id++) {
		size_t kl;
		uint32_t pid;
		/* keys start with the pid; find its (first) entry */
		memcpy(&pid, bmap_key(&a->keys, id, &kl), 4);
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (mm[mid].pid < pid)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < n && mm[lo].pid == pid)
			mm[lo].weight = sat_add(mm[lo].weight, a->v[id - 1][v]);
	}
}

/*
 * pprof reads the first Mapping as the profile's main binary (what `go
 * tool pprof` titles it with, what Pyroscope and Parca key symbol upload
 * on): hand out id 1 to the executable (SYMTAB_MAPF_MAIN) of the process
 * with the most CPU samples, else launches. Sections without the flag
 * (older captures) keep first-use order.
 */
static int main_mapping(struct pprof *x, const struct agg *cpu, const struct agg *gpu)
{
	const struct sym_table *t = x->f->syms;
	size_t nmaps = t ? sym_table_nmaps(t) : 0, n = 0;
	struct mainmap *mm = NULL;
	for (uint32_t i = 1; i <= nmaps; i++) {
		const struct sym_mapping *m = sym_table_map(t, i);
		if (!m || !(m->flags & SYMTAB_MAPF_MAIN))
			continue;
		if (!mm && !(mm = calloc(nmaps, sizeof(*mm))))
			return -ENOMEM;
		mm[n++] = (struct mainmap){m->pid, i, 0};
	}
	if (!n)
		return 0;
	qsort(mm, n, sizeof(*mm), mainmap_cmp);
	weigh(mm, n, cpu, 0);
	weigh(mm, n, gpu, 0);
	size_t best = 0;
	for (size_t i = 1; i < n; i++)
		if (mm[i].weight > mm[best].weight)
			best = i;
	pprof_map(x, PMAP_FILE, mm[best].idx);
	free(mm);
	return 0;
}

_Static_assert(5 + XE_NREASONS <= PPROF_MAX_VALUES, "PPROF_MAX_VALUES too small");

static int export_profile(const struct capture *c, const struct render_view *view,
			  uint64_t period_ns, pprof_label_fn labels, void *labels_arg,
			  const char *dflt, folded_write_fn fn, void *ctx, struct export_totals *t);

int pprof_export(const struct capture *c, const struct render_view *view, uint64_t period_ns,
		 folded_write_fn fn, void *ctx, struct export_totals *t)
{
	return export_profile(c, view, period_ns, NULL, NULL, NULL, fn, ctx, t);
}

int pprof_export_typed(const struct capture *c, const struct render_view *view, uint64_t period_ns,
		       const char *sample_type, folded_write_fn fn, void *ctx,
		       struct export_totals *t)
{
	return export_profile(c, view, period_ns, NULL, NULL, sample_type, fn, ctx, t);
}

int pprof_export_labelled(const struct capture *c, const struct render_view *view,
			  uint64_t period_ns, pprof_label_fn labels, void *labels_arg,
			  folded_write_fn fn, void *ctx, struct export_totals *t)
{
	return export_profile(c, view, period_ns, labels, labels_arg, NULL, fn, ctx, t);
}

/* The string index of sample type name when the profile has it, else 0. */
static uint64_t type_index(struct pprof *x, const char *name, const char *const *types, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(types[i], name))
			return pprof_str(x, name, strlen(name));
	return 0;
}

static int export_profile(const struct capture *c, const struct render_view *view,
			  uint64_t period_ns, pprof_label_fn labels, void *labels_arg,
			  const char *dflt, folded_write_fn fn, void *ctx, struct export_totals *t)
{
	struct export_totals tt = {0};
	struct pprof *x = calloc(1, sizeof(*x));
	struct capframes *f = malloc(sizeof(*f));
	struct agg cpu = {0}, gpu = {0};
	struct pb out = {0};
	struct xe_capdata xd = {0};
	bool has_launch = false, has_gpu = false, has_pc;
	const char *types[PPROF_MAX_VALUES];
	uint64_t dflt_idx = 0;
	int r = -ENOMEM;
	if (!x || !f)
		goto out;
	bmap_init(&x->strs);
	bmap_init(&x->funcs);
	bmap_init(&x->locs);
	bmap_init(&x->maps);
	bmap_init(&cpu.keys);
	bmap_init(&gpu.keys);
	capframes_init(f, c, view);
	x->f = f;
	x->labels = labels;
	x->labels_arg = labels_arg;
	/* a damaged EU-stall section is left out, as capture.xe outputs refuse it */
	const struct capture_extra *xs = capture_find_extra(c, CAPSEC_XE_EU_STALL);
	if (xs && xe_sec_decode(xs->data, xs->len, &xd, NULL, 0) == 0 && xd.h->nrows)
		x->xe = &xd;

	r = aggregate(c, &cpu, &gpu, &has_launch, &has_gpu);
	if (r < 0)
		goto out_f;
	has_pc = pprof_pc_present(c);
	r = -ENODATA;
	if (!cpu.keys.n && !gpu.keys.n && !x->xe && !has_pc)
		goto out_f;

	r = main_mapping(x, &cpu, &gpu);
	if (r < 0)
		goto out_f;
	pprof_str(x, "", 0); /* index 0 */
	size_t nv = 1;
	types[0] = "samples";
	value_type(x, &out, 1, "samples", "count");
	if (period_ns)
		value_type(x, &out, 1, types[nv++] = "cpu", "nanoseconds");
	size_t iv_launch = nv, iv_gpu, iv_xe, iv_pc;
	if (has_launch)
		value_type(x, &out, 1, types[nv++] = "launches", "count");
	iv_gpu = nv;
	if (has_gpu)
		value_type(x, &out, 1, types[nv++] = "gpu", "nanoseconds");
	iv_xe = nv;
	for (int i = 0; x->xe && i < XE_NREASONS; i++)
		value_type(x, &out, 1, types[nv++] = xe_reason_names[i], "samples");
	iv_pc = nv;
	if (has_pc)
		value_type(x, &out, 1, types[nv++] = "stall_samples", "count");
	/* what `go tool pprof` shows without -sample_index (else the last) */
	r = -ENOENT;
	if (dflt && !(dflt_idx = type_index(x, dflt, types, nv)))
		goto out_f;

	uint64_t vals[PPROF_MAX_VALUES];
	for (uint32_t id = 1; id <= cpu.keys.n; id++) {
		size_t kl;
		uint32_t k[3];
		memcpy(k, bmap_key(&cpu.keys, id, &kl), sizeof(k));
		capframes_get(f, k[0], k[2]);
		size_t n = pprof_frames(x, f, 0);
		memset(vals, 0, sizeof(vals));
		vals[0] = cpu.v[id - 1][0];
		if (period_ns)
			vals[1] = vals[0] > UINT64_MAX / period_ns ? UINT64_MAX
								   : vals[0] * period_ns;
		cap_sample(x, &out, c, n, vals, nv, k[0], k[1]);
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
		x->locv[0] = pprof_loc(x, name, nl + 4, 0, 0, NULL, 0, 0);
		memset(vals, 0, sizeof(vals));
		if (has_launch)
			vals[iv_launch] = gpu.v[id - 1][0];
		if (has_gpu)
			vals[iv_gpu] = gpu.v[id - 1][1];
		cap_sample(x, &out, c, 1, vals, nv, k[0], k[1]);
		tt.events++;
	}
	if (x->xe && (r = pprof_xe_samples(x, &out, iv_xe, nv, &tt.events)) < 0)
		goto out_f;
	if (has_pc && (r = pprof_pc_samples(x, &out, c, iv_pc, nv, &tt.events)) < 0)
		goto out_f;
	mappings(x, &out);
	locations_functions(x, &out);
	/* time_nanos etc. intern nothing new (period_type's strings are the
	 * cpu sample type's): the string table can be closed now */
	for (uint32_t id = 1; id <= x->strs.n; id++) {
		size_t kl;
		const char *k = bmap_key(&x->strs, id, &kl);
		pb_bytes(&out, 6, k, kl);
	}
	pb_u64(&out, 9, c->created_realtime_ns);
	pb_u64(&out, 10, c->t1_ns > c->t0_ns ? c->t1_ns - c->t0_ns : 0);
	if (period_ns) {
		x->msg.len = 0;
		pb_u64(&x->msg, 1, pprof_str(x, "cpu", 3));
		pb_u64(&x->msg, 2, pprof_str(x, "nanoseconds", 11));
		pb_bytes(&out, 11, x->msg.p, x->msg.len);
		pb_u64(&out, 12, period_ns);
	}
	pb_u64(&out, 14, dflt_idx); /* default_sample_type */
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
	bmap_finish(&x->maps);
	free(x->tmp.p);
	free(x->msg.p);
out:
	if (t)
		*t = tt;
	xe_sec_finish(&xd);
	bmap_finish(&cpu.keys);
	bmap_finish(&gpu.keys);
	free(cpu.v);
	free(gpu.v);
	free(out.p);
	free(x);
	free(f);
	return r;
}
