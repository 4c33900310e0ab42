// SPDX-License-Identifier: MIT
/*
 * The xe collector: one stream per EU-stall-capable main GT of every xe
 * device, all feeding one attribution core. A host without any is
 * "unavailable" with the reason the probe found (no DRM node, no xe
 * driver, kernel < 6.15, no permission...), and nothing else changes.
 */
#include "xe_collector.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/capture.h"
#include "cs.h"
#include "cs_hook.h"
#include "device.h"
#include "gpd.h"
#include "log.h"
#include "iga.h"
#include "oa.h"
#include "zebin.h"

#define XE_MAX_DEVICES 8
#define XE_MAX_STREAMS 32
#define XE_TICK_MS 1000 /* ages deferred samples */

struct xe_src {
	struct xe_coll *p;
	struct xe_stream *s;
	struct xe_oa_state oa;
};

struct xe_coll {
	struct collector *c;
	struct xe *x;
	struct xe_device devs[XE_MAX_DEVICES];
	int ndevs;
	struct xe_src src[XE_MAX_STREAMS];
	unsigned nsrc;
	uv_timer_t *tick;
	char probe_why[200];
	struct xe_cs *cs;	 /* host batch-buffer parser (docs/gpu-cs.md) */
	struct xe_cs_hook *hook; /* its BPF path on xe execs, NULL when off */
	uv_poll_t *hook_poll;
	struct xe_kbin *kbin; /* kernel binaries (zebin.h) */
	/* graphics IP of the first EU-stall GT (major << 16 | minor), 0 none:
	 * set on the loop at open, read by output workers */
	_Atomic uint32_t ip_ver;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct xe_coll *coll_get(struct collector *c)
{
	struct xe_coll *p = c->priv;

	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return NULL;
		if (xe_cs_new(NULL, &p->cs) < 0) {
			free(p);
			return NULL;
		}
		if (xe_kbin_new(0, &p->kbin) < 0) {
			xe_cs_free(p->cs);
			free(p);
			return NULL;
		}
		p->c = c;
		c->priv = p;
	}
	return p;
}

static void sink(void *arg, struct xe_stream *s, const uint8_t *buf, size_t len, uint64_t now)
{
	struct xe_src *src = arg;
	const struct xe_stream_cfg *cfg = xe_stream_cfg(s);
	struct collector *c = src->p->c;

	if (!cfg->oa) {
		c->events += xe_ingest(src->p->x, cfg->dec, buf, len, cfg->record_size, now);
		return;
	}
	c->events += (uint64_t)xe_oa_ingest(&src->oa, c->gpd ? c->gpd->store : NULL, cfg->gt_id,
					    buf, len, cfg->record_size, now, &c->drops);
}

/* The collector's state is the best of its streams'. */
static void on_state(void *arg, struct xe_stream *s)
{
	struct xe_src *src = arg;
	struct xe_coll *p = src->p;
	int best = -1;
	const char *why = "";
	static const int rank[] = {[XS_RUNNING] = 5, [XS_PAUSED] = 4, [XS_BUSY] = 3,
				   [XS_RESET] = 2,   [XS_OFF] = 1,    [XS_FAILED] = 0};
	enum xe_stream_state bst = XS_OFF;

	(void)s;
	for (unsigned i = 0; i < p->nsrc; i++) {
		enum xe_stream_state st = xe_stream_state(p->src[i].s);

		if (rank[st] > best) {
			best = rank[st];
			bst = st;
			why = xe_stream_reason(p->src[i].s);
		}
	}
	switch (bst) {
	case XS_RUNNING:
	case XS_RESET: /* reopening by itself: still ours */
		if (p->c->state != COLLECTOR_ATTACHED)
			collector_set_state(p->c, COLLECTOR_ATTACHED, NULL);
		break;
	case XS_PAUSED:
		collector_set_state(p->c, COLLECTOR_PAUSED, "%s", why);
		break;
	case XS_BUSY:
		collector_set_state(p->c, COLLECTOR_BUSY, "%s", why);
		break;
	case XS_FAILED:
		collector_set_state(p->c, COLLECTOR_FAILED, "%s", why);
		break;
	case XS_OFF:
		break;
	}
}

