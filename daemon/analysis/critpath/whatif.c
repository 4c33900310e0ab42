// SPDX-License-Identifier: MIT
/*
 * What-if edits on a built graph: new edge weights, then cp_solve() again,
 * without going back to the trace (Daydream-style, as HTA's docs suggest
 * for its restored CPGraph). An event's duration is the sum of the operator
 * edges attributed to it (HTA's _attribute_edge), so scaling an event
 * scales those edges and setting it spreads the new total over them in
 * proportion. Delay kinds edit the launch / kernel-kernel edges directly;
 * zero-weight launch edges (kept for causality) stay zero.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"

#define CP_MAX_EDITS 64

enum kind {
	K_REGEX,
	K_ALL,
	K_CPU,
	K_GPU,
	K_KERNEL,
	K_COMM,
	K_MEMORY,
	K_LAUNCH,
	K_KK,
};

static const struct {
	const char *name;
	enum kind k;
} kinds[] = {
	{"all", K_ALL},
	{"cpu", K_CPU},
	{"gpu", K_GPU},
	{"kernel", K_KERNEL},
	{"comm", K_COMM},
	{"nccl", K_COMM},
	{"memory", K_MEMORY},
	{"launch_delay", K_LAUNCH},
	{"kernel_kernel_delay", K_KK},
	{NULL, 0},
};

static int efail(char *err, size_t errlen, int i, const char *what)
{
	if (err && errlen)
		snprintf(err, errlen, "edits[%d]: %s", i, what);
	return -EINVAL;
}

static bool ev_matches(const struct cp_graph *g, const struct cp_event *x, enum kind k,
		       const regex_t *re)
{
	switch (k) {
	case K_REGEX:
		return regexec(re, cp_ev_name(g, x), 0, NULL, 0) == 0;
	case K_ALL:
		return true;
	case K_CPU:
		return !x->gpu;
	case K_GPU:
		return x->gpu;
	case K_KERNEL:
		return x->gpu && x->kind == TL_K_KERNEL && x->bound != CP_B_GPU_COMM;
	case K_COMM:
		return x->gpu && x->bound == CP_B_GPU_COMM;
	case K_MEMORY:
		return x->kind == TL_K_MEMCPY || x->kind == TL_K_MEMSET;
	default:
		return false;
	}
}

static int apply(const struct cp_graph *g, int64_t *w, enum kind k, const regex_t *re, bool set,
		 double v, int64_t *sum, uint32_t *nmatched)
{
	if (k == K_LAUNCH || k == K_KK) {
		uint8_t t = k == K_LAUNCH ? CP_E_LAUNCH : CP_E_KERNEL_KERNEL;

		for (uint32_t i = 0; i < g->nedges; i++) {
			if (g->edges[i].type != t || (t == CP_E_LAUNCH && w[i] == 0))
				continue;
			w[i] = set ? llround(v * 1000.0) : llround((double)w[i] * v);
			(*nmatched)++;
		}
		return 0;
	}
	/* per matching event: its duration = sum of its operator edges */
	memset(sum, 0, (size_t)g->nev * sizeof(*sum));
	for (uint32_t i = 0; i < g->nedges; i++) {
		const struct cp_edge *e = &g->edges[i];

		if (e->type == CP_E_OPERATOR && e->attr >= 0 && w[i] > 0)
			sum[e->attr] += w[i];
	}
	for (uint32_t i = 0; i < g->nedges; i++) {
		const struct cp_edge *e = &g->edges[i];

		if (e->type != CP_E_OPERATOR || e->attr < 0 ||
		    !ev_matches(g, &g->ev[e->attr], k, re))
			continue;
		(*nmatched)++;
		if (!set)
			w[i] = llround((double)w[i] * v);
		else if (sum[e->attr] > 0)
			w[i] = w[i] > 0 ? llround((double)w[i] * v * 1000.0 / (double)sum[e->attr])
					: w[i];
		else if (sum[e->attr] == 0) {
			w[i] = llround(v * 1000.0); /* all of it on the first edge */
			sum[e->attr] = -1;
		}
	}
	return 0;
}

int cp_whatif(const struct cp_graph *g, const cJSON *edits, int64_t **out, uint32_t *nmatched,
	      char *err, size_t errlen)
{
	int64_t *w, *sum;
	const cJSON *it;
	int i = 0, rc = 0;

	*nmatched = 0;
	if (!cJSON_IsArray(edits))
		return efail(err, errlen, 0, "\"edits\" must be an array of objects");
	if (cJSON_GetArraySize(edits) > CP_MAX_EDITS)
		return efail(err, errlen, CP_MAX_EDITS, "too many edits (at most 64)");
	w = malloc(((size_t)g->nedges + 1) * sizeof(*w));
	sum = malloc(((size_t)g->nev + 1) * sizeof(*sum));
	if (!w || !sum) {
		free(w);
		free(sum);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < g->nedges; k++)
		w[k] = g->edges[k].w;
	cJSON_ArrayForEach(it, edits)
	{
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "match");
		const cJSON *kd = cJSON_GetObjectItemCaseSensitive(it, "kind");
		const cJSON *sc = cJSON_GetObjectItemCaseSensitive(it, "scale");
		const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "set_us");
		const cJSON *x;
		enum kind k = K_REGEX;
		regex_t re;
		double v;

		cJSON_ArrayForEach(x, it)
		{
			if (strcmp(x->string, "match") && strcmp(x->string, "kind") &&
			    strcmp(x->string, "scale") && strcmp(x->string, "set_us")) {
				rc = efail(err, errlen, i,
					   "unknown key (match, kind, scale, set_us)");
				goto out;
			}
		}
		if (!cJSON_IsObject(it) || (!m == !kd) || (!sc == !st)) {
			rc = efail(
				err, errlen, i,
				"give one of \"match\" or \"kind\" and one of \"scale\" or \"set_us\"");
			goto out;
		}
		x = sc ? sc : st;
		v = cJSON_IsNumber(x) ? x->valuedouble : -1;
		if (!(v >= 0 && v <= 1e9)) {
			rc = efail(err, errlen, i, "scale / set_us must be a number in [0, 1e9]");
			goto out;
		}
		if (kd) {
			int j;

			for (j = 0; kinds[j].name; j++)
				if (cJSON_IsString(kd) && !strcmp(kd->valuestring, kinds[j].name))
					break;
			if (!kinds[j].name) {
				rc = efail(err, errlen, i,
					   "kind must be all, cpu, gpu, kernel, comm, memory, "
					   "launch_delay or kernel_kernel_delay");
				goto out;
			}
			k = kinds[j].k;
		} else if (!cJSON_IsString(m) ||
			   regcomp(&re, m->valuestring, REG_EXTENDED | REG_NOSUB)) {
			rc = efail(err, errlen, i,
				   "\"match\" must be a valid POSIX extended regex");
			goto out;
		}
		rc = apply(g, w, k, &re, st != NULL, v, sum, nmatched);
		if (k == K_REGEX)
			regfree(&re);
		i++;
	}
out:
	free(sum);
	if (rc) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}
