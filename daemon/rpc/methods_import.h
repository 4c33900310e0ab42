/* SPDX-License-Identifier: MIT */
#ifndef GPUPROF_RPC_METHODS_IMPORT_H
#define GPUPROF_RPC_METHODS_IMPORT_H

#include "rpc.h"

void method_capture_import(struct rpc_req *req, const cJSON *params);
/* analyze.<name>: the name is taken from the method. */
void method_analyze(struct rpc_req *req, const cJSON *params);
void method_analyze_list(struct rpc_req *req, const cJSON *params);

/* One entry per analysis of daemon/analysis's table; method_analyze looks
 * the name up there, and test_import.py checks every analysis is reachable. */
/* Analyses with their own component add entries the same way. */
#if __has_include("methods_critpath.h")
#include "methods_critpath.h"
#endif
#if __has_include("methods_comm.h")
#include "methods_comm.h"
#endif
#if __has_include("methods_xe.h")
#include "methods_xe.h"
#endif
#ifndef METHODS_CRITPATH
#define METHODS_CRITPATH
#endif
#ifndef METHODS_COMM
#define METHODS_COMM
#endif
#ifndef METHODS_XE
#define METHODS_XE
#endif

#define METHODS_IMPORT                                                                             \
	{"capture.import", method_capture_import}, {"analyze.list", method_analyze_list},         \
		{"analyze.temporal", method_analyze}, {"analyze.idle", method_analyze},            \
		{"analyze.kernels", method_analyze}, {"analyze.overlap", method_analyze},          \
		{"analyze.launch", method_analyze}, {"analyze.queue", method_analyze},             \
		{"analyze.sequences", method_analyze}, METHODS_CRITPATH METHODS_COMM METHODS_XE

#endif
