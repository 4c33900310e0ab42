// SPDX-License-Identifier: MIT
/*
 * The xe submission hook end to end (suite 'bpf'): bpf/gpu_submit.bpf.c
 * attached to the raw syscall tracepoints of this kernel, this process
 * issuing the real xe ioctls (VM_BIND with MAP_USERPTR / MAP / UNMAP,
 * GEM_MMAP_OFFSET, mmap of the BO, EXEC; i915 GEM_USERPTR, GEM_MMAP,
 * EXECBUFFER2) with the documented structs
 * (xe_drm.h). There is no xe driver here, so each ioctl
 * fails (ENOTTY), but the tracepoints see its arguments; the hook is loaded
 * with accept_failed for that reason. For every named case of cs_cases.h
 * and 150 random streams, the result the hook parsed from this process's
 * memory at EXEC must equal the host build's parse of the same buffers;
 * KSPs reach the kernel table through xe_cs; an unbound batch ends `retry`;
 * other processes are not looked at.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#include "xe/cs_cases.h"
#include "xe/xe_ioctl.h"

#include "cs.h"
#include "cs_hook.h"

#define NRANDOM 150

static struct xe_cs_hook *hook;
static struct xe_cs *cs;
static struct gpu_cs *host;
static struct gpu_submit_event last, last_retry;
static unsigned nevents, nretries; /* first parses / deferred re-parses */

static void seen(void *arg, const struct gpu_submit_event *ev)
{
	(void)arg;
	if (ev->attempt > 1) {
		last_retry = *ev;
		nretries++;
		return;
	}
	last = *ev;
	nevents++;
}

/* The ioctl fails here (no xe driver): the hook saw it anyway. */
static void xe_ioctl(int fd, unsigned long cmd, void *arg)
{
	errno = 0;
	CHECK(ioctl(fd, cmd, arg) < 0);
}

static void bind_op(int fd, uint32_t op, uint32_t obj, uint64_t src, uint64_t gpu, uint64_t len)
{
	struct vm_bind b = {.vm_id = 1, .num_binds = 1};

	b.bind = (struct vm_bind_op){.obj = obj, .src = src, .range = len, .addr = gpu, .op = op};
	xe_ioctl(fd, GPU_SUBMIT_XE_VM_BIND, &b);
}

/* Several ops in one VM_BIND (num_binds > 1: a user pointer to the ops). */
static void bind_vector(int fd, const struct vm_bind_op *ops, uint32_t n)
{
	struct vm_bind b = {.vm_id = 1, .num_binds = n};

	b.vector_of_binds = (uint64_t)(uintptr_t)ops;
	xe_ioctl(fd, GPU_SUBMIT_XE_VM_BIND, &b);
}

/* EXEC, then the hook's event for it. Returns 0 when one arrived. */
static int exec_batch(int fd, uint64_t va)
{
	struct xe_exec x = {.exec_queue_id = 3, .address = va, .num_batch_buffer = 1};
	unsigned before = nevents;

	xe_ioctl(fd, GPU_SUBMIT_XE_EXEC, &x);
	CHECK(xe_cs_hook_consume(hook, cs, NULL) >= 0);
	return nevents == before + 1 ? 0 : -1;
}

static int same(const char *name, const struct gpu_cs_result *h, const struct gpu_cs_result *b)
{
	if (memcmp(h, b, GPU_CS_RESULT_HEAD) != 0) {
		TEST_FAIL_AT("%s: host and hook differ: status %u/%u stop 0x%llx/0x%llx "
			     "commands %u/%u nksp %u/%u",
			     name, h->status, b->status, (unsigned long long)h->stop_addr,
			     (unsigned long long)b->stop_addr, h->commands, b->commands, h->nksp,
			     b->nksp);
		return -1;
	}
	if (memcmp(h->ksp, b->ksp, h->nksp * sizeof(h->ksp[0])) != 0) {
		TEST_FAIL_AT("%s: KSP lists differ", name);
		return -1;
	}
	return 0;
}

