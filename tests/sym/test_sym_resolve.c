// SPDX-License-Identifier: MIT
/*
 * The symbolizer against a real child process: a PIE executable that
 * dlopen()s a test library (with or without .symtab), an anonymous
 * executable page described by a perf map, an exited process, the kernel,
 * and a whole capture rendered as folded stacks.
 *
 * argv: symtest_exe libsymtest.so libsymtest-stripped.so
 */
#include "membuf.h"
#include "test.h"
#include "capbuild.h"

#include "render/folded.h"
#include "sym/sym.h"
#include "sym/sym_internal.h"
#include "sym/symtab.h"
#include "procmapq.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *exe_path, *lib_path, *stripped_path;

struct child {
	pid_t pid;
	int in_w;
	uint64_t exe_func, exe_static, lib_exported, lib_static, anon;
};

static int child_start(struct child *ch, const char *lib)
{
	int in[2], out[2];
	char line[256];
	memset(ch, 0, sizeof(*ch));
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		return -errno;
	ch->pid = fork();
	if (ch->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(exe_path, exe_path, lib, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	ch->in_w = in[1];
	FILE *f = fdopen(out[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		char name[64];
		unsigned long long v = 0;
		if (!strcmp(line, "ready\n"))
			break;
		if (sscanf(line, "%63s %llx", name, &v) != 2)
			continue;
		if (!strcmp(name, "exe_func"))
			ch->exe_func = v;
		else if (!strcmp(name, "exe_static"))
			ch->exe_static = v;
		else if (!strcmp(name, "lib_exported"))
			ch->lib_exported = v;
		else if (!strcmp(name, "lib_static"))
			ch->lib_static = v;
		else if (!strcmp(name, "anon"))
			ch->anon = v;
	}
	if (f)
		fclose(f);
	return ch->exe_func && ch->lib_exported && ch->lib_static ? 0 : -EIO;
}

static void child_stop(struct child *ch)
{
	int st;
	if (ch->in_w >= 0)
		close(ch->in_w);
	ch->in_w = -1;
	waitpid(ch->pid, &st, 0);
}

static char name[4200], line[1024];

static const char *res(struct symbolizer *s, uint32_t pid, uint64_t addr)
{
	sym_resolve(s, pid, addr, false, name, sizeof(name), line, sizeof(line));
	return name;
}

static void test_user_pie(void)
{
	struct symbolizer *s;
	struct child ch;
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	sym_note_pid(s, (uint32_t)ch.pid);
	CHECK_STREQ(res(s, ch.pid, ch.exe_func), "exe_func");
	CHECK_STREQ(res(s, ch.pid, ch.exe_func + 3), "exe_func");
	CHECK_STREQ(res(s, ch.pid, ch.exe_static), "exe_static");
	CHECK_STREQ(res(s, ch.pid, ch.lib_exported), "symtest_lib_exported");
	CHECK_STREQ(res(s, ch.pid, ch.lib_static + 1), "lib_static_fn");
	CHECK_EQ_INT(sym_resolve(s, ch.pid, 0x10, false, name, sizeof(name), NULL, 0), -ENOENT);
	CHECK_STREQ(name, "[unknown]");
	CHECK_EQ_INT(sym_resolve(s, ch.pid, SYMTAB_IP_TRUNCATED, false, name, sizeof(name), NULL, 0),
		     -ENOENT);
	CHECK_STREQ(name, "[truncated]");
	struct sym_stats st;
	sym_get_stats(s, &st);
	CHECK_EQ_INT(st.procs, 1);
	CHECK(st.objects >= 2); /* the executable and the library, at least */
	child_stop(&ch);
	sym_free(s);
}

/* vaddr of a function in the unstripped library, read with the same
 * loader: the stripped copy's fallback must print exactly this. */
static uint64_t lib_vaddr_of(const char *fn)
{
	struct symobj_opts op = {0};
	struct sym_obj *o;
	uint64_t v = 0;
	int fd = open(lib_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || symobj_load(fd, &op, &o) < 0)
		return 0;
	for (size_t i = 0; i < o->nsyms; i++)
		if (!strcmp(o->strs + o->syms[i].name, fn))
			v = o->syms[i].addr;
	symobj_free(o);
	close(fd);
	return v;
}

static void test_stripped_lib(void)
{
	struct symbolizer *s;
	struct child ch;
	char want[128];
	uint64_t va = lib_vaddr_of("lib_static_fn");
	CHECK(va != 0);
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(child_start(&ch, stripped_path), 0);
	CHECK_STREQ(res(s, ch.pid, ch.lib_exported + 2), "symtest_lib_exported"); /* .dynsym */
	snprintf(want, sizeof(want), "libsymtest-stripped.so+0x%llx", (unsigned long long)va + 1);
	CHECK_STREQ(res(s, ch.pid, ch.lib_static + 1), want);
	CHECK_STREQ(res(s, ch.pid, ch.exe_static), "exe_static");
	child_stop(&ch);
	sym_free(s);
}

static void test_jit_map(void)
{
	char dir[] = "/tmp/gpuprof-symtest-XXXXXX", path[256];
	struct sym_opts o = {.jit_dir = dir};
	struct symbolizer *s;
	struct child ch;
	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(sym_new(&o, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	CHECK(ch.anon != 0);
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)ch.pid);
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "garbage line\n%llx 40 py::old:x.py\n", (unsigned long long)ch.anon);
		fprintf(f, "%llx 40 py::jitted_fn:/app/x.py\n", (unsigned long long)ch.anon);
		fclose(f);
	}
	CHECK_STREQ(res(s, ch.pid, ch.anon + 0x10), "py::jitted_fn:/app/x.py");
	CHECK_STREQ(res(s, ch.pid, ch.anon + 0x50), "[unknown]");
	child_stop(&ch);
	unlink(path);
	rmdir(dir);
	sym_free(s);
}

static void test_exited_process(void)
{
	struct symbolizer *s;
	struct child ch;
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	sym_note_pid(s, (uint32_t)ch.pid);
	child_stop(&ch);
	CHECK(kill(ch.pid, 0) < 0);
	CHECK_STREQ(res(s, ch.pid, ch.exe_func), "exe_func");
	CHECK_STREQ(res(s, ch.pid, ch.lib_static), "lib_static_fn");
	sym_free(s);
}

struct fresh_seen {
	const struct child *ch;
	size_t n;
	uint64_t last_end;
	bool ordered, exe_named, lib_named;
};

static bool ends_with_base(const char *nm, const char *path)
{
	const char *b = strrchr(path, '/');
	size_t nl = strlen(nm), bl;

	b = b ? b + 1 : path;
	bl = strlen(b);
	return nl >= bl && !strcmp(nm + nl - bl, b);
}

static void fresh_each(void *ctx, const struct pmq_map *m, const char *nm)
{
	struct fresh_seen *fs = ctx;

	fs->ordered = fs->ordered && m->start >= fs->last_end && m->end > m->start;
	fs->last_end = m->end;
	fs->n++;
	if (fs->ch->exe_func >= m->start && fs->ch->exe_func < m->end)
		fs->exe_named = m->ino && ends_with_base(nm, exe_path);
	if (fs->ch->lib_exported >= m->start && fs->ch->lib_exported < m->end)
		fs->lib_named = m->ino && ends_with_base(nm, lib_path);
}

/*
 * The snapshot a new pid just got is handed over whole (the unwinder's
 * first sight takes it): in address order, with names; not when older
 * than asked, nor once a re-read for an exec failed (what is held may be
 * the program before the exec).
 */
static void test_fresh_maps(void)
{
	struct symbolizer *s;
	struct child ch;
	struct fresh_seen fs = {.ch = &ch, .ordered = true};

	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	CHECK_EQ_INT(sym_fresh_maps(s, (uint32_t)ch.pid, 10000000000ull, fresh_each, &fs), -ENOENT);
	sym_note_pid(s, (uint32_t)ch.pid);
	CHECK_EQ_INT(sym_fresh_maps(s, (uint32_t)ch.pid, 10000000000ull, fresh_each, &fs), 0);
	CHECK(fs.n >= 3);
	CHECK(fs.ordered);
	CHECK(fs.exe_named);
	CHECK(fs.lib_named);
	fs.n = 0;
	CHECK_EQ_INT(sym_fresh_maps(s, (uint32_t)ch.pid, 0, fresh_each, &fs), -ENOENT);
	CHECK_EQ_INT((int)fs.n, 0);
	child_stop(&ch);
	sym_note_exec(s, (uint32_t)ch.pid); /* gone: the re-read fails */
	CHECK_EQ_INT(sym_fresh_maps(s, (uint32_t)ch.pid, 10000000000ull, fresh_each, &fs), -ENOENT);
	CHECK_STREQ(res(s, ch.pid, ch.exe_func), "exe_func"); /* the snapshot stays */
	sym_free(s);
}

static int run_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *res_fresh(uint32_t pid, uint64_t addr)
{
	struct symbolizer *s;
	name[0] = '\0';
	if (sym_new(NULL, &s) == 0) { /* no object cached from before */
		res(s, pid, addr);
		sym_free(s);
	}
	return name;
}

/*
 * The library a live process maps is found through /proc/PID/map_files,
 * not its path: here the path first shows another file (a mount over its
 * directory puts the stripped build there; the mapping is not "deleted"),
 * then the file is deleted. Runs in a mount namespace of its own.
 */
static void test_replaced_library(void)
{
	char dir[] = "/tmp/gpuprof-symrepl-XXXXXX", lib[256];
	struct child ch;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "skip: no mount namespace here (%s)\n", strerror(errno));
		return;
	}
	CHECK(mkdtemp(dir) != NULL);
	snprintf(lib, sizeof(lib), "%s/libsymtest.so", dir);
	CHECK_EQ_INT(run_sh("cp '%s' '%s'", lib_path, lib), 0);
	CHECK_EQ_INT(child_start(&ch, lib), 0);
	CHECK_STREQ(res_fresh(ch.pid, ch.lib_static), "lib_static_fn");

	/* the path now names a different build of the library */
	CHECK_EQ_INT(mount("tmpfs", dir, "tmpfs", 0, "size=16m"), 0);
	CHECK_EQ_INT(run_sh("cp '%s' '%s'", stripped_path, lib), 0);
	CHECK_STREQ(res_fresh(ch.pid, ch.lib_static), "lib_static_fn");
	CHECK_STREQ(res_fresh(ch.pid, ch.lib_exported), "symtest_lib_exported");
	CHECK_EQ_INT(umount2(dir, MNT_DETACH), 0);

	/* deleted */
	CHECK_EQ_INT(unlink(lib), 0);
	CHECK_STREQ(res_fresh(ch.pid, ch.lib_static), "lib_static_fn");
	child_stop(&ch);
	rmdir(dir);
}

