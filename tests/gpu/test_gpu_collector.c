// SPDX-License-Identifier: MIT
/*
 * The GPU launch collector against the real kernel (suite 'bpf'): real
 * library watcher, real uprobes on the fake libcuda.so.1 (tests/gpu), a
 * real store. gpu_app launches known kernels a known number of times; the
 * store must hold exactly those launches with names, geometry, stream,
 * API, correlation ids and one call site per launching function; when
 * gpu_app exits the library's probes must come off. Twice: with stack
 * sampling (gpu.stack_sample 32, the narrow mmap hook when the kernel has
 * it: every launch still has its full stack) and without (every stack
 * walked, the sys_exit watcher). A third run puts gpu_app in a cgroup of its
 * own: every launch must carry that cgroup's path, and so must
 * the kernels NEO's USDT reports to the kernel hook. The sampled run and the
 * cgroup run copy stacks for the CFI unwinder (an unwinder in the harness,
 * as the daemon has by default): every stack taken must unwind to its end
 * and find its call site without the frame-pointer fix-up; the other run has
 * no unwinder, so the program walks frame pointers.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "collector.h"
#include "collect/gpu_launch.h"
#include "gpd.h"
#include "gpu_launch_abi.h" /* enum gpu_api */
#include "cgtest.h"
#include "store/store.h"
#include "test.h"
#include "uvtest.h"
#include "unwind/unwind.h"
#include "zebin_usdt.h"

#define N 50

struct harness {
	uv_loop_t loop;
	struct gpd g;
	struct collector c;
};

static cJSON *status(struct harness *h)
{
	cJSON *o = cJSON_CreateObject();

	h->c.ops->status(&h->c, o);
	return o;
}

static int probed_libraries(struct harness *h)
{
	cJSON *o = status(h), *l;
	int n = 0;

	cJSON_ArrayForEach(l, cJSON_GetObjectItem(o, "libraries"))
		n += cJSON_GetObjectItem(l, "probes")->valueint > 0;
	cJSON_Delete(o);
	return n;
}

/* A daemon of its own for the launch collector: loop, default config, a
 * store of budget bytes and, with cfi, an unwinder. */
static void harness_init(struct harness *h, size_t budget, bool cfi)
{
	struct store_config sc = {.budget_bytes = budget};

	memset(h, 0, sizeof(*h));
	CHECK_EQ_INT(uv_loop_init(&h->loop), 0);
	config_defaults(&h->g.cfg);
	h->g.loop = &h->loop;
	CHECK_EQ_INT(store_new(&sc, &h->g.store), 0);
	if (cfi)
		CHECK_EQ_INT(unwind_new(&(struct unwind_opts){0}, &h->g.unwinder), 0);
	h->c.ops = &gpu_launch_collector_ops;
	h->c.gpd = &h->g;
}

/* Free the collector and close the loop as the daemon does: the probes
 * of a library released a moment ago are still being removed on the
 * thread pool (an RCU grace period each), and the loop waits for that. */
static int teardown(struct harness *h)
{
	h->c.ops->free(&h->c);
	return uvtest_loop_finish(&h->loop, 60000);
}

/* Run the loop in slices until cond() holds or ms pass. */
static bool run_until(struct harness *h, bool (*cond)(struct harness *), int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		uv_run(&h->loop, UV_RUN_NOWAIT);
		if (cond(h))
			return true;
		usleep(10000);
	}
	return cond(h);
}

static bool have_lib(struct harness *h)
{
	return probed_libraries(h) > 0;
}

static bool no_lib(struct harness *h)
{
	return probed_libraries(h) == 0;
}

static bool all_launches(struct harness *h)
{
	return h->c.events >= N + 2 * N + 3;
}

