// SPDX-License-Identifier: MIT
/* The stream state machine (stream.h). */
#include "stream.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

/* Reads per poll callback: a flooded stream cannot hold the loop; the fd
 * stays readable and we come back on the next iteration. */
#define XS_READ_BUDGET 32

struct xe_stream {
	uv_loop_t *loop;
	struct xe_stream_cfg cfg;
	const struct xe_obs_ops *ops;
	void *ops_ctx;
	xe_sink_fn sink;
	xe_state_fn on_state;
	void *arg;

	int fd;
	uv_poll_t *poll; /* heap: freed by its close callback */
	uv_timer_t *timer;
	enum xe_stream_state state;
	char reason[160];
	unsigned backoff_ms;
	uint8_t *buf;
	size_t carry; /* bytes of a partial record kept at buf[0..carry) */
	struct xe_stream_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void set_state(struct xe_stream *s, enum xe_stream_state st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_state(struct xe_stream *s, enum xe_stream_state st, const char *fmt, ...)
{
	bool changed = s->state != st;
	va_list ap;

	s->state = st;
	s->reason[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
		va_end(ap);
	}
	if (changed) {
		log_info("xe %s: %s%s%s", s->cfg.name, xe_stream_state_name(st),
			 s->reason[0] ? ": " : "", s->reason);
		if (s->on_state)
			s->on_state(s->arg, s);
	}
}

int xe_stream_new(uv_loop_t *loop, const struct xe_stream_cfg *cfg, const struct xe_obs_ops *ops,
		  void *ops_ctx, xe_sink_fn sink, xe_state_fn on_state, void *arg,
		  struct xe_stream **ret)
{
	struct xe_stream *s;

	if (!cfg->record_size || (!cfg->oa && !cfg->dec))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->loop = loop;
	s->cfg = *cfg;
	if (!s->cfg.read_bytes)
		s->cfg.read_bytes = 256 * 1024;
	/* A whole number of records per read (the xe driver's EU-stall stream rounds down). */
	s->cfg.read_bytes -= s->cfg.read_bytes % s->cfg.record_size;
	if (!s->cfg.read_bytes)
		s->cfg.read_bytes = s->cfg.record_size;
	if (!s->cfg.busy_retry_ms)
		s->cfg.busy_retry_ms = 5000;
	if (!s->cfg.backoff_min_ms)
		s->cfg.backoff_min_ms = 100;
	if (!s->cfg.backoff_max_ms)
		s->cfg.backoff_max_ms = 30000;
	s->ops = ops;
	s->ops_ctx = ops_ctx;
	s->sink = sink;
	s->on_state = on_state;
	s->arg = arg;
	s->fd = -1;
	s->backoff_ms = s->cfg.backoff_min_ms;
	s->buf = malloc(s->cfg.read_bytes + s->cfg.record_size);
	s->timer = malloc(sizeof(*s->timer));
	if (!s->buf || !s->timer) {
		free(s->buf);
		free(s->timer);
		free(s);
		return -ENOMEM;
	}
	uv_timer_init(loop, s->timer);
	s->timer->data = s;
	*ret = s;
	return 0;
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

/* Close the fd and its poll handle (not the timer). */
static void release(struct xe_stream *s)
{
	if (s->poll) {
		uv_poll_stop(s->poll);
		uv_close((uv_handle_t *)s->poll, free_handle);
		s->poll = NULL;
	}
	if (s->fd >= 0) {
		s->ops->disable(s->ops_ctx, s->fd);
		s->ops->close(s->ops_ctx, s->fd);
		s->fd = -1;
	}
	s->carry = 0;
}

static void on_timer(uv_timer_t *t);

static void retry_in(struct xe_stream *s, uint64_t ms)
{
	uv_timer_stop(s->timer);
	uv_timer_start(s->timer, on_timer, ms, 0);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct xe_stream *s = h->data;

	(void)events;
	if (status < 0) {
		release(s);
		set_state(s, XS_RESET, "poll: %s", uv_strerror(status));
		retry_in(s, s->backoff_ms);
		return;
	}
	xe_stream_drain(s);
}

static void do_open(struct xe_stream *s)
{
	int fd, r;

	fd = s->ops->open(s->ops_ctx, &s->cfg);
	if (fd == -EBUSY) {
		s->st.busy++;
		set_state(s, XS_BUSY,
			  "the GT's %s stream is held by another process; retrying every %u ms",
			  s->cfg.oa ? "OA" : "EU-stall", s->cfg.busy_retry_ms);
		retry_in(s, s->cfg.busy_retry_ms);
		return;
	}
	if (fd == -ENODEV && s->state == XS_RESET) {
		/* still resetting */
		retry_in(s, s->backoff_ms);
		s->backoff_ms = s->backoff_ms * 2 > s->cfg.backoff_max_ms ? s->cfg.backoff_max_ms
									  : s->backoff_ms * 2;
		return;
	}
	if (fd < 0) {
		set_state(s, XS_FAILED, "open: %s", strerror(-fd));
		return;
	}
	s->st.opens++;
	s->fd = fd;
	/* The stream starts disabled; read() before ENABLE is -EINVAL. */
	r = s->ops->enable(s->ops_ctx, fd);
	if (r < 0) {
		release(s);
		set_state(s, XS_FAILED, "enable: %s", strerror(-r));
		return;
	}
	s->poll = malloc(sizeof(*s->poll));
	if (!s->poll) {
		r = -ENOMEM;
		goto err;
	}
	r = uv_poll_init(s->loop, s->poll, fd);
	if (r < 0) {
		free(s->poll);
		s->poll = NULL;
		goto err;
	}
	s->poll->data = s;
	r = uv_poll_start(s->poll, UV_READABLE, on_poll);
	if (r < 0)
		goto err;
	set_state(s, XS_RUNNING, NULL);
	return;
err:
	release(s);
	set_state(s, XS_FAILED, "poll on the stream fd: %s", strerror(-r));
}

static void on_timer(uv_timer_t *t)
{
	struct xe_stream *s = t->data;

	if (s->state == XS_BUSY || s->state == XS_RESET || s->state == XS_PAUSED)
		do_open(s);
}

void xe_stream_start(struct xe_stream *s)
{
	if (s->fd >= 0)
		return;
	do_open(s);
}

void xe_stream_drain(struct xe_stream *s)
{
	size_t rs = s->cfg.record_size;

	for (int i = 0; i < XS_READ_BUDGET && s->fd >= 0; i++) {
		ssize_t n = s->ops->read(s->ops_ctx, s->fd, s->buf + s->carry, s->cfg.read_bytes);

		s->st.reads++;
		if (n > 0) {
			size_t have = s->carry + (size_t)n, whole = have - have % rs;

			s->st.bytes += (uint64_t)n;
			s->st.records += whole / rs;
			if (whole)
				s->sink(s->arg, s, s->buf, whole, now_ns());
			/* A pipe may split a record; the device never does. */
			s->carry = have - whole;
			if (s->carry)
				memmove(s->buf, s->buf + whole, s->carry);
			s->backoff_ms = s->cfg.backoff_min_ms;
			continue;
		}
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return;
		if (n == -EIO) {
			/* Hardware overflowed a buffer; the next read gives
			 * data again (the xe driver's EU-stall stream). */
			s->st.drops++;
			continue;
		}
		if (n == -ENODEV || n == 0) {
			/* Reset (or, from a pipe, end of input): reopen later. */
			s->st.resets++;
			release(s);
			set_state(s, XS_RESET, "%s; reopening in %u ms",
				  n ? "GT reset (-ENODEV)" : "end of stream", s->backoff_ms);
			retry_in(s, s->backoff_ms);
			s->backoff_ms = s->backoff_ms * 2 > s->cfg.backoff_max_ms
						? s->cfg.backoff_max_ms
						: s->backoff_ms * 2;
			return;
		}
		release(s);
		set_state(s, XS_FAILED, "read: %s", strerror((int)-n));
		return;
	}
}

void xe_stream_pause(struct xe_stream *s, uint64_t ms)
{
	if (s->fd >= 0)
		xe_stream_drain(s);
	release(s);
	uv_timer_stop(s->timer);
	set_state(s, XS_PAUSED, ms ? "released for %llu s on request" : "released on request",
		  (unsigned long long)(ms / 1000));
	if (ms)
		uv_timer_start(s->timer, on_timer, ms, 0);
}

void xe_stream_resume(struct xe_stream *s)
{
	if (s->state != XS_PAUSED && s->state != XS_BUSY && s->state != XS_RESET)
		return;
	uv_timer_stop(s->timer);
	s->state = XS_OFF; /* so a second -EBUSY reports afresh */
	do_open(s);
}

void xe_stream_stop(struct xe_stream *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		xe_stream_drain(s);
	release(s);
	uv_timer_stop(s->timer);
	if (s->state != XS_FAILED)
		set_state(s, XS_OFF, NULL);
}

void xe_stream_free(struct xe_stream *s)
{
	if (!s)
		return;
	s->on_state = NULL;
	release(s);
	uv_timer_stop(s->timer);
	uv_close((uv_handle_t *)s->timer, free_handle);
	free(s->buf);
	free(s);
}

enum xe_stream_state xe_stream_state(const struct xe_stream *s)
{
	return s->state;
}

const char *xe_stream_state_name(enum xe_stream_state st)
{
	static const char *const names[] = {"off", "running", "busy", "reset", "paused", "failed"};

	return st <= XS_FAILED ? names[st] : "unknown";
}

const char *xe_stream_reason(const struct xe_stream *s)
{
	return s->reason;
}

const struct xe_stream_cfg *xe_stream_cfg(const struct xe_stream *s)
{
	return &s->cfg;
}

void xe_stream_get_stats(const struct xe_stream *s, struct xe_stream_stats *st)
{
	*st = s->st;
}

void xe_stream_status(const struct xe_stream *s, cJSON *o)
{
	cJSON_AddStringToObject(o, "name", s->cfg.name);
	cJSON_AddStringToObject(o, "kind", s->cfg.oa ? "oa" : "eu_stall");
	cJSON_AddStringToObject(o, "state", xe_stream_state_name(s->state));
	cJSON_AddStringToObject(o, "reason", s->reason);
	if (!s->cfg.oa) {
		cJSON_AddStringToObject(o, "layout", s->cfg.dec->name);
		cJSON_AddNumberToObject(o, "sample_rate_cycles", (double)s->cfg.rate);
		cJSON_AddNumberToObject(o, "wait_num_reports", (double)s->cfg.wait_num_reports);
	} else {
		cJSON_AddNumberToObject(o, "oa_unit", (double)s->cfg.oa_unit);
		cJSON_AddNumberToObject(o, "oa_metric_set", (double)s->cfg.oa_metric_set);
		cJSON_AddNumberToObject(o, "oa_timestamp_hz", (double)s->cfg.rate);
		cJSON_AddNumberToObject(o, "oa_period_exponent", (double)s->cfg.oa_exponent);
	}
	cJSON_AddNumberToObject(o, "records", (double)s->st.records);
	cJSON_AddNumberToObject(o, "bytes", (double)s->st.bytes);
	cJSON_AddNumberToObject(o, "drops", (double)s->st.drops);
	cJSON_AddNumberToObject(o, "resets", (double)s->st.resets);
	cJSON_AddNumberToObject(o, "busy", (double)s->st.busy);
	cJSON_AddNumberToObject(o, "opens", (double)s->st.opens);
}
