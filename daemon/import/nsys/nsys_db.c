// SPDX-License-Identifier: MIT
/*
 * nsys importer: the SQLite side. Opening the in-memory export read-only and
 * defensive with a time budget, table and column discovery (columns vary
 * across nsys versions), stepping with clear errors, and the StringIds table
 * with its interned raw and cleaned names.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_int.h"

#define SQL_BUDGET_NS (120ull * 1000000000ull) /* a hostile file cannot stall a worker longer */

int nsys_fail(struct nsys_imp *m, int err, const char *fmt, ...)
{
	va_list ap;

	if (!m->err[0]) {
		va_start(ap, fmt);
		vsnprintf(m->err, sizeof(m->err), fmt, ap);
		va_end(ap);
	}
	return err;
}

static int progress_cb(void *arg)
{
	struct nsys_imp *m = arg;

	/* non-zero interrupts the statement: past the SQL budget, or the
	 * import was cancelled (its client left, the daemon stops) */
	return tl_mono_ns() > m->deadline_ns || (m->o && m->o->cancel && atomic_load(m->o->cancel));
}

bool nsys_has_table(struct nsys_imp *m, const char *table)
{
	sqlite3_stmt *s;
	bool yes = false;

	if (sqlite3_prepare_v2(m->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
			       -1, &s, NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
	yes = sqlite3_step(s) == SQLITE_ROW;
	sqlite3_finalize(s);
	return yes;
}

int nsys_select(struct nsys_imp *m, const char *table, const char *const *cols, const char *tail,
		sqlite3_stmt **out)
{
	char sql[2048], q[160];
	size_t n;
	sqlite3_stmt *ti;
	int rc;

	if (!nsys_has_table(m, table))
		return -ENOENT;
	/* PRAGMA table_info: the names nsys wrote, whatever its version. */
	snprintf(q, sizeof(q), "PRAGMA table_info(\"%s\")", table);
	if (sqlite3_prepare_v2(m->db, q, -1, &ti, NULL) != SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "%s: %s", table, sqlite3_errmsg(m->db));
	n = (size_t)snprintf(sql, sizeof(sql), "SELECT ");
	for (size_t i = 0; cols[i]; i++) {
		bool have = false;

		sqlite3_reset(ti);
		while ((rc = sqlite3_step(ti)) == SQLITE_ROW) {
			const char *c = (const char *)sqlite3_column_text(ti, 1);

			if (c && !strcmp(c, cols[i])) {
				have = true;
				break;
			}
		}
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, "%s%s%s%s", i ? ", " : "",
				      have ? "\"" : "", have ? cols[i] : "NULL", have ? "\"" : "");
		if (n >= sizeof(sql))
			break;
	}
	sqlite3_finalize(ti);
	if (n < sizeof(sql))
		n += (size_t)snprintf(sql + n, sizeof(sql) - n, " FROM \"%s\" %s", table,
				      tail ? tail : "");
	if (n >= sizeof(sql))
		return nsys_fail(m, -EINVAL, "%s: query too long", table);
	if (sqlite3_prepare_v2(m->db, sql, -1, out, NULL) != SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "%s: %s", table, sqlite3_errmsg(m->db));
	return 0;
}

int nsys_step(struct nsys_imp *m, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	if (rc == SQLITE_INTERRUPT)
		return nsys_fail(m, -ETIMEDOUT, "reading the export took too long");
	if (rc == SQLITE_NOMEM)
		return nsys_fail(m, -ENOMEM, "out of memory in SQLite");
	return nsys_fail(m, -EBADMSG, "corrupt export: %s", sqlite3_errmsg(m->db));
}

/* ---- strings ---------------------------------------------------------- */

int nsys_load_strings(struct nsys_imp *m)
{
	static const char *const cols[] = {"id", "value", NULL};
	sqlite3_stmt *s;
	uint32_t cap = 0;
	int err, rc;

	err = nsys_select(m, "StringIds", cols, "ORDER BY id", &s);
	if (err == -ENOENT)
		return 0; /* names then read as "" */
	if (err)
		return err;
	while ((rc = nsys_step(m, s)) == 1) {
		const char *t = (const char *)sqlite3_column_text(s, 1);
		int len = sqlite3_column_bytes(s, 1);

		if (m->nstr == cap) {
			uint32_t c2 = cap, c3 = cap, c4 = cap;

			err = bigalloc_grow((void **)&m->sid, &cap, m->nstr + 1, sizeof(*m->sid));
			err = err
				      ?: bigalloc_grow((void **)&m->stext, &c2, m->nstr + 1,
						       sizeof(*m->stext));
			err = err
				      ?: bigalloc_grow((void **)&m->sraw, &c3, m->nstr + 1,
						       sizeof(*m->sraw));
			err = err
				      ?: bigalloc_grow((void **)&m->sclean, &c4, m->nstr + 1,
						       sizeof(*m->sclean));
			if (err) {
				sqlite3_finalize(s);
				return nsys_fail(m, -ENOMEM, "out of memory");
			}
		}
		m->stext[m->nstr] = strndup(t ? t : "", t ? (size_t)len : 0);
		if (!m->stext[m->nstr]) {
			sqlite3_finalize(s);
			return nsys_fail(m, -ENOMEM, "out of memory");
		}
		m->sid[m->nstr] = sqlite3_column_int64(s, 0);
		m->sraw[m->nstr] = m->sclean[m->nstr] = 0;
		m->nstr++;
	}
	sqlite3_finalize(s);
	return rc < 0 ? rc : 0;
}

static int64_t str_pos(const struct nsys_imp *m, int64_t id)
{
	uint32_t lo = 0, hi = m->nstr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->sid[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->nstr && m->sid[lo] == id ? (int64_t)lo : -1;
}

const char *nsys_text(struct nsys_imp *m, int64_t id)
{
	int64_t p = str_pos(m, id);

	return p < 0 ? NULL : m->stext[p];
}

size_t nsys_clean_len(const char *s, size_t n)
{
	const char *c = memmem(s, n, ", op_id = ", 10);
	const char *q = memmem(s, n, ", seq = ", 8);

	if (q && (!c || q < c))
		c = q;
	if (c)
		return (size_t)(c - s);
	/* cudaLaunchKernel_v7000 → cudaLaunchKernel: the suffix is API versioning */
	for (size_t i = n; i > 2; i--) {
		if (s[i - 1] >= '0' && s[i - 1] <= '9')
			continue;
		if (i < n && s[i - 1] == 'v' && s[i - 2] == '_')
			return i - 2;
		break;
	}
	return n;
}

int64_t nsys_intern(struct nsys_imp *m, const char *s, size_t n)
{
	int64_t id = strtab_intern(m->st, s, n);

	return id < 0 ? nsys_fail(m, (int)id, "out of memory") : id;
}

int64_t nsys_intern_id(struct nsys_imp *m, int64_t id, bool clean)
{
	int64_t p = str_pos(m, id), r;
	uint32_t *cache;
	const char *t;

	if (p < 0)
		return 0;
	cache = clean ? &m->sclean[p] : &m->sraw[p];
	if (*cache)
		return *cache;
	t = m->stext[p];
	r = nsys_intern(m, t, clean ? nsys_clean_len(t, strlen(t)) : strlen(t));
	if (r > 0)
		*cache = (uint32_t)r;
	return r;
}

int nsys_open_db(struct nsys_imp *m, void *buf, size_t len)
{
	int on = 1;

	if (sqlite3_open_v2(":memory:", &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, NULL) !=
	    SQLITE_OK)
		return nsys_fail(m, -ENOMEM, "cannot start SQLite");
	sqlite3_db_config(m->db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
	sqlite3_db_config(m->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on);
	sqlite3_exec(m->db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL);
	if (sqlite3_deserialize(m->db, "main", buf, (sqlite3_int64)len, (sqlite3_int64)len,
				SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "not a readable SQLite database");
	sqlite3_progress_handler(m->db, 10000, progress_cb, m);
	m->deadline_ns = tl_mono_ns() + SQL_BUDGET_NS;
	if (sqlite3_exec(m->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "corrupt SQLite database: %s", sqlite3_errmsg(m->db));
	return 0;
}
