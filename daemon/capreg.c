// SPDX-License-Identifier: MIT
#include "capreg.h"
#include "capreg_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpd.h"
#include "json.h"
#include "jobs.h"
#include "log.h"

static const char *const type_names[STORE_REC_TYPE_MAX] = {
	[STORE_REC_CPU_SAMPLE] = "cpu_sample",
	[STORE_REC_GPU_LAUNCH] = "gpu_launch",
	[STORE_REC_GPU_INTERVAL] = "gpu_interval",
	[STORE_REC_MARK] = "mark",
	[STORE_REC_GPU_API] = "gpu_api",       /* CUPTI runtime / driver calls */
	[STORE_REC_GPU_PC] = "gpu_pc",	       /* CUPTI PC samples with stall reasons */
	[STORE_REC_GPU_EVENT] = "gpu_event",   /* CUPTI CUDA event records */
	[STORE_REC_GPU_WINDOW] = "gpu_window", /* CUPTI duty-cycle collection windows */
};

int capreg_dirfd(const struct capreg *r)
{
	return r->dirfd;
}

void capreg_set_prepare(struct capreg *r, capreg_prepare_fn fn, void *arg)
{
	r->prepare = fn;
	r->prepare_arg = arg;
}

/*
 * The state directory holds every user's captures, so only the daemon's
 * user may write it, and only the daemon's group may read it. One that
 * already exists (an admin's mkdir, an old install) is checked: owned by
 * another user, it is refused (that user could swap captures or plant
 * links under us: nothing in it can be trusted); looser modes are tightened
 * (group and others lose write, others lose everything, a foreign group
 * loses read) with a warning, as systemd's StateDirectory= does.
 */
static int check_state_dir(int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid()) {
		log_err("state directory %s is owned by uid %u, not by the daemon's uid %u: "
			"refusing it (chown it or remove it)",
			path, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	mode_t allowed = st.st_gid == getegid() ? 0750 : 0700;
	mode_t mode = st.st_mode & 07777;
	if (mode & ~allowed) {
		if (fchmod(fd, mode & allowed) < 0) {
			int e = errno;
			log_err("state directory %s has mode %04o and cannot be changed: %s", path,
				(unsigned)mode, strerror(e));
			return -e;
		}
		log_warn("state directory %s had mode %04o: changed to %04o", path, (unsigned)mode,
			 (unsigned)(mode & allowed));
	}
	return 0;
}

/* mkdir -p with mode for the last component; refuses symlinks. */
static int make_state_dir(const char *path)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0750) < 0 && errno != EEXIST)
		return -errno;
	int fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = check_state_dir(fd, buf);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

static void save_next_id(struct capreg *r)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", r->next_id);
	int fd = openat(r->dirfd, "next-id.tmp",
			O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0)
		return;
	bool ok = write(fd, buf, (size_t)n) == n && fsync(fd) == 0;
	close(fd);
	if (ok)
		renameat(r->dirfd, "next-id.tmp", r->dirfd, "next-id");
	else
		unlinkat(r->dirfd, "next-id.tmp", 0);
}

static void load_next_id(struct capreg *r)
{
	int fd = openat(r->dirfd, "next-id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[32] = {0};
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		uint64_t v = strtoull(buf, NULL, 10);
		if (v > r->next_id && v < UINT64_MAX / 2)
			r->next_id = v;
	}
}

void capreg_coverage_json(cJSON *o, const struct capture_coverage *cov)
{
	cJSON *g;

	if (!o || !cov->pids || !(g = cJSON_AddObjectToObject(o, "gpu_coverage")))
		return;
	cJSON_AddNumberToObject(g, "covered_fraction", cov->fraction);
	cJSON_AddNumberToObject(g, "duty_percent", cov->duty);
	cJSON_AddNumberToObject(g, "period_ms", cov->period_ms);
	cJSON_AddNumberToObject(g, "windows", (double)cov->windows);
	cJSON_AddNumberToObject(g, "covered_ns", (double)cov->covered_ns);
	cJSON_AddNumberToObject(g, "pids", cov->pids);
	cJSON_AddStringToObject(g, "note",
				"CUPTI collected only in its duty-cycle windows: GPU time and "
				"idle outside them are unknown, not idle");
}

static void count_types(struct capentry *e)
{
	capture_gpu_coverage(e->sum, &e->cov);
	memset(e->by_type, 0, sizeof(e->by_type));
	for (size_t i = 0; i < e->sum->nrecs; i++) {
		unsigned t = e->sum->recs[i].type;
		if (t < STORE_REC_TYPE_MAX)
			e->by_type[t]++;
	}
}

