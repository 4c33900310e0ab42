// SPDX-License-Identifier: MIT
/*
 * Overlay writer (SPEC 6.8 G): the original trace streamed through, one
 * traceEvents element at a time (bounded memory, nothing stored): critical
 * elements (by position, as HTA's overlay marks raw events) get
 * "critical": 1 in their args, other X events are dropped unless all_events
 * (annotations and python functions stay, as HTA), and flow events for the
 * critical dependency / launch / sync edges are appended. Everything outside
 * traceEvents is copied byte for byte. Input plain or gzip; output plain.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "internal.h"

#define EV_MAX (16u << 20)

struct flow {
	uint32_t src, dst; /* traceEvents indices */
	bool src_start, dst_start;
	int64_t w;
	uint8_t type;
};

struct endpoint { /* what a flow needs from a raw event */
	uint32_t index;
	char pid[64], tid[64];
	double ts, dur;
	bool device, seen;
};

struct ov {
	const struct cp_graph *g;
	const struct cp_path *p;
	const struct cp_io *io;
	bool all;
	/* scanner */
	int depth, edepth;
	bool in_str, esc, in_array, in_elem, key_is_te, after_key;
	char key[16];
	size_t keylen;
	char *ev;
	size_t evlen, evcap;
	uint32_t nelem, nout;
	struct flow *fl;
	uint32_t nfl;
	struct endpoint *ep;
	uint32_t nep;
	char *err;
	size_t errlen;
};

static int ovfail(struct ov *o, int rc, const char *msg)
{
	if (o->err && o->errlen)
		snprintf(o->err, o->errlen, "%s", msg);
	return rc;
}

static int put(struct ov *o, const void *p, size_t n)
{
	return n ? o->io->write(o->io->arg, p, n) : 0;
}

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

static int element(struct ov *o)
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

			ep->device =
			    field(s + a, b - a, "device", &c, &d) && strtod(s + a + c, NULL) >= 0;
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

static int flows_out(struct ov *o)
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
			    o->nout++ ? "," : "", end ? 'f' : 's', i, ep->pid[0] ? ep->pid : "0",
			    ep->tid[0] ? ep->tid : "0", trunc(ts), (long long)(f->w / 1000),
			    cp_edge_type_name[f->type], end ? ", \"bp\": \"e\"" : "");
			rc = put(o, buf, (size_t)len);
		}
	}
	return rc;
}

static int ev_push(struct ov *o, char c)
{
	if (o->evlen == o->evcap) {
		size_t cap = o->evcap ? o->evcap * 2 : 4096;
		char *p;

		if (cap > EV_MAX)
			return ovfail(o, -E2BIG, "a traceEvents element is larger than 16 MiB");
		p = realloc(o->ev, cap);
		if (!p)
			return ovfail(o, -ENOMEM, "out of memory");
		o->ev = p;
		o->evcap = cap;
	}
	o->ev[o->evlen++] = c;
	return 0;
}

