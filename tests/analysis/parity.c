// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "import/import.h"
#include "parity.h"

const char *const parity_traces[] = {
	"simple_add",	 "alexnet",    "cuda_event_sync", "cuda_event_sync_multi_stream",
	"trace_filter",	 "timeline_analysis", "nccl_parser_config", "amd_trace",
	"cupti_profiler", "rank_non_gpu", "triton_example", NULL,
};

const char *parity_path(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("GPUPROF_SHARED");

	snprintf(buf, sizeof(buf), "%s/reference/hta/%s", root ? root : "/work/shared", rel);
	return buf;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct timeline *parity_load_trace(const char *name)
{
	char rel[512], *files[16];
	struct timeline *tl = NULL;
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(rel, sizeof(rel), "traces/%s", name);
	dir = opendir(parity_path(rel));
	if (!dir)
		return NULL;
	while ((d = readdir(dir)) && n < 16)
		if (d->d_name[0] != '.')
			files[n++] = strdup(d->d_name);
	closedir(dir);
	qsort(files, n, sizeof(files[0]), name_cmp);
	if (timeline_new(&tl))
		goto fail;
	for (int i = 0; i < n; i++) {
		struct import_opts o = { .rank = i, .no_finalize = true };
		struct import_result res;
		char p[4608];
		int fd, err;

		snprintf(p, sizeof(p), "%s/%s", parity_path(rel), files[i]);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			goto fail;
		err = timeline_import_fd(fd, &o, tl, &res);
		close(fd);
		if (err) {
			fprintf(stderr, "import %s: %s\n", p, res.error_msg);
			goto fail;
		}
	}
	if (timeline_finalize(tl, 0))
		goto fail;
	for (int i = 0; i < n; i++)
		free(files[i]);
	return tl;
fail:
	for (int i = 0; i < n; i++)
		free(files[i]);
	timeline_free(tl);
	return NULL;
}

cJSON *parity_load_ref(const char *name, const char *file)
{
	char rel[512], *buf;
	FILE *f;
	long len;
	cJSON *j;

	snprintf(rel, sizeof(rel), "outputs/%s/%s.json", name, file);
	f = fopen(parity_path(rel), "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)len + 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		fclose(f);
		return NULL;
	}
	buf[len] = 0;
	fclose(f);
	j = cJSON_Parse(buf);
	free(buf);
	return j;
}

cJSON *parity_run(const char *analysis, const struct timeline *tl, const char *params_json)
{
	cJSON *params = params_json ? cJSON_Parse(params_json) : NULL, *res = NULL;
	char err[256];
	int rc = analysis_run(analysis, tl, params, &res, err, sizeof(err));

	cJSON_Delete(params);
	if (rc) {
		fprintf(stderr, "analysis %s(%s) failed: %d %s\n", analysis,
			params_json ? params_json : "", rc, err);
		return NULL;
	}
	return res;
}

const cJSON *parity_rank(const cJSON *result, int rank)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(result, "ranks"))
		if ((int)jnumv(it, "rank") == rank)
			return it;
	return NULL;
}

double jnumv(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

double hta_round(double x, int k)
{
	double p = pow(10, k);

	return rint(x * p) / p;
}
