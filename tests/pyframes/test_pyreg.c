// SPDX-License-Identifier: MIT
/*
 * The registry of Python processes (daemon/pyframes/pyreg.h) on a real
 * libuv loop: recognizing a process inspects its files on the thread pool,
 * at most PYREG_MAX_SCANS at once, never on the caller's thread; samples
 * meanwhile keep their native frames and retry; a starting or unsupported
 * interpreter ends with the cause status names; the registry freed while
 * inspections run leaves them to finish and free the rest (ASan checks).
 *
 * Usage: test_pyreg TARGET.PY (tests/pyframes/target.py: stops itself once
 * its threads are in place)
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "pyreg.h"
#include "test.h"

#define NTARGETS 4

static const char *target_py;

static const char *const pythons[] = {
	"/root/.pyenv/versions/3.12.1/bin/python3.12",
	"/root/.pyenv/versions/3.9.18/bin/python3.9",
	"/root/.pyenv/versions/3.11.7/bin/python3.11",
	"/root/.pyenv/versions/3.10.13/bin/python3.10",
	"/root/.pyenv/versions/3.13.0/bin/python3.13",
	"/usr/bin/python3.11",
};
static const char *py38 = "/root/.pyenv/versions/3.8.18/bin/python3.8";

/* A target stopped in place (its reference output is not read here). */
static pid_t start_target(const char *py, const char *out)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(py, py, "-E", "-S", target_py, out, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; pid > 0 && i < 3000; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG | WUNTRACED);

		if (w == pid)
			return WIFSTOPPED(st) ? pid : -1;
		usleep(10000);
	}
	return -1;
}

