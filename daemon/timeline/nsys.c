// SPDX-License-Identifier: MIT
/*
 * Nsight Systems SQLite export → timeline (docs/import.md). The daemon never
 * opens a client-named path, and SQLite cannot open an fd, so the file is
 * read into memory (bounded by import_opts.max_bytes) and attached with
 * sqlite3_deserialize(..., READONLY): no file, no journal, no temp files.
 * The export is untrusted: only real tables are read (a view under a table's
 * name could run arbitrary SQL), defensive mode is on, and a progress
 * handler bounds the time spent in SQL.
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nsys_int.h"

#define SQL_BUDGET_NS (120ull * 1000000000ull) /* a hostile file cannot stall a worker longer */
#define DEF_MAX_BYTES (64ull << 30)

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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int progress_cb(void *arg)
{
	struct nsys_imp *m = arg;

	return mono_ns() > m->deadline_ns; /* non-zero interrupts the statement */
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

static int load_strings(struct nsys_imp *m)
{
	static const char *const cols[] = { "id", "value", NULL };
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

			err = tl_grow((void **)&m->sid, &cap, m->nstr + 1, sizeof(*m->sid));
			err = err ?: tl_grow((void **)&m->stext, &c2, m->nstr + 1, sizeof(*m->stext));
			err = err ?: tl_grow((void **)&m->sraw, &c3, m->nstr + 1, sizeof(*m->sraw));
			err = err ?: tl_grow((void **)&m->sclean, &c4, m->nstr + 1, sizeof(*m->sclean));
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
	if (r->nev >= m->max_events) {
		m->res->warnings[IMPORT_W_TOO_MANY]++;
		m->res->warnings_total++;
		return 0;
	}
	if (tl_rank_push(r, &nr->cap, e, a))
		return nsys_fail(m, -ENOMEM, "out of memory");
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

static int open_db(struct nsys_imp *m, void *buf, size_t len)
{
	int on = 1;

	if (sqlite3_open_v2(":memory:", &m->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY,
			    NULL) != SQLITE_OK)
		return nsys_fail(m, -ENOMEM, "cannot start SQLite");
	sqlite3_db_config(m->db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on);
	sqlite3_db_config(m->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on);
	sqlite3_exec(m->db, "PRAGMA temp_store=MEMORY", NULL, NULL, NULL);
	if (sqlite3_deserialize(m->db, "main", buf, (sqlite3_int64)len, (sqlite3_int64)len,
				SQLITE_DESERIALIZE_READONLY) != SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "not a readable SQLite database");
	sqlite3_progress_handler(m->db, 10000, progress_cb, m);
	m->deadline_ns = mono_ns() + SQL_BUDGET_NS;
	if (sqlite3_exec(m->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) !=
	    SQLITE_OK)
		return nsys_fail(m, -EBADMSG, "corrupt SQLite database: %s", sqlite3_errmsg(m->db));
	return 0;
}

static int session_epoch(struct nsys_imp *m)
{
	static const char *const cols[] = { "utcEpochNs", NULL };
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

static int import_db(void *buf, size_t len, const struct import_opts *o, struct timeline *tl,
		     struct import_result *res)
{
	struct nsys_imp m = { .st = &tl->st, .o = o, .res = res };
	int32_t base;
	int err;

	m.max_events = o && o->max_events && o->max_events < UINT32_MAX - 1 ? o->max_events
									     : UINT32_MAX - 1;
	res->format = IMPORT_FMT_NSYS;
	if ((err = open_db(&m, buf, len)) || (err = session_epoch(&m)) ||
	    (err = load_strings(&m)) || (err = nsys_read_schemas(&m)) ||
	    (err = nsys_read_ranks(&m)) || (err = nsys_read_devices(&m)) ||
	    (err = nsys_read_gpu(&m)) ||
	    (err = nsys_read_runtime(&m)) || (err = nsys_read_nvtx(&m)))
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
	err = import_db(copy, len, o, tl, res);
	free(copy);
	return err;
}

/* Read fd to EOF into a malloc'ed buffer, at most max bytes. */
static int slurp(int fd, uint64_t max, uint32_t timeout_ms, uint8_t **out, size_t *outlen,
		 struct import_result *res)
{
	size_t len = 0, cap = 1 << 20;
	uint8_t *b = malloc(cap), *nb;
	struct stat st;

	if (!b)
		return -ENOMEM;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size <= max)
		cap = (size_t)st.st_size + 1; /* one read, no realloc */
	if ((nb = realloc(b, cap)))
		b = nb;
	for (;;) {
		ssize_t r;

		if (len == cap) {
			if (cap >= max + 1)
				goto too_big;
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			if (!(nb = realloc(b, cap))) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
		}
		r = read(fd, b + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) { /* a client's non-blocking pipe */
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int pr = poll(&p, 1, timeout_ms ? (int)timeout_ms : -1);

			if (pr == 0) {
				free(b);
				return -ETIMEDOUT;
			}
			continue;
		}
		if (r < 0) {
			int e = -errno;

			free(b);
			return e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max)
			goto too_big;
	}
	*out = b;
	*outlen = len;
	return 0;
too_big:
	free(b);
	snprintf(res->error_msg, sizeof(res->error_msg),
		 "export larger than the import cap of %llu bytes", (unsigned long long)max);
	return -EFBIG;
}

int timeline_import_nsys_fd(int fd, const struct import_opts *o, struct timeline *tl,
			    struct import_result *res)
{
	struct import_result dummy;
	uint64_t max = o && o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	err = slurp(fd, max, o ? o->io_timeout_ms : 0, &buf, &len, res);
	if (err) {
		if (!res->error_msg[0])
			snprintf(res->error_msg, sizeof(res->error_msg), "reading the export: %s",
				 strerror(-err));
		return res->error = err;
	}
	res->bytes_in = len;
	if (!timeline_is_sqlite(buf, len)) {
		free(buf);
		snprintf(res->error_msg, sizeof(res->error_msg), "not an SQLite database");
		return res->error = -EBADMSG;
	}
	err = import_db(buf, len, o, tl, res);
	res->bytes_in = len;
	free(buf);
	return err;
}

/*
 * Look at the first 16 bytes without consuming them: pread on a file,
 * MSG_PEEK on a socket, tee(2) into a private pipe on a pipe (tee copies
 * without consuming). 1 = SQLite, 0 = something else, <0 error.
 */
static int peek_sqlite(int fd, uint32_t timeout_ms)
{
	uint8_t h[16];
	struct stat st;
	ssize_t n = -1;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		off_t at = lseek(fd, 0, SEEK_CUR);

		n = pread(fd, h, sizeof(h), at < 0 ? 0 : at);
	} else if (S_ISSOCK(st.st_mode)) {
		n = recv(fd, h, sizeof(h), MSG_PEEK | MSG_WAITALL);
	} else if (S_ISFIFO(st.st_mode)) {
		int p[2];
		uint64_t end = mono_ns() + (uint64_t)(timeout_ms ? timeout_ms : 30000) * 1000000ull;

		if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
			return -errno;
		for (;;) {
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			ssize_t t;

			if (poll(&pf, 1, 100) < 0 && errno != EINTR)
				break;
			t = tee(fd, p[1], sizeof(h), SPLICE_F_NONBLOCK);
			/* tee copies what is buffered now: fewer than 16 bytes means
			 * the writer is still going (or done, with a tiny file) */
			if (t >= (ssize_t)sizeof(h) || (t == 0 && (pf.revents & POLLHUP)) ||
			    (t < 0 && errno != EAGAIN && errno != EINTR) || mono_ns() > end) {
				n = t > 0 ? read(p[0], h, (size_t)t) : t;
				break;
			}
			if (t > 0 && (pf.revents & POLLHUP)) {
				n = read(p[0], h, (size_t)t);
				break;
			}
			if (t > 0) {
				char drain[16];

				if (read(p[0], drain, (size_t)t) < 0)
					break;
				usleep(1000);
			}
		}
		close(p[0]);
		close(p[1]);
	} else {
		return 0;
	}
	return n >= (ssize_t)sizeof(h) && timeline_is_sqlite(h, (size_t)n);
}

int timeline_import_any_fd(int fd, const struct import_opts *o, struct timeline *tl,
			   struct import_result *res)
{
	int k = peek_sqlite(fd, o ? o->io_timeout_ms : 0);

	if (k > 0)
		return timeline_import_nsys_fd(fd, o, tl, res);
	return timeline_import_fd(fd, o, tl, res); /* JSON, plain or gzip */
}
