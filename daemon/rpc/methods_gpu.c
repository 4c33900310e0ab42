// SPDX-License-Identifier: MIT
/*
 * gpu.top: the hottest GPU kernels of the last window_ms, from the live
 * store, with the call sites that launch them (docs/protocol.md, gpu.top).
 *
 * Counting walks the ring backwards from the newest record on the loop
 * thread (bounded by the window and by GPU_TOP_MAX_SCAN); naming the call
 * sites may read ELF files, so that runs as a job.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpd.h"
#include "hooks.h"
#include "jobs.h"
#include "json.h"
#include "methods.h"
#include "store/store.h"
#include "sym.h"

#define GPU_TOP_MAX_PIDS 64
#define GPU_TOP_MAX_KERNELS 4096 /* distinct kernels counted per request */
#define GPU_TOP_SITES 32	 /* distinct call sites kept per kernel */
#define GPU_TOP_MAX_SCAN (4u << 20)
/* The ring is in arrival order; records of different CPUs may arrive up
 * to a drain period apart, so keep walking this far past the window. */
#define GPU_TOP_SLACK_NS 1000000000ull

struct site {
	uint32_t pid;
	uint64_t ip;
	uint64_t count;
	char name[160];
};

struct kernel {
	char name[256];
	char geometry[64]; /* of the latest launch seen */
	uint64_t count;
	uint32_t pids[4];
	unsigned npids;
	bool more_pids;
	struct site sites[GPU_TOP_SITES];
	unsigned nsites;
	uint64_t other_sites; /* launches from sites beyond GPU_TOP_SITES */
};

struct top {
	struct rpc_req *req;
	uint64_t window_ms, now_ns, total;
	unsigned limit, nsites;
	struct kernel *k; /* sorted, the first nk are reported */
	size_t nk;
};

static int kernel_cmp(const void *a, const void *b)
{
	const struct kernel *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->name, y->name);
}

static int site_cmp(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : (x->ip > y->ip) - (x->ip < y->ip);
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

static struct kernel *kernel_get(struct kernel *k, size_t *nk, const char *name, size_t len)
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

static void count_launch(struct kernel *k, const struct store *s, const struct store_rec *r,
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
		k->sites[k->nsites++] = (struct site){.pid = r->pid, .ip = ip};
	}
	k->sites[i].count++;
}

/* Worker: name the reported call sites (return addresses: look up ip - 1). */
static void top_resolve(void *arg)
{
	struct top *t = arg;
	struct symbolizer *sym = hooks_symbolizer();

	for (size_t i = 0; i < t->nk; i++)
		for (unsigned j = 0; j < t->k[i].nsites && j < t->nsites; j++) {
			struct site *st = &t->k[i].sites[j];

			if (!st->ip)
				snprintf(st->name, sizeof(st->name), "[unknown]");
			else if (!sym || sym_resolve(sym, st->pid, st->ip - 1, false, st->name,
						     sizeof(st->name), NULL, 0) < -ENOENT)
				snprintf(st->name, sizeof(st->name), "0x%" PRIx64, st->ip);
		}
}

static void top_reply(void *arg)
{
	struct top *t = arg;
	double secs = (double)t->window_ms / 1000.0;
	cJSON *o = cJSON_CreateObject(), *ks;

	json_add_u64(o, "window_ms", t->window_ms);
	json_add_u64(o, "now_ns", t->now_ns);
	json_add_u64(o, "launches", t->total);
	cJSON_AddNumberToObject(o, "launches_per_s", (double)t->total / secs);
	ks = cJSON_AddArrayToObject(o, "kernels");
	for (size_t i = 0; ks && i < t->nk; i++) {
		struct kernel *k = &t->k[i];
		cJSON *ko = cJSON_CreateObject(), *pa, *sa;

		if (!ko)
			break;
		cJSON_AddStringToObject(ko, "name", k->name);
		json_add_u64(ko, "launches", k->count);
		cJSON_AddNumberToObject(ko, "launches_per_s", (double)k->count / secs);
		if (k->geometry[0])
			cJSON_AddStringToObject(ko, "geometry", k->geometry);
		pa = cJSON_AddArrayToObject(ko, "pids");
		for (unsigned j = 0; pa && j < k->npids; j++)
			cJSON_AddItemToArray(pa, cJSON_CreateNumber(k->pids[j]));
		if (k->more_pids)
			cJSON_AddBoolToObject(ko, "more_pids", true);
		sa = cJSON_AddArrayToObject(ko, "call_sites");
		for (unsigned j = 0; sa && j < k->nsites && j < t->nsites; j++) {
			cJSON *so = cJSON_CreateObject();
			char addr[24];

			if (!so)
				break;
			snprintf(addr, sizeof(addr), "0x%" PRIx64, k->sites[j].ip);
			cJSON_AddStringToObject(so, "name", k->sites[j].name);
			cJSON_AddStringToObject(so, "address", addr);
			cJSON_AddNumberToObject(so, "pid", k->sites[j].pid);
			json_add_u64(so, "launches", k->sites[j].count);
			cJSON_AddItemToArray(sa, so);
		}
		cJSON_AddItemToArray(ks, ko);
	}
	rpc_reply(t->req, o);
	free(t->k);
	free(t);
}

