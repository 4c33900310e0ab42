// SPDX-License-Identifier: MIT
/*
 * Parameters (request over config defaults), the parallelism mapping rules
 * and the default tag inference, the link-bandwidth table, JSON helpers.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_int.h"

const char *const tag_name[TAG_N] = {"DP", "TP", "PP", "EP", "OTHER"};

int cerr(struct cctx *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->err && c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

const cJSON *cparam(const struct cctx *c, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->params, key);

	return v ? v : cJSON_GetObjectItemCaseSensitive(c->defaults, key);
}

static int tag_from_text(const char *s)
{
	for (int t = 0; t < TAG_N; t++)
		if (!strcasecmp(s, tag_name[t]))
			return t;
	return -1;
}

static int parse_rule(struct cctx *c, const cJSON *o, struct crule *r)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "match");
	const cJSON *rk = cJSON_GetObjectItemCaseSensitive(o, "ranks");
	const cJSON *co = cJSON_GetObjectItemCaseSensitive(o, "collective");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "tag");
	int tag;

	if (!cJSON_IsObject(o) || !cJSON_IsString(t) || (tag = tag_from_text(t->valuestring)) < 0)
		return cerr(c, -EINVAL,
			    "each \"tags\" rule needs \"tag\": DP, TP, PP, EP or OTHER");
	if (!m && !rk && !co)
		return cerr(c, -EINVAL,
			    "a \"tags\" rule needs \"match\", \"ranks\" or \"collective\"");
	r->tag = (uint8_t)tag;
	if (m) {
		if (!cJSON_IsString(m) || strlen(m->valuestring) > 256 ||
		    regcomp(&r->re, m->valuestring, REG_EXTENDED | REG_ICASE | REG_NOSUB))
			return cerr(c, -EINVAL,
				    "\"match\" must be a POSIX extended regex (≤ 256 bytes)");
		r->has_re = true;
	}
	if (co) {
		if (!cJSON_IsString(co) || strlen(co->valuestring) > 256 ||
		    regcomp(&r->coll, co->valuestring, REG_EXTENDED | REG_ICASE | REG_NOSUB))
			return cerr(c, -EINVAL, "\"collective\" must be a POSIX extended regex");
		r->has_coll = true;
	}
	if (rk) {
		int n = cJSON_GetArraySize(rk);

		if (!cJSON_IsArray(rk) || n < 1 || n > 65536)
			return cerr(c, -EINVAL, "\"ranks\" must be a non-empty array of ranks");
		r->ranks = calloc((size_t)n, sizeof(*r->ranks));
		if (!r->ranks)
			return -ENOMEM;
		for (int i = 0; i < n; i++) {
			const cJSON *x = cJSON_GetArrayItem(rk, i);

			if (!cJSON_IsNumber(x) || x->valuedouble < 0 ||
			    x->valuedouble > INT32_MAX || x->valuedouble != floor(x->valuedouble))
				return cerr(c, -EINVAL, "\"ranks\" must hold integers >= 0");
			r->ranks[r->nranks++] = (int32_t)x->valuedouble;
		}
	}
	return 0;
}

static int num_param(struct cctx *c, const char *key, double lo, double hi, bool integer,
		     double *out)
{
	const cJSON *v = cparam(c, key);

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
	    (integer && v->valuedouble != floor(v->valuedouble)))
		return cerr(c, -EINVAL, "\"%s\" must be a%s number in [%g, %g]", key,
			    integer ? "n integer" : "", lo, hi);
	*out = v->valuedouble;
	return 0;
}

int comm_parse_params(struct cctx *c)
{
	static const char *const sizes[TAG_N] = {"dp", "tp", "pp", "ep", NULL};
	const cJSON *objs[2] = {c->params, c->defaults}, *it, *v;
	const struct analysis_desc *desc = analysis_find("comm");
	char accepted[512];
	double d;
	int err;

	for (int k = 0; k < 2; k++) {
		if (objs[k] && !cJSON_IsObject(objs[k]))
			return cerr(c, -EINVAL, "params must be an object");
		cJSON_ArrayForEach(it, objs[k])
		{
			if (analysis_param_known(desc, it->string, false))
				continue;
			analysis_params_line(desc, accepted, sizeof(accepted));
			return cerr(c, -EINVAL, "unknown parameter \"%s\" (accepted: %s)",
				    it->string, accepted);
		}
	}
	d = -1;
	if ((err = num_param(c, "rank", 0, INT32_MAX, true, &d)))
		return err;
	c->has_rank = d >= 0;
	c->rank = (int32_t)d;
	if ((err = num_param(c, "link_bandwidth", 1, 1e15, false, &c->link_bw)))
		return err;
	for (int t = 0; t < TAG_N; t++) {
		d = 0;
		if (sizes[t] && (err = num_param(c, sizes[t], 1, 1 << 24, true, &d)))
			return err;
		c->size[t] = (int64_t)d;
	}
	d = 10;
	if ((err = num_param(c, "top", 0, 10000, true, &d)))
		return err;
	c->top = (int64_t)d;
	if ((v = cparam(c, "windows"))) {
		if (!cJSON_IsBool(v))
			return cerr(c, -EINVAL, "\"windows\" must be true or false");
		c->windows = cJSON_IsTrue(v);
	}
	if ((v = cparam(c, "iterations"))) {
		if (!cJSON_IsString(v) ||
		    (strcmp(v->valuestring, "all") && strcmp(v->valuestring, "hta")))
			return cerr(c, -EINVAL,
				    "\"iterations\" must be \"all\" (every complete "
				    "step) or \"hta\" (without the last ProfilerStep, as HTA)");
		c->hta_iters = !strcmp(v->valuestring, "hta");
	}
	if ((v = cparam(c, "iteration"))) {
		size_t n;

		if (!cJSON_IsString(v) || !(n = strlen(v->valuestring)) || n > 256)
			return cerr(c, -EINVAL, "\"iteration\" must be an annotation name");
		c->iter_name = v->valuestring;
		c->iter_prefix = v->valuestring[n - 1] == '*';
	}
	if ((v = cparam(c, "tags"))) {
		int n = cJSON_GetArraySize(v);

		if (!cJSON_IsArray(v) || n > 256)
			return cerr(c, -EINVAL, "\"tags\" must be an array of at most 256 rules");
		c->rules = calloc((size_t)n + 1, sizeof(*c->rules));
		if (!c->rules)
			return -ENOMEM;
		for (int i = 0; i < n; i++) {
			err = parse_rule(c, cJSON_GetArrayItem(v, i), &c->rules[c->nrules++]);
			if (err)
				return err;
		}
	}
	return 0;
}

void comm_free_rules(struct cctx *c)
{
	for (uint32_t i = 0; i < c->nrules; i++) {
		if (c->rules[i].has_re)
			regfree(&c->rules[i].re);
		if (c->rules[i].has_coll)
			regfree(&c->rules[i].coll);
		free(c->rules[i].ranks);
	}
	free(c->rules);
}

/* "[0, 1, 2]" → ranks (at most cap); count, -1 if truncated ("...") or bad. */
static int parse_ranks(const char *s, int32_t *out, int cap)
{
	int n = 0;

	if (!s || *s != '[')
		return -1;
	for (s++; *s;) {
		char *end;
		long v;

		while (*s == ' ' || *s == ',')
			s++;
		if (*s == ']')
			return n;
		v = strtol(s, &end, 10);
		if (end == s || v < 0 || n >= cap)
			return -1; /* "..." of a truncated list, or too long */
		out[n++] = (int32_t)v;
		s = end;
	}
	return -1;
}

