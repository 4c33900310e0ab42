// SPDX-License-Identifier: MIT
/*
 * The cache of code objects named from the interpreter's file
 * (daemon/pyframes/pyfstatic.c), shared by every process of that file.
 *
 * - in this process: objects that are initialized data of this test
 *   program stand in for an interpreter's deep-frozen code; they are named
 *   from the file, the same for a second reader (a cache hit), never from
 *   what the process wrote over them, and a code object whose fields now
 *   point elsewhere (a freed address reused) is named afresh;
 * - live: two processes of each interpreter, each printing the address of
 *   one of its frozen importlib code objects; from the second one on, 3.11
 *   and 3.12 (which deep-freeze that code into libpython or the executable)
 *   name it from the cache, counted in pyf_static_stats(); the others read
 *   it from the process and the cache is not used. Names and first lines
 *   must be what the process itself says.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pyf_int.h"
#include "pyframes.h"
#include "test.h"

/* ---- this process: initialized data of this program's file ---- */

/* A compact ASCII str as 3.11 lays it out (data at 48). */
struct fake_str {
	uint64_t refcnt, type;
	int64_t length;
	uint64_t hash;
	uint32_t state, pad;
	uint64_t wstr;
	char data[64];
};

struct fake_bytes {
	uint64_t refcnt, type;
	int64_t size;
	uint64_t hash;
	uint8_t sval[16];
};

#define ASCII_STATE (1u << 2 | 1u << 5 | 1u << 6) /* kind 1, compact, ascii */
#define FAKE_STR(text)                                                                      \
	{                                                                                   \
		.refcnt = 1, .length = sizeof(text) - 1, .state = ASCII_STATE, .data = text \
	}

/* In .data (initialized, so in the file): the type words stay 0 there, as
 * the loader's relocations leave them in a shared libpython's file. */
static struct fake_str s_qual = FAKE_STR("Static.f"), s_qual2 = FAKE_STR("Static.g"),
		       s_file = FAKE_STR("<frozen s>");
static struct fake_bytes s_table = {.refcnt = 1,
				    .size = 2,
				    .sval = {0x80 | 11 << 3 | 7, 0x80 | 11 << 3 | 7}};
static uint8_t s_code[256] = {1};
static uint64_t tp_code[8] = {1}, tp_str[8] = {1}, tp_bytes[8] = {1};

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

