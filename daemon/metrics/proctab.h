/* SPDX-License-Identifier: MIT */
/*
 * What the metrics endpoint counts from the store's records: CPU samples
 * and GPU kernel launches in all and, when the operator asks for them, per
 * process with bounded cardinality, and the last GPU busy and frequency
 * samples. It reads each record once, as records arrive (the caller scans
 * often enough that the ring rarely passes it; what it missed is counted).
 * Loop thread only.
 */
#ifndef GPUPROF_METRICS_PROCTAB_H
#define GPUPROF_METRICS_PROCTAB_H

#include <stdbool.h>
#include <stdint.h>

struct store;
struct msnap;

struct proctab_opts {
	unsigned top; /* processes with their own series at most */
	bool cpu;     /* per-process CPU sample series */
	bool gpu;     /* per-process GPU launch series */
	/* where /proc is (tests point it elsewhere); NULL = "/proc" */
	const char *proc_root;
};

struct proctab;

/* Counting starts with the records appended after this call. */
int proctab_new(const struct proctab_opts *o, const struct store *st, struct proctab **ret);
void proctab_free(struct proctab *t);

/* Account every record appended since the last scan. */
void proctab_scan(struct proctab *t, const struct store *st);

/* Add the families of what was counted to s. */
void proctab_emit(const struct proctab *t, struct msnap *s);

/*
 * Whether a proc file system in mountinfo (a /proc/PID/mountinfo file) is
 * mounted with hidepid= other than 0 / off: users there cannot see each
 * other's processes, so per-process series would tell them more.
 */
bool proctab_proc_hides_pids(const char *mountinfo);

#endif
