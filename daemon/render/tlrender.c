// SPDX-License-Identifier: MIT
/* Outputs of imported captures from their timeline (tlrender.h). */
#include "tlrender.h"
#include "render_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline/timeline.h"

#define TL_FOLD_MAX_DEPTH 512 /* deeper nesting is folded into its ancestor */

/* ---- Chrome trace ----------------------------------------------------- */

/* Exact microseconds with nanosecond decimals, as the importer reads them. */
static void put_us(struct wbuf *w, int64_t ns)
{
	uint64_t a = ns < 0 ? -(uint64_t)ns : (uint64_t)ns;
	wb_printf(w, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
}

static void put_str(struct wbuf *w, const struct timeline *tl, uint32_t id)
{
	size_t len;
	const char *s = timeline_str(tl, id, &len);
	wb_puts(w, "\"");
	wb_json(w, s, len);
	wb_puts(w, "\"");
}

/* pid / tid: a number, or the string the file had */
static void put_id(struct wbuf *w, const struct timeline *tl, int64_t v, bool is_str)
{
	if (is_str)
		put_str(w, tl, (uint32_t)v);
	else
		wb_printf(w, "%" PRId64, v);
}

struct argw {
	struct wbuf *w;
	bool any;
};

static void arg_key(struct argw *a, const char *key)
{
	wb_printf(a->w, "%s\"%s\":", a->any ? "," : "", key);
	a->any = true;
}

static void arg_num(struct argw *a, const char *key, int64_t v)
{
	if (v == TL_NONE)
		return;
	arg_key(a, key);
	wb_printf(a->w, "%" PRId64, v);
}

static void arg_str(struct argw *a, const struct timeline *tl, const char *key, uint32_t id)
{
	if (!id)
		return;
	arg_key(a, key);
	put_str(a->w, tl, id);
}

static void arg_dim3(struct argw *a, const char *key, const int32_t v[3])
{
	if (v[0] == -1 && v[1] == -1 && v[2] == -1)
		return;
	arg_key(a, key);
	wb_printf(a->w, "[%" PRId32 ",%" PRId32 ",%" PRId32 "]", v[0], v[1], v[2]);
}

static void put_args(struct wbuf *w, const struct timeline *tl, const struct tl_rank *r,
		     const struct tl_event *e)
{
	struct argw a = {.w = w};
	const struct tl_args *x = tl_event_args(r, e);
	wb_puts(w, ",\"args\":{");
	arg_num(&a, "External id", e->external_id);
	arg_num(&a, "correlation", e->correlation);
	arg_num(&a, "stream", e->stream);
	arg_num(&a, "device", e->device);
	if (x) {
		arg_num(&a, "context", x->context);
		arg_num(&a, "queued", x->queued);
		arg_num(&a, "bytes", x->bytes);
		arg_num(&a, "wait_on_stream", x->wait_on_stream);
		arg_num(&a, "wait_on_cuda_event_record_corr_id", x->wait_on_event_record_corr);
		arg_num(&a, "wait_on_cuda_event_id", x->wait_on_event_id);
		arg_num(&a, "In msg nelems", x->in_msg_nelems);
		arg_num(&a, "Out msg nelems", x->out_msg_nelems);
		arg_num(&a, "Group size", x->group_size);
		arg_str(&a, tl, "Collective name", x->collective_name);
		arg_str(&a, tl, "dtype", x->dtype);
		arg_str(&a, tl, "Process Group Name", x->pg_name);
		arg_str(&a, tl, "Process Group Description", x->pg_desc);
		arg_str(&a, tl, "Process Group Ranks", x->pg_ranks);
		arg_str(&a, tl, "In split size", x->in_split);
		arg_str(&a, tl, "Out split size", x->out_split);
		arg_dim3(&a, "grid", x->grid);
		arg_dim3(&a, "block", x->block);
	}
	wb_puts(w, "}");
}

static void put_event(struct wbuf *w, const struct timeline *tl, const struct tl_rank *r,
		      const struct tl_event *e, bool first)
{
	wb_puts(w, first ? "\n{\"ph\":\"X\",\"cat\":" : ",\n{\"ph\":\"X\",\"cat\":");
	put_str(w, tl, e->cat);
	wb_puts(w, ",\"name\":");
	put_str(w, tl, e->name);
	wb_puts(w, ",\"pid\":");
	put_id(w, tl, e->pid, e->flags & TL_EV_PID_STR);
	wb_puts(w, ",\"tid\":");
	put_id(w, tl, e->tid, e->flags & TL_EV_TID_STR);
	wb_puts(w, ",\"ts\":");
	put_us(w, e->ts_ns);
	wb_puts(w, ",\"dur\":");
	put_us(w, e->dur_ns);
	put_args(w, tl, r, e);
	wb_puts(w, "}");
}

static void put_meta(struct wbuf *w, const struct timeline *tl, const struct tl_meta *m, bool first)
{
	static const char *const names[] = {[TL_META_PROCESS_NAME] = "process_name",
					    [TL_META_THREAD_NAME] = "thread_name",
					    [TL_META_PROCESS_LABELS] = "process_labels"};
	wb_printf(w,
		  "%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
		  ",\"args\":{\"%s\":",
		  first ? "" : ",", names[m->kind], m->pid, m->tid < 0 ? 0 : m->tid,
		  m->kind == TL_META_PROCESS_LABELS ? "labels" : "name");
	put_str(w, tl, m->value);
	wb_puts(w, "}}");
}

static void put_devices(struct wbuf *w, const struct timeline *tl, const struct tl_rank *r)
{
	if (!r->ndevices)
		return;
	wb_puts(w, "\"deviceProperties\":[");
	for (uint32_t i = 0; i < r->ndevices; i++) {
		const struct tl_device *d = &r->devices[i];
		wb_printf(w, "%s\n{\"id\":%" PRId32 ",\"name\":", i ? "," : "", d->id);
		put_str(w, tl, d->name);
		wb_printf(w,
			  ",\"totalGlobalMem\":%" PRId64 ",\"computeMajor\":%" PRId32
			  ",\"computeMinor\":%" PRId32 ",\"numSms\":%" PRId32
			  ",\"warpSize\":%" PRId32 ",\"maxThreadsPerBlock\":%" PRId32
			  ",\"maxThreadsPerMultiprocessor\":%" PRId32 ",\"regsPerBlock\":%" PRId32
			  ",\"sharedMemPerBlock\":%" PRId32 "}",
			  d->total_global_mem, d->compute_major, d->compute_minor, d->num_sms,
			  d->warp_size, d->max_threads_per_block, d->max_threads_per_sm,
			  d->regs_per_block, d->shared_mem_per_block);
	}
	wb_puts(w, "],\n");
}

/*
 * The import kept only the rows before the last ProfilerStep's start (HTA's
 * step filter). Imported again without that step, the filter would cut at
 * the step before it and lose a step per round trip; so the step's start
 * goes out as a zero-length ProfilerStep event, named after the highest
 * kept one + 1: the filter cuts exactly there again, dropping only it.
 */
static void put_step_cut(struct wbuf *w, const struct timeline *tl, const struct tl_rank *r,
			 bool first)
{
	uint64_t last = 0;
	int64_t pid = 0, tid = 0;
	if (!(r->flags & TL_RANK_STEP_FILTERED) || r->step_cutoff_ns < 0)
		return;
	for (uint32_t i = 0; i < r->nev; i++) {
		const struct tl_event *e = &r->ev[i];
		if (!(e->flags & TL_EV_PROFILER_STEP))
			continue;
		const char *s = timeline_str(tl, e->name, NULL);
		uint64_t n = strtoull(s + sizeof("ProfilerStep#") - 1, NULL, 10);
		if (n >= last)
			last = n;
		if (!(e->flags & (TL_EV_PID_STR | TL_EV_TID_STR)))
			pid = e->pid, tid = e->tid;
	}
	wb_printf(w,
		  "%s\n{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%" PRIu64
		  "\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"ts\":",
		  first ? "" : ",", last + 1, pid, tid);
	put_us(w, r->step_cutoff_ns);
	wb_puts(w, ",\"dur\":0.000,\"args\":{\"gpuprof\":\"step filter cut\"}}");
}

int timeline_chrome_export(const struct timeline *tl, int32_t rank, const char *name, uint64_t id,
			   folded_write_fn fn, void *ctx, struct export_totals *t)
{
	const struct tl_rank *r;
	struct export_totals tt = {0};
	int err;

	if (rank < 0 && timeline_nranks(tl) != 1)
		return timeline_nranks(tl) ? -EDOM : -ENODATA;
	r = rank < 0 ? timeline_rank_at(tl, 0) : timeline_rank(tl, rank);
	if (!r)
		return -ENOENT;
	struct wbuf *w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	wb_init(w, fn, ctx);
	wb_printf(w, "{\"schemaVersion\":1,\"distributedInfo\":{\"rank\":%" PRId32 "},\n", r->rank);
	put_devices(w, tl, r);
	if (r->trace_name) {
		wb_puts(w, "\"traceName\":");
		put_str(w, tl, r->trace_name);
		wb_puts(w, ",\n");
	}
	if (r->base_time_ns >= 0)
		wb_printf(w, "\"baseTimeNanoseconds\":%" PRId64 ",\n", r->base_time_ns);
	wb_printf(w,
		  "\"otherData\":{\"producer\":\"gpuprof\",\"capture_id\":%" PRIu64
		  ",\"capture_name\":\"",
		  id);
	wb_json(w, name ? name : "", name ? strlen(name) : 0);
	wb_puts(w, "\"},\n\"traceEvents\":[");
	/* ev[] is in the file's order, so the events keep their relative
	 * positions (HTA's index-based links) on import */
	for (uint32_t i = 0; i < r->nev && !w->err; i++, tt.events++)
		put_event(w, tl, r, &r->ev[i], i == 0);
	for (uint32_t i = 0; i < r->nmeta && !w->err; i++) {
		const struct tl_meta *m = &r->meta[i];
		if (m->pid < 0 || m->kind < TL_META_PROCESS_NAME ||
		    m->kind > TL_META_PROCESS_LABELS)
			continue; /* a string pid: the name has nothing to attach to */
		put_meta(w, tl, m, r->nev == 0 && tt.frames == 0);
		tt.frames++;
	}
	put_step_cut(w, tl, r, tt.events + tt.frames == 0);
	wb_puts(w, "\n],\n\"displayTimeUnit\":\"ms\"}\n");
	err = wb_flush(w);
	tt.bytes = w->total;
	/* frames: metadata events (there are no stack frames) */
	if (t)
		*t = tt;
	free(w);
	return err;
}

/* ---- folded CPU stacks ------------------------------------------------ */

struct frame {
	int64_t start, end; /* end clipped to the parent's */
	int64_t child;	    /* ns covered by children */
	size_t plen;	    /* path length with this frame */
};

struct tfold {
	const struct timeline *tl;
	struct bmap paths;
	uint64_t *weight;
	size_t wcap;
	char *path;
	size_t plen, pcap;
	size_t root; /* path length of the rank;process;thread frames */
	struct frame st[TL_FOLD_MAX_DEPTH];
	int depth;
	uint64_t events;
};

static bool cpu_frame(const struct tl_event *e)
{
	/* kernels and copies without a stream (old CUPTI traces) are still
	 * GPU work, not a CPU frame */
	return !(e->flags & (TL_EV_GPU_SIDE | TL_EV_DUPLICATE)) && e->kind != TL_K_KERNEL &&
	       e->kind != TL_K_MEMCPY && e->kind != TL_K_MEMSET &&
	       e->kind != TL_K_GPU_USER_ANNOTATION && e->dur_ns > 0;
}

/* Append ";" and a frame name, with ';' and control characters (which
 * would split frames or lines) replaced. */
static int path_push(struct tfold *f, const char *s, size_t len)
{
	size_t need = f->plen + len + 2;
	if (need > f->pcap) {
		size_t nc = f->pcap ? f->pcap * 2 : 4096;
		while (nc < need)
			nc *= 2;
		char *n = realloc(f->path, nc);
		if (!n)
			return -ENOMEM;
		f->path = n;
		f->pcap = nc;
	}
	if (f->plen)
		f->path[f->plen++] = ';';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		f->path[f->plen++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
	}
	return 0;
}

static int add_weight(struct tfold *f, size_t plen, uint64_t w)
{
	bool added;
	if (!w)
		return 0;
	uint32_t id = bmap_intern(&f->paths, f->path, plen, &added);
	if (!id)
		return -ENOMEM;
	if (id > f->wcap) {
		size_t nc = f->wcap ? f->wcap * 2 : 1024;
		uint64_t *n = realloc(f->weight, nc * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + f->wcap, 0, (nc - f->wcap) * sizeof(*n));
		f->weight = n;
		f->wcap = nc;
	}
	f->weight[id - 1] = sat_add(f->weight[id - 1], w);
	return 0;
}

static int pop(struct tfold *f)
{
	struct frame *fr = &f->st[--f->depth];
	int64_t dur = fr->end - fr->start, excl = dur - fr->child;
	int r = add_weight(f, fr->plen, excl > 0 ? (uint64_t)excl : 0);
	f->plen = f->depth ? f->st[f->depth - 1].plen : f->root;
	return r;
}

/* qsort has no context argument; jobs sort on several threads at once */
static _Thread_local const struct tl_rank *sort_rank;

static int cmp_ev(const void *a, const void *b)
{
	const struct tl_event *x = &sort_rank->ev[*(const uint32_t *)a];
	const struct tl_event *y = &sort_rank->ev[*(const uint32_t *)b];
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	if (x->dur_ns != y->dur_ns) /* the enclosing event first */
		return x->dur_ns > y->dur_ns ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* "<meta name> (pid P)" / "pid P", the same for threads. */
static int push_owner(struct tfold *f, const struct tl_rank *r, const struct tl_thread *th,
		      bool thread)
{
	const struct timeline *tl = f->tl;
	bool is_str = th->flags & (thread ? TL_EV_TID_STR : TL_EV_PID_STR);
	int64_t v = thread ? th->tid : th->pid;
	const char *what = thread ? "tid" : "pid";
	size_t len = 0;
	const char *name = NULL;
	if (is_str) {
		name = timeline_str(tl, (uint32_t)v, &len);
		return path_push(f, name, len);
	}
	for (uint32_t i = 0; i < r->nmeta && !name; i++) {
		const struct tl_meta *m = &r->meta[i];
		if (m->kind == (thread ? TL_META_THREAD_NAME : TL_META_PROCESS_NAME) &&
		    m->pid == th->pid && (!thread || m->tid == th->tid) && m->value)
			name = timeline_str(tl, m->value, &len);
	}
	char *buf = malloc(len + 48);
	if (!buf)
		return -ENOMEM;
	int n = name ? snprintf(buf, len + 48, "%.*s (%s %" PRId64 ")", (int)len, name, what, v)
		     : snprintf(buf, len + 48, "%s %" PRId64, what, v);
	int err = path_push(f, buf, (size_t)n);
	free(buf);
	return err;
}

static int fold_thread(struct tfold *f, const struct tl_rank *r, const struct tl_thread *th,
		       uint32_t *pos)
{
	uint32_t n = 0;
	char buf[32];
	int err;
	for (uint32_t i = 0; i < th->count; i++) {
		uint32_t p = r->by_thread[th->first + i];
		if (cpu_frame(&r->ev[p]))
			pos[n++] = p;
	}
	if (!n)
		return 0;
	sort_rank = r;
	qsort(pos, n, sizeof(*pos), cmp_ev);
	f->plen = 0;
	int bl = snprintf(buf, sizeof(buf), "rank %" PRId32, r->rank);
	if ((err = path_push(f, buf, (size_t)bl)) < 0 || (err = push_owner(f, r, th, false)) < 0 ||
	    (err = push_owner(f, r, th, true)) < 0)
		return err;
	f->root = f->plen;
	f->depth = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct tl_event *e = &r->ev[pos[i]];
		int64_t end = e->ts_ns + e->dur_ns;
		while (f->depth && e->ts_ns >= f->st[f->depth - 1].end)
			if ((err = pop(f)) < 0)
				return err;
		if (f->depth) {
			struct frame *up = &f->st[f->depth - 1];
			if (end > up->end)
				end = up->end;
			up->child += end - e->ts_ns;
		}
		if (f->depth == TL_FOLD_MAX_DEPTH) {
			/* too deep: its time stays with its ancestor */
			f->st[f->depth - 1].child -= end - e->ts_ns;
			continue;
		}
		size_t len;
		const char *s = timeline_str(f->tl, e->name, &len);
		if ((err = path_push(f, len ? s : "[unnamed]", len ? len : 9)) < 0)
			return err;
		f->st[f->depth++] = (struct frame){.start = e->ts_ns, .end = end, .plen = f->plen};
		f->events++;
	}
	while (f->depth)
		if ((err = pop(f)) < 0)
			return err;
	return 0;
}

int timeline_folded_write(const struct timeline *tl, folded_write_fn fn, void *ctx,
			  struct folded_totals *t)
{
	struct tfold *f = calloc(1, sizeof(*f));
	struct folded_totals tt = {0};
	struct wbuf *w = NULL;
	uint32_t *pos = NULL;
	int err = -ENOMEM;
	if (!f)
		return -ENOMEM;
	f->tl = tl;
	bmap_init(&f->paths);
	for (uint32_t k = 0; k < timeline_nranks(tl); k++) {
		const struct tl_rank *r = timeline_rank_at(tl, k);
		free(pos);
		pos = malloc(((size_t)r->nev + 1) * sizeof(*pos));
		if (!pos)
			goto out;
		for (uint32_t i = 0; i < r->nthreads; i++)
			if ((err = fold_thread(f, r, &r->threads[i], pos)) < 0)
				goto out;
	}
	err = -ENODATA;
	if (!f->paths.n)
		goto out;
	err = -ENOMEM;
	if (!(w = malloc(sizeof(*w))))
		goto out;
	wb_init(w, fn, ctx);
	for (uint32_t id = 1; id <= f->paths.n && !w->err; id++) {
		size_t len;
		const char *k = bmap_key(&f->paths, id, &len);
		wb_put(w, k, len);
		wb_printf(w, " %" PRIu64 "\n", f->weight[id - 1]);
		tt.stacks++;
		tt.weight = sat_add(tt.weight, f->weight[id - 1]);
	}
	err = wb_flush(w);
	tt.samples = f->events;
out:
	if (t)
		*t = tt;
	free(w);
	free(pos);
	free(f->path);
	free(f->weight);
	bmap_finish(&f->paths);
	free(f);
	return err;
}
