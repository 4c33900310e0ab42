// SPDX-License-Identifier: MIT
/*
 * The GPU job collector against the real kernel (suite 'bpf'): each
 * tracepoint group is loaded and attached for real where this kernel has
 * its BTF (dma_fence: core kernel), and reported unavailable with the
 * reason where it has not (xe / i915 without their modules). Nothing here
 * can make the kernel signal a fence (no GPU, no CONFIG_SW_SYNC on the
 * development VM), so the record side is then driven with the records the
 * BPF programs would send, through the real pairer into the real store.
 * Twice: with an unwinder (the programs load with stack copying, and a
 * submission carrying this test's own registers and stack must unwind to
 * its callers) and without (frame-pointer programs, frames as sent).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "collector.h"
#include "collect/gpu_job.h"
#include "collect/gpu_job_int.h"
#include "gpd.h"
#include "store/store.h"
#include "test.h"
#include "unwind/unwind.h"

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

/* Which ring records decoding takes: frames only in full records, never
 * more than the record holds. */
static void record_checks(void)
{
	struct gpu_job_rec r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 1, 2, 3, 4, GPU_JOB_F_USER);

	CHECK(gj_record_ok(&r, GPU_JOB_FULL_BYTES));
	CHECK(!gj_record_ok(&r, GPU_JOB_HDR_BYTES)); /* a full record cut short */
	r.nuser = 2;
	CHECK(gj_record_ok(&r, GPU_JOB_FULL_BYTES + 16));
	CHECK(!gj_record_ok(&r, GPU_JOB_FULL_BYTES + 15));
	r.nuser = GPU_JOB_MAX_FRAMES + 1;
	CHECK(!gj_record_ok(&r, sizeof(r) + 8));
	r = rec(GPU_JOB_END, GPU_JOB_G_FENCE, 1, 2, 3, 4, 0);
	CHECK(gj_record_ok(&r, GPU_JOB_HDR_BYTES));
	r.nuser = 1; /* frames in a header-only record */
	CHECK(!gj_record_ok(&r, sizeof(r)));
	r.nuser = 0;
	r.version = GPU_JOB_REC_VERSION - 1;
	CHECK(!gj_record_ok(&r, sizeof(r)));
}

#if defined(__x86_64__)
/* Where this thread's stack ends (the main thread's [stack] mapping). */
static uint64_t stack_end(uint64_t sp)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long long lo, hi, end = 0;
	char line[512];

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo && sp < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

struct own_stack {
	struct gpu_job_rec r;
	uint8_t stack[USTACK_DEFAULT_BYTES];
	uint64_t ret0; /* this function's return address: ips[1] */
};

/*
 * What ustack_take_task() sends for a SUBMIT, taken from this very call:
 * the registers here and the stack from sp upward (up to its end), copied
 * word by word without ASan's checks (the frames above hold its redzones).
 */
__attribute__((noinline, no_sanitize_address)) static void take_own_stack(struct own_stack *o)
{
	uint64_t ip, sp, bp, end;
	size_t len;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	end = stack_end(sp);
	len = end > sp && end - sp < sizeof(o->stack) ? (size_t)(end - sp) & ~(size_t)7
						      : sizeof(o->stack);
	for (size_t i = 0; i < len / 8; i++)
		((uint64_t *)o->stack)[i] = ((const volatile uint64_t *)(uintptr_t)sp)[i];
	o->r.us = (struct ustack_hdr){.ip = ip, .sp = sp, .bp = bp, .len = (uint32_t)len,
				      .flags = USTACK_F_REGS};
	o->ret0 = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* A SUBMIT with a stack copy (a ring record: the header, the registers,
 * no frames, the bytes) paired into an interval whose stack the unwinder
 * took from the copy: this test's own call chain. */
__attribute__((noinline)) static void feed_copied_stack(struct collector *c, struct store *s)
{
	struct gj_priv *p = c->priv;
	struct own_stack *o = calloc(1, sizeof(*o));
	size_t before = store_count(s), len;
	uint64_t ret1 = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uint16_t nu = 0, nk = 0;
	const uint64_t *ips;
	uint8_t *ring;

	CHECK(o != NULL);
	if (!o)
		return;
	o->r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 8000000, 0xffff8880bbbb0000ull, 902, 1,
		   GPU_JOB_F_USER);
	o->r.pid = (uint32_t)getpid();
	take_own_stack(o);
	/* laid out as the program sends it */
	len = GPU_JOB_FULL_BYTES + o->r.us.len;
	ring = malloc(len);
	CHECK(ring != NULL);
	if (!ring) {
		free(o);
		return;
	}
	memcpy(ring, &o->r, GPU_JOB_FULL_BYTES);
	memcpy(ring + GPU_JOB_FULL_BYTES, o->stack, o->r.us.len);
	CHECK(gj_record_ok(ring, len));
	gj_feed_record(p, (const struct gpu_job_rec *)ring, len);
	struct gpu_job_rec e = rec(GPU_JOB_END, GPU_JOB_G_FENCE, 8000500, 0xffff8880bbbb0000ull, 902,
				   1, 0);
	gj_feed_record(p, &e, GPU_JOB_HDR_BYTES);
	CHECK_EQ_U64(store_count(s), before + 1);
	ips = store_stack(s, store_at(s, store_count(s) - 1)->stack, &nu, &nk);
	CHECK(ips && nu >= 4 && nk == 0);
	if (ips && nu >= 4) {
		CHECK_EQ_U64(ips[0], o->r.us.ip);
		CHECK_EQ_U64(ips[1], o->ret0); /* feed_copied_stack */
		CHECK_EQ_U64(ips[2], ret1);    /* its caller */
		CHECK(ips[nu - 1] != UNWIND_IP_TRUNCATED);
	}

	/* A length the record does not hold: registers only, marked cut. */
	((struct gpu_job_rec *)ring)->obj = 0xffff8880cccc0000ull;
	((struct gpu_job_rec *)ring)->ctx = 903;
	gj_feed_record(p, (const struct gpu_job_rec *)ring, GPU_JOB_FULL_BYTES + 64);
	e.obj = 0xffff8880cccc0000ull;
	e.ctx = 903;
	gj_feed_record(p, &e, GPU_JOB_HDR_BYTES);
	CHECK_EQ_U64(store_count(s), before + 2);
	ips = store_stack(s, store_at(s, store_count(s) - 1)->stack, &nu, &nk);
	CHECK(ips && nu == 2 && ips[0] == o->r.us.ip && ips[1] == UNWIND_IP_TRUNCATED);
	free(ring);
	free(o);
}
#endif

