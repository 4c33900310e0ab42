// SPDX-License-Identifier: MIT
/*
 * What the always-on CPU sampler costs: run the collector on its own event
 * loop, as gpuprofd does, for N seconds (default 20) at F Hz (default 49)
 * on all CPUs while one child runs (a spinning loop, or COMMAND: e.g. one
 * of tests/programs/unwind, for stacks without frame pointers), then print
 *
 *  - the BPF program's cost, from the kernel's run-time statistics
 *    (BPF_ENABLE_STATS): ns per run and % of one core, paid in the
 *    interrupted tasks;
 *  - the daemon side's CPU time (getrusage, CLOCK_PROCESS_CPUTIME_ID and
 *    /proc/PID/stat, which is what top shows) per sample and as % of one
 *    core: draining the ring, interning, unwinding where the collector
 *    unwinds in userspace;
 *  - the added cost per sample (BPF + daemon side) and the overall
 *    overhead as % of one core;
 *  - bytes per sample in the BPF ring, measured from the ring's consumer
 *    position (8-byte record header and padding included), whatever the
 *    record layout;
 *  - the collector's "unwind" status object, when it has one.
 *
 *   bench-cpu-overhead [seconds] [frequency_hz] [--stack-bytes N] [--python]
 *                      [--copies N] [--warmup S] [--churn WORKERS]
 *                      [--churn-script PATH] [--maps-text] [--no-shared-maps]
 *                      [--new-wake-gap-ms MS]
 *                      [-- COMMAND [ARGS...]]
 *
 * --stack-bytes N: the user stack copied per sample for the CFI unwinder
 * (default 16384, the daemon's; 0 = frame pointers in BPF, no unwinder).
 * --python: Python frames on (sampling.python, the daemon's default): BPF
 * reads each sample's frame chain of CPython processes and the collector
 * splices them in; run it with a Python COMMAND, e.g.
 *   -- python3 tests/pyframes/busy.py 60 deep 50
 * and without the flag for the same run's cost without Python frames.
 * It then also prints how many samples had Python frames: the BPF and daemon-side figures are means over every task
 * sampled on the host, so the added cost per Python sample is the
 * difference of the two runs' totals over those samples (docs/pyframes.md).
 * --copies N: N children running COMMAND (or spinning), so that the
 * workload fills more of the CPUs' samples on a shared machine.
 * --warmup S: run the collector S seconds before the measured window: the
 * unwinder's first load of every sampled process's objects (hundreds of
 * microseconds each) and the recognition of Python processes are a
 * start-up cost, which a short window from a cold start mixes into the
 * steady state an always-on daemon runs in.
 * --churn WORKERS: after that window, a second one (after its own warm-up)
 * while bench/cpu/churn.sh (or --churn-script PATH) runs WORKERS loops of
 * short-lived processes -- compilers, a shell pipeline, python3 -c -- as a
 * build host or CI runner has them: nearly every sample is then of a
 * process the unwinder has never seen. A table of both windows ends the
 * report: % of one core, daemon-side time per sample, the window's mean
 * walk, p50/p90 of the last 1024 walks, mappings reads per second and the
 * load average over the window.
 * --maps-text: the unwinder reads /proc/PID/maps as text even where
 * PROCMAP_QUERY works (what kernels before 6.11 cost).
 * --no-symbolizer: leave out what gpuprofd does with each new pid besides
 * unwinding (daemon/hooks.c: the symbolizer snapshots its mappings on the
 * loop), which the bench otherwise does as the daemon does.
 * --no-shared-maps: the unwinder and the Python registry read a new
 * process's mappings themselves rather than taking the symbolizer's read
 * of an instant before (as daemon/hooks.c wires them): what a new process
 * cost before they shared.
 * --new-wake-gap-ms MS: least time between two wake-ups of the loop for a
 * new program's first sample (default 50; 0: one for each new program, as
 * before).
 *
 * Symbolization itself is not in these figures: it runs once per capture,
 * on a worker thread (bench/folded measures it); the symbolizer's snapshot
 * of each new process's mappings, taken on the loop, is. Needs root. Build without
 * sanitizers for figures worth quoting.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cjson/cJSON.h>
#include <uv.h>

#include "collector.h"
#include "collect/cpu.h"
#include "cpu_sample_abi.h"
#include "gpd.h"
#include "store/store.h"
#include "pyframes/pyreg.h"
#include "sym/sym.h"
#include "unwind/unwind.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Same figure at nanosecond resolution, as a cross-check of getrusage(). */
static double cputime_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* utime + stime of pid from /proc/PID/stat (fields 14 and 15, clock
 * ticks): the figure top and ps show for a daemon. -1 when unreadable. */
