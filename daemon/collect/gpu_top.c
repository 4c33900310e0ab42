// SPDX-License-Identifier: MIT
/* gpu.top's counting: launch records of the store, per kernel and site. */
#include "gpu_top.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static void count_launch(struct gpu_top_kernel *k, const struct store *s, const struct store_rec *r,
			 const char *str, size_t len, size_t klen)
{
	uint16_t nu = 0, nk = 0;
	const uint64_t *ips = r->stack ? store_stack(s, r->stack, &nu, &nk) : NULL;
	uint64_t ip = ips && nu ? ips[0] : 0;
	unsigned i;

	if (!k->count && klen < len) {
		size_t gl = len - klen - 1;
		if (gl >= sizeof(k->geometry))
			gl = sizeof(k->geometry) - 1;
		memcpy(k->geometry, str + klen + 1, gl);
		k->geometry[gl] = '\0';
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

int gpu_top_count(const struct store *s, const struct gpu_top_query *q, struct gpu_top *out)
{
	struct gpu_top_kernel *ks = calloc(GPU_TOP_MAX_KERNELS, sizeof(*ks));
	size_t nk = 0, scanned = 0;
	uint64_t total = 0;

	if (!ks)
		return -ENOMEM;
	for (size_t i = store_count(s); i-- > 0 && scanned < GPU_TOP_MAX_SCAN; scanned++) {
		const struct store_rec *r = store_at(s, i);
		const char *str;
		size_t len, klen;
		struct gpu_top_kernel *k;

		if (r->ts_ns + GPU_TOP_SLACK_NS < q->t0_ns)
			break;
		if (r->type != STORE_REC_GPU_LAUNCH || r->ts_ns < q->t0_ns ||
		    (!q->all_uids && r->uid != q->uid) || !pid_wanted(q->pids, q->npids, r->pid))
			continue;
		str = store_str(s, r->name, &len);
		if (!str)
			continue;
		klen = memchr(str, '\0', len) ? (size_t)((const char *)memchr(str, '\0', len) - str)
					      : len;
		k = kernel_get(ks, &nk, str, klen);
		if (!k)
			continue;
		count_launch(k, s, r, str, len, klen);
		total++;
	}
	qsort(ks, nk, sizeof(*ks), kernel_cmp);
	for (size_t i = 0; i < nk && i < q->limit; i++)
		qsort(ks[i].sites, ks[i].nsites, sizeof(ks[i].sites[0]), site_cmp);
	out->k = ks;
	out->nk = nk < q->limit ? nk : q->limit;
	out->total = total;
	return 0;
}

void gpu_top_free(struct gpu_top *t)
{
	free(t->k);
	t->k = NULL;
	t->nk = 0;
}
