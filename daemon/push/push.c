// SPDX-License-Identifier: MIT
/*
 * Continuous profiles, the loop side and the builder thread (push.h).
 *
 * One profile per window for the whole host, not one per process: the
 * pprof exporter already labels each sample with its process ("pid",
 * "comm"), and the builder adds its cgroup and systemd unit, so a store
 * that splits series by sample labels (Grafana Pyroscope, Parca) shows
 * every process while the host makes one request per interval, whatever
 * the number of processes, and shares one string, function and mapping
 * table among them. Labels that hold for the whole profile (host) go in
 * Pyroscope's name parameter.
 */
#include "push.h"
#include "push_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture.h"
#include "flamegraph.h"
#include "gpd.h"
#include "json.h"
#include "log.h"
#include "store/store.h"
#include "sym.h"

/* Processes labelled with their cgroup per profile; samples of others
 * keep pid and comm only. */
#define PUSH_MAX_LABELLED_PIDS 4096
#define PUSH_CGROUP_MAX 256

struct push {
	struct gpd *g;
	struct symbolizer *sym;
	push_prepare_fn prepare;
	void *prepare_arg;
	uv_timer_t timer;
	bool timer_live;
	uint64_t last_t1; /* loop thread: where the next window starts */
	uint64_t period_ns;
	struct upload *up;   /* NULL without push.url */
	struct dirsink *dir; /* NULL without push.dir */
	pthread_t builder;
	bool builder_started, builder_joined;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* guarded by mu */
	struct capture *pending; /* the window handed to the builder */
	bool stop;
	uint64_t windows, profiles, empty, skipped_busy, truncated, too_large, failed;
	uint64_t last_bytes, last_samples;
};

/* Per-process labels of one profile, sorted by pid (builder thread). */
struct pidlabel {
	uint32_t pid;
	uint64_t gpus; /* bit d: the process ran work on CUDA device d (d < 64) */
	char cgroup[PUSH_CGROUP_MAX];
	char unit[128];
	char gpu[192]; /* "0", "0,3": the devices in gpus */
};

struct labels {
	struct pidlabel *v;
	size_t n;
};

void push_item_free(struct push_item *it)
{
	if (!it)
		return;
	free(it->body);
	free(it);
}

static int u32cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The process's cgroup v2 path ("0::/..." line of /proc/PID/cgroup) and
 * the systemd unit it names: the last component ending in .service or
 * .scope. Empty when the process is gone. */
static void read_cgroup(struct pidlabel *l)
{
	char path[64], line[PUSH_CGROUP_MAX + 8];
	snprintf(path, sizeof(path), "/proc/%u/cgroup", l->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(l->cgroup, sizeof(l->cgroup), "%.*s", PUSH_CGROUP_MAX - 1, line + 3);
		break;
	}
	fclose(f);
	char tmp[PUSH_CGROUP_MAX], *save = NULL;
	memcpy(tmp, l->cgroup, sizeof(tmp));
	for (char *s = strtok_r(tmp, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
		size_t n = strlen(s);
		if ((n > 8 && !strcmp(s + n - 8, ".service")) ||
		    (n > 6 && !strcmp(s + n - 6, ".scope")))
			snprintf(l->unit, sizeof(l->unit), "%s", s);
	}
}

static struct pidlabel *label_find(const struct labels *lb, uint32_t pid)
{
	size_t lo = 0, hi = lb->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (lb->v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < lb->n && lb->v[lo].pid == pid ? &lb->v[lo] : NULL;
}

/*
 * The GPUs each process used in the window, from its NVIDIA activity
 * (CUPTI intervals carry the device index; the Intel driver-side
 * intervals carry none, so Intel processes get no gpu label).
 */
static void label_gpus(struct labels *lb, const struct capture *c)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		struct pidlabel *l;
		uint32_t dev;
		if (r->type != STORE_REC_GPU_INTERVAL || r->cpu >> 8 != GPU_ENGINE_CUPTI)
			continue;
		dev = STORE_CUPTI_DEVICE(r->aux[0]);
		if (dev < 64 && (l = label_find(lb, r->pid)))
			l->gpus |= 1ull << dev;
	}
	for (size_t i = 0; i < lb->n; i++) {
		struct pidlabel *l = &lb->v[i];
		size_t off = 0;
		for (unsigned d = 0; d < 64 && off < sizeof(l->gpu) - 4; d++)
			if (l->gpus >> d & 1)
				off += (size_t)snprintf(l->gpu + off, sizeof(l->gpu) - off, "%s%u",
							off ? "," : "", d);
	}
}

