// SPDX-License-Identifier: MIT
/*
 * Cost of the xe submission hook (docs/gpu-cs.md, "Paths"), as root:
 *
 *  - every syscall pays for the raw_tp sys_enter / sys_exit programs, which
 *    return after one compare of the syscall number: ns per getppid()
 *    without the hook and with it attached for every process (what
 *    xe.submit_hook = on costs the machine), measured in the same run;
 *  - an xe exec pays for the parse: ns per EXEC ioctl of a batch of N
 *    COMPUTE_WALKERs (bound with VM_BIND MAP_USERPTR), the ioctl failing on
 *    /dev/null (no xe driver here) after the hook parsed it, against the
 *    same ioctl without the hook.
 *
 *   bench_submit_hook [SYSCALLS] [WALKERS] [EXECS]   defaults 2000000 200 20000
 *
 * Prints figures; asserts nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "xe/cs_cases.h"
#include "xe/xe_ioctl.h"

#include "cs.h"
#include "cs_hook.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double per_syscall(unsigned long n)
{
	double t = now_ns();

	for (unsigned long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return (now_ns() - t) / (double)n;
}

static double per_exec(int fd, uint64_t va, unsigned n)
{
	struct xe_exec x = {.address = va, .num_batch_buffer = 1};
	double t = now_ns();

	for (unsigned i = 0; i < n; i++)
		ioctl(fd, GPU_SUBMIT_XE_EXEC, &x);
	return (now_ns() - t) / n;
}

int main(int argc, char **argv)
{
	unsigned long nsys = argc > 1 ? strtoul(argv[1], NULL, 0) : 2000000;
	unsigned walkers = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 200;
	unsigned nexec = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20000;
	struct xe_cs_hook *h = NULL;
	struct xe_cs *cs = NULL;
	struct cs_case c = {0};
	struct vm_bind b = {.vm_id = 1, .num_binds = 1};
	char why[256];
	double base, hooked, ebase, ehooked;
	int fd = open("/dev/null", O_RDWR), r;

	if (!nsys || !nexec || walkers > 1400 || fd < 0 || xe_cs_new(NULL, &cs) < 0)
		return 2;
	/* one buffer: STATE_BASE_ADDRESS, walkers, MI_BATCH_BUFFER_END */
	struct cs_buf *buf = cs_new_buf(&c, VA_A);

	bb_sba(buf, IBA1, 0);
	for (unsigned i = 0; i < walkers; i++)
		bb_walker(buf, 1, 0x1000 + 0x40ull * i);
	bb_end(buf);

	base = per_syscall(nsys); /* warm-up, then the figure */
	base = per_syscall(nsys);
	ebase = per_exec(fd, VA_A, nexec);
	/* every process, as the daemon runs it */
	r = xe_cs_hook_open(NULL, &h, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "%s\n", why);
		return 1;
	}
	hooked = per_syscall(nsys);
	b.bind = (struct vm_bind_op){.src = (uint64_t)(uintptr_t)buf->dw,
				  .range = (uint64_t)buf->n * 4,
				  .addr = VA_A,
				  .op = GPU_SUBMIT_XE_BIND_MAP_USERPTR};
	ioctl(fd, GPU_SUBMIT_XE_VM_BIND, &b);
	ehooked = 1e30;
	for (unsigned done = 0; done < nexec; done += 256) {
		/* rounds of 256, drained in between: the 1 MiB ring holds ~600 */
		double e = per_exec(fd, VA_A, 256);

		ehooked = e < ehooked ? e : ehooked;
		xe_cs_hook_consume(h, cs, NULL);
	}
	xe_cs_hook_consume(h, cs, NULL);

	struct xe_cs_stats st;
	uint64_t cnt[GPU_SUBMIT_NCOUNTERS];

	xe_cs_get_stats(cs, &st);
	xe_cs_hook_counters(h, cnt);
	printf("syscall (getppid), %lu calls: %.1f ns without the hook, %.1f ns with it "
	       "attached for every process: +%.1f ns per syscall\n",
	       nsys, base, hooked, hooked - base);
	printf("xe exec of %u COMPUTE_WALKERs (%u dwords): %.0f ns without, %.0f ns with the "
	       "parse: +%.2f us per exec (best round of 256; %llu parsed, %llu ended done, "
	       "%llu lost to a full ring)\n",
	       walkers, buf->n, ebase, ehooked, (ehooked - ebase) / 1000,
	       (unsigned long long)cnt[GPU_SUBMIT_C_PARSED],
	       (unsigned long long)st.status[GPU_CS_DONE],
	       (unsigned long long)cnt[GPU_SUBMIT_C_RINGBUF_FULL]);
	xe_cs_hook_free(h);
	xe_cs_free(cs);
	cs_case_free(&c);
	close(fd);
	return 0;
}