/* Case-insensitive token of a name split at non-alphanumerics ("mesh_tp"). */
static bool has_token(const char *s, const char *tok)
{
	size_t n = strlen(tok);

	for (const char *p = s; *p; p++) {
		if (p != s && isalnum((unsigned char)p[-1]))
			continue;
		if (!strncasecmp(p, tok, n) && !isalnum((unsigned char)p[n]))
			return true;
	}
	return false;
}

static bool has_sub(const char *s, const char *sub)
{
	return strcasestr(s, sub) != NULL;
}

/* Names: torch DeviceMesh "mesh_<dim>", Megatron "*_PARALLEL_GROUP", ... */
static int tag_from_name(const char *s)
{
	if (!*s)
		return -1;
	if (has_sub(s, "expert") && has_sub(s, "data"))
		return TAG_DP; /* EXPERT_DATA_PARALLEL_GROUP replicates experts */
	if (has_sub(s, "expert") || has_token(s, "ep") || has_token(s, "moe"))
		return TAG_EP;
	if (has_sub(s, "pipeline") || has_token(s, "pp"))
		return TAG_PP;
	if (has_sub(s, "tensor") || has_token(s, "tp"))
		return TAG_TP;
	if (has_sub(s, "data_parallel") || has_sub(s, "data-parallel") || has_token(s, "dp") ||
	    has_token(s, "data") || has_token(s, "fsdp") || has_token(s, "hsdp") ||
	    has_token(s, "ddp") || has_token(s, "efsdp"))
		return TAG_DP;
	return -1;
}

