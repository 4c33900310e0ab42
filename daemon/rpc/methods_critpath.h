/* SPDX-License-Identifier: MIT */
#ifndef GPUPROF_RPC_METHODS_CRITPATH_H
#define GPUPROF_RPC_METHODS_CRITPATH_H

#include "rpc.h"

/* analyze.critical_path (docs/protocol.md, docs/analyses.md "Critical path"). */
void method_analyze_critical_path(struct rpc_req *req, const cJSON *params);

#define METHODS_CRITPATH {"analyze.critical_path", method_analyze_critical_path},

#endif