static cJSON *status(struct pyreg *r)
{
	cJSON *o = cJSON_CreateObject();

	pyreg_status(r, o, true);
	return o;
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* pid's entry in by_process, or NULL */
static const cJSON *entry(const cJSON *st, pid_t pid)
{
	const cJSON *e;

	cJSON_ArrayForEach(e,
			   cJSON_GetObjectItemCaseSensitive(st, "by_process")) if (num(e, "pid") ==
										   pid) return e;
	return NULL;
}

static const char *str(const cJSON *e, const char *k)
{
	const cJSON *v = e ? cJSON_GetObjectItemCaseSensitive(e, k) : NULL;

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* One sample of pid without Python nodes: passes its native frame. */
static void sample(struct pyreg *r, pid_t pid)
{
	uint64_t ip = 0x401000, out[4];

	CHECK_EQ_INT(pyreg_splice(r, (uint32_t)pid, &ip, NULL, 1, 0, NULL, 0, 0, out, 4), 1);
	CHECK_EQ_U64(out[0], ip);
}

static void test_scans_on_the_pool(void)
{
	char dir[] = "/tmp/pyreg.XXXXXX", out[64];
	pid_t pids[NTARGETS + 1] = {0};
	const char *pys[NTARGETS];
	unsigned n = 0, np = 0;
	uv_loop_t loop;
	struct pyreg *r = NULL;
	bool done = false;
	cJSON *st;
	int s;

	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]) && np < NTARGETS; i++)
		if (access(pythons[i], X_OK) == 0)
			pys[np++] = pythons[i];
	if (!np) {
		fprintf(stderr, "skip: no CPython 3.9+ found\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/ref", dir);
	for (n = 0; n < NTARGETS; n++) {
		pids[n] = start_target(pys[n % np], out);
		CHECK(pids[n] > 0);
	}
	/* an interpreter caught starting, refused for good once it is read */
	if (access(py38, X_OK) == 0) {
		pids[n] = fork();
		if (pids[n] == 0) {
			execl(py38, py38, "-E", "-S", "-c", "import time; time.sleep(60)",
			      (char *)NULL);
			_exit(127);
		}
		/* exec'd (a forked copy of this test is no Python for good) */
		for (int i = 0; pids[n] > 0 && i < 500; i++) {
			char path[64], exe[256] = "";

			snprintf(path, sizeof(path), "/proc/%d/exe", (int)pids[n]);
			if (readlink(path, exe, sizeof(exe) - 1) > 0 && strstr(exe, "python3.8"))
				break;
			usleep(10000);
		}
	}
	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	CHECK_EQ_INT(pyreg_new(&(struct pyreg_opts){.no_bpf = true, .loop = &loop}, &r), 0);
	if (!r)
		goto out;
	for (unsigned i = 0; i <= NTARGETS; i++)
		pyreg_note_pid(r, (uint32_t)pids[i], false);
	pyreg_note_pid(r, (uint32_t)getpid(), false); /* no Python: not listed */

	/* nothing was inspected on this thread: every process pending, two
	 * inspections out, the others waiting for their next sample */
	st = status(r);
	CHECK_EQ_INT(num(st, "scans_running"), PYREG_MAX_SCANS);
	CHECK(num(st, "scans_deferred") >= NTARGETS - PYREG_MAX_SCANS);
	for (unsigned i = 0; i < NTARGETS; i++)
		CHECK_STREQ(str(entry(st, pids[i]), "state"), "pending");
	cJSON_Delete(st);

	for (int round = 0; round < 2000 && !done; round++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		for (unsigned i = 0; i <= NTARGETS; i++)
			if (pids[i] > 0)
				sample(r, pids[i]);
		sample(r, getpid());
		st = status(r);
		CHECK(num(st, "scans_running") <= PYREG_MAX_SCANS);
		done = true;
		for (unsigned i = 0; i < NTARGETS; i++)
			done &= !strcmp(str(entry(st, pids[i]), "state"), "frames");
		if (pids[NTARGETS] > 0)
			done &= !strcmp(str(entry(st, pids[NTARGETS]), "state"), "none");
		done &= num(st, "scans_running") == 0 && !entry(st, getpid());
		if (done || round % 500 == 499) {
			char *t = cJSON_PrintUnformatted(st);

			fprintf(stderr, "round %d: %s\n", round, t);
			free(t);
		}
		cJSON_Delete(st);
		usleep(10000);
	}
	CHECK(done);
	st = status(r);
	CHECK_EQ_INT(num(st, "processes"), NTARGETS);
	CHECK(num(st, "scans") >= NTARGETS + 2);
	CHECK(entry(st, getpid()) == NULL);
	for (unsigned i = 0; i < NTARGETS; i++)
		CHECK_STREQ(str(entry(st, pids[i]), "cause"), "");
	if (pids[NTARGETS] > 0) {
		const cJSON *e = entry(st, pids[NTARGETS]);

		CHECK_STREQ(str(e, "cause"), "unsupported");
		CHECK(strstr(str(e, "reason"), "3.8 is not supported") != NULL);
	}
	cJSON_Delete(st);

	/* freed while an inspection runs (an exec seen): it finishes on the
	 * loop and frees the rest */
	pyreg_note_pid(r, (uint32_t)pids[0], true);
	st = status(r);
	CHECK_EQ_INT(num(st, "scans_running"), 1);
	cJSON_Delete(st);
	pyreg_free(r);
	uv_run(&loop, UV_RUN_DEFAULT);
out:
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	for (unsigned i = 0; i <= NTARGETS; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &s, 0);
		}
	unlink(out);
	rmdir(dir);
}

/*
 * A Python process that execs another Python under the same command name
 * (a launcher, multiprocessing's spawn): the collectors see no exec, yet
 * samples without frames make the registry notice the new program within
 * a few samples and read it afresh. Also when the new program is the same
 * interpreter binary (a Python test runner starting its own python3),
 * which leaves /proc/PID/exe as it was: read as the old image, none of its
 * samples had Python frames.
 */
