// SPDX-License-Identifier: MIT
/*
 * A real Kineto trace, repeated with shifted timestamps (gen.h,
 * gen_repeat_write): the "1 GB trace made by repeating a reference trace's
 * iterations" of the 1 GB benchmark, whose event mix is the reference
 * trace's own, so
 * that HTA's recorded time on the reference can be scaled by the number of
 * repetitions.
 *
 * Repetition k (0-based) is the trace's events with
 *   - every ts moved by k × period (period = the trace's span, from its
 *     first ts to its last end, rounded up to a microsecond, + 1 ms), kept
 *     to the nanosecond: a float ts is printed with three decimals;
 *   - correlation and flow ids ("id" of s/t/f events; ac2g flows use the
 *     correlation as id) moved by k × (their largest value + 1), and
 *     External id by k × (its largest + 1), so links stay within a copy;
 *   - ProfilerStep#N renamed ProfilerStep#(N + k × steps);
 *   - metadata (ph M) and the "Trace" span written in repetition 0 only.
 * Other top-level keys are copied as they are, in their order.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cjson/cJSON.h>

#include "gen.h"

struct rev {
	cJSON *ev, *ts, *id, *corr, *ext, *name;
	int64_t ts_ns;
	long step; /* ProfilerStep number, -1 */
	unsigned char frac; /* ts had a fraction: printed with three decimals */
	unsigned char once; /* repetition 0 only */
};

static char *read_all(const char *path, size_t *len, char *err, size_t errlen)
{
	gzFile g = gzopen(path, "rb"); /* plain files are read as they are */
	size_t cap = 1 << 20, n = 0;
	char *buf = NULL, *nb;
	int r;

	if (!g) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : ENOMEM));
		return NULL;
	}
	for (;;) {
		if (!buf || cap - n < 1) {
			cap = buf ? cap * 2 : cap;
			if (!(nb = realloc(buf, cap + 1)))
				break;
			buf = nb;
		}
		r = gzread(g, buf + n, (unsigned)(cap - n > (1u << 30) ? 1u << 30 : cap - n));
		if (r <= 0) {
			if (r < 0) {
				snprintf(err, errlen, "%s: read error", path);
				free(buf);
				buf = NULL;
			}
			break;
		}
		n += (size_t)r;
	}
	gzclose(g);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	} else if (!err[0]) {
		snprintf(err, errlen, "%s: out of memory", path);
	}
	return buf;
}

static cJSON *num(const cJSON *obj, const char *key)
{
	cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;

	return cJSON_IsNumber(v) ? v : NULL;
}

/* µs double → ns; the fraction apart, so that the decimal's three digits come
 * back exactly (a ts near 4.5e12 µs has about one ns of double precision). */
static int64_t to_ns(double us, unsigned char *frac)
{
	double ip = floor(us), f = us - ip;
	int64_t ns = (int64_t)ip * 1000 + llround(f * 1000.0);

	*frac = f != 0;
	return ns;
}

static void put_ts(cJSON *ts, int64_t ns, bool frac)
{
	/* ts was turned into a raw item with a 32-byte buffer */
	if (frac)
		snprintf(ts->valuestring, 32, "%lld.%03lld", (long long)(ns / 1000),
			 (long long)llabs(ns % 1000));
	else
		snprintf(ts->valuestring, 32, "%lld", (long long)(ns / 1000));
}

static bool raw_ts(struct rev *r)
{
	char *b = malloc(32);

	if (!b)
		return false;
	r->ts->type = cJSON_Raw;
	r->ts->valuestring = b;
	return true;
}