/* Keep the import summary (shown by capture.info) before the data goes. */
static void keep_info(struct capentry *e)
{
	const struct capture_extra *x = capture_find_extra(e->sum, CAPSEC_IMPORT_INFO);
	if (!x || e->info_json || x->len > 65536)
		return;
	e->info_json = malloc(x->len + 1);
	if (e->info_json) {
		memcpy(e->info_json, x->data, x->len);
		e->info_json[x->len] = '\0';
	}
}

/* Keep the header and counts, drop the data. */
static void strip(struct capture *c)
{
	free(c->str_blob);
	free(c->strs);
	free(c->ips);
	free(c->stacks);
	free(c->recs);
	c->str_blob = NULL;
	c->strs = NULL;
	c->ips = NULL;
	c->stacks = NULL;
	c->recs = NULL;
	for (size_t i = 0; i < c->nextras; i++)
		free(c->extras[i].data);
	free(c->extras);
	c->extras = NULL;
	c->nextras = 0;
}

static struct capentry *entry_new(struct capreg *r, uint64_t id)
{
	struct capentry *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->reg = r;
	e->id = id;
	/* keep id order: ids only grow, except on reload where we sort */
	if (!r->tail || r->tail->id < id) {
		if (r->tail)
			r->tail->next = e;
		else
			r->head = e;
		r->tail = e;
	} else {
		struct capentry **pp = &r->head;
		while (*pp && (*pp)->id < id)
			pp = &(*pp)->next;
		e->next = *pp;
		*pp = e;
	}
	r->count++;
	return e;
}

static void on_slot_free(void *arg);

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static void wait_remove(struct capentry *e)
{
	struct capreg *r = e->reg;
	struct capentry **pp = &r->wait_head, *prev = NULL;

	if (!e->waiting)
		return;
	while (*pp && *pp != e) {
		prev = *pp;
		pp = &(*pp)->wait_next;
	}
	if (*pp)
		*pp = e->wait_next;
	if (r->wait_tail == e)
		r->wait_tail = prev;
	e->wait_next = NULL;
	e->waiting = false;
	r->nwaiting--;
	r->waiting_bytes -= e->data_bytes;
}

static void entry_unlink_free(struct capentry *e)
{
	struct capreg *r = e->reg;
	wait_remove(e);
	struct capentry *prev = NULL;
	for (struct capentry *it = r->head; it; prev = it, it = it->next) {
		if (it != e)
			continue;
		if (prev)
			prev->next = e->next;
		else
			r->head = e->next;
		if (r->tail == e)
			r->tail = prev;
		break;
	}
	r->count--;
	if (e->timer) {
		uv_timer_stop(e->timer);
		uv_close((uv_handle_t *)e->timer, timer_closed);
	}
	capture_free(e->sum);
	free(e->info_json);
	free(e);
}

/* Tell every waiter of e how it ended (capreg.h). */
static void end_waiters(struct capentry *e, enum capwait_end end, int err, const char *what)
{
	while (e->waiters) {
		struct capwaiter *w = e->waiters;

		e->waiters = w->next;
		w->done(w, e, end, err, what);
	}
}

static void fail_waiters(struct capentry *e, int err, const char *what)
{
	end_waiters(e, CAPWAIT_GONE, err, what);
}

static void reload(struct capreg *r)
{
	unlinkat(r->dirfd, "next-id.tmp", 0);
	int n = capture_clean_tmp(r->dirfd);
	if (n > 0)
		log_info("removed %d unfinished capture file(s)", n);
	int dfd = dup(r->dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	lseek(dfd, 0, SEEK_SET);
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		uint64_t id = strtoull(de->d_name, &end, 10);
		if (strcmp(end, ".gpc") != 0 || id == 0 || id > UINT64_MAX / 4)
			continue;
		struct capture *c = NULL;
		int rr = capture_load(r->dirfd, id, &c);
		if (rr < 0 && rr != -EBADMSG) {
			log_warn("capture %" PRIu64 ": cannot load: %s (skipped)", id,
				 strerror(-rr));
			continue;
		}
		struct capentry *e = entry_new(r, id);
		if (!e) {
			capture_free(c);
			break;
		}
		e->sum = c;
		c->id = id;
		if (rr == -EBADMSG) {
			c->state = CAPTURE_DAMAGED;
			log_warn("capture %" PRIu64 " is damaged: %s", id, c->damage);
		} else {
			c->state = CAPTURE_READY;
			count_types(e);
			keep_info(e);
			strip(c);
		}
		if (id >= r->next_id)
			r->next_id = id + 1;
	}
	closedir(d);
}