static bool rule_ranks_match(const struct crule *r, const int32_t *rk, int n)
{
	if (n != (int)r->nranks)
		return false;
	for (int i = 0; i < n; i++)
		if (rk[i] != r->ranks[i])
			return false;
	return true;
}

/* Megatron order (TP fastest, then DP, then PP); EP groups are carved out
 * of DP with TP's stride. Returns -1 unless exactly one reading fits. */
static int tag_from_stride(const struct cctx *c, int32_t n, int32_t stride)
{
	int64_t tp = c->size[TAG_TP] ? c->size[TAG_TP] : 1, dp = c->size[TAG_DP];
	int64_t pp = c->size[TAG_PP], ep = c->size[TAG_EP];
	int hit = -1, nhit = 0;

	if (n <= 1)
		return -1;
	if (c->size[TAG_TP] == n && (stride == 1 || stride < 0))
		hit = TAG_TP, nhit++;
	if (dp == n && (stride == tp || stride < 0))
		hit = TAG_DP, nhit++;
	if (pp == n && (stride == tp * (dp ? dp : 1) || stride < 0))
		hit = TAG_PP, nhit++;
	if (ep == n && ep != dp && (stride == tp || stride < 0))
		hit = TAG_EP, nhit++;
	return nhit == 1 ? hit : -1;
}

/* Whether rule r matches group g (its ranks rk[0..n)) and, for a rule with
 * "collective", the type (CT_N: none given, such rules never match). */
static bool rule_matches(const struct cctx *c, const struct crule *r, const struct cgroup *g,
			 const int32_t *rk, int n, uint8_t type)
{
	if (r->has_re && regexec(&r->re, timeline_str(c->tl, g->desc, NULL), 0, NULL, 0) &&
	    regexec(&r->re, timeline_str(c->tl, g->name, NULL), 0, NULL, 0))
		return false;
	if (r->has_coll && (type >= CT_N || regexec(&r->coll, ctype_name[type], 0, NULL, 0)))
		return false;
	return !r->nranks || rule_ranks_match(r, rk, n);
}

uint8_t comm_tag_type(struct cctx *c, struct cgroup *g, uint8_t type)
{
	int32_t rk[1024];
	int n;

	if (g->ttag[type] != TTAG_UNSET)
		return g->ttag[type];
	g->ttag[type] = g->tag;
	n = parse_ranks(timeline_str(c->tl, g->ranks_text, NULL), rk, 1024);
	for (uint32_t i = 0; i < c->nrules; i++) {
		const struct crule *r = &c->rules[i];

		if (!rule_matches(c, r, g, rk, n, type))
			continue;
		/* a rule without "collective" is the group's own (g->tag) */
		if (r->has_coll) {
			g->ttag[type] = r->tag;
			g->tag_rule[type] = true;
		}
		break;
	}
	return g->ttag[type];
}

void comm_tag_group(struct cctx *c, struct cgroup *g)
{
	const char *name = timeline_str(c->tl, g->name, NULL);
	const char *desc = timeline_str(c->tl, g->desc, NULL);
	const char *rtext = timeline_str(c->tl, g->ranks_text, NULL);
	int32_t rk[1024];
	int n = parse_ranks(rtext, rk, 1024), t;

	memset(g->ttag, TTAG_UNSET, sizeof(g->ttag));
	for (uint32_t i = 0; i < c->nrules; i++) {
		if (!rule_matches(c, &c->rules[i], g, rk, n, CT_N))
			continue;
		g->tag = c->rules[i].tag;
		g->source = "mapping";
		return;
	}
	if ((t = tag_from_name(desc)) >= 0 || (t = tag_from_name(name)) >= 0) {
		g->tag = (uint8_t)t;
		g->source = "name";
		return;
	}
	if (n >= 2 || g->size > 1) {
		int32_t size = n >= 2 ? n : g->size, stride = n >= 2 ? rk[1] - rk[0] : -1;

		for (int i = 2; i < n && stride > 0; i++)
			if (rk[i] - rk[i - 1] != stride)
				stride = 0; /* irregular: no stride reading */
		if (stride != 0 && (t = tag_from_stride(c, size, stride)) >= 0) {
			g->tag = (uint8_t)t;
			g->source = "sizes";
			return;
		}
	}
	if (!strcmp(desc, "default_pg") && !c->size[TAG_TP] && !c->size[TAG_PP] &&
	    !c->size[TAG_EP]) {
		g->tag = TAG_DP; /* the world group without model parallelism: DDP */
		g->source = "default_pg";
		return;
	}
	g->tag = TAG_OTHER;
	g->source = "unmapped";
}

