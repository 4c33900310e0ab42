// SPDX-License-Identifier: MIT
/*
 * The batch-buffer parser as BPF (suite 'bpf'): gpu_cs.bpf.c must pass the
 * verifier of the running kernel, and, run with BPF_PROG_TEST_RUN over the
 * same buffers, must give exactly what the host build of the same header
 * gives: status, where it stopped, every counter and base, every KSP.
 * Over the named cases of cs_cases.h and a few hundred random streams.
 * Skips (77) only when the kernel has no BPF_PROG_TYPE_SYSCALL (< 5.14).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "test.h"

#include "xe/cs_cases.h"

#include "cs.h"
#include "gpu_cs.skel.h"

#define NRANDOM 400

/* The map value of gpu_cs.bpf.c's `jobs`. */
struct gpu_cs_job {
	struct gpu_cs cs;
	struct gpu_cs_run_args args;
};

static struct gpu_cs_bpf *skel;
static struct gpu_cs *host, *bpf;
static struct gpu_cs_job *job;

static int bpf_run(struct gpu_cs_run_args *a)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = a, .ctx_size_in = sizeof(*a));
	__u32 key = 0;
	int r;

	r = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.gpu_cs_run), &o);
	if (r < 0)
		return -errno;
	if (bpf_map_lookup_elem(bpf_map__fd(skel->maps.jobs), &key, job) < 0)
		return -errno;
	*bpf = job->cs;
	return (int)o.retval;
}

/* Same parse on both sides; returns 0 when they agree. */
static int compare(const struct cs_case *c, const char *name, int verbose)
{
	struct gpu_cs_run_args a;
	int rv, bad = 0;

	cs_case_args(c, &a);
	cs_host_run(&a, host);
	rv = bpf_run(&a);
	if (rv < 0) {
		TEST_FAIL_AT("%s: BPF test run: %s", name, strerror(-rv));
		return -1;
	}
	CHECK_EQ_INT(rv, bpf->r.status);
	if (memcmp(&host->r, &bpf->r, GPU_CS_RESULT_HEAD) != 0) {
		TEST_FAIL_AT("%s: host and BPF results differ: status %u/%u stop 0x%llx/0x%llx "
			     "commands %u/%u nksp %u/%u",
			     name, host->r.status, bpf->r.status,
			     (unsigned long long)host->r.stop_addr,
			     (unsigned long long)bpf->r.stop_addr, host->r.commands,
			     bpf->r.commands, host->r.nksp, bpf->r.nksp);
		bad = 1;
	} else if (memcmp(host->r.ksp, bpf->r.ksp, host->r.nksp * sizeof(host->r.ksp[0])) != 0) {
		TEST_FAIL_AT("%s: KSP lists differ", name);
		bad = 1;
	}
	if (verbose)
		printf("%-12s %-9s commands %5u dwords %6u hops %2u ksp %2u sip %u\n", name,
		       xe_cs_status_name(host->r.status), host->r.commands, host->r.dwords,
		       host->r.hops, host->r.nksp, host->r.has_sip);
	return bad ? -1 : 0;
}

static void test_named(void)
{
	for (size_t i = 0; i < CS_NNAMED; i++) {
		struct cs_case c = {0};

		cs_named[i].fn(&c);
		compare(&c, cs_named[i].name, 1);
		cs_case_free(&c);
	}
}

static void test_random(void)
{
	unsigned ends[GPU_CS_NSTATUS] = {0}, bad = 0;

	for (uint64_t seed = 1; seed <= NRANDOM; seed++) {
		struct cs_case c = {0};
		char name[32];

		cs_case_random(&c, seed);
		snprintf(name, sizeof(name), "random/%llu", (unsigned long long)seed);
		if (compare(&c, name, 0) < 0)
			bad++;
		ends[host->r.status % GPU_CS_NSTATUS]++;
		cs_case_free(&c);
	}
	CHECK_EQ_INT(bad, 0);
	printf("random streams: %d; ends:", NRANDOM);
	for (int i = 1; i < GPU_CS_NSTATUS; i++)
		printf(" %s %u", xe_cs_status_name((uint32_t)i), ends[i]);
	printf("\n");
	/* the generator reaches the interesting ends, or the test proves little */
	CHECK(ends[GPU_CS_DONE] > 0);
	CHECK(ends[GPU_CS_TRUNCATED] > 0);
	CHECK(ends[GPU_CS_RETRY] > 0);
	CHECK(ends[GPU_CS_LOOP] + ends[GPU_CS_DEPTH] > 0);
}

/* The verifier's view: how much of its budget the parser takes. */
static void test_verified(void)
{
	struct bpf_prog_info info = {0};
	__u32 len = sizeof(info);

	CHECK_EQ_INT(bpf_obj_get_info_by_fd(bpf_program__fd(skel->progs.gpu_cs_run), &info, &len),
		     0);
	printf("gpu_cs_run: %u translated bytes, verified_insns %u\n", info.xlated_prog_len,
	       info.verified_insns);
	CHECK(info.xlated_prog_len > 0);
}

int main(void)
{
	int r;

	libbpf_set_strict_mode(LIBBPF_STRICT_ALL);
	skel = gpu_cs_bpf__open();
	if (!skel)
		TEST_SKIP("cannot open the BPF object: %s", strerror(errno));
	r = gpu_cs_bpf__load(skel);
	if (r == -EPERM || r == -EACCES)
		TEST_SKIP("no permission to load BPF programs");
	if (r < 0) {
		if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SYSCALL, NULL) <= 0)
			TEST_SKIP("kernel has no BPF_PROG_TYPE_SYSCALL");
		fprintf(stderr, "the verifier refused gpu_cs.bpf.c: %s\n", strerror(-r));
		return 1;
	}
	host = calloc(1, sizeof(*host));
	bpf = calloc(1, sizeof(*bpf));
	job = calloc(1, sizeof(*job));
	if (!host || !bpf || !job)
		return 1;
	CHECK_EQ_INT(bpf_map__value_size(skel->maps.jobs), sizeof(struct gpu_cs_job));
	RUN(test_verified);
	RUN(test_named);
	RUN(test_random);
	gpu_cs_bpf__destroy(skel);
	free(host);
	free(bpf);
	free(job);
	return test_summary();
}
