// SPDX-License-Identifier: MIT
/*
 * Nsight Systems SQLite export → timeline (docs/import.md). The daemon never
 * opens a client-named path, and SQLite cannot open an fd, so the file is
 * read into memory (bounded by import_opts.max_bytes) and attached with
 * sqlite3_deserialize(..., READONLY): no file, no journal, no temp files.
 * The export is untrusted: only real tables are read (a view under a table's
 * name could run arbitrary SQL), defensive mode is on, and a progress
 * handler bounds the time spent in SQL.
 *
 * This file runs an import: the readers in order, rank numbering and
 * insertion. SQLite access and strings: nsys_db.c; table readers:
 * nsys_rows.c, nsys_nvtx.c, nsys_devices.c, nsys_nccl.c; descriptors:
 * nsys_fd.c.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_int.h"

/* ---- ranks and events ------------------------------------------------- */

struct nsys_rank *nsys_rank_of(struct nsys_imp *m, int64_t gpid, int64_t dev)
{
	for (uint32_t i = 0; i < m->nranks; i++)
		if (NSYS_PID(m->ranks[i].gpid) == NSYS_PID(gpid) &&
		    (dev < 0 || m->ranks[i].dev == dev))
			return &m->ranks[i];
	return NULL;
}

int nsys_push(struct nsys_imp *m, struct nsys_rank *nr, const struct tl_event *e,
	      const struct tl_args *a)
{
	struct tl_rank *r = nr->r;

	r->raw_events++;
	r->parsed_events++;
	if (m->memcap && !(++m->mem_tick % NSYS_MEM_EVERY)) {
		uint64_t b = m->file_bytes +
			     NSYS_MEM_EVERY * (sizeof(struct tl_event) + sizeof(struct tl_args));
		int err;

		for (uint32_t i = 0; i < m->nranks; i++)
			b += m->ranks[i].r ? tl_rank_mem(m->ranks[i].r) : 0;
		/* a growth of this rank's rows copies them */
		b += tl_rank_mem(r);
		if ((err = tl_mem_charge(m->memcap, tl_memcap_now(m->memcap, NULL, m->st, b),
					 m->err, sizeof(m->err))) < 0)
			return err;
	}
	if (r->nev >= m->max_events) {
		m->res->warnings[IMPORT_W_TOO_MANY]++;
		m->res->warnings_total++;
		return 0;
	}
	switch (tl_rank_push(r, &nr->cap, e, a)) {
	case 0:
		break;
	case -ERANGE: /* ts + dur past int64 ns: a hostile file */
		m->res->warnings[IMPORT_W_BAD_NUMBER]++;
		m->res->warnings_total++;
		return 0;
	default:
		return nsys_fail(m, -ENOMEM, "out of memory");
	}
	if (e->dur_ns < 0) {
		m->res->warnings[IMPORT_W_NEG_DUR]++;
		m->res->warnings_total++;
	}
	return 0;
}