int capreg_new(struct gpd *g, struct capreg **ret)
{
	struct capreg *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->g = g;
	r->next_id = 1;
	r->dirfd = make_state_dir(g->cfg.state_dir);
	if (r->dirfd < 0) {
		int e = r->dirfd;
		free(r);
		return e;
	}
	load_next_id(r);
	reload(r);
	g->job_slot_free = on_slot_free;
	g->job_slot_arg = r;
	*ret = r;
	return 0;
}

void capreg_close(struct capreg *r)
{
	r->closed = true;
	for (struct capentry *e = r->head; e; e = e->next) {
		if (e->timer) {
			uv_timer_stop(e->timer);
			uv_close((uv_handle_t *)e->timer, timer_closed);
			e->timer = NULL;
		}
		fail_waiters(e, -ESHUTDOWN, "capture");
	}
}

void capreg_free(struct capreg *r)
{
	if (!r)
		return;
	if (r->g->job_slot_arg == r)
		r->g->job_slot_free = NULL;
	while (r->head)
		entry_unlink_free(r->head);
	if (r->dirfd >= 0)
		close(r->dirfd);
	free(r);
}

/* ---- persisting ---------------------------------------------------------- */

struct persist {
	struct capentry *e;
	struct capture *c;
	int err;
};

static void fail_waiters_why(struct capentry *e, int err, const char *why)
{
	end_waiters(e, CAPWAIT_NOT_SAVED, err, why);
}

/*
 * A capture that could not be saved. Once its id was given out (the info
 * of a live capture went to a client while it recorded or waited) it stays
 * listed as failed, with the reason, so it never just vanishes. Otherwise
 * the only clients that know of it are the waiters answered here (an
 * import, a capture.start with "wait"), and it goes.
 */
static void entry_fail(struct capentry *e, int err, const char *why)
{
	log_warn("capture %" PRIu64 " of uid %u not saved: %s", e->id, (unsigned)e->sum->owner_uid,
		 why);
	wait_remove(e);
	fail_waiters_why(e, err, why);
	if (e->sum->kind == CAPTURE_IMPORT || !e->id_given || e->deleted) {
		entry_unlink_free(e);
		return;
	}
	strip(e->sum);
	e->sum->state = CAPTURE_FAILED;
	snprintf(e->sum->damage, sizeof(e->sum->damage), "not saved: %s", why);
	e->data_bytes = 0;
}

static void persist_work(void *arg)
{
	struct persist *p = arg;
	struct capreg *r = p->e->reg;
	if (r->prepare)
		r->prepare(r->prepare_arg, p->c);
	p->err = capture_save(p->c, r->dirfd);
}

static void persist_done(void *arg)
{
	struct persist *p = arg;
	struct capentry *e = p->e;
	e->persisting = false;
	if (e->deleted) {
		if (!p->err)
			capture_unlink(e->reg->dirfd, e->id);
		fail_waiters(e, -ENOENT, "capture deleted");
		entry_unlink_free(e);
	} else if (p->err) {
		char why[CAPREG_WHY_MAX];
		snprintf(why, sizeof(why), "writing its file failed: %s", strerror(-p->err));
		/* an import's waiter gets it; a live capture stays, failed */
		entry_fail(e, p->err, why);
	} else {
		e->sum->state = CAPTURE_READY;
		e->data_bytes = 0;
		keep_info(e);
		strip(e->sum);
		end_waiters(e, CAPWAIT_SAVED, 0, NULL);
	}
	free(p);
}

/*
 * Save e in a job now; -EBUSY while no slot is free for its owner. The
 * job counts as the owner's: a member's captures being saved take its
 * limits.user_jobs and leave the privileged reserve alone, so saving
 * (say, symbolizing huge binaries of its own) cannot hold root's slot.
 */
static int persist_start(struct capentry *e)
{
	struct job_owner who = {
		.uid = e->sum->owner_uid,
		.privileged = e->owner_privileged,
		.saving = true,
	};
	struct persist *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->e = e;
	p->c = e->sum;
	int r = job_submit(e->reg->g, &who, persist_work, persist_done, p);
	if (r < 0) {
		free(p);
		return r;
	}
	e->persisting = true;
	return 0;
}