static void test_lines(void)
{
	struct sym_opts o = {.lines = true};
	struct symbolizer *s;
	struct child ch;
	CHECK_EQ_INT(sym_new(&o, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	CHECK_STREQ(res(s, ch.pid, ch.exe_static + 1), "exe_static");
	CHECK(strstr(line, "symtest_exe.c:") != NULL);
	if (!strstr(line, "symtest_exe.c:"))
		fprintf(stderr, "line: \"%s\"\n", line);
	child_stop(&ch);
	sym_free(s);
}

/* The first text symbol at the address of a well-known syscall entry, as
 * the symbolizer's alias rule picks it; 0 when kallsyms hides addresses. */
static uint64_t kernel_symbol(char *want, size_t len)
{
	static const char *const cands[] = {"__x64_sys_getpid", "__arm64_sys_getpid", "do_sys_open",
					    "schedule"};
	char buf[512], nm[256];
	uint64_t target = 0;
	for (size_t c = 0; c < sizeof(cands) / sizeof(cands[0]) && !target; c++) {
		FILE *f = fopen("/proc/kallsyms", "re");
		unsigned long long a;
		char t;
		while (f && fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "%llx %c %255s", &a, &t, nm) == 3 &&
			    !strcmp(nm, cands[c])) {
				target = a;
				break;
			}
		if (f)
			fclose(f);
	}
	if (!target)
		return 0;
	FILE *f = fopen("/proc/kallsyms", "re");
	while (f && fgets(buf, sizeof(buf), f)) {
		unsigned long long a;
		char t;
		if (sscanf(buf, "%llx %c %255s", &a, &t, nm) == 3 && a == target &&
		    strchr("tTwW", t)) {
			snprintf(want, len, "%s", nm);
			break;
		}
	}
	if (f)
		fclose(f);
	return target;
}

static void test_kernel(void)
{
	struct symbolizer *s;
	char want[256];
	uint64_t a = kernel_symbol(want, sizeof(want));
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	if (!a) {
		fprintf(stderr, "note: kallsyms hides addresses here; checking [unknown] only\n");
		CHECK_EQ_INT(
		    sym_resolve(s, 0, 0xffffffff81000000ull, true, name, sizeof(name), NULL, 0),
		    -ENOENT);
		CHECK_STREQ(name, "[unknown]");
	} else {
		CHECK_EQ_INT(sym_resolve(s, 0, a, true, name, sizeof(name), NULL, 0), 0);
		CHECK_STREQ(name, want);
		CHECK_EQ_INT(sym_resolve(s, 0, a + 1, true, name, sizeof(name), NULL, 0), 0);
		CHECK_STREQ(name, want);
	}
	sym_free(s);
}

/* A capture of the child's stacks, symbolized after the child exited (its
 * snapshot from first sight is what resolves), then rendered. */
static void test_capture_folded(void)
{
	struct symbolizer *s;
	struct capture *c;
	struct child ch;
	char want[256], expect[1024];
	uint64_t ka = kernel_symbol(want, sizeof(want));

	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(capture_new(&c), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	sym_note_pid(s, (uint32_t)ch.pid);
	child_stop(&ch);

	uint32_t comm = cb_str(c, "symtest_exe");
	/* leaf first; non-leaf frames are return addresses (+4) */
	uint64_t ips[] = {ch.exe_static, ch.lib_exported + 4, ch.exe_func + 4, ka};
	uint32_t st1 = cb_stack(c, ips, 3, ka ? 1 : 0);
	uint64_t bad[] = {0x1234};
	uint32_t st2 = cb_stack(c, bad, 1, 0);
	cb_rec(c, 100, (uint32_t)ch.pid, (uint32_t)ch.pid, comm, st1);
	cb_rec(c, 200, (uint32_t)ch.pid, (uint32_t)ch.pid + 1, comm, st1);
	cb_rec(c, 300, 0x7ffffff0, 0x7ffffff0, comm, st2);
	/* a section's stacks (an EU-stall launch stack): an equal one reuses
	 * st1, a new one joins the table; both are symbolized for their pid */
	uint64_t launch[] = {ch.lib_exported + 4, ch.exe_func + 4};
	struct capture_newstack ns[] = {
	    {(uint32_t)ch.pid, 0, ips, 3, ka ? 1 : 0},
	    {(uint32_t)ch.pid, 0, launch, 2, 0},
	};
	uint32_t ids[2];
	CHECK_EQ_INT(capture_add_stacks(c, ns, 2, ids), 0);
	CHECK_EQ_INT(ids[0], st1);
	CHECK_EQ_INT(ids[1], 3);
	CHECK_EQ_INT(c->nstacks, 3);
	CHECK_EQ_INT(c->nstackrefs, 2);

	CHECK_EQ_INT(sym_symbolize_capture(s, c), 0);
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_SYMBOLS);
	CHECK(ex != NULL);
	struct sym_table *t = NULL;
	CHECK_EQ_INT(ex ? sym_table_decode(ex->data, ex->len, &t, NULL, 0) : -1, 0);
	CHECK_EQ_INT(sym_table_entries(t), 3);
	struct sym_frames fr;
	size_t len;
	CHECK(sym_table_find(t, (uint32_t)ch.pid, ids[1], &fr));
	CHECK_EQ_INT(fr.nuser, 2);
	const char *nm = sym_table_name(t, fr.names[0], &len);
	CHECK(len == strlen("symtest_lib_exported") && !memcmp(nm, "symtest_lib_exported", len));
	/* user frames carry their file mapping: path, range and build id */
	CHECK(fr.maps != NULL);
	const struct sym_mapping *lm = fr.maps ? sym_table_map(t, fr.maps[0]) : NULL;
	const struct sym_mapping *em = fr.maps ? sym_table_map(t, fr.maps[1]) : NULL;
	CHECK(lm && em && lm != em);
	if (lm && em) {
		uint8_t id[SYM_BUILD_ID_MAX];
		size_t idlen = 0;
		char hex[2 * SYM_BUILD_ID_MAX + 1] = "";
		int fd = open(lib_path, O_RDONLY | O_CLOEXEC);
		CHECK_EQ_INT(fd >= 0 ? symobj_read_build_id(fd, id, &idlen) : -1, 0);
		if (fd >= 0)
			close(fd);
		for (size_t i = 0; i < idlen; i++)
			snprintf(hex + 2 * i, 3, "%02x", id[i]);
		CHECK(idlen >= 16); /* Debian's gcc links with --build-id */
		nm = sym_table_name(t, lm->build_id, &len);
		CHECK(len == strlen(hex) && !memcmp(nm, hex, len));
		nm = sym_table_name(t, lm->file, &len);
		CHECK(len > 13 && !memcmp(nm + len - 13, "libsymtest.so", 13));
		CHECK(lm->start <= ch.lib_exported && ch.lib_exported < lm->limit);
		CHECK_EQ_INT(lm->pid, (uint32_t)ch.pid);
		CHECK(lm->flags & SYMTAB_MAPF_SYMBOLS);
		nm = sym_table_name(t, em->file, &len);
		CHECK(len > 11 && !memcmp(nm + len - 11, "symtest_exe", 11));
		CHECK(em->start <= ch.exe_func && ch.exe_func < em->limit);
		/* the executable is flagged (pprof's main mapping), the library not */
		CHECK(em->flags & SYMTAB_MAPF_MAIN);
		CHECK(!(lm->flags & SYMTAB_MAPF_MAIN));
	}
	/* kernel frames: one [kernel.kallsyms] mapping with the kernel's build id */
	CHECK(sym_table_find(t, (uint32_t)ch.pid, st1, &fr));
	if (ka && fr.maps && fr.nkernel == 1) {
		const struct sym_mapping *km = sym_table_map(t, fr.maps[3]);
		uint8_t kid[SYM_BUILD_ID_MAX];
		size_t kidlen = 0;
		char khex[2 * SYM_BUILD_ID_MAX + 1] = "";
		ksyms_build_id("/sys/kernel/notes", kid, &kidlen);
		for (size_t i = 0; i < kidlen; i++)
			snprintf(khex + 2 * i, 3, "%02x", kid[i]);
		CHECK(km != NULL);
		nm = km ? sym_table_name(t, km->file, &len) : "";
		CHECK(len == 17 && !memcmp(nm, "[kernel.kallsyms]", 17));
		nm = km ? sym_table_name(t, km->build_id, &len) : "";
		CHECK(len == strlen(khex) && !memcmp(nm, khex, len));
		CHECK(km && km->pid == 0 && km->start == 0 && km->limit == UINT64_MAX);
		if (!kidlen)
			fprintf(stderr, "note: no /sys/kernel/notes build id here\n");
	}
	/* st2's address is in no mapping of an unknown pid */
	CHECK(sym_table_find(t, 0x7ffffff0, st2, &fr));
	CHECK(fr.maps && fr.maps[0] == 0);
	sym_table_free(t);
	/* a second pass replaces the section */
	CHECK_EQ_INT(sym_symbolize_capture(s, c), 0);
	size_t nsym = 0;
	for (size_t i = 0; i < c->nextras; i++)
		nsym += c->extras[i].type == CAPSEC_SYMBOLS;
	CHECK_EQ_INT(nsym, 1);

	struct membuf m = {0};
	struct folded_totals tot;
	CHECK_EQ_INT(folded_write(c, NULL, membuf_write, &m, &tot), 0);
	snprintf(expect, sizeof(expect),
		 "symtest_exe;[unknown] 1\n"
		 "symtest_exe;exe_func;symtest_lib_exported;exe_static%s%s 2\n",
		 ka ? ";-;" : "", ka ? want : "");
	CHECK_STREQ(m.p, expect);
	CHECK_EQ_INT(tot.samples, 3);
	CHECK_EQ_INT(tot.stacks, 2);
	CHECK(tot.symbolized);
	free(m.p);
	capture_free(c);
	sym_free(s);
}

/* The unwinder's truncation frame (0x1, the outermost user frame) is named
 * "[truncated]", with no mapping: it is no address of the process. */
static void test_truncated_frame(void)
{
	struct symbolizer *s;
	struct capture *c;
	struct child ch;
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(capture_new(&c), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	uint32_t comm = cb_str(c, "symtest_exe");
	uint64_t ips[] = {ch.exe_static, ch.exe_func + 4, SYMTAB_IP_TRUNCATED};
	uint32_t st = cb_stack(c, ips, 3, 0);
	cb_rec(c, 100, (uint32_t)ch.pid, (uint32_t)ch.pid, comm, st);
	CHECK_EQ_INT(sym_symbolize_capture(s, c), 0);
	child_stop(&ch);
	const struct capture_extra *ex = capture_find_extra(c, CAPSEC_SYMBOLS);
	struct sym_table *t = NULL;
	struct sym_frames fr;
	size_t len;
	CHECK_EQ_INT(ex ? sym_table_decode(ex->data, ex->len, &t, NULL, 0) : -1, 0);
	CHECK(t && sym_table_find(t, (uint32_t)ch.pid, st, &fr) && fr.nuser == 3);
	if (t && fr.nuser == 3) {
		const char *nm = sym_table_name(t, fr.names[2], &len);
		CHECK(len == 11 && !memcmp(nm, "[truncated]", 11));
		CHECK(fr.maps && fr.maps[2] == 0);
	}
	sym_table_free(t);
	struct membuf m = {0};
	CHECK_EQ_INT(folded_write(c, NULL, membuf_write, &m, NULL), 0);
	CHECK_STREQ(m.p, "symtest_exe;[truncated];exe_func;exe_static 1\n");
	free(m.p);
	capture_free(c);
	sym_free(s);
}

struct thr {
	struct symbolizer *s;
	struct child *ch;
	int bad;
};

static void *resolver(void *arg)
{
	struct thr *t = arg;
	char buf[256];
	for (int i = 0; i < 200; i++) {
		sym_resolve(t->s, t->ch->pid, t->ch->lib_static, false, buf, sizeof(buf), NULL, 0);
		t->bad += strcmp(buf, "lib_static_fn") != 0;
		sym_note_pid(t->s, (uint32_t)t->ch->pid + (uint32_t)(i % 3));
	}
	return NULL;
}

/* Worker threads resolving while others note pids: run under ASan here,
 * and meant for TSan too. Small caches force eviction races. */
static void test_threads(void)
{
	struct sym_opts o = { .max_objects = 1, .refresh_ns = 1 };
	struct symbolizer *s;
	struct child ch;
	pthread_t th[4];
	struct thr t[4];
	CHECK_EQ_INT(sym_new(&o, &s), 0);
	CHECK_EQ_INT(child_start(&ch, lib_path), 0);
	for (int i = 0; i < 4; i++) {
		t[i] = (struct thr){ s, &ch, 0 };
		pthread_create(&th[i], NULL, resolver, &t[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ_INT(t[i].bad, 0);
	}
	child_stop(&ch);
	sym_free(s);
}

/* Python 3.12+ writes /tmp/perf-PID.map with -X perf. */
static void test_python_perf_map(void)
{
	if (system("python3 -c 'import sys; sys.exit(sys.version_info < (3, 12))' "
		   ">/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: python3 >= 3.12 with -X perf is not available "
				"(Debian 12 has 3.11); the perf-map path is covered by "
				"test_jit_map\n");
		return;
	}
	FILE *p = popen("python3 -X perf -c 'import sys\n"
			"def gpuprof_marker():\n"
			"    return sys._getframe()\n"
			"for i in range(2000): gpuprof_marker()\n"
			"import os, time; print(os.getpid(), flush=True); time.sleep(60)'",
			"r");
	int pid = 0;
	CHECK(p && fscanf(p, "%d", &pid) == 1);
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	FILE *f = fopen(path, "r");
	unsigned long long a = 0, sz;
	while (f && fgets(buf, sizeof(buf), f))
		if (strstr(buf, "gpuprof_marker") && sscanf(buf, "%llx %llx", &a, &sz) == 2)
			break;
	if (f)
		fclose(f);
	CHECK(a != 0);
	struct symbolizer *s;
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	if (a)
		CHECK(strstr(res(s, (uint32_t)pid, a), "gpuprof_marker") != NULL);
	sym_free(s);
	if (pid)
		kill(pid, SIGTERM);
	if (p)
		pclose(p);
}

int main(int argc, char **argv)
{
	if (argc < 4)
		TEST_SKIP("usage: %s symtest_exe libsymtest.so libsymtest-stripped.so", argv[0]);
	exe_path = argv[1];
	lib_path = argv[2];
	stripped_path = argv[3];
	RUN(test_user_pie);
	RUN(test_stripped_lib);
	RUN(test_jit_map);
	RUN(test_exited_process);
	RUN(test_fresh_maps);
	RUN(test_replaced_library);
	RUN(test_lines);
	RUN(test_kernel);
	RUN(test_capture_folded);
	RUN(test_truncated_frame);
	RUN(test_threads);
	RUN(test_python_perf_map);
	return test_summary();
}