/* Bind every buffer of c as user memory, exec, compare, unbind. */
static int run_userptr(int fd, const struct cs_case *c, const char *name)
{
	struct gpu_cs_run_args a;
	int bad;

	for (unsigned i = 0; i < c->nbufs; i++)
		if (c->b[i].n)
			bind_op(fd, GPU_SUBMIT_XE_BIND_MAP_USERPTR, 0, (uint64_t)(uintptr_t)c->b[i].dw,
				c->b[i].gpu, (uint64_t)c->b[i].n * 4);
	cs_case_args(c, &a);
	cs_host_run(&a, host);
	if (exec_batch(fd, c->start) < 0) {
		TEST_FAIL_AT("%s: no event from the hook", name);
		bad = -1;
	} else {
		bad = same(name, &host->r, &last.r);
		CHECK_EQ_U64(last.batch, c->start & GPU_CS_VA_MASK);
		CHECK_EQ_INT(last.pid, getpid());
		CHECK_EQ_INT(last.fd, fd);
		CHECK_EQ_INT(last.exec_queue, 3);
	}
	for (unsigned i = 0; i < c->nbufs; i++)
		if (c->b[i].n)
			bind_op(fd, GPU_SUBMIT_XE_BIND_UNMAP, 0, 0, c->b[i].gpu,
				(uint64_t)c->b[i].n * 4);
	return bad;
}

static void test_named(void)
{
	int fd = open("/dev/null", O_RDWR);

	CHECK(fd >= 0);
	for (size_t i = 0; i < CS_NNAMED; i++) {
		struct cs_case c = {0};

		cs_named[i].fn(&c);
		if (run_userptr(fd, &c, cs_named[i].name) == 0)
			printf("%-12s %-9s ksp %2u sip %u\n", cs_named[i].name,
			       xe_cs_status_name(last.r.status), last.r.nksp, last.r.has_sip);
		cs_case_free(&c);
	}
	close(fd);
}

static void test_random(void)
{
	int fd = open("/dev/null", O_RDWR);
	unsigned bad = 0, ends[GPU_CS_NSTATUS] = {0};

	CHECK(fd >= 0);
	for (uint64_t seed = 1; seed <= NRANDOM; seed++) {
		struct cs_case c = {0};
		char name[32];

		cs_case_random(&c, seed);
		snprintf(name, sizeof(name), "random/%llu", (unsigned long long)seed);
		if (run_userptr(fd, &c, name) < 0)
			bad++;
		ends[last.r.status % GPU_CS_NSTATUS]++;
		cs_case_free(&c);
	}
	CHECK_EQ_INT(bad, 0);
	CHECK(ends[GPU_CS_DONE] > 0);
	CHECK(ends[GPU_CS_RETRY] > 0);
	close(fd);
}

/* After UNMAP the batch is gone: `retry`, nothing read. A vector bind
 * (num_binds > 1: a user pointer to the ops) maps it again. */
static void test_unbind_vector(void)
{
	int fd = open("/dev/null", O_RDWR);
	struct cs_case c = {0};
	struct vm_bind_op ops[CS_MAX_BUFS];

	CHECK(fd >= 0);
	case_chain(&c);
	CHECK(c.nbufs >= 2);
	CHECK_EQ_INT(run_userptr(fd, &c, "chain"), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_DONE);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0); /* run_userptr unbound everything */
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY);
	CHECK_EQ_INT(last.r.commands, 0);
	for (unsigned i = 0; i < c.nbufs; i++)
		ops[i] = (struct vm_bind_op){.src = (uint64_t)(uintptr_t)c.b[i].dw,
					     .range = (uint64_t)c.b[i].n * 4,
					     .addr = c.b[i].gpu,
					     .op = GPU_SUBMIT_XE_BIND_MAP_USERPTR};
	/* hostile arguments: a vector at an unmapped address, a huge count,
	 * an exec struct nowhere: nothing bound, no event, the hook carries on */
	bind_vector(fd, (const struct vm_bind_op *)(uintptr_t)0x10, 1000);
	unsigned before = nevents;
	xe_ioctl(fd, GPU_SUBMIT_XE_EXEC, (void *)(uintptr_t)0x10);
	CHECK(xe_cs_hook_consume(hook, cs, NULL) >= 0);
	CHECK_EQ_INT(nevents, before);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY);
	bind_vector(fd, ops, c.nbufs);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_DONE);
	CHECK_EQ_INT(last.r.nksp, 4);
	cs_case_free(&c);
	close(fd);
}

