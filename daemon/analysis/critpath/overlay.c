// SPDX-License-Identifier: MIT
/*
 * Overlay writer (as HTA's): the original trace streamed through, one
 * traceEvents element at a time (bounded memory, nothing stored): critical
 * elements (by position, as HTA's overlay marks raw events) get
 * "critical": 1 in their args, other X events are dropped unless all_events
 * (annotations and python functions stay, as HTA), and flow events for the
 * critical dependency / launch / sync edges are appended. Everything outside
 * traceEvents is copied byte for byte. Input plain or gzip; output plain.
 * This file is the stream (gzip, the traceEvents scanner); what happens to
 * each element and the flow events: overlay_edit.c.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "overlay_int.h"

#define EV_MAX (16u << 20)

static int ovfail(struct ov *o, int rc, const char *msg)
{
	if (o->err && o->errlen)
		snprintf(o->err, o->errlen, "%s", msg);
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
				rc = overlay_flows(o);
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
			rc = overlay_element(o);
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
					rc = overlay_element(o);
			}
		}
	}
	if (!rc && !o->in_array && from < n)
		rc = put(o, p + from, n - from);
	return rc;
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
	if (!in || !out || overlay_plan_flows(&o))
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
