// SPDX-License-Identifier: MIT
/*
 * The CFI unwinder on this very process: a snapshot of the registers and
 * the stack is taken the way BPF takes it, unwound by unwind_user(), and
 * compared with glibc's backtrace() (libgcc's unwinder, an independent
 * reader of the same CFI) taken at the same place. Built -O2
 * -fomit-frame-pointer, so frame pointers alone could not do it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "test.h"
#include "procmapq.h"
#include "unwind/unwind.h"

#define COPY_MAX 16384
#define MAXF 64

struct snap {
	struct unwind_regs regs;
	uint8_t stack[COPY_MAX];
	size_t len;
	void *bt[MAXF];
	int nbt;
};

static struct snap snap_buf;
static size_t copy_limit = COPY_MAX;

/* The end of the mapping holding addr (/proc/self/maps). */
static uintptr_t mapping_end(uintptr_t addr)
{
	FILE *f = fopen("/proc/self/maps", "re");
	unsigned long lo, hi;
	char line[512];
	uintptr_t end = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	if (f)
		fclose(f);
	return end;
}

/* Byte by byte and unsanitized: the stack holds ASan's poisoned redzones. */
__attribute__((no_sanitize("address"), noinline)) static void copy_stack(uint8_t *dst,
									const uint8_t *src,
									size_t n)
{
	for (size_t i = 0; i < n; i++)
		((volatile uint8_t *)dst)[i] = src[i];
}

/* Registers at the asm statement, the stack above them, and backtrace()
 * from the same function: both describe the same callers. */
__attribute__((noinline)) static int take_snap(void)
{
	uint64_t ip, sp, bp;
	uintptr_t end;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	snap_buf.regs = (struct unwind_regs){.ip = ip, .sp = sp, .bp = bp};
	end = mapping_end((uintptr_t)sp);
	snap_buf.len = end - sp < copy_limit ? end - sp : copy_limit;
	copy_stack(snap_buf.stack, (const uint8_t *)(uintptr_t)sp, snap_buf.len);
	snap_buf.nbt = backtrace(snap_buf.bt, MAXF);
	return snap_buf.nbt;
}

static volatile int sink;
__attribute__((noinline)) static int d(int x) { int r = take_snap(); sink += x; return r; }
__attribute__((noinline)) static int c(int x) { int r = d(x + 1); sink += r; return r; }
__attribute__((noinline)) static int b(int x) { int r = c(x + 1); sink += r; return r; }
__attribute__((noinline)) static int a(int x) { int r = b(x + 1); sink += r; return r; }

static struct unwinder *uw_new(size_t budget)
{
	struct unwind_opts o = {.budget_bytes = budget};
	struct unwinder *u = NULL;

	CHECK_EQ_INT(unwind_new(&o, &u), 0);
	return u;
}

static int unwind_snap(struct unwinder *u, uint64_t *ips, unsigned *n)
{
	return unwind_user(u, (uint32_t)getpid(), &snap_buf.regs, snap_buf.stack, snap_buf.len,
			   ips, MAXF, n);
}

/* ips[1..] (return addresses, from take_snap's caller on) must be the
 * frames backtrace() lists after its return address into take_snap,
 * exactly. Where that one sits depends on the build: glibc's backtrace()
 * starts at its caller's frame, ASan's interceptor lists its own first. */
static void check_same_as_backtrace(const uint64_t *ips, unsigned n)
{
	int k = 0;

	while (k < snap_buf.nbt && !((uintptr_t)snap_buf.bt[k] > (uintptr_t)take_snap &&
				     (uintptr_t)snap_buf.bt[k] <= (uintptr_t)take_snap + 512))
		k++;
	CHECK(k < snap_buf.nbt);
	CHECK_EQ_INT((int)n, snap_buf.nbt - k);
	for (unsigned i = 1; i < n && k + (int)i < snap_buf.nbt; i++)
		if (ips[i] != (uint64_t)(uintptr_t)snap_buf.bt[k + i]) {
			TEST_FAIL_AT("frame %u: unwound %#lx, backtrace %p", i, (unsigned long)ips[i],
				     snap_buf.bt[k + i]);
			break;
		}
}

