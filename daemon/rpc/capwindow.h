/* SPDX-License-Identifier: MIT */
/* capture.start's window parameters (capwindow.c). */
#ifndef GPUPROF_RPC_CAPWINDOW_H
#define GPUPROF_RPC_CAPWINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "methods.h"

/* The longest window a capture may cover, forward or past: a day. */
#define CAPWIN_MAX_MS ((uint64_t)24 * 3600 * 1000)

struct capwin {
	uint64_t duration_ms; /* forward, or */
	uint64_t last_ms;     /* the span before now (absolute: before t1_ns) */
	/* absolute: [t0_ns, t1_ns] on CLOCK_MONOTONIC, checked */
	uint64_t t0_ns, t1_ns;
	bool absolute;
	bool past; /* not forward: the records are in the ring already */
};

/* Read and check the window of capture.start's params into *w; false
 * when the request was answered with the error. Loop thread (it may
 * drain the rings to judge an absolute window). */
bool capwin_param(struct rpc_req *req, const cJSON *params, struct capwin *w);

/* A past window's bounds as the capture will be cut, for the checks made
 * before it is (a pid that exited). */
void capwin_span(const struct capwin *w, uint64_t *t0, uint64_t *t1);

#endif