static double num(cJSON *o, const char *key)
{
	cJSON *v = cJSON_GetObjectItem(o, key);

	CHECK(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* The watcher and stack-sampling figures of status. */
static void check_status(struct harness *h, unsigned watcher)
{
	cJSON *o = status(h);
	const char *hook = cJSON_GetStringValue(cJSON_GetObjectItem(o, "mmap_hook"));
	double taken = num(o, "stacks_taken"), reused = num(o, "stacks_reused");

	CHECK(hook);
	if (watcher == CONFIG_GPU_WATCHER_SYS_EXIT) {
		CHECK_STREQ(hook, "tp_btf/sys_exit");
		CHECK(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(o, "mmap_hook_note")),
			     "configuration"));
	} else if (strcmp(hook, "tp_btf/mmap_lock_released")) {
		/* Fallen back: status says why. */
		CHECK_STREQ(hook, "tp_btf/sys_exit");
		CHECK(cJSON_GetObjectItem(o, "mmap_hook_note"));
	}
	CHECK_EQ_U64((uint64_t)num(o, "stack_sample"), h->g.cfg.gpu_stack_sample);
	CHECK_EQ_U64((uint64_t)(taken + reused), h->c.events);
	CHECK_EQ_U64((uint64_t)num(o, "stack_misses"), 0);
	if (h->g.cfg.gpu_stack_sample == 1) {
		CHECK_EQ_U64((uint64_t)reused, 0);
	} else {
		/* 3 call sites, first launch and every 32nd at each walked:
		 * saxpy 50 -> 2, reduce-ex 100 -> 4, reduce 3 -> 1. */
		CHECK_EQ_U64((uint64_t)taken, 2 + 4 + 1);
	}
	if (h->g.unwinder) {
		cJSON *u = cJSON_CreateObject();

		CHECK_EQ_U64((uint64_t)num(o, "stack_bytes"), h->g.cfg.gpu_stack_bytes);
		/* At the entry probe the CFI row gives the return address. */
		CHECK_EQ_U64((uint64_t)num(o, "callers_inserted"), 0);
		unwind_status(h->g.unwinder, u, true);
		CHECK_EQ_U64((uint64_t)num(u, "samples"), (uint64_t)taken);
		CHECK_EQ_U64((uint64_t)num(u, "complete"), (uint64_t)taken);
		CHECK(num(u, "frames_cfi") > 0);
		printf("CFI: %.0f stacks unwound to their end, %.0f stack bytes each\n",
		       num(u, "complete"), num(u, "stack_bytes_per_sample"));
		cJSON_Delete(u);
	} else {
		CHECK_EQ_U64((uint64_t)num(o, "stack_bytes"), 0);
	}
	printf("mmap hook %s, stack_sample %u: %.0f stacks walked, %.0f reused\n", hook,
	       h->g.cfg.gpu_stack_sample, taken, reused);
	cJSON_Delete(o);
}

/* Start app on runtime rt and library lib in cg (NULL: where this test
 * runs): the child enters the cgroup before exec, so every launch happens
 * inside it. Returns its pid once it says "ready", with *in its stdin
 * ("go" starts the launches, EOF ends it) and *from its stdout. */
static pid_t spawn_app(const struct cgtest *cg, const char *app, const char *rt, const char *lib,
		       int *in, FILE **from)
{
	int ip[2], op[2];
	char line[64];
	pid_t pid;

	CHECK_EQ_INT(pipe(ip), 0);
	CHECK_EQ_INT(pipe(op), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(ip[0], 0);
		dup2(op[1], 1);
		close(ip[1]);
		close(op[0]);
		if (cg && cgtest_enter(cg) < 0)
			_exit(126);
		execl(app, app, rt, lib, "50", "--hold", (char *)NULL);
		_exit(127);
	}
	close(ip[0]);
	close(op[1]);
	*in = ip[1];
	*from = fdopen(op[0], "r");
	CHECK(fgets(line, sizeof(line), *from) && !strncmp(line, "ready", 5));
	return pid;
}

/* The launch's cgroup path is cg's (with cg). */
static void check_cgroup(struct store *s, const struct store_rec *rec, const struct cgtest *cg)
{
	size_t len = 0;
	const char *p = store_rec_cgroup(rec) ? store_str(s, store_rec_cgroup(rec), &len) : NULL;

	if (!cg)
		return;
	CHECK(p && len == strlen(cg->rel) && !memcmp(p, cg->rel, len));
}