static double proc_stat_cpu_s(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long ut, st;
	const char *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields restart after the last ')' */
	p = strrchr(buf, ')');
	if (!p ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Estimate from the store when the ring cannot be mapped: 8-byte ring
 * header, record header, captured frames (records are variable-length). */
static double mean_record_bytes(const struct store *s)
{
	size_t n = store_count(s), cnt = 0;
	double sum = 0;

	for (size_t i = 0; i < n; i++) {
		const struct store_rec *r = store_at(s, i);
		uint16_t nu = 0, nk = 0;

		if (r->type != STORE_REC_CPU_SAMPLE || !store_stack(s, r->stack, &nu, &nk))
			continue;
		sum += 8 + CPU_SAMPLE_HDR_BYTES + 8.0 * (nu + nk);
		cnt++;
	}
	return cnt ? sum / (double)cnt : 0;
}

/* Whether this process holds a file descriptor of BPF program id: other
 * daemons and benches on a shared host load programs of the same name. */
static bool prog_held_by_self(uint32_t id)
{
	char path[300], line[128];
	bool held = false;
	struct dirent *de;
	DIR *d = opendir("/proc/self/fdinfo");

	if (!d)
		return true; /* cannot tell: take the newest, as before */
	while (!held && (de = readdir(d))) {
		FILE *f;
		unsigned v;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "prog_id: %u", &v) == 1 && v == id) {
				held = true;
				break;
			}
		fclose(f);
	}
	closedir(d);
	return held;
}

/* The newest loaded perf_event program named "cpu_sample" that this
 * process holds: ours. */
static int find_prog(struct bpf_prog_info *out)
{
	uint32_t id = 0, best = 0;

	while (!bpf_prog_get_next_id(id, &id)) {
		struct bpf_prog_info info = {0};
		uint32_t len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len) ||
		    info.type != BPF_PROG_TYPE_PERF_EVENT || strcmp(info.name, "cpu_sample")) {
			close(fd);
			continue;
		}
		/* closed first: this fd would make any program look held */
		close(fd);
		if (id > best && prog_held_by_self(id)) {
			best = id;
			*out = info;
		}
	}
	return best ? 0 : -ENOENT;
}

/*
 * The consumer positions of the program's ring buffers: byte counters the
 * consumer advances past each record it has read, header and padding
 * included. Their growth over the records delivered is the ring bytes per
 * sample, whatever the record layout (frames, a copied stack, or a second
 * ring for either). The rings are found through the program's maps (each
 * BPF_MAP_TYPE_RINGBUF) and their consumer pages mapped read-only.
 */
#define RING_POS_MAX 4

struct ring_pos {
	volatile const uint64_t *consumer[RING_POS_MAX];
	unsigned n;
	size_t len;
};

static int ring_pos_open(const struct bpf_prog_info *prog, struct ring_pos *rp)
{
	uint32_t ids[16], n = prog->nr_map_ids < 16 ? prog->nr_map_ids : 16;
	struct bpf_prog_info info = {0};
	uint32_t len = sizeof(info);
	int pfd, r = 0;

	pfd = bpf_prog_get_fd_by_id(prog->id);
	if (pfd < 0)
		return -errno;
	info.nr_map_ids = n;
	info.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(pfd, &info, &len)) {
		r = -errno;
		goto out;
	}
	rp->len = (size_t)sysconf(_SC_PAGESIZE);
	for (uint32_t i = 0; i < n && rp->n < RING_POS_MAX; i++) {
		struct bpf_map_info mi = {0};
		uint32_t ml = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		void *m;

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &ml) && mi.type == BPF_MAP_TYPE_RINGBUF) {
			m = mmap(NULL, rp->len, PROT_READ, MAP_SHARED, mfd, 0);
			if (m == MAP_FAILED)
				r = -errno;
			else
				rp->consumer[rp->n++] = m;
		}
		close(mfd);
	}
out:
	close(pfd);
	return rp->n ? 0 : r ? r : -ENOENT;
}

/* Sum of the consumer positions: bytes read from all the rings so far. */
static uint64_t ring_pos_read(const struct ring_pos *rp)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < rp->n; i++)
		sum += *rp->consumer[i];
	return sum;
}

