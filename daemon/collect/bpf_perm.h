/* SPDX-License-Identifier: MIT */
/* Why the kernel refuses our BPF programs, in words a person can act on. */
#ifndef GPUPROF_COLLECT_BPF_PERM_H
#define GPUPROF_COLLECT_BPF_PERM_H

#include <stddef.h>
#include <stdint.h>

/* libbpf's feature probes answer "not available" when the kernel merely
 * refused the load (EPERM), so a missing capability looks like an old
 * kernel. From the effective capability mask, the value of
 * kernel.unprivileged_bpf_disabled (-1: unknown) and the active lockdown
 * mode (NULL: none or unknown), write the permission cause and its fix into
 * buf. Returns the length written, 0 when permissions explain nothing. */
size_t bpf_perm_explain(uint64_t cap_eff, int unpriv_disabled, const char *lockdown,
			char *buf, size_t n);

/* Same, from this process's capabilities and the running kernel's knobs. */
size_t bpf_perm_reason(char *buf, size_t n);

#endif