/* The record side: xe's create -> run -> hw fence signal, the way the
 * programs report it, lands as one STORE_REC_GPU_INTERVAL. */
static void feed_records(struct collector *c, struct store *s)
{
	struct gj_priv *p = c->priv;
	size_t before = store_count(s);
	struct gpu_job_rec r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_XE, 1000000, 0xffff888012340000ull, 0,
				   0, GPU_JOB_F_OBJ_KEY | GPU_JOB_F_USER);
	r.engine = 5; /* XE_ENGINE_CLASS_COMPUTE */
	r.nuser = 3;
	r.ips[0] = 0x401003;
	r.ips[1] = 0x401002;
	r.ips[2] = 0x401001;
	gj_feed_record(p, &r, sizeof(r));
	r = rec(GPU_JOB_START, GPU_JOB_G_XE, 1250000, 0xffff888012340000ull, 31, 7, 0);
	r.engine = 5;
	r.pid = 77; /* the scheduler's worker, not the submitter */
	gj_feed_record(p, &r, sizeof(r));
	r = rec(GPU_JOB_END, GPU_JOB_G_XE, 3250000, 0, 31, 7, 0);
	gj_feed_record(p, &r, sizeof(r));
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
	gj_feed_record(p, &r, sizeof(r));
	r = rec(GPU_JOB_END, GPU_JOB_G_FENCE, 5000400, 0xffff8880aaaa0000ull, 900, 1, 0);
	r.ops = 0x1234;
	gj_feed_record(p, &r, sizeof(r));
	CHECK_EQ_U64(store_count(s), before + 2);
	iv = store_at(s, store_count(s) - 1);
	CHECK_EQ_U64(iv->dur_ns, 400);
	n = store_str(s, iv->name, &len);
	CHECK(n && len == 12 && !memcmp(n, "fence/0x1234", 12));
	CHECK_EQ_U64(c->events, 2);

	/* a submission left pending holds its references until free() */
	r = rec(GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 6000000, 0, 901, 1, 0);
	gj_feed_record(p, &r, sizeof(r));
	cJSON *st = cJSON_CreateObject();
	c->ops->status(c, st);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "pending")->valueint, 1);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "intervals")->valueint, 2);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "pending_max")->valueint, 64);
	/* the xe SUBMIT's frames were walked in BPF: with an unwinder there,
	 * that is the ring-pressure fallback */
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "stacks_fp_fallback")->valueint,
		     c->gpd->unwinder ? 1 : 0);
	cJSON_Delete(st);
}

static void test_collector(bool cfi)
{
	struct store_config sc = {.budget_bytes = 4u << 20};
	uint64_t want_records = 2, want_stacks = 1;
	struct collector c;
	/* static: the daemon's state holds the whole config, paths and all
	 * (tens of KiB), which on this frame would put main out of reach of
	 * the 16 KiB stack copy feed_copied_stack() unwinds */
	static struct gpd g;
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
	if (cfi)
		CHECK_EQ_INT(unwind_new(&(struct unwind_opts){0}, &g.unwinder), 0);
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
	/* loaded with stack copying exactly when there is an unwinder */
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "stack_bytes")->valueint, cfi ? (int)g.cfg.gpu_stack_bytes : 0);
	check_driver_group(st, "xe");
	check_driver_group(st, "i915");
	if (access("/sys/kernel/btf/xe", R_OK) < 0)
		CHECK(strstr(c.reason, "xe: no xe BTF (module not loaded)") != NULL);
	cJSON_Delete(st);

	/* the ring buffer is on the loop: a drain with nothing in it is fine */
	for (int i = 0; i < 5; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
	feed_records(&c, g.store);
#if defined(__x86_64__)
	if (cfi) {
		feed_copied_stack(&c, g.store);
		want_records += 2;
		want_stacks += 2;
	}
#endif

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
	CHECK_EQ_U64(ss.records, want_records);
	CHECK_EQ_U64(ss.stacks, want_stacks);
	/* "trainer", "xe/ccs", "fence/0x1234" (+ "fence/0x0") */
	CHECK_EQ_U64(ss.strings, cfi ? 4 : 3);
	store_free(g.store);
	unwind_free(g.unwinder);
	CHECK_EQ_INT(count_fds(), fds);
}

static void collector_with_unwinder(void)
{
	test_collector(true);
}

static void collector_frame_pointers(void)
{
	test_collector(false);
}

int main(void)
{
	if (geteuid() != 0)
		TEST_SKIP("needs root for BPF");
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		TEST_SKIP("no kernel BTF: tp_btf programs cannot load");
	RUN(record_checks);
	RUN(collector_with_unwinder);
	RUN(collector_frame_pointers);
	return test_summary();
}