/*
 * A job slot is free: the waiting captures take it first, oldest first,
 * passing over those whose owner may not start a job now (its
 * limits.user_jobs, or only the privileged reserve is left).
 */
static void on_slot_free(void *arg)
{
	struct capreg *r = arg;
	struct capentry *next;
	for (struct capentry *e = r->wait_head; e; e = next) {
		next = e->wait_next;
		if (r->g->jobs_running >= r->g->cfg.max_jobs)
			return;
		int err = persist_start(e);
		if (err == -EBUSY)
			continue;
		wait_remove(e);
		if (err < 0) {
			char why[CAPREG_WHY_MAX];
			snprintf(why, sizeof(why), "starting the job to save it failed: %s",
				 strerror(-err));
			entry_fail(e, err, why);
		}
	}
}

/*
 * Save e (its data in e->sum) in a job, or queue it for the next free slot
 * when none is free for its owner. 0, or a negative errno with why set (e
 * unchanged). Trying before the queue jumps no one: on_slot_free() has
 * started every waiting capture that could start.
 */
static int persist(struct capentry *e, char *why)
{
	struct capreg *r = e->reg;

	e->data_bytes = capquota_data_bytes(e->sum);
	int err = persist_start(e);
	if (err != -EBUSY) {
		if (err < 0)
			snprintf(why, CAPREG_WHY_MAX, "starting the job to save it failed: %s",
				 strerror(-err));
		return err;
	}
	err = capquota_wait_admit(e, why);
	if (err < 0)
		return err;
	e->waiting = true;
	if (r->wait_tail)
		r->wait_tail->wait_next = e;
	else
		r->wait_head = e;
	r->wait_tail = e;
	r->nwaiting++;
	r->waiting_bytes += e->data_bytes;
	log_info("capture %" PRIu64 " of uid %u: no job slot free for it, waiting to be saved "
		 "(%u waiting)",
		 e->id, (unsigned)e->sum->owner_uid, r->nwaiting);
	return 0;
}

static size_t capture_bytes(const struct capture *c)
{
	return c->nrecs * sizeof(struct store_rec) + c->str_blob_len + c->nips * 8 +
	       c->nstacks * sizeof(struct capture_stack) + c->nstrs * sizeof(struct capture_str);
}

/*
 * Cut the window out of the store and persist it. sync: the capture's id
 * was not given out yet (capture.start --last): on failure the entry is
 * gone and the error returned with why. Otherwise a failure leaves it
 * listed as failed (entry_fail()) and returns the error.
 */
static int finish(struct capentry *e, uint64_t t1, bool sync, char *why)
{
	struct capreg *r = e->reg;
	struct capture *c = NULL;
	uint64_t t0 = e->sum->t0_ns;
	int err = capture_take(r->g->store, &e->filter, t0, t1, &c);
	if (err < 0) {
		snprintf(why, CAPREG_WHY_MAX, "taking it from the store failed: %s",
			 strerror(-err));
	} else if (capture_bytes(c) > r->g->cfg.capture_max_bytes) {
		snprintf(why, CAPREG_WHY_MAX,
			 "the capture's %zu bytes exceed memory.capture_max (%zu); narrow the "
			 "window or the pids",
			 capture_bytes(c), r->g->cfg.capture_max_bytes);
		capture_free(c);
		err = -EFBIG;
	} else {
		c->id = e->id;
		c->owner_uid = e->sum->owner_uid;
		c->kind = CAPTURE_LIVE;
		c->state = CAPTURE_RECORDING;
		memcpy(c->name, e->sum->name, sizeof(c->name));
		c->created_realtime_ns = e->sum->created_realtime_ns;
		c->mono_to_realtime_ns = e->sum->mono_to_realtime_ns;
		c->t0_ns = t0;
		c->t1_ns = t1;
		capture_free(e->sum);
		e->sum = c;
		count_types(e);
		err = capquota_disk_admit(e, capquota_data_bytes(c), why);
		if (err == 0)
			err = persist(e, why);
	}
	if (err < 0 && sync) {
		fail_waiters_why(e, err, why);
		entry_unlink_free(e);
	} else if (err < 0) {
		entry_fail(e, err, why);
	}
	return err;
}