/* This program's mapping at file offset 0. */
static bool own_mapping(uint64_t *start, uint64_t *end)
{
	char exe[512], line[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool found = false;
	FILE *f;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	f = fopen("/proc/self/maps", "r");
	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		int pos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &s, &e, &off, &pos) >= 3 && pos &&
		    off == 0 && !strcmp(line + pos, exe)) {
			*start = s;
			*end = e;
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

/* A reader of this process pretending it is a 3.11 whose image is this
 * program's file. */
static struct pyf_proc *fake_reader(uint64_t start, uint64_t end)
{
	struct pyf_proc *p = NULL;

	CHECK_EQ_INT(pyf_attach((uint32_t)getpid(), NULL, &p), 0);
	if (!p)
		return NULL;
	p->reason[0] = '\0';
	pyf_layout_table(11, &p->lay);
	p->code_type = (uint64_t)(uintptr_t)tp_code;
	p->unicode_type = (uint64_t)(uintptr_t)tp_str;
	p->bytes_type = (uint64_t)(uintptr_t)tp_bytes;
	CHECK_EQ_INT(pyf_image_from_mapping(p, start, end), 0);
	CHECK(p->img.known);
	return p;
}

static void test_image_file(void)
{
	struct pyf_static_stats s0, s1;
	struct pyf_proc *p, *p2, *p3;
	static struct fake_str heap_name = FAKE_STR("Heap.h");
	struct fake_str *h = malloc(sizeof(*h));
	uint64_t start, end;
	const char *q, *f;
	int line;

	CHECK(own_mapping(&start, &end));
	p = fake_reader(start, end);
	p2 = fake_reader(start, end);
	p3 = fake_reader(start, end);
	if (!p || !p2 || !p3 || !h)
		goto out;
	/* a code object of the 3.11 layout pointing at the static objects */
	put64(s_code, 8, p->code_type);
	put64(s_code, 112, (uint64_t)(uintptr_t)&s_file);
	put64(s_code, 120, (uint64_t)(uintptr_t)&s_qual);
	put64(s_code, 128, (uint64_t)(uintptr_t)&s_qual);
	put64(s_code, 136, (uint64_t)(uintptr_t)&s_table);
	memcpy(s_code + 72, &(int32_t){5}, 4);

	/* the first reader fills the cache from the file */
	pyf_static_stats(&s0);
	CHECK_EQ_INT(pyf_resolve(p, (uint64_t)(uintptr_t)s_code, 4, &q, &f, &line), 0);
	CHECK_STREQ(q, "Static.f");
	CHECK_STREQ(f, "<frozen s>");
	CHECK_EQ_INT(line, 6);
	pyf_static_stats(&s1);
	CHECK_EQ_U64(s1.fills, s0.fills + 1);
	CHECK_EQ_U64(s1.hits, s0.hits);

	/* a second reader of the same file: from the cache */
	CHECK_EQ_INT(pyf_resolve(p2, (uint64_t)(uintptr_t)s_code, 16, &q, &f, &line), 0);
	CHECK_STREQ(q, "Static.f");
	CHECK_EQ_INT(line, 7);
	s0 = s1;
	pyf_static_stats(&s1);
	CHECK_EQ_U64(s1.hits, s0.hits + 1);
	CHECK_EQ_U64(s1.fills, s0.fills);

	/* what a process writes over its copy of the image never reaches a
	 * name: the file's text, whether from the cache or filled afresh */
	memcpy(s_qual.data, "Written!", 8);
	memcpy(s_qual2.data, "Written2", 8);
	CHECK_EQ_INT(pyf_resolve(p3, (uint64_t)(uintptr_t)s_code, 4, &q, &f, &line), 0);
	CHECK_STREQ(q, "Static.f");

	/* the same address, now another code object (its qualified name
	 * elsewhere): the first reader names it afresh, never the stale one */
	put64(s_code, 128, (uint64_t)(uintptr_t)&s_qual2);
	s0 = s1;
	pyf_static_stats(&s0);
	CHECK_EQ_INT(pyf_resolve(p, (uint64_t)(uintptr_t)s_code, 4, &q, &f, &line), 0);
	CHECK_STREQ(q, "Static.g");
	pyf_static_stats(&s1);
	CHECK_EQ_U64(s1.fills, s0.fills + 1);

	/* a name outside the image (the heap): all three read from the
	 * process, as before (whose type words, unlike the file's, are set),
	 * and the cache is not asked */
	*h = heap_name;
	h->type = p->unicode_type;
	s_file.type = p->unicode_type;
	s_table.type = p->bytes_type;
	put64(s_code, 128, (uint64_t)(uintptr_t)h);
	s0 = s1;
	CHECK_EQ_INT(pyf_resolve(p, (uint64_t)(uintptr_t)s_code, 4, &q, &f, &line), 0);
	CHECK_STREQ(q, "Heap.h");
	CHECK_STREQ(f, "<frozen s>");
	pyf_static_stats(&s1);
	CHECK_EQ_U64(s1.fills, s0.fills);
	CHECK_EQ_U64(s1.hits, s0.hits);

	/* no longer a code object: refused before the cache is asked */
	put64(s_code, 128, (uint64_t)(uintptr_t)&s_qual);
	put64(s_code, 8, 0x1234);
	CHECK_EQ_INT(pyf_resolve(p2, (uint64_t)(uintptr_t)s_code, 4, &q, &f, &line), -EINVAL);
	memcpy(s_qual.data, "Static.f", 8);
	memcpy(s_qual2.data, "Static.g", 8);
out:
	free(h);
	pyf_free(p);
	pyf_free(p2);
	pyf_free(p3);
}

/* ---- live: two processes of each interpreter ---- */

struct interp {
	const char *path;
	bool deepfrozen; /* 3.11, 3.12: frozen modules' code in the image */
};

static const struct interp interps[] = {
	{"/root/.pyenv/versions/3.9.18/bin/python3.9", false},
	{"/root/.pyenv/versions/3.10.13/bin/python3.10", false},
	{"/root/.pyenv/versions/3.11.7/bin/python3.11", true},
	{"/root/.pyenv/versions/3.12.1/bin/python3.12", true},
	{"/root/.pyenv/versions/3.13.0/bin/python3.13", false},
	{"/usr/bin/python3.11", true},
};

static const char prog[] = "import importlib._bootstrap as b, sys\n"
			   "c = b._find_and_load.__code__\n"
			   "sys.stdout.write('%d %d\\n' % (id(c), c.co_firstlineno))\n"
			   "sys.stdout.flush()\n"
			   "sys.stdin.read()\n";

struct child {
	pid_t pid;
	int in; /* its stdin: closing it ends it */
	uint64_t code;
	int first;
};

static bool child_start(const char *py, struct child *ch)
{
	int in[2], out[2];
	char buf[128];
	ssize_t n;
	FILE *f;

	if (pipe(in) || pipe(out))
		return false;
	ch->pid = fork();
	if (ch->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(py, py, "-E", "-S", "-c", prog, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->in = in[1];
	f = fdopen(out[0], "r");
	n = f && fgets(buf, sizeof(buf), f) ? (ssize_t)strlen(buf) : -1;
	if (f)
		fclose(f);
	else
		close(out[0]);
	return ch->pid > 0 && n > 0 && sscanf(buf, "%" SCNu64 " %d", &ch->code, &ch->first) == 2;
}

static void child_end(struct child *ch)
{
	int st;

	close(ch->in);
	if (ch->pid > 0) {
		kill(ch->pid, SIGKILL);
		waitpid(ch->pid, &st, 0);
	}
}

/* Name the child's frozen code object; 0 or -1. */
static int name_in(const struct interp *in, struct child *ch)
{
	struct pyf_proc *p = NULL;
	const char *q, *f;
	int line = 0, r = -1;

	CHECK_EQ_INT(pyf_attach((uint32_t)ch->pid, NULL, &p), 0);
	if (!p)
		return -1;
	CHECK(pyf_reason(p) == NULL);
	if (!pyf_reason(p)) {
		r = pyf_resolve(p, ch->code, -1, &q, &f, &line);
		CHECK_EQ_INT(r, 0);
		if (r == 0) {
			CHECK_STREQ(q, "_find_and_load");
			CHECK_STREQ(f, "<frozen importlib._bootstrap>");
			CHECK_EQ_INT(line, ch->first);
		}
	}
	if (r)
		fprintf(stderr, "%s: %s\n", in->path, pyf_reason(p) ? pyf_reason(p) : "?");
	pyf_free(p);
	return r;
}

static void live(const struct interp *in)
{
	struct child a = {0}, b = {0};
	struct pyf_static_stats s0, s1, s2;

	if (!child_start(in->path, &a) || !child_start(in->path, &b)) {
		TEST_FAIL_AT("%s: children did not start", in->path);
		goto out;
	}
	pyf_static_stats(&s0);
	if (name_in(in, &a))
		goto out;
	pyf_static_stats(&s1);
	if (name_in(in, &b))
		goto out;
	pyf_static_stats(&s2);
	if (in->deepfrozen) {
		/* the first process filled it (or found it filled) */
		CHECK_EQ_U64(s1.hits + s1.fills, s0.hits + s0.fills + 1);
		/* the second, another process of the same file: a hit */
		CHECK_EQ_U64(s2.hits, s1.hits + 1);
		CHECK_EQ_U64(s2.fills, s1.fills);
	} else {
		CHECK_EQ_U64(s2.hits, s0.hits);
		CHECK_EQ_U64(s2.fills, s0.fills);
	}
	fprintf(stderr, "%s: hits %" PRIu64 " -> %" PRIu64 ", fills %" PRIu64 " -> %" PRIu64 "\n",
		in->path, s0.hits, s2.hits, s0.fills, s2.fills);
out:
	child_end(&a);
	child_end(&b);
}

static void test_live(void)
{
	unsigned ran = 0;

	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++) {
		if (access(interps[i].path, X_OK)) {
			fprintf(stderr, "skip %s: not installed\n", interps[i].path);
			continue;
		}
		live(&interps[i]);
		ran++;
	}
	if (!ran)
		fprintf(stderr, "skip live: no CPython interpreter found\n");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_image_file);
	RUN(test_live);
	return test_summary();
}
