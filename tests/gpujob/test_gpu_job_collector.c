// SPDX-License-Identifier: MIT
/*
 * The GPU job collector against the real kernel (suite 'bpf'): each
 * tracepoint group is loaded and attached for real where this kernel has
 * its BTF (dma_fence: core kernel), and reported unavailable with the
 * reason where it has not (xe / i915 without their modules). Nothing here
 * can make the kernel signal a fence (no GPU, no CONFIG_SW_SYNC on the
 * development VM), so the record side is then driven with the records the
 * BPF programs would send, through the real pairer into the real store.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "collect/collector.h"
#include "collect/gpu_job.h"
#include "collect/gpu_job_int.h"
#include "gpd.h"
#include "store/store.h"
#include "test.h"

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static const cJSON *group(const cJSON *st, const char *name)
{
	const cJSON *g;
	cJSON_ArrayForEach(
	    g, cJSON_GetObjectItem(
		   st, "groups")) if (!strcmp(cJSON_GetObjectItem(g, "name")->valuestring,
					      name)) return g;
	return NULL;
}

static const char *gstr(const cJSON *g, const char *k)
{
	const cJSON *v = g ? cJSON_GetObjectItem(g, k) : NULL;
	return cJSON_IsString(v) ? v->valuestring : "";
}

static bool has_tp(const cJSON *g, const char *tp)
{
	const cJSON *t, *tps = g ? cJSON_GetObjectItem(g, "tracepoints") : NULL;
	cJSON_ArrayForEach(t, tps) if (!strcmp(t->valuestring, tp)) return true;
	return false;
}

/* A driver group: attached when its module's BTF is here, else unavailable
 * naming the missing module. */
static void check_driver_group(const cJSON *st, const char *name)
{
	char path[64], want[96];
	const cJSON *g = group(st, name);
	CHECK(g != NULL);
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", name);
	if (access(path, R_OK) == 0) {
		printf("note: %s module BTF present: %s %s\n", name, gstr(g, "state"),
		       gstr(g, "reason"));
		return;
	}
	snprintf(want, sizeof(want), "no %s BTF (module not loaded)", name);
	CHECK_STREQ(gstr(g, "state"), "unavailable");
	CHECK_STREQ(gstr(g, "reason"), want);
}

static struct gpu_job_rec rec(uint8_t ev, uint8_t group, uint64_t ts, uint64_t obj, uint64_t ctx,
			      uint64_t seq, uint8_t flags)
{
	struct gpu_job_rec r;
	memset(&r, 0, sizeof(r));
	r.type = GPU_JOB_REC_TYPE;
	r.version = GPU_JOB_REC_VERSION;
	r.ev = ev;
	r.group = group;
	r.flags = flags;
	r.engine = 0xff;
	r.pid = 4242;
	r.tid = 4243;
	r.uid = 1000;
	r.ts_ns = ts;
	r.obj = obj;
	r.ctx = ctx;
	r.seqno = seq;
	memcpy(r.comm, "trainer", 8);
	return r;
}

/* The record side: xe's create -> run -> hw fence signal, the way the
 * programs report it, lands as one STORE_REC_GPU_INTERVAL. */
static void feed_records(struct collector *c, struct store *s)
{
	struct gj_priv *p = c->priv;
	size_t before = store_count(s);
	struct gpu_job_rec r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_XE, 1000000, 0xffff888012340000ull, 0,
				   0, GPU_JOB_F_OBJ_KEY);
	r.engine = 5; /* XE_ENGINE_CLASS_COMPUTE */
	r.nuser = 3;
	r.ips[0] = 0x401003;
	r.ips[1] = 0x401002;
	r.ips[2] = 0x401001;
	gj_feed_record(p, &r);
	r = rec(GPU_JOB_START, GPU_JOB_G_XE, 1250000, 0xffff888012340000ull, 31, 7, 0);
	r.engine = 5;
	r.pid = 77; /* the scheduler's worker, not the submitter */
	gj_feed_record(p, &r);
	r = rec(GPU_JOB_END, GPU_JOB_G_XE, 3250000, 0, 31, 7, 0);
	gj_feed_record(p, &r);
	CHECK_EQ_U64(store_count(s), before + 1);
	const struct store_rec *iv = store_at(s, store_count(s) - 1);
	CHECK_EQ_INT(iv->type, STORE_REC_GPU_INTERVAL);
	CHECK_EQ_U64(iv->ts_ns, 1250000);
	CHECK_EQ_U64(iv->dur_ns, 2000000);
	CHECK_EQ_INT(iv->pid, 4242);
	CHECK_EQ_INT(iv->tid, 4243);
	CHECK_EQ_INT(iv->uid, 1000);
	CHECK_EQ_INT(iv->aux32, 250000);
	CHECK_EQ_U64(iv->aux[0], 31);
	CHECK_EQ_U64(iv->aux[1], 0);
	CHECK_EQ_INT(iv->cpu, GPU_JOB_G_XE << 8 | 5);
	size_t len;
	const char *n = store_str(s, iv->name, &len);
	CHECK(n && len == 6 && !memcmp(n, "xe/ccs", 6));
	n = store_str(s, iv->comm, &len);
	CHECK(n && len == 7 && !memcmp(n, "trainer", 7));
	uint16_t nu = 0, nk = 0;
	const uint64_t *ips = store_stack(s, iv->stack, &nu, &nk);
	CHECK(ips && nu == 3 && nk == 0 && ips[0] == 0x401003);

	/* a dma_fence whose ops nothing names: kept, named by address */
	r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 5000000, 0xffff8880aaaa0000ull, 900, 1, 0);
	r.ops = 0x1234;
	gj_feed_record(p, &r);
	r = rec(GPU_JOB_END, GPU_JOB_G_FENCE, 5000400, 0xffff8880aaaa0000ull, 900, 1, 0);
	r.ops = 0x1234;
	gj_feed_record(p, &r);
	CHECK_EQ_U64(store_count(s), before + 2);
	iv = store_at(s, store_count(s) - 1);
	CHECK_EQ_U64(iv->dur_ns, 400);
	n = store_str(s, iv->name, &len);
	CHECK(n && len == 12 && !memcmp(n, "fence/0x1234", 12));
	CHECK_EQ_U64(c->events, 2);

	/* a submission left pending holds its references until free() */
	r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 6000000, 0, 901, 1, 0);
	gj_feed_record(p, &r);
	cJSON *st = cJSON_CreateObject();
	c->ops->status(c, st);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "pending")->valueint, 1);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "intervals")->valueint, 2);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "pending_max")->valueint, 64);
	cJSON_Delete(st);
}

