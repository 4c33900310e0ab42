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
 * - subinterpreters: a thread running code in a subinterpreter
 *   (subinterp.py) shows its frames there, then its main interpreter's.
 *
 * Usage: test_pyframes TARGET.PY LINES.PY SUBINTERP.PY
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pyf_int.h"
#include "pyframes.h"
#include "test.h"

static const char *target_py, *lines_py, *subinterp_py;

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

/* ---- _Py_DebugOffsets without a 3.14 or 3.15 to run ---- */

/*
 * A _Py_DebugOffsets image laid out as 3.14 declares it
 * (Include/internal/pycore_debug_offsets.h: interpreter_state gains
 * threads_main, interpreter_frame gains stackpointer, set_object is new),
 * with extra thread-state and frame fields (grow = 1) as 3.15's
 * pre-releases add: the groups must be found where they moved.
 */
static size_t fake_dbo(uint64_t *s, bool grow)
{
	size_t i = 0;

	memcpy(&s[i++], "xdebugpy", 8);
	s[i++] = 0x030e00f0;
	s[i++] = 0;				 /* free_threaded */
	s[i++] = 2000, s[i++] = 8, s[i++] = 632; /* runtime_state */
	s[i++] = 9000, s[i++] = 8, s[i++] = 7264, s[i++] = 7344, s[i++] = 7352;
	for (int k = 0; k < 9; k++)
		s[i++] = 7400 + 8 * k; /* gc ... gil_runtime_state_holder */
	/* thread_state */
	s[i++] = 320, s[i++] = 0, s[i++] = 8, s[i++] = 16, s[i++] = 72, s[i++] = 152, s[i++] = 160,
	s[i++] = 232, s[i++] = 32;
	if (grow)
		for (int k = 0; k < 7; k++)
			s[i++] = 240 + 8 * k;
	/* interpreter_frame: size, previous, executable, instr_ptr,
	 * localsplus, owner, stackpointer (+ tlbc_index) */
	s[i++] = 88, s[i++] = 8, s[i++] = 0, s[i++] = 56, s[i++] = 80, s[i++] = 74, s[i++] = 64;
	if (grow)
		s[i++] = 76;
	/* code_object */
	s[i++] = 216, s[i++] = 112, s[i++] = 120, s[i++] = 128, s[i++] = 136, s[i++] = 68,
	s[i++] = 52, s[i++] = 96, s[i++] = 104, s[i++] = 208;
	s[i++] = 16, s[i++] = 8;			      /* pyobject */
	s[i++] = 416, s[i++] = 24, s[i++] = 88, s[i++] = 168; /* type */
	s[i++] = 32, s[i++] = 24, s[i++] = 16;		      /* tuple */
	s[i++] = 40, s[i++] = 24, s[i++] = 16;		      /* list */
	s[i++] = 200, s[i++] = 32, s[i++] = 40, s[i++] = 48;  /* set */
	s[i++] = 48, s[i++] = 32, s[i++] = 40;		      /* dict */
	s[i++] = 24, s[i++] = 16;			      /* float */
	s[i++] = 32, s[i++] = 16, s[i++] = 24;		      /* long */
	s[i++] = 40, s[i++] = 16, s[i++] = 32;		      /* bytes */
	s[i++] = 64, s[i++] = 32, s[i++] = 16, s[i++] = 40;   /* unicode */
	s[i++] = 240, s[i++] = 200;			      /* gc */
	return i;
}

static void test_debug_offsets_later(void)
{
	for (int grow = 0; grow <= 1; grow++) {
		uint64_t s[128] = {0};
		struct pyf_layout l;
		size_t n = fake_dbo(s, grow);
		const char *why = pyf_layout_debug_offsets(s, n, 14 + grow, 208, &l);

		CHECK(why == NULL);
		if (why) {
			fprintf(stderr, "grow %d: %s\n", grow, why);
			continue;
		}
		CHECK_EQ_INT(l.rt_interp_head, 632);
		CHECK_EQ_INT(l.is_threads_head, 7344);
		CHECK_EQ_INT(l.ts_frame, 72);
		CHECK_EQ_INT(l.ts_native_tid, 160);
		CHECK_EQ_INT(l.if_owner, 74);
		CHECK_EQ_INT(l.if_instr, 56);
		CHECK_EQ_INT(l.co_qualname, 128);
		CHECK_EQ_INT(l.co_code_adaptive, 208);
		CHECK_EQ_INT(l.co_firsttraceable, PYF_NONE);
		CHECK_EQ_INT(l.str_ascii_size, 40);
		CHECK(l.tagged_code);
		/* the code anchor must hold: another tp_basicsize is refused */
		CHECK(pyf_layout_debug_offsets(s, n, 14, 200, &l) != NULL);
	}
	{
		uint64_t s[128] = {0};
		struct pyf_layout l;
		size_t n = fake_dbo(s, false);

		s[2] = 1;
		CHECK(pyf_layout_debug_offsets(s, n, 14, 208, &l) != NULL);
		s[2] = 0;
		memcpy(s, "xdebugpz", 8);
		CHECK(pyf_layout_debug_offsets(s, n, 14, 208, &l) != NULL);
		memset(s, 0xff, sizeof(s));
		memcpy(s, "xdebugpy", 8);
		s[2] = 0;
		CHECK(pyf_layout_debug_offsets(s, 128, 14, 208, &l) != NULL);
	}
}