/* A binding of 6 MiB is indexed under the four 2 MiB buckets it covers:
 * a batch in its last one is found, and after UNMAP nothing is. */
static void test_multi_bucket(void)
{
	const size_t len = 6u << 20, at = (5u << 20) + 0x40;
	const uint64_t va = 0x50000000ull; /* 2 MiB-aligned */
	int fd = open("/dev/null", O_RDWR);
	uint8_t *mem = calloc(1, len);
	struct cs_case c = {0};

	CHECK(fd >= 0 && mem != NULL);
	case_xehp(&c);
	memcpy(mem + at, c.b[0].dw, (size_t)c.b[0].n * 4);
	bind_op(fd, GPU_SUBMIT_XE_BIND_MAP_USERPTR, 0, (uint64_t)(uintptr_t)mem, va, len);
	CHECK_EQ_INT(exec_batch(fd, va + at), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_DONE);
	CHECK_EQ_INT(last.r.nksp, 1);
	bind_op(fd, GPU_SUBMIT_XE_BIND_UNMAP, 0, 0, va, len);
	CHECK_EQ_INT(exec_batch(fd, va + at), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY);
	cs_case_free(&c);
	free(mem);
	close(fd);
}

/*
 * A buffer object: GEM_MMAP_OFFSET names its fake offset, mmap() on the DRM
 * fd at that offset gives its user address, VM_BIND MAP places part of it
 * in the GPU VA space. /dev/zero stands in for the DRM fd: its private
 * mapping is real memory at whatever offset, so the mmap succeeds and the
 * hook records the address it returned.
 */
static void test_bo(void)
{
	int fd = open("/dev/zero", O_RDWR);
	struct mmap_offset mo = {.handle = 5, .offset = 0x7000000};
	struct cs_case c = {0};
	struct gpu_cs_run_args a;
	const size_t bo_len = 1u << 20, at = 0x3000;
	uint64_t cnt[GPU_SUBMIT_NCOUNTERS];
	uint8_t *bo;

	CHECK(fd >= 0);
	xe_ioctl(fd, GPU_SUBMIT_XE_GEM_MMAP_OFFSET, &mo); /* offset: the "output" */
	bo = mmap(NULL, bo_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)mo.offset);
	CHECK(bo != MAP_FAILED);
	if (bo == MAP_FAILED)
		goto out;
	case_xehp(&c);
	CHECK_EQ_INT(c.nbufs, 1);
	memcpy(bo + at, c.b[0].dw, (size_t)c.b[0].n * 4);
	bind_op(fd, GPU_SUBMIT_XE_BIND_MAP, 5, at, c.b[0].gpu, (uint64_t)c.b[0].n * 4);
	cs_case_args(&c, &a);
	cs_host_run(&a, host);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0);
	CHECK_EQ_INT(same("bo/xehp", &host->r, &last.r), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_DONE);
	CHECK(last.r.nksp > 0);
	/* another handle at the same GPU VA, never mmapped: nothing to read */
	bind_op(fd, GPU_SUBMIT_XE_BIND_MAP, 6, 0, c.b[0].gpu, (uint64_t)c.b[0].n * 4);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY);
	xe_cs_hook_counters(hook, cnt);
	CHECK(cnt[GPU_SUBMIT_C_MMAPS] >= 1);
	munmap(bo, bo_len);
out:
	cs_case_free(&c);
	close(fd);
}

/* A child's exec is not this process's: target_tgid filters it out. */
static void test_other_process(void)
{
	unsigned before = nevents;
	pid_t p = fork();

	if (p == 0) {
		int fd = open("/dev/null", O_RDWR);
		struct xe_exec x = {.address = VA_A, .num_batch_buffer = 1};

		ioctl(fd, GPU_SUBMIT_XE_EXEC, &x);
		_exit(0);
	}
	CHECK(p > 0);
	while (p > 0 && waitpid(p, NULL, 0) < 0 && errno == EINTR)
		;
	CHECK(xe_cs_hook_consume(hook, cs, NULL) >= 0);
	CHECK_EQ_INT(nevents, before);
}

