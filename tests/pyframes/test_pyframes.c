// SPDX-License-Identifier: MIT
/*
 * The Python frame reader against the interpreters themselves, for every
 * CPython on this machine (pyenv's 3.9 to 3.13 with shared libpython,
 * Debian's statically linked python3.11); a missing one is skipped with a
 * message.
 * - lines: each line-table decoder gives, for every instruction offset of
 *   many code objects, the line the same interpreter computes (lines.py).
 * - live: a target (target.py) blocks its main thread in outer -> middle
 *   -> hot and a worker in w_outer -> w_inner (time.sleep, GIL released),
 *   writes what sys._current_frames() shows of both and stops itself; the
 *   reader must see exactly those frames (qualified name, file, line) from
 *   outside. Reading a child's memory needs no privilege beyond being its
 *   parent (or root).
 *
 * Usage: test_pyframes TARGET.PY LINES.PY
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyf_int.h"
#include "pyframes.h"
#include "test.h"

static const char *target_py, *lines_py;

struct interp {
	const char *path;
	unsigned minor;
	const char *source; /* expected layout source */
};

static const struct interp interps[] = {
    {"/root/.pyenv/versions/3.9.18/bin/python3.9", 9, "table 3.9"},
    {"/root/.pyenv/versions/3.10.13/bin/python3.10", 10, "table 3.10"},
    {"/root/.pyenv/versions/3.11.7/bin/python3.11", 11, "table 3.11"},
    {"/root/.pyenv/versions/3.12.1/bin/python3.12", 12, "table 3.12"},
    {"/root/.pyenv/versions/3.13.0/bin/python3.13", 13, "_Py_DebugOffsets"},
    {"/usr/bin/python3.11", 11, "table 3.11"},
};

static unsigned ran;

static bool present(const struct interp *in)
{
	if (access(in->path, X_OK) == 0)
		return true;
	fprintf(stderr, "skip %s: not installed\n", in->path);
	return false;
}

/* ---- line tables ---- */

