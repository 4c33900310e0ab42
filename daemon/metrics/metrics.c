// SPDX-License-Identifier: MIT
/*
 * The metrics endpoint (metrics.h): libmicrohttpd's thread answers HTTP,
 * the loop builds snapshots.
 *
 * libmicrohttpd rather than a parser of our own: it is GNU's small,
 * long-maintained HTTP server library, packaged by Debian with security
 * support, and it already bounds what a client may send (connection count,
 * per-connection memory for the request line and headers, idle timeout).
 *
 * A scrape asks the loop for a fresh snapshot through a uv_async and waits
 * a bounded time for it; the loop builds it between its other events and
 * hands it over under a mutex. A scrape that comes within SNAP_REUSE_NS
 * of the last snapshot reuses it; one the loop does not answer within
 * SNAP_WAIT_MS (it is busy, or stopping) gets the last snapshot there is.
 */
#include "metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "bpfstats.h"
#include "build.h"
#include "gpd.h"
#include "listen.h"
#include "log.h"
#include "proctab.h"
#include "snap.h"

#define SNAP_REUSE_NS (250ull * 1000000)
#define SNAP_WAIT_MS 2000
#define SCAN_PERIOD_MS 1000 /* counting records: well before the ring turns */
#define HTTP_MAX_CONNS 8
#define HTTP_CONN_MEMORY (16u << 10) /* request line and headers of one client */
#define HTTP_TIMEOUT_S 10

struct snapref {
	struct msnap *s;
	unsigned refs; /* under metrics.mu */
};

struct metrics {
	struct gpd *g;
	struct MHD_Daemon *mhd;
	struct proctab *pt;
	uv_async_t async;
	uv_timer_t scan_timer;
	unsigned open_handles;
	int bpf_stats_fd; /* held while the kernel accounts for us; -1 */
	char unix_path[108];
	char where[128];

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct snapref *cur;	/* the newest snapshot */
	uint64_t wanted, built; /* request generations */
	bool stopping;
	/* async is initialized: libmicrohttpd may answer a request before
	 * metrics_start() has done so, and such a scrape just waits */
	bool async_ready;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Drop a reference taken under mu (the caller holds nothing). */
static void snap_unref(struct metrics *m, struct snapref *r)
{
	bool last;

	if (!r)
		return;
	pthread_mutex_lock(&m->mu);
	last = --r->refs == 0;
	pthread_mutex_unlock(&m->mu);
	if (last) {
		msnap_free(r->s);
		free(r);
	}
}

/* ---- the loop's side ------------------------------------------------ */

static void refresh(struct metrics *m)
{
	struct snapref *r = calloc(1, sizeof(*r)), *old;
	uint64_t target, t0 = mono_ns();

	pthread_mutex_lock(&m->mu);
	target = m->wanted;
	pthread_mutex_unlock(&m->mu);
	if (m->g->drain_rings)
		m->g->drain_rings(m->g); /* what happened until now is counted */
	proctab_scan(m->pt, m->g->store);
	if (r) {
		r->s = metrics_build(m->g, m->pt, m->bpf_stats_fd >= 0);
		r->refs = 1;
		if (r->s) { /* what a scrape costs the loop */
			msnap_family(r->s, "gpuprof_metrics_snapshot_seconds", MSNAP_GAUGE,
				     "seconds",
				     "Loop time this snapshot took: draining the ring buffers, "
				     "counting new records, building the series.");
			msnap_add(r->s, (double)(mono_ns() - t0) / 1e9, NULL);
		}
		if (!r->s || r->s->oom) {
			msnap_free(r->s);
			free(r);
			r = NULL;
		}
	}
	pthread_mutex_lock(&m->mu);
	old = r ? m->cur : NULL;
	if (r)
		m->cur = r;
	m->built = target;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	snap_unref(m, old);
}

static void on_async(uv_async_t *a)
{
	refresh(a->data);
}

static void on_scan(uv_timer_t *t)
{
	struct metrics *m = t->data;

	proctab_scan(m->pt, m->g->store);
}

/* ---- the HTTP thread's side ------------------------------------------ */

/* The snapshot to serve (a reference the caller drops), NULL if none. */
static struct snapref *snapshot_for_scrape(struct metrics *m)
{
	struct snapref *r;
	struct timespec dl;
	uint64_t gen;