/*
 * i915: GEM_USERPTR turns each buffer into an object (the handle is the
 * ioctl's output: filled in here, as the driver would), EXECBUFFER2 lists
 * the objects at their softpinned GPU VAs with the batch last, or first
 * with BATCH_FIRST; the parse starts at batch_start_offset in it.
 */
static int run_i915(int fd, const struct cs_case *c, const char *name, bool first)
{
	struct i915_exec_object obj[CS_MAX_BUFS + 1];
	struct i915_execbuffer eb = {0};
	struct gpu_cs_run_args a;
	unsigned n = 0, bi = CS_MAX_BUFS;

	for (unsigned i = 0; i < c->nbufs; i++) {
		struct i915_userptr u = {.user_ptr = (uint64_t)(uintptr_t)c->b[i].dw,
					 .user_size = (uint64_t)c->b[i].n * 4,
					 .handle = 100 + i};

		if (!c->b[i].n)
			continue;
		xe_ioctl(fd, GPU_SUBMIT_I915_GEM_USERPTR, &u);
		if (c->start >= c->b[i].gpu && c->start - c->b[i].gpu < (uint64_t)c->b[i].n * 4)
			bi = i;
	}
	if (first && bi < CS_MAX_BUFS)
		obj[n++] = (struct i915_exec_object){.handle = 100 + bi, .offset = c->b[bi].gpu};
	for (unsigned i = 0; i < c->nbufs; i++)
		if (c->b[i].n && i != bi)
			obj[n++] = (struct i915_exec_object){.handle = 100 + i, .offset = c->b[i].gpu};
	if (!first && bi < CS_MAX_BUFS)
		obj[n++] = (struct i915_exec_object){.handle = 100 + bi, .offset = c->b[bi].gpu};
	if (bi == CS_MAX_BUFS || !n)
		return 1; /* the batch start is in no buffer: nothing to submit */
	eb.buffers_ptr = (uint64_t)(uintptr_t)obj;
	eb.buffer_count = n;
	eb.batch_start_offset = (uint32_t)(c->start - c->b[bi].gpu);
	eb.flags = first ? GPU_SUBMIT_I915_BATCH_FIRST : 0;
	eb.rsvd1 = 9; /* context id */
	cs_case_args(c, &a);
	cs_host_run(&a, host);
	unsigned before = nevents;
	xe_ioctl(fd, GPU_SUBMIT_I915_EXECBUFFER2, &eb);
	CHECK(xe_cs_hook_consume(hook, cs, NULL) >= 0);
	if (nevents != before + 1) {
		TEST_FAIL_AT("%s: no event from the hook", name);
		return -1;
	}
	CHECK_EQ_INT(last.driver, GPU_SUBMIT_I915);
	CHECK_EQ_INT(last.exec_queue, 9);
	CHECK_EQ_U64(last.batch, c->start & GPU_CS_VA_MASK);
	return same(name, &host->r, &last.r);
}

