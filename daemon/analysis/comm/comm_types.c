// SPDX-License-Identifier: MIT
/*
 * What a kernel or collective is: communication kernel names, collective
 * types (from the op's "Collective name" or the NCCL kernel name), dtype
 * sizes, the bytes S of one collective and nccl-tests' bus-bandwidth factor.
 */
#include <math.h>
#include <string.h>

#include "comm_int.h"

const char *const ctype_name[CT_N] = {"AllReduce", "AllGather", "ReduceScatter", "AllToAll",
				      "SendRecv",  "Send",	"Recv",		 "Broadcast",
				      "Reduce",	   "Gather",	"Scatter",	 "Barrier",
				      "Unknown"};

/* NCCL/RCCL (nccl*, rccl*, ncclKernel), HCCL, oneCCL and DeepEP kernels. */
bool comm_kernel_name(const char *s)
{
	return !strncmp(s, "nccl", 4) || !strncmp(s, "rccl", 4) || !strncmp(s, "hccl", 4) ||
	       strstr(s, "ncclKernel") || strstr(s, "ncclDevKernel") || strstr(s, "oneccl") ||
	       strstr(s, "deep_ep::") || strstr(s, "deepep");
}

static const struct {
	const char *name;
	uint8_t type;
} coll_names[] = {
	{"allreduce", CT_ALLREDUCE},
	{"allreduce_coalesced", CT_ALLREDUCE},
	{"all_reduce", CT_ALLREDUCE},
	{"all_gather", CT_ALLGATHER},
	{"_allgather_base", CT_ALLGATHER},
	{"allgather", CT_ALLGATHER},
	{"allgather_into_tensor_coalesced", CT_ALLGATHER},
	{"allgather_coalesced", CT_ALLGATHER},
	{"all_gather_into_tensor", CT_ALLGATHER},
	{"reduce_scatter", CT_REDUCESCATTER},
	{"_reduce_scatter_base", CT_REDUCESCATTER},
	{"reduce_scatter_tensor_coalesced", CT_REDUCESCATTER},
	{"reduce_scatter_tensor", CT_REDUCESCATTER},
	{"all_to_all", CT_ALLTOALL},
	{"all_to_allv", CT_ALLTOALL},
	{"alltoall", CT_ALLTOALL},
	{"alltoall_base", CT_ALLTOALL},
	{"send", CT_SEND},
	{"recv", CT_RECV},
	{"sendrecv", CT_SENDRECV},
	{"broadcast", CT_BROADCAST},
	{"reduce", CT_REDUCE},
	{"gather", CT_GATHER},
	{"scatter", CT_SCATTER},
	{"barrier", CT_BARRIER},
};

int type_from_coll(const char *s)
{
	for (size_t i = 0; i < sizeof(coll_names) / sizeof(coll_names[0]); i++)
		if (!strcmp(s, coll_names[i].name))
			return coll_names[i].type;
	return -1;
}

/* ^(nccl|rccl)(Dev|SymDev|SymkDev)?Kernel_<Coll>; DeepEP dispatch/combine
 * are all-to-alls. The algo/proto/dtype in the name are not what ran. */
uint8_t type_from_kernel(const char *s)
{
	static const struct {
		const char *p;
		uint8_t t;
	} k[] = {{"AllReduce", CT_ALLREDUCE},
		 {"AllGather", CT_ALLGATHER},
		 {"ReduceScatter", CT_REDUCESCATTER},
		 {"Broadcast", CT_BROADCAST},
		 {"Reduce", CT_REDUCE},
		 {"SendRecv", CT_SENDRECV},
		 {"AllToAll", CT_ALLTOALL},
		 {"AlltoAll", CT_ALLTOALL}};
	const char *u = strstr(s, "Kernel_");

	if (strstr(s, "deep_ep::") || strstr(s, "deepep"))
		return CT_ALLTOALL;
	if (!u)
		return CT_UNKNOWN;
	u += 7;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		size_t n = strlen(k[i].p);

		if (!strncmp(u, k[i].p, n) && (u[n] == '_' || u[n] == '(' || !u[n] || u[n] == 'V'))
			return k[i].t;
	}
	return CT_UNKNOWN;
}

/* c10 ScalarType names and a few numpy-style spellings (c10's ScalarType). */
int64_t dtype_size(const char *s)
{
	static const struct {
		const char *n;
		int8_t b;
	} t[] = {
		{"Byte", 1},
		{"Char", 1},
		{"Short", 2},
		{"Int", 4},
		{"Long", 8},
		{"Half", 2},
		{"Float", 4},
		{"Double", 8},
		{"ComplexHalf", 4},
		{"ComplexFloat", 8},
		{"ComplexDouble", 16},
		{"Bool", 1},
		{"QInt8", 1},
		{"QUInt8", 1},
		{"QInt32", 4},
		{"BFloat16", 2},
		{"QUInt4x2", 1},
		{"QUInt2x4", 1},
		{"Bits1x8", 1},
		{"Bits2x4", 1},
		{"Bits4x2", 1},
		{"Bits8", 1},
		{"Bits16", 2},
		{"UInt16", 2},
		{"UInt32", 4},
		{"UInt64", 8},
		{"Float8_e5m2", 1},
		{"Float8_e4m3fn", 1},
		{"Float8_e5m2fnuz", 1},
		{"Float8_e4m3fnuz", 1},
		{"Float8_e8m0fnu", 1},
		{"Float4_e2m1fn_x2", 1},
		{"float32", 4},
		{"float16", 2},
		{"bfloat16", 2},
		{"float64", 8},
		{"int64", 8},
		{"int32", 4},
		{"uint8", 1},
		{"int8", 1},
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(s, t[i].n))
			return t[i].b;
	if ((!strncmp(s, "UInt", 4) || !strncmp(s, "Int", 3)) && strlen(s) <= 5)
		return 1; /* UInt1..7 / Int1..7 placeholders */
	return -1;
}

/* nccl-tests' busBW factor (nccl-tests' PERFORMANCE.md); NaN when n is needed but unknown. */
double busbw_factor(uint8_t type, int32_t n)
{
	switch (type) {
	case CT_ALLREDUCE:
		return n > 0 ? 2.0 * (n - 1) / n : NAN;
	case CT_ALLGATHER:
	case CT_REDUCESCATTER:
	case CT_ALLTOALL:
	case CT_GATHER:
	case CT_SCATTER:
		return n > 0 ? (double)(n - 1) / n : NAN;
	case CT_BROADCAST:
	case CT_REDUCE:
	case CT_SENDRECV:
	case CT_SEND:
	case CT_RECV:
		return 1.0;
	default:
		return NAN;
	}
}

/* S per collective (documented in docs/analyses.md): the total buffer. */
int64_t bytes_of(uint8_t type, const struct tl_args *a, int64_t el)
{
	int64_t in = a->in_msg_nelems, out = a->out_msg_nelems, nel;

	switch (type) {
	case CT_ALLGATHER:
	case CT_RECV:
		nel = out >= 0 ? out : -1;
		break;
	case CT_ALLREDUCE:
	case CT_REDUCESCATTER:
	case CT_BROADCAST:
	case CT_REDUCE:
	case CT_SEND:
	case CT_BARRIER:
		nel = in;
		break;
	default: /* all-to-all(v), send/recv pairs, gather/scatter, unknown */
		nel = in > out ? in : out;
	}
	if (nel < 0 || el <= 0 || __builtin_mul_overflow(nel, el, &nel))
		return -1;
	return nel;
}
