// SPDX-License-Identifier: MIT
/*
 * One critical-path request: its parameters read from JSON (the graph's
 * build options, its cache key, the what-if edits, the result's size), and
 * the path solved on a built graph with and without the edits. Shared by
 * the analysis table's entry and the RPC method, which adds the graph
 * cache and the overlay on client descriptors.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "critpath_int.h"
#include "json.h" /* json_utf8_valid */

static int bad(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* An integer in [0, max], *out untouched when absent. */
static int get_u64(const cJSON *params, const char *key, uint64_t max, uint64_t *out, char *err,
		   size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	double d = cJSON_IsNumber(v) ? v->valuedouble : -1;

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(d) || d < 0 || d != floor(d) || d > (double)max)
		return bad(err, errlen, "\"%s\" must be an integer between 0 and %llu", key,
			   (unsigned long long)max);
	*out = (uint64_t)d;
	return 0;
}

static int get_bool(const cJSON *params, const char *key, bool *out, char *err, size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return bad(err, errlen, "\"%s\" must be true or false", key);
	*out = cJSON_IsTrue(v);
	return 0;
}

static int get_str(const cJSON *params, const char *key, size_t maxlen, const char **out, char *err,
		   size_t errlen)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > maxlen)
		return bad(err, errlen, "\"%s\" must be a string of at most %zu bytes", key,
			   maxlen);
	/* echoed in errors and kept in the cache key: valid UTF-8 only */
	if (!json_utf8_valid(v->valuestring, strlen(v->valuestring)))
		return bad(err, errlen, "\"%s\" is not valid UTF-8", key);
	*out = v->valuestring;
	return 0;
}

/* "instance": 2, [1, 3] or "1:3" (inclusive range, as HTA's). */
static int get_instance(const cJSON *v, struct cp_opts *o, char *err, size_t errlen)
{
	long long a, b;
	char tail;

	if (!v)
		return 0;
	if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e9 &&
	    v->valuedouble == (double)(long long)v->valuedouble) {
		o->instance_lo = o->instance_hi = (int64_t)v->valuedouble;
		return 0;
	}
	if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 2 &&
	    cJSON_IsNumber(cJSON_GetArrayItem(v, 0)) && cJSON_IsNumber(cJSON_GetArrayItem(v, 1))) {
		a = (long long)cJSON_GetArrayItem(v, 0)->valuedouble;
		b = (long long)cJSON_GetArrayItem(v, 1)->valuedouble;
	} else if (!cJSON_IsString(v) ||
		   sscanf(v->valuestring, "%lld:%lld%c", &a, &b, &tail) != 2) {
		return bad(err, errlen, "\"instance\" must be I, [I, J] or \"I:J\"");
	}
	if (a < 0 || b < a || b > 1000000000)
		return bad(err, errlen, "\"instance\" must satisfy 0 <= I <= J");
	o->instance_lo = a;
	o->instance_hi = b;
	return 0;
}

static int get_data_load(const cJSON *params, struct cp_opts *o, char *err, size_t errlen)
{
	const cJSON *dl = cJSON_GetObjectItemCaseSensitive(params, "data_load_events"), *it;

	if (dl && (!cJSON_IsArray(dl) || cJSON_GetArraySize(dl) > CP_MAX_DATA_LOAD))
		return bad(err, errlen,
			   "\"data_load_events\" must be an array of at most 16 regexes");
	cJSON_ArrayForEach(it, dl)
	{
		if (!cJSON_IsString(it) || strlen(it->valuestring) > 256)
			return bad(err, errlen,
				   "\"data_load_events\" must hold strings (<= 256 bytes)");
		o->data_load[o->ndata_load++] = it->valuestring;
	}
	return 0;
}

/* The cache key: everything the graph depends on. */
static int make_key(struct cp_request *rq, char *err, size_t errlen)
{
	const struct cp_opts *o = &rq->o;
	int n = snprintf(rq->key, sizeof(rq->key), "%d|%lld|%lld|%d|%lld|%zu|%s", o->rank,
			 (long long)o->instance_lo, (long long)o->instance_hi,
			 o->zero_weight_launch, (long long)o->kk_threshold_ns,
			 strlen(o->annotation), o->annotation);

	for (size_t i = 0; i < o->ndata_load && n > 0 && (size_t)n < sizeof(rq->key); i++)
		n += snprintf(rq->key + n, sizeof(rq->key) - (size_t)n, "|%zu|%s",
			      strlen(o->data_load[i]), o->data_load[i]);
	if (n < 0 || (size_t)n >= sizeof(rq->key))
		return bad(err, errlen, "annotation and data_load_events too long");
	return 0;
}

