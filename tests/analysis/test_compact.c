// SPDX-License-Identifier: MIT
/*
 * ANALYSIS_COMPACT (the RPC layer's mode): long number arrays become raw
 * JSON text. The compact result must hold the ordinary tree's values,
 * number for number: every analysis, with the params that make the long
 * arrays (per-launch columns, queue series, outliers), on every reference
 * trace, each raw array parsed and compared exactly (doubles with ==);
 * and it must print as valid JSON. jfmt_num(): its text parses back to
 * exactly the double, for the decimal values the analyses make and for
 * random bits. (cJSON's own printing of numbers is lossy at 15 digits;
 * the raw text is not.)
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/internal.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

static void fmt_ok(double v)
{
	char out[32], *end;
	size_t n = jfmt_num(v, out);

	CHECK(n < 32 && strlen(out) == n);
	if (!isfinite(v)) {
		CHECK_STREQ(out, "null");
		return;
	}
	CHECK(strtod(out, &end) == v && *end == '\0');
	if (!(strtod(out, NULL) == v))
		fprintf(stderr, "  %.17g printed as %s\n", v, out);
}

static void test_fmt(void)
{
	static const double fixed[] = { 0, 1, -1, 0.001, 0.01, 0.1, 0.5, 1.5, -0.003, 11.706,
					123456.789, 999999999999.999, 1e12, 1e15, 9007199254740992.0,
					4458676471764.868, 1.0 / 3, 0.1 + 0.2, 1e-7, 5e-324, 1e308,
					-2.5e-3, 78.016, 100, 1e21, NAN, INFINITY, -INFINITY };
	unsigned long long x = 88172645463325252ull;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		fmt_ok(fixed[i]);
	for (int i = 0; i < 200000; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		fmt_ok((double)(long long)(x % 2000000000000ull) / 1000 * (x & 1 ? -1 : 1)); /* ns → µs */
		fmt_ok((double)(x % 100000) / 1000);
		memcpy(&v, &x, sizeof(v)); /* any bits */
		fmt_ok(v);
	}
	{
		char out[32];

		jfmt_num(11.706, out);
		CHECK_STREQ(out, "11.706");
		jfmt_num(0.005, out);
		CHECK_STREQ(out, "0.005");
		jfmt_num(-12, out);
		CHECK_STREQ(out, "-12");
		jfmt_num(0.25, out);
		CHECK_STREQ(out, "0.25");
		/* decimals: 1, 2 or 3 digits, zeros inside kept, none trailing */
		jfmt_num(0.05, out);
		CHECK_STREQ(out, "0.05");
		jfmt_num(100.1, out);
		CHECK_STREQ(out, "100.1");
		jfmt_num(7.105, out);
		CHECK_STREQ(out, "7.105");
		jfmt_num(999999999999.999, out);
		CHECK_STREQ(out, "999999999999.999");
		jfmt_num(-0.0, out);
		CHECK_STREQ(out, "0");
		jfmt_num(1234567890, out);
		CHECK_STREQ(out, "1234567890");
	}
}

/* b (compact) holds the same values as a: nodes compared exactly, a raw
 * node by parsing its text (the numbers it holds must be a's doubles). */
static bool same(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsRaw(b)) {
		cJSON *x = cJSON_Parse(b->valuestring);
		bool ok = x && cJSON_IsArray(a) && same(a, x);

		cJSON_Delete(x);
		return ok;
	}
	if ((a->type & 0xff) != (b->type & 0xff))
		return false;
	if (cJSON_IsNumber(a)) {
		if (a->valuedouble != b->valuedouble)
			fprintf(stderr, "  %.17g != %.17g (%s)\n", a->valuedouble, b->valuedouble,
				a->string ? a->string : "");
		return a->valuedouble == b->valuedouble;
	}
	if (cJSON_IsString(a))
		return !strcmp(a->valuestring, b->valuestring);
	if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
		const cJSON *x = a->child, *y = b->child;

		for (; x && y; x = x->next, y = y->next)
			if ((cJSON_IsObject(a) && strcmp(x->string, y->string)) || !same(x, y))
				return false;
		return !x && !y;
	}
	return true; /* true / false / null */
}

static int ncompared, nraw;

static int count_raw(const cJSON *o)
{
	int n = cJSON_IsRaw(o);

	for (const cJSON *c = o->child; c; c = c->next)
		n += count_raw(c);
	return n;
}

