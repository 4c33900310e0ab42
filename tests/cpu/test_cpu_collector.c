// SPDX-License-Identifier: MIT
/*
 * The CPU sampler end to end: real BPF program, real perf events on every
 * online CPU, a real store. A child (this binary re-executed with --spin or
 * --syscalls) runs a known workload; the samples recorded for it must carry
 * its identity and stacks that resolve to the functions it runs.
 *
 * Built with -O1 -fno-omit-frame-pointer (the sampler unwinds user stacks by
 * frame pointer) and -rdynamic (so dladdr() can name the functions below).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "collector.h"
#include "collect/cpu.h"
#include "gpd.h"
#include "store/store.h"
#include "test.h"
#include "unwind/unwind.h"

#define TEST_FREQ_HZ 999
#define TEST_RUN_MS 1500
#define KERNEL_IP_MIN 0xffff800000000000ull /* x86-64 canonical upper half */

/* ---- the child's workload: non-static, noinline, exported (-rdynamic) ---- */

volatile uint64_t gpuprof_test_sink;
volatile int gpuprof_test_stop;
void gpuprof_test_spin_leaf(void);
void gpuprof_test_spin_mid(void);
void gpuprof_test_syscall_loop(void);

__attribute__((noinline)) void gpuprof_test_spin_leaf(void)
{
	/* A stack slot makes GCC build a frame here: with none, GCC 12 skips
	 * the push/mov of %rbp even under -fno-omit-frame-pointer, and the
	 * unwinder would miss the caller (gpuprof_test_spin_mid). */
	volatile uint64_t local = 0;

	while (!gpuprof_test_stop)
		gpuprof_test_sink = ++local;
}

__attribute__((noinline)) void gpuprof_test_spin_mid(void)
{
	gpuprof_test_spin_leaf();
	/* Work after the call keeps it a real call (no sibling-call jump), so
	 * the return address lies inside this function. */
	gpuprof_test_sink += 2;
}

__attribute__((noinline)) void gpuprof_test_syscall_loop(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	char c = 'x';

	while (!gpuprof_test_stop) {
		getppid();
		if (write(fd, &c, 1) < 0)
			break;
	}
	close(fd);
}

/* Child side: name the task, tell the parent where our code was loaded
 * (PIE: the parent's own copy sits elsewhere). main() then runs the
 * workload itself, so the expected chain is leaf <- mid <- main. */
static int child_setup(int ready_fd)
{
	uint64_t where = (uint64_t)(uintptr_t)&gpuprof_test_spin_leaf;

	prctl(PR_SET_NAME, "gpuprof-spin");
	if (write(ready_fd, &where, sizeof(where)) != sizeof(where))
		return -1;
	close(ready_fd);
	return 0;
}

/* ---- parent side ---- */

struct child {
	pid_t pid;
	int64_t delta; /* child address - our address, same executable */
};

static int spawn_child(const char *mode, struct child *ch)
{
	int fds[2];
	uint64_t where;
	char fdbuf[16];

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	ch->pid = fork();
	if (ch->pid < 0)
		return -errno;
	if (ch->pid == 0) {
		/* Keep the write end across exec for the ready message. */
		int wfd = dup(fds[1]);

		snprintf(fdbuf, sizeof(fdbuf), "%d", wfd);
		execl("/proc/self/exe", "test-cpu-collector", mode, fdbuf, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], &where, sizeof(where));
	close(fds[0]);
	if (n != sizeof(where))
		return -EIO;
	ch->delta = (int64_t)(where - (uint64_t)(uintptr_t)&gpuprof_test_spin_leaf);
	return 0;
}

static void reap_child(struct child *ch)
{
	kill(ch->pid, SIGKILL);
	waitpid(ch->pid, NULL, 0);
}

static const char *sym_of(const struct child *ch, uint64_t ip)
{
	Dl_info info;

	if (!dladdr((void *)(uintptr_t)(ip - (uint64_t)ch->delta), &info) || !info.dli_sname)
		return "?";
	return info.dli_sname;
}

