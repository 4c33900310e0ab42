/* SPDX-License-Identifier: MIT */
/* GPU launch methods (methods_gpu.c), added to dispatch.c's one table. */
#ifndef GPUPROF_RPC_METHODS_GPU_H
#define GPUPROF_RPC_METHODS_GPU_H

#include "rpc.h"

void method_gpu_top(struct rpc_req *req, const cJSON *params);

#define METHODS_GPU {"gpu.top", method_gpu_top},

#endif
