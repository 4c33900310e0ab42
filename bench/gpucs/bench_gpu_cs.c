// SPDX-License-Identifier: MIT
/*
 * Batch-buffer parser throughput (docs/gpu-cs.md): a batch of Xe2
 * COMPUTE_WALKERs and PIPE_CONTROLs behind STATE_BASE_ADDRESS / STATE_SIP,
 * chained across 4 buffers, parsed by the host build of gpu_cs_parse.h and,
 * when the kernel lets us load it, by the BPF build through
 * BPF_PROG_TEST_RUN. Prints figures; asserts nothing.
 *
 *   bench_gpu_cs [WALKERS] [ITERATIONS]     defaults 1200, 200 (at most 1400
 *   walkers: each of the 4 buffers stays inside its 64 KiB of GPU VA)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xe/cs_cases.h"

#include "gpu_cs.skel.h"

struct gpu_cs_job {
	struct gpu_cs cs;
	struct gpu_cs_run_args args;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void build(struct cs_case *c, unsigned walkers)
{
	static const uint64_t vas[CS_MAX_BUFS] = {VA_A, VA_B, VA_C, VA_D};
	struct cs_buf *b = NULL;

	c->start = VA_A;
	for (unsigned i = 0; i < CS_MAX_BUFS; i++) {
		b = cs_new_buf(c, vas[i]);
		if (i == 0) {
			bb_sba(b, IBA1, 0);
			bb_sip(b, 0x800);
		}
		for (unsigned k = 0; k < walkers / CS_MAX_BUFS; k++) {
			bb_walker(b, 1, 0x10000 + 0x400 * (uint64_t)(k % 48));
			bb_pipe_control(b);
		}
		if (i + 1 < CS_MAX_BUFS)
			bb_start(b, vas[i + 1], 0);
	}
	bb_end(b);
}

int main(int argc, char **argv)
{
	unsigned walkers = argc > 1 ? (unsigned)atoi(argv[1]) : 1200;
	unsigned iters = argc > 2 ? (unsigned)atoi(argv[2]) : 200;
	struct cs_case c = {0};
	struct gpu_cs_run_args a;
	struct gpu_cs *cs = calloc(1, sizeof(*cs));
	struct gpu_cs_bpf *skel;
	double t0, host_s, mb;

	/* 46 dwords per walker + PIPE_CONTROL; the buffers sit 64 KiB apart */
	if (!cs || walkers < CS_MAX_BUFS || !iters ||
	    walkers / CS_MAX_BUFS * 46 * 4 + 256 > 0x10000) {
		fprintf(stderr, "usage: %s [WALKERS (4..1400)] [ITERATIONS]\n", argv[0]);
		return 2;
	}
	build(&c, walkers);
	cs_case_args(&c, &a);
	cs_host_run(&a, cs);
	mb = (double)cs->r.dwords * 4 / 1e6;
	printf("batch: %u commands, %u dwords (%.2f MB), %u hops, %u KSPs, status %u\n",
	       cs->r.commands, cs->r.dwords, mb, cs->r.hops, cs->r.nksp, cs->r.status);

	t0 = now_s();
	for (unsigned i = 0; i < iters; i++)
		cs_host_run(&a, cs);
	host_s = (now_s() - t0) / iters;
	printf("host: %.1f us per parse, %.0f MB/s, %.1f ns per command\n", host_s * 1e6,
	       mb / host_s, host_s * 1e9 / cs->r.commands);

	skel = gpu_cs_bpf__open_and_load();
	if (!skel) {
		printf("bpf: not loaded (%s)\n", strerror(errno));
	} else {
		LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &a, .ctx_size_in = sizeof(a));
		int fd = bpf_program__fd(skel->progs.gpu_cs_run);

		t0 = now_s();
		for (unsigned i = 0; i < iters; i++)
			if (bpf_prog_test_run_opts(fd, &o) < 0) {
				printf("bpf: test run failed: %s\n", strerror(errno));
				break;
			}
		double bpf_s = (now_s() - t0) / iters;

		printf("bpf:  %.1f us per parse, %.0f MB/s, %.1f ns per command (status %d)\n",
		       bpf_s * 1e6, mb / bpf_s, bpf_s * 1e9 / cs->r.commands, o.retval);
		gpu_cs_bpf__destroy(skel);
	}
	cs_case_free(&c);
	free(cs);
	return 0;
}
