/* SPDX-License-Identifier: MIT */
/*
 * Communication metrics for distributed training: per
 * rank, per iteration, then over ranks and iterations — time breakdown by
 * parallelism (DP/TP/PP/EP/OTHER, simple sum and exact interval union),
 * phase windows, bandwidth and bus bandwidth, volume, compute/communication
 * overlap, and a straggler view that matches collectives across ranks.
 * A pure function of a finalized timeline (Kineto or nsys import); the JSON
 * schema is in docs/analyses.md, "Communication metrics".
 *
 * Thread-safety: no global state; any number of calls may run at once on
 * the same (immutable) timeline.
 */
#ifndef GPUPROF_COMM_H
#define GPUPROF_COMM_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct timeline;

/*
 * Run the metrics. `params` (request) and `defaults` (the daemon's
 * comm.params config value) are JSON objects or NULL; a key in params wins
 * over the same key in defaults. Keys: rank, link_bandwidth (bytes/s),
 * iteration (annotation name, '*' suffix = prefix match), tags (mapping
 * rules), tp/pp/dp/ep (sizes for stride inference), windows (bool: full
 * phase-window distributions), top (straggler instances listed).
 * Times in µs computed from integer ns are cJSON_Raw nodes (exact decimal
 * text, at most 3 decimals) whose valuedouble holds the value too: read
 * numbers with cJSON_IsNumber(v) || cJSON_IsRaw(v).
 * Returns 0 and a new tree in *result (caller deletes), or a negative errno
 * with a one-line reason in err: -EINVAL bad params, -ENODATA no
 * communication kernels in the selected ranks, -ENOMEM.
 */
int comm_analyze(const struct timeline *tl, const cJSON *params, const cJSON *defaults,
		 cJSON **result, char *err, size_t errlen);

/*
 * SVG (one document) from a comm_analyze() result computed with
 * windows=true: a stacked bar of the union time breakdown per rank and the
 * CDF of the phase windows per tag pair. *svg is malloc'ed (caller frees).
 * 0, -EINVAL (not a comm result), -ENOMEM.
 */
int comm_svg(const cJSON *result, char **svg, size_t *len);

/* Default link bandwidth (bytes/s) for a device name, 0 if unknown. The
 * table is in docs/analyses.md. */
double comm_link_bw_for_device(const char *name);

#endif
