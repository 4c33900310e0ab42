// SPDX-License-Identifier: MIT
/* gpu.top's counting: launch records of the store, per kernel and site. */
#include "gpu_top.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/gpumatch.h"
#include "store/store.h"

#define GPU_TOP_MAX_SCAN (4u << 20)
/* The ring is in arrival order; records of different CPUs may arrive up
 * to a drain period apart, so keep walking this far past the window. */
#define GPU_TOP_SLACK_NS 1000000000ull

static int kernel_cmp(const void *a, const void *b)
{
	const struct gpu_top_kernel *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->name, y->name);
}

static int site_cmp(const void *a, const void *b)
{
	const struct gpu_top_site *x = a, *y = b;

	return x->count < y->count   ? 1
	       : x->count > y->count ? -1
				     : (x->ip > y->ip) - (x->ip < y->ip);
}

static bool pid_wanted(const uint32_t *pids, size_t n, uint32_t pid)
{
	if (!n)
		return true;
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

static struct gpu_top_kernel *kernel_get(struct gpu_top_kernel *k, size_t *nk, const char *name,
					 size_t len)
{
	if (len >= sizeof(k->name))
		len = sizeof(k->name) - 1;
	/* Linear: the distinct kernels of a few processes number in the
	 * tens to hundreds. */
	for (size_t i = 0; i < *nk; i++)
		if (!strncmp(k[i].name, name, len) && !k[i].name[len])
			return &k[i];
	if (*nk == GPU_TOP_MAX_KERNELS)
		return NULL;
	memset(&k[*nk], 0, sizeof(k[*nk]));
	memcpy(k[*nk].name, name, len);
	k[*nk].name[len] = '\0';
	return &k[(*nk)++];
}

/* The kernels counted so far. */
struct tally {
	struct gpu_top_kernel *ks;
	size_t nk;
	uint64_t total;
	bool by_handle, cupti; /* a launch named by handle; a CUPTI kernel */
};

/* One launch of kernel kname made at call site ip (0: unknown); geom its
 * launch geometry ("" when the record had none). */
static void count_launch(struct tally *t, const struct store_rec *r, const char *kname, size_t klen,
			 const char *geom, size_t glen, uint64_t ip)
{
	struct gpu_top_kernel *k = kernel_get(t->ks, &t->nk, kname, klen);
	unsigned i;

	if (!k)
		return;
	t->total++;
	if (!k->count && glen) {
		if (glen >= sizeof(k->geometry))
			glen = sizeof(k->geometry) - 1;
		memcpy(k->geometry, geom, glen);
		k->geometry[glen] = '\0';
	}
	k->count++;
	for (i = 0; i < k->npids && k->pids[i] != r->pid; i++)
		;
	if (i == k->npids) {
		if (k->npids < 4)
			k->pids[k->npids++] = r->pid;
		else
			k->more_pids = true;
	}
	for (i = 0; i < k->nsites; i++)
		if (k->sites[i].ip == ip && k->sites[i].pid == r->pid)
			break;
	if (i == k->nsites) {
		if (k->nsites == GPU_TOP_SITES) {
			k->other_sites++;
			return;
		}
		k->sites[k->nsites++] = (struct gpu_top_site){.pid = r->pid, .ip = ip};
	}
	k->sites[i].count++;
}

/* A launch record's name string split at the NUL before its geometry. */
static void split_name(const char *str, size_t len, size_t *klen, const char **geom, size_t *glen)
{
	const char *nul = memchr(str, '\0', len);

	*klen = nul ? (size_t)(nul - str) : len;
	*geom = nul ? nul + 1 : str + len;
	*glen = nul ? len - *klen - 1 : 0;
}

/* A record of the window the requester may see. */
static bool visible(const struct gpu_top_query *q, const struct store_rec *r)
{
	return r->ts_ns >= q->t0_ns && (q->all_uids || r->uid == q->uid) &&
	       pid_wanted(q->pids, q->npids, r->pid);
}

static bool wanted(const struct gpu_top_query *q, const struct store_rec *r)
{
	return r->type == STORE_REC_GPU_LAUNCH && visible(q, r);
}

/* Rank what t counted into out (t's array moves there). */
static void rank(struct tally *t, const struct gpu_top_query *q, struct gpu_top *out)
{
	qsort(t->ks, t->nk, sizeof(*t->ks), kernel_cmp);
	for (size_t i = 0; i < t->nk && i < q->limit; i++)
		qsort(t->ks[i].sites, t->ks[i].nsites, sizeof(t->ks[i].sites[0]), site_cmp);
	out->k = t->ks;
	out->nk = t->nk < q->limit ? t->nk : q->limit;
	out->total = t->total;
	out->nameable = t->by_handle && t->cupti;
}

int gpu_top_count(const struct store *s, const struct gpu_top_query *q, struct gpu_top *out)
{
	struct tally t = {.ks = calloc(GPU_TOP_MAX_KERNELS, sizeof(*t.ks))};
	size_t scanned = 0;

	if (!t.ks)
		return -ENOMEM;
	for (size_t i = store_count(s); i-- > 0 && scanned < GPU_TOP_MAX_SCAN; scanned++) {
		const struct store_rec *r = store_at(s, i);
		uint16_t nu = 0, nk = 0;
		const uint64_t *ips;
		const char *str, *geom;
		size_t len, klen, glen;

		if (r->ts_ns + GPU_TOP_SLACK_NS < q->t0_ns)
			break;
		if (!t.cupti && gpu_is_cupti(r) && (r->cpu & 0xff) == GPU_CUPTI_KERNEL &&
		    visible(q, r))
			t.cupti = true;
		if (!wanted(q, r) || !(str = store_str(s, r->name, &len)))
			continue;
		split_name(str, len, &klen, &geom, &glen);
		ips = r->stack ? store_stack(s, r->stack, &nu, &nk) : NULL;
		count_launch(&t, r, str, klen, geom, glen, ips && nu ? ips[0] : 0);
		t.by_handle = t.by_handle || gpu_name_handle(str, klen, NULL);
	}
	rank(&t, q, out);
	return 0;
}

int gpu_top_count_capture(const struct capture *c, const uint32_t *names,
			  const struct gpu_top_query *q, struct gpu_top *out)
{
	struct tally t = {.ks = calloc(GPU_TOP_MAX_KERNELS, sizeof(*t.ks))};

	if (!t.ks)
		return -ENOMEM;
	/* newest first, as in the store: a kernel's geometry is its latest */
	for (size_t i = c->nrecs; i-- > 0;) {
		const struct store_rec *r = &c->recs[i];
		uint16_t nu = 0, nk = 0;
		const uint64_t *ips;
		const char *str, *geom, *kname;
		size_t len, klen, glen;

		if (!wanted(q, r) || !(str = capture_str(c, r->name, &len)))
			continue;
		split_name(str, len, &klen, &geom, &glen);
		/* the kernel as the CUPTI join named it, the geometry the
		 * launch's own */
		kname = names && names[i] ? capture_str(c, names[i], &len) : NULL;
		if (kname)
			klen = strnlen(kname, len);
		else
			kname = str;
		ips = r->stack ? capture_stack(c, r->stack, &nu, &nk) : NULL;
		count_launch(&t, r, kname, klen, geom, glen, ips && nu ? ips[0] : 0);
		t.by_handle = t.by_handle || gpu_name_handle(kname, klen, NULL);
	}
	rank(&t, q, out);
	return 0;
}

void gpu_top_free(struct gpu_top *t)
{
	free(t->k);
	t->k = NULL;
	t->nk = 0;
}
