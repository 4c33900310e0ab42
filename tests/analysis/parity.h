/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the HTA parity tests: load a reference trace through the
 * importer's public API and HTA's saved JSON outputs, both at run time from
 * $GPUPROF_SHARED (never copied into the tree).
 */
#ifndef GPUPROF_TEST_PARITY_H
#define GPUPROF_TEST_PARITY_H

#include <cjson/cJSON.h>

#include "analysis/analysis.h"
#include "timeline/timeline.h"

/* Every trace of reference/hta/traces that has outputs. */
extern const char *const parity_traces[];

/* Import every file of traces/<name>/ (sorted) and finalize. NULL on error. */
struct timeline *parity_load_trace(const char *name);
/* Parse outputs/<name>/<file>.json; NULL if absent. Caller deletes. */
cJSON *parity_load_ref(const char *name, const char *file);
/* Run an analysis, failing the test (and returning NULL) on error. */
cJSON *parity_run(const char *analysis, const struct timeline *tl, const char *params_json);
/* The element of result.ranks whose "rank" is rank, or NULL. */
const cJSON *parity_rank(const cJSON *result, int rank);
/* obj[key] as a number (NaN for null/absent). */
double jnumv(const cJSON *obj, const char *key);
/* numpy round-half-even to k decimals, as HTA rounds its outputs (Q13). */
double hta_round(double x, int k);
/* Path under $GPUPROF_SHARED/reference/hta (static buffer). */
const char *parity_path(const char *rel);

#endif
