/* SPDX-License-Identifier: MIT */
/* Renderer methods (methods_render.c): flame graphs, diffs, heat maps, exports. */
#ifndef GPUPROF_RPC_METHODS_RENDER_H
#define GPUPROF_RPC_METHODS_RENDER_H

#include "rpc.h"

void method_capture_flamegraph(struct rpc_req *req, const cJSON *params);
void method_capture_diff(struct rpc_req *req, const cJSON *params);
void method_capture_heatmap(struct rpc_req *req, const cJSON *params);
void method_capture_export(struct rpc_req *req, const cJSON *params);

#define METHODS_RENDER                                                                             \
	{"capture.flamegraph", method_capture_flamegraph},                                        \
	    {"capture.diff", method_capture_diff}, {"capture.heatmap", method_capture_heatmap},  \
	    {"capture.export", method_capture_export},

#endif