static void on_window_end(uv_timer_t *t)
{
	struct capentry *e = t->data;
	char why[CAPREG_WHY_MAX];
	uv_close((uv_handle_t *)e->timer, timer_closed);
	e->timer = NULL;
	/* records of the window's last moments may still sit in the rings */
	if (e->reg->g->drain_rings)
		e->reg->g->drain_rings(e->reg->g);
	(void)finish(e, e->sum->t0_ns + e->duration_ns, false, why);
}

int capreg_start(struct capreg *r, const struct capreg_start *o, struct capentry **ret, char *why)
{
	snprintf(why, CAPREG_WHY_MAX, "starting the capture");
	if (r->closed)
		return -ESHUTDOWN;
	bool abs = o->end_ns != 0;

	if ((o->duration_ms != 0) + (o->last_ms != 0) + abs != 1 || o->start_ns > o->end_ns ||
	    o->npids > CAPTURE_MAX_PIDS)
		return -EINVAL;
	int err = capreg_admit(r, o->owner_uid, o->privileged, why);
	if (err < 0)
		return err;
	struct capture *c;
	err = capture_new(&c);
	if (err < 0)
		return err;
	struct capentry *e = entry_new(r, r->next_id++);
	if (!e) {
		capture_free(c);
		return -ENOMEM;
	}
	save_next_id(r);
	e->sum = c;
	e->owner_privileged = o->privileged;
	c->id = e->id;
	c->owner_uid = o->owner_uid;
	c->kind = CAPTURE_LIVE;
	c->state = CAPTURE_RECORDING;
	snprintf(c->name, sizeof(c->name), "%s", o->name ? o->name : "");
	c->created_realtime_ns = gpd_now_ns() + (uint64_t)gpd_mono_to_realtime_ns();
	c->mono_to_realtime_ns = gpd_mono_to_realtime_ns();
	c->npids = (uint32_t)o->npids;
	memcpy(c->pids, o->pids, o->npids * sizeof(int32_t));
	c->uid_filter = o->uid_filter;
	c->filter_uid = o->owner_uid;
	memcpy(e->filter_pids, o->pids, o->npids * sizeof(int32_t));
	e->filter.pids = e->filter_pids;
	e->filter.npids = o->npids;
	e->filter.uid_filter = o->uid_filter;
	e->filter.uid = o->owner_uid;

	uint64_t now = gpd_now_ns();
	if (o->last_ms || abs) {
		uint64_t span = o->last_ms * 1000000ull;
		c->t0_ns = abs ? o->start_ns : now > span ? now - span : 0;
		c->t1_ns = abs ? o->end_ns : now;
		err = finish(e, c->t1_ns, true, why);
		if (err < 0)
			return err;
		*ret = e;
		return 0;
	}
	c->t0_ns = now;
	e->duration_ns = o->duration_ms * 1000000ull;
	c->t1_ns = now + e->duration_ns;
	e->timer = malloc(sizeof(*e->timer));
	if (!e->timer) {
		entry_unlink_free(e);
		return -ENOMEM;
	}
	uv_timer_init(r->g->loop, e->timer);
	e->timer->data = e;
	uv_timer_start(e->timer, on_window_end, o->duration_ms, 0);
	*ret = e;
	return 0;
}

void capreg_stop(struct capentry *e)
{
	char why[CAPREG_WHY_MAX];
	if (!e->timer)
		return;
	uv_timer_stop(e->timer);
	uv_close((uv_handle_t *)e->timer, timer_closed);
	e->timer = NULL;
	(void)finish(e, gpd_now_ns(), false, why);
}

void capreg_wait(struct capentry *e, struct capwaiter *w)
{
	w->next = e->waiters;
	e->waiters = w;
}

int capreg_delete(struct capentry *e)
{
	if (e->persisting) {
		e->deleted = true;
		return 0;
	}
	fail_waiters(e, -ENOENT, "capture deleted");
	int r = capture_unlink(e->reg->dirfd, e->id);
	if (r < 0 && r != -ENOENT && e->sum->state != CAPTURE_RECORDING &&
	    e->sum->state != CAPTURE_FAILED)
		return r;
	entry_unlink_free(e); /* a waiting one leaves the queue here */
	return 0;
}

