// SPDX-License-Identifier: MIT
/*
 * Chrome / Perfetto trace JSON of a capture (flamegraph.h), as the Trace
 * Event Format describes it: CPU samples are thread-scoped instant events
 * whose "sf" names their leaf in "stackFrames" (a tree: each frame has a
 * "parent"; the root is the comm, as in folded stacks); launches are
 * zero-length "X" events carrying their correlation id; GPU intervals "X"
 * events on one synthetic thread per GPU context (args.stream set, so our
 * own importer treats them as GPU-side); marks "X" user annotations. Times
 * are microseconds with exact nanosecond decimals.
 *
 * NVIDIA activity from the CUPTI library (store.h) is written as Kineto
 * writes it, so the export reads back as a Kineto trace: categories
 * "kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", args correlation /
 * device / context / stream / bytes, on one thread per (device, stream)
 * of its process ("GPU 0 stream 7"); the runtime / driver calls on their
 * threads ("cuda_runtime", "cuda_driver") with their duration and
 * correlation, and an "ac2g" flow arrow from each call to its activity. A
 * driver call made by a runtime call keeps its id as
 * "runtime_correlation", so the id links the runtime call alone, as in
 * Kineto's traces.
 */
#include "flamegraph.h"
#include "render_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/gpumatch.h"

#define GPU_TID_BASE 1000000000u /* synthetic tids of GPU contexts */
/* CUPTI rows: GPU_TID_BASE + CUPTI_TID_OFF + device * CUPTI_TID_DEV +
 * stream (CUPTI_TID_DEV - 1: no stream); 255 devices fit in 32 bits */
#define CUPTI_TID_OFF 1000000u
#define CUPTI_TID_DEV 10000000u

struct chrome {
	const struct capture *c;
	struct wbuf *w;
	struct capframes *f;
	struct bmap frames; /* parent id (u32) + name -> frame id */
	struct bmap stacks; /* (pid, stack, comm) -> index into leaf[] */
	uint32_t *leaf;
	size_t leafcap;
	struct bmap threads; /* (pid, tid) -> first comm */
	uint32_t *thread_comm;
	size_t tcap;
	bool first;
	struct gpu_match m; /* CUPTI's calls (m.call), built when there are any */
};

static int grow_u32(uint32_t **a, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 1024;
	while (nc < need)
		nc *= 2;
	uint32_t *n = realloc(*a, nc * sizeof(*n));
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap = nc;
	return 0;
}

static uint32_t frame_id(struct chrome *x, uint32_t parent, const char *name, size_t len)
{
	char key[4 + 4096];
	if (len > 4096)
		len = 4096;
	memcpy(key, &parent, 4);
	memcpy(key + 4, name, len);
	return bmap_intern(&x->frames, key, 4 + len, NULL);
}

/* The stackFrames id of a sample's leaf (cached per (pid, stack, comm)). */
static int sample_frame(struct chrome *x, const struct store_rec *r, uint32_t *out)
{
	uint32_t key[3] = {r->pid, r->stack, r->comm};
	bool added;
	uint32_t id = bmap_intern(&x->stacks, key, sizeof(key), &added);
	if (!id || grow_u32(&x->leaf, &x->leafcap, id) < 0)
		return -ENOMEM;
	if (added) {
		size_t len;
		const char *comm = capture_str(x->c, r->comm, &len);
		uint32_t p =
			frame_id(x, 0, comm && len ? comm : "[unknown]", comm && len ? len : 9);
		size_t n = capframes_get(x->f, r->pid, r->stack);
		for (size_t i = 0; i < n && p; i++)
			p = frame_id(x, p, x->f->name[i], x->f->len[i]);
		if (!p)
			return -ENOMEM;
		x->leaf[id - 1] = p;
	}
	*out = x->leaf[id - 1];
	return 0;
}

static int note_thread(struct chrome *x, uint32_t pid, uint32_t tid, uint32_t comm)
{
	uint32_t key[2] = {pid, tid};
	bool added;
	uint32_t id = bmap_intern(&x->threads, key, sizeof(key), &added);
	if (!id || grow_u32(&x->thread_comm, &x->tcap, id) < 0)
		return -ENOMEM;
	if (added)
		x->thread_comm[id - 1] = comm;
	return 0;
}