static void test_i915(void)
{
	/* i915 has no unbind: objects stay where they were softpinned, as in
	 * the driver. Each case gets its own DRM fd (a fresh address space) */
	int fds[CS_NNAMED + 50], nfd = 0, fd = open("/dev/null", O_RDWR);
	unsigned bad = 0, runs = 0;

	CHECK(fd >= 0);
	for (size_t i = 0; i < CS_NNAMED; i++) {
		struct cs_case c = {0};

		cs_named[i].fn(&c);
		fds[nfd] = open("/dev/null", O_RDWR);
		int r = run_i915(fds[nfd++], &c, cs_named[i].name, i & 1);
		bad += r < 0, runs += r == 0;
		cs_case_free(&c);
	}
	for (uint64_t seed = 1; seed <= 50; seed++) {
		struct cs_case c = {0};
		char name[32];

		cs_case_random(&c, seed);
		snprintf(name, sizeof(name), "i915 random/%llu", (unsigned long long)seed);
		fds[nfd] = open("/dev/null", O_RDWR);
		int r = run_i915(fds[nfd++], &c, name, seed & 1);
		bad += r < 0, runs += r == 0;
		cs_case_free(&c);
	}
	for (int i = 0; i < nfd; i++)
		close(fds[i]);
	CHECK_EQ_INT(bad, 0);
	CHECK(runs > 40);

	/* legacy GEM_MMAP: addr_ptr (output) maps [offset, offset + size) */
	struct cs_case c = {0};
	struct i915_exec_object obj;
	struct i915_execbuffer eb = {0};
	struct gpu_cs_run_args a;

	case_xe2_sip(&c);
	struct i915_mmap m = {.handle = 200, .offset = 0x1000, .size = (uint64_t)c.b[0].n * 4,
			      .addr_ptr = (uint64_t)(uintptr_t)c.b[0].dw};
	uint64_t cnt0[GPU_SUBMIT_NCOUNTERS], cnt1[GPU_SUBMIT_NCOUNTERS];

	xe_cs_hook_counters(hook, cnt0);
	xe_ioctl(fd, GPU_SUBMIT_I915_GEM_MMAP, &m);
	xe_cs_hook_counters(hook, cnt1);
	CHECK_EQ_U64(cnt1[GPU_SUBMIT_C_MMAPS], cnt0[GPU_SUBMIT_C_MMAPS] + 1);
	/* the object's byte 0x1000 is the buffer's first: softpinned 0x1000 lower */
	obj = (struct i915_exec_object){.handle = 200, .offset = c.b[0].gpu - 0x1000};
	eb.buffers_ptr = (uint64_t)(uintptr_t)&obj;
	eb.buffer_count = 1;
	eb.batch_start_offset = (uint32_t)(c.start - c.b[0].gpu + 0x1000);
	cs_case_args(&c, &a);
	cs_host_run(&a, host);
	xe_ioctl(fd, GPU_SUBMIT_I915_EXECBUFFER2_WR, &eb);
	CHECK(xe_cs_hook_consume(hook, cs, NULL) >= 0);
	CHECK_EQ_INT(same("i915 gem_mmap", &host->r, &last.r), 0);
	CHECK_EQ_INT(last.r.has_sip, 1);
	cs_case_free(&c);
	close(fd);
}

/*
 * Deferred re-parse: a batch whose chained buffer is not bound yet ends
 * `retry` and waits; the process's next submission parses it again first
 * (attempt 2), now complete. One that never gets its memory is given up at
 * its GPU_SUBMIT_MAX_ATTEMPTS-th parse.
 */
static void test_deferred(void)
{
	/* an fd number no earlier test used: no bindings of theirs (i915 has
	 * no unbind, and the hook keys bindings by process and fd number) */
	int fd0 = open("/dev/null", O_RDWR), fd = dup2(fd0, 900);
	struct cs_case c = {0}, other = {0};
	struct xe_cs_stats st0, st1;

	CHECK(fd == 900);
	close(fd0);
	case_chain(&c);
	CHECK(c.nbufs >= 2);
	case_xehp(&other);
	bind_op(fd, GPU_SUBMIT_XE_BIND_MAP_USERPTR, 0, (uint64_t)(uintptr_t)c.b[0].dw, c.b[0].gpu,
		(uint64_t)c.b[0].n * 4);
	CHECK_EQ_INT(exec_batch(fd, c.start), 0); /* (re-parses what an earlier test left) */
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY); /* the chain's next buffer: unbound */
	unsigned r0 = nretries;
	for (unsigned i = 1; i < c.nbufs; i++)
		bind_op(fd, GPU_SUBMIT_XE_BIND_MAP_USERPTR, 0, (uint64_t)(uintptr_t)c.b[i].dw,
			c.b[i].gpu, (uint64_t)c.b[i].n * 4);
	/* another submission (another batch, far away in the VA space) */
	bind_op(fd, GPU_SUBMIT_XE_BIND_MAP_USERPTR, 0, (uint64_t)(uintptr_t)other.b[0].dw,
		0x40000000ull, (uint64_t)other.b[0].n * 4);
	xe_cs_get_stats(cs, &st0);
	CHECK_EQ_INT(exec_batch(fd, 0x40000000ull), 0);
	CHECK_EQ_INT(nretries, r0 + 1);
	CHECK_EQ_INT(last_retry.attempt, 2);
	CHECK_EQ_INT(last_retry.final, 1);
	CHECK_EQ_U64(last_retry.batch, c.start);
	CHECK_EQ_INT(last_retry.r.status, GPU_CS_DONE);
	CHECK_EQ_INT(last_retry.r.nksp, 4);
	CHECK_EQ_INT(last.r.status, GPU_CS_DONE); /* the new submission itself */
	xe_cs_get_stats(cs, &st1);
	CHECK_EQ_U64(st1.retry_ok, st0.retry_ok + 1);

	/* never bound: parsed at 5 submissions in all, then given up */
	CHECK_EQ_INT(exec_batch(fd, 0x7000000000ull), 0);
	CHECK_EQ_INT(last.r.status, GPU_CS_RETRY);
	r0 = nretries;
	for (int i = 0; i < GPU_SUBMIT_MAX_ATTEMPTS + 1; i++)
		CHECK_EQ_INT(exec_batch(fd, 0x40000000ull), 0);
	CHECK_EQ_INT(nretries, r0 + GPU_SUBMIT_MAX_ATTEMPTS - 1);
	CHECK_EQ_INT(last_retry.attempt, GPU_SUBMIT_MAX_ATTEMPTS);
	CHECK_EQ_INT(last_retry.final, 1);
	CHECK_EQ_INT(last_retry.r.status, GPU_CS_RETRY);
	xe_cs_get_stats(cs, &st0);
	CHECK_EQ_U64(st0.retry_given_up, st1.retry_given_up + 1);
	for (unsigned i = 0; i < c.nbufs; i++)
		bind_op(fd, GPU_SUBMIT_XE_BIND_UNMAP, 0, 0, c.b[i].gpu, (uint64_t)c.b[i].n * 4);
	bind_op(fd, GPU_SUBMIT_XE_BIND_UNMAP, 0, 0, 0x40000000ull, (uint64_t)other.b[0].n * 4);
	cs_case_free(&c);
	cs_case_free(&other);
	close(fd);
}

