// SPDX-License-Identifier: MIT
/*
 * The repeated reference trace the 1 GB benchmark is made of
 * (bench/import/repeat.c, gen_kineto --repeat) is nccl_parser_config k
 * times over, as far as the importer and the analyses can tell:
 *  - raw elements: k copies, metadata and the Trace span once;
 *  - ProfilerStep rows: 3 per copy, each with a name of its own;
 *  - kept rows and launches grow by the same amount per added copy (the
 *    step filter only cuts the last copy's tail): were the correlation ids
 *    not moved apart, launch's join of every CPU row with every GPU row of
 *    its correlation would grow quadratically;
 *  - the kernels' total time, k copies' worth less that tail, is linear
 *    the same way.
 * Reads the trace from $GPUPROF_SHARED; skipped without it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen.h" /* bench/import: the trace generator */
#include "analysis/analysis.h"
#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"

#define TRACE "/reference/hta/traces/nccl_parser_config/nccl_data.json.gz"

struct facts {
	uint64_t raw, kept, launches, steps, step_names;
	double kernel_us;
};

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static int facts_of(const char *path, int copies, struct facts *f)
{
	struct timeline *tl = NULL;
	struct import_result res;
	char *buf = NULL, err[300];
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	const struct tl_rank *r;
	cJSON *p, *launch = NULL, *kern = NULL, *rows, *row;
	int reps;

	memset(f, 0, sizeof(*f));
	if (!out)
		return -1;
	reps = gen_repeat_write(out, path, 0, copies, NULL, err, sizeof(err));
	fclose(out);
	CHECK_EQ_INT(reps, copies);
	if (reps != copies) {
		fprintf(stderr, "repeat: %s\n", err);
		free(buf);
		return -1;
	}
	CHECK_EQ_INT(timeline_new(&tl), 0);
	CHECK_EQ_INT(timeline_import_buf(buf, len, NULL, tl, &res), 0);
	free(buf);
	r = timeline_rank(tl, 0);
	f->raw = res.events_raw;
	f->kept = r->nev;
	for (uint32_t i = 0; i < r->nev; i++) {
		bool seen = false;

		if (!(r->ev[i].flags & TL_EV_PROFILER_STEP))
			continue;
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = (r->ev[j].flags & TL_EV_PROFILER_STEP) && r->ev[j].name == r->ev[i].name;
		f->steps++;
		f->step_names += !seen;
	}
	CHECK_EQ_INT(analysis_run("launch", tl, NULL, &launch, err, sizeof(err)), 0);
	f->launches = (uint64_t)num(cJSON_GetArrayItem(cJSON_GetObjectItem(launch, "ranks"), 0),
				    "count");
	p = cJSON_Parse("{\"rank\": 0}");
	CHECK_EQ_INT(analysis_run("kernels", tl, p, &kern, err, sizeof(err)), 0);
	rows = cJSON_GetObjectItem(kern, "kernel_types");
	cJSON_ArrayForEach(row, rows)
		f->kernel_us += num(row, "sum_us");
	cJSON_Delete(p);
	cJSON_Delete(launch);
	cJSON_Delete(kern);
	timeline_free(tl);
	return 0;
}

static char path[1024];

static void test_repeat_is_linear(void)
{
	struct facts f[4];

	for (int k = 1; k <= 3; k++)
		if (facts_of(path, k, &f[k]))
			return;
	/* 40 573 elements, 38 metadata and one Trace span written once */
	CHECK_EQ_U64(f[1].raw, 40573);
	CHECK_EQ_U64(f[2].raw, 2 * 40573 - 39);
	CHECK_EQ_U64(f[3].raw, 3 * 40573 - 2 * 39);
	/* kept rows: HTA keeps 17 952 of the single trace (load_info.json) */
	CHECK_EQ_U64(f[1].kept, 17952);
	CHECK(f[2].kept > f[1].kept);
	CHECK_EQ_U64(f[3].kept - f[2].kept, f[2].kept - f[1].kept);
	/* the step filter keeps every step but the last one; renumbered, the
	 * copies' steps have names of their own */
	CHECK_EQ_U64(f[1].steps, 2);
	CHECK_EQ_U64(f[3].steps, 8);
	CHECK_EQ_U64(f[3].step_names, 8);
	CHECK(f[1].launches > 0);
	CHECK_EQ_U64(f[3].launches - f[2].launches, f[2].launches - f[1].launches);
	CHECK(f[1].kernel_us > 0);
	CHECK_NEAR(f[3].kernel_us - f[2].kernel_us, f[2].kernel_us - f[1].kernel_us, 1e-6);
}

int main(void)
{
	const char *sh = getenv("GPUPROF_SHARED");
	FILE *probe;

	if (!sh)
		TEST_SKIP("GPUPROF_SHARED is not set");
	snprintf(path, sizeof(path), "%s" TRACE, sh);
	if (!(probe = fopen(path, "rb")))
		TEST_SKIP("%s: %s", path, strerror(errno));
	fclose(probe);
	RUN(test_repeat_is_linear);
	return test_summary();
}