struct harness {
	uv_loop_t loop;
	uv_timer_t stop_timer;
	struct gpd g;
	struct collector c;
	unsigned hook_calls_child;
	uint32_t hook_target;
};

static void on_pid(void *arg, uint32_t pid, bool exec)
{
	struct harness *h = arg;

	(void)exec;

	if (pid == h->hook_target)
		h->hook_calls_child++;
}

static void on_stop_timer(uv_timer_t *t)
{
	uv_stop(t->loop);
}

static void harness_init(struct harness *h, uint32_t freq)
{
	struct store_config sc = {.budget_bytes = 64u << 20};

	memset(h, 0, sizeof(*h));
	CHECK_EQ_INT(uv_loop_init(&h->loop), 0);
	config_defaults(&h->g.cfg);
	h->g.cfg.sample_freq_hz = freq;
	h->g.loop = &h->loop;
	CHECK_EQ_INT(store_new(&sc, &h->g.store), 0);
	h->c.ops = &cpu_collector_ops;
	h->c.gpd = &h->g;
}

/* Free the collector, then run the loop until every handle is closed: the
 * collector must leave nothing behind that keeps uv_loop_close() busy. */
static void harness_finish(struct harness *h)
{
	int r;

	h->c.ops->free(&h->c);
	CHECK(h->c.priv == NULL);
	if (h->stop_timer.loop)
		uv_close((uv_handle_t *)&h->stop_timer, NULL);
	for (int i = 0; i < 100 && (r = uv_loop_close(&h->loop)) == UV_EBUSY; i++)
		uv_run(&h->loop, UV_RUN_NOWAIT);
	CHECK_EQ_INT(r, 0);
	store_free(h->g.store);
}

static void open_or_skip(struct harness *h)
{
	CHECK_EQ_INT(h->c.ops->open(&h->c), 0);
	if (h->c.state == COLLECTOR_UNAVAILABLE && (!strncmp(h->c.reason, "BPF not supported", 17) ||
						     !strncmp(h->c.reason, "permission denied", 17)))
		TEST_SKIP("%s", h->c.reason);
	CHECK_EQ_INT(h->c.state, COLLECTOR_OFF);
	if (h->c.reason[0])
		TEST_FAIL_AT("open: %s", h->c.reason);
}

/* Run the collector for TEST_RUN_MS while the child works. */
static void sample_child(struct harness *h, struct child *ch)
{
	CHECK_EQ_INT(h->c.ops->start(&h->c), 0);
	CHECK_EQ_INT(h->c.state, COLLECTOR_ATTACHED);
	uv_timer_init(&h->loop, &h->stop_timer);
	uv_timer_start(&h->stop_timer, on_stop_timer, TEST_RUN_MS, 0);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	reap_child(ch);
	h->c.ops->stop(&h->c);
	CHECK_EQ_INT(h->c.state, COLLECTOR_OFF);
}

struct tally {
	size_t total, child, leaf0, chain_ok, with_kernel, kernel_ips_ok, comm_ok;
};