/* Per-GPU, per-direction aggregate NVLink (or PCIe x16) bandwidth, bytes/s:
 * what NCCL's bus bandwidth approaches inside a node. First match wins. */
static const struct {
	const char *sub;
	double bw;
} link_table[] = {
	{"H100 PCIe", 64e9}, {"H100 NVL", 300e9}, {"H800", 200e9},     {"H100", 450e9},
	{"H200", 450e9},     {"GH200", 450e9},	  {"B200", 900e9},     {"GB200", 900e9},
	{"B100", 900e9},     {"A100-PCIE", 32e9}, {"A100 PCIe", 32e9}, {"A800", 200e9},
	{"A100", 300e9},     {"V100-PCIE", 16e9}, {"V100", 150e9},     {"MI300", 448e9},
	{"MI250", 400e9},    {"L40", 32e9},	  {"L4", 32e9},	       {"A10", 32e9},
};

double comm_link_bw_for_device(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < sizeof(link_table) / sizeof(link_table[0]); i++)
		if (strcasestr(name, link_table[i].sub))
			return link_table[i].bw;
	return 0;
}

/* ---- JSON ------------------------------------------------------------- */

/* Keys are static strings (literals, tag_name[], ctype_name[]), added
 * without the copy cJSON_AddItemToObject() makes: a result has tens of
 * thousands of them (a row per iteration and rank). */
static void add(struct cctx *c, cJSON *o, const char *key, cJSON *x)
{
	jtree_add(&c->oom, o, key, x, true);
}

cJSON *cj_obj(struct cctx *c, cJSON *parent, const char *key)
{
	return jtree_add(&c->oom, parent, key, cJSON_CreateObject(), true);
}

cJSON *cj_arr(struct cctx *c, cJSON *parent, const char *key)
{
	return jtree_add(&c->oom, parent, key, cJSON_CreateArray(), true);
}

void cj_num(struct cctx *c, cJSON *o, const char *key, double v)
{
	if (o)
		add(c, o, key, isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

/* Largest ns magnitude a double holds exactly (2^53). */
#define EXACT_NS 9007199254740992.0

/* Decimal digits of v into p (no NUL); the count. Thousands of these per
 * result: snprintf's format parsing was the larger part of their cost. */
static int fmt_u64(char *p, uint64_t v)
{
	char t[20];
	int n = 0;

	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	for (int i = 0; i < n; i++)
		p[i] = t[n - 1 - i];
	return n;
}

cJSON *cj_us_item(double ns)
{
	char buf[40];
	cJSON *x;
	uint64_t a;
	int n;

	if (!isfinite(ns))
		return cJSON_CreateNull();
	if (ns != floor(ns) || fabs(ns) >= EXACT_NS)
		return cJSON_CreateNumber(ns / 1000.0);
	a = (uint64_t)fabs(ns);
	n = 0;
	if (ns < 0)
		buf[n++] = '-';
	n += fmt_u64(buf + n, a / 1000);
	if (a % 1000) { /* 3 decimals, trailing zeros dropped */
		unsigned f = (unsigned)(a % 1000);

		buf[n++] = '.';
		buf[n++] = (char)('0' + f / 100);
		buf[n++] = (char)('0' + f / 10 % 10);
		buf[n++] = (char)('0' + f % 10);
		while (buf[n - 1] == '0')
			n--;
	}
	buf[n] = '\0';
	if (!(x = cJSON_CreateRaw(buf)))
		return NULL;
	x->valuedouble = ns / 1000.0;
	return x;
}

void cj_us(struct cctx *c, cJSON *o, const char *key, double ns)
{
	if (o)
		add(c, o, key, cj_us_item(ns));
}

void cj_bytes(struct cctx *c, cJSON *o, const char *key, double bytes, uint64_t events,
	      uint64_t unknown)
{
	cj_num(c, o, key, events && unknown == events ? NAN : bytes);
}

double cj_value(const cJSON *v)
{
	if (cJSON_IsRaw(v) || cJSON_IsNumber(v))
		return v->valuedouble;
	return NAN;
}

void cj_str(struct cctx *c, cJSON *o, const char *key, const char *s)
{
	if (o)
		add(c, o, key, cJSON_CreateString(s ? s : ""));
}

void cj_bool(struct cctx *c, cJSON *o, const char *key, bool v)
{
	if (o)
		add(c, o, key, cJSON_CreateBool(v));
}

void cj_push(struct cctx *c, cJSON *arr, cJSON *item)
{
	jtree_push(&c->oom, arr, item);
}