/* ---- hostile memory: fake interpreter structures in this process ---- */

/* A compact ASCII str as 3.11 lays it out (data at 48). */
struct fake_str {
	uint64_t refcnt, type;
	int64_t length;
	uint64_t hash;
	uint32_t state, pad;
	uint64_t wstr;
	char data[700];
};

struct fake_bytes {
	uint64_t refcnt, type;
	int64_t size;
	uint64_t hash;
	uint8_t sval[16];
};

static void fake_str_init(struct fake_str *s, uint64_t type, const char *text)
{
	memset(s, 0, sizeof(*s));
	s->type = type;
	s->length = (int64_t)strlen(text);
	s->state = 1u << 2 | 1u << 5 | 1u << 6; /* kind 1, compact, ascii */
	memcpy(s->data, text, strlen(text));
}

static void put64(uint8_t *b, size_t off, uint64_t v)
{
	memcpy(b + off, &v, 8);
}

/* A code object's ident, as BPF computes it at a sample (0: unreadable) */
static uint32_t code_ident(struct pyf_proc *p, uint64_t code)
{
	__u64 w[PYSTACK_CODE_IDENT_BYTES / 8];

	if (pyf_read(p, code + pyf_ident_off(&p->lay), w, sizeof(w)))
		return 0;
	return pystack_code_ident(w);
}