static void on_tick(uv_timer_t *t)
{
	struct xe_coll *p = t->data;

	if (p->x)
		xe_retry_deferred(p->x, mono_ns(), false);
	xe_cs_retry(p->cs, xe_collector_core(p->c));
}

static void free_handle(uv_handle_t *h)
{
	free(h);
}

int xe_collector_add_stream(struct collector *c, const struct xe_stream_cfg *cfg,
			    const struct xe_obs_ops *ops, void *ops_ctx)
{
	struct xe_coll *p = coll_get(c);
	struct xe_src *src;
	int r;

	if (!p)
		return -ENOMEM;
	if (p->nsrc == XE_MAX_STREAMS)
		return -ENOSPC;
	if (!p->x) {
		const struct config_xe *xc = &c->gpd->cfg.xe;
		struct xe_config cfg_core = {
			.interval_ns = xc->interval_ns,
			.max_rows = xc->rows,
			.max_kernels = xc->kernels,
			.max_deferred = xc->deferred,
			.demangle = c->gpd->cfg.demangle,
		};

		r = xe_new(&cfg_core, mono_ns(), &p->x);
		if (r < 0)
			return r;
	}
	if (!p->tick) {
		p->tick = malloc(sizeof(*p->tick));
		if (!p->tick)
			return -ENOMEM;
		uv_timer_init(c->gpd->loop, p->tick);
		p->tick->data = p;
	}
	src = &p->src[p->nsrc];
	memset(src, 0, sizeof(*src));
	src->p = p;
	if (cfg->oa)
		src->oa.ts_freq_hz = cfg->rate; /* OA: rate carries the timestamp clock */
	r = xe_stream_new(c->gpd->loop, cfg, ops, ops_ctx, sink, on_state, src, &src->s);
	if (r < 0)
		return r;
	p->nsrc++;
	if (c->state == COLLECTOR_UNAVAILABLE)
		collector_set_state(c, COLLECTOR_OFF, NULL);
	return 0;
}

static void on_hook(uv_poll_t *h, int status, int events)
{
	struct xe_coll *p = h->data;

	(void)status;
	(void)events;
	xe_cs_hook_consume(p->hook, p->cs, xe_collector_core(p->c));
}

/* The BPF submission hook (docs/gpu-cs.md, "Paths"), per xe.submit_hook:
 * on its own, independent of the EU-stall streams; its KSPs wait in the
 * counters until a stream gives them a kernel table. */
static void hook_open(struct xe_coll *p)
{
	const struct config_xe *xc = &p->c->gpd->cfg.xe;
	bool have_xe = access("/sys/module/xe", F_OK) == 0;
	bool have_i915 = access("/sys/module/i915", F_OK) == 0;
	char why[256];
	int r;

	if (xc->submit_hook == CONFIG_XE_HOOK_OFF) {
		xe_cs_set_path(p->cs, "host",
			       "xe.submit_hook = off: batch buffers are parsed only from dumps");
		return;
	}
	if (xc->submit_hook == CONFIG_XE_HOOK_AUTO && !have_xe && !have_i915)
		return; /* xe_cs_path() says why */
	r = xe_cs_hook_open(NULL, &p->hook, why, sizeof(why));
	if (r == 0 && (p->hook_poll = malloc(sizeof(*p->hook_poll))) &&
	    uv_poll_init(p->c->gpd->loop, p->hook_poll, xe_cs_hook_fd(p->hook)) == 0) {
		p->hook_poll->data = p;
		/* from now on (a collector with no EU-stall stream is never
		 * started) until xe_stop() */
		uv_poll_start(p->hook_poll, UV_READABLE, on_hook);
		xe_cs_set_path(p->cs, "bpf",
			       have_xe || have_i915
				       ? "every xe exec / i915 execbuffer is parsed in BPF at "
					 "submission (raw_tp sys_enter / sys_exit)"
				       : "xe.submit_hook = on, but no xe or i915 driver is loaded: "
					 "nothing to parse");
		return;
	}
	if (r == 0) {
		snprintf(why, sizeof(why), "submission hook: out of memory");
		free(p->hook_poll);
		p->hook_poll = NULL;
		xe_cs_hook_free(p->hook);
		p->hook = NULL;
	}
	log_warn("xe: %s; batch buffers only from dumps", why);
	xe_cs_set_path(p->cs, "host", why);
}