static void ring_pos_close(struct ring_pos *rp)
{
	for (unsigned i = 0; i < rp->n; i++)
		munmap((void *)rp->consumer[i], rp->len);
	rp->n = 0;
}

/*
 * Hook for the userspace unwinder's figures: the cpu collector's "unwind"
 * status object (docs/collectors.md), printed whole when the collector has
 * one, so whatever it counts (bytes of copied stack, unwinding time,
 * truncations by cause, cache use) reaches this report without the
 * benchmark knowing its members.
 */
static void print_unwind_status(struct gpd *g, double *p50, double *p90)
{
	cJSON *obj = cJSON_CreateObject(), *uw;
	char *text;

	if (!obj)
		return;
	if (g->unwinder)
		unwind_status(g->unwinder, cJSON_AddObjectToObject(obj, "unwind"), true);
	uw = cJSON_GetObjectItemCaseSensitive(obj, "unwind");
	*p50 = *p90 = 0;
	if (uw) {
		*p50 = cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "unwind_ns_p50_recent"));
		*p90 = cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "unwind_ns_p90_recent"));
		printf("unwind: %.0f stacks, %.0f complete; walk p50 %.0f ns, p90 %.0f ns (last "
		       "1024), mean %.0f ns (cold object loads included); %.0f stack bytes/sample\n",
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "samples")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "complete")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "unwind_ns_p50_recent")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "unwind_ns_p90_recent")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "unwind_ns_mean")),
		       cJSON_GetNumberValue(cJSON_GetObjectItem(uw, "stack_bytes_per_sample")));
		cJSON_DeleteItemFromObject(uw, "by_process");
	}
	if (uw && (text = cJSON_PrintUnformatted(uw))) {
		printf("unwind status: %s\n", text);
		free(text);
	} else {
		printf("unwind status: none (--stack-bytes 0: frame pointers in BPF)\n");
	}
	cJSON_Delete(obj);
}

static void on_done(uv_timer_t *t)
{
	uv_stop(t->loop);
}

/* The registry's counts so far: samples with Python frames, records
 * spliced and the time spent on them. */
struct py_counts {
	double samples, spliced, splice_ns;
	uint64_t walk_ns, walks, nodes; /* the BPF program's py_cost, all CPUs */
};

/* The program's per-CPU "py_cost" map (the Python walk's time in BPF),
 * summed over the CPUs; false when the program has none. */
static bool py_cost_read(const struct bpf_prog_info *prog, struct py_counts *pc)
{
	uint32_t ids[16], n = prog->nr_map_ids < 16 ? prog->nr_map_ids : 16, zero = 0;
	struct bpf_prog_info info = {0};
	uint32_t len = sizeof(info);
	int pfd, ncpu = libbpf_num_possible_cpus();
	bool found = false;

	pfd = bpf_prog_get_fd_by_id(prog->id);
	if (pfd < 0 || ncpu <= 0)
		return false;
	info.nr_map_ids = n;
	info.map_ids = (uint64_t)(uintptr_t)ids;
	if (bpf_obj_get_info_by_fd(pfd, &info, &len))
		goto out;
	for (uint32_t i = 0; i < n && !found; i++) {
		struct bpf_map_info mi = {0};
		uint32_t ml = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]);
		uint64_t *v;

		if (mfd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &ml) && !strcmp(mi.name, "py_cost") &&
		    mi.value_size == 3 * sizeof(uint64_t) &&
		    (v = calloc((size_t)ncpu, 3 * sizeof(uint64_t)))) {
			if (!bpf_map_lookup_elem(mfd, &zero, v)) {
				for (int c = 0; c < ncpu; c++) {
					pc->walk_ns += v[3 * c];
					pc->walks += v[3 * c + 1];
					pc->nodes += v[3 * c + 2];
				}
				found = true;
			}
			free(v);
		}
		close(mfd);
	}
out:
	close(pfd);
	return found;
}

static void py_counts(const struct pyreg *r, const struct bpf_prog_info *prog,
		      struct py_counts *pc)
{
	cJSON *o = cJSON_CreateObject();

	memset(pc, 0, sizeof(*pc));
	if (prog->id)
		py_cost_read(prog, pc);
	if (!o || !r)
		goto out;
	pyreg_status(r, o, false);
	pc->samples = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "samples"));
	pc->spliced = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "spliced"));
	pc->splice_ns = pc->spliced * cJSON_GetNumberValue(cJSON_GetObjectItem(o, "splice_ns_mean"));
