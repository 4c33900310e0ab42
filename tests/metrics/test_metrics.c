// SPDX-License-Identifier: MIT
/* Unit tests of daemon/metrics: snapshots, counting, sysfs, addresses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics/build.h"
#include "metrics/gpufreq.h"
#include "metrics/listen.h"
#include "metrics/proctab.h"
#include "metrics/snap.h"
#include "store/store.h"
#include "test.h"

static char *render(const struct msnap *s, bool om)
{
	char *out = NULL;
	size_t len = 0;

	CHECK_EQ_INT(msnap_render(s, om, &out, &len), 0);
	CHECK_EQ_INT(strlen(out), len);
	return out;
}

static void test_render_formats(void)
{
	struct msnap *s = msnap_new();
	char *t, *om;

	msnap_family(s, "x_requests", MSNAP_COUNTER, NULL, "Requests \\ seen\nhere.");
	msnap_add(s, 3, "path", "a\"b\\c\nd", NULL);
	msnap_add(s, 1e15, NULL);
	msnap_family(s, "x_empty", MSNAP_GAUGE, NULL, "never rendered");
	msnap_family(s, "x_up_seconds", MSNAP_GAUGE, "seconds", "Up.");
	msnap_add(s, 0.25, "comm",
		  "bad\xff\xfe"
		  "utf8",
		  NULL);
	msnap_family(s, "x_build", MSNAP_INFO, NULL, "Version.");
	msnap_add(s, 1, "version", "1.0", NULL);
	t = render(s, false);
	CHECK_STREQ(t, "# HELP x_requests_total Requests \\\\ seen\\nhere.\n"
		       "# TYPE x_requests_total counter\n"
		       "x_requests_total{path=\"a\\\"b\\\\c\\nd\"} 3\n"
		       "x_requests_total 1000000000000000\n"
		       "# HELP x_up_seconds Up.\n"
		       "# TYPE x_up_seconds gauge\n"
		       "x_up_seconds{comm=\"bad\xef\xbf\xbd\xef\xbf\xbdutf8\"} 0.25\n"
		       "# HELP x_build_info Version.\n"
		       "# TYPE x_build_info gauge\n"
		       "x_build_info{version=\"1.0\"} 1\n");
	om = render(s, true);
	CHECK_STREQ(om, "# HELP x_requests Requests \\\\ seen\\nhere.\n"
			"# TYPE x_requests counter\n"
			"x_requests_total{path=\"a\\\"b\\\\c\\nd\"} 3\n"
			"x_requests_total 1000000000000000\n"
			"# HELP x_up_seconds Up.\n"
			"# TYPE x_up_seconds gauge\n"
			"# UNIT x_up_seconds seconds\n"
			"x_up_seconds{comm=\"bad\xef\xbf\xbd\xef\xbf\xbdutf8\"} 0.25\n"
			"# HELP x_build Version.\n"
			"# TYPE x_build info\n"
			"x_build_info{version=\"1.0\"} 1\n"
			"# EOF\n");
	free(t);
	free(om);
	msnap_free(s);
	s = msnap_new();
	om = render(s, true);
	CHECK_STREQ(om, "# EOF\n");
	free(om);
	t = render(s, false);
	CHECK_STREQ(t, "");
	free(t);
	msnap_free(s);
	msnap_free(NULL);
}

static void test_status_series(void)
{
	cJSON *st = cJSON_Parse(
	    "{\"uptime_s\":2.5,\"store\":{\"capacity\":1000,\"records\":250,\"oldest_ns\":"
	    "1000000000,"
	    "\"newest_ns\":4000000000,\"appended\":9007199254740993},"
	    "\"collectors\":[{\"name\":\"cpu\",\"state\":\"attached\",\"events\":7,\"drops\":1}],"
	    "\"memory\":{\"rss_bytes\":4096}}");
	struct msnap *s = msnap_new();
	char *t;

	/* json_add_u64 writes integers past 2^53 as raw literals */
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(st, "store"), "appended",
				  cJSON_CreateRaw("9007199254740993"));
	metrics_add_status(s, st);
	t = render(s, false);
	CHECK(strstr(t, "\ngpuprof_uptime_seconds 2.5\n"));
	CHECK(strstr(t, "\ngpuprof_store_fill_ratio 0.25\n"));
	CHECK(strstr(t, "\ngpuprof_store_window_seconds 3\n"));
	CHECK(strstr(t, "\ngpuprof_store_appended_total 9007199254740992\n"));
	CHECK(strstr(t, "\ngpuprof_resident_memory_bytes 4096\n"));
	CHECK(strstr(t, "\ngpuprof_collector_state{collector=\"cpu\",state=\"attached\"} 1\n"));
	CHECK(strstr(t, "\ngpuprof_collector_state{collector=\"cpu\",state=\"failed\"} 0\n"));
	CHECK(strstr(t, "\ngpuprof_collector_drops_total{collector=\"cpu\"} 1\n"));
	/* members the status lacks give no sample (and no family lines) */
	CHECK(!strstr(t, "gpuprof_jobs_max"));
	free(t);
	msnap_free(s);
	cJSON_Delete(st);
}