static bool has_frame_in(const uint64_t *ips, unsigned n, void *fn, size_t span)
{
	for (unsigned i = 0; i < n; i++)
		if (ips[i] > (uint64_t)(uintptr_t)fn && ips[i] <= (uint64_t)(uintptr_t)fn + span)
			return true;
	return false;
}

static void test_chain_matches_backtrace(void)
{
	struct unwinder *u = uw_new(0);
	uint64_t ips[MAXF];
	unsigned n;

	a(1);
	CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
	check_same_as_backtrace(ips, n);
	CHECK(has_frame_in(ips, n, (void *)a, 256));
	CHECK(has_frame_in(ips, n, (void *)d, 256));
	/* a second walk is served from the rule cache, same answer */
	uint64_t again[MAXF];
	unsigned n2;
	CHECK_EQ_INT(unwind_snap(u, again, &n2), UNWIND_COMPLETE);
	CHECK_EQ_INT((int)n2, (int)n);
	CHECK(!memcmp(ips, again, n * sizeof(*ips)));
	unwind_free(u);
}

static void test_short_copy_is_truncated(void)
{
	struct unwinder *u = uw_new(0);
	uint64_t full[MAXF], ips[MAXF];
	unsigned nf, n;

	a(1);
	CHECK_EQ_INT(unwind_snap(u, full, &nf), UNWIND_COMPLETE);
	snap_buf.len = 64; /* the copy ends inside the callers' frames */
	CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_TRUNCATED);
	CHECK(n >= 2 && n < nf);
	CHECK_EQ_U64(ips[n - 1], UNWIND_IP_TRUNCATED);
	CHECK(!memcmp(ips, full, (n - 1) * sizeof(*ips)));
	cJSON *st = cJSON_CreateObject();
	unwind_status(u, st, true);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "truncated")->valueint, 1);
	CHECK_EQ_INT(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "truncated_by"), "stack_copy")
			 ->valueint, 1);
	cJSON_Delete(st);
	unwind_free(u);
}

static void test_gone_process_is_truncated(void)
{
	struct unwinder *u = uw_new(0);
	uint64_t ips[MAXF];
	unsigned n;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	waitpid(pid, NULL, 0);
	a(1);
	CHECK_EQ_INT(unwind_user(u, (uint32_t)pid, &snap_buf.regs, snap_buf.stack, snap_buf.len,
				 ips, MAXF, &n),
		     UNWIND_TRUNCATED);
	CHECK_EQ_INT((int)n, 2);
	CHECK_EQ_U64(ips[0], snap_buf.regs.ip);
	CHECK_EQ_U64(ips[1], UNWIND_IP_TRUNCATED);
	unwind_free(u);
}

static int cb_snap(int x)
{
	return take_snap() + x;
}

/* Through a library without frame pointers, loaded late (the first
 * snapshot of the process predates it) and deleted from disk since. */
static const char *uwlib_path;

static void test_dlopen_deleted_library(void)
{
	const char *lib = uwlib_path;
	struct unwinder *u = uw_new(0);
	char tmp[] = "/tmp/uwlib-XXXXXX";
	uint64_t ips[MAXF];
	unsigned n;
	int (*call)(int (*)(int), int);
	void *h;
	int in, out;
	static char buf[65536];
	ssize_t k;

	a(1); /* the unwinder learns this process's mappings now */
	CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
	out = mkstemp(tmp);
	in = open(lib, O_RDONLY);
	CHECK(out >= 0 && in >= 0);
	while ((k = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)k) == k);
	close(in);
	close(out);
	h = dlopen(tmp, RTLD_NOW);
	CHECK(h != NULL);
	unlink(tmp);
	if (!h)
		return;
	call = (int (*)(int (*)(int), int))dlsym(h, "uwlib_call");
	call(cb_snap, 1);
	CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
	check_same_as_backtrace(ips, n);
	CHECK(has_frame_in(ips, n, dlsym(h, "uwlib_inner"), 64));
	CHECK(has_frame_in(ips, n, (void *)call, 64));
	dlclose(h);
	unwind_free(u);
}

