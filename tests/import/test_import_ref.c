// SPDX-License-Identifier: MIT
/*
 * Every HTA reference trace imports and matches HTA's load facts
 * (reference/hta/outputs/<trace>/load_info.json): kept rows per rank,
 * parsed rows, raw elements, rounding, alignment offset, ProfilerStep
 * cutoff. Also: gzip == plain, 1-byte chunks == 64 KiB chunks, and
 * encode → decode gives an identical timeline. Traces are read from
 * $GPUPROF_SHARED at run time.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

static char shared[512];

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, k;

	if (!f)
		return NULL;
	do {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap + 1);
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
	} while (k);
	fclose(f);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static char *gunzip(const char *path, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int k;

	if (!g)
		return NULL;
	do {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap + 1);
		}
		k = gzread(g, buf + n, (unsigned)(cap - n));
		if (k > 0)
			n += (size_t)k;
	} while (k > 0);
	gzclose(g);
	*len = n;
	return buf;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Files of one trace dir, sorted. */
static int list_files(const char *dir, char names[][512], int max)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char *ptrs[16];
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		if (de->d_name[0] == '.')
			continue;
		ptrs[n] = strdup(de->d_name);
		n++;
	}
	closedir(d);
	qsort(ptrs, n, sizeof(ptrs[0]), cmp_str);
	for (int i = 0; i < n; i++) {
		snprintf(names[i], 512, "%s/%s", dir, ptrs[i]);
		free(ptrs[i]);
	}
	return n;
}

static long long jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? (long long)v->valuedouble : -12345;
}

static void check_trace(const char *name)
{
	char dir[600], li_path[600], files[8][512];
	struct timeline *tl = NULL, *tl2 = NULL;
	struct import_opts o = { .rank = -1, .no_finalize = true };
	cJSON *li;
	size_t li_len;
	char *li_text;
	int nf;

	snprintf(dir, sizeof(dir), "%s/reference/hta/traces/%s", shared, name);
	snprintf(li_path, sizeof(li_path), "%s/reference/hta/outputs/%s/load_info.json", shared,
		 name);
	nf = list_files(dir, files, 8);
	CHECK(nf > 0);
	li_text = slurp(li_path, &li_len);
	CHECK(li_text != NULL);
	if (!li_text)
		return;
	li = cJSON_Parse(li_text);
	free(li_text);
	CHECK(li != NULL);
	CHECK_EQ_INT(timeline_new(&tl), 0);
	for (int i = 0; i < nf; i++) {
		struct import_result res;
		int fd = open(files[i], O_RDONLY);

		CHECK(fd >= 0);
		CHECK_EQ_INT(timeline_import_fd(fd, &o, tl, &res), 0);
		if (res.error)
			fprintf(stderr, "%s: %s\n", files[i], res.error_msg);
		CHECK(res.gzip);
		close(fd);
	}
	CHECK_EQ_INT(timeline_finalize(tl, 0), 0);
	CHECK_EQ_INT(timeline_hta_min_ts_us(tl), jnum(li, "alignment_min_ts_us"));

	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(li, "per_rank"), *r;

	CHECK_EQ_INT(timeline_nranks(tl), cJSON_GetArraySize(pr));
	cJSON_ArrayForEach(r, pr) {
		const struct tl_rank *tr = timeline_rank(tl, atoi(r->string));
		const cJSON *psf = cJSON_GetObjectItemCaseSensitive(r, "profiler_step_filter");
		bool applied = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(psf, "applied"));
		bool rounding = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ns_rounding_applied"));

		CHECK(tr != NULL);
		if (!tr)
			continue;
		fprintf(stderr, "  %s rank %s: kept %u (HTA %lld)\n", name, r->string, tr->nev,
			jnum(r, "kept_rows"));
		CHECK_EQ_INT(tr->nev, jnum(r, "kept_rows"));
		CHECK_EQ_INT(tr->parsed_events, jnum(r, "parsed_rows_before_filter"));
		CHECK_EQ_INT(tr->raw_events, jnum(r, "raw_traceEvents"));
		CHECK_EQ_INT(!!(tr->flags & TL_RANK_HTA_ROUNDING), rounding);
		CHECK_EQ_INT(!!(tr->flags & TL_RANK_STEP_FILTERED), applied);
		if (applied)
			CHECK_EQ_INT(tr->step_cutoff_hta_us - timeline_hta_min_ts_us(tl),
				     jnum(psf, "cutoff_last_profiler_step_start_aligned"));
		CHECK_EQ_INT(tr->nby_corr <= tr->nev, 1);
	}
	cJSON_Delete(li);

	/* encode → decode round trip */
	void *enc = NULL;
	size_t enc_len = 0;
	char why[128];

	CHECK_EQ_INT(timeline_encode(tl, &enc, &enc_len), 0);
	CHECK_EQ_INT(timeline_decode(enc, enc_len, &tl2, why, sizeof(why)), 0);
	if (tl2)
		CHECK(timeline_equal(tl, tl2));
	timeline_free(tl2);
	free(enc);

	/* single-file traces: plain == gzip, and 1-byte chunks == 64 KiB */
	if (nf == 1) {
		size_t len = 0;
		char *plain = gunzip(files[0], &len);
		struct timeline *a = NULL, *b = NULL;
		struct import_opts o1 = { .rank = -1, .chunk_size = 65536 };
		struct import_result ra, rb;

		CHECK(plain != NULL);
		timeline_new(&a);
		timeline_new(&b);
		CHECK_EQ_INT(timeline_import_buf(plain, len, &o1, a, &ra), 0);
		CHECK(!ra.gzip);
		CHECK_EQ_U64(ra.bytes_json, len);
		CHECK(timeline_equal(tl, a));
		if (len < 400000) {
			o1.chunk_size = 1;
			CHECK_EQ_INT(timeline_import_buf(plain, len, &o1, b, &rb), 0);
			CHECK(timeline_equal(a, b));
		}
		timeline_free(a);
		timeline_free(b);
		free(plain);
	}
	timeline_free(tl);
}

int main(void)
{
	const char *sh = getenv("GPUPROF_SHARED");
	char tdir[600], names[32][512];
	int n;

	if (!sh) {
		fprintf(stderr, "GPUPROF_SHARED not set\n");
		return 77;
	}
	snprintf(shared, sizeof(shared), "%s", sh);
	snprintf(tdir, sizeof(tdir), "%s/reference/hta/traces", shared);
	n = list_files(tdir, names, 32);
	if (!n)
		return 77;
	for (int i = 0; i < n; i++) {
		const char *base = strrchr(names[i], '/') + 1;

		test_case_name = base;
		test_case_failed = 0;
		check_trace(base);
		if (test_case_failed)
			test_cases_failed++;
		else
			test_cases_passed++;
	}
	return test_summary();
}
