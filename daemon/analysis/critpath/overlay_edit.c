// SPDX-License-Identifier: MIT
/*
 * Overlay writer, per element (as HTA's): the top-level fields an element
 * is judged by, "critical": 1 spliced into its args, and the flow events
 * for critical edges, placed on the endpoints seen while streaming.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "overlay_int.h"

static bool in_sorted(const uint32_t *v, uint32_t n, uint32_t x)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t m = lo + (hi - lo) / 2;

		if (v[m] < x)
			lo = m + 1;
		else
			hi = m;
	}
	return lo < n && v[lo] == x;
}

static struct endpoint *ep_find(struct ov *o, uint32_t idx)
{
	for (uint32_t lo = 0, hi = o->nep; lo < hi;) {
		uint32_t m = lo + (hi - lo) / 2;

		if (o->ep[m].index == idx)
			return &o->ep[m];
		if (o->ep[m].index < idx)
			lo = m + 1;
		else
			hi = m;
	}
	return NULL;
}

/* Span of the value after top-level key k in object text s, or false. */
static bool field(const char *s, size_t n, const char *k, size_t *vs, size_t *ve)
{
	size_t kl = strlen(k);
	int d = 0;
	bool str = false, esc = false;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (str) {
			if (esc)
				esc = false;
			else if (c == '\\')
				esc = true;
			else if (c == '"')
				str = false;
			continue;
		}
		if (c == '{' || c == '[') {
			d++;
		} else if (c == '}' || c == ']') {
			d--;
		} else if (c == '"') {
			if (d == 1 && i + kl + 1 < n && !memcmp(s + i + 1, k, kl) &&
			    s[i + kl + 1] == '"') {
				size_t j = i + kl + 2;

				while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' ||
						 s[j] == '\r'))
					j++;
				if (j < n && s[j] == ':') {
					int dd = 0;
					bool st = false, es = false;

					for (j++; j < n && strchr(" \t\r\n", s[j]); j++)
						;
					*vs = j;
					for (; j < n; j++) {
						c = s[j];
						if (st) {
							if (es)
								es = false;
							else if (c == '\\')
								es = true;
							else if (c == '"')
								st = false;
							if (!st && dd == 0)
								break;
							continue;
						}
						if (c == '"')
							st = true;
						else if (c == '{' || c == '[')
							dd++;
						else if (c == '}' || c == ']') {
							if (dd == 0)
								break;
							if (--dd == 0) {
								j++;
								break;
							}
						} else if (c == ',' && dd == 0)
							break;
					}
					if (j < n && s[j] == '"')
						j++; /* closing quote of a string value */
					*ve = j;
					while (*ve > *vs && strchr(" \t\r\n", s[*ve - 1]))
						(*ve)--;
					return true;
				}
			}
			str = true;
		}
	}
	return false;
}

static bool field_is(const char *s, size_t n, const char *k, const char *want)
{
	size_t a, b, wl = strlen(want);

	return field(s, n, k, &a, &b) && b - a == wl + 2 && !memcmp(s + a + 1, want, wl);
}

