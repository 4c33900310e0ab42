// SPDX-License-Identifier: MIT
/*
 * Host path of the batch-buffer parser (cs.h, docs/gpu-cs.md): registered
 * copies of GPU memory, the parser of bpf/gpu_cs_parse.h over them, the bounded
 * retry list, and the feed of kernel start pointers into the xe kernel
 * table. The dump loader is in cs_load.c.
 */
#include "cs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_cs_parse.h"
#include "xe.h"

#define COMM_LEN 16

struct cs_buf {
	uint32_t asid;
	uint64_t gpu, len, seq;
	uint8_t *data;
};

struct cs_wait {
	struct xe_cs_submit s;
	char comm[COMM_LEN];
	uint32_t attempts;
};

/* A start pointer already in the kernel table, with the size it got. */
struct cs_ksp {
	uint32_t pid;
	uint64_t iba, addr, size;
	const char *name; /* static string or NULL */
};

struct xe_cs {
	struct xe_cs_config cfg;
	struct cs_buf *b;
	uint32_t nb;
	uint64_t bytes, seq;
	struct cs_wait *w;
	uint32_t nw;
	struct cs_ksp *k;
	uint32_t nk;
	struct gpu_cs *st; /* one parse at a time (loop thread) */
	struct xe_cs_stats stats;
	const char *path; /* xe_cs_set_path(); NULL: xe_cs_path() */
	char why[200];
};

struct cs_reader {
	const struct xe_cs *cs;
	uint32_t asid;
};

/* gpu_cs_parse.h's memory access: the registered buffer holding gpu_addr. */
static __gpu_cs_inline int gpu_cs_read(void *rctx, __u64 gpu_addr, __u32 *dst, __u32 max_dw)
{
	const struct cs_reader *r = rctx;

	for (uint32_t i = 0; i < r->cs->nb; i++) {
		const struct cs_buf *b = &r->cs->b[i];
		uint64_t off = gpu_addr - b->gpu, n;

		if (b->asid != r->asid || gpu_addr < b->gpu || off >= b->len)
			continue;
		n = (b->len - off) / 4;
		if (n > max_dw)
			n = max_dw;
		memcpy(dst, b->data + off, n * 4);
		return (int)n;
	}
	return -EFAULT;
}

int xe_cs_new(const struct xe_cs_config *cfg, struct xe_cs **ret)
{
	struct xe_cs *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return -ENOMEM;
	if (cfg)
		cs->cfg = *cfg;
	if (!cs->cfg.max_buffers)
		cs->cfg.max_buffers = 256;
	if (!cs->cfg.max_bytes)
		cs->cfg.max_bytes = 64ull << 20;
	if (!cs->cfg.max_retry)
		cs->cfg.max_retry = 64;
	if (!cs->cfg.max_attempts)
		cs->cfg.max_attempts = 5;
	if (!cs->cfg.max_ksps)
		cs->cfg.max_ksps = 4096;
	cs->b = calloc(cs->cfg.max_buffers, sizeof(*cs->b));
	cs->w = calloc(cs->cfg.max_retry, sizeof(*cs->w));
	cs->k = calloc(cs->cfg.max_ksps, sizeof(*cs->k));
	cs->st = calloc(1, sizeof(*cs->st));
	if (!cs->b || !cs->w || !cs->k || !cs->st) {
		xe_cs_free(cs);
		return -ENOMEM;
	}
	*ret = cs;
	return 0;
}

void xe_cs_free(struct xe_cs *cs)
{
	if (!cs)
		return;
	for (uint32_t i = 0; cs->b && i < cs->nb; i++)
		free(cs->b[i].data);
	free(cs->b);
	free(cs->w);
	free(cs->k);
	free(cs->st);
	free(cs);
}

static void buf_remove(struct xe_cs *cs, uint32_t i)
{
	cs->bytes -= cs->b[i].len;
	free(cs->b[i].data);
	cs->b[i] = cs->b[--cs->nb];
}