static bool param_pids(struct rpc_req *req, const cJSON *params, uint32_t *out, size_t *n)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(params, "pids"), *it;

	*n = 0;
	if (!a)
		return true;
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) > GPU_TOP_MAX_PIDS) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"pids\" must be an array of at most %d pids", GPU_TOP_MAX_PIDS);
		return false;
	}
	cJSON_ArrayForEach(it, a)
	{
		double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
		if (d < 1 || d > 4194304 || d != (double)(uint32_t)d) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"pids\" must hold pids between 1 and 4194304");
			return false;
		}
		out[(*n)++] = (uint32_t)d;
	}
	return true;
}

void method_gpu_top(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"pids", "window_ms", "limit", "sites", NULL};
	uint64_t window_ms = 5000, limit = 20, sites = 3;
	uint32_t pids[GPU_TOP_MAX_PIDS];
	size_t npids, nk = 0, scanned = 0;
	struct store *s = req->gpd->store;
	struct kernel *ks;
	struct top *t;

	if (!params_only(req, params, allowed) || !param_pids(req, params, pids, &npids) ||
	    !param_u64(req, params, "window_ms", false, 3600000, &window_ms) ||
	    !param_u64(req, params, "limit", false, 1000, &limit) ||
	    !param_u64(req, params, "sites", false, GPU_TOP_SITES, &sites))
		return;
	if (!window_ms || !limit) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"window_ms\" and \"limit\" must be positive");
		return;
	}
	t = calloc(1, sizeof(*t));
	ks = calloc(GPU_TOP_MAX_KERNELS, sizeof(*ks));
	if (!t || !ks) {
		free(t);
		free(ks);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	t->req = req;
	t->window_ms = window_ms;
	t->now_ns = gpd_now_ns();
	t->nsites = (unsigned)sites;
	uint64_t t0 = t->now_ns > window_ms * 1000000 ? t->now_ns - window_ms * 1000000 : 0;
	for (size_t i = store_count(s); i-- > 0 && scanned < GPU_TOP_MAX_SCAN; scanned++) {
		const struct store_rec *r = store_at(s, i);
		const char *str;
		size_t len, klen;
		struct kernel *k;

		if (r->ts_ns + GPU_TOP_SLACK_NS < t0)
			break;
		if (r->type != STORE_REC_GPU_LAUNCH || r->ts_ns < t0 ||
		    (!req->privileged && r->uid != req->uid) || !pid_wanted(pids, npids, r->pid))
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
		t->total++;
	}
	qsort(ks, nk, sizeof(*ks), kernel_cmp);
	for (size_t i = 0; i < nk && i < limit; i++)
		qsort(ks[i].sites, ks[i].nsites, sizeof(ks[i].sites[0]), site_cmp);
	t->k = ks;
	t->nk = nk < limit ? nk : limit;
	if (job_submit(req->gpd, &(struct job_owner){req->uid, req->privileged}, top_resolve,
		       top_reply, t) < 0) {
		/* No worker free: answer with addresses rather than wait. */
		for (size_t i = 0; i < t->nk; i++)
			for (unsigned j = 0; j < ks[i].nsites; j++)
				snprintf(ks[i].sites[j].name, sizeof(ks[i].sites[j].name),
					 "0x%" PRIx64, ks[i].sites[j].ip);
		top_reply(t);
	}
}