static void tally_store(struct harness *h, const struct child *ch, struct tally *t)
{
	struct store *s = h->g.store;
	struct store_stats st;
	size_t n = store_count(s);

	memset(t, 0, sizeof(*t));
	store_get_stats(s, &st);
	CHECK_EQ_U64(st.evicted, 0); /* otherwise counts below cannot match */
	for (size_t i = 0; i < n; i++) {
		const struct store_rec *r = store_at(s, i);
		uint16_t nu = 0, nk = 0;
		const uint64_t *ips;
		const char *comm;
		size_t len = 0;

		if (r->type != STORE_REC_CPU_SAMPLE)
			continue;
		t->total++;
		if (r->aux32 != 1 || !r->stack || !r->comm)
			TEST_FAIL_AT("record %zu: aux32 %u stack %u comm %u", i, r->aux32, r->stack,
				     r->comm);
		if (r->pid != (uint32_t)ch->pid)
			continue;
		t->child++;
		if (r->tid != (uint32_t)ch->pid || r->uid != getuid())
			TEST_FAIL_AT("child record: tid %u uid %u", r->tid, r->uid);
		comm = store_str(s, r->comm, &len);
		if (comm && len == strlen("gpuprof-spin") && !memcmp(comm, "gpuprof-spin", len))
			t->comm_ok++;
		ips = store_stack(s, r->stack, &nu, &nk);
		if (!ips)
			continue;
		/* Return addresses point after the call: resolve ip - 1. */
		if (nu >= 1 && !strcmp(sym_of(ch, ips[0]), "gpuprof_test_spin_leaf")) {
			t->leaf0++;
			if (nu >= 3 && !strcmp(sym_of(ch, ips[1] - 1), "gpuprof_test_spin_mid") &&
			    !strcmp(sym_of(ch, ips[2] - 1), "main"))
				t->chain_ok++;
			else if (getenv("TEST_VERBOSE"))
				for (uint16_t k = 0; k < nu; k++)
					fprintf(stderr, "  #%u %#" PRIx64 " %s\n", k, ips[k],
						sym_of(ch, ips[k] - (k > 0)));
		}
		if (nk > 0) {
			t->with_kernel++;
			bool ok = true;
			for (uint16_t k = 0; k < nk; k++)
				ok = ok && ips[nu + k] >= KERNEL_IP_MIN;
			t->kernel_ips_ok += ok;
		}
	}
}

static void test_spin_stacks(void)
{
	struct harness h;
	struct child ch;
	struct tally t;
	cJSON *obj;

	harness_init(&h, TEST_FREQ_HZ);
	open_or_skip(&h);
	CHECK_EQ_INT(spawn_child("--spin", &ch), 0);
	h.hook_target = (uint32_t)ch.pid;
	CHECK_EQ_INT(cpu_collector_set_pid_hook(&h.c, on_pid, &h), 0);
	sample_child(&h, &ch);

	tally_store(&h, &ch, &t);
	fprintf(stderr, "spin: %zu samples, %zu child, %zu leaf@0, %zu full chain, %zu comm\n",
		t.total, t.child, t.leaf0, t.chain_ok, t.comm_ok);
	CHECK_EQ_U64(t.total, h.c.events);
	/* 1.5 s of a spinning task at 999 Hz is ~1500 samples; leave room for
	 * a loaded 2-CPU machine. */
	CHECK(t.child >= 100);
	CHECK_EQ_U64(t.comm_ok, t.child);
	CHECK(t.leaf0 * 10 >= t.child * 8);
	CHECK(t.chain_ok * 10 >= t.leaf0 * 8);
	CHECK_EQ_INT(h.hook_calls_child, 1);

	obj = cJSON_CreateObject();
	h.c.ops->status(&h.c, obj);
	CHECK_EQ_INT(cJSON_GetObjectItem(obj, "frequency_hz")->valuedouble, TEST_FREQ_HZ);
	CHECK_EQ_INT(cJSON_GetObjectItem(obj, "cpus")->valuedouble, 0); /* stopped */
	CHECK_EQ_INT(cJSON_GetObjectItem(obj, "ringbuf_bytes")->valuedouble, 4 << 20);
	CHECK(cJSON_GetObjectItem(obj, "lost") != NULL);
	cJSON_Delete(obj);
	harness_finish(&h);
}

