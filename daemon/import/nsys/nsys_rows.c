// SPDX-License-Identifier: MIT
/*
 * nsys tables → timeline events. Each GPU row keeps the shape the Kineto
 * importer gives it (pid = device, tid = stream = streamId, correlation),
 * so every analysis reads nsys captures the same way; CPU rows keep the
 * process and thread ids from globalTid.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "nsys_int.h"

static const char *const gpu_tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
					 "CUPTI_ACTIVITY_KIND_MEMSET", NULL};

static int cmp_rank(const void *a, const void *b)
{
	const struct nsys_rank *x = a, *y = b;

	if (NSYS_PID(x->gpid) != NSYS_PID(y->gpid))
		return NSYS_PID(x->gpid) < NSYS_PID(y->gpid) ? -1 : 1;
	return x->dev < y->dev ? -1 : x->dev > y->dev;
}

/* One rank per (process, device) with GPU work, in (pid, device) order: the
 * export does not say which global rank a process was. */
int nsys_read_ranks(struct nsys_imp *m)
{
	static const char *const cols[] = {"globalPid", "deviceId", NULL};
	uint32_t cap = 0;
	int err, rc;

	for (const char *const *t = gpu_tables; *t; t++) {
		sqlite3_stmt *s;

		err = nsys_select(m, *t, cols, "GROUP BY 1, 2", &s);
		if (err == -ENOENT)
			continue;
		if (err)
			return err;
		while ((rc = nsys_step(m, s)) == 1) {
			int64_t g = sqlite3_column_int64(s, 0), d = sqlite3_column_int64(s, 1);

			if (nsys_rank_of(m, g, d))
				continue;
			if (m->nranks >= 4096) {
				sqlite3_finalize(s);
				return nsys_fail(m, -E2BIG, "more than 4096 GPU processes/devices");
			}
			if (bigalloc_grow((void **)&m->ranks, &cap, m->nranks + 1,
					  sizeof(*m->ranks))) {
				sqlite3_finalize(s);
				return nsys_fail(m, -ENOMEM, "out of memory");
			}
			memset(&m->ranks[m->nranks], 0, sizeof(m->ranks[0]));
			m->ranks[m->nranks].gpid = g;
			m->ranks[m->nranks].dev = d;
			m->ranks[m->nranks].r = tl_rank_alloc(0);
			if (!m->ranks[m->nranks++].r) {
				sqlite3_finalize(s);
				return nsys_fail(m, -ENOMEM, "out of memory");
			}
		}
		sqlite3_finalize(s);
		if (rc < 0)
			return rc;
	}
	if (!m->nranks)
		return nsys_fail(m, -EBADMSG,
				 "no CUDA kernels, copies or sets in this export (was it "
				 "profiled with -t cuda?)");
	qsort(m->ranks, m->nranks, sizeof(*m->ranks), cmp_rank);
	return 0;
}

static const char *memcpy_name(int64_t kind)
{
	static const char *const n[] = {"Memcpy Unknown",    "Memcpy HtoD",
					"Memcpy DtoH",	     "Memcpy HtoA",
					"Memcpy AtoH",	     "Memcpy AtoA",
					"Memcpy AtoD",	     "Memcpy DtoA",
					"Memcpy DtoD",	     "Memcpy HtoH",
					"Memcpy PtoP",	     "Memcpy HtoD (UVM)",
					"Memcpy DtoH (UVM)", "Memcpy DtoD (UVM)"};

	return kind >= 0 && kind < 14 ? n[kind] : n[0];
}

static const char *sync_name(int64_t type, bool *has_stream)
{
	*has_stream = type == 2 || type == 3;
	switch (type) {
	case 1:
		return "Event Sync";
	case 2:
		return "Stream Wait Event";
	case 3:
		return "Stream Sync";
	case 4:
		return "Context Sync";
	default:
		return "Sync";
	}
}

static int comm_note(struct nsys_imp *m, struct nsys_rank *nr, int64_t corr)
{
	struct nsys_comm *c;

	if (bigalloc_grow((void **)&m->comm, &m->comm_cap, m->ncomm + 1, sizeof(*m->comm)))
		return nsys_fail(m, -ENOMEM, "out of memory");
	c = &m->comm[m->ncomm++];
	c->pid = (int64_t)NSYS_PID(nr->gpid);
	c->corr = corr;
	c->rank = (uint32_t)(nr - m->ranks);
	c->ev = nr->r->nev - 1;
	c->gtid = -1;
	c->launch = 0;
	return 0;
}