out:
	cJSON_Delete(o);
}

/* The workload the sampler interrupts: COMMAND when given, else a spin. */
static pid_t start_child(char **cmd)
{
	pid_t child = fork();

	if (child != 0)
		return child;
	if (cmd) {
		execvp(cmd[0], cmd);
		fprintf(stderr, "exec %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	for (volatile uint64_t n = 0;; n++)
		;
}

/* The unwinder's counters that a window's own figures are made of. */
struct uw_counts {
	double samples, ns_total, maps_reads, maps_queries, objects_loaded;
};

static void uw_counts(struct gpd *g, struct uw_counts *uc)
{
	cJSON *o = cJSON_CreateObject();

	memset(uc, 0, sizeof(*uc));
	if (!o || !g->unwinder)
		goto out;
	unwind_status(g->unwinder, o, false);
	uc->samples = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "samples"));
	uc->ns_total = uc->samples * cJSON_GetNumberValue(cJSON_GetObjectItem(o, "unwind_ns_mean"));
	uc->maps_reads = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "maps_reads"));
	uc->maps_queries = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "maps_queries"));
	uc->objects_loaded = cJSON_GetNumberValue(cJSON_GetObjectItem(o, "objects_loaded"));
out:
	cJSON_Delete(o);
}

static double loadavg1(void)
{
	FILE *f = fopen("/proc/loadavg", "re");
	double v = -1;

	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

struct bench {
	struct gpd g;
	struct collector c;
	struct ring_pos rp;
	uv_loop_t loop;
	uv_timer_t done;
	int stats_fd;
	double secs, warmup;
	uint32_t freq;
	unsigned copies;
	char **cmd;
};

/* What one window cost, for the closing comparison. */
struct result {
	double overall, daemon_pct, per_sample_ns, walk_mean_ns, p50, p90, load0, load1;
	double new_procs_s;
};

static void run_for(struct bench *b, double secs)
{
	uv_update_time(&b->loop);
	uv_timer_start(&b->done, on_done, (uint64_t)(secs * 1000), 0);
	uv_run(&b->loop, UV_RUN_DEFAULT);
}

/* Run the collector for the window and print what it cost. */
static void window(struct bench *b, const char *label, struct result *res)
{
	struct bpf_prog_info info = {0}, info0 = {0};
	struct py_counts py0, py1;
	struct uw_counts uw0, uw1;
	double t0, c0, p0, s0, wall, used, pused, sused, bpf_s = 0, per_sample_ns = 0;
	uint64_t ev0, cons0, runs = 0;
	bool have_bpf = false;
	struct gpd *g = &b->g;

	if (b->warmup > 0) {
		/* the first seconds load every sampled process's objects into
		 * the unwinder and recognize the Python processes: a start-up
		 * cost, left out of a steady-state window */
		run_for(b, b->warmup);
	}
	find_prog(&info0);
	res->load0 = loadavg1();
	t0 = now_s();
	c0 = cpu_s();
	p0 = cputime_s();
	s0 = proc_stat_cpu_s(getpid());
	ev0 = b->c.events;
	cons0 = ring_pos_read(&b->rp);
	py_counts(g->pyreg, &info0, &py0);
	uw_counts(g, &uw0);
	run_for(b, b->secs);
	uw_counts(g, &uw1);
	py_counts(g->pyreg, &info0, &py1);
	used = cpu_s() - c0;
	pused = cputime_s() - p0;
	sused = proc_stat_cpu_s(getpid()) - s0;
	wall = now_s() - t0;
	ev0 = b->c.events - ev0;
	res->load1 = loadavg1();

	if (label)
		printf("== %s\n", label);
	if (b->stats_fd >= 0 && find_prog(&info) == 0 && info.run_cnt) {
		/* the counters run from the load; take the window's share */
		runs = info.run_cnt - (info.id == info0.id ? info0.run_cnt : 0);
		bpf_s = (double)(info.run_time_ns - (info.id == info0.id ? info0.run_time_ns : 0)) /
			1e9;
		have_bpf = runs > 0;
	}
	if (have_bpf)
		printf("bpf program: %llu runs, %.0f ns/run, %.4f%% of one core in "
		       "interrupted tasks\n",
		       (unsigned long long)runs, bpf_s * 1e9 / (double)runs, bpf_s / wall * 100.0);
	else
		printf("bpf program: no run-time statistics (BPF_ENABLE_STATS needs Linux 5.8+)\n");
	printf("cpu collector: %.1f s at %u Hz on %ld CPUs, %u child%s (%s); load average "
	       "%.2f -> %.2f\n",
	       wall, b->freq, sysconf(_SC_NPROCESSORS_ONLN), b->copies, b->copies > 1 ? "ren" : "",
	       b->cmd ? b->cmd[0] : "spinning", res->load0, res->load1);
	printf("daemon-side cpu: %.4f%% of one core (getrusage utime+stime %.3f s; "
	       "CLOCK_PROCESS_CPUTIME_ID %.4f%%; /proc/PID/stat %.2f s in clock ticks)\n",
	       used / wall * 100.0, used, pused / wall * 100.0, sused);
	printf("samples: %llu in the window (%.1f/s), drops %llu\n", (unsigned long long)ev0,
	       (double)ev0 / wall, (unsigned long long)b->c.drops);
	if (ev0) {
		per_sample_ns = pused * 1e9 / (double)ev0;
		printf("per sample: daemon side %.0f ns", per_sample_ns);
		if (have_bpf)
			printf(" + bpf %.0f ns = %.0f ns added cost (means)",
			       bpf_s * 1e9 / (double)runs,
			       per_sample_ns + bpf_s * 1e9 / (double)runs);
		printf("\n");
	}
	res->daemon_pct = pused / wall * 100.0;
	res->overall = ((have_bpf ? bpf_s : 0) + pused) / wall * 100.0;
	res->per_sample_ns = per_sample_ns;
	printf("overall: %.4f%% of one core (bpf + daemon side)\n", res->overall);
	if (b->rp.n && ev0)
		printf("ring: %.0f bytes/sample (consumer position of %u ring%s; store estimate "
		       "%.0f)\n",
		       (double)(ring_pos_read(&b->rp) - cons0) / (double)ev0, b->rp.n,
		       b->rp.n > 1 ? "s" : "", mean_record_bytes(g->store));
	else
		printf("ring: %.0f bytes/sample (store estimate)\n", mean_record_bytes(g->store));
	if (g->unwinder && uw1.samples > uw0.samples) {
		/* the window's own walks: means over the window, the status
		 * object's own figures run from the start */
		res->walk_mean_ns = (uw1.ns_total - uw0.ns_total) / (uw1.samples - uw0.samples);
		res->new_procs_s = (uw1.maps_reads - uw0.maps_reads) / wall;
		printf("unwind in the window: %.0f walks, mean %.0f ns; %.0f mappings reads "
		       "(%.1f/s: new processes, execs, refreshes), %.0f PROCMAP_QUERY calls, "
		       "%.0f objects loaded\n",
		       uw1.samples - uw0.samples, res->walk_mean_ns, uw1.maps_reads - uw0.maps_reads,
		       res->new_procs_s, uw1.maps_queries - uw0.maps_queries,
		       uw1.objects_loaded - uw0.objects_loaded);
	}
	print_unwind_status(g, &res->p50, &res->p90);
	{
		/* the collector's own status: its new-program wake-ups */
		cJSON *o = cJSON_CreateObject();
		char *txt;

		if (o && b->c.ops->status) {
			b->c.ops->status(&b->c, o);
			txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(o, "new_program_wakeups"));
			if (txt)
				printf("cpu collector new_program_wakeups (cumulative): %s\n", txt);
			free(txt);
		}
		cJSON_Delete(o);
	}
	if (g->pyreg && ev0) {
		double ns = py1.samples - py0.samples, nspl = py1.spliced - py0.spliced;
		uint64_t walks = py1.walks - py0.walks;

		printf("python samples: %.0f of %llu in the window (%.1f%%)\n", ns,
		       (unsigned long long)ev0, 100.0 * ns / (double)ev0);
		if (walks)
			printf("python per sample: bpf walk %.0f ns (%llu walks, %.1f chain nodes "
			       "each)",
			       (double)(py1.walk_ns - py0.walk_ns) / (double)walks,
			       (unsigned long long)walks,
			       (double)(py1.nodes - py0.nodes) / (double)walks);
		else
			printf("python per sample: bpf walk not measured");
		if (nspl)
			printf("; daemon side %.0f ns interpreting, naming, splicing (%.0f "
			       "records)",
			       (py1.splice_ns - py0.splice_ns) / nspl, nspl);
		printf("\n");
	}
	if (g->pyreg) {
		cJSON *o = cJSON_CreateObject();
		char *txt;

		pyreg_status(g->pyreg, o, true);
		txt = cJSON_PrintUnformatted(o);
		printf("python: %s\n", txt ? txt : "?");
		free(txt);
		cJSON_Delete(o);
	}
	fflush(stdout);
}