static void test_syscall_kernel_stacks(void)
{
	struct harness h;
	struct child ch;
	struct tally t;

	harness_init(&h, TEST_FREQ_HZ);
	open_or_skip(&h);
	CHECK_EQ_INT(spawn_child("--syscalls", &ch), 0);
	sample_child(&h, &ch);

	tally_store(&h, &ch, &t);
	fprintf(stderr, "syscalls: %zu samples, %zu child, %zu with kernel frames\n", t.total,
		t.child, t.with_kernel);
	CHECK_EQ_U64(t.total, h.c.events);
	CHECK(t.child >= 100);
	/* The loop spends most of its time in syscalls. */
	CHECK(t.with_kernel * 4 >= t.child);
	CHECK_EQ_U64(t.kernel_ips_ok, t.with_kernel);
	harness_finish(&h);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* While attached, status reports every online CPU; afterwards no perf event,
 * BPF or epoll fd is left open. */
static void test_status_attached(void)
{
	struct harness h;
	cJSON *obj;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int fds_before = count_fds();

	harness_init(&h, 49);
	open_or_skip(&h);
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	CHECK_EQ_INT(h.c.state, COLLECTOR_ATTACHED);
	obj = cJSON_CreateObject();
	h.c.ops->status(&h.c, obj);
	CHECK_EQ_INT(cJSON_GetObjectItem(obj, "cpus")->valuedouble, online);
	CHECK_EQ_INT(cJSON_GetObjectItem(obj, "frequency_hz")->valuedouble, 49);
	cJSON_Delete(obj);
	/* free without stop: free must stop first. */
	harness_finish(&h);
	CHECK_EQ_INT(count_fds(), fds_before);
}

/* A frequency above kernel.perf_event_max_sample_rate makes perf_event_open()
 * fail with EINVAL (perf_event_open(): attr.sample_freq check): the collector
 * must report it and leave the daemon running. */
static void test_unavailable_frequency(void)
{
	struct harness h;
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	long max = 0;

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ_INT(fscanf(f, "%ld", &max), 1);
	fclose(f);

	harness_init(&h, (uint32_t)max + 1);
	CHECK_EQ_INT(h.c.ops->open(&h.c), 0);
	if (!strncmp(h.c.reason, "BPF not supported", 17) ||
	    !strncmp(h.c.reason, "permission denied", 17))
		TEST_SKIP("%s", h.c.reason);
	CHECK_EQ_INT(h.c.state, COLLECTOR_UNAVAILABLE);
	CHECK(strstr(h.c.reason, "perf_event_max_sample_rate") != NULL);
	fprintf(stderr, "reason: %s\n", h.c.reason);
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	CHECK_EQ_INT(h.c.state, COLLECTOR_UNAVAILABLE);
	h.c.ops->stop(&h.c);
	harness_finish(&h);
}

#define BURST_CHILDREN 24
#define BURST_SPACING_MS 20
#define BURST_SPIN_MS 40

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A burst of short-lived processes (forked, each spinning BURST_SPIN_MS
 * after its turn) sampled with the stack copy on; the collector's
 * new-program wake-ups from status, and the run's length. */
static void burst_run(uint64_t gap_ns, double *woke, double *waited, uint64_t *ms)
{
	struct harness h;
	pid_t kids[BURST_CHILDREN];
	uint64_t t0;
	cJSON *obj, *nw;

	harness_init(&h, TEST_FREQ_HZ);
	/* with an unwinder the program copies stacks, and only then wakes
	 * the reader for a new program */
	CHECK_EQ_INT(unwind_new(NULL, &h.g.unwinder), 0);
	CHECK_EQ_INT(cpu_collector_set_new_wake_gap(&h.c, gap_ns), 0);
	open_or_skip(&h);
	t0 = mono_ms();
	CHECK_EQ_INT(h.c.ops->start(&h.c), 0);
	CHECK_EQ_INT(h.c.state, COLLECTOR_ATTACHED);
	for (int i = 0; i < BURST_CHILDREN; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			uint64_t until;

			usleep((useconds_t)i * BURST_SPACING_MS * 1000);
			until = mono_ms() + BURST_SPIN_MS;
			while (mono_ms() < until)
				gpuprof_test_sink++;
			_exit(0);
		}
	}
	uv_timer_init(&h.loop, &h.stop_timer);
	uv_timer_start(&h.stop_timer, on_stop_timer,
		       BURST_CHILDREN * BURST_SPACING_MS + BURST_SPIN_MS + 300, 0);
	uv_run(&h.loop, UV_RUN_DEFAULT);
	for (int i = 0; i < BURST_CHILDREN; i++)
		if (kids[i] > 0)
			waitpid(kids[i], NULL, 0);
	obj = cJSON_CreateObject();
	h.c.ops->status(&h.c, obj);
	*ms = mono_ms() - t0;
	nw = cJSON_GetObjectItem(obj, "new_program_wakeups");
	CHECK(nw != NULL);
	*woke = nw ? cJSON_GetNumberValue(cJSON_GetObjectItem(nw, "woke")) : -1;
	*waited = nw ? cJSON_GetNumberValue(cJSON_GetObjectItem(nw, "waited_for_drain")) : -1;
	cJSON_Delete(obj);
	h.c.ops->stop(&h.c);
	unwind_free(h.g.unwinder);
	h.g.unwinder = NULL;
	harness_finish(&h);
}

