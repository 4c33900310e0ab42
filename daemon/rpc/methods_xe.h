/* SPDX-License-Identifier: MIT */
/* xe.* methods (docs/xe.md): pause/resume the EU-stall streams, and the
 * EU-stall outputs of a capture (folded, iaprof, flamescope) on an fd. */
#ifndef GPUPROF_RPC_METHODS_XE_H
#define GPUPROF_RPC_METHODS_XE_H

#include "rpc.h"

void method_xe_pause(struct rpc_req *req, const cJSON *params);
void method_xe_resume(struct rpc_req *req, const cJSON *params);
/* xe.folded, xe.iaprof, xe.flamescope: the output is taken from the method. */
void method_xe_output(struct rpc_req *req, const cJSON *params);
/* xe.batch: a batch-buffer dump on an fd to the host parser (methods_xecs.c,
 * docs/gpu-cs.md). */
void method_xe_batch(struct rpc_req *req, const cJSON *params);
/* xe.zebin: a NEO debug zebin on an fd: kernels and binaries (docs/xe.md) */
void method_xe_zebin(struct rpc_req *req, const cJSON *params);

#define METHODS_XE                                                                                 \
	{"xe.pause", method_xe_pause}, {"xe.resume", method_xe_resume},                            \
		{"xe.folded", method_xe_output}, {"xe.iaprof", method_xe_output},                  \
		{"xe.flamescope", method_xe_output}, {"xe.batch", method_xe_batch},  \
		{"xe.zebin", method_xe_zebin},

#endif
