/* SPDX-License-Identifier: MIT */
/* Why the kernel refuses our BPF programs, in words a person can act on. */
#ifndef GPUPROF_COLLECT_BPF_PERM_H
#define GPUPROF_COLLECT_BPF_PERM_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "collector.h"

/* libbpf's feature probes answer "not available" when the kernel merely
 * refused the load (EPERM), so a missing capability looks like an old
 * kernel. From the effective capability mask, the value of
 * kernel.unprivileged_bpf_disabled (-1: unknown) and the active lockdown
 * mode (NULL: none or unknown), write the permission cause and its fix into
 * buf. Returns the length written, 0 when permissions explain nothing. */
size_t bpf_perm_explain(uint64_t cap_eff, int unpriv_disabled, const char *lockdown, char *buf,
			size_t n);

/* Same, from this process's capabilities and the running kernel's knobs. */
size_t bpf_perm_reason(char *buf, size_t n);

/* A collector whose program type libbpf_probe_bpf_prog_type() did not
 * confirm (probe: its answer, 0 or -errno) is unavailable: for want of
 * privilege when that explains it, else for want of `progs` programs. */
static inline void bpf_perm_unavailable(struct collector *c, int probe, const char *progs)
{
	char perm[200];

	if (bpf_perm_reason(perm, sizeof(perm)))
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "%s", perm);
	else
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF not supported: %s programs %s",
				    progs,
				    probe == 0 ? "are not available in this kernel"
					       : strerror(-probe));
}

/* Before a collector loads programs of type: the number of possible CPUs
 * (its per-CPU arrays), or 0 after marking c unavailable (the type is
 * refused, see bpf_perm_unavailable(), or the CPUs cannot be counted). */
static inline int bpf_perm_ready(struct collector *c, enum bpf_prog_type type, const char *progs)
{
	int r = libbpf_probe_bpf_prog_type(type, NULL);

	if (r <= 0) {
		/* 0 also when the kernel refused the load for want of
		 * privilege: bpf_perm_unavailable() names that cause first */
		bpf_perm_unavailable(c, r, progs);
		return 0;
	}
	r = libbpf_num_possible_cpus();
	if (r <= 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cannot count CPUs: %s",
				    strerror(r ? -r : EINVAL));
		return 0;
	}
	return r;
}

#endif