/*
 * A new program's first sample wakes the loop (its mappings read while it
 * lives), but at most once per drain period for all of them: the others
 * wait for the drain, and status counts them. With a gap of 0, one wake-up
 * for each, as before. Other processes on the host are new programs too:
 * the bounds hold whatever else runs.
 */
static void test_new_program_wakeups(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	double woke, waited;
	uint64_t ms, bound;

	burst_run(0, &woke, &waited, &ms);
	fprintf(stderr, "gap 0: %.0f woke, %.0f waited in %llu ms\n", woke, waited,
		(unsigned long long)ms);
	CHECK_EQ_INT((int)waited, 0);
	CHECK(woke >= BURST_CHILDREN / 2);

	burst_run(250000000ull, &woke, &waited, &ms);
	/* one per 250 ms; CPUs racing for the same opening may each take it */
	bound = (ms / 250 + 1) * (uint64_t)(online > 0 ? online : 1);
	fprintf(stderr, "gap 250 ms: %.0f woke (at most %llu), %.0f waited in %llu ms\n", woke,
		(unsigned long long)bound, waited, (unsigned long long)ms);
	CHECK(woke >= 1);
	CHECK(woke <= (double)bound);
	CHECK(woke + waited >= BURST_CHILDREN / 2);
	CHECK(waited >= 1);
}

static void test_cpulist(void)
{
	bool m[8];

	CHECK_EQ_INT(cpu_parse_cpulist("0-1\n", m, 8), 2);
	CHECK(m[0] && m[1] && !m[2]);
	CHECK_EQ_INT(cpu_parse_cpulist("0,2-3,7\n", m, 8), 4);
	CHECK(m[0] && !m[1] && m[2] && m[3] && !m[4] && m[7]);
	CHECK_EQ_INT(cpu_parse_cpulist("5-20", m, 8), 3); /* clipped to n */
	CHECK_EQ_INT(cpu_parse_cpulist("", m, 8), 0);
	CHECK_EQ_INT(cpu_parse_cpulist("3-1", m, 8), -EINVAL);
	CHECK_EQ_INT(cpu_parse_cpulist("a", m, 8), -EINVAL);
	CHECK_EQ_INT(cpu_parse_cpulist("1;2", m, 8), -EINVAL);
}

int main(int argc, char **argv)
{
	if (argc == 3 && argv[1][0] == '-') {
		if (child_setup(atoi(argv[2])) < 0)
			return 1;
		if (!strcmp(argv[1], "--spin"))
			gpuprof_test_spin_mid();
		else
			gpuprof_test_syscall_loop();
		return 0;
	}

	RUN(test_cpulist);
	if (geteuid() != 0)
		TEST_SKIP("needs root (perf_event_open of every CPU, BPF load)");
	RUN(test_unavailable_frequency);
	RUN(test_status_attached);
	RUN(test_spin_stacks);
	RUN(test_syscall_kernel_stacks);
	RUN(test_new_program_wakeups);
	return test_summary();
}