/* cfi: the harness has an unwinder, so the program copies stacks. */
static void run(uint32_t stack_sample, unsigned watcher, const struct cgtest *cg, bool cfi)
{
	const char *app = getenv("GPU_APP"), *lib = getenv("FAKE_CUDA");
	struct harness h;
	char line[64];
	int in, r;
	pid_t pid;
	FILE *from;

	CHECK(app && lib);
	harness_init(&h, 64u << 20, cfi);
	h.g.cfg.gpu_stack_sample = stack_sample;
	h.g.cfg.gpu_watcher = watcher;

	CHECK_EQ_INT(h.c.ops->open(&h.c), 0);
	if (h.c.state == COLLECTOR_UNAVAILABLE)
		TEST_SKIP("%s", h.c.reason);
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	if (h.c.state == COLLECTOR_UNAVAILABLE && strstr(h.c.reason, "uprobe"))
		TEST_SKIP("%s", h.c.reason);
	CHECK_EQ_INT(h.c.state, COLLECTOR_ATTACHED);

	/* gpu_app starts after the collector: the mmap watcher finds it. */
	pid = spawn_app(cg, app, "cuda", lib, &in, &from);
	CHECK(run_until(&h, have_lib, 5000));
	CHECK_EQ_INT((int)write(in, "go\n", 3), 3);
	CHECK(fgets(line, sizeof(line), from) && !strncmp(line, "done", 4));
	CHECK(run_until(&h, all_launches, 5000));
	CHECK_EQ_U64(h.c.events, (uint64_t)(N + 2 * N + 3));

	/* What the store holds. */
	unsigned saxpy = 0, reduce = 0, reduce_ex = 0;
	uint64_t last_corr = 0, saxpy_site = 0, reduce_sites[2] = {0};
	for (size_t i = 0; i < store_count(h.g.store); i++) {
		const struct store_rec *rec = store_at(h.g.store, i);
		size_t len, klen;
		const char *s;
		uint16_t nu = 0, nk = 0;
		const uint64_t *ips;

		if (rec->type != STORE_REC_GPU_LAUNCH)
			continue;
		CHECK_EQ_INT((int)rec->pid, (int)pid);
		check_cgroup(h.g.store, rec, cg);
		CHECK(rec->aux[1] > last_corr); /* correlation ids increase */
		last_corr = rec->aux[1];
		s = store_str(h.g.store, rec->name, &len);
		CHECK(s);
		klen = gpu_launch_name_len(s, len);
		ips = store_stack(h.g.store, rec->stack, &nu, &nk);
		CHECK(ips && nu >= 3 && nk == 0);
		CHECK(ips[nu - 1] != UNWIND_IP_TRUNCATED);
		if (klen == 16 && !memcmp(s, "gpuprof_cu_saxpy", 16)) {
			saxpy++;
			CHECK_STREQ(s + klen + 1, "grid=128,2,1 block=256,1,1");
			CHECK_EQ_U64(rec->aux[0], 0x5eedull);
			CHECK_EQ_INT(rec->aux32, GPU_API_CU_LAUNCH);
			if (!saxpy_site)
				saxpy_site = ips[0];
			CHECK_EQ_U64(ips[0], saxpy_site); /* one call site */
		} else if (klen == 17 && !memcmp(s, "gpuprof_cu_reduce", 17)) {
			reduce++;
			if (rec->aux32 == GPU_API_CU_LAUNCH_EX) {
				reduce_ex++;
				CHECK_STREQ(s + klen + 1, "grid=40,30,20 block=8,8,4");
				CHECK_EQ_U64(rec->aux[0], 0xabcull);
			}
			if (!reduce_sites[0] || reduce_sites[0] == ips[0])
				reduce_sites[0] = ips[0];
			else if (!reduce_sites[1] || reduce_sites[1] == ips[0])
				reduce_sites[1] = ips[0];
			else
				TEST_FAIL_AT("a third call site for reduce: %#lx", (unsigned long)ips[0]);
		} else {
			TEST_FAIL_AT("unexpected kernel '%.*s'", (int)klen, s);
		}
	}
	CHECK_EQ_INT(saxpy, N);
	CHECK_EQ_INT(reduce, 2 * N + 3);
	CHECK_EQ_INT(reduce_ex, 2 * N);
	CHECK(reduce_sites[1] && reduce_sites[0] != saxpy_site && reduce_sites[1] != saxpy_site);
	check_status(&h, watcher);

	/* Exit: the library's last user is gone, so are its probes. */
	close(in);
	CHECK_EQ_INT(waitpid(pid, &r, 0), pid);
	CHECK(WIFEXITED(r) && WEXITSTATUS(r) == 0);
	fclose(from);
	CHECK(run_until(&h, no_lib, 5000));
	CHECK(strstr(h.c.reason, "idle") != NULL);

	/* Its probes are usually still coming off on the thread pool: the
	 * teardown must wait for that job, however long it takes. */
	cJSON *o = status(&h);
	double jobs = num(o, "jobs_in_flight");
	cJSON_Delete(o);
	uint64_t t0 = uv_hrtime();
	CHECK_EQ_INT(teardown(&h), 0);
	printf("collector freed with %.0f probe job(s) in flight, loop closed %.0f ms later\n",
	       jobs, (double)(uv_hrtime() - t0) / 1e6);
	store_free(h.g.store);
	unwind_free(h.g.unwinder);
	printf("ok: %u launches, 3 call sites, probes removed on exit\n", saxpy + reduce);
}