static void ev_begin(struct chrome *x, const char *ph, const char *cat, const struct store_rec *r,
		     uint32_t tid)
{
	wb_printf(x->w,
		  "%s\n{\"ph\":\"%s\",\"cat\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
		  ",\"ts\":%" PRIu64 ".%03u,\"name\":\"",
		  x->first ? "" : ",", ph, cat, r->pid, tid, r->ts_ns / 1000,
		  (unsigned)(r->ts_ns % 1000));
	x->first = false;
	size_t len;
	/* a launch known only by handle: the kernel name CUPTI gave it */
	uint32_t id = r->type == STORE_REC_GPU_LAUNCH
			      ? gpu_launch_name(x->m.name, (size_t)(r - x->c->recs), r)
			      : r->name;
	const char *n = capture_str(x->c, id, &len);
	if (r->type == STORE_REC_CPU_SAMPLE)
		n = "cpu_sample", len = 10;
	wb_json(x->w, n ? n : "", n ? len : 0);
	wb_puts(x->w, "\"");
}

static void write_str(struct chrome *x, uint32_t id)
{
	size_t len;
	const char *s = capture_str(x->c, id, &len);
	wb_json(x->w, s ? s : "", s ? len : 0);
}

static void write_ts(struct chrome *x, const char *key, uint64_t ns)
{
	wb_printf(x->w, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

/* A runtime / driver call (STORE_REC_GPU_API) on its thread. */
static void write_api(struct chrome *x, const struct store_rec *r)
{
	uint32_t corr = (uint32_t)r->aux[1];
	bool nested = x->m.call && x->m.call[r - x->c->recs];

	ev_begin(x, "X", r->cpu == 1 ? "cuda_driver" : "cuda_runtime", r, r->tid);
	write_ts(x, "dur", r->dur_ns);
	wb_printf(x->w, ",\"args\":{\"%s\":%" PRIu32 ",\"cbid\":%u%s}}",
		  nested ? "runtime_correlation" : "correlation", corr, r->aux32 & 0xffff,
		  r->aux32 >> 16 ? ",\"failed\":true" : "");
}

/* The "ac2g" arrow from call (the outer API record) to activity r on tid. */
static void write_flow(struct chrome *x, const struct store_rec *call, const struct store_rec *r,
		       uint32_t tid)
{
	uint32_t id = (uint32_t)(r - x->c->recs);

	wb_printf(x->w,
		  ",\n{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%" PRIu32
		  ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32,
		  id, call->pid, call->tid);
	write_ts(x, "ts", call->ts_ns);
	wb_printf(x->w,
		  "},\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":%" PRIu32
		  ",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32,
		  id, r->pid, tid);
	write_ts(x, "ts", r->ts_ns);
	wb_puts(x->w, "}");
}

/* A wait on a CUDA event, as Kineto writes it: the stream the event was
 * recorded on and the recording call's correlation id (-1 when the record
 * is not in the capture), and the event's id. */
static void write_wait(struct chrome *x, const struct store_rec *r)
{
	uint32_t w = x->m.wait ? x->m.wait[r - x->c->recs] : 0;
	const struct store_rec *ev = w ? &x->c->recs[w - 1] : NULL;

	wb_printf(x->w,
		  ",\"wait_on_stream\":%" PRId64 ",\"wait_on_cuda_event_record_corr_id\":%" PRId64
		  ",\"wait_on_cuda_event_id\":%" PRIu32,
		  ev ? (int64_t)(int32_t)STORE_CUPTI_STREAM(ev->aux[0]) : -1,
		  ev ? (int64_t)(uint32_t)ev->aux[1] : -1, r->aux32);
}

/* NVIDIA activity on its (device, stream) row, as Kineto writes it. */
static int write_cupti(struct chrome *x, const struct store_rec *r, struct export_totals *t)
{
	static const char *const cat[] = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync",
					  "kernel"};
	unsigned k = r->cpu & 0xff;
	/* a sync's device is its context's (gpumatch.h), as Kineto's */
	uint32_t dev = k == GPU_CUPTI_SYNC && x->m.ctxdev ? gpu_match_sync_device(&x->m, r)
							  : STORE_CUPTI_DEVICE(r->aux[0]),
		 st = STORE_CUPTI_STREAM(r->aux[0]);
	size_t len;
	const char *n = capture_str(x->c, r->name, &len);
	/* Kineto: event and context syncs have no stream */
	bool no_stream = st == UINT32_MAX || (k == GPU_CUPTI_SYNC && n &&
					      ((len == 10 && !memcmp(n, "Event Sync", 10)) ||
					       (len == 12 && !memcmp(n, "Context Sync", 12))));
	uint32_t tid = GPU_TID_BASE + CUPTI_TID_OFF + dev * CUPTI_TID_DEV +
		       (no_stream ? CUPTI_TID_DEV - 1 : st % (CUPTI_TID_DEV - 1));

	if (k >= sizeof(cat) / sizeof(cat[0]))
		return 0; /* a kind this build does not know */
	ev_begin(x, "X", cat[k], r, tid);
	write_ts(x, "dur", r->dur_ns);
	wb_printf(x->w,
		  ",\"args\":{\"correlation\":%" PRIu32 ",\"device\":%" PRIu32
		  ",\"context\":%" PRIu32,
		  (uint32_t)r->aux[1], dev, STORE_CUPTI_CONTEXT(r->aux[0]));
	if (no_stream)
		wb_puts(x->w, ",\"stream\":-1");
	else
		wb_printf(x->w, ",\"stream\":%" PRIu32, st);
	if (k == GPU_CUPTI_MEMCPY || k == GPU_CUPTI_MEMSET)
		wb_printf(x->w, ",\"bytes\":%" PRIu64, STORE_BYTES64(r->aux32));
	else if (k == GPU_CUPTI_KERNEL)
		wb_printf(x->w, ",\"registers per thread\":%" PRIu32, r->aux32);
	else if (k == GPU_CUPTI_SYNC && r->aux32)
		write_wait(x, r);
	if (store_rec_detail(r)) {
		wb_puts(x->w, ",\"detail\":\"");
		write_str(x, store_rec_detail(r));
		wb_puts(x->w, "\"");
	}
	wb_puts(x->w, "}}");
	uint32_t call = x->m.call ? x->m.call[r - x->c->recs] : 0;
	if (call)
		write_flow(x, &x->c->recs[call - 1], r, tid);
	t->events++;
	return note_thread(x, r->pid, tid, 0);
}

static int write_event(struct chrome *x, const struct store_rec *r, struct export_totals *t)
{
	uint32_t sf, tid = r->tid;
	int err;
	switch (r->type) {
	case STORE_REC_CPU_SAMPLE:
		if ((err = sample_frame(x, r, &sf)) < 0)
			return err;
		ev_begin(x, "i", "cpu", r, tid);
		wb_printf(x->w,
			  ",\"s\":\"t\",\"sf\":%" PRIu32 ",\"args\":{\"weight\":%" PRIu32 "}}", sf,
			  r->aux32 ? r->aux32 : 1);
		break;
	case STORE_REC_GPU_LAUNCH:
		/* no duration: the probes see the call, not its return (the
		 * record's dur_ns bytes hold its cgroup, store.h) */
		ev_begin(x, "X", "gpu_launch", r, tid);
		/* beside CUPTI's calls, the probe's id is another space's */
		wb_printf(x->w,
			  ",\"dur\":0.000,\"args\":{\"queue\":%" PRIu64 ",\"%s\":%" PRIu64 "}}",
			  r->aux[0], x->m.call ? "probe_correlation" : "correlation", r->aux[1]);
		break;
	case STORE_REC_GPU_INTERVAL:
		if (gpu_is_cupti(r))
			return write_cupti(x, r, t);
		tid = GPU_TID_BASE + (uint32_t)(r->aux[0] % 1000000u);
		ev_begin(x, "X", "kernel", r, tid);
		wb_printf(x->w,
			  ",\"dur\":%" PRIu64 ".%03u,\"args\":{\"context\":%" PRIu64
			  ",\"stream\":%" PRIu64 "}}",
			  r->dur_ns / 1000, (unsigned)(r->dur_ns % 1000), r->aux[0], r->aux[0]);
		break;
	case STORE_REC_MARK:
		ev_begin(x, "X", "user_annotation", r, tid);
		wb_printf(x->w, ",\"dur\":%" PRIu64 ".%03u", r->dur_ns / 1000,
			  (unsigned)(r->dur_ns % 1000));
		if (store_rec_detail(r)) { /* an NVTX domain */
			wb_puts(x->w, ",\"args\":{\"domain\":\"");
			write_str(x, store_rec_detail(r));
			wb_puts(x->w, "\"}");
		}
		wb_puts(x->w, "}");
		break;
	case STORE_REC_GPU_API:
		write_api(x, r);
		break;
	default:
		return 0; /* types added later are left out, not guessed at */
	}
	t->events++;
	return note_thread(x, r->pid, tid, r->type == STORE_REC_GPU_INTERVAL ? 0 : r->comm);
}

static void write_meta(struct chrome *x)
{
	for (uint32_t id = 1; id <= x->threads.n; id++) {
		size_t klen, len;
		const uint32_t *k =
			(const uint32_t *)(const void *)bmap_key(&x->threads, id, &klen);
		uint32_t pid, tid;
		memcpy(&pid, k, 4);
		memcpy(&tid, (const char *)k + 4, 4);
		const char *comm = capture_str(x->c, x->thread_comm[id - 1], &len);
		char gname[48];
		if (tid >= GPU_TID_BASE + CUPTI_TID_OFF) {
			uint32_t o = tid - GPU_TID_BASE - CUPTI_TID_OFF;
			if (o % CUPTI_TID_DEV == CUPTI_TID_DEV - 1)
				len = (size_t)snprintf(gname, sizeof(gname), "GPU %u",
						       o / CUPTI_TID_DEV);
			else
				len = (size_t)snprintf(gname, sizeof(gname), "GPU %u stream %u",
						       o / CUPTI_TID_DEV, o % CUPTI_TID_DEV);
			comm = gname;
		} else if (tid >= GPU_TID_BASE) {
			len = (size_t)snprintf(gname, sizeof(gname), "GPU context %u",
					       tid - GPU_TID_BASE);
			comm = gname;
		}
		wb_printf(x->w,
			  "%s\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32
			  ",\"tid\":%" PRIu32 ",\"args\":{\"name\":\"",
			  x->first ? "" : ",", pid, tid);
		x->first = false;
		wb_json(x->w, comm ? comm : "", comm ? len : 0);
		wb_puts(x->w, "\"}}");
		if (pid == tid && comm && tid < GPU_TID_BASE) {
			wb_printf(x->w,
				  ",\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
				  ",\"tid\":0,\"args\":{\"name\":\"",
				  pid);
			wb_json(x->w, comm, len);
			wb_puts(x->w, "\"}}");
		}
	}
}

static void write_frames(struct chrome *x)
{
	wb_puts(x->w, "],\n\"stackFrames\":{");
	for (uint32_t id = 1; id <= x->frames.n && !x->w->err; id++) {
		size_t klen;
		const char *k = bmap_key(&x->frames, id, &klen);
		uint32_t parent;
		memcpy(&parent, k, 4);
		wb_printf(x->w, "%s\n\"%" PRIu32 "\":{\"name\":\"", id > 1 ? "," : "", id);
		wb_json(x->w, k + 4, klen - 4);
		if (parent)
			wb_printf(x->w, "\",\"parent\":\"%" PRIu32 "\"}", parent);
		else
			wb_puts(x->w, "\",\"category\":\"process\"}");
	}
	wb_puts(x->w, "}}\n");
}

int chrome_export(const struct capture *c, const struct render_view *view, folded_write_fn fn,
		  void *ctx, struct export_totals *t)
{
	struct export_totals tt = {0};
	struct chrome x = {.c = c, .first = true};
	int r = -ENOMEM;
	bmap_init(&x.frames);
	bmap_init(&x.stacks);
	bmap_init(&x.threads);
	x.w = malloc(sizeof(*x.w));
	x.f = malloc(sizeof(*x.f));
	if (!x.w || !x.f)
		goto out;
	capframes_init(x.f, c, view);
	wb_init(x.w, fn, ctx);
	wb_printf(x.w,
		  "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"gpuprof\","
		  "\"capture_id\":%" PRIu64 ",\"capture_name\":\"",
		  c->id);
	wb_json(x.w, c->name, strnlen(c->name, sizeof(c->name)));
	wb_puts(x.w, "\"},\n\"traceEvents\":[");
	/* CUPTI's calls and their nesting, for the flows and the ids; the
	 * event records the waits wait on */
	for (size_t i = 0; i < c->nrecs; i++) {
		if (c->recs[i].type != STORE_REC_GPU_API && c->recs[i].type != STORE_REC_GPU_EVENT)
			continue;
		if ((r = gpu_match_build(c, &x.m)) < 0)
			goto out_f;
		break;
	}
	for (size_t i = 0; i < c->nrecs && !x.w->err; i++)
		if ((r = write_event(&x, &c->recs[i], &tt)) < 0)
			goto out_f;
	write_meta(&x);
	write_frames(&x);
	r = wb_flush(x.w);
	tt.frames = x.frames.n;
	tt.bytes = x.w->total;
out_f:
	capframes_finish(x.f);
out:
	if (t)
		*t = tt;
	free(x.w);
	free(x.f);
	free(x.leaf);
	free(x.thread_comm);
	gpu_match_finish(&x.m);
	bmap_finish(&x.frames);
	bmap_init(&x.frames);
	bmap_finish(&x.stacks);
	bmap_finish(&x.threads);
	return r;
}