static void test_collector(void)
{
	struct store_config sc = {.budget_bytes = 4u << 20};
	struct collector c;
	struct gpd g;
	uv_loop_t loop;
	int r;

	memset(&g, 0, sizeof(g));
	memset(&c, 0, sizeof(c));
	/* libuv keeps process-wide descriptors (its signal pipe) past
	 * uv_loop_close(): let a throwaway loop create them first */
	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	int fds = count_fds();
	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	config_defaults(&g.cfg);
	CHECK_EQ_U64(g.cfg.gpu_jobs_pending, GPU_JOB_PENDING_DEFAULT);
	g.cfg.gpu_jobs_pending = 64;
	g.loop = &loop;
	CHECK_EQ_INT(store_new(&sc, &g.store), 0);
	c.ops = &gpu_job_collector_ops;
	c.gpd = &g;

	CHECK_EQ_INT(c.ops->open(&c), 0);
	CHECK_EQ_INT(c.ops->start(&c), 0);
	cJSON *st = cJSON_CreateObject();
	c.ops->status(&c, st);
	char *txt = cJSON_Print(st);
	printf("%s: %s\n%s\n", collector_state_name(c.state), c.reason, txt);
	free(txt);
	/* dma_fence: the core kernel's tracepoints, attached for real */
	const cJSON *fence = group(st, "dma_fence");
	CHECK_STREQ(gstr(fence, "state"), "attached");
	CHECK(has_tp(fence, "dma_fence_init"));
	CHECK(has_tp(fence, "dma_fence_signaled"));
	CHECK_EQ_INT(c.state, COLLECTOR_ATTACHED);
	check_driver_group(st, "xe");
	check_driver_group(st, "i915");
	if (access("/sys/kernel/btf/xe", R_OK) < 0)
		CHECK(strstr(c.reason, "xe: no xe BTF (module not loaded)") != NULL);
	cJSON_Delete(st);

	/* the ring buffer is on the loop: a drain with nothing in it is fine */
	for (int i = 0; i < 5; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	feed_records(&c, g.store);

	c.ops->stop(&c);
	CHECK_EQ_INT(c.state, COLLECTOR_OFF);
	st = cJSON_CreateObject();
	c.ops->status(&c, st);
	CHECK_STREQ(gstr(group(st, "dma_fence"), "state"), "off");
	cJSON_Delete(st);
	/* and back on: the same instances attach again */
	CHECK_EQ_INT(c.ops->start(&c), 0);
	CHECK_EQ_INT(c.state, COLLECTOR_ATTACHED);
	st = cJSON_CreateObject();
	c.ops->status(&c, st);
	CHECK_STREQ(gstr(group(st, "dma_fence"), "state"), "attached");
	CHECK(has_tp(group(st, "dma_fence"), "dma_fence_init"));
	cJSON_Delete(st);
	c.ops->stop(&c);
	c.ops->free(&c);
	for (int i = 0; i < 200 && (r = uv_loop_close(&loop)) == UV_EBUSY; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		usleep(10000);
	}
	CHECK_EQ_INT(r, 0);
	/* every reference the collector held went back with free(): only the
	 * two intervals' records hold strings and stacks now */
	struct store_stats ss;
	store_get_stats(g.store, &ss);
	CHECK_EQ_U64(ss.records, 2);
	CHECK_EQ_U64(ss.stacks, 1);
	CHECK_EQ_U64(ss.strings, 3); /* "trainer", "xe/ccs", "fence/0x1234" */
	store_free(g.store);
	CHECK_EQ_INT(count_fds(), fds);
}

int main(void)
{
	if (geteuid() != 0)
		TEST_SKIP("needs root for BPF");
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		TEST_SKIP("no kernel BTF: tp_btf programs cannot load");
	RUN(test_collector);
	return test_summary();
}