static void compare(const struct timeline *tl, const char *name, const char *params,
		    const char *trace)
{
	cJSON *p = params ? cJSON_Parse(params) : NULL, *a = NULL, *b = NULL, *back;
	int ra = analysis_run(name, tl, p, &a, NULL, 0);
	int rb = analysis_run_flags(name, tl, p, ANALYSIS_COMPACT, &b, NULL, 0);
	char *txt;

	CHECK_EQ_INT(ra, rb);
	if (!ra && a && b) {
		nraw += count_raw(b);
		if (!same(a, b))
			fprintf(stderr, "  %s %s %s: compact result differs\n", trace, name,
				params ? params : "");
		CHECK(same(a, b));
		/* and it prints as valid JSON with the same shape */
		txt = cJSON_PrintUnformatted(b);
		back = txt ? cJSON_Parse(txt) : NULL;
		CHECK(back != NULL && cJSON_GetArraySize(back) == cJSON_GetArraySize(a));
		cJSON_Delete(back);
		free(txt);
		ncompared++;
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(p);
}

/* An array's text is sized for short numbers and grows for long ones:
 * numbers of every length, and every count around the growth steps,
 * come back as the same doubles (and a whole one as its integer text). */
static void test_jnums_growth(void)
{
	static const size_t counts[] = { 0, 1, 2, 3, 5, 100, 1000, 4097 };

	for (size_t t = 0; t < sizeof(counts) / sizeof(counts[0]); t++) {
		for (int kind = 0; kind < 3; kind++) {
			struct actx c = { .compact = true };
			cJSON *arr = cJSON_CreateArray(), *back, *x;
			size_t n = counts[t], k = 0;
			double *v = malloc((n + 1) * sizeof(*v));

			for (size_t i = 0; i < n; i++) {
				/* long %.17g text, short whole numbers, or a mix */
				v[i] = kind == 0 ? -1.2345678901234567e-300 * (double)(i + 1) :
				       kind == 1 ? (double)i :
						   (i % 3 ? 1.0 / (double)(i + 3) : -(double)i * 1000);
				jpush_num(&c, arr, v[i]);
			}
			jnums_finish(&c, true);
			CHECK(!c.oom);
			if (!n) { /* nothing pushed: an ordinary empty array */
				CHECK(cJSON_IsArray(arr) && !arr->child);
				cJSON_Delete(arr);
				free(v);
				continue;
			}
			CHECK(cJSON_IsRaw(arr));
			back = cJSON_Parse(arr->valuestring);
			CHECK(back && cJSON_IsArray(back));
			cJSON_ArrayForEach(x, back) {
				CHECK(k < n && cJSON_IsNumber(x) && x->valuedouble == v[k]);
				k++;
			}
			CHECK_EQ_INT(k, n);
			if (kind == 1 && n > 3)
				CHECK(!strncmp(arr->valuestring, "[0,1,2,3", 8));
			cJSON_Delete(back);
			cJSON_Delete(arr);
			free(v);
		}
	}
}

static void test_reference_traces(void)
{
	static const struct {
		const char *name, *params;
	} calls[] = {
		{ "temporal", NULL },
		{ "idle", "{\"interval_stats\": true}" },
		{ "kernels", NULL },
		{ "overlap", NULL },
		{ "launch", NULL },
		{ "launch", "{\"extended\": true, \"include_memory\": true, "
			    "\"runtime_cutoff_us\": 1, \"launch_delay_cutoff_us\": 1}" },
		{ "queue", "{\"series\": true}" },
		{ "sequences", "{\"op\": \"aten::linear\"}" },
	};
	const char *shared = getenv("GPUPROF_SHARED");
	char dir[1024];
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/reference/hta/traces", shared ? shared : "../shared");
	if (!(d = opendir(dir))) {
		printf("  no reference traces at %s\n", dir);
		CHECK(0);
		return;
	}
	while ((de = readdir(d))) {
		char sub[1300];
		DIR *d2;
		struct dirent *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (!(d2 = opendir(sub)))
			continue;
		while ((f = readdir(d2))) {
			char path[2600];
			struct timeline *tl;
			struct import_result res;
			int fd;

			if (!strstr(f->d_name, ".json"))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, f->d_name);
			if ((fd = open(path, O_RDONLY)) < 0)
				continue;
			timeline_new(&tl);
			if (timeline_import_fd(fd, &(struct import_opts){ .rank = -1 }, tl, &res) == 0)
				for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
					compare(tl, calls[i].name, calls[i].params, f->d_name);
			close(fd);
			timeline_free(tl);
		}
		closedir(d2);
	}
	closedir(d);
	printf("  %d results compared, %d raw arrays in the compact ones\n", ncompared, nraw);
	CHECK(ncompared > 40);
	CHECK(nraw > 50);
}

int main(void)
{
	RUN(test_fmt);
	RUN(test_jnums_growth);
	RUN(test_reference_traces);
	return test_summary();
}