static int decode(unsigned minor, const uint8_t *t, size_t n, int first, int32_t off)
{
	if (minor == 9)
		return pyf_line_lnotab(t, n, first, off);
	if (minor == 10)
		return pyf_line_pep626(t, n, first, off);
	return pyf_line_locations(t, n, first, off);
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	if (!strcmp(s, "-"))
		return 0;
	for (; s[0] && s[1] && n < cap; s += 2) {
		unsigned v;

		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void lines_of(const struct interp *in)
{
	static uint8_t table[PYF_MAX_LINETABLE];
	char cmd[512], line[200000];
	unsigned codes = 0, offsets = 0, wrong = 0;
	size_t tlen = 0;
	int first = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s -E -S %s", in->path, lines_py);
	f = popen(cmd, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char hex[sizeof(line)];
		int off, want;

		if (sscanf(line, "C %d %s", &first, hex) == 2) {
			tlen = unhex(hex, table, sizeof(table));
			codes++;
		} else if (sscanf(line, "L %d %d", &off, &want) == 2) {
			int got = decode(in->minor, table, tlen, first, off);

			offsets++;
			if (got != want && wrong++ < 5)
				TEST_FAIL_AT(
				    "%s: code #%u (first line %d) offset %d: line %d, expected %d",
				    in->path, codes, first, off, got, want);
		}
	}
	CHECK_EQ_INT(pclose(f), 0);
	CHECK(codes > 100);
	CHECK_EQ_INT(wrong, 0);
	fprintf(stderr, "%s: %u code objects, %u offsets, %u wrong\n", in->path, codes, offsets,
		wrong);
}

static void test_line_tables(void)
{
	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
		if (present(&interps[i]))
			lines_of(&interps[i]);
}

/* Decoders on hand-made tables, including hostile ones. */
static void test_line_tables_edges(void)
{
	/* lnotab: +6 bytes +1 line, +250 bytes -2 lines */
	const uint8_t lnotab[] = {6, 1, 250, (uint8_t)-2};
	/* PEP 626: [0,4) line+1, [4,6) no line, [6,10) line+2 */
	const uint8_t pep626[] = {4, 1, 2, 0x80, 4, 2};
	/* locations: one-line form delta 1 (2 units), no location (1 unit),
	 * long form (code 14) delta -3 encoded as svarint 7 (1 unit) */
	const uint8_t loc[] = {
	    0x80 | 11 << 3 | 1, 0, 0, 0x80 | 15 << 3, 0x80 | 14 << 3, 7, 0, 1, 1};
	const uint8_t junk[] = {0x05, 0x7f, 0xff};

	CHECK_EQ_INT(pyf_line_lnotab(lnotab, sizeof(lnotab), 10, 0), 10);
	CHECK_EQ_INT(pyf_line_lnotab(lnotab, sizeof(lnotab), 10, 6), 11);
	CHECK_EQ_INT(pyf_line_lnotab(lnotab, sizeof(lnotab), 10, 255), 11);
	CHECK_EQ_INT(pyf_line_lnotab(lnotab, sizeof(lnotab), 10, 256), 9);
	CHECK_EQ_INT(pyf_line_lnotab(lnotab, sizeof(lnotab), 10, -1), 10);
	CHECK_EQ_INT(pyf_line_pep626(pep626, sizeof(pep626), 10, 2), 11);
	CHECK_EQ_INT(pyf_line_pep626(pep626, sizeof(pep626), 10, 4), -1);
	CHECK_EQ_INT(pyf_line_pep626(pep626, sizeof(pep626), 10, 8), 13);
	CHECK_EQ_INT(pyf_line_pep626(pep626, sizeof(pep626), 10, 10), -1);
	CHECK_EQ_INT(pyf_line_locations(loc, sizeof(loc), 10, 0), 11);
	CHECK_EQ_INT(pyf_line_locations(loc, sizeof(loc), 10, 2), 11);
	CHECK_EQ_INT(pyf_line_locations(loc, sizeof(loc), 10, 4), -1);
	CHECK_EQ_INT(pyf_line_locations(loc, sizeof(loc), 10, 6), 8);
	CHECK_EQ_INT(pyf_line_locations(loc, sizeof(loc), 10, 8), -1);
	/* a table not starting at an entry, and a varint running off the end */
	CHECK_EQ_INT(pyf_line_locations(junk, sizeof(junk), 10, 0), -1);
	CHECK_EQ_INT(pyf_line_locations((const uint8_t[]){0x80 | 13 << 3, 0xff}, 2, 10, 0),
		     10 - 31);
	CHECK_EQ_INT(pyf_line_pep626(junk, 1, 10, 0), -1);
}

/* ---- live processes ---- */

#define MAXF 64

struct ref_thread {
	unsigned tid, n;
	char name[MAXF][128], file[MAXF][256];
	int line[MAXF];
};

static int read_ref(const char *path, struct ref_thread *t, int maxt)
{
	char line[600];
	int nt = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned tid;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "T %u", &tid) == 1 && nt < maxt) {
			memset(&t[nt], 0, sizeof(t[nt]));
			t[nt++].tid = tid;
		} else if (line[0] == 'F' && nt && t[nt - 1].n < MAXF) {
			struct ref_thread *r = &t[nt - 1];
			char *name = line + 2, *file = strchr(name, '\t'), *ln;

			if (!file || !(ln = strchr(file + 1, '\t')))
				continue;
			*file++ = '\0';
			*ln++ = '\0';
			snprintf(r->name[r->n], sizeof(r->name[0]), "%.127s", name);
			snprintf(r->file[r->n], sizeof(r->file[0]), "%.255s", file);
			r->line[r->n++] = atoi(ln);
		}
	}
	fclose(f);
	return nt;
}