static void on_usr1(int sig)
{
	sink += d(sig); /* not a tail call: on_usr1 stays on the stack */
}

/* Through the kernel's signal frame (glibc's __restore_rt): its caller is
 * the interrupted instruction, an exact pc. */
static void test_signal_frame(void)
{
	struct unwinder *u = uw_new(0);
	uint64_t ips[MAXF];
	unsigned n;

	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
	check_same_as_backtrace(ips, n);
	CHECK(has_frame_in(ips, n, (void *)on_usr1, 256));
	unwind_free(u);
}

/* The mappings through PROCMAP_QUERY (where the kernel has it) and as
 * text give the same walk; status says which was used. */
static void test_maps_query_and_text_agree(void)
{
	struct unwind_opts o = {.maps_text = true};
	struct unwinder *uq = uw_new(0), *ut = NULL;
	uint64_t iq[MAXF], it[MAXF];
	unsigned nq, nt;
	cJSON *sq = cJSON_CreateObject(), *stx = cJSON_CreateObject();
	const char *method;

	CHECK_EQ_INT(unwind_new(&o, &ut), 0);
	a(7);
	CHECK_EQ_INT(unwind_snap(uq, iq, &nq), UNWIND_COMPLETE);
	CHECK_EQ_INT(unwind_snap(ut, it, &nt), UNWIND_COMPLETE);
	CHECK_EQ_INT((int)nq, (int)nt);
	for (unsigned i = 0; i < nq && i < nt; i++)
		CHECK_EQ_U64(iq[i], it[i]);
	check_same_as_backtrace(iq, nq);
	unwind_status(uq, sq, false);
	unwind_status(ut, stx, false);
	CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(stx, "maps_method")), "text");
	CHECK_EQ_INT(cJSON_GetObjectItem(stx, "maps_queries")->valueint, 0);
	CHECK_EQ_INT(cJSON_GetObjectItem(sq, "maps_reads")->valueint, 1);
	CHECK_EQ_INT(cJSON_GetObjectItem(stx, "maps_reads")->valueint, 1);
	/* the same objects loaded, whichever way they were found */
	CHECK_EQ_INT(cJSON_GetObjectItem(sq, "objects")->valueint,
		     cJSON_GetObjectItem(stx, "objects")->valueint);
	method = cJSON_GetStringValue(cJSON_GetObjectItem(sq, "maps_method"));
	CHECK(method != NULL);
	/* Linux 6.11+ answers the ioctl; an older kernel falls back */
	if (method && !strcmp(method, "procmap_query"))
		CHECK(cJSON_GetObjectItem(sq, "maps_queries")->valueint > 0);
	else
		CHECK_STREQ(method, "text");
	printf("  maps read through %s\n", method ? method : "?");
	cJSON_Delete(sq);
	cJSON_Delete(stx);
	unwind_free(uq);
	unwind_free(ut);
}

/* An address outside the mappings just read for this walk is not a
 * library loaded since: no second read of a new process's mappings. */
static void test_new_process_read_once(void)
{
	struct unwinder *u = uw_new(0);
	uint64_t ips[MAXF];
	unsigned n;
	struct unwind_regs regs;
	cJSON *st = cJSON_CreateObject();

	a(3);
	regs = snap_buf.regs;
	regs.ip = 0x10000; /* below every mapping: no rule, no frame pointer chain */
	regs.bp = 0;
	unwind_user(u, (uint32_t)getpid(), &regs, snap_buf.stack, snap_buf.len, ips, MAXF, &n);
	unwind_status(u, st, false);
	CHECK_EQ_INT(cJSON_GetObjectItem(st, "maps_reads")->valueint, 1);
	cJSON_Delete(st);
	unwind_free(u);
}