static int cmp_ev_ts(const void *a, const void *b)
{
	const struct tl_event *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Put each rank's events in time order and number them: index is the
 * position "in the file", which for an export is that order. Args move with
 * their events (args are indexed by position, so rebuild them in order). */
static int order_rank(struct nsys_imp *m, struct tl_rank *r)
{
	struct tl_args *args = NULL;
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nev; i++)
		r->ev[i].index = i; /* tie-break: read order */
	if (r->nev)
		qsort(r->ev, r->nev, sizeof(*r->ev), cmp_ev_ts);
	if (r->nargs) {
		args = malloc((size_t)r->nargs * sizeof(*args));
		if (!args)
			return nsys_fail(m, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < r->nev; i++) {
		r->ev[i].index = i;
		if (r->ev[i].args != TL_NO_ARGS) {
			args[n] = r->args[r->ev[i].args];
			r->ev[i].args = n++;
		}
	}
	free(r->args);
	r->args = args;
	r->nargs = n;
	return 0;
}

static void imp_free(struct nsys_imp *m)
{
	for (uint32_t i = 0; i < m->nstr; i++)
		free(m->stext[i]);
	free(m->sid);
	free(m->stext);
	free(m->sraw);
	free(m->sclean);
	for (uint32_t i = 0; i < m->nranks; i++)
		tl_rank_free(m->ranks[i].r);
	free(m->ranks);
	free(m->rng);
	free(m->comm);
	free(m->sch);
	free(m->init);
	free(m->mem);
	if (m->db)
		sqlite3_close(m->db);
}

static int session_epoch(struct nsys_imp *m)
{
	static const char *const cols[] = {"utcEpochNs", NULL};
	sqlite3_stmt *s;
	int err = nsys_select(m, "TARGET_INFO_SESSION_START_TIME", cols, "LIMIT 1", &s);

	if (err)
		return err == -ENOENT ? 0 : err;
	if (nsys_step(m, s) == 1 && sqlite3_column_type(s, 0) == SQLITE_INTEGER)
		m->epoch = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	/* Ranks from separate reports then share the UTC clock (no skew fix). */
	if (m->epoch < 0 || m->epoch > (INT64_MAX >> 1))
		m->epoch = 0;
	return 0;
}

static int32_t next_free_rank(const struct timeline *tl)
{
	uint32_t n = timeline_nranks(tl);

	return n ? timeline_rank_at(tl, n - 1)->rank + 1 : 0;
}

int nsys_import_db(void *buf, size_t len, const struct import_opts *o, struct timeline *tl,
		   struct import_result *res, struct tl_memcap *mem)
{
	struct nsys_imp m = {.st = &tl->st, .o = o, .res = res, .memcap = mem, .file_bytes = len};
	int32_t base;
	int err;

	m.max_events = o && o->max_events && o->max_events < UINT32_MAX - 1 ? o->max_events
									    : UINT32_MAX - 1;
	res->format = IMPORT_FMT_NSYS;
	if ((err = nsys_open_db(&m, buf, len)) || (err = session_epoch(&m)) ||
	    (err = nsys_load_strings(&m)) || (err = nsys_read_schemas(&m)) ||
	    (err = nsys_read_ranks(&m)) || (err = nsys_read_devices(&m)) ||
	    (err = nsys_read_gpu(&m)) || (err = nsys_read_runtime(&m)) ||
	    (err = nsys_read_nvtx(&m)))
		goto out;
	m.base = base = o && o->rank >= 0 ? o->rank : next_free_rank(tl);
	if ((err = nsys_enrich(&m)))
		goto out;
	for (uint32_t i = 0; i < m.nranks; i++)
		if (timeline_rank(tl, base + (int32_t)i)) {
			err = nsys_fail(&m, -EEXIST, "rank %d is already in the timeline",
					base + (int32_t)i);
			goto out;
		}
	for (uint32_t i = 0; i < m.nranks; i++) {
		struct tl_rank *r = m.ranks[i].r;

		if ((err = order_rank(&m, r)))
			goto out;
		r->rank = base + (int32_t)i;
		res->events_raw += r->raw_events;
	}
	for (uint32_t i = 0; i < m.nranks; i++) {
		/* cannot fail with -EEXIST (checked above); -ENOMEM leaves earlier
		 * ranks in tl, which the caller frees with the timeline */
		if ((err = tl_insert_rank(tl, m.ranks[i].r)) < 0) {
			nsys_fail(&m, err, "out of memory");
			goto out;
		}
		m.ranks[i].r = NULL;
	}
	res->rank = base;
	res->nranks = m.nranks;
	if (!(o && o->no_finalize) && (err = timeline_finalize(tl, o ? o->finalize_flags : 0))) {
		nsys_fail(&m, err, "out of memory while indexing");
		goto out;
	}
	for (uint32_t i = 0; i < m.nranks; i++)
		res->events_kept += timeline_rank(tl, base + (int32_t)i)->nev;
out:
	if (err) {
		res->error = err;
		snprintf(res->error_msg, sizeof(res->error_msg), "%s",
			 m.err[0] ? m.err : "nsys import failed");
	}
	imp_free(&m);
	return err;
}

bool timeline_is_sqlite(const void *buf, size_t len)
{
	return len >= 16 && !memcmp(buf, "SQLite format 3", 16);
}

int timeline_import_nsys_buf(const void *buf, size_t len, const struct import_opts *o,
			     struct timeline *tl, struct import_result *res)
{
	struct import_result dummy;
	void *copy;
	int err;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	res->bytes_in = len;
	if (!timeline_is_sqlite(buf, len)) {
		snprintf(res->error_msg, sizeof(res->error_msg), "not an SQLite database");
		return res->error = -EBADMSG;
	}
	/* sqlite3_deserialize wants a writable pointer even when read-only */
	copy = malloc(len);
	if (!copy)
		return res->error = -ENOMEM;
	memcpy(copy, buf, len);
	err = nsys_import_db(copy, len, o, tl, res, NULL);
	free(copy);
	return err;
}
