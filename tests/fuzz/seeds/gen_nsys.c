// SPDX-License-Identifier: MIT
/*
 * Writes the nsys seed corpus: small Nsight Systems SQLite exports with
 * the real table and column names (tests/common/nsys_builder.c, which
 * tests/comm/test_nsys.c uses too), NCCL kernel names and NVTX payloads.
 * Pages are 512 bytes to keep each file a few KB.
 *   gen_nsys DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/nsys_builder.h"

/* nproc processes; what: bit 0 NCCL ranges, bit 1 the grouped send/recv,
 * bit 2 a plain NVTX text range, bit 3 drop the session table */
static void build(const char *dir, const char *name, int nproc, int what)
{
	char path[1024];
	struct nsysb b;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (nsysb_open(&b, path, true))
		exit(1);
	for (int p = 0; p < nproc; p++) {
		int pid = 100 + p, d = 20 * p, c = 10 * p;

		if (what & 1) {
			nsysb_range(&b, pid, 100, 200, 13, NSYSB_SCH_INIT, 0xAAAA, (uint64_t)nproc, p, p);
			nsysb_range(&b, pid, 9900 + d, 9990 + d, 7, NSYSB_SCH_ALLREDUCE, 0xAAAA, 1000, -1,
				    -1);
			nsysb_range(&b, pid, 19900 + d, 19990 + d, 8, NSYSB_SCH_ALLGATHER, 0xAAAA, 512, -1,
				    -1);
		}
		nsysb_kernel(&b, pid, p, 0, 15000, 7, c + 1, 4);
		nsysb_kernel(&b, pid, p, 10000 + d, 11000 + d, 13, c + 2, 1);
		nsysb_kernel(&b, pid, p, 20000 + d, 22000, 13, c + 3, 2);
		if (what & 2) {
			nsysb_range(&b, pid, 29800, 29850, 9, 0, 0, 0, -1, -1);
			nsysb_range(&b, pid, 29860, 29870, 10, NSYSB_SCH_SEND, 0xAAAA, 256, -1, -1);
			nsysb_range(&b, pid, 29880, 29890, 11, NSYSB_SCH_RECV, 0xAAAA, 256, -1, -1);
			nsysb_range(&b, pid, 29900, 29990, 12, 0, 0, 0, -1, -1);
			nsysb_kernel(&b, pid, p, 30000, 31000, 13, c + 4, 3);
		}
	}
	if (what & 4)
		nsysb_exec(&b, "INSERT INTO NVTX_EVENTS(start,end,eventType,text,globalTid) "
			       "VALUES(5,20000,59,'train_step',281474993487972)");
	if (what & 8)
		nsysb_exec(&b, "DROP TABLE TARGET_INFO_SESSION_START_TIME");
	if (nsysb_close(&b, true))
		exit(1);
	printf("%s\n", path);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	build(argv[1], "two-ranks-nccl.sqlite", 2, 7);
	build(argv[1], "one-rank-kernels.sqlite", 1, 0);
	build(argv[1], "one-rank-sendrecv-no-session.sqlite", 1, 2 | 8);
	return 0;
}