/* kind 0 kernel, 1 memcpy, 2 memset, 3 sync */
static int read_gpu_table(struct nsys_imp *m, int kind)
{
	static const char *const cols[] =
		{"start",	  "end",	   "globalPid", "deviceId", "streamId",
		 "correlationId", "demangledName", "shortName", "bytes",    "copyKind",
		 "syncType",	  "gridX",	   "gridY",	"gridZ",    "blockX",
		 "blockY",	  "blockZ",	   "contextId", NULL};
	static const char *const tables[] = {"CUPTI_ACTIVITY_KIND_KERNEL",
					     "CUPTI_ACTIVITY_KIND_MEMCPY",
					     "CUPTI_ACTIVITY_KIND_MEMSET",
					     "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"};
	static const char *const cats[] = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync"};
	static const uint8_t kinds[] = {TL_K_KERNEL, TL_K_MEMCPY, TL_K_MEMSET, TL_K_SYNC};
	int64_t cat = nsys_intern(m, cats[kind], strlen(cats[kind]));
	sqlite3_stmt *s;
	int err, rc;

	if (cat < 0)
		return (int)cat;
	err = nsys_select(m, tables[kind], cols, NULL, &s);
	if (err)
		return err == -ENOENT ? 0 : err;
	while ((rc = nsys_step(m, s)) == 1) {
		int64_t start = nsys_col_i64(s, 0, 0), end = nsys_col_i64(s, 1, start);
		struct nsys_rank *nr =
			nsys_rank_of(m, nsys_col_i64(s, 2, 0), nsys_col_i64(s, 3, 0));
		struct tl_event e = {0};
		struct tl_args a;
		bool has_args = false, has_stream = true;
		int64_t name = 0;
		const char *nm = NULL;

		if (!nr) /* a sync on a device without other GPU work */
			continue;
		memset(&a, 0, sizeof(a));
		a.wait_on_stream = a.wait_on_event_record_corr = a.wait_on_event_id = -1;
		a.queued = a.bytes = a.in_msg_nelems = a.out_msg_nelems = a.group_size = -1;
		a.context = nsys_col_i64(s, 17, -1);
		for (int k = 0; k < 3; k++)
			a.grid[k] = a.block[k] = -1;
		if (kind == 0) {
			int64_t id = nsys_col_i64(s, 6, -1);

			if (id < 0 || !nsys_text(m, id))
				id = nsys_col_i64(s, 7, -1);
			name = nsys_intern_id(m, id, false);
			for (int k = 0; k < 3; k++) {
				a.grid[k] = (int32_t)nsys_col_i64(s, 11 + k, -1);
				a.block[k] = (int32_t)nsys_col_i64(s, 14 + k, -1);
			}
			has_args = true;
		} else if (kind == 1) {
			nm = memcpy_name(nsys_col_i64(s, 9, 0));
			a.bytes = nsys_col_i64(s, 8, -1);
			has_args = true;
		} else if (kind == 2) {
			nm = "Memset (Device)";
			a.bytes = nsys_col_i64(s, 8, -1);
			has_args = true;
		} else {
			nm = sync_name(nsys_col_i64(s, 10, 0), &has_stream);
		}
		if (nm)
			name = nsys_intern(m, nm, strlen(nm));
		if (name < 0) {
			sqlite3_finalize(s);
			return (int)name;
		}
		e.ts_ns = m->epoch + start;
		e.dur_ns = end - start;
		e.pid = nr->dev;
		e.stream = has_stream ? nsys_col_i64(s, 4, -1) : -1;
		e.tid = e.stream;
		e.correlation = nsys_col_i64(s, 5, -1);
		e.external_id = -1;
		e.name = (uint32_t)name;
		e.cat = (uint32_t)cat;
		e.kind = kinds[kind];
		e.device = (int32_t)nr->dev;
		if (kind == 3) {
			size_t l = strlen(nm);

			e.sync = tl_sync_from_name(nm, l);
		}
		if (e.stream != -1)
			e.flags |= TL_EV_GPU_SIDE;
		if ((e.stream >= 0 && e.correlation >= 0) || e.sync == TL_SYNC_EVENT ||
		    e.sync == TL_SYNC_CONTEXT)
			e.flags |= TL_EV_GPU_KERNEL_FILTER;
		if ((err = nsys_push(m, nr, &e, has_args ? &a : NULL)))
			break;
		if (kind == 0 && e.correlation >= 0) {
			const char *t = strtab_get(m->st, e.name, NULL);

			if (nsys_is_comm_kernel(t, strlen(t)) &&
			    (err = comm_note(m, nr, e.correlation)))
				break;
		}
	}
	sqlite3_finalize(s);
	return err ? err : rc < 0 ? rc : 0;
}

int nsys_read_gpu(struct nsys_imp *m)
{
	int err;

	for (int k = 0; k < 4; k++)
		if ((err = read_gpu_table(m, k)))
			return err;
	return 0;
}