	pthread_mutex_lock(&m->mu);
	if (!m->cur || mono_ns() - m->cur->s->built_ns > SNAP_REUSE_NS) {
		gen = ++m->wanted;
		if (m->async_ready)
			uv_async_send(&m->async);
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += SNAP_WAIT_MS / 1000;
		dl.tv_nsec += (SNAP_WAIT_MS % 1000) * 1000000L;
		if (dl.tv_nsec >= 1000000000L) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000L;
		}
		while (m->built < gen && !m->stopping)
			if (pthread_cond_timedwait(&m->cv, &m->mu, &dl) == ETIMEDOUT)
				break;
	}
	r = m->cur;
	if (r)
		r->refs++;
	pthread_mutex_unlock(&m->mu);
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     char *body, size_t len, bool owned)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body,
								    owned ? MHD_RESPMEM_MUST_FREE
									  : MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!resp) {
		if (owned)
			free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static char txt_index[] = "gpuprofd: the metrics are at /metrics\n";
static char txt_not_found[] = "not found: the metrics are at /metrics\n";
static char txt_method[] = "only GET and HEAD are answered\n";
static char txt_unavailable[] = "no snapshot yet: the daemon is busy, try again\n";

/* The scraper's Accept header asks for OpenMetrics (Prometheus lists it
 * first, with text 0.0.4 as the fallback); "q=0" refuses it. */
static bool wants_openmetrics(struct MHD_Connection *c)
{
	const char *acc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	static const char om[] = "application/openmetrics-text";

	for (const char *p = acc; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		const char *q;
		size_t len;

		p += strspn(p, " \t");
		len = strcspn(p, ",");
		if (strncasecmp(p, om, sizeof(om) - 1))
			continue;
		q = strstr(p, "q=");
		return !q || q >= p + len || strtod(q + 2, NULL) > 0;
	}
	return false;
}

static enum MHD_Result serve_metrics(struct metrics *m, struct MHD_Connection *c)
{
	bool om = wants_openmetrics(c);
	struct snapref *r = snapshot_for_scrape(m);
	char *body;
	size_t len;
	int err;

	if (!r)
		return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8",
			     txt_unavailable, strlen(txt_unavailable), false);
	err = msnap_render(r->s, om, &body, &len);
	snap_unref(m, r);
	if (err < 0)
		return MHD_NO;
	return reply(c, MHD_HTTP_OK,
		     om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			: "text/plain; version=0.0.4; charset=utf-8",
		     body, len, true);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_size, void **con_cls)
{
	struct metrics *m = cls;

	(void)version;
	(void)upload_data;
	/* Answered on the first call, before any body: a request body is
	 * never read (libmicrohttpd closes the connection instead). */
	*upload_size = 0;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
			     txt_method, strlen(txt_method), false);
	(void)con_cls;
	if (!strcmp(url, "/metrics"))
		return serve_metrics(m, c);
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/plain; charset=utf-8", txt_index,
			     strlen(txt_index), false);
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", txt_not_found,
		     strlen(txt_not_found), false);
}

/* ---- lifecycle ---------------------------------------------------------- */

static void free_metrics(struct metrics *m)
{
	if (m->cur) {
		msnap_free(m->cur->s);
		free(m->cur);
	}
	proctab_free(m->pt);
	if (m->bpf_stats_fd >= 0)
		close(m->bpf_stats_fd);
	pthread_cond_destroy(&m->cv);
	pthread_mutex_destroy(&m->mu);
	free(m);
}

static void on_closed(uv_handle_t *h)
{
	struct metrics *m = h->data;

	if (--m->open_handles == 0)
		free_metrics(m);
}

static int start_http(struct metrics *m, int fd)
{
	m->mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, m,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNS,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEMORY,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
				  MHD_OPTION_END);
	return m->mhd ? 0 : -EIO;
}

int metrics_start(struct gpd *g, struct metrics **ret)
{
	const struct config_metrics *c = &g->cfg.metrics;
	struct proctab_opts po = {.top = c->top, .cpu = c->per_process, .gpu = c->per_process_gpu};
	struct metrics *m;
	int fd, r;

	*ret = NULL;
	if (!c->listen[0])
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->g = g;
	m->bpf_stats_fd = -1;
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* waits immune to clock changes */
	pthread_mutex_init(&m->mu, NULL);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = proctab_new(&po, g->store, &m->pt);
	if (r < 0) {
		free_metrics(m);
		return r;
	}
	if (c->bpf_stats) {
		m->bpf_stats_fd = bpfstats_enable();
		if (m->bpf_stats_fd < 0)
			log_warn("metrics: BPF run-time statistics refused: %s",
				 strerror(-m->bpf_stats_fd));
	}
	fd = metrics_listen(c->listen, m->where, sizeof(m->where));
	if (fd < 0) {
		log_err("Failed to serve metrics: %s", m->where);
		free_metrics(m);
		return fd;
	}
	if (c->listen[0] == '/')
		snprintf(m->unix_path, sizeof(m->unix_path), "%s", c->listen);
	if (!metrics_listen_is_local(fd))
		log_warn("metrics: %s is not a loopback address: the series are served, without "
			 "authentication, to whoever reaches it",
			 m->where);
	if (c->per_process && proctab_proc_hides_pids("/proc/self/mountinfo"))
		log_warn("metrics: /proc is mounted with hidepid=: metrics.per_process shows "
			 "whoever reaches the endpoint the processes /proc hides from users");
	r = start_http(m, fd);
	if (r < 0) {
		log_err("Failed to serve metrics on %s: libmicrohttpd did not start", m->where);
		close(fd);
		if (m->unix_path[0])
			unlink(m->unix_path);
		free_metrics(m);
		return r;
	}
	uv_async_init(g->loop, &m->async, on_async);
	uv_timer_init(g->loop, &m->scan_timer);
	m->async.data = m->scan_timer.data = m;
	m->open_handles = 2;
	pthread_mutex_lock(&m->mu);
	m->async_ready = true;
	pthread_mutex_unlock(&m->mu);
	uv_timer_start(&m->scan_timer, on_scan, SCAN_PERIOD_MS, SCAN_PERIOD_MS);
	log_info("metrics: serving http://%s/metrics%s%s", m->where,
		 c->per_process ? ", CPU samples per process" : "",
		 c->per_process_gpu ? ", GPU launches per process" : "");
	*ret = m;
	return 0;
}

void metrics_stop(struct metrics *m)
{
	if (!m)
		return;
	/* a scrape waiting for the loop (which is here) gives up now */
	pthread_mutex_lock(&m->mu);
	m->stopping = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	MHD_stop_daemon(m->mhd); /* joins its thread, closes the listener */
	m->mhd = NULL;
	if (m->unix_path[0])
		unlink(m->unix_path);
	uv_timer_stop(&m->scan_timer);
	uv_close((uv_handle_t *)&m->scan_timer, on_closed);
	uv_close((uv_handle_t *)&m->async, on_closed);
}
