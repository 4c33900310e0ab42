// SPDX-License-Identifier: MIT
/*
 * What naming a new Python process's frames costs the daemon: the part of
 * the CPU sampler's cost that grows with short-lived Python processes (a
 * build's `python3 -c`), measured without the rest of the host.
 *
 * N times (after 10 not measured, as an always-on daemon has seen the
 * interpreter before): start PYTHON -c CODE, stop it after 0-30 ms (a
 * different moment each time) and again every 2 ms until it is caught in
 * Python code, attach the reader (pyf_attach), walk its main thread's
 * frames (pyf_thread_stack, not timed: BPF reads them in the daemon) and
 * name every frame (pyf_resolve) once cold, as the daemon does for a
 * process's first samples, then once more (cached). Times are the
 * thread's CPU time, so a loaded host's preemption is not in them.
 *
 *   bench-pycold [N] [PYTHON] [CODE]
 *
 * Defaults: 60, /usr/bin/python3 and bench/cpu/churn.sh's
 * 'import json; json.dumps(list(range(1000)))'.
 */
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyframes.h"

#define MAXF 256

extern char **environ;

/* Absent from builds before the shared cache: then reported as such. */
__attribute__((weak)) void pyf_static_stats(struct pyf_static_stats *out);

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double cold_us, warm_us, attach_us;
static unsigned stacks, frames, named;

/* Stopped in Python: the reader attached and the main thread's frames
 * walked into fr; false when it is not (yet) running Python code. */
static bool stopped_in_python(pid_t pid, struct pyf_proc **p, struct pyf_frame *fr, unsigned *n,
			      double *attach)
{
	double t0;
	int st;

	kill(pid, SIGSTOP);
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st))
		return false;
	if (!*p) {
		t0 = cpu_us();
		if (pyf_attach((uint32_t)pid, NULL, p) < 0)
			*p = NULL;
		*attach = cpu_us() - t0;
		if (*p && pyf_reason(*p)) { /* starting: attached again later */
			pyf_free(*p);
			*p = NULL;
		}
	}
	*n = 0;
	return *p && pyf_thread_stack(*p, (uint32_t)pid, fr, MAXF, n) >= 0 && *n;
}

/* One process, measured when count. */
static void one(const char *py, const char *code, unsigned delay_us, bool count)
{
	struct pyf_frame fr[MAXF];
	struct pyf_proc *p = NULL;
	const char *q, *f;
	unsigned n = 0;
	int line, st;
	double t0, attach = 0;
	bool in_py = false;
	char *argv[] = {(char *)py, "-c", (char *)code, NULL};
	pid_t pid;

	/* not fork(): its copy-on-write would make this process's next writes
	 * fault, in the timed part, which the daemon never pays */
	if (posix_spawn(&pid, py, NULL, NULL, argv, environ))
		return;
	usleep(delay_us);
	/* until caught in Python code, 2 ms apart, as a sampler would */
	for (int i = 0; i < 50 && !(in_py = stopped_in_python(pid, &p, fr, &n, &attach)); i++) {
		if (kill(pid, SIGCONT) < 0 || waitpid(pid, &st, WNOHANG) == pid)
			break;
		usleep(2000);
	}
	if (in_py && count) {
		attach_us += attach;
		stacks++;
		frames += n;
		t0 = cpu_us();
		for (unsigned i = 0; i < n; i++)
			named += pyf_resolve(p, fr[i].code, fr[i].instr, &q, &f, &line) == 0;
		cold_us += cpu_us() - t0;
		t0 = cpu_us();
		for (unsigned i = 0; i < n; i++)
			pyf_resolve(p, fr[i].code, fr[i].instr, &q, &f, &line);
		warm_us += cpu_us() - t0;
	} else if (in_py) { /* the warm-up fills what lasts across processes */
		for (unsigned i = 0; i < n; i++)
			pyf_resolve(p, fr[i].code, fr[i].instr, &q, &f, &line);
	}
	pyf_free(p);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 60;
	const char *py = argc > 2 ? argv[2] : "/usr/bin/python3";
	const char *code = argc > 3 ? argv[3] : "import json; json.dumps(list(range(1000)))";
	struct pyf_static_stats s0 = {0}, s1 = {0};

	/* a warm-up, as an always-on daemon is: the interpreter's file
	 * inspected, the image's code objects read once */
	for (unsigned i = 0; i < 10; i++)
		one(py, code, (i * 7919) % 30000, false);
	if (pyf_static_stats)
		pyf_static_stats(&s0);
	for (unsigned i = 0; i < n; i++)
		one(py, code, (i * 7919) % 30000, true); /* 0-30 ms, spread */
	if (pyf_static_stats)
		pyf_static_stats(&s1);
	printf("%s: %u processes, %u stopped in Python, %.1f frames each, %u of %u named\n", py, n,
	       stacks, stacks ? (double)frames / stacks : 0, named, frames);
	if (stacks)
		printf("cpu per process: attach %.0f us; naming its stack cold %.0f us (%.2f us per "
		       "frame), cached %.1f us\n",
		       attach_us / stacks, cold_us / stacks, cold_us / frames, warm_us / stacks);
	if (pyf_static_stats)
		printf("image code cache: %llu hits, %llu fills\n",
		       (unsigned long long)(s1.hits - s0.hits),
		       (unsigned long long)(s1.fills - s0.fills));
	else
		printf("image code cache: none in this build\n");
	return 0;
}
