/* SPDX-License-Identifier: MIT */
/*
 * A metrics snapshot: metric families and their samples, built on the
 * daemon's loop (build.c) and then only read, by the HTTP thread, which
 * renders it in the text format 0.0.4 or OpenMetrics 1.0 (expo.c). It
 * owns all its memory; nothing in it points into daemon state.
 */
#ifndef GPUPROF_METRICS_SNAP_H
#define GPUPROF_METRICS_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum msnap_type {
	MSNAP_GAUGE,
	MSNAP_COUNTER, /* name without "_total": the renderer adds it to samples */
	MSNAP_INFO,    /* name without "_info", value 1: OpenMetrics' info type,
			* a gauge in the text format */
};

struct msnap_sample {
	char *labels; /* rendered `a="x",b="y"` with values escaped; NULL = none */
	double value;
};

struct msnap_family {
	const char *name; /* static strings: family names and help are fixed */
	const char *help;
	const char *unit; /* OpenMetrics UNIT (the name ends in _unit); NULL = none */
	enum msnap_type type;
	size_t first, n; /* its samples: snap->samples[first .. first+n) */
};

struct msnap {
	struct msnap_family *fams;
	size_t nfams, fams_cap;
	struct msnap_sample *samples;
	size_t nsamples, samples_cap;
	uint64_t built_ns; /* CLOCK_MONOTONIC */
	bool oom;	   /* an allocation failed: what was added so far is consistent */
};

/* An empty snapshot (NULL on failure); msnap_free(NULL) is a no-op. */
struct msnap *msnap_new(void);
void msnap_free(struct msnap *s);

/* Start a family; the samples added next belong to it. A family that gets
 * no sample is left out of the exposition. */
void msnap_family(struct msnap *s, const char *name, enum msnap_type type, const char *unit,
		  const char *help);
/*
 * Add a sample to the current family. labels: pairs of name, value
 * strings ending with NULL; values are escaped here (any bytes: a comm
 * may hold quotes or invalid UTF-8, which becomes U+FFFD).
 */
void msnap_add(struct msnap *s, double value, ...) __attribute__((sentinel));

/*
 * Render s into a new buffer (*out, *len; the caller frees *out).
 * openmetrics: OpenMetrics 1.0 text ending in "# EOF", else the
 * Prometheus text format 0.0.4. Returns 0 or -ENOMEM.
 */
int msnap_render(const struct msnap *s, bool openmetrics, char **out, size_t *len);

#endif