static int xe_open(struct collector *c)
{
	struct xe_coll *p = coll_get(c);
	int n;

	if (!p)
		return -ENOMEM;
	if (p->nsrc)
		return 0;
	const struct config_xe *xc = &c->gpd->cfg.xe;

	n = xe_devices_probe(p->devs, XE_MAX_DEVICES, xc->sample_rate, p->probe_why,
			     sizeof(p->probe_why));
	p->ndevs = n;
	for (int i = 0; i < n; i++) {
		struct xe_device *d = &p->devs[i];
		int r;

		if (d->ngts && !p->ip_ver)
			p->ip_ver = (uint32_t)d->gts[0].ip_major << 16 | d->gts[0].ip_minor;

		for (unsigned g = 0; g < d->ngts; g++) {
			if (xc->wait_num_reports)
				d->gts[g].cfg.wait_num_reports = xc->wait_num_reports;
			r = xe_collector_add_stream(c, &d->gts[g].cfg, &xe_device_ops, NULL);
			if (r < 0)
				log_warn("xe %s: %s", d->gts[g].cfg.name, strerror(-r));
		}
		if (!xc->oa) {
			snprintf(d->oa.why, sizeof(d->oa.why), "off (xe.oa = false)");
			continue;
		}
		/* OA is extra: without it the EU-stall profile still stands */
		if (xe_device_probe_oa(d, xc->oa_period_ns, NULL) < 0)
			log_info("xe %s: OA %s", d->node, d->oa.why);
		else if ((r = xe_collector_add_stream(c, &d->oa.cfg, &xe_device_ops, &d->oa)) < 0)
			log_warn("xe %s: %s", d->oa.cfg.name, strerror(-r));
	}
	if (!p->hook && c->gpd)
		hook_open(p);
	if (!p->nsrc)
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "%s", p->probe_why);
	return 0;
}

static int xe_start(struct collector *c)
{
	struct xe_coll *p = c->priv;

	if (p && p->hook_poll)
		uv_poll_start(p->hook_poll, UV_READABLE, on_hook);
	if (!p || !p->nsrc)
		return 0;
	uv_timer_start(p->tick, on_tick, XE_TICK_MS, XE_TICK_MS);
	for (unsigned i = 0; i < p->nsrc; i++)
		xe_stream_start(p->src[i].s);
	on_state(&p->src[0], p->src[0].s);
	return 0;
}

static void xe_stop(struct collector *c)
{
	struct xe_coll *p = c->priv;

	if (p && p->hook_poll) /* the loop must be free to end */
		uv_poll_stop(p->hook_poll);
	if (!p || !p->nsrc)
		return;
	for (unsigned i = 0; i < p->nsrc; i++)
		xe_stream_stop(p->src[i].s);
	uv_timer_stop(p->tick);
	if (c->state == COLLECTOR_ATTACHED || c->state == COLLECTOR_BUSY ||
	    c->state == COLLECTOR_PAUSED)
		collector_set_state(c, COLLECTOR_OFF, NULL);
}

int xe_collector_pause(struct collector *c, uint64_t seconds)
{
	struct xe_coll *p = c->priv;

	if (!p || !p->nsrc)
		return -ENODEV;
	for (unsigned i = 0; i < p->nsrc; i++)
		xe_stream_pause(p->src[i].s, seconds * 1000);
	return 0;
}