static int cmp_comm(const void *a, const void *b)
{
	const struct nsys_comm *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static struct nsys_comm *comm_find(struct nsys_imp *m, int64_t pid, int64_t corr)
{
	struct nsys_comm key = {.pid = pid, .corr = corr};

	return m->ncomm ? bsearch(&key, m->comm, m->ncomm, sizeof(*m->comm), cmp_comm) : NULL;
}

/* (pid, correlation) → rank, for processes driving several devices. */
struct cmap {
	int64_t pid, corr;
	uint32_t rank;
};

static int cmp_cmap(const void *a, const void *b)
{
	const struct cmap *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static bool multi_dev(const struct nsys_imp *m, uint32_t i)
{
	uint64_t p = NSYS_PID(m->ranks[i].gpid);

	return (i > 0 && NSYS_PID(m->ranks[i - 1].gpid) == p) ||
	       (i + 1 < m->nranks && NSYS_PID(m->ranks[i + 1].gpid) == p);
}

static int build_cmap(struct nsys_imp *m, struct cmap **out, uint32_t *n)
{
	uint32_t cap = 0;

	for (uint32_t i = 0; i < m->nranks; i++) {
		const struct tl_rank *r = m->ranks[i].r;

		if (!multi_dev(m, i))
			continue;
		for (uint32_t k = 0; k < r->nev; k++) {
			if (r->ev[k].correlation < 0)
				continue;
			if (bigalloc_grow((void **)out, &cap, *n + 1, sizeof(**out)))
				return nsys_fail(m, -ENOMEM, "out of memory");
			(*out)[*n].pid = (int64_t)NSYS_PID(m->ranks[i].gpid);
			(*out)[*n].corr = r->ev[k].correlation;
			(*out)[(*n)++].rank = i;
		}
	}
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_cmap);
	return 0;
}

/* The rank a CPU call belongs to: correlationId is unique only inside one
 * process; a process with several devices gives each call to the device its
 * GPU work ran on, and calls without GPU work to its first device. */
static struct nsys_rank *runtime_rank(struct nsys_imp *m, const struct cmap *cm, uint32_t ncm,
				      int64_t gtid, int64_t corr)
{
	struct cmap key = {.pid = (int64_t)NSYS_PID(gtid), .corr = corr};
	const struct cmap *hit = ncm ? bsearch(&key, cm, ncm, sizeof(*cm), cmp_cmap) : NULL;

	return hit ? &m->ranks[hit->rank] : nsys_rank_of(m, gtid, -1);
}

int nsys_read_runtime(struct nsys_imp *m)
{
	static const char *const cols[] = {"start",  "end",	   "globalTid", "correlationId",
					   "nameId", "eventClass", NULL};
	int64_t cat_rt = nsys_intern(m, "cuda_runtime", 12),
		cat_drv = nsys_intern(m, "cuda_driver", 11);
	struct cmap *cm = NULL;
	uint32_t ncm = 0;
	sqlite3_stmt *s;
	int err = 0, rc = 0;

	if (cat_rt < 0 || cat_drv < 0)
		return -ENOMEM;
	if (m->ncomm)
		qsort(m->comm, m->ncomm, sizeof(*m->comm), cmp_comm);
	if ((err = build_cmap(m, &cm, &ncm)))
		goto out;
	err = nsys_select(m, "CUPTI_ACTIVITY_KIND_RUNTIME", cols, NULL, &s);
	if (err) {
		err = err == -ENOENT ? 0 : err;
		goto out;
	}
	while ((rc = nsys_step(m, s)) == 1) {
		int64_t start = nsys_col_i64(s, 0, 0), gtid = nsys_col_i64(s, 2, 0);
		int64_t corr = nsys_col_i64(s, 3, -1);
		struct nsys_rank *nr = runtime_rank(m, cm, ncm, gtid, corr);
		struct nsys_comm *c;
		struct tl_event e = {0};
		int64_t name;

		if (!nr) /* a process without GPU work */
			continue;
		name = nsys_intern_id(m, nsys_col_i64(s, 4, -1), true);
		if (name < 0) {
			err = (int)name;
			break;
		}
		e.ts_ns = m->epoch + start;
		e.dur_ns = nsys_col_i64(s, 1, start) - start;
		e.pid = (int64_t)NSYS_PID(gtid);
		e.tid = (int64_t)NSYS_TID(gtid);
		e.stream = -1;
		e.correlation = corr;
		e.external_id = -1;
		e.name = (uint32_t)name;
		e.cat = (uint32_t)(nsys_col_i64(s, 5, 0) == 1 ? cat_drv : cat_rt);
		e.kind = nsys_col_i64(s, 5, 0) == 1 ? TL_K_DRIVER : TL_K_RUNTIME;
		e.device = -1;
		{
			size_t l;
			const char *t = strtab_get(m->st, e.name, &l);

			e.flags = tl_flags_from_name(t, l);
		}
		if ((err = nsys_push(m, nr, &e, NULL)))
			break;
		if (corr >= 0 && (c = comm_find(m, e.pid, corr))) {
			c->gtid = gtid;
			c->launch = e.ts_ns;
		}
	}
	sqlite3_finalize(s);
out:
	free(cm);
	return err ? err : rc < 0 ? rc : 0;
}