static int labels_build(struct labels *lb, const struct capture *c)
{
	uint32_t *pids = malloc(PUSH_MAX_LABELLED_PIDS * sizeof(*pids));
	size_t n = 0;
	if (!pids)
		return -ENOMEM;
	/* records are mostly runs of one process: skip repeats cheaply */
	uint32_t prev = 0;
	for (size_t i = 0; i < c->nrecs && n < PUSH_MAX_LABELLED_PIDS; i++) {
		uint32_t pid = c->recs[i].pid;
		if (pid && pid != prev)
			pids[n++] = prev = pid;
	}
	qsort(pids, n, sizeof(*pids), u32cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (!u || pids[u - 1] != pids[i])
			pids[u++] = pids[i];
	lb->v = calloc(u ? u : 1, sizeof(*lb->v));
	if (!lb->v) {
		free(pids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < u; i++) {
		lb->v[i].pid = pids[i];
		read_cgroup(&lb->v[i]);
	}
	lb->n = u;
	free(pids);
	label_gpus(lb, c);
	return 0;
}

static size_t label_fn(void *arg, uint32_t pid, const char **keys, const char **vals, size_t max)
{
	const struct pidlabel *l = label_find(arg, pid);
	size_t n = 0;
	if (!l)
		return 0;
	if (l->cgroup[0] && n < max)
		keys[n] = "cgroup", vals[n++] = l->cgroup;
	if (l->unit[0] && n < max)
		keys[n] = "unit", vals[n++] = l->unit;
	if (l->gpu[0] && n < max)
		keys[n] = "gpu", vals[n++] = l->gpu;
	return n;
}

struct membuf {
	uint8_t *p;
	size_t len, cap;
};

static int membuf_write(void *ctx, const void *data, size_t n)
{
	struct membuf *b = ctx;
	if (b->len + n > b->cap) {
		size_t nc = b->cap ? b->cap : 65536;
		while (nc < b->len + n)
			nc *= 2;
		uint8_t *np = realloc(b->p, nc);
		if (!np)
			return -ENOMEM;
		b->p = np;
		b->cap = nc;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* Symbolize and render one window; hand the profile to the sinks. */
static void build(struct push *p, struct capture *c)
{
	struct labels lb = {0};
	struct membuf mb = {0};
	struct export_totals t = {0};
	struct push_item *it = NULL;
	int r;

	uint64_t t0 = gpd_now_ns(), t1, t2;
	if (p->sym) {
		if ((r = sym_demangle_kernels(p->sym, c)) < 0 ||
		    (r = sym_symbolize_capture(p->sym, c)) < 0)
			log_warn("push: window not symbolized: %s", strerror(-r));
	}
	if (p->prepare)
		p->prepare(p->prepare_arg, c);
	t1 = gpd_now_ns();
	r = labels_build(&lb, c);
	if (r == 0)
		r = pprof_export_labelled(c, NULL, p->period_ns, label_fn, &lb, membuf_write, &mb,
					  &t);
	t2 = gpd_now_ns();
	log_debug("push: window of %zu records, %zu processes: symbolized (and prepared) in %" PRIu64
		  " ms, rendered in %" PRIu64 " ms, %zu bytes",
		  c->nrecs, lb.n, (t1 - t0) / 1000000, (t2 - t1) / 1000000, mb.len);
	if (r == 0 && !(it = calloc(1, sizeof(*it))))
		r = -ENOMEM;
	pthread_mutex_lock(&p->mu);
	if (r == -ENODATA)
		p->empty++;
	else if (r < 0)
		p->failed++;
	else
		p->profiles++, p->last_bytes = mb.len, p->last_samples = t.events;
	pthread_mutex_unlock(&p->mu);
	if (r < 0 && r != -ENODATA)
		log_warn("push: rendering the window's profile failed: %s", strerror(-r));
	if (r == 0) {
		it->body = mb.p;
		it->len = mb.len;
		mb.p = NULL;
		it->from_ns = c->t0_ns + (uint64_t)c->mono_to_realtime_ns;
		it->until_ns = c->t1_ns + (uint64_t)c->mono_to_realtime_ns;
		if (p->dir)
			(void)dirsink_write(p->dir, it); /* counted there */
		if (p->up)
			upload_enqueue(p->up, it), it = NULL;
	}
	push_item_free(it);
	free(mb.p);
	free(lb.v);
}

static void *builder_main(void *arg)
{
	struct push *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !p->pending)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		struct capture *c = p->pending;
		pthread_mutex_unlock(&p->mu);
		build(p, c);
		capture_free(c);
		pthread_mutex_lock(&p->mu);
		p->pending = NULL; /* only now may the loop hand over the next window */
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static size_t capture_bytes(const struct capture *c)
{
	return c->nrecs * sizeof(struct store_rec) + c->str_blob_len + c->nips * 8 +
	       c->nstacks * sizeof(struct capture_stack) + c->nstrs * sizeof(struct capture_str);
}

/*
 * Cut [last end, now] out of the store, as capture --last does, and hand
 * it over. While the builder still works on the previous window this one
 * is not cut: the next tick takes both (up to four intervals; older
 * records are left out and the window counted as truncated).
 */
static void on_tick(uv_timer_t *t)
{
	struct push *p = t->data;
	struct gpd *g = p->g;
	uint64_t iv = (uint64_t)g->cfg.push.interval_ms * 1000000ull;
	bool busy;

	pthread_mutex_lock(&p->mu);
	busy = p->pending != NULL;
	p->skipped_busy += busy;
	pthread_mutex_unlock(&p->mu);
	if (busy)
		return;
	if (g->drain_rings)
		g->drain_rings(g);
	uint64_t now = gpd_now_ns();
	uint64_t t0 = p->last_t1 ? p->last_t1 + 1 : now > iv ? now - iv : 0;
	bool truncated = now > 4 * iv && now - t0 > 4 * iv;
	if (truncated)
		t0 = now - 4 * iv;
	struct capture_filter f = {0};
	struct capture *c = NULL;
	int r = capture_take(g->store, &f, t0, now, &c);
	p->last_t1 = now;
	if (r == 0 && capture_bytes(c) > g->cfg.capture_max_bytes) {
		capture_free(c);
		r = -EFBIG;
	}
	if (r < 0) {
		pthread_mutex_lock(&p->mu);
		p->too_large += r == -EFBIG;
		p->failed += r != -EFBIG;
		pthread_mutex_unlock(&p->mu);
		log_warn("push: the window was not taken: %s", strerror(-r));
		return;
	}
	int64_t m2r = gpd_mono_to_realtime_ns();
	c->kind = CAPTURE_LIVE;
	c->state = CAPTURE_READY;
	c->t0_ns = t0;
	c->t1_ns = now;
	c->mono_to_realtime_ns = m2r;
	c->created_realtime_ns = t0 + (uint64_t)m2r; /* pprof's time_nanos: the start */
	pthread_mutex_lock(&p->mu);
	p->pending = c;
	p->windows++;
	p->truncated += truncated;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

/* Pyroscope's name parameter: "app{host=NAME}"; the host's characters
 * outside [A-Za-z0-9._-] become '_' (',', '=', '{', '}' delimit). */
static void name_param(const struct config_push *cfg, char *out, size_t cap)
{
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		snprintf(host, sizeof(host), "unknown");
	for (char *s = host; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			*s = '_';
	snprintf(out, cap, "%s{host=%s}", cfg->app_name, host);
}

int push_start(struct gpd *g, struct symbolizer *sym, push_prepare_fn prepare, void *prepare_arg,
	       struct push **ret)
{
	const struct config_push *cfg = &g->cfg.push;
	char why[512] = "", name[512];
	struct push *p;
	int r;

	*ret = NULL;
	if (!cfg->url[0] && !cfg->dir[0])
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->g = g;
	p->sym = sym;
	p->prepare = prepare;
	p->prepare_arg = prepare_arg;
	p->period_ns = g->cfg.sample_freq_hz ? 1000000000ull / g->cfg.sample_freq_hz : 0;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (cfg->dir[0] &&
	    (r = dirsink_open(cfg->dir, cfg->dir_max_bytes, &p->dir, why, sizeof(why))) < 0) {
		log_err("Failed to open push.dir %s: %s", cfg->dir, why);
		goto fail;
	}
	name_param(cfg, name, sizeof(name));
	if (cfg->url[0] &&
	    (r = upload_new(cfg, name, g->cfg.sample_freq_hz, &p->up, why, sizeof(why))) < 0) {
		log_err("Failed to set up pushing to %s: %s", cfg->url, why);
		goto fail;
	}
	r = -pthread_create(&p->builder, NULL, builder_main, p);
	if (r < 0) {
		log_err("Failed to start the profile builder thread: %s", strerror(-r));
		goto fail;
	}
	p->builder_started = true;
	uv_timer_init(g->loop, &p->timer);
	p->timer.data = p;
	p->timer_live = true;
	uv_timer_start(&p->timer, on_tick, cfg->interval_ms, cfg->interval_ms);
	log_info("push: a profile every %u ms%s%s%s%s", cfg->interval_ms, cfg->url[0] ? " to " : "",
		 cfg->url, cfg->dir[0] ? " into " : "", cfg->dir);
	*ret = p;
	return 0;
fail:
	push_free(p);
	return r;
}

void push_stop(struct push *p)
{
	if (!p)
		return;
	if (p->timer_live) {
		uv_timer_stop(&p->timer);
		uv_close((uv_handle_t *)&p->timer, NULL);
		p->timer_live = false;
	}
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	if (p->up)
		upload_stop(p->up);
}

void push_join(struct push *p)
{
	if (!p)
		return;
	push_stop(p);
	if (p->builder_started && !p->builder_joined)
		pthread_join(p->builder, NULL);
	p->builder_joined = true;
}

void push_free(struct push *p)
{
	if (!p)
		return;
	push_join(p);
	capture_free(p->pending);
	upload_free(p->up);
	dirsink_free(p->dir);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void push_status(struct push *p, cJSON *status, bool privileged)
{
	cJSON *o = cJSON_AddObjectToObject(status, "push");
	cJSON_AddBoolToObject(o, "enabled", p != NULL);
	if (!p)
		return;
	const struct config_push *cfg = &p->g->cfg.push;
	json_add_u64(o, "interval_ms", cfg->interval_ms);
	if (privileged && cfg->url[0])
		cJSON_AddStringToObject(o, "url", cfg->url);
	if (privileged && cfg->dir[0])
		cJSON_AddStringToObject(o, "dir", cfg->dir);
	pthread_mutex_lock(&p->mu);
	json_add_u64(o, "windows", p->windows);
	json_add_u64(o, "profiles", p->profiles);
	json_add_u64(o, "empty_windows", p->empty);
	json_add_u64(o, "skipped_busy", p->skipped_busy);
	json_add_u64(o, "windows_truncated", p->truncated);
	json_add_u64(o, "dropped_too_large", p->too_large);
	json_add_u64(o, "build_failures", p->failed);
	json_add_u64(o, "last_profile_bytes", p->last_bytes);
	json_add_u64(o, "last_profile_samples", p->last_samples);
	pthread_mutex_unlock(&p->mu);
	if (p->up)
		upload_status(p->up, cJSON_AddObjectToObject(o, "upload"), privileged);
	if (p->dir)
		dirsink_status(p->dir, cJSON_AddObjectToObject(o, "dir_sink"), privileged);
}
