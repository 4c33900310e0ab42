/* SPDX-License-Identifier: MIT */
/*
 * The owner every BPF program records with a task's event (the "uid" of the
 * CPU sampler's, the launch probes' and the driver hooks' records, then of
 * struct store_rec): shared by the programs (owner.bpf.h) and the daemon.
 * Limits and fixed-width types only.
 */
#ifndef GPUPROF_BPF_OWNER_ABI_H
#define GPUPROF_BPF_OWNER_ABI_H

/*
 * Recorded instead of the task's uid when a peer of that uid could not
 * ptrace-read the task (a setuid or setgid program, file capabilities, a
 * task made non-dumpable): only privileged peers see such records, since
 * (uid_t)-1 is never a peer's uid and the unprivileged filter compares
 * uids for equality.
 */
#define GPUPROF_OWNER_ROOT_ONLY 0xffffffffu

#endif