static char tmpdir[] = "/tmp/gpd-metrics-XXXXXX";

static void put(const char *rel, const char *text)
{
	char path[512], *slash;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	for (slash = strchr(path + strlen(tmpdir) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void append(struct store *st, uint16_t type, uint32_t pid, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct store_rec r = {.ts_ns = 1, .pid = pid, .tid = pid, .type = type, .aux32 = 1};

		r.comm = store_str_intern(st, "threadname", 10);
		store_append(st, &r);
	}
}

static double value_of(const char *text, const char *series)
{
	const char *p = strstr(text, series);

	return p ? strtod(p + strlen(series), NULL) : -1;
}

static void test_proctab_top_and_other(void)
{
	struct store_config sc = {.budget_bytes = 1 << 20};
	struct store *st;
	struct proctab *pt;
	char proc[300], *t;
	struct msnap *s;

	snprintf(proc, sizeof(proc), "%s/proc", tmpdir);
	put("proc/100/comm", "burner\n");
	put("proc/100/cgroup", "0::/user.slice/burn.scope\n");
	put("proc/200/comm", "other\"one\n");
	put("proc/200/cgroup", "1:cpu:/\n0::/system.slice/x.service\n");
	put("proc/300/comm", "small\n");
	CHECK_EQ_INT(store_new(&sc, &st), 0);
	append(st, STORE_REC_CPU_SAMPLE, 999, 5); /* before: not counted */
	struct proctab_opts o = {.top = 2, .cpu = true, .gpu = false, .proc_root = proc};
	CHECK_EQ_INT(proctab_new(&o, st, &pt), 0);
	append(st, STORE_REC_CPU_SAMPLE, 100, 50);
	append(st, STORE_REC_CPU_SAMPLE, 200, 20);
	append(st, STORE_REC_CPU_SAMPLE, 300, 5);
	append(st, STORE_REC_GPU_LAUNCH, 300, 4);
	proctab_scan(pt, st);
	/* 300 got busier, but not twice as busy as 200: slots stay */
	append(st, STORE_REC_CPU_SAMPLE, 300, 20);
	append(st, STORE_REC_CPU_SAMPLE, 100, 1);
	proctab_scan(pt, st);
	s = msnap_new();
	proctab_emit(pt, s);
	t = render(s, false);
	CHECK_EQ_INT(value_of(t, "\ngpuprof_cpu_samples_total "), 96);
	CHECK_EQ_INT(value_of(t, "\ngpuprof_gpu_launches_total "), 4);
	CHECK_EQ_INT(
	    value_of(t, "{pid=\"100\",comm=\"burner\",cgroup=\"/user.slice/burn.scope\"} "), 51);
	CHECK_EQ_INT(
	    value_of(t, "{pid=\"200\",comm=\"other\\\"one\",cgroup=\"/system.slice/x.service\"} "),
	    20);
	CHECK_EQ_INT(value_of(t, "{pid=\"\",comm=\"other\",cgroup=\"\"} "), 25);
	CHECK(!strstr(t, "pid=\"300\""));
	CHECK(!strstr(t, "gpuprof_process_gpu_launches")); /* not asked for */
	free(t);
	msnap_free(s);

	/* now it is: it takes the slot of the least busy holder, and counts
	 * from there */
	append(st, STORE_REC_CPU_SAMPLE, 300, 100);
	proctab_scan(pt, st);
	s = msnap_new();
	proctab_emit(pt, s);
	t = render(s, false);
	CHECK(!strstr(t, "pid=\"200\""));
	CHECK_EQ_INT(value_of(t, "{pid=\"300\",comm=\"small\",cgroup=\"\"} "), 100);
	CHECK_EQ_INT(
	    value_of(t, "{pid=\"100\",comm=\"burner\",cgroup=\"/user.slice/burn.scope\"} "), 51);
	CHECK_EQ_INT(value_of(t, "{pid=\"\",comm=\"other\",cgroup=\"\"} "), 25);
	free(t);
	msnap_free(s);

	/* 100 ends: its slot goes to the busiest process without one */
	char gone[400];
	snprintf(gone, sizeof(gone), "rm -rf %s/proc/100", tmpdir);
	CHECK_EQ_INT(system(gone), 0);
	put("proc/400/comm", "late\n");
	sleep(3); /* a slot's holder is checked once quiet for 2 s */
	append(st, STORE_REC_CPU_SAMPLE, 400, 7);
	proctab_scan(pt, st);
	s = msnap_new();
	proctab_emit(pt, s);
	t = render(s, false);
	CHECK(!strstr(t, "pid=\"100\""));
	CHECK_EQ_INT(value_of(t, "{pid=\"400\",comm=\"late\",cgroup=\"\"} "), 7);
	CHECK_EQ_INT(value_of(t, "{pid=\"\",comm=\"other\",cgroup=\"\"} "), 25);
	CHECK_EQ_INT(value_of(t, "\ngpuprof_cpu_samples_total "), 203);
	free(t);
	msnap_free(s);
	proctab_free(pt);

	/* the ring passed the endpoint: what it missed is counted */
	o.cpu = false;
	CHECK_EQ_INT(proctab_new(&o, st, &pt), 0);
	struct store_stats ss;
	store_get_stats(st, &ss);
	append(st, STORE_REC_CPU_SAMPLE, 100, ss.capacity + 10);
	proctab_scan(pt, st);
	s = msnap_new();
	proctab_emit(pt, s);
	t = render(s, false);
	CHECK_EQ_INT(value_of(t, "\ngpuprof_metrics_records_missed_total "), 10);
	CHECK_EQ_INT(value_of(t, "\ngpuprof_cpu_samples_total "), ss.capacity);
	CHECK(!strstr(t, "gpuprof_process_"));
	free(t);
	msnap_free(s);
	proctab_free(pt);
	store_free(st);
}

static void test_hidepid(void)
{
	static const struct {
		const char *mounts;
		bool hides;
	} cases[] = {
	    {"21 26 0:20 / /proc rw,relatime - proc proc rw\n", false},
	    {"21 26 0:20 / /proc rw,relatime - proc proc rw,hidepid=2\n", true},
	    {"21 26 0:20 / /proc rw - proc proc rw,hidepid=invisible\n", true},
	    {"21 26 0:20 / /proc rw - proc proc rw,hidepid=0\n", false},
	    {"21 26 0:20 / /proc rw - proc proc rw,hidepid=off\n", false},
	    /* a tmpfs whose options mention it is not a proc */
	    {"30 26 0:40 / /x rw - tmpfs hidepid=2 rw\n"
	     "31 26 0:41 / /proc rw - proc proc rw\n",
	     false},
	};
	char path[300];

	snprintf(path, sizeof(path), "%s/mountinfo", tmpdir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		put("mountinfo", cases[i].mounts);
		CHECK_EQ_INT(proctab_proc_hides_pids(path), cases[i].hides);
	}
	CHECK(!proctab_proc_hides_pids("/nonexistent"));
}

static void test_gpufreq_sysfs(void)
{
	char drm[300], *t;
	struct msnap *s = msnap_new();

	put("drm/card0/device/tile0/gt0/freq0/act_freq", "1300\n");
	put("drm/card0/device/tile0/gt1/freq0/act_freq", "700\n");
	put("drm/card0-DP-1/status", "connected\n");
	put("drm/card1/gt/gt0/rps_act_freq_mhz", "450\n");
	put("drm/card2/gt_act_freq_mhz", "300\n");
	put("drm/card3/device/vendor", "0x10de\n");
	snprintf(drm, sizeof(drm), "%s/drm", tmpdir);
	gpufreq_emit(s, drm);
	t = render(s, false);
	CHECK_EQ_INT(value_of(t, "{card=\"card0\",gt=\"0\"} "), 1300e6);
	CHECK_EQ_INT(value_of(t, "{card=\"card0\",gt=\"1\"} "), 700e6);
	CHECK_EQ_INT(value_of(t, "{card=\"card1\",gt=\"0\"} "), 450e6);
	CHECK_EQ_INT(value_of(t, "{card=\"card2\",gt=\"0\"} "), 300e6);
	CHECK(!strstr(t, "card3") && !strstr(t, "DP-1"));
	free(t);
	msnap_free(s);
}

static void test_listen_specs(void)
{
	static const char *const bad[] = {
	    "localhost:9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1",
	    "[::1]9464",      "[::1",	   "::1:9464",	 "1.2.3.4.5:80",    "rel/path",
	};
	char msg[256], path[300];
	int fd;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = metrics_listen(bad[i], msg, sizeof(msg));
		if (fd >= 0)
			close(fd);
		CHECK(fd < 0);
		CHECK(strstr(msg, "metrics.listen") != NULL);
	}
	fd = metrics_listen("127.0.0.1:0", msg, sizeof(msg));
	CHECK(fd >= 0);
	CHECK(!strncmp(msg, "127.0.0.1:", 10) && strcmp(msg, "127.0.0.1:0"));
	close(fd);
	snprintf(path, sizeof(path), "%s/m.sock", tmpdir);
	for (int i = 0; i < 2; i++) { /* the second replaces the stale socket */
		struct stat sb;

		fd = metrics_listen(path, msg, sizeof(msg));
		CHECK(fd >= 0);
		CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0666);
		close(fd);
	}
	put("plain", "not a socket");
	snprintf(path, sizeof(path), "%s/plain", tmpdir);
	fd = metrics_listen(path, msg, sizeof(msg));
	CHECK_EQ_INT(fd, -EADDRINUSE);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmpdir))
		return 1;
	RUN(test_render_formats);
	RUN(test_status_series);
	RUN(test_proctab_top_and_other);
	RUN(test_hidepid);
	RUN(test_gpufreq_sysfs);
	RUN(test_listen_specs);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return test_summary();
}