int xe_collector_resume(struct collector *c)
{
	struct xe_coll *p = c->priv;

	if (!p || !p->nsrc)
		return -ENODEV;
	for (unsigned i = 0; i < p->nsrc; i++)
		xe_stream_resume(p->src[i].s);
	return 0;
}

struct xe_cs *xe_collector_cs(struct collector *c)
{
	struct xe_coll *p = c ? coll_get(c) : NULL;

	return p ? p->cs : NULL;
}

struct xe_kbin *xe_collector_kbin(struct collector *c)
{
	struct xe_coll *p = c ? coll_get(c) : NULL;

	return p ? p->kbin : NULL;
}

int xe_collector_insn_src(struct collector *c, struct xe_insn_src **ret)
{
	struct xe_coll *p = c ? c->priv : NULL;
	uint32_t v = p ? p->ip_ver : 0;
	struct xe_iga *g;
	int r;

	if (!v)
		return -ENODEV;
	r = xe_iga_new(v >> 16, v & 0xffff, &g);
	if (r < 0)
		return r;
	r = xe_insn_src_new(p->kbin, g, true, ret);
	if (r < 0)
		xe_iga_free(g);
	return r;
}

struct xe *xe_collector_core(struct collector *c)
{
	struct xe_coll *p = c ? c->priv : NULL;

	return p && p->nsrc ? p->x : NULL;
}

int xe_collector_attach_capture(struct collector *c, struct capture *cap)
{
	struct xe_coll *p = c ? c->priv : NULL;
	struct xe_export_filter f = {
		.pids = cap->pids,
		.npids = cap->npids,
		.uid_filter = cap->uid_filter,
		.uid = cap->filter_uid,
	};
	void *buf;
	size_t len;
	int r;

	if (!p || !p->x || cap->kind != CAPTURE_LIVE || capture_find_extra(cap, CAPSEC_XE_EU_STALL))
		return 0;
	r = xe_export(p->x, cap->t0_ns, cap->t1_ns, &f, &buf, &len);
	if (r < 0 || !len)
		return r;
	/* without the stacks linked the profile still stands: CPU frames
	 * then print as addresses */
	if ((r = xe_sec_link_stacks(cap, buf, len)) < 0)
		log_warn("capture %llu: EU-stall launch stacks not linked: %s",
			 (unsigned long long)cap->id, strerror(-r));
	r = capture_add_extra(cap, CAPSEC_XE_EU_STALL, buf, len);
	free(buf);
	return r;
}

/* The xe.* keys in force, and why a device has no OA stream. */
static void xe_status_config(struct xe_coll *p, cJSON *o)
{
	const struct config_xe *xc;
	cJSON *cf;

	if (!p->c->gpd)
		return;
	xc = &p->c->gpd->cfg.xe;
	cf = cJSON_AddObjectToObject(o, "config");

	if (cf) {
		cJSON_AddStringToObject(cf, "sample_rate",
					xc->sample_rate == CONFIG_XE_RATE_SLOWEST   ? "slowest"
					: xc->sample_rate == CONFIG_XE_RATE_FASTEST ? "fastest"
										    : "cycles");
		if (xc->sample_rate != CONFIG_XE_RATE_SLOWEST &&
		    xc->sample_rate != CONFIG_XE_RATE_FASTEST)
			cJSON_AddNumberToObject(cf, "sample_rate_cycles", (double)xc->sample_rate);
		cJSON_AddNumberToObject(cf, "wait_num_reports", (double)xc->wait_num_reports);
		cJSON_AddNumberToObject(cf, "rows", (double)xc->rows);
		cJSON_AddNumberToObject(cf, "deferred", (double)xc->deferred);
		cJSON_AddNumberToObject(cf, "kernels", (double)xc->kernels);
		cJSON_AddNumberToObject(cf, "interval_ms", (double)(xc->interval_ns / 1000000));
		cJSON_AddBoolToObject(cf, "oa", xc->oa);
		cJSON_AddNumberToObject(cf, "oa_period_ms", (double)(xc->oa_period_ns / 1000000));
	}
	for (int i = 0; i < p->ndevs; i++) {
		cJSON *a = cJSON_GetObjectItem(o, "oa_unavailable");

		if (p->devs[i].oa.ok)
			continue;
		if (!a)
			a = cJSON_AddArrayToObject(o, "oa_unavailable");
		if (a)
			cJSON_AddItemToArray(a, cJSON_CreateString(p->devs[i].oa.why));
	}
}

