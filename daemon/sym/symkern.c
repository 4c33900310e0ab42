// SPDX-License-Identifier: MIT
/*
 * Demangle the GPU kernel names of a capture (SYCL "_ZTS..." typeinfo
 * names, CUDA/HIP "_Z..." function names) once per distinct string, in
 * place: the string keeps its id, its text moves to the end of the blob.
 * A launch collector's NUL-separated geometry suffix is kept. A name cut
 * short by the launch probes' buffer gets its qualified name
 * (sym_demangle_cut).
 */
#include "sym_priv.h"
#include "demangle.h"
#include "symtab.h"

#include "capture/capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Demangled names, gathered before the blob grows once (a realloc per
 * name would copy the blob once per name). */
struct pending {
	char *text;
	size_t len, cap;
	uint32_t *ids, *offs;
	size_t n, idcap;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

/* Demangle string id (1-based) into pd if it is a mangled name. */
static int demangle_str(const struct capture *c, uint32_t id, struct pending *pd, char *d,
			size_t dlen)
{
	size_t len;
	const char *s = capture_str(c, id, &len);
	if (!s || len < 3 || len >= dlen || strncmp(s, "_Z", 2) != 0)
		return 0;
	char raw[SYMTAB_MAX_NAME + 1];
	const char *nul = memchr(s, '\0', len);
	size_t nlen = nul ? (size_t)(nul - s) : len, slen = len - nlen;
	memcpy(raw, s, nlen);
	raw[nlen] = '\0';
	if (!sym_demangle(raw, d, dlen) && !sym_demangle_cut(raw, d, dlen))
		return 0;
	size_t dl = strlen(d);
	if (dl + slen >= dlen || c->str_blob_len + pd->len + dl + slen > UINT32_MAX)
		return 0; /* keep the mangled name rather than cut the suffix */
	size_t idcap = pd->idcap;
	if (grow((void **)&pd->text, &pd->cap, pd->len + dl + slen, 1) < 0 ||
	    grow((void **)&pd->ids, &idcap, pd->n + 1, sizeof(*pd->ids)) < 0 ||
	    grow((void **)&pd->offs, &pd->idcap, pd->n + 1, sizeof(*pd->offs)) < 0)
		return -ENOMEM;
	memcpy(pd->text + pd->len, d, dl);
	memcpy(pd->text + pd->len + dl, s + nlen, slen);
	pd->ids[pd->n] = id;
	pd->offs[pd->n++] = (uint32_t)pd->len;
	pd->len += dl + slen;
	return 0;
}

/* Append pd's texts to the blob and point their strings at them. */
static int apply(struct capture *c, const struct pending *pd)
{
	if (!pd->n)
		return 0;
	char *nb = realloc(c->str_blob, c->str_blob_len + pd->len);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + c->str_blob_len, pd->text, pd->len);
	c->str_blob = nb;
	for (size_t i = 0; i < pd->n; i++) {
		size_t end = i + 1 < pd->n ? pd->offs[i + 1] : pd->len;
		c->strs[pd->ids[i] - 1] =
			(struct capture_str){(uint32_t)(c->str_blob_len + pd->offs[i]),
					     (uint32_t)(end - pd->offs[i])};
	}
	c->str_blob_len += pd->len;
	return 0;
}

int sym_demangle_kernels(struct symbolizer *s, struct capture *c)
{
	if (!s->demangle || !c->nstrs)
		return 0;
	struct pending pd = {0};
	unsigned char *seen = calloc(c->nstrs, 1);
	char *d = malloc(SYMTAB_MAX_NAME + 1);
	int r = seen && d ? 0 : -ENOMEM;
	for (size_t i = 0; r == 0 && i < c->nrecs; i++) {
		const struct store_rec *rec = &c->recs[i];
		uint32_t id = rec->name;
		/* PC samples too: their frames then read, and join by name, as
		 * the launches of the same kernel do */
		if ((rec->type != STORE_REC_GPU_LAUNCH && rec->type != STORE_REC_GPU_INTERVAL &&
		     rec->type != STORE_REC_GPU_PC) ||
		    !id || id > c->nstrs || seen[id - 1])
			continue;
		seen[id - 1] = 1;
		r = demangle_str(c, id, &pd, d, SYMTAB_MAX_NAME + 1);
	}
	if (r == 0)
		r = apply(c, &pd);
	free(pd.text);
	free(pd.ids);
	free(pd.offs);
	free(seen);
	free(d);
	return r;
}
