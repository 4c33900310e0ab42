// SPDX-License-Identifier: MIT
/*
 * nsys NVTX_EVENTS → timeline: the user ranges kept as CPU events, and the
 * NCCL ranges (by domain) the communication enrichment pairs with kernels.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_int.h"

/* (pid, domainId) pairs whose eventType-75 row names them "NCCL" or not. */
struct dom {
	int64_t pid, dom;
	bool nccl;
};

static int read_domains(struct nsys_imp *m, struct dom **out, uint32_t *n)
{
	static const char *const cols[] = {"globalTid", "domainId", "text", NULL};
	uint32_t cap = 0;
	sqlite3_stmt *s;
	int err, rc;

	err = nsys_select(m, "NVTX_EVENTS", cols, "WHERE eventType = 75", &s);
	if (err)
		return err == -ENOENT ? 0 : err;
	while ((rc = nsys_step(m, s)) == 1) {
		const char *t = (const char *)sqlite3_column_text(s, 2);

		if (bigalloc_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			sqlite3_finalize(s);
			return nsys_fail(m, -ENOMEM, "out of memory");
		}
		(*out)[*n].pid = (int64_t)NSYS_PID(nsys_col_i64(s, 0, 0));
		(*out)[*n].dom = nsys_col_i64(s, 1, 0);
		(*out)[(*n)++].nccl = t && !strcmp(t, "NCCL");
	}
	sqlite3_finalize(s);
	return rc < 0 ? rc : 0;
}

/* A time-sliced export can lose the 75 rows: then a non-default domain
 * whose ranges are named nccl* is NCCL's (the nsys SQLite schema). */
static bool is_nccl_domain(const struct dom *d, uint32_t n, int64_t pid, int64_t dom,
			   const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (d[i].pid == pid && d[i].dom == dom)
			return d[i].nccl;
	return dom != 0 && !strncmp(name, "nccl", 4);
}

static int keep_range(struct nsys_imp *m, int64_t gtid, int64_t start, int64_t end, enum nsys_op op,
		      uint32_t name, sqlite3_stmt *s)
{
	struct nsys_range *g;

	if (bigalloc_grow((void **)&m->rng, &m->rng_cap, m->nrng + 1, sizeof(*m->rng)))
		return nsys_fail(m, -ENOMEM, "out of memory");
	g = &m->rng[m->nrng++];
	memset(g, 0, sizeof(*g));
	g->gtid = gtid;
	g->start = start;
	g->end = end;
	g->op = (uint8_t)op;
	g->name = name;
	g->bytes = -1;
	g->nranks = g->crank = g->cudadev = -1;
	if (s && sqlite3_column_type(s, 6) != SQLITE_NULL)
		nsys_decode_payload(m, g, sqlite3_column_blob(s, 6), sqlite3_column_bytes(s, 6));
	return 0;
}

int nsys_read_nvtx(struct nsys_imp *m)
{
	static const char *const cols[] = {"start", "end",    "globalTid",  "domainId",
					   "text",  "textId", "binaryData", NULL};
	int64_t c_op = nsys_intern(m, "cpu_op", 6), c_ann = nsys_intern(m, "user_annotation", 15);
	int64_t c_nccl = nsys_intern(m, "nccl_nvtx", 9);
	struct dom *doms = NULL;
	uint32_t ndoms = 0;
	sqlite3_stmt *s;
	int err, rc = 0;

	if (c_op < 0 || c_ann < 0 || c_nccl < 0)
		return -ENOMEM;
	if ((err = read_domains(m, &doms, &ndoms)))
		goto out;
	/* 59 push/pop, 60 start/end ranges; marks and open ranges have no end */
	err = nsys_select(m, "NVTX_EVENTS", cols,
			  "WHERE eventType IN (59, 60) AND \"end\" IS NOT NULL", &s);
	if (err) {
		err = err == -ENOENT ? 0 : err;
		goto out;
	}
	while ((rc = nsys_step(m, s)) == 1) {
		int64_t start = nsys_col_i64(s, 0, 0), end = nsys_col_i64(s, 1, start);
		int64_t gtid = nsys_col_i64(s, 2, 0);
		int64_t pid = (int64_t)NSYS_PID(gtid), name;
		const char *t = (const char *)sqlite3_column_text(s, 4);
		size_t len, cl;
		bool nccl;
		struct tl_event e = {0};

		if (!t)
			t = nsys_text(m, nsys_col_i64(s, 5, -1));
		if (!t || !nsys_rank_of(m, gtid, -1))
			continue;
		len = strlen(t);
		cl = nsys_clean_len(t, len);
		nccl = is_nccl_domain(doms, ndoms, pid, nsys_col_i64(s, 3, 0), t);
		if ((name = nsys_intern(m, t, cl)) < 0) {
			err = (int)name;
			break;
		}
		if (nccl) {
			enum nsys_op op = nsys_op_from_name(t, cl);

			if (op != NOP_NONE &&
			    (err = keep_range(m, gtid, m->epoch + start, m->epoch + end, op, 0, s)))
				break;
		} else if (cl > 5 && !memcmp(t, "nccl:", 5)) {
			/* PyTorch's own range around a collective: its real name */
			int64_t cn = nsys_intern(m, t + 5, cl - 5);

			if (cn < 0 || (err = keep_range(m, gtid, m->epoch + start, m->epoch + end,
							NOP_TORCH, (uint32_t)cn, NULL))) {
				err = cn < 0 ? (int)cn : err;
				break;
			}
		}
		e.ts_ns = m->epoch + start;
		e.dur_ns = end - start;
		e.pid = pid;
		e.tid = (int64_t)NSYS_TID(gtid);
		e.stream = e.correlation = e.external_id = -1;
		e.device = -1;
		e.name = (uint32_t)name;
		/* emit_nvtx ranges carry ", op_id = N": operators; the rest are the
		 * user's annotations (ProfilerStep#N, custom iteration marks) */
		e.kind = nccl ? TL_K_OTHER : cl < len ? TL_K_CPU_OP : TL_K_USER_ANNOTATION;
		e.cat = (uint32_t)(nccl ? c_nccl : cl < len ? c_op : c_ann);
		e.flags = tl_flags_from_name(t, cl) & TL_EV_PROFILER_STEP;
		/* a process driving several devices: its CPU ranges on each rank */
		for (uint32_t i = 0; i < m->nranks && !err; i++)
			if (NSYS_PID(m->ranks[i].gpid) == (uint64_t)pid)
				err = nsys_push(m, &m->ranks[i], &e, NULL);
		if (err)
			break;
	}
	sqlite3_finalize(s);
out:
	free(doms);
	return err ? err : rc < 0 ? rc : 0;
}
