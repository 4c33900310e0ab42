// SPDX-License-Identifier: MIT
/*
 * Names that come from elsewhere than a symbol table:
 *   - PLT stubs ("free@plt"), checked against objdump, which names every
 *     stub of .plt, .plt.sec and .plt.got: Debian's /usr/bin/ls and
 *     python3.11 (stripped, .plt + .plt.got) and elfprog built plain and
 *     with IBT (.plt.sec, 16-byte .plt.got stubs, an IRELATIVE slot);
 *   - MiniDebugInfo (.gnu_debugdata) built as gdb's manual describes, in a
 *     file and in a live process, and hostile variants of it (garbage, a
 *     truncated stream, a decompression bomb) that must fail cleanly.
 *
 * argv: objdump elfprog elfprog-ibt mkminidebug.sh
 */
#include "test.h"

#include "sym/sym.h"
#include "sym/sym_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *objdump, *prog_plain, *prog_ibt, *mkmini;
static char tmpdir[] = "/tmp/gpuprof-symelf-XXXXXX";

static struct sym_obj *load(const char *path)
{
	struct symobj_opts op = {0};
	struct sym_obj *o = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (symobj_load(fd, &op, &o) < 0)
		o = NULL;
	close(fd);
	return o;
}

static uint64_t vaddr_of(const struct sym_obj *o, const char *name)
{
	for (size_t i = 0; o && i < o->nsyms; i++)
		if (!strcmp(o->strs + o->syms[i].name, name))
			return o->syms[i].addr;
	return 0;
}

/* The object's own (not synthesized) function at exactly addr. */
static const char *symbol_at(const struct sym_obj *o, uint64_t addr)
{
	for (size_t i = 0; i < o->nsyms; i++) {
		const char *n = o->strs + o->syms[i].name;
		size_t l = strlen(n);
		if (o->syms[i].addr == addr && (l < 4 || strcmp(n + l - 4, "@plt")))
			return n;
	}
	return NULL;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Every "ADDR <name@plt>:" objdump prints must be what the symbolizer
 * names that address (and the stub's last byte). An IRELATIVE slot, which
 * objdump calls "*ABS*+0xADDEND@plt", must be named after the function
 * there: irel_name, when the caller knows it. Returns how many compared.
 */
static int plt_against_objdump(const char *path, const char *irel_name)
{
	char cmd[1024], buf[4096];
	int n = 0, bad = 0;
	struct sym_obj *o = load(path);
	CHECK(o != NULL);
	if (!o)
		return 0;
	snprintf(cmd, sizeof(cmd), "'%s' -d --no-show-raw-insn '%s'", objdump, path);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL);
	while (p && fgets(buf, sizeof(buf), p)) {
		unsigned long long a;
		char name[1024];
		if (sscanf(buf, "%llx <%1023[^>]>:", &a, name) != 2)
			continue;
		size_t l = strlen(name);
		if (l < 5 || strcmp(name + l - 4, "@plt"))
			continue;
		const char *want = name;
		char irel[1100];
		unsigned long long addend;
		if (irel_name && !strncmp(name, "*ABS*", 5)) {
			want = irel_name;
		} else if (sscanf(name, "*ABS*+%llx@plt", &addend) == 1) {
			/* named after the function at the resolver, if any */
			const char *fn = symbol_at(o, addend);
			if (fn) {
				snprintf(irel, sizeof(irel), "%s@plt", fn);
				want = irel;
			}
		}
		const char *got = symobj_lookup(o, a);
		const char *got_end = symobj_lookup(o, a + 7); /* inside an 8-byte stub */
		if (!got || strcmp(got, want) || !got_end || strcmp(got_end, want)) {
			if (bad++ < 5)
				fprintf(stderr, "%s: 0x%llx objdump <%s>, we say \"%s\"\n", path, a,
					want, got ? got : "(null)");
		}
		n++;
	}
	if (p)
		CHECK_EQ_INT(pclose(p), 0);
	CHECK_EQ_INT(bad, 0);
	symobj_free(o);
	return n;
}

static void test_plt_debian_binaries(void)
{
	/* ls and python3.11: .plt and .plt.got; libc: IRELATIVE slots
	 * (objdump's *ABS*+0x...), named after the IFUNC at the resolver */
	static const char *const bins[] = {"/usr/bin/ls", "/usr/bin/python3.11",
					   "/lib/x86_64-linux-gnu/libc.so.6"};
	int tried = 0;
	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		if (access(bins[i], R_OK) < 0) {
			fprintf(stderr, "note: %s absent, not compared\n", bins[i]);
			continue;
		}
		int n = plt_against_objdump(bins[i], NULL);
		fprintf(stderr, "%s: %d PLT stubs agree with objdump\n", bins[i], n);
		CHECK(n > 10); /* ls: 101 .plt + 6 .plt.got; python3.11: 494; libc: 16 */
		tried++;
	}
	CHECK(tried > 0);
}

static void test_plt_built(void)
{
	/* the IFUNC's slot is named after it, not objdump's *ABS*+0x... */
	int n = plt_against_objdump(prog_plain, "twice@plt");
	CHECK(n >= 4); /* malloc, strncpy, printf, free, twice, ... */
	n = plt_against_objdump(prog_ibt, "twice@plt");
	CHECK(n >= 4);
	struct sym_obj *o = load(prog_ibt);
	CHECK(o && vaddr_of(o, "twice@plt") != 0);
	symobj_free(o);
}

static void mini_paths(char *mini, char *stripped, size_t len)
{
	snprintf(mini, len, "%s/prog-mini", tmpdir);
	snprintf(stripped, len, "%s/prog-stripped", tmpdir);
}