static void exec_same_name(const char *a, const char *va, const char *b, const char *vb)
{
	char code[512];
	double before = 0;
	struct pyreg *r = NULL;
	const cJSON *e;
	uv_loop_t loop;
	cJSON *st;
	pid_t pid;
	int s, k = -1;

	snprintf(code, sizeof(code),
		 "import os, sys, time\nprint(0, flush=True)\nsys.stdin.readline()\n"
		 "os.execv('%s', ['python3', '-c', "
		 "'import time; print(1, flush=True); time.sleep(60)'])",
		 b);
	int fds[2], out[2];
	bool done;
	char c;

	CHECK_EQ_INT(pipe(fds), 0);
	CHECK_EQ_INT(pipe(out), 0);
	pid = fork();
	if (pid == 0) {
		dup2(fds[0], 0);
		dup2(out[1], 1);
		close(fds[1]);
		close(out[0]);
		execl(a, "python3", "-c", code, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	close(out[1]);
	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	CHECK_EQ_INT(pyreg_new(&(struct pyreg_opts){.no_bpf = true, .loop = &loop}, &r), 0);
	/* recognized as 3.12 first, once it runs (not the forked copy of this
	 * program, whose exec the collectors would report) */
	CHECK(read(out[0], &c, 1) == 1);
	for (int i = 0; r && i < 500; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		pyreg_note_pid(r, (uint32_t)pid, false);
		sample(r, pid);
		st = status(r);
		e = entry(st, pid);
		k = !strcmp(str(e, "state"), "frames") && !strcmp(str(e, "version"), va);
		before = num(e, "samples");
		cJSON_Delete(st);
		if (k)
			break;
		usleep(10000);
	}
	CHECK_EQ_INT(k, 1);
	CHECK_EQ_INT(write(fds[1], "\n", 1), 1); /* exec now */
	/* the rest of the first line, then the new program's "1": it runs Python */
	CHECK(read(out[0], &c, 1) == 1 && read(out[0], &c, 1) == 1);
	/* frameless samples until the registry lets go of the program it knew
	 * (the same name: no exec reported), a few: read afresh, its entry
	 * starts counting again; then read as the new one */
	for (k = 0; r && k < 64; k++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		sample(r, pid);
		st = status(r);
		e = entry(st, pid);
		done = !e || num(e, "samples") < before || strcmp(str(e, "version"), va) != 0;
		cJSON_Delete(st);
		if (done)
			break;
		usleep(2000);
	}
	st = status(r);
	{
		char *t = cJSON_PrintUnformatted(entry(st, pid));

		fprintf(stderr, "the exec noticed after %d samples: %s\n", k, t);
		free(t);
	}
	cJSON_Delete(st);
	CHECK(k <= 16);
	done = false;
	for (int i = 0; r && i < 1000 && !done; i++) {
		uv_run(&loop, UV_RUN_NOWAIT);
		sample(r, pid);
		st = status(r);
		e = entry(st, pid);
		done = !strcmp(str(e, "state"), "frames") && !strcmp(str(e, "version"), vb);
		cJSON_Delete(st);
		usleep(10000);
	}
	if (!done) {
		char *t;

		st = status(r);
		t = cJSON_PrintUnformatted(entry(st, pid));
		fprintf(stderr, "not read as %s: %s\n", vb, t);
		free(t);
		t = cJSON_PrintUnformatted(st);
		fprintf(stderr, "status: %s\n", t);
		free(t);
		cJSON_Delete(st);
	}
	CHECK(done);
	pyreg_free(r);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	close(fds[1]);
	close(out[0]);
	kill(pid, SIGKILL);
	waitpid(pid, &s, 0);
}

static void test_exec_same_name(void)
{
	const char *a = "/root/.pyenv/versions/3.12.1/bin/python3.12",
		   *b = "/root/.pyenv/versions/3.9.18/bin/python3.9";

	if (access(a, X_OK) || access(b, X_OK)) {
		fprintf(stderr, "skip: needs %s and %s\n", a, b);
		return;
	}
	exec_same_name(a, "3.12.1", b, "3.9.18");
	exec_same_name(a, "3.12.1", a, "3.12.1");
}

/* The maps source's read decides whether a process maps a Python: one it
 * says maps none is never read (no scan), one it says does is attached,
 * and without a fresh read the registry reads the mappings itself. */
struct fake_maps {
	int ret;     /* 0: a fresh read; else no read */
	bool python; /* the read maps a python */
	unsigned calls;
};

static int fake_maps_fn(void *arg, uint32_t pid, uint64_t max_age_ns,
			void (*each)(void *ctx, const struct pmq_map *m, const char *name),
			void *ctx)
{
	struct fake_maps *f = arg;

	(void)pid;
	(void)max_age_ns;
	f->calls++;
	if (f->ret)
		return f->ret;
	each(ctx, NULL, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	each(ctx, NULL, f->python ? "/usr/bin/python3.11" : "/usr/libexec/gcc/cc1");
	return 0;
}

static void test_maps_source(void)
{
	char dir[] = "/tmp/pyreg.XXXXXX", out[64];
	struct pyreg_opts o = {.no_bpf = true};
	struct fake_maps f = {0};
	const char *py = NULL;
	struct pyreg *r = NULL;
	pid_t pids[3] = {0};
	cJSON *st;
	int s;

	for (size_t i = 0; i < sizeof(pythons) / sizeof(pythons[0]) && !py; i++)
		if (access(pythons[i], X_OK) == 0)
			py = pythons[i];
	if (!py) {
		fprintf(stderr, "skip: no CPython 3.9+ found\n");
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(out, sizeof(out), "%s/ref", dir);
	for (int i = 0; i < 3; i++) {
		pids[i] = start_target(py, out);
		CHECK(pids[i] > 0);
	}
	CHECK_EQ_INT(pyreg_new(&o, &r), 0);
	if (!r || pids[0] <= 0 || pids[1] <= 0 || pids[2] <= 0)
		goto out;
	pyreg_set_maps_source(r, fake_maps_fn, &f);

	/* said to map no Python: taken at its word, nothing read */
	pyreg_note_pid(r, (uint32_t)pids[0], false);
	CHECK_EQ_INT(f.calls, 0); /* on the first sample, after the read */
	sample(r, pids[0]);
	CHECK_EQ_INT(f.calls, 1);
	st = status(r);
	CHECK(entry(st, pids[0]) == NULL); /* no_python_file: not listed */
	CHECK_EQ_INT(num(st, "scans"), 0);
	CHECK_EQ_INT(num(st, "maps_shared"), 1);
	cJSON_Delete(st);

	/* said to map one: attached */
	f.python = true;
	pyreg_note_pid(r, (uint32_t)pids[1], false);
	sample(r, pids[1]);
	st = status(r);
	CHECK_STREQ(str(entry(st, pids[1]), "state"), "frames");
	CHECK_EQ_INT(num(st, "scans"), 1);
	CHECK_EQ_INT(num(st, "maps_shared"), 2);
	cJSON_Delete(st);

	/* no fresh read: the registry reads for itself */
	f.ret = -ENOENT;
	pyreg_note_pid(r, (uint32_t)pids[2], false);
	sample(r, pids[2]);
	st = status(r);
	CHECK_STREQ(str(entry(st, pids[2]), "state"), "frames");
	CHECK_EQ_INT(num(st, "scans"), 2);
	CHECK_EQ_INT(num(st, "maps_shared"), 2);
	cJSON_Delete(st);
out:
	pyreg_free(r);
	for (int i = 0; i < 3; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], &s, 0);
		}
	unlink(out);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s TARGET.PY\n", argv[0]);
		return 2;
	}
	target_py = argv[1];
	RUN(test_scans_on_the_pool);
	RUN(test_exec_same_name);
	RUN(test_maps_source);
	return test_summary();
}