/* ---- NEO's launch USDT feeds the kernel hook ---- */

#define ZE_LAUNCHES (N + 3 + 2 * N + 2) /* gpu_app.c run_ze */

static struct {
	unsigned calls, alpha, beta, bad;
	uint64_t alpha_addr, beta_addr;
	pid_t pid;
	const struct cgtest *cg; /* the cgroup gpu_app runs in, NULL: ours */
	bool cfi;		 /* stacks unwound by CFI: each must reach its end */
} kh;

static void kernel_hook(void *arg, const struct gpu_launch_kernel *k)
{
	uint64_t *addr;

	(void)arg;
	kh.calls++;
	if (!k->name || k->size != 4096 || k->iba != 0xfe0000000000ull ||
	    k->gpu_addr < 0xff0000000000ull || k->gpu_addr >= 0xff0001000000ull ||
	    k->pid != (uint32_t)kh.pid || !k->comm || !k->comm[0] ||
	    (kh.cg && (!k->cgroup || strcmp(k->cgroup, kh.cg->rel))) ||
	    (kh.cfi && (k->nustack < 3 || k->ustack[k->nustack - 1] == UNWIND_IP_TRUNCATED))) {
		kh.bad++;
		return;
	}
	if (!strcmp(k->name, "gpuprof_ze_alpha"))
		kh.alpha++, addr = &kh.alpha_addr;
	else if (!strcmp(k->name, "gpuprof_ze_beta"))
		kh.beta++, addr = &kh.beta_addr;
	else
		return (void)kh.bad++;
	if (*addr && *addr != k->gpu_addr)
		kh.bad++; /* one kernel, one address */
	*addr = k->gpu_addr;
}

static bool all_ze_launches(struct harness *h)
{
	return h->c.events >= ZE_LAUNCHES;
}

/* NEO's library carries the launch USDT; launches before its attach is
 * applied go to the loader's uprobes and never reach the kernel hook. The
 * loader's probes may land first on a loaded machine: wait for NEO's. */
static bool usdt_attached(struct harness *h)
{
	cJSON *o = status(h), *l;
	bool usdt = false, attaching = false;

	cJSON_ArrayForEach(l, cJSON_GetObjectItem(o, "libraries")) {
		usdt |= cJSON_IsTrue(cJSON_GetObjectItem(l, "usdt"));
		attaching |= cJSON_IsTrue(cJSON_GetObjectItem(l, "attaching"));
	}
	cJSON_Delete(o);
	return usdt && !attaching;
}

static bool zebin_handled(struct harness *h)
{
	return zebin_usdt_done(&h->c);
}

/* The USDT fires mid-function: with cfi its stacks unwind from there. */
static void usdt_kernels_reach_the_hook(const struct cgtest *cg, bool cfi)
{
	const char *app = getenv("GPU_APP"), *lib = getenv("FAKE_ZE_USDT");
	struct harness h;
	char line[64];
	int in, r;
	FILE *from;

	CHECK(app && lib);
	memset(&kh, 0, sizeof(kh));
	kh.cg = cg;
	kh.cfi = cfi;
	harness_init(&h, 16u << 20, cfi);
	CHECK_EQ_INT(gpu_launch_set_kernel_hook(&h.c, kernel_hook, NULL), 0);
	CHECK_EQ_INT(zebin_usdt_setup(&h.c), 0); /* and NEO's compile_kernel USDT */
	CHECK_EQ_INT(h.c.ops->open(&h.c), 0);
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	CHECK_EQ_INT(h.c.state, COLLECTOR_ATTACHED);
	kh.pid = spawn_app(cg, app, "ze", lib, &in, &from);
	CHECK(run_until(&h, usdt_attached, 10000));
	CHECK_EQ_INT((int)write(in, "go\n", 3), 3);
	CHECK(fgets(line, sizeof(line), from) && !strncmp(line, "done", 4));
	CHECK(run_until(&h, all_ze_launches, 5000));
	CHECK_EQ_U64(h.c.events, ZE_LAUNCHES);
	CHECK_EQ_INT(kh.bad, 0);
	CHECK_EQ_INT(kh.calls, ZE_LAUNCHES);
	CHECK_EQ_INT(kh.alpha, N + 3);
	CHECK_EQ_INT(kh.beta, 2 * N + 2);
	CHECK(kh.alpha_addr != kh.beta_addr);
	CHECK(run_until(&h, zebin_handled, 5000)); /* read while the child lives */
	CHECK_EQ_INT(zebin_usdt_check(&h.c, (uint32_t)kh.pid), 0);
	close(in);
	CHECK_EQ_INT(waitpid(kh.pid, &r, 0), kh.pid);
	fclose(from);
	CHECK(run_until(&h, no_lib, 5000));
	CHECK_EQ_INT(teardown(&h), 0);
	store_free(h.g.store);
	unwind_free(h.g.unwinder);
	printf("ok: %u USDT launches reached the kernel hook with address, size, IBA, name%s%s%s\n",
	       kh.calls, cg ? ", cgroup " : "", cg ? cg->rel : "",
	       cfi ? ", whole stacks by CFI" : "");
}

