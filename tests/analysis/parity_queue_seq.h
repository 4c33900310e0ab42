/* SPDX-License-Identifier: MIT */
/* Queue-length and frequent-sequence parity checks, included by
 * test_parity.c (they share its macros and the current trace name). */

static const cJSON *queue_stream(const cJSON *rank, double stream)
{
	const cJSON *s;

	cJSON_ArrayForEach(s, get(rank, "streams"))
		if (jnumv(s, "stream") == stream)
			return s;
	return NULL;
}

/* HTA keeps only the last stream that reached the threshold (Q10). */
static void queue_blocked(const struct timeline *tl, const cJSON *v, const char *key, int maxq)
{
	const cJSON *rows = records(get(v, key)), *rec;
	char params[64];
	cJSON *res;

	snprintf(params, sizeof(params), "{\"max_queue_length\": %d}", maxq);
	res = parity_run("queue", tl, params);
	CHECK(res);
	cJSON_ArrayForEach(rec, rows)
	{
		const cJSON *m = parity_rank(res, (int)jnumv(rec, "rank"));
		const cJSON *s = queue_stream(m, jnumv(rec, "stream"));
		const cJSON *b = get(s, "blocked_on_full_queue");

		EXACT("hta stream", jnumv(m, "hta_blocked_stream"), jnumv(rec, "stream"));
		EXACT("blocked", jnumv(b, "duration_at_max_queue_length_us"),
		      jnumv(rec, "duration_at_max_queue_length"));
		EXACT("blocked rel", jnumv(b, "relative_duration_at_max_queue_length"),
		      jnumv(rec, "relative_duration_at_max_queue_length"));
	}
	if (!cJSON_GetArraySize(rows)) {
		const cJSON *m;

		cJSON_ArrayForEach(m, get(res, "ranks"))
			CHECK(isnan(jnumv(m, "hta_blocked_stream")));
	}
	cJSON_Delete(res);
}

static void queue(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *v = get(ref, "all_ranks") ? get(ref, "all_ranks") : get(ref, "default");
	const cJSON *sum = get(v, "queue_length_summary"), *idx, *ts;
	cJSON *res = NULL;
	int i = 0;

	if (!cJSON_IsObject(sum)) { /* HTA: None on a CPU-only trace */
		CHECK_EQ_INT(analysis_run("queue", tl, NULL, &res, NULL, 0), -ENODATA);
		return;
	}
	res = parity_run("queue", tl, "{\"series\": true}");
	CHECK(res);
	if (!res)
		return;
	cJSON_ArrayForEach(idx, get(sum, "index"))
	{
		const cJSON *rec = cJSON_GetArrayItem(records(sum), i++);
		const cJSON *m = parity_rank(res, cJSON_GetArrayItem(idx, 0)->valueint);
		const cJSON *s = queue_stream(m, cJSON_GetArrayItem(idx, 1)->valuedouble);
		const cJSON *q = get(s, "summary");

		CHECK(q);
		EXACT("count", jnumv(q, "count"), jnumv(rec, "queue_length_count"));
		EXACT("mean", jnumv(q, "mean"), jnumv(rec, "queue_length_mean"));
		EXACT("std", jnumv(q, "std"), jnumv(rec, "queue_length_std"));
		EXACT("min", jnumv(q, "min"), jnumv(rec, "queue_length_min"));
		EXACT("25%", jnumv(q, "p25"), jnumv(rec, "queue_length_25%"));
		EXACT("50%", jnumv(q, "p50"), jnumv(rec, "queue_length_50%"));
		EXACT("75%", jnumv(q, "p75"), jnumv(rec, "queue_length_75%"));
		EXACT("max", jnumv(q, "max"), jnumv(rec, "queue_length_max"));
	}
	/* the series, stream by stream, in HTA's order */
	cJSON_ArrayForEach(ts, get(v, "queue_length_time_series"))
	{
		const cJSON *m = parity_rank(res, atoi(ts->string)), *s;

		cJSON_ArrayForEach(s, get(m, "streams"))
		{
			const cJSON *se = get(s, "series"), *rec;
			int k = 0, n = cJSON_GetArraySize(get(se, "ts_us"));

			cJSON_ArrayForEach(rec, records(ts))
			{
				if (jnumv(rec, "stream") != jnumv(s, "stream"))
					continue;
				if (k >= n) {
					k++;
					continue;
				}
				EXACT("series ts", cJSON_GetArrayItem(get(se, "ts_us"), k)->valuedouble,
				      jnumv(rec, "ts"));
				EXACT("series len",
				      cJSON_GetArrayItem(get(se, "queue_length"), k)->valuedouble,
				      jnumv(rec, "queue_length"));
				k++;
			}
			CHECK_EQ_INT(k, n);
		}
		EXACT("trace duration", jnumv(m, "trace_duration_us"),
		      jnumv(get(v, "trace_duration_used_for_relative_values_(ts.max()-ts.min() "
				   "per rank)"),
			    ts->string));
	}
	cJSON_Delete(res);
	queue_blocked(tl, v, "time_spent_blocked_on_full_queue", 1024);
	queue_blocked(tl, v, "time_spent_blocked_on_full_queue_max_queue_length_1000", 1000);
	queue_blocked(tl, v, "time_spent_blocked_on_full_queue_max_queue_length_4", 4);
}

static void sequences(const struct timeline *tl, const cJSON *ref)
{
	const cJSON *run;

	cJSON_ArrayForEach(run, get(ref, "runs"))
	{
		const cJSON *rows = records(get(run, "result")), *rec, *m, *pats;
		char params[256];
		cJSON *res = NULL;
		int i = 0, rc, rank = get(run, "args") ? (int)jnumv(get(run, "args"), "rank") : 0;

		snprintf(params, sizeof(params), "{\"operator\": \"%s\", \"rank\": %d, \"top_k\": 0}",
			 run->string, rank);
		if (hta_failed(run)) {
			/* Q12: HTA raises on negative durations; we answer */
			res = parity_run("sequences", tl, params);
			CHECK(res);
			cJSON_Delete(res);
			continue;
		}
		{
			cJSON *p = cJSON_Parse(params);
			char err[128];

			rc = analysis_run("sequences", tl, p, &res, err, sizeof(err));
			cJSON_Delete(p);
		}
		if (rc == -ENODATA) { /* CPU-only trace: HTA's frame is empty */
			CHECK_EQ_INT(cJSON_GetArraySize(rows), 0);
			continue;
		}
		CHECK_EQ_INT(rc, 0);
		m = parity_rank(res, rank);
		pats = get(m, "patterns");
		CHECK_EQ_INT(cJSON_GetArraySize(pats), cJSON_GetArraySize(rows));
		cJSON_ArrayForEach(rec, rows)
		{
			const cJSON *p = cJSON_GetArrayItem(pats, i++);

			if (!p)
				break;
			CHECK_STREQ(get(p, "pattern")->valuestring, get(rec, "pattern")->valuestring);
			EXACT("count", jnumv(p, "count"), jnumv(rec, "count"));
			EXACT("gpu dur", jnumv(p, "gpu_kernel_duration_us"),
			      jnumv(rec, "GPU kernel duration (us)"));
			EXACT("cpu dur", jnumv(p, "cpu_op_duration_us"),
			      jnumv(rec, "CPU op duration (us)"));
		}
		cJSON_Delete(res);
	}
}