/* What gpuprofd's hooks do with a new pid (daemon/hooks.c): the
 * symbolizer snapshots its mappings then, on the loop, so that its frames
 * name after it exits. Part of what each new process costs the sampler. */
static void note_pid(void *arg, uint32_t pid, bool exec)
{
	if (exec)
		sym_note_exec(arg, pid);
	else
		sym_note_pid(arg, pid);
}

/* hooks.c's: the unwinder's first sight takes the symbolizer's read */
static int shared_maps_fn(void *arg, uint32_t pid, uint64_t max_age_ns,
			  void (*each)(void *ctx, const struct pmq_map *m, const char *name),
			  void *ctx)
{
	return sym_fresh_maps(arg, pid, max_age_ns, each, ctx);
}

/* The load of short-lived processes (bench/cpu/churn.sh), in a process
 * group of its own so that it goes whole. */
static pid_t churn_start(const char *script, unsigned workers)
{
	char n[16];
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	snprintf(n, sizeof(n), "%u", workers);
	execl("/bin/bash", "bash", script, n, (char *)NULL);
	_exit(127);
}

static void churn_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM); /* the script stops its workers and cleans up */
	waitpid(pid, NULL, 0);
	kill(-pid, SIGKILL); /* whatever it left */
}

static void print_row(const char *label, const struct result *r)
{
	printf("%-8s %7.3f%% %9.3f%% %10.1f %10.1f %8.1f %8.1f %9.1f   %.1f-%.1f\n", label,
	       r->overall, r->daemon_pct, r->per_sample_ns / 1e3, r->walk_mean_ns / 1e3, r->p50 / 1e3,
	       r->p90 / 1e3, r->new_procs_s, r->load0, r->load1);
}