/* A stand-in for the symbolizer's snapshot: this process's executable
 * mappings as text, handed over in address order (mode 0), not at all
 * (mode 1: nothing fresh), or out of order (mode 2: unusable). */
static int fake_source(void *arg, uint32_t pid, uint64_t max_age_ns,
		       void (*each)(void *ctx, const struct pmq_map *m, const char *name), void *ctx)
{
	int mode = *(int *)arg;
	struct pmq_map prev = {0};
	char line[4608], prev_name[4352] = "";
	bool have_prev = false;
	FILE *f;

	CHECK_EQ_INT((int)pid, (int)getpid());
	CHECK(max_age_ns > 0);
	if (mode == 1)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		char perms[8];
		int pos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj,
			   &min, &ino, &pos) < 7 ||
		    perms[2] != 'x')
			continue;
		struct pmq_map m = {.start = lo, .end = hi, .off = off, .ino = ino,
				    .dev_major = maj, .dev_minor = min, .flags = PMQ_EXEC};
		const char *name = pos ? line + pos : "";

		if (mode == 2 && !have_prev) { /* hold the first back: give it last */
			prev = m;
			snprintf(prev_name, sizeof(prev_name), "%s", name);
			have_prev = true;
			continue;
		}
		each(ctx, &m, name);
	}
	fclose(f);
	if (have_prev)
		each(ctx, &prev, prev_name);
	return 0;
}

/* A first sight takes another reader's fresh read of the mappings (no read
 * of its own) and walks as well as with its own; a source with nothing
 * fresh, or with mappings out of order, leaves the unwinder to read. */
static void test_shared_maps_first_sight(void)
{
	for (int mode = 0; mode < 3; mode++) {
		struct unwinder *u = uw_new(0);
		uint64_t ips[MAXF];
		unsigned n;
		cJSON *st = cJSON_CreateObject();
		int shared;

		unwind_set_maps_source(u, fake_source, &mode);
		a(5 + mode);
		CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
		check_same_as_backtrace(ips, n);
		unwind_status(u, st, false);
		shared = cJSON_GetObjectItem(st, "maps_shared")->valueint;
		CHECK_EQ_INT(shared, mode == 0 ? 1 : 0);
		CHECK_EQ_INT(cJSON_GetObjectItem(st, "maps_reads")->valueint, 1);
		if (mode == 0) /* not read again by the unwinder itself */
			CHECK_EQ_INT(cJSON_GetObjectItem(st, "maps_queries")->valueint, 0);
		cJSON_Delete(st);
		unwind_free(u);
	}
}

static void test_budget_holds(void)
{
	struct unwinder *u = uw_new(1u << 20);
	uint64_t ips[MAXF];
	unsigned n;

	for (int i = 0; i < 3; i++) {
		a(i);
		CHECK_EQ_INT(unwind_snap(u, ips, &n), UNWIND_COMPLETE);
	}
	cJSON *st = cJSON_CreateObject();
	unwind_status(u, st, false);
	CHECK(cJSON_GetObjectItem(st, "bytes")->valuedouble <= 1 << 20);
	CHECK(cJSON_GetObjectItem(st, "bytes")->valuedouble > 0);
	CHECK(!cJSON_GetObjectItem(st, "by_process")); /* unprivileged view */
	cJSON_Delete(st);
	unwind_free(u);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBUWLIB\n", argv[0]);
		return 2;
	}
	RUN(test_chain_matches_backtrace);
	RUN(test_short_copy_is_truncated);
	RUN(test_gone_process_is_truncated);
	RUN(test_signal_frame);
	RUN(test_budget_holds);
	RUN(test_maps_query_and_text_agree);
	RUN(test_new_process_read_once);
	RUN(test_shared_maps_first_sight);
	uwlib_path = argv[1];
	RUN(test_dlopen_deleted_library);
	return test_summary();
}