static bool ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One chunk of JSON text: verbatim outside traceEvents, per element inside. */
static int feed(struct ov *o, const char *p, size_t n)
{
	size_t from = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		char c = p[i];

		if (!o->in_array) {
			if (o->in_str) {
				if (o->esc)
					o->esc = false;
				else if (c == '\\')
					o->esc = true;
				else if (c == '"') {
					o->in_str = false;
					o->key_is_te = o->depth == 1 && o->keylen == 11 &&
						       !memcmp(o->key, "traceEvents", 11);
				} else if (o->keylen < sizeof(o->key))
					o->key[o->keylen++] = c;
				continue;
			}
			if (c == '"') {
				o->in_str = true;
				o->keylen = 0;
			} else if (c == ':') {
				o->after_key = o->key_is_te && o->depth == 1;
			} else if (c == '[' && o->depth == 1 && o->after_key) {
				rc = put(o, p + from, i + 1 - from);
				from = i + 1;
				o->in_array = true;
				o->depth = 2;
				o->after_key = o->key_is_te = false;
			} else if (c == '{' || c == '[') {
				o->depth++;
				o->after_key = false;
			} else if (c == '}' || c == ']') {
				o->depth--;
			} else if (c == ',') {
				o->after_key = o->key_is_te = false;
			}
			continue;
		}
		if (!o->in_elem) {
			if (ws(c) || c == ',')
				continue;
			if (c == ']') {
				rc = flows_out(o);
				if (!rc)
					rc = put(o, "]", 1);
				o->in_array = false;
				o->depth = 1;
				from = i + 1;
				continue;
			}
			o->in_elem = true;
			o->edepth = 0;
			o->evlen = 0;
			o->in_str = o->esc = false;
		}
		if (o->in_str) {
			rc = ev_push(o, c);
			if (o->esc)
				o->esc = false;
			else if (c == '\\')
				o->esc = true;
			else if (c == '"')
				o->in_str = false;
			continue;
		}
		if (o->edepth == 0 && o->evlen && (c == ',' || c == ']')) {
			/* end of a scalar element */
			o->in_elem = false;
			rc = element(o);
			if (c == ']')
				i--; /* let the array end be seen again */
			continue;
		}
		rc = ev_push(o, c);
		if (c == '"') {
			o->in_str = true;
		} else if (c == '{' || c == '[') {
			o->edepth++;
		} else if (c == '}' || c == ']') {
			if (--o->edepth == 0) {
				o->in_elem = false;
				if (!rc)
					rc = element(o);
			}
		}
	}
	if (!rc && !o->in_array && from < n)
		rc = put(o, p + from, n - from);
	return rc;
}

static int u32c(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int plan_flows(struct ov *o)
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

int cp_overlay_write(const struct cp_graph *g, const struct cp_path *p, const struct cp_io *io,
		     bool all_events, uint64_t *flows_out_n, char *err, size_t errlen)
{
	struct ov o = {.g = g, .p = p, .io = io, .all = all_events, .err = err, .errlen = errlen};
	char *in = malloc(1 << 16), *out = malloc(1 << 16);
	z_stream z;
	bool gz = false, first = true, zinit = false;
	int rc = -ENOMEM;

	memset(&z, 0, sizeof(z));
	if (!in || !out || plan_flows(&o))
		goto done;
	for (;;) {
		ssize_t got = io->read(io->arg, in, 1 << 16);

		if (got < 0) {
			rc = ovfail(&o, (int)got, "reading the original trace failed");
			goto done;
		}
		if (got == 0)
			break;
		if (first) {
			first = false;
			gz = got >= 2 && (unsigned char)in[0] == 0x1f &&
			     (unsigned char)in[1] == 0x8b;
			if (gz && inflateInit2(&z, 15 + 32) != Z_OK)
				goto done;
			zinit = gz;
		}
		if (!gz) {
			rc = feed(&o, in, (size_t)got);
			if (rc)
				goto done;
			continue;
		}
		z.next_in = (Bytef *)in;
		z.avail_in = (uInt)got;
		while (z.avail_in) {
			int zr;

			z.next_out = (Bytef *)out;
			z.avail_out = 1 << 16;
			zr = inflate(&z, Z_NO_FLUSH);
			if (zr != Z_OK && zr != Z_STREAM_END) {
				rc = ovfail(&o, -EBADMSG, "the original trace: bad gzip data");
				goto done;
			}
			rc = feed(&o, out, (1 << 16) - z.avail_out);
			if (rc)
				goto done;
			if (zr == Z_STREAM_END) {
				if (!z.avail_in)
					break;
				inflateReset(&z); /* concatenated members */
			}
		}
	}
	if (o.in_array || o.in_elem || o.depth != 0 || first) {
		rc = ovfail(&o, -EBADMSG,
			    "the original trace is not a complete JSON object with "
			    "traceEvents");
		goto done;
	}
	if (o.nelem <= (p->nevents ? p->events[p->nevents - 1] : 0)) {
		rc = ovfail(&o, -EBADMSG,
			    "the original trace has fewer events than the capture: "
			    "is it the file that was imported?");
		goto done;
	}
	if (flows_out_n)
		*flows_out_n = (uint64_t)o.nfl * 2;
	rc = 0;
done:
	if (zinit)
		inflateEnd(&z);
	free(in);
	free(out);
	free(o.ev);
	free(o.fl);
	free(o.ep);
	return rc;
}