static void xe_status(struct collector *c, cJSON *o)
{
	struct xe_coll *p = c->priv;
	struct xe_stats st;
	cJSON *arr;

	if (p)
		xe_cs_status(p->cs, o);
	if (p && p->hook) {
		static const char *const names[GPU_SUBMIT_NCOUNTERS] =
			{"execs",	  "parsed",   "skipped",     "binds",	   "unbinds",
			 "binds_evicted", "bo_mmaps", "events_lost", "read_faults"};
		uint64_t cnt[GPU_SUBMIT_NCOUNTERS];
		cJSON *h = cJSON_AddObjectToObject(cJSON_GetObjectItem(o, "batch_parser"), "hook");

		xe_cs_hook_counters(p->hook, cnt);
		for (int i = 0; h && i < GPU_SUBMIT_NCOUNTERS; i++)
			cJSON_AddNumberToObject(h, names[i], (double)cnt[i]);
	}
	if (p)
		xe_status_config(p, o); /* also when unavailable: what it would use */
	if (!p || !p->x)
		return;
	xe_get_stats(p->x, &st);
	cJSON_AddNumberToObject(o, "records", (double)st.records);
	cJSON_AddNumberToObject(o, "attributed", (double)st.attributed);
	cJSON_AddNumberToObject(o, "deferred", (double)st.deferred_now);
	cJSON_AddNumberToObject(o, "late_attributed", (double)st.late_attributed);
	cJSON_AddNumberToObject(o, "unattributed", (double)st.unattributed);
	cJSON_AddNumberToObject(o, "rows", (double)st.rows);
	cJSON_AddNumberToObject(o, "rows_evicted", (double)st.rows_evicted);
	cJSON_AddNumberToObject(o, "kernels", (double)st.kernels);
	cJSON_AddNumberToObject(o, "kernels_refused", (double)st.kernels_full);
	arr = cJSON_AddArrayToObject(o, "streams");
	for (unsigned i = 0; arr && i < p->nsrc; i++) {
		cJSON *s = cJSON_CreateObject();
		struct xe_stream_stats ss;

		if (!s)
			break;
		xe_stream_status(p->src[i].s, s);
		xe_stream_get_stats(p->src[i].s, &ss);
		for (int d = 0; xe_stream_cfg(p->src[i].s)->oa && d < p->ndevs; d++)
			if (!strcmp(p->devs[d].oa.cfg.name, xe_stream_cfg(p->src[i].s)->name))
				cJSON_AddNumberToObject(s, "oa_buf_size",
							(double)p->devs[d].oa.oa_buf_size);
		cJSON_AddItemToArray(arr, s);
	}
}

static void xe_coll_free(struct collector *c)
{
	struct xe_coll *p = c->priv;

	if (!p)
		return;
	for (unsigned i = 0; i < p->nsrc; i++)
		xe_stream_free(p->src[i].s);
	if (p->tick) {
		uv_timer_stop(p->tick);
		uv_close((uv_handle_t *)p->tick, free_handle);
	}
	if (p->hook_poll) {
		uv_poll_stop(p->hook_poll);
		uv_close((uv_handle_t *)p->hook_poll, free_handle);
	}
	xe_cs_hook_free(p->hook);
	for (int i = 0; i < p->ndevs; i++)
		xe_device_close(&p->devs[i]);
	xe_free(p->x);
	xe_cs_free(p->cs);
	xe_kbin_free(p->kbin);
	free(p);
	c->priv = NULL;
}

const struct collector_ops xe_collector_ops = {
	.name = "xe",
	.open = xe_open,
	.start = xe_start,
	.stop = xe_stop,
	.status = xe_status,
	.free = xe_coll_free,
};