int capreg_add(struct capreg *r, struct capture *c, bool privileged, struct capentry **ret,
	       char *why)
{
	snprintf(why, CAPREG_WHY_MAX, "storing the capture");
	if (r->closed)
		return -ESHUTDOWN;
	int err = capreg_admit(r, c->owner_uid, privileged, why);
	if (err < 0)
		return err;
	struct capentry *e = entry_new(r, r->next_id++);
	if (!e)
		return -ENOMEM;
	save_next_id(r);
	c->id = e->id;
	c->state = CAPTURE_RECORDING;
	e->sum = c;
	e->owner_privileged = privileged;
	count_types(e);
	err = capquota_disk_admit(e, capquota_data_bytes(c), why);
	if (err == 0)
		err = persist(e, why);
	if (err < 0) {
		e->sum = NULL;
		entry_unlink_free(e);
		return err;
	}
	*ret = e;
	return 0;
}

struct capentry *capreg_find(struct capreg *r, uint64_t id)
{
	for (struct capentry *e = r->head; e; e = e->next)
		if (e->id == id && !e->deleted)
			return e;
	return NULL;
}

struct capentry *capreg_first(struct capreg *r)
{
	return r->head;
}

bool capreg_visible(const struct capentry *e, uid_t uid, bool privileged)
{
	return !e->deleted && (privileged || e->sum->owner_uid == uid);
}

size_t capreg_count(const struct capreg *r)
{
	return r->count;
}

uint64_t capreg_bytes(const struct capreg *r)
{
	uint64_t b = 0;
	for (const struct capentry *e = r->head; e; e = e->next)
		b += e->sum->file_bytes;
	return b;
}

static const char *state_name(enum capture_state s)
{
	switch (s) {
	case CAPTURE_RECORDING:
		return "recording";
	case CAPTURE_READY:
		return "ready";
	case CAPTURE_DAMAGED:
		return "damaged";
	case CAPTURE_FAILED:
		return "failed";
	}
	return "unknown";
}

cJSON *capreg_info(struct capentry *e)
{
	const struct capture *c = e->sum;
	if (c->state == CAPTURE_RECORDING)
		e->id_given = true;
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	json_add_u64(o, "id", e->id);
	cJSON_AddStringToObject(o, "name", c->name);
	cJSON_AddStringToObject(o, "kind", c->kind == CAPTURE_IMPORT ? "import" : "live");
	cJSON_AddStringToObject(o, "state", state_name(c->state));
	cJSON_AddNumberToObject(o, "owner_uid", c->owner_uid);
	json_add_u64(o, "created_ns", (uint64_t)c->created_realtime_ns);
	char when[64] = "";
	time_t secs = (time_t)(c->created_realtime_ns / 1000000000ull);
	struct tm tm;
	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	cJSON_AddStringToObject(o, "created", when);
	if (c->state == CAPTURE_DAMAGED) {
		cJSON_AddStringToObject(o, "damage", c->damage);
		return o;
	}
	if (e->waiting)
		cJSON_AddBoolToObject(o, "waiting_for_job", 1);
	cJSON *w = cJSON_AddObjectToObject(o, "window");
	json_add_u64(w, "start_ns", (uint64_t)c->t0_ns);
	json_add_u64(w, "end_ns", (uint64_t)c->t1_ns);
	json_add_u64(w, "duration_ns", (uint64_t)(c->t1_ns - c->t0_ns));
	if (c->state == CAPTURE_FAILED) {
		cJSON_AddStringToObject(o, "error", c->damage);
		return o;
	}
	cJSON *pids = cJSON_AddArrayToObject(o, "pids");
	for (uint32_t i = 0; i < c->npids && i < CAPTURE_MAX_PIDS; i++)
		cJSON_AddItemToArray(pids, cJSON_CreateNumber(c->pids[i]));
	json_add_u64(o, "records", (uint64_t)c->nrecs);
	cJSON *bt = cJSON_AddObjectToObject(o, "by_type");
	for (unsigned t = 0; t < STORE_REC_TYPE_MAX; t++)
		if (type_names[t] && e->by_type[t])
			cJSON_AddNumberToObject(bt, type_names[t], (double)e->by_type[t]);
	cJSON_AddNumberToObject(o, "strings", c->nstrs);
	cJSON_AddNumberToObject(o, "stacks", c->nstacks);
	json_add_u64(o, "file_bytes", (uint64_t)c->file_bytes);
	json_add_u64(o, "evicted_in_window", (uint64_t)c->store_evicted_in_window);
	json_add_u64(o, "warnings", (uint64_t)c->warnings);
	capreg_coverage_json(o, &e->cov);
	cJSON *imp = e->info_json ? cJSON_Parse(e->info_json) : NULL;
	if (imp)
		cJSON_AddItemToObject(o, "import", imp);
	return o;
}