/* Start the target and wait until it stopped itself. */
static pid_t start_target(const struct interp *in, const char *out)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(in->path, in->path, "-E", "-S", target_py, out, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	for (int i = 0; i < 3000; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG | WUNTRACED);

		if (w == pid && WIFSTOPPED(st))
			return pid;
		if (w == pid) {
			TEST_FAIL_AT("%s: target exited (status %d) before stopping", in->path, st);
			return -1;
		}
		usleep(10000);
	}
	TEST_FAIL_AT("%s: target did not stop within 30 s", in->path);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void check_thread(struct pyf_proc *p, const struct interp *in, const struct ref_thread *t)
{
	struct pyf_frame fr[MAXF];
	unsigned n = 0, entries = 0;
	int r = pyf_thread_stack(p, t->tid, fr, MAXF, &n);

	CHECK_EQ_INT(r, 0);
	CHECK_EQ_INT(n, t->n);
	for (unsigned i = 0; i < n && i < t->n; i++) {
		const char *q = NULL, *file = NULL;
		int line = 0;

		r = pyf_resolve(p, fr[i].code, fr[i].instr, &q, &file, &line);
		CHECK_EQ_INT(r, 0);
		if (r < 0)
			continue;
		if (strcmp(q, t->name[i]) || strcmp(file, t->file[i]) || line != t->line[i])
			TEST_FAIL_AT("%s tid %u frame %u: %s %s:%d, expected %s %s:%d", in->path,
				     t->tid, i, q, file, line, t->name[i], t->file[i], t->line[i]);
		if (fr[i].flags & PYF_FRAME_ENTRY) {
			entries++;
			/* 3.11+: the native activation's marker; 3.9/3.10 pair
			 * activations with frames one to one */
			if (in->minor >= 11)
				CHECK(fr[i].marker != 0);
		}
	}
	/* the outermost frame always closes an activation */
	if (n)
		CHECK(fr[n - 1].flags & PYF_FRAME_ENTRY);
	if (in->minor <= 10)
		CHECK_EQ_INT(entries, n);
	else
		CHECK(entries >= 1 && entries < n);
	/* a frame is not a code object: refused, not misnamed */
	if (n) {
		const char *q, *file;
		int line;

		CHECK_EQ_INT(pyf_resolve(p, fr[0].frame, 0, &q, &file, &line), -EINVAL);
	}
	/* a depth limit truncates */
	if (n > 2)
		CHECK_EQ_INT(pyf_thread_stack(p, t->tid, fr, 2, &n), PYF_TRUNCATED);
}

static void live(const struct interp *in)
{
	char dir[] = "/tmp/pyframes.XXXXXX", out[64];
	struct ref_thread ref[2];
	struct pyf_proc *p = NULL;
	pid_t pid;
	int nt, st;

	if (!mkdtemp(dir)) {
		TEST_FAIL_AT("mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(out, sizeof(out), "%s/ref", dir);
	pid = start_target(in, out);
	if (pid > 0) {
		nt = read_ref(out, ref, 2);
		CHECK_EQ_INT(nt, 2);
		CHECK_EQ_INT(pyf_attach((uint32_t)pid, NULL, &p), 0);
		if (p) {
			CHECK(pyf_reason(p) == NULL);
			if (pyf_reason(p))
				fprintf(stderr, "%s: %s\n", in->path, pyf_reason(p));
			CHECK_EQ_INT((pyf_version(p) >> 16) & 0xff, in->minor);
			CHECK_STREQ(pyf_layout_source(p), in->source);
			for (int i = 0; i < nt && !pyf_reason(p); i++)
				check_thread(p, in, &ref[i]);
			/* the main thread again: every code object from the cache */
			if (nt > 0 && !pyf_reason(p))
				check_thread(p, in, &ref[0]);
			fprintf(stderr, "%s: version %#x, %s, module %s, %d threads checked\n",
				in->path, pyf_version(p), pyf_layout_source(p), p->module, nt);
			pyf_free(p);
		}
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ran++;
	}
	unlink(out);
	rmdir(dir);
}

static void test_live(void)
{
	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
		if (present(&interps[i]))
			live(&interps[i]);
}

/* This test program is no Python: a reason, no frames. */
static void test_not_python(void)
{
	struct pyf_proc *p = NULL;
	struct pyf_frame fr[4];
	unsigned n = 7;

	CHECK_EQ_INT(pyf_attach((uint32_t)getpid(), NULL, &p), 0);
	if (!p)
		return;
	CHECK(pyf_reason(p) != NULL);
	CHECK(pyf_reason(p) && strstr(pyf_reason(p), "not a CPython"));
	CHECK_EQ_INT(pyf_thread_stack(p, (uint32_t)getpid(), fr, 4, &n), -ENOTSUP);
	CHECK_EQ_INT(n, 0);
	pyf_free(p);
	CHECK(pyf_attach(0x7ffffff0u, NULL, &p) < 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s TARGET.PY LINES.PY\n", argv[0]);
		return 2;
	}
	target_py = argv[1];
	lines_py = argv[2];
	RUN(test_line_tables_edges);
	RUN(test_not_python);
	RUN(test_line_tables);
	RUN(test_live);
	if (!ran)
		TEST_SKIP("no CPython interpreter found");
	return test_summary();
}