static int kcmp(const struct cs_ksp *a, uint32_t pid, uint64_t iba, uint64_t addr)
{
	if (a->pid != pid)
		return a->pid < pid ? -1 : 1;
	if (a->iba != iba)
		return a->iba < iba ? -1 : 1;
	if (a->addr != addr)
		return a->addr < addr ? -1 : 1;
	return 0;
}

/* First entry >= (pid, iba, addr). */
static uint32_t klower(const struct xe_cs *cs, uint32_t pid, uint64_t iba, uint64_t addr)
{
	uint32_t lo = 0, hi = cs->nk;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (kcmp(&cs->k[mid], pid, iba, addr) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void ktab(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s, uint64_t addr,
		 uint64_t size, uint64_t iba, const char *name)
{
	int r = xe_ktab_add(x, &(struct xe_kernel_info){
				       .gpu_addr = addr,
				       .size = size,
				       .iba = iba,
				       .pid = s->pid,
				       .uid = s->uid,
				       .name = name,
				       .comm = s->comm,
				       .weak = true, /* launch probes' names win */
			       });

	if (r < 0)
		cs->stats.ktab_refused++;
	else
		cs->stats.ktab_added++;
}

/*
 * A start pointer found by a parse. Kernels of one ISA heap are packed, so
 * its size is the gap to the next known start of the same (pid, IBA),
 * at most XE_KERNEL_DEFAULT_SIZE; the previous one shrinks to fit, so
 * neighbours never take each other's range in the kernel table.
 */
static void add_ksp(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s, uint64_t addr,
		    uint64_t iba, const char *name)
{
	uint32_t pos = klower(cs, s->pid, iba, addr);
	uint64_t size = XE_KERNEL_DEFAULT_SIZE;

	if (pos < cs->nk && !kcmp(&cs->k[pos], s->pid, iba, addr))
		return; /* in the table already */
	if (pos < cs->nk && cs->k[pos].pid == s->pid && cs->k[pos].iba == iba &&
	    cs->k[pos].addr - addr < size)
		size = cs->k[pos].addr - addr;
	if (pos && cs->k[pos - 1].pid == s->pid && cs->k[pos - 1].iba == iba &&
	    cs->k[pos - 1].addr + cs->k[pos - 1].size > addr) {
		cs->k[pos - 1].size = addr - cs->k[pos - 1].addr;
		ktab(cs, x, s, cs->k[pos - 1].addr, cs->k[pos - 1].size, iba, cs->k[pos - 1].name);
	}
	if (addr + size > XE_VA_MASK + 1)
		size = XE_VA_MASK + 1 - addr;
	ktab(cs, x, s, addr, size, iba, name);
	if (cs->nk == cs->cfg.max_ksps)
		return; /* remembered no more: later neighbours may overlap it */
	memmove(&cs->k[pos + 1], &cs->k[pos], (cs->nk - pos) * sizeof(*cs->k));
	cs->k[pos] =
		(struct cs_ksp){.pid = s->pid, .iba = iba, .addr = addr, .size = size, .name = name};
	cs->nk++;
}

static void feed(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s,
		 const struct gpu_cs_result *r)
{
	cs->stats.ksps += r->nksp;
	cs->stats.sips += r->has_sip;
	if (!x)
		return;
	for (uint32_t i = 0; i < r->nksp; i++)
		add_ksp(cs, x, s, r->ksp[i].addr, r->ksp[i].iba, NULL);
	if (r->has_sip) /* iaprof's name for it */
		add_ksp(cs, x, s, r->sip, r->sip_iba, "System Routine (Exceptions)");
}

static uint32_t parse(struct xe_cs *cs, uint32_t asid, uint64_t batch)
{
	struct cs_reader rd = {cs, asid};

	gpu_cs_begin(cs->st, batch);
	for (uint32_t i = 0; i < GPU_CS_MAX_COMMANDS; i++)
		if (gpu_cs_step(cs->st, &rd))
			break;
	gpu_cs_finish(cs->st);
	cs->stats.status[cs->st->r.status % GPU_CS_NSTATUS]++;
	return cs->st->r.status;
}

static void wait_remove(struct xe_cs *cs, uint32_t i)
{
	memmove(&cs->w[i], &cs->w[i + 1], (cs->nw - i - 1) * sizeof(*cs->w));
	cs->nw--;
	cs->stats.retry_now = cs->nw;
}

static void wait_add(struct xe_cs *cs, const struct xe_cs_submit *s)
{
	struct cs_wait *w;

	for (uint32_t i = 0; i < cs->nw; i++)
		if (cs->w[i].s.asid == s->asid && cs->w[i].s.batch == s->batch &&
		    cs->w[i].s.pid == s->pid)
			return;
	if (cs->nw == cs->cfg.max_retry) { /* the oldest gives way */
		wait_remove(cs, 0);
		cs->stats.retry_dropped++;
	}
	w = &cs->w[cs->nw++];
	w->s = *s;
	w->attempts = 1;
	w->comm[0] = 0;
	if (s->comm)
		snprintf(w->comm, sizeof(w->comm), "%s", s->comm);
	w->s.comm = NULL; /* set from w->comm on use: the array moves */
	cs->stats.retry_now = cs->nw;
}

/* Parse waiting submissions (of asid, or all with any_asid). */
static void retry(struct xe_cs *cs, struct xe *x, uint32_t asid, int any_asid, int attempt)
{
	for (uint32_t i = 0; i < cs->nw;) {
		struct cs_wait *w = &cs->w[i];
		struct xe_cs_submit s = w->s;

		if (!any_asid && s.asid != asid) {
			i++;
			continue;
		}
		s.comm = w->comm[0] ? w->comm : NULL;
		if (parse(cs, s.asid, s.batch) != GPU_CS_RETRY) {
			feed(cs, x, &s, &cs->st->r);
			cs->stats.retry_ok++;
			wait_remove(cs, i);
		} else if (attempt && ++w->attempts >= cs->cfg.max_attempts) {
			cs->stats.retry_given_up++;
			wait_remove(cs, i);
		} else {
			i++;
		}
	}
}

int xe_cs_add_buffer(struct xe_cs *cs, struct xe *x, uint32_t asid, uint64_t gpu_addr,
		     const void *data, size_t len)
{
	uint8_t *copy;

	if (!len || (gpu_addr & 3) || gpu_addr > XE_VA_MASK || len > XE_VA_MASK + 1 - gpu_addr ||
	    len > cs->cfg.max_bytes)
		return -EINVAL;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	for (uint32_t i = 0; i < cs->nb;) {
		const struct cs_buf *b = &cs->b[i];

		if (b->asid == asid && b->gpu < gpu_addr + len && gpu_addr < b->gpu + b->len)
			buf_remove(cs, i);
		else
			i++;
	}
	while (cs->nb && (cs->nb == cs->cfg.max_buffers || cs->bytes + len > cs->cfg.max_bytes)) {
		uint32_t old = 0;

		for (uint32_t i = 1; i < cs->nb; i++)
			if (cs->b[i].seq < cs->b[old].seq)
				old = i;
		buf_remove(cs, old);
		cs->stats.buffers_evicted++;
	}
	cs->b[cs->nb++] = (struct cs_buf){.asid = asid,
					  .gpu = gpu_addr,
					  .len = len,
					  .seq = ++cs->seq,
					  .data = copy};
	cs->bytes += len;
	retry(cs, x, asid, 0, 0);
	return 0;
}

int xe_cs_submit(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s,
		 struct gpu_cs_result *out)
{
	uint32_t st;

	cs->stats.submits++;
	st = parse(cs, s->asid, s->batch);
	if (out)
		*out = cs->st->r;
	if (st == GPU_CS_RETRY)
		wait_add(cs, s);
	else
		feed(cs, x, s, &cs->st->r);
	return (int)st;
}

void xe_cs_feed_result(struct xe_cs *cs, struct xe *x, const struct xe_cs_submit *s,
		       const struct gpu_cs_result *r, uint32_t attempt, bool final)
{
	cs->stats.status[r->status % GPU_CS_NSTATUS]++;
	if (attempt <= 1)
		cs->stats.submits++;
	if (r->status != GPU_CS_RETRY) {
		feed(cs, x, s, r);
		if (attempt > 1)
			cs->stats.retry_ok++;
	} else if (final && attempt > 1) {
		cs->stats.retry_given_up++;
	}
}

void xe_cs_set_path(struct xe_cs *cs, const char *path, const char *why)
{
	cs->path = path;
	snprintf(cs->why, sizeof(cs->why), "%s", why ? why : "");
}

void xe_cs_retry(struct xe_cs *cs, struct xe *x)
{
	retry(cs, x, 0, 1, 1);
}

void xe_cs_get_stats(const struct xe_cs *cs, struct xe_cs_stats *st)
{
	*st = cs->stats;
	st->buffers = cs->nb;
	st->bytes = cs->bytes;
	st->retry_now = cs->nw;
}

const char *xe_cs_status_name(uint32_t status)
{
	static const char *const names[GPU_CS_NSTATUS] = {
		"running", "done", "truncated", "loop", "limit", "depth", "retry", "invalid",
	};

	return status < GPU_CS_NSTATUS ? names[status] : "unknown";
}

const char *xe_cs_path(char *why, size_t whylen)
{
	int have_xe = access("/sys/module/xe", F_OK) == 0;
	int have_i915 = access("/sys/module/i915", F_OK) == 0;

	if (!have_xe && !have_i915)
		snprintf(why, whylen,
			 "no xe or i915 driver loaded: batch buffers are parsed "
			 "only from dumps given to the daemon");
	else
		snprintf(why, whylen,
			 "%s driver loaded, but the submission hook is not "
			 "attached: batch buffers are parsed only from dumps",
			 have_xe ? "xe" : "i915");
	return "host";
}

void xe_cs_status(const struct xe_cs *cs, cJSON *o)
{
	struct xe_cs_stats st;
	char why[200];
	cJSON *b = cJSON_AddObjectToObject(o, "batch_parser"), *ends;

	if (!b)
		return;
	if (cs && cs->path) {
		cJSON_AddStringToObject(b, "path", cs->path);
		cJSON_AddStringToObject(b, "reason", cs->why);
	} else {
		cJSON_AddStringToObject(b, "path", xe_cs_path(why, sizeof(why)));
		cJSON_AddStringToObject(b, "reason", why);
	}
	if (!cs)
		return;
	xe_cs_get_stats(cs, &st);
	cJSON_AddNumberToObject(b, "submits", (double)st.submits);
	ends = cJSON_AddObjectToObject(b, "ends");
	for (uint32_t i = 1; ends && i < GPU_CS_NSTATUS; i++)
		cJSON_AddNumberToObject(ends, xe_cs_status_name(i), (double)st.status[i]);
	cJSON_AddNumberToObject(b, "ksps", (double)st.ksps);
	cJSON_AddNumberToObject(b, "sips", (double)st.sips);
	cJSON_AddNumberToObject(b, "kernels_added", (double)st.ktab_added);
	cJSON_AddNumberToObject(b, "kernels_refused", (double)st.ktab_refused);
	cJSON_AddNumberToObject(b, "retry_waiting", (double)st.retry_now);
	cJSON_AddNumberToObject(b, "retry_ok", (double)st.retry_ok);
	cJSON_AddNumberToObject(b, "retry_given_up", (double)st.retry_given_up);
	cJSON_AddNumberToObject(b, "retry_dropped", (double)st.retry_dropped);
	cJSON_AddNumberToObject(b, "buffers", (double)st.buffers);
	cJSON_AddNumberToObject(b, "bytes", (double)st.bytes);
	cJSON_AddNumberToObject(b, "buffers_evicted", (double)st.buffers_evicted);
}