/* A MiniDebugInfo copy of elfprog; 77 (skip) without the tools. */
static int make_mini(void)
{
	char mini[512], stripped[512];
	mini_paths(mini, stripped, sizeof(mini));
	if (sh("cp '%s' '%s' && cp '%s' '%s' && strip --strip-all '%s'", prog_plain, mini,
	       prog_plain, stripped, stripped))
		return -1;
	return sh("sh '%s' '%s'", mkmini, mini);
}

static void test_minidebug_file(void)
{
	char mini[512], stripped[512];
	mini_paths(mini, stripped, sizeof(mini));
	struct sym_obj *full = load(prog_plain);
	uint64_t va = vaddr_of(full, "mini_static_fn");
	symobj_free(full);
	CHECK(va != 0);

	struct sym_obj *o = load(mini);
	CHECK(o != NULL);
	if (o) {
		const char *n = symobj_lookup(o, va + 1);
		CHECK_STREQ(n ? n : "(null)", "mini_static_fn");
		CHECK(o->from_minidebug);
		CHECK(vaddr_of(o, "malloc@plt") != 0); /* PLT names still there */
	}
	symobj_free(o);
	/* the same file without the section does not know it */
	o = load(stripped);
	CHECK(o != NULL);
	if (o) {
		const char *n = symobj_lookup(o, va + 1);
		CHECK(!n || strcmp(n, "mini_static_fn"));
		CHECK(!o->from_minidebug);
	}
	symobj_free(o);
}

/* The static function resolves in a running process of the MiniDebugInfo
 * binary, through the whole symbolizer. */
static void test_minidebug_process(void)
{
	char mini[512], stripped[512], line[256], name[512];
	int in[2], out[2];
	unsigned long long a = 0;
	mini_paths(mini, stripped, sizeof(mini));
	CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(mini, mini, "wait", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	while (f && fgets(line, sizeof(line), f) && strcmp(line, "ready\n"))
		sscanf(line, "mini_static_fn %llx", &a);
	CHECK(a != 0);
	struct symbolizer *s;
	CHECK_EQ_INT(sym_new(NULL, &s), 0);
	CHECK_EQ_INT(sym_resolve(s, (uint32_t)pid, a + 2, false, name, sizeof(name), NULL, 0), 0);
	CHECK_STREQ(name, "mini_static_fn");
	sym_free(s);
	close(in[1]);
	if (f)
		fclose(f);
	waitpid(pid, NULL, 0);
}

/* Replace the section's payload; load must succeed with .dynsym and PLT
 * names only, quickly, and never name the static function. */
static void hostile(const char *what, const char *make_payload)
{
	char mini[512], stripped[512], bad[600], payload[600];
	mini_paths(mini, stripped, sizeof(mini));
	snprintf(bad, sizeof(bad), "%s/prog-%s", tmpdir, what);
	snprintf(payload, sizeof(payload), "%s/payload-%s", tmpdir, what);
	CHECK_EQ_INT(sh("%s >'%s' && objcopy --update-section .gnu_debugdata='%s' '%s' '%s'",
			make_payload, payload, payload, mini, bad),
		     0);
	struct sym_obj *full = load(prog_plain);
	uint64_t va = vaddr_of(full, "mini_static_fn");
	symobj_free(full);
	struct sym_obj *o = load(bad);
	CHECK(o != NULL);
	if (o) {
		const char *n = symobj_lookup(o, va + 1);
		CHECK(!n || strcmp(n, "mini_static_fn"));
		CHECK(!o->from_minidebug);
		CHECK(vaddr_of(o, "malloc@plt") != 0);
		CHECK(o->bytes < (8u << 20)); /* nothing of the payload kept */
	}
	symobj_free(o);
	unlink(bad);
	unlink(payload);
}

static void test_minidebug_hostile(void)
{
	char cmd[1024], mini[512], stripped[512];
	mini_paths(mini, stripped, sizeof(mini));
	hostile("garbage", "head -c 4096 /dev/urandom");
	/* a valid xz header, then the stream cut short */
	snprintf(
	    cmd, sizeof(cmd),
	    "objcopy --dump-section .gnu_debugdata='%s/xz' '%s' '%s/dump' && head -c 300 '%s/xz'",
	    tmpdir, mini, tmpdir, tmpdir);
	hostile("truncated", cmd);
	/* an xz of an ELF header followed by 80 MiB of zeros: past the cap */
	snprintf(cmd, sizeof(cmd), "(head -c 64 '%s'; head -c 83886080 /dev/zero) | xz -0 -T1",
		 prog_plain);
	hostile("bomb", cmd);
	/* not an ELF inside a valid stream */
	hostile("notelf", "echo 'no elf here' | xz");
}

int main(int argc, char **argv)
{
	if (argc < 5)
		TEST_SKIP("usage: %s objdump elfprog elfprog-ibt mkminidebug.sh", argv[0]);
	objdump = argv[1];
	prog_plain = argv[2];
	prog_ibt = argv[3];
	mkmini = argv[4];
	if (!mkdtemp(tmpdir))
		TEST_SKIP("mkdtemp: %s", strerror(errno));
	RUN(test_plt_debian_binaries);
	RUN(test_plt_built);
	int r = make_mini();
	if (r == 77) {
		fprintf(stderr, "skip: MiniDebugInfo tools missing (xz, nm, objcopy)\n");
	} else {
		CHECK_EQ_INT(r, 0);
		RUN(test_minidebug_file);
		RUN(test_minidebug_process);
		RUN(test_minidebug_hostile);
	}
	sh("rm -rf '%s'", tmpdir);
	return test_summary();
}
