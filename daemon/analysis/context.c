// SPDX-License-Identifier: MIT
/*
 * The analysis framework: kernel types (as HTA types them), rank selection and the
 * per-rank loop every per-rank analysis ends with, error messages, event
 * partners.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

const char *const ktype_name[KT_COUNT] = {"COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER"};

static bool starts(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/*
 * HTA's kernel types: its anchored re.match rules, in order. Note that "hipMemcpy"
 * is COMMUNICATION (the ^hip rule comes first), and that a compute kernel
 * whose name contains "Sync" or "dma" is OTHER: both copied on purpose.
 */
static enum ktype classify(const char *n)
{
	static const char *const not_comp_prefix[] =
		{"nccl",	"Stream Wait Event",
		 "runFunction", "hip",
		 "job_exe",	"packet",
		 "pe_exe",	"cpum_exe_subgraph",
		 "hccl",	"collective_subgraph_execution",
		 NULL};
	static const char *const not_comp_sub[] = {"Memcpy", "Memset", "dma", "Sync", NULL};

	if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || strstr(n, "ncclKernel"))
		return KT_COMMUNICATION;
	if (starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") ||
	    starts(n, "hipMemset") || starts(n, "dma"))
		return KT_MEMORY;
	for (int i = 0; not_comp_prefix[i]; i++)
		if (starts(n, not_comp_prefix[i]))
			return KT_OTHER;
	for (int i = 0; not_comp_sub[i]; i++)
		if (strstr(n, not_comp_sub[i]))
			return KT_OTHER;
	if (starts(n, "cuda") && strstr(n + 4, "LaunchKernel"))
		return KT_OTHER;
	return KT_COMPUTATION;
}

enum ktype ktype_of(struct actx *c, uint32_t name)
{
	if (!c->ktype) {
		c->nstrs = timeline_nstrs(c->tl);
		c->ktype = calloc(c->nstrs ? c->nstrs : 1, 1);
		if (!c->ktype)
			return classify(timeline_str(c->tl, name, NULL));
	}
	if (name >= c->nstrs)
		return classify(timeline_str(c->tl, name, NULL));
	if (!c->ktype[name])
		c->ktype[name] = (uint8_t)(classify(timeline_str(c->tl, name, NULL)) + 1);
	return (enum ktype)(c->ktype[name] - 1);
}

bool rank_selected(const struct actx *c, const struct tl_rank *r)
{
	return !c->has_rank || r->rank == c->rank;
}

int an_finish(struct actx *c, int err, cJSON *root, cJSON **out)
{
	if (!err && c->oom)
		err = -ENOMEM;
	if (err) {
		cJSON_Delete(root);
		return err;
	}
	*out = root;
	return 0;
}

int an_each_rank(struct actx *c, cJSON *root, cJSON *ranks, an_rank_fn fn, const void *opts,
		 cJSON **out)
{
	int err = 0;

	for (uint32_t i = 0; !err && i < timeline_nranks(c->tl); i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (rank_selected(c, r))
			err = fn(c, r, ranks, opts);
	}
	return an_finish(c, err, root, out);
}

int an_rank_only(struct actx *c, const char *name, an_rank_fn fn, cJSON **out)
{
	cJSON *root, *ranks;
	int err;

	err = require_gpu(c);
	if (err)
		return err;
	root = jroot(c, name, &ranks);
	return an_each_rank(c, root, ranks, fn, NULL, out);
}

int require_gpu(struct actx *c)
{
	uint32_t n = timeline_nranks(c->tl);

	for (uint32_t i = 0; i < n; i++) {
		const struct tl_rank *r = timeline_rank_at(c->tl, i);

		if (rank_selected(c, r) && rank_has_gpu(r))
			return 0;
	}
	return aerr(c, -ENODATA, "no GPU activity in this capture");
}

int64_t ev_partner(const struct tl_rank *r, const struct tl_event *e)
{
	int64_t ic = tl_ev_index_corr(e);
	uint32_t lo = 0, hi = r->nev;

	if (ic < 0)
		return -1;
	if (e->link >= 0 && r->ev[e->link].index == ic)
		return e->link;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->ev[mid].index < ic)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nev && r->ev[lo].index == ic ? (int64_t)lo : -1;
}

int aerr(struct actx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}