static void test_hostile(void)
{
	static uint8_t rt[64], interp[32], ts[400], cframe[32], frame[80], code[256], tp_code[64];
	static uint64_t tp_str[8], tp_bytes[8];
	static struct fake_str name, name2, file, file2, huge;
	static struct fake_bytes table;
	static struct pyf_frame fr[PYF_MAX_WALK + 16];
	struct pyf_proc *p = NULL;
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	const char *q, *f;
	unsigned n;
	int line;

	CHECK_EQ_INT(pyf_attach((uint32_t)getpid(), NULL, &p), 0);
	if (!p)
		return;
	/* pretend to be 3.11, with our own memory as the target's */
	p->reason[0] = '\0';
	pyf_layout_table(11, &p->lay);
	p->runtime = (uint64_t)(uintptr_t)rt;
	p->code_type = (uint64_t)(uintptr_t)tp_code;
	p->unicode_type = (uint64_t)(uintptr_t)tp_str;
	p->bytes_type = (uint64_t)(uintptr_t)tp_bytes;
	put64(rt, 40, (uint64_t)(uintptr_t)interp);
	put64(interp, 16, (uint64_t)(uintptr_t)ts);
	put64(ts, 56, (uint64_t)(uintptr_t)cframe);
	put64(ts, 160, tid);
	put64(cframe, 8, (uint64_t)(uintptr_t)frame);
	put64(frame, 32, (uint64_t)(uintptr_t)code);
	put64(frame, 48, (uint64_t)(uintptr_t)frame); /* previous: itself, forever */
	put64(frame, 56, (uint64_t)(uintptr_t)code + 184 + 4);
	put64(code, 8, p->code_type);
	put64(code, 112, (uint64_t)(uintptr_t)&file);
	put64(code, 120, (uint64_t)(uintptr_t)&name);
	put64(code, 128, (uint64_t)(uintptr_t)&name);
	put64(code, 136, (uint64_t)(uintptr_t)&table);
	memcpy(code + 72, &(int32_t){5}, 4);
	fake_str_init(&name, p->unicode_type, "A.f");
	fake_str_init(&name2, p->unicode_type, "B.g");
	fake_str_init(&file, p->unicode_type, "x.py");
	table.type = p->bytes_type;
	table.size = 2;
	table.sval[0] = 0x80 | 11 << 3 | 7; /* 8 units, line +1 */
	table.sval[1] = 0x80 | 11 << 3 | 7;

	/* a cyclic chain ends at the walk bound, truncated */
	CHECK_EQ_INT(pyf_thread_stack(p, tid, fr, PYF_MAX_WALK + 16, &n), PYF_TRUNCATED);
	CHECK_EQ_INT(n, PYF_MAX_WALK);
	CHECK_EQ_INT(fr[0].instr, 4);
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, fr[0].instr, &q, &f, &line), 0);
	CHECK_STREQ(q, "A.f");
	CHECK_STREQ(f, "x.py");
	CHECK_EQ_INT(line, 6);
	/*
	 * A sample's code object named through the cache, by the ident BPF
	 * read: another code object at the same address with the same first
	 * line (every module's is 1; the next one compiled takes a freed one's
	 * address) gets its own name, never the cached one; and a sample of
	 * an object freed before it was named is refused, not misnamed.
	 */
	{
		uint32_t id1 = code_ident(p, fr[0].code), id2;

		CHECK(id1 != 0);
		CHECK_EQ_INT(pyf_resolve_seen(p, fr[0].code, id1, 4, &q, &f, &line), 0);
		CHECK_STREQ(q, "A.f");
		fake_str_init(&file2, p->unicode_type, "y.py");
		put64(code, 112, (uint64_t)(uintptr_t)&file2);
		put64(code, 128, (uint64_t)(uintptr_t)&name2);
		id2 = code_ident(p, fr[0].code);
		CHECK(id2 != id1);
		CHECK_EQ_INT(pyf_resolve_seen(p, fr[0].code, id2, 4, &q, &f, &line), 0);
		CHECK_STREQ(q, "B.g");
		CHECK_STREQ(f, "y.py");
		CHECK_EQ_INT(pyf_resolve_seen(p, fr[0].code, id1, 4, &q, &f, &line), -ESTALE);
		put64(code, 112, (uint64_t)(uintptr_t)&file);
		put64(code, 128, (uint64_t)(uintptr_t)&name);
		CHECK_EQ_INT(pyf_resolve_seen(p, fr[0].code, id1, 4, &q, &f, &line), 0);
		CHECK_STREQ(q, "A.f");
	}
	/* the same address, now another code object: named afresh */
	put64(code, 128, (uint64_t)(uintptr_t)&name2);
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, 16, &q, &f, &line), 0);
	CHECK_STREQ(q, "B.g");
	CHECK_EQ_INT(line, 7);
	/* a name claiming 2^40 characters is cut at PYF_MAX_STR */
	fake_str_init(&huge, p->unicode_type, "");
	memset(huge.data, 'z', sizeof(huge.data));
	huge.length = (int64_t)1 << 40;
	put64(code, 128, (uint64_t)(uintptr_t)&huge);
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, 0, &q, &f, &line), 0);
	CHECK_EQ_INT(strlen(q), PYF_MAX_STR);
	/* a negative length, a line table of 1 GiB: refused */
	huge.length = -5;
	put64(code, 120, (uint64_t)(uintptr_t)&name2); /* another object */
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, 0, &q, &f, &line), -EFAULT);
	put64(code, 128, (uint64_t)(uintptr_t)&name);
	table.size = (int64_t)1 << 30;
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, 0, &q, &f, &line), -EFAULT);
	table.size = 2;
	/* no longer a code object */
	put64(code, 8, 0x1234);
	CHECK_EQ_INT(pyf_resolve(p, fr[0].code, 0, &q, &f, &line), -EINVAL);
	/* unmapped memory */
	CHECK_EQ_INT(pyf_resolve(p, 8, 0, &q, &f, &line), -EFAULT);
	/* a thread list that loops, without our thread: not found, bounded */
	put64(ts, 8, (uint64_t)(uintptr_t)ts);
	put64(ts, 160, (uint64_t)tid + 1);
	CHECK_EQ_INT(pyf_thread_stack(p, tid, fr, 8, &n), -ENOENT);
	/* a frame chain into unmapped memory: the frames before it */
	put64(ts, 160, tid);
	put64(frame, 48, 0x10);
	CHECK_EQ_INT(pyf_thread_stack(p, tid, fr, 8, &n), PYF_TRUNCATED);
	CHECK_EQ_INT(n, 1);
	pyf_free(p);
}

/* ---- live processes ---- */

#define MAXF 64

