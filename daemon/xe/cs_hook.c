// SPDX-License-Identifier: MIT
/* The xe submission hook's userspace side (cs_hook.h). */
#include "cs_hook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cs.h"
#include "gpu_submit.skel.h"

struct xe_cs_hook {
	struct gpu_submit_bpf *skel;
	struct ring_buffer *rb;
	struct xe_cs *cs; /* during xe_cs_hook_consume() */
	struct xe *x;
	int ncpus;
	void (*observe)(void *arg, const struct gpu_submit_event *ev);
	void *observe_arg;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct xe_cs_hook *h = ctx;
	const struct gpu_submit_event *ev = data;
	char comm[sizeof(ev->comm) + 1];

	if (len < sizeof(*ev))
		return 0;
	if (h->observe)
		h->observe(h->observe_arg, ev);
	memcpy(comm, ev->comm, sizeof(ev->comm));
	comm[sizeof(ev->comm)] = '\0';
	/* the address space: one process's VM on one DRM fd (gpu_submit_abi.h) */
	xe_cs_feed_result(h->cs, h->x,
			  &(struct xe_cs_submit){.asid = ev->pid,
						 .pid = ev->pid,
						 .uid = ev->uid,
						 .batch = ev->batch,
						 .comm = comm},
			  &ev->r, ev->attempt, ev->final);
	return 0;
}

void xe_cs_hook_free(struct xe_cs_hook *h)
{
	if (!h)
		return;
	ring_buffer__free(h->rb);
	gpu_submit_bpf__destroy(h->skel);
	free(h);
}

int xe_cs_hook_open(const struct xe_cs_hook_opts *o, struct xe_cs_hook **ret, char *why,
		    size_t whylen)
{
	struct xe_cs_hook *h = calloc(1, sizeof(*h));
	uint32_t rb = o && o->ringbuf_bytes ? o->ringbuf_bytes : 1u << 20;
	const char *step = "open";
	int r;

	if (!h)
		return -ENOMEM;
	if (rb < (64u << 10) || (rb & (rb - 1))) {
		snprintf(why, whylen, "ring buffer size %u: not a power of two >= 64 KiB", rb);
		free(h);
		return -EINVAL;
	}
	h->ncpus = libbpf_num_possible_cpus();
	h->skel = gpu_submit_bpf__open();
	if (!h->skel) {
		r = -errno;
		goto fail;
	}
	if (o) {
		h->skel->rodata->target_tgid = o->target_tgid;
		h->skel->rodata->accept_failed = o->accept_failed;
	}
	step = "ring buffer size";
	if ((r = bpf_map__set_max_entries(h->skel->maps.events, rb)) < 0)
		goto fail;
	step = "load (the verifier, or no raw_tp / bpf_loop on this kernel)";
	if ((r = gpu_submit_bpf__load(h->skel)) < 0)
		goto fail;
	step = "attach to raw_tp sys_enter / sys_exit";
	if ((r = gpu_submit_bpf__attach(h->skel)) < 0)
		goto fail;
	step = "ring buffer";
	h->rb = ring_buffer__new(bpf_map__fd(h->skel->maps.events), on_event, h, NULL);
	if (!h->rb) {
		r = -errno;
		goto fail;
	}
	*ret = h;
	return 0;
fail:
	if (r >= 0)
		r = -EINVAL;
	snprintf(why, whylen, "submission hook: %s: %s", step, strerror(-r));
	xe_cs_hook_free(h);
	return r;
}

int xe_cs_hook_fd(const struct xe_cs_hook *h)
{
	return ring_buffer__epoll_fd(h->rb);
}

int xe_cs_hook_consume(struct xe_cs_hook *h, struct xe_cs *cs, struct xe *x)
{
	int n;

	h->cs = cs;
	h->x = x;
	n = ring_buffer__consume(h->rb);
	h->cs = NULL;
	h->x = NULL;
	return n;
}

void xe_cs_hook_observe(struct xe_cs_hook *h,
			void (*fn)(void *arg, const struct gpu_submit_event *ev), void *arg)
{
	h->observe = fn;
	h->observe_arg = arg;
}

void xe_cs_hook_counters(const struct xe_cs_hook *h, uint64_t out[GPU_SUBMIT_NCOUNTERS])
{
	uint64_t *v = calloc((size_t)(h->ncpus > 0 ? h->ncpus : 1), sizeof(*v));
	int fd = bpf_map__fd(h->skel->maps.counters);

	for (uint32_t k = 0; k < GPU_SUBMIT_NCOUNTERS; k++) {
		out[k] = 0;
		if (v && bpf_map_lookup_elem(fd, &k, v) == 0)
			for (int c = 0; c < h->ncpus; c++)
				out[k] += v[c];
	}
	free(v);
}
