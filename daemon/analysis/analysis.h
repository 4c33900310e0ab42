/* SPDX-License-Identifier: MIT */
/*
 * Timeline analyses with Holistic Trace Analysis (HTA) parity
 * (docs/analyses.md): pure
 * functions from a finalized timeline to a cJSON tree. No I/O, no RPC, no
 * global state; any number of threads may run analyses on the same
 * (immutable) timeline at once.
 *
 * Every result states its units in itself: times are microseconds as JSON
 * numbers (keys end in `_us`, and the root carries "unit": "us"),
 * percentages end in `_pctg` and are not rounded. docs/analyses.md documents
 * each tree and every deliberate difference from HTA.
 */
#ifndef GPUPROF_ANALYSIS_H
#define GPUPROF_ANALYSIS_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

struct timeline;

/*
 * Errors analysis_run() returns:
 *   -EINVAL  bad params (type, range, unknown key, absent rank)
 *   -ENODATA no GPU activity in the selected ranks
 *   -ENOENT  no analysis of that name
 *   -EDOM    an input the analysis cannot take (critical_path: a cycle)
 *   -ENOMEM
 */

struct actx;

/*
 * One parameter of an analysis besides "rank" (which every analysis takes):
 * analyze.list reports it, and gpuprofctl offers it as the option
 * --NAME-WITH-DASHES (or --`option`), converting the option's text by
 * `type`, so that a new parameter needs no client code:
 *   "int", "number"  a JSON number
 *   "bool"           --NAME alone is true, --NAME=false false
 *   "string"         the text as it is
 *   "json"           JSON text (an object or a list)
 *   "range"          I or I:J (JSON I, [I, J] or "I:J")
 *   "edits"          SELECTOR*FACTOR or SELECTOR=MICROSECONDS, repeatable,
 *                    into a list of edit objects (critical-path what-ifs)
 *   "fd"             the index of a passed descriptor the result is written
 *                    to; the client opens the file the option names
 *   "fds"            descriptors, and the switch that asks for them, that the
 *                    client fills through options of its own (the
 *                    critical-path overlay's --trace and --overlay)
 */
struct analysis_param {
	const char *name, *type;
	const char *def;    /* the default as text; NULL: none (or required) */
	const char *help;   /* one line */
	const char *option; /* the command line's spelling; NULL: the name */
	/* taken by the analysis's own RPC method (descriptors, the overlay
	 * they carry), not by analysis_run() */
	bool method_only;
};

struct analysis_desc {
	const char *name;    /* "temporal", ... */
	const char *summary; /* one line for --help */
	/* its parameters besides "rank", ending with a NULL name */
	const struct analysis_param *params;
	int (*run)(struct actx *c, cJSON **out); /* internal.h */
};

/* The table of every analysis (analyze.list), terminated by an entry whose
 * name is NULL. */
extern const struct analysis_desc analysis_table[];
/* The entry named name, or NULL. */
const struct analysis_desc *analysis_find(const char *name);
/* The table as analyze.list answers it: {"analyses": [{"name", "summary",
 * "params" (one line: names and defaults), "parameters": [{"name", "type",
 * "default", "help", "option"}]}]}, "rank" first in each; NULL when its
 * root cannot be made. The caller deletes it. */
cJSON *analysis_list_json(void);
/* Whether `key` is a parameter of d: "rank", one in its table, and where
 * `method` is set the table's method_only ones too. Every caller checks
 * request keys with this, so the table is the one list of them. */
bool analysis_param_known(const struct analysis_desc *d, const char *key, bool method);
/* "rank, consecutive_kernel_delay_us (30), ...": the parameters analysis_run()
 * takes, in a line, for messages. */
void analysis_params_line(const struct analysis_desc *d, char *buf, size_t len);

/*
 * Run analysis `name` on the finalized timeline `tl`. `params` is a JSON
 * object or NULL (all defaults). On success returns 0 and *result is a new
 * cJSON tree the caller deletes with cJSON_Delete(). On failure returns a
 * negative errno (above), leaves *result NULL and writes a one-line reason
 * into err (if err and errlen > 0), e.g. "rank 3 is not in this capture
 * (ranks: 0, 1)" or "no GPU activity in this capture".
 */
int analysis_run(const char *name, const struct timeline *tl, const cJSON *params, cJSON **result,
		 char *err, size_t errlen);

enum analysis_flags {
	/* Long arrays of numbers (per-launch columns, queue series, outlier
	 * correlations) as one cJSON_Raw node of JSON text each instead of a
	 * node per number: ~20x cheaper to build and to print on GB traces.
	 * The printed JSON is the same document (numbers parse back to the
	 * same doubles); for callers that print the result (the RPC layer),
	 * not for those that read arrays from the tree. */
	ANALYSIS_COMPACT = 1u << 0,
};
int analysis_run_flags(const char *name, const struct timeline *tl, const cJSON *params,
		       unsigned flags, cJSON **result, char *err, size_t errlen);

#endif /* GPUPROF_ANALYSIS_H */
