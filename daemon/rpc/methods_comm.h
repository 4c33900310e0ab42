/* SPDX-License-Identifier: MIT */
/* analyze.comm (methods_comm.c): communication metrics on a capture. */
#ifndef GPUPROF_RPC_METHODS_COMM_H
#define GPUPROF_RPC_METHODS_COMM_H

#include "rpc.h"

void method_analyze_comm(struct rpc_req *req, const cJSON *params);

#define METHODS_COMM {"analyze.comm", method_analyze_comm},

#endif