static bool attaching(struct harness *h)
{
	cJSON *o = status(h), *l;
	bool r = false;

	cJSON_ArrayForEach(l, cJSON_GetObjectItem(o, "libraries"))
		r |= cJSON_IsTrue(cJSON_GetObjectItem(l, "attaching"));
	cJSON_Delete(o);
	return r;
}

/* Probes attach on the thread pool: the collector freed while a library's
 * attach is in flight must leave neither a leak nor a use after free
 * (ASan) once that job ends. Returns whether the window was caught. */
static bool free_while_attaching(void)
{
	const char *app = getenv("GPU_APP"), *lib = getenv("FAKE_CUDA");
	struct harness h;
	bool caught = false;
	int in[2], r;
	pid_t pid;

	harness_init(&h, 16u << 20, false);
	CHECK_EQ_INT(h.c.ops->open(&h.c), 0);
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	CHECK_EQ_INT(h.c.state, COLLECTOR_ATTACHED);
	CHECK_EQ_INT(pipe(in), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		close(in[1]);
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(app, app, "cuda", lib, "1", "--hold", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	/* No sleeping between turns: the attach takes milliseconds. */
	for (int i = 0; i < 2000000 && !caught && !probed_libraries(&h); i++) {
		uv_run(&h.loop, UV_RUN_NOWAIT);
		caught = attaching(&h);
	}
	CHECK_EQ_INT(teardown(&h), 0);
	close(in[1]);
	CHECK_EQ_INT(waitpid(pid, &r, 0), pid);
	store_free(h.g.store);
	printf("collector freed %s an attach in flight\n", caught ? "with" : "without");
	return caught;
}

static void sampled_stacks_narrow_watcher(void)
{
	run(32, CONFIG_GPU_WATCHER_AUTO, NULL, true);
}

static void every_stack_sys_exit_watcher(void)
{
	run(1, CONFIG_GPU_WATCHER_SYS_EXIT, NULL, false);
}

/* Launches from a cgroup of their own carry its path, CUDA entry points
 * and NEO's USDT alike. */
static void launches_in_a_cgroup(void)
{
	struct cgtest t;
	char why[256];

	if (cgtest_make(&t, "gpu", why, sizeof(why)) < 0) {
		printf("skipped: %s\n", why);
		return;
	}
	run(1, CONFIG_GPU_WATCHER_AUTO, &t, true);
	usdt_kernels_reach_the_hook(&t, true);
	CHECK_EQ_INT(cgtest_remove(&t), 0);
	printf("ok: launches in %s carried its path\n", t.rel);
}

static void usdt_kernels(void)
{
	usdt_kernels_reach_the_hook(NULL, true);
}

static void freed_while_attaching(void)
{
	bool caught = false;

	/* The window is milliseconds wide; a loaded machine may need tries. */
	for (int i = 0; i < 5 && !caught; i++)
		caught = free_while_attaching();
	CHECK(caught);
}

int main(void)
{
	if (geteuid() != 0)
		TEST_SKIP("needs root for BPF and uprobes");
	RUN(sampled_stacks_narrow_watcher);
	RUN(every_stack_sys_exit_watcher);
	RUN(usdt_kernels);
	RUN(launches_in_a_cgroup);
	RUN(freed_while_attaching);
	return test_summary();
}