int gen_repeat_write(FILE *out, const char *path, uint64_t size, int copies,
		     uint64_t *bytes_out, char *err, size_t errlen)
{
	size_t len = 0, nev = 0, pcap = 1 << 16;
	char *text, *pbuf = NULL;
	cJSON *root = NULL, *evs, *e, *top;
	struct rev *rv = NULL;
	int64_t t0 = INT64_MAX, t1 = INT64_MIN, period;
	double max_corr = 0, max_ext = 0;
	long step_lo = -1, step_hi = -1, steps;
	uint64_t bytes = 0;
	int reps = -1;

	err[0] = '\0';
	if (!(text = read_all(path, &len, err, errlen)))
		return -1;
	root = cJSON_ParseWithLength(text, len);
	free(text);
	evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	if (!cJSON_IsArray(evs)) {
		snprintf(err, errlen, "%s: %s", path, root ? "no traceEvents array" : "not JSON");
		goto out;
	}
	nev = (size_t)cJSON_GetArraySize(evs);
	if (!(rv = calloc(nev ? nev : 1, sizeof(*rv))) || !(pbuf = malloc(pcap))) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	nev = 0;
	cJSON_ArrayForEach(e, evs) {
		struct rev *r = &rv[nev++];
		cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args"), *dur = num(e, "dur");
		const cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		const cJSON *cat = cJSON_GetObjectItemCaseSensitive(e, "cat");
		char *end;

		r->ev = e;
		r->step = -1;
		r->once = (cJSON_IsString(ph) && !strcmp(ph->valuestring, "M")) ||
			  (cJSON_IsString(cat) && !strcmp(cat->valuestring, "Trace"));
		if ((r->ts = num(e, "ts"))) {
			r->ts_ns = to_ns(r->ts->valuedouble, &r->frac);
			if (!raw_ts(r)) {
				snprintf(err, errlen, "out of memory");
				goto out;
			}
			if (!r->once) {
				int64_t d = dur && dur->valuedouble > 0 ? llround(dur->valuedouble * 1e3) : 0;

				t0 = r->ts_ns < t0 ? r->ts_ns : t0;
				t1 = r->ts_ns + d > t1 ? r->ts_ns + d : t1;
			}
		}
		if (cJSON_IsString(ph) && strchr("stf", ph->valuestring[0]) && (r->id = num(e, "id")))
			max_corr = fmax(max_corr, r->id->valuedouble);
		if ((r->corr = num(args, "correlation")))
			max_corr = fmax(max_corr, r->corr->valuedouble);
		if ((r->ext = num(args, "External id")))
			max_ext = fmax(max_ext, r->ext->valuedouble);
		r->name = cJSON_GetObjectItemCaseSensitive(e, "name");
		if (cJSON_IsString(r->name) && !strncmp(r->name->valuestring, "ProfilerStep#", 13)) {
			r->step = strtol(r->name->valuestring + 13, &end, 10);
			if (*end || r->step < 0) {
				r->step = -1;
			} else {
				step_lo = step_lo < 0 || r->step < step_lo ? r->step : step_lo;
				step_hi = r->step > step_hi ? r->step : step_hi;
			}
		}
	}
	if (t0 > t1) {
		snprintf(err, errlen, "%s: no timed events", path);
		goto out;
	}
	period = ((t1 - t0 + 999) / 1000) * 1000 + 1000000;
	steps = step_lo < 0 ? 0 : step_hi - step_lo + 1;
	max_corr = floor(max_corr) + 1;
	max_ext = floor(max_ext) + 1;

	bytes += (uint64_t)fprintf(out, "{\n");
	for (top = root->child; top; top = top->next) {
		bytes += (uint64_t)fprintf(out, "  \"%s\": ", top->string);
		if (top == evs) {
			bool first = true;

			bytes += (uint64_t)fprintf(out, "[\n");
			for (reps = 0; copies > 0 ? reps < copies : reps == 0 || bytes < size;
			     reps++) {
				for (size_t i = 0; i < nev; i++) {
					struct rev *r = &rv[i];
					char *s = pbuf;
					char name[64];

					if (r->once && reps)
						continue;
					if (r->ts)
						put_ts(r->ts, r->ts_ns + (int64_t)reps * period, r->frac);
					if (reps) {
						if (r->id)
							cJSON_SetNumberValue(r->id, r->id->valuedouble + max_corr);
						if (r->corr)
							cJSON_SetNumberValue(r->corr, r->corr->valuedouble + max_corr);
						if (r->ext)
							cJSON_SetNumberValue(r->ext, r->ext->valuedouble + max_ext);
						if (r->step >= 0) {
							snprintf(name, sizeof(name), "ProfilerStep#%ld",
								 r->step + (long)reps * steps);
							cJSON_SetValuestring(r->name, name);
						}
					}
					while (!cJSON_PrintPreallocated(r->ev, pbuf, (int)pcap, false)) {
						s = NULL;
						if (pcap >= (1u << 30))
							break;
						free(pbuf);
						pcap *= 4;
						if (!(pbuf = malloc(pcap)))
							break;
						s = pbuf;
					}
					if (!s) {
						snprintf(err, errlen, "out of memory");
						reps = -1;
						goto out;
					}
					bytes += (uint64_t)fprintf(out, "%s    %s", first ? "" : ",\n", s);
					first = false;
				}
			}
			bytes += (uint64_t)fprintf(out, "\n  ]");
		} else {
			char *s = cJSON_PrintUnformatted(top);

			if (!s) {
				snprintf(err, errlen, "out of memory");
				reps = -1;
				goto out;
			}
			bytes += (uint64_t)fprintf(out, "%s", s);
			free(s);
		}
		bytes += (uint64_t)fprintf(out, "%s\n", top->next ? "," : "");
	}
	bytes += (uint64_t)fprintf(out, "}\n");
	if (ferror(out)) {
		snprintf(err, errlen, "write error");
		reps = -1;
	}
out:
	if (bytes_out)
		*bytes_out = bytes;
	free(pbuf);
	free(rv);
	cJSON_Delete(root);
	return reps;
}