struct ref_thread {
	unsigned tid, n;
	char name[MAXF][128], file[MAXF][256];
	int line[MAXF];
};

/* The interpreter's own sys.hexversion, from the "V" line. */
static unsigned ref_hexversion;

/* Code objects with a prologue ("P" lines): a frame caught before its
 * body starts, at each of offs[] (-1: not started). */
#define MAXP 8
struct ref_prologue {
	uint64_t code;
	int first, gen, n;
	int offs[32];
};
static struct ref_prologue ref_pro[MAXP];
static int ref_npro;

static void read_prologue(const char *line)
{
	struct ref_prologue *r = &ref_pro[ref_npro];
	const char *s = line;
	int used;

	if (ref_npro >= MAXP ||
	    sscanf(s, "P %" SCNu64 " %d %d%n", &r->code, &r->first, &r->gen, &used) != 3)
		return;
	s += used;
	for (r->n = 0; r->n < 32 && sscanf(s, "%d%n", &r->offs[r->n], &used) == 1; r->n++)
		s += used;
	ref_npro++;
}

static int read_ref(const char *path, struct ref_thread *t, int maxt)
{
	char line[600];
	int nt = 0;
	FILE *f = fopen(path, "r");

	ref_npro = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned tid;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "V %u", &ref_hexversion) == 1)
			continue;
		if (line[0] == 'P') {
			read_prologue(line);
			continue;
		}
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
static pid_t start_script(const struct interp *in, const char *script, const char *a1,
			  const char *a2, const char *a3)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(in->path, in->path, "-E", "-S", script, a1, a2, a3, (char *)NULL);
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

/* The main thread's stack mapping, where its activations' markers live. */
static bool main_stack(pid_t pid, uint64_t *lo, uint64_t *hi)
{
	char path[64], line[512];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found =
		    strstr(line, "[stack]") && sscanf(line, "%" SCNx64 "-%" SCNx64, lo, hi) == 2;
	fclose(f);
	return found;
}