int overlay_element(struct ov *o)
{
	const char *s = o->ev;
	size_t n = o->evlen, a, b;
	uint32_t idx = o->nelem++;
	bool obj = n && s[0] == '{', crit = obj && in_sorted(o->p->events, o->p->nevents, idx);
	bool keep = o->all || !obj || !field_is(s, n, "ph", "X") || crit ||
		    field_is(s, n, "cat", "user_annotation") ||
		    field_is(s, n, "cat", "python_function");
	struct endpoint *ep = obj ? ep_find(o, idx) : NULL;
	int rc = 0;

	if (ep) {
		ep->seen = true;
		if (field(s, n, "pid", &a, &b) && b - a < sizeof(ep->pid))
			memcpy(ep->pid, s + a, b - a);
		if (field(s, n, "tid", &a, &b) && b - a < sizeof(ep->tid))
			memcpy(ep->tid, s + a, b - a);
		if (field(s, n, "ts", &a, &b))
			ep->ts = strtod(s + a, NULL);
		if (field(s, n, "dur", &a, &b))
			ep->dur = strtod(s + a, NULL);
		if (field(s, n, "args", &a, &b) && s[a] == '{') {
			size_t c, d;

			ep->device = field(s + a, b - a, "device", &c, &d) &&
				     strtod(s + a + c, NULL) >= 0;
		}
	}
	if (!keep)
		return 0;
	if (o->nout++)
		rc = put(o, ",", 1);
	if (!crit)
		return rc ? rc : put(o, s, n);
	if (field(s, n, "args", &a, &b) && s[a] == '{') {
		bool empty = true;

		for (size_t i = a + 1; i < b - 1; i++)
			empty &= strchr(" \t\r\n", s[i]) != NULL;
		if (!rc)
			rc = put(o, s, a + 1);
		if (!rc)
			rc = put(o, empty ? "\"critical\": 1" : "\"critical\": 1, ",
				 empty ? 13 : 15);
		return rc ? rc : put(o, s + a + 1, n - a - 1);
	}
	{
		bool empty = true;

		for (size_t i = 1; i + 1 < n; i++)
			empty &= strchr(" \t\r\n", s[i]) != NULL;
		if (!rc)
			rc = put(o, "{\"args\": {\"critical\": 1}", 24);
		if (!rc && !empty)
			rc = put(o, ", ", 2);
		return rc ? rc : put(o, s + 1, n - 1);
	}
}

int overlay_flows(struct ov *o)
{
	char buf[512];
	int rc = 0;

	for (uint32_t i = 0; i < o->nfl && !rc; i++) {
		const struct flow *f = &o->fl[i];

		for (int end = 0; end < 2 && !rc; end++) {
			struct endpoint *ep = ep_find(o, end ? f->dst : f->src);
			bool st = end ? f->dst_start : f->src_start;
			double ts;
			int len;

			if (!ep || !ep->seen)
				continue;
			ts = st ? ep->ts : ep->ts + ep->dur - (ep->device ? fmin(1, ep->dur) : 0);
			len = snprintf(
				buf, sizeof(buf),
				"%s{\"ph\": \"%c\", \"id\": %u, \"pid\": %s, \"tid\": %s, "
				"\"ts\": %.0f, \"cat\": \"critical_path\", \"name\": "
				"\"critical_path\", \"args\": {\"weight\": %lld, \"critical\": "
				"true, \"type\": \"%s\"}%s}",
				o->nout++ ? "," : "", end ? 'f' : 's', i,
				ep->pid[0] ? ep->pid : "0", ep->tid[0] ? ep->tid : "0", trunc(ts),
				(long long)(f->w / 1000), cp_edge_type_name[f->type],
				end ? ", \"bp\": \"e\"" : "");
			rc = put(o, buf, (size_t)len);
		}
	}
	return rc;
}

static int u32c(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

int overlay_plan_flows(struct ov *o)
{
	const struct cp_graph *g = o->g;
	uint32_t n = o->p->nnodes ? o->p->nnodes - 1 : 0, *ix;

	o->fl = calloc((size_t)n + 1, sizeof(*o->fl));
	ix = malloc(((size_t)n * 2 + 1) * sizeof(*ix));
	o->ep = calloc((size_t)n * 2 + 1, sizeof(*o->ep));
	if (!o->fl || !ix || !o->ep) {
		free(ix);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct cp_edge *e = &g->edges[o->p->edges[i]];
		const struct cp_node *u = &g->nodes[e->u], *v = &g->nodes[e->v];

		if (e->type != CP_E_DEPENDENCY && e->type != CP_E_LAUNCH && e->type != CP_E_SYNC)
			continue;
		o->fl[o->nfl++] = (struct flow){g->ev[u->ev].index,
						g->ev[v->ev].index,
						u->is_start,
						v->is_start,
						e->w,
						e->type};
	}
	for (uint32_t i = 0; i < o->nfl; i++) {
		ix[2 * i] = o->fl[i].src;
		ix[2 * i + 1] = o->fl[i].dst;
	}
	qsort(ix, (size_t)o->nfl * 2, sizeof(*ix), u32c);
	for (uint32_t i = 0; i < o->nfl * 2; i++)
		if (!o->nep || o->ep[o->nep - 1].index != ix[i])
			o->ep[o->nep++].index = ix[i];
	free(ix);
	return 0;
}