int cp_request_parse(const cJSON *params, struct cp_request *rq, char *err, size_t errlen)
{
	const char *ann = NULL;
	uint64_t rank = UINT64_MAX, top = 10, maxe = 1000, thr = 1500;
	bool zw = false;
	int r;

	memset(rq, 0, sizeof(*rq));
	if ((r = get_u64(params, "rank", INT32_MAX, &rank, err, errlen)) ||
	    (r = get_str(params, "annotation", 256, &ann, err, errlen)) ||
	    (r = get_bool(params, "zero_weight_launch_edges", &zw, err, errlen)) ||
	    (r = get_u64(params, "kernel_kernel_threshold_us", 1000000000, &thr, err, errlen)) ||
	    (r = get_u64(params, "top", 1000, &top, err, errlen)) ||
	    (r = get_u64(params, "max_edges", 10000000, &maxe, err, errlen)) ||
	    (r = get_bool(params, "overlay", &rq->overlay, err, errlen)) ||
	    (r = get_bool(params, "overlay_all_events", &rq->all_events, err, errlen)) ||
	    (r = get_bool(params, "overlay_unverified", &rq->unverified, err, errlen)))
		return r;
	cp_opts_default(&rq->o);
	rq->o.rank = rank == UINT64_MAX ? -1 : (int32_t)rank;
	rq->o.annotation = ann ? ann : "";
	rq->o.zero_weight_launch = zw;
	rq->o.kk_threshold_ns = (int64_t)thr * 1000;
	rq->top = (uint32_t)top;
	rq->max_edges = (uint32_t)maxe;
	if ((r = get_instance(cJSON_GetObjectItemCaseSensitive(params, "instance"), &rq->o, err,
			      errlen)) ||
	    (r = get_data_load(params, &rq->o, err, errlen)))
		return r;
	rq->edits = cJSON_GetObjectItemCaseSensitive(params, "edits");
	if (rq->edits && !cJSON_IsArray(rq->edits))
		return bad(err, errlen, "\"edits\" must be an array");
	return make_key(rq, err, errlen);
}

int cp_request_solve(const struct cp_graph *g, const struct cp_request *rq, struct cp_solved *s,
		     cJSON **result, char *err, size_t errlen)
{
	int r;

	memset(s, 0, sizeof(*s));
	*result = NULL;
	r = cp_solve(g, NULL, &s->base, err, errlen);
	if (!r && rq->edits) {
		r = cp_whatif(g, rq->edits, &s->weights, &s->matched, err, errlen);
		if (!r)
			r = cp_solve(g, s->weights, &s->alt, err, errlen);
	}
	if (r)
		return r;
	*result = cp_result_json(g, cp_solved_path(s, rq), s->weights, rq->top, rq->max_edges);
	if (!*result) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

void cp_request_whatif_json(const struct cp_request *rq, const struct cp_solved *s, cJSON *result)
{
	cJSON *wi;

	if (!rq->edits)
		return;
	wi = cJSON_AddObjectToObject(result, "whatif");
	cJSON_AddNumberToObject(wi, "edits", cJSON_GetArraySize(rq->edits));
	cJSON_AddNumberToObject(wi, "matched_edges", s->matched);
	cJSON_AddNumberToObject(wi, "baseline_length_us", (double)s->base.length_ns / 1000.0);
	cJSON_AddNumberToObject(wi, "length_us", (double)s->alt.length_ns / 1000.0);
	cJSON_AddNumberToObject(wi, "speedup",
				s->alt.length_ns
					? (double)s->base.length_ns / (double)s->alt.length_ns
					: 0);
}

const struct cp_path *cp_solved_path(const struct cp_solved *s, const struct cp_request *rq)
{
	return rq->edits ? &s->alt : &s->base;
}

void cp_solved_finish(struct cp_solved *s)
{
	free(s->weights);
	s->weights = NULL;
	cp_path_finish(&s->base);
	cp_path_finish(&s->alt);
}

/* The analysis table's entry: the request on the timeline, built and solved
 * now (the RPC method keeps built graphs and adds the overlay). */
int analysis_critical_path(struct actx *c, cJSON **out)
{
	struct cp_request rq;
	struct cp_solved s;
	struct cp_graph *g = NULL;
	int r;

	if ((r = cp_request_parse(c->params, &rq, c->err, c->errlen)))
		return r;
	if (rq.o.rank < 0) /* default: the lowest rank, as HTA's ranks=None */
		rq.o.rank = timeline_nranks(c->tl) ? timeline_rank_at(c->tl, 0)->rank : 0;
	r = cp_build(c->tl, &rq.o, &g, c->err, c->errlen);
	if (r)
		return r;
	r = cp_request_solve(g, &rq, &s, out, c->err, c->errlen);
	if (!r)
		cp_request_whatif_json(&rq, &s, *out);
	cp_solved_finish(&s);
	cp_graph_free(g);
	return r;
}