static void check_thread(struct pyf_proc *p, const struct interp *in, const struct ref_thread *t)
{
	uint64_t lo = 0, hi = 0;
	bool is_main = t->tid == p->pid && main_stack((pid_t)p->pid, &lo, &hi);
	struct pyf_frame fr[MAXF];
	unsigned n = 0, entries = 0;
	int r = pyf_thread_stack(p, t->tid, fr, MAXF, &n);

	if (r != 0)
		TEST_FAIL_AT("%s tid %u (leaf %s): pyf_thread_stack %d", in->path, t->tid,
			     t->name[0], r);
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
			/* ... which lies in that activation's native stack frame:
			 * at least on the thread's stack */
			if (in->minor >= 11 && is_main && (fr[i].marker < lo || fr[i].marker >= hi))
				TEST_FAIL_AT("%s: marker %#" PRIx64
					     " of frame %u outside the stack %#" PRIx64
					     "-%#" PRIx64,
					     in->path, fr[i].marker, i, lo, hi);
		}
	}
	/* 3.11+: older activations sit higher on the stack */
	for (unsigned i = 0, last = 0; in->minor >= 11 && i < n; i++)
		if (fr[i].flags & PYF_FRAME_ENTRY) {
			if (last && fr[i].marker <= fr[last - 1].marker)
				TEST_FAIL_AT("%s tid %u: marker of frame %u not above frame %u's",
					     in->path, t->tid, i, last - 1);
			last = i + 1;
		}
	/* map() calls w_mid from C: a new activation starts there, while
	 * w_mid's call of w_inner stays in it (3.11+ inline Python calls) */
	if (n > 2 && !strcmp(t->name[1], "w_mid")) {
		CHECK(fr[1].flags & PYF_FRAME_ENTRY);
		if (in->minor >= 11)
			CHECK(!(fr[0].flags & PYF_FRAME_ENTRY));
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

/*
 * A frame caught in its prologue (before RESUME: MAKE_CELL, COPY_FREE_VARS,
 * RETURN_GENERATOR and the POP_TOP after it; 3.10's GEN_START) or before
 * its first instruction reads as its function's first line, never -1, on
 * the path of BPF's nodes as on the reader's own. Real code objects of the
 * target, the nodes made as BPF reads them.
 */
static void check_prologue(struct pyf_proc *p, const struct interp *in)
{
	const struct pyf_layout *l = &p->lay;
	unsigned checked = 0;

	CHECK(ref_npro >= 4);
	for (int i = 0; i < ref_npro; i++) {
		const struct ref_prologue *r = &ref_pro[i];

		for (int k = 0; k < r->n; k++) {
			int off = r->offs[k], line = 0, line2 = 0;
			struct pystack_node nd = {.frame = 0x1000, .code = r->code};
			struct pyf_frame fr[2];
			const char *q, *file;
			unsigned n;

			/* f_lasti (3.10: code units), else the instruction
			 * pointer: one unit before the code when not started */
			if (l->chain != PYF_CHAIN_FRAMEOBJ)
				nd.instr = r->code + l->co_code_adaptive +
					   (uint64_t)(int64_t)(off < 0 ? -2 : off);
			else if (off < 0)
				nd.instr = UINT32_MAX;
			else
				nd.instr = (uint32_t)(l->lasti_units ? off / 2 : off);
			nd.owner = l->chain == PYF_CHAIN_FRAMEOBJ ? 0 : (uint8_t)r->gen;
			nd.ident = code_ident(p, r->code);
			n = pyf_from_nodes(p, &nd, 1, fr, 2);
			CHECK_EQ_INT(n, 1);
			if (n != 1)
				continue;
			CHECK_EQ_INT(fr[0].instr, off);
			CHECK_EQ_INT(pyf_resolve(p, fr[0].code, fr[0].instr, &q, &file, &line), 0);
			CHECK_EQ_INT(pyf_resolve_seen(p, fr[0].code, fr[0].ident, fr[0].instr,
						      &q, &file, &line2),
				     0);
			if (line != r->first || line2 != r->first)
				TEST_FAIL_AT("%s: code %#" PRIx64 " (first line %d) at offset %d: "
					     "line %d / %d",
					     in->path, r->code, r->first, off, line, line2);
			checked++;
		}
	}
	fprintf(stderr, "%s: %u prologue offsets of %d code objects\n", in->path, checked,
		ref_npro);
}

static pid_t start_target(const struct interp *in, const char *out)
{
	return start_script(in, target_py, out, NULL, NULL);
}

/*
 * A thread running code in a subinterpreter (subinterp.py): its frames
 * there, then those of its call in the main interpreter, as each
 * interpreter sees them. shared: 3.12+'s legacy configuration (one GIL);
 * else the subinterpreter has its own GIL where the version allows. The
 * layout handed to BPF names the main interpreter, the last of the list,
 * though the newest (the list's head) is the subinterpreter.
 */
static void not_sub(struct pyf_proc *p, const struct interp *in, uint32_t tid)
{
	struct pyf_frame fr[MAXF];
	unsigned n = 0;

	CHECK(pyf_thread_stack(p, tid, fr, MAXF, &n) >= 0);
	CHECK(n >= 2);
	for (unsigned i = 0; i < n; i++) {
		const char *q, *file;
		int line;

		if (pyf_resolve(p, fr[i].code, fr[i].instr, &q, &file, &line) == 0 &&
		    !strcmp(file, "<string>"))
			TEST_FAIL_AT("%s: the main thread shows %s %s:%d", in->path, q, file, line);
	}
}

static void live_sub(const struct interp *in, bool shared)
{
	char dir[] = "/tmp/pyframes.XXXXXX", out[64], sub[80];
	static struct ref_thread ref[1];
	struct pyf_proc *p = NULL;
	struct pystack_layout lay;
	pid_t pid;
	int st;

	if (!mkdtemp(dir)) {
		TEST_FAIL_AT("mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(out, sizeof(out), "%s/ref", dir);
	snprintf(sub, sizeof(sub), "%s.sub", out);
	pid = start_script(in, subinterp_py, "stop", out, shared ? "shared" : NULL);
	if (pid > 0) {
		CHECK_EQ_INT(read_ref(out, ref, 1), 1);
		CHECK_EQ_INT(pyf_attach((uint32_t)pid, NULL, &p), 0);
		if (p && !pyf_reason(p)) {
			uint64_t head = 0, next = 1;

			/* four frames in the subinterpreter, four in the main one;
			 * 3.9 cannot tell which thread runs a subinterpreter's
			 * thread state: its main interpreter's frames only */
			CHECK_EQ_INT(ref[0].n, 8);
			if (in->minor == 9) {
				memmove(ref[0].name, ref[0].name + 4, sizeof(ref[0].name[0]) * 4);
				memmove(ref[0].file, ref[0].file + 4, sizeof(ref[0].file[0]) * 4);
				memmove(ref[0].line, ref[0].line + 4, sizeof(ref[0].line[0]) * 4);
				ref[0].n = 4;
			}
			check_thread(p, in, &ref[0]);
			/* the main thread made the subinterpreter (3.9-3.12 run
			 * its code on a thread state naming the main thread): none
			 * of its frames are the worker's */
			not_sub(p, in, (uint32_t)pid);
			CHECK_EQ_INT(pyf_bpf_layout(p, &lay), 0);
			CHECK_EQ_INT(pyf_read_u64(p, p->runtime + p->lay.rt_interp_head, &head), 0);
			CHECK(head != 0 && head != lay.main_interp);
			CHECK_EQ_INT(pyf_read_u64(p, lay.main_interp + lay.is_next, &next), 0);
			CHECK_EQ_INT(next, 0);
			CHECK_EQ_INT(lay.threads_head, lay.main_interp + p->lay.is_threads_head);
			CHECK_EQ_INT(lay.interps_head,
				     in->minor == 9 ? 0 : p->runtime + p->lay.rt_interp_head);
			if (in->minor >= 10 && in->minor <= 12)
				CHECK_EQ_INT(lay.ts_on_stack, p->lay.ts_cframe);
			else
				CHECK_EQ_INT(lay.ts_on_stack, PYSTACK_NONE);
		}
		if (p && pyf_reason(p))
			TEST_FAIL_AT("%s: %s", in->path, pyf_reason(p));
		pyf_free(p);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fprintf(stderr, "%s: a thread in a subinterpreter (%s GIL): %u frames checked\n",
			in->path, shared ? "shared" : "own", ref[0].n);
	}
	unlink(out);
	unlink(sub);
	rmdir(dir);
}

static void test_subinterpreters(void)
{
	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
		if (present(&interps[i])) {
			live_sub(&interps[i], true);
			if (interps[i].minor >= 12)
				live_sub(&interps[i], false);
		}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* What one stack costs once the code objects are cached: a figure for
 * docs/pyframes.md, not an assertion. */
static void cost(struct pyf_proc *p, const struct interp *in, unsigned tid)
{
	struct pyf_frame fr[MAXF];
	double t0 = now_us();
	unsigned n, frames = 0;
	enum { ROUNDS = 200 };

	for (int i = 0; i < ROUNDS; i++) {
		pyf_thread_stack(p, tid, fr, MAXF, &n);
		for (unsigned k = 0; k < n; k++) {
			const char *q, *f;
			int line;

			pyf_resolve(p, fr[k].code, fr[k].instr, &q, &f, &line);
		}
		frames += n;
	}
	fprintf(stderr, "%s: %.1f us per stack of %u frames (walk + resolve, cached)\n", in->path,
		(now_us() - t0) / ROUNDS, frames / ROUNDS);
}

static void live(const struct interp *in)
{
	char dir[] = "/tmp/pyframes.XXXXXX", out[64];
	static struct ref_thread ref[4];
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
		nt = read_ref(out, ref, 4);
		CHECK_EQ_INT(nt, 4);
		double t0 = now_us();

		CHECK_EQ_INT(pyf_attach((uint32_t)pid, NULL, &p), 0);
		fprintf(stderr, "%s: attach %.0f us\n", in->path, now_us() - t0);
		if (p) {
			CHECK(pyf_reason(p) == NULL);
			if (pyf_reason(p))
				fprintf(stderr, "%s: %s\n", in->path, pyf_reason(p));
			/* 3.9/3.10 from sys.version's buffer, 3.11+ Py_Version */
			CHECK_EQ_INT(pyf_version(p), ref_hexversion);
			CHECK_STREQ(pyf_layout_source(p), in->source);
			for (int i = 0; i < nt && !pyf_reason(p); i++)
				check_thread(p, in, &ref[i]);
			if (!pyf_reason(p))
				check_prologue(p, in);
			/* the main thread again: every code object from the cache */
			if (nt > 0 && !pyf_reason(p)) {
				check_thread(p, in, &ref[0]);
				cost(p, in, ref[1].tid);
			}
			fprintf(
			    stderr,
			    "%s: version %#x, %s, module %s, %d threads checked, pthread TID at "
			    "%d\n",
			    in->path, pyf_version(p), pyf_layout_source(p), p->module, nt,
			    p->pthread_tid_off);
			pyf_free(p);
		}
		/* a second process of the same interpreter (here the same one
		 * again) is recognized from what the first read of its file */
		uint64_t hits = pyf_elf_cache_hits();
		p = NULL;
		CHECK_EQ_INT(pyf_attach((uint32_t)pid, NULL, &p), 0);
		CHECK(pyf_elf_cache_hits() > hits);
		if (p) {
			CHECK(pyf_reason(p) == NULL);
			CHECK_EQ_INT(pyf_version(p), ref_hexversion);
			CHECK_STREQ(pyf_layout_source(p), in->source);
			if (nt > 0 && !pyf_reason(p))
				check_thread(p, in, &ref[0]);
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

/* An interpreter older than 3.9 is recognized and refused with a reason. */
static void test_too_old(void)
{
	const char *py = "/root/.pyenv/versions/3.8.18/bin/python3.8";
	struct pyf_proc *p = NULL;
	pid_t pid;
	int st;

	if (access(py, X_OK)) {
		fprintf(stderr, "skip %s: not installed\n", py);
		return;
	}
	pid = fork();
	if (pid == 0) {
		execl(py, py, "-E", "-S", "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	if (pid <= 0)
		return;
	/* until its interpreter is mapped and initialized */
	for (int i = 0; i < 500; i++) {
		char path[64], line[512];
		bool mapped = false;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
		f = fopen(path, "r");
		while (f && !mapped && fgets(line, sizeof(line), f))
			mapped = strstr(line, "libpython3.8") != NULL;
		if (f)
			fclose(f);
		if (mapped)
			break;
		usleep(10000);
	}
	CHECK_EQ_INT(pyf_attach((uint32_t)pid, NULL, &p), 0);
	if (p) {
		CHECK(pyf_reason(p) && strstr(pyf_reason(p), "CPython 3.8 is not supported"));
		CHECK_EQ_INT(pyf_version(p) >> 16, 0x0308);
		CHECK_STREQ(pyf_layout_source(p), "");
		pyf_free(p);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

/*
 * A process caught after the dynamic loader mapped libpython and before it
 * relocated it (start-up, under load) is only starting: attached again
 * later, never refused for good. A fake /proc/PID holds that moment: maps
 * naming libpython at FAKE_BASE, its map_files link, and a sparse mem file
 * with the library's loadable segments as the file has them (PyCode_Type's
 * tp_name still 0, _PyRuntime's interpreter list still empty). So is one
 * whose _PyRuntime does not read yet: the mem file ends with the first
 * segment.
 */
#define FAKE_PID 4242
#define FAKE_BASE 0x10000000ull

static bool write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	bool ok = f && fputs(text, f) >= 0;

	if (f && fclose(f))
		ok = false;
	return ok;
}

/* libpython's PT_LOAD segments at FAKE_BASE + p_vaddr: the file's bytes,
 * then zeros (.bss); only the first one unless all */
static bool fake_mem(const char *lib, const char *mem, bool all)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	char *buf = NULL;
	uint64_t end = 0;
	bool ok = false;
	int in = open(lib, O_RDONLY), out = open(mem, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (in < 0 || out < 0 || pread(in, &eh, sizeof(eh), 0) != sizeof(eh))
		goto out;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (pread(in, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type != PT_LOAD || (!all && end))
			continue;
		if (FAKE_BASE + ph.p_vaddr + ph.p_memsz > end)
			end = FAKE_BASE + ph.p_vaddr + ph.p_memsz;
		if (!ph.p_filesz)
			continue;
		free(buf);
		buf = malloc(ph.p_filesz);
		if (!buf || pread(in, buf, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz ||
		    pwrite(out, buf, ph.p_filesz, (off_t)(FAKE_BASE + ph.p_vaddr)) !=
			    (ssize_t)ph.p_filesz)
			goto out;
	}
	ok = ftruncate(out, (off_t)end) == 0;
out:
	free(buf);
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return ok;
}

static void unrelocated(const struct interp *in, bool all)
{
	char dir[] = "/tmp/pyf-unreloc-XXXXXX", lib[256], pd[64], path[320], maps[400];
	const char *bin = strstr(in->path, "/bin/python");
	struct pyf_proc *p = NULL;

	if (!bin)
		return;
	snprintf(lib, sizeof(lib), "%.*s/lib/libpython3.%u.so.1.0", (int)(bin - in->path),
		 in->path, in->minor);
	if (access(lib, R_OK))
		return; /* a static build: nothing to relocate */
	CHECK(mkdtemp(dir) != NULL);
	snprintf(pd, sizeof(pd), "%s/%d", dir, FAKE_PID);
	CHECK_EQ_INT(mkdir(pd, 0700), 0);
	snprintf(path, sizeof(path), "%s/map_files", pd);
	CHECK_EQ_INT(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/map_files/%llx-%llx", pd, FAKE_BASE, FAKE_BASE + 4096);
	CHECK_EQ_INT(symlink(lib, path), 0);
	snprintf(path, sizeof(path), "%s/exe", pd);
	CHECK_EQ_INT(symlink(in->path, path), 0);
	snprintf(path, sizeof(path), "%s/maps", pd);
	snprintf(maps, sizeof(maps), "%llx-%llx r--p 00000000 00:00 0 %s\n", FAKE_BASE,
		 FAKE_BASE + 4096, lib);
	CHECK(write_file(path, maps));
	snprintf(path, sizeof(path), "%s/mem", pd);
	CHECK(fake_mem(lib, path, all));
	CHECK_EQ_INT(pyf_attach(FAKE_PID, dir, &p), 0);
	if (p) {
		if (pyf_refusal(p) != PYF_REFUSED_STARTING)
			TEST_FAIL_AT("%s %s: refusal %d (%s), not starting", lib,
				     all ? "before relocation" : "with its first segment only",
				     (int)pyf_refusal(p), pyf_reason(p) ? pyf_reason(p) : "none");
		pyf_free(p);
	}
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK_EQ_INT(system(path), 0);
}

static void test_unrelocated(void)
{
	for (size_t i = 0; i < sizeof(interps) / sizeof(interps[0]); i++)
		if (present(&interps[i])) {
			unrelocated(&interps[i], true);
			unrelocated(&interps[i], false);
		}
}

/* A sleeping interpreter, attached once it is initialized; 0 on failure. */
static pid_t start_sleeper(const char *py, struct pyf_proc **p)
{
	pid_t pid = fork();

	if (pid == 0) {
		execl(py, py, "-E", "-S", "-c", "import time; time.sleep(30)", (char *)NULL);
		_exit(127);
	}
	*p = NULL;
	for (int i = 0; pid > 0 && i < 500; i++) {
		if (pyf_attach((uint32_t)pid, NULL, p) == 0 && !pyf_reason(*p))
			return pid;
		pyf_free(*p);
		*p = NULL;
		usleep(10000);
	}
	return pid;
}

/*
 * A reader whose /proc/PID/mem holds another address space than the
 * process runs now (attached between a subprocess's vfork() and its exec
 * of the same interpreter: its parent's) still reads, so only the
 * thorough check tells. Made here by pointing a reader of one sleeper at
 * another sleeper of the same binary.
 */
static void test_same_image(void)
{
	const char *py = "/root/.pyenv/versions/3.12.1/bin/python3.12";
	struct pyf_proc *a = NULL, *b = NULL;
	pid_t pa, pb;
	uint32_t own;
	int st;

	if (access(py, X_OK)) {
		fprintf(stderr, "skip %s: not installed\n", py);
		return;
	}
	pa = start_sleeper(py, &a);
	pb = start_sleeper(py, &b);
	CHECK(a && b);
	if (a && b) {
		CHECK(pyf_same_image(a, false));
		CHECK(pyf_same_image(a, true));
		own = a->pid;
		a->pid = (uint32_t)pb; /* a's memory, b's process */
		CHECK(pyf_same_image(a, false));
		CHECK(!pyf_same_image(a, true));
		a->pid = own;
	}
	pyf_free(a);
	pyf_free(b);
	if (pa > 0)
		kill(pa, SIGKILL), waitpid(pa, &st, 0);
	if (pb > 0)
		kill(pb, SIGKILL), waitpid(pb, &st, 0);
	/* an exited process's reader reads nothing */
	if (pa > 0 && (pa = start_sleeper(py, &a)) > 0 && a) {
		kill(pa, SIGKILL);
		waitpid(pa, &st, 0);
		CHECK(!pyf_same_image(a, false));
	}
	pyf_free(a);
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
	if (argc < 4) {
		fprintf(stderr, "usage: %s TARGET.PY LINES.PY SUBINTERP.PY\n", argv[0]);
		return 2;
	}
	target_py = argv[1];
	lines_py = argv[2];
	subinterp_py = argv[3];
	RUN(test_line_tables_edges);
	RUN(test_not_python);
	RUN(test_too_old);
	RUN(test_unrelocated);
	RUN(test_same_image);
	RUN(test_debug_offsets_later);
	RUN(test_hostile);
	RUN(test_line_tables);
	RUN(test_live);
	RUN(test_subinterpreters);
	if (!ran)
		TEST_SKIP("no CPython interpreter found");
	return test_summary();
}