int main(int argc, char **argv)
{
	struct store_config sc = {.budget_bytes = 64u << 20};
	static struct bench b = {.secs = 20.0, .freq = 49, .copies = 1};
	struct result quiet = {0}, churn = {0};
	const char *churn_script = CHURN_SCRIPT;
	unsigned churn_workers = 0;
	pid_t child[16], churn_pid;
	int r, npos = 0;
	long stack_bytes = 16384;
	bool python = false, maps_text = false, with_sym = true, shared_maps = true;
	double wake_gap_ms = -1;
	struct symbolizer *sym = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stack-bytes") && i + 1 < argc) {
			stack_bytes = atol(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--warmup") && i + 1 < argc) {
			b.warmup = atof(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--copies") && i + 1 < argc) {
			b.copies = (unsigned)atoi(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--churn") && i + 1 < argc) {
			churn_workers = (unsigned)atoi(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--churn-script") && i + 1 < argc) {
			churn_script = argv[++i];
			continue;
		}
		if (!strcmp(argv[i], "--no-symbolizer")) {
			with_sym = false;
			continue;
		}
		if (!strcmp(argv[i], "--new-wake-gap-ms") && i + 1 < argc) {
			wake_gap_ms = atof(argv[++i]);
			continue;
		}
		if (!strcmp(argv[i], "--no-shared-maps")) {
			shared_maps = false;
			continue;
		}
		if (!strcmp(argv[i], "--maps-text")) {
			maps_text = true;
			continue;
		}
		if (!strcmp(argv[i], "--python")) {
			python = true;
			continue;
		}
		if (!strcmp(argv[i], "--")) {
			b.cmd = i + 1 < argc ? &argv[i + 1] : NULL;
			break;
		}
		if (npos == 0)
			b.secs = atof(argv[i]);
		else if (npos == 1)
			b.freq = (uint32_t)atoi(argv[i]);
		npos++;
	}
	if (b.secs <= 0 || !b.freq || npos > 2 || !b.copies || b.copies > 16 || b.warmup < 0 ||
	    churn_workers > 16) {
		fprintf(stderr,
			"usage: %s [seconds] [frequency_hz] [--stack-bytes N] [--python] "
			"[--copies N (1-16)] [--warmup SECONDS] [--churn WORKERS (1-16)] "
			"[--churn-script PATH] [--maps-text] [--no-shared-maps] [--new-wake-gap-ms MS] [--no-symbolizer] "
			"[-- COMMAND [ARGS...]]\n",
			argv[0]);
		return 2;
	}
	uv_loop_init(&b.loop);
	config_defaults(&b.g.cfg);
	b.g.cfg.sample_freq_hz = b.freq;
	b.g.cfg.stack_bytes = stack_bytes > 0 && stack_bytes <= 65536 ? (uint32_t)stack_bytes : 0;
	if (b.g.cfg.stack_bytes) {
		struct unwind_opts uo = {.budget_bytes = b.g.cfg.unwind_max_bytes,
					 .maps_text = maps_text};

		if (unwind_new(&uo, &b.g.unwinder) < 0)
			return 1;
	}
	if (python && pyreg_new(NULL, &b.g.pyreg) < 0)
		return 1;
	b.g.loop = &b.loop;
	if (store_new(&sc, &b.g.store) < 0)
		return 1;
	b.c.ops = &cpu_collector_ops;
	b.c.gpd = &b.g;
	if (with_sym) {
		struct sym_opts so = {.refresh_ns = 10ull * 1000000000ull}; /* hooks.c's */

		if (sym_new(&so, &sym) < 0 || cpu_collector_set_pid_hook(&b.c, note_pid, sym) < 0)
			return 1;
		if (shared_maps && b.g.unwinder)
			unwind_set_maps_source(b.g.unwinder, shared_maps_fn, sym);
		if (shared_maps && b.g.pyreg)
			pyreg_set_maps_source(b.g.pyreg, shared_maps_fn, sym);
	}
	if (wake_gap_ms >= 0 &&
	    cpu_collector_set_new_wake_gap(&b.c, (uint64_t)(wake_gap_ms * 1e6)) < 0)
		return 1;

	/* Run-time statistics of BPF programs while this fd is open
	 * (BPF_ENABLE_STATS, Linux 5.8). Optional. */
	b.stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	for (unsigned k = 0; k < b.copies; k++)
		child[k] = start_child(b.cmd);

	r = b.c.ops->open(&b.c);
	if (r == 0 && b.c.state == COLLECTOR_OFF)
		r = b.c.ops->start(&b.c);
	if (r < 0 || b.c.state != COLLECTOR_ATTACHED) {
		fprintf(stderr, "collector not attached: %s\n", b.c.reason);
		for (unsigned k = 0; k < b.copies; k++) {
			kill(child[k], SIGKILL);
			waitpid(child[k], NULL, 0);
		}
		return 1;
	}
	{
		struct bpf_prog_info info0 = {0};

		if (find_prog(&info0) == 0 && ring_pos_open(&info0, &b.rp) < 0)
			fprintf(stderr, "cannot map the ring's consumer page: ring bytes from the "
					"store\n");
	}
	uv_timer_init(&b.loop, &b.done);

	window(&b, churn_workers ? "without churn" : NULL, &quiet);
	if (churn_workers) {
		/* the same collector, warm, now with a host full of new
		 * processes; the warm-up lets the churn's programs (cc1, as,
		 * ld...) be loaded once, as an always-on daemon has them */
		churn_pid = churn_start(churn_script, churn_workers);
		printf("\n");
		window(&b, "with churn", &churn);
		churn_stop(churn_pid);
		printf("\n%-8s %8s %10s %10s %10s %8s %8s %9s   %s\n", "window", "overall",
		       "daemon", "us/sample", "walk mean", "walk p50", "walk p90", "reads/s",
		       "load");
		print_row("quiet", &quiet);
		print_row("churn", &churn);
	}

	for (unsigned k = 0; k < b.copies; k++) {
		kill(child[k], SIGKILL);
		waitpid(child[k], NULL, 0);
	}
	ring_pos_close(&b.rp);
	b.c.ops->stop(&b.c);
	b.c.ops->free(&b.c);
	uv_close((uv_handle_t *)&b.done, NULL);
	while (uv_loop_close(&b.loop) == UV_EBUSY)
		uv_run(&b.loop, UV_RUN_NOWAIT);
	store_free(b.g.store);
	unwind_free(b.g.unwinder);
	pyreg_free(b.g.pyreg);
	sym_free(sym);
	if (b.stats_fd >= 0)
		close(b.stats_fd);
	return 0;
}