/* What reached xe_cs: submissions counted, KSPs found, path reported. */
static void test_feed(void)
{
	struct xe_cs_stats st;
	uint64_t cnt[GPU_SUBMIT_NCOUNTERS];
	cJSON *o = cJSON_CreateObject();
	const cJSON *b;

	uint64_t parses = 0;

	xe_cs_get_stats(cs, &st);
	CHECK_EQ_U64(st.submits, nevents);
	for (int i = 0; i < GPU_CS_NSTATUS; i++)
		parses += st.status[i];
	CHECK_EQ_U64(parses, nevents + nretries);
	CHECK(st.ksps > 0);
	CHECK(st.status[GPU_CS_RETRY] > 0);
	CHECK(st.retry_ok > 0);
	CHECK(st.retry_given_up > 0);
	xe_cs_hook_counters(hook, cnt);
	CHECK_EQ_U64(cnt[GPU_SUBMIT_C_PARSED], nevents + nretries);
	CHECK(cnt[GPU_SUBMIT_C_BINDS] > 0);
	CHECK(cnt[GPU_SUBMIT_C_UNBINDS] > 0);
	CHECK_EQ_U64(cnt[GPU_SUBMIT_C_RINGBUF_FULL], 0);
	xe_cs_set_path(cs, "bpf", "test");
	xe_cs_status(cs, o);
	b = cJSON_GetObjectItem(o, "batch_parser");
	CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(b, "path")), "bpf");
	cJSON_Delete(o);
}

int main(void)
{
	struct xe_cs_hook_opts o = {.target_tgid = (uint32_t)getpid(), .accept_failed = true};
	char why[256] = "";
	int r;

	r = xe_cs_hook_open(&o, &hook, why, sizeof(why));
	if (r == -EPERM || r == -EACCES)
		TEST_SKIP("%s", why);
	if (r < 0) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	xe_cs_hook_observe(hook, seen, NULL);
	host = calloc(1, sizeof(*host));
	if (!host || xe_cs_new(NULL, &cs) < 0)
		return 1;
	RUN(test_named);
	RUN(test_random);
	RUN(test_unbind_vector);
	RUN(test_multi_bucket);
	RUN(test_bo);
	RUN(test_i915);
	RUN(test_deferred);
	RUN(test_other_process);
	RUN(test_feed);
	xe_cs_hook_free(hook);
	xe_cs_free(cs);
	free(host);
	return test_summary();
}
