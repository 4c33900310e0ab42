// SPDX-License-Identifier: MIT
/*
 * What loading one object costs the symbolizer: symobj_load() of each file
 * named (default: Debian's python3.11, libc, libstdc++), with and without
 * source lines, median of REPS loads; and how many names came from PLT
 * stubs and MiniDebugInfo. Prints one line per file and mode.
 *
 *   bench_symobj [-n REPS] [FILE]...
 */
#include "sym/sym_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void bench(const char *path, bool lines, int reps)
{
	struct symobj_opts op = {.lines = lines, .max_dwarf_bytes = 64u << 20, .path = path};
	double *t = calloc((size_t)reps, sizeof(*t));
	size_t nsyms = 0, plt = 0, bytes = 0;
	bool mini = false, dw = false;
	for (int i = 0; t && i < reps; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct sym_obj *o;
		double t0 = now_ms();
		if (fd < 0 || symobj_load(fd, &op, &o) < 0) {
			fprintf(stderr, "%s: cannot load\n", path);
			if (fd >= 0)
				close(fd);
			free(t);
			return;
		}
		t[i] = now_ms() - t0;
		close(fd);
		nsyms = o->nsyms;
		bytes = o->bytes;
		mini = o->from_minidebug;
		dw = o->dw != NULL;
		plt = 0;
		for (size_t k = 0; k < o->nsyms; k++) {
			const char *n = o->strs + o->syms[k].name;
			size_t l = strlen(n);
			plt += l > 4 && !strcmp(n + l - 4, "@plt");
		}
		symobj_free(o);
	}
	if (!t)
		return;
	qsort(t, (size_t)reps, sizeof(*t), dbl_cmp);
	printf("%-48s lines=%d  median %.2f ms  symbols %zu (plt %zu)  minidebug %d  dwarf %d  "
	       "bytes %zu\n",
	       path, lines, t[reps / 2], nsyms, plt, mini, dw, bytes);
	free(t);
}

int main(int argc, char **argv)
{
	static const char *defaults[] = {"/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6",
					 "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"};
	int reps = 20, first = 1;
	if (argc > 2 && !strcmp(argv[1], "-n")) {
		reps = atoi(argv[2]);
		first = 3;
	}
	if (reps < 1)
		reps = 1;
	const char **files = first < argc ? (const char **)argv + first : defaults;
	int n = first < argc ? argc - first : 3;
	for (int i = 0; i < n; i++) {
		bench(files[i], false, reps);
		bench(files[i], true, reps);
	}
	return 0;
}
