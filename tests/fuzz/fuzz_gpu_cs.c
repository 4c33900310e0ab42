// SPDX-License-Identifier: MIT
/*
 * The batch-buffer parser (bpf/gpu_cs_parse.h) through its host path
 * (daemon/xe/cs.c, cs_load.c): the dump loader, buffer registration with
 * replacement and eviction, parses of every kind of command stream, the
 * retry list and the feed of kernel start pointers into the xe kernel
 * table.
 *
 * Input:
 *   byte 0     bit 0 feed an xe core (else KSPs are only counted),
 *              bit 1 small limits (buffers, bytes, retry list, KSP set),
 *              bit 2 run the timer retries at the end
 *   bytes 1-8  GPU VA of one more submission, parsed after the dump
 *   byte 9     its address space (low 2 bits)
 *   the rest   a batch-buffer dump (docs/gpu-cs.md "Dump format")
 * Then: every parse ended within the limits (status, commands, hops,
 * nesting, KSPs), KSPs lie in the 48-bit VA, and the module's tables kept
 * to their bounds.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cs.h"
#include "xe.h"

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void check_result(const struct gpu_cs_result *r, int status)
{
	if (status <= GPU_CS_RUNNING || status >= GPU_CS_NSTATUS || (uint32_t)status != r->status)
		abort();
	if (r->commands > GPU_CS_MAX_COMMANDS || r->hops > GPU_CS_MAX_HOPS ||
	    r->max_nest > GPU_CS_MAX_NEST || r->nksp > GPU_CS_MAX_KSP ||
	    r->calls + r->chains != r->hops || r->invalid > GPU_CS_MAX_INVALID ||
	    r->dwords > GPU_CS_MAX_DWORDS + 65537u)
		abort();
	if (r->iba > GPU_CS_VA_MASK || r->sip > GPU_CS_VA_MASK)
		abort();
	for (uint32_t i = 0; i < r->nksp; i++) {
		if (r->ksp[i].addr > GPU_CS_VA_MASK || !r->ksp[i].kind ||
		    r->ksp[i].kind >= GPU_CS_NKIND)
			abort();
		for (uint32_t j = 0; j < i; j++) /* de-duplicated per parse */
			if (r->ksp[j].addr == r->ksp[i].addr && r->ksp[j].iba == r->ksp[i].iba)
				abort();
	}
}

static void check_bounds(const struct xe_cs *cs, const struct xe_cs_config *cfg)
{
	struct xe_cs_stats st;
	uint64_t parses = 0;

	xe_cs_get_stats(cs, &st);
	for (int i = 0; i < GPU_CS_NSTATUS; i++)
		parses += st.status[i];
	if (st.status[GPU_CS_RUNNING] || parses < st.submits)
		abort();
	if (st.buffers > cfg->max_buffers || st.bytes > cfg->max_bytes ||
	    st.retry_now > cfg->max_retry)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xe_cs_config cfg = {.max_buffers = 256,
				   .max_bytes = 64u << 20,
				   .max_retry = 64,
				   .max_attempts = 5,
				   .max_ksps = 4096};
	struct gpu_cs_result *r;
	struct xe_cs *cs;
	struct xe *x = NULL;
	char why[256];
	int st;

	if (size < 10)
		return 0;
	if (data[0] & 2)
		cfg = (struct xe_cs_config){.max_buffers = 3,
					    .max_bytes = 4096,
					    .max_retry = 2,
					    .max_attempts = 2,
					    .max_ksps = 4};
	if (xe_cs_new(&cfg, &cs) < 0)
		return 0;
	if ((data[0] & 1) &&
	    xe_new(&(struct xe_config){.max_kernels = 64, .max_deferred = 16, .max_rows = 64}, 0,
		   &x) < 0) {
		xe_cs_free(cs);
		return 0;
	}
	st = xe_cs_load(cs, x, data + 10, size - 10, why, sizeof(why));
	if (st < 0 && st != -EBADMSG && st != -ENOMEM)
		abort();
	check_bounds(cs, &cfg);

	r = malloc(sizeof(*r));
	if (r) {
		st = xe_cs_submit(
		    cs, x,
		    &(struct xe_cs_submit){
			.asid = data[9] & 3, .pid = 1, .batch = rd64(data + 1), .comm = "fuzz"},
		    r);
		check_result(r, st);
		free(r);
	}
	if (data[0] & 4)
		for (uint32_t i = 0; i <= cfg.max_attempts; i++)
			xe_cs_retry(cs, x);
	check_bounds(cs, &cfg);
	if (data[0] & 4) {
		struct xe_cs_stats s;

		xe_cs_get_stats(cs, &s);
		if (s.retry_now) /* every waiting parse was given up or finished */
			abort();
	}
	xe_cs_free(cs);
	xe_free(x);
	return 0;
}
