// SPDX-License-Identifier: MIT
/*
 * GPU launch collector: ring-buffer records (gpu_launch_int.h). Launch
 * records become STORE_REC_GPU_LAUNCH (gpu_launch_abi.h has the field
 * convention); their stacks are trimmed to start at the call site, outside
 * the runtime's own frames. With gpu.stack_sample N > 1 the BPF side takes
 * the stack of 1 launch in N per call site; the others get the stack last
 * seen there (gpu_sites.h). A stack taken is either a copy of the registers
 * and the top of the user stack, unwound here by CFI (unwind/unwind.h), or
 * frame pointers walked in BPF when copying is off. Each launch's cgroup id
 * becomes its cgroup path through a bounded cache (cgpath.h). Process
 * records go to gpu_launch_proc.c.
 */
#include "gpu_launch_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "gpu_launch_abi.h"
#include "gpd.h"
#include "gpu_launch.skel.h"
#include "store/store.h"
#include "pyframes/pyreg.h"
#include "unwind/unwind.h"

/* Room for a stack before the runtime's frames are trimmed: the frames
 * unwound or walked with Python ones spliced in, the call site put back,
 * and the [truncated] mark. */
#define GL_STACK_MAX (STORE_MAX_FRAMES + 1)

static bool in_runtime(const struct gl_proc *pr, uint64_t ip)
{
	for (unsigned i = 0; i < pr->nranges; i++)
		if (ip >= pr->ranges[i].lo && ip < pr->ranges[i].hi)
			return true;
	return false;
}

static uint32_t intern_name(struct store *s, const struct gpu_launch_rec *r)
{
	char buf[GPU_LAUNCH_NAME_LEN + 96];
	size_t len;
	int n;

	if (r->flags & GPU_LAUNCH_F_NAME) {
		len = strnlen(r->name, sizeof(r->name));
		memcpy(buf, r->name, len);
	} else {
		len = (size_t)snprintf(buf, sizeof(buf), "0x%" PRIx64,
				       (uint64_t)(r->handle ? r->handle : r->gpu_addr));
	}
	if (r->flags & (GPU_LAUNCH_F_GRID | GPU_LAUNCH_F_BLOCK)) {
		buf[len++] = '\0';
		n = 0;
		if (r->flags & GPU_LAUNCH_F_GRID)
			n = snprintf(buf + len, sizeof(buf) - len, "grid=%u,%u,%u", r->grid[0],
				     r->grid[1], r->grid[2]);
		if (r->flags & GPU_LAUNCH_F_BLOCK)
			n += snprintf(buf + len + n, sizeof(buf) - len - (size_t)n,
				      "%sblock=%u,%u,%u", n ? " " : "", r->block[0], r->block[1],
				      r->block[2]);
		len += (size_t)n;
	}
	return store_str_intern(s, buf, len);
}

/* A launch that located its kernel in GPU memory (NEO's USDT): tell the
 * kernel hook (the EU-stall kernel table), with the trimmed stack. */
static void report_kernel(struct gl_priv *p, const struct gpu_launch_rec *r, const uint64_t *ips,
			  uint16_t nips, uint32_t cgroup)
{
	char name[GPU_LAUNCH_NAME_LEN + 1], comm[GPU_LAUNCH_COMM_LEN + 1], cg[4096];
	size_t len = 0;
	const char *cgs = cgroup ? store_str(p->c->gpd->store, cgroup, &len) : NULL;

	if (cgs && len < sizeof(cg)) {
		memcpy(cg, cgs, len);
		cg[len] = '\0';
	} else {
		cgs = NULL;
	}
	len = strnlen(r->name, sizeof(r->name));

	memcpy(name, r->name, len);
	name[len] = '\0';
	len = strnlen(r->comm, sizeof(r->comm));
	memcpy(comm, r->comm, len);
	comm[len] = '\0';
	struct gpu_launch_kernel k = {
		.gpu_addr = r->gpu_addr,
		.size = r->isa_size,
		.iba = r->iba,
		.pid = r->pid,
		.uid = r->uid,
		.name = (r->flags & GPU_LAUNCH_F_NAME) && name[0] ? name : NULL,
		.comm = comm,
		.cgroup = cgs ? cg : NULL,
		.ustack = nips ? ips : NULL,
		.nustack = nips,
	};

	p->kernel_hook(p->kernel_hook_arg, &k);
}

/*
 * The launch's user stack, leaf first (ips[0] the probed instruction), into
 * ips (GL_STACK_MAX): unwound from the stack copy when BPF sent one, else
 * the frames BPF walked. The copy is only read here, and the ring slot
 * holding it is released when the callback returns: its bytes go nowhere.
 */
static unsigned user_stack(struct gl_priv *p, const struct gpu_launch_rec *r, size_t size,
			   uint64_t *ips)
{
	size_t pyoff = GPU_LAUNCH_HDR_BYTES + (size_t)r->nuser * sizeof(uint64_t);
	size_t off = pyoff + (size_t)r->npy * PYSTACK_NODE_BYTES;
	struct pyreg_sample smp = {
		.pid = r->pid,
		.us = &r->us,
		.stack = (const uint8_t *)r + off,
		.stack_avail = size - off,
		.ips = (const uint64_t *)r->ips,
		.nips = r->nuser,
		.nodes = (const uint8_t *)r + pyoff,
		.nnodes = r->npy,
		.pyflags = r->pyflags,
	};
	bool fp;
	unsigned n = pyreg_user_stack(p->c->gpd->pyreg, p->c->gpd->unwinder, &smp, ips,
				      GL_STACK_MAX - 1, &fp);

	p->stacks_fp_fallback += fp;
	return n;
}

static void on_launch(struct gl_priv *p, const struct gpu_launch_rec *r, size_t size)
{
	struct store *s = p->c->gpd->store;
	uint64_t ips[GL_STACK_MAX];
	struct gl_proc *pr;
	unsigned n = 0, skip = 0;
	uint32_t comm, stack, name, cgroup;
	struct store_rec rec;

	if (r->nuser > GPU_LAUNCH_MAX_FRAMES || r->npy > PYSTACK_MAX_NODES ||
	    size < GPU_LAUNCH_HDR_BYTES + (size_t)r->nuser * sizeof(uint64_t) +
			    (size_t)r->npy * PYSTACK_NODE_BYTES) {
		p->local_drops++;
		return;
	}
	pr = gl_proc_find(p, r->pid);
	pyreg_note_pid(p->c->gpd->pyreg, r->pid, false);
	if (r->flags & GPU_LAUNCH_F_NOSTACK) {
		stack = gpu_sites_get(&p->sites, s, r->pid, r->tid, r->handle, r->caller);
		if (!stack) {
			/* Nothing remembered (a record lost, a slot reused):
			 * the call site alone, and the next launch there takes
			 * a full stack again. */
			struct gpu_site_key k = {.tid = r->tid,
						 .handle = r->handle,
						 .caller = r->caller};

			bpf_map__delete_elem(p->skel->maps.sites, &k, sizeof(k), 0);
			ips[0] = r->caller;
			stack = store_stack_intern(s, ips, 1, 0);
		}
		goto append;
	}
	p->sites.taken++;
	n = user_stack(p, r, size, ips);
	/* At an entry probe the call site is the return address at the
	 * stack pointer. CFI finds it (the entry row says CFA = sp + 8);
	 * frame pointers from the first instruction skip it on kernels or
	 * functions the kernel's fix-up misses, and so does the unwinder's
	 * frame-pointer fallback in a library without CFI. */
	if (r->caller && n >= 1 && (n < 2 || ips[1] != r->caller)) {
		memmove(&ips[2], &ips[1], (n - 1) * sizeof(uint64_t));
		ips[1] = r->caller;
		n++;
		p->callers_inserted++;
	}
	if (n > GL_STACK_MAX - 1) { /* still says it was cut */
		n = GL_STACK_MAX - 1;
		ips[n - 1] = UNWIND_IP_TRUNCATED;
	}
	while (pr && skip < n && in_runtime(pr, ips[skip]))
		skip++;
	if (!skip && n)
		skip = 1; /* at least the probed entry point itself */
	stack = n > skip ? store_stack_intern(s, ips + skip, (uint16_t)(n - skip), 0) : 0;
	if (stack && p->stack_sample > 1 && r->caller)
		gpu_sites_put(&p->sites, s, r->pid, r->tid, r->handle, r->caller, stack);
append:
	/* A cache hit costs one look-up; unknown is not a drop. */
	cgroup = cgpath_get(&p->cg, s, r->cgroup_id, r->pid, r->ts_ns);
	if (r->gpu_addr && p->kernel_hook)
		report_kernel(p, r, ips + skip, n > skip ? (uint16_t)(n - skip) : 0, cgroup);
	if (pr && !pr->launched) {
		pr->launched = true;
		collector_pid_hook_call(&p->pid_hook, r->pid, false);
	}
	comm = store_str_intern(s, r->comm, strnlen(r->comm, sizeof(r->comm)));
	name = intern_name(s, r);
	if (!comm || !name || (n > skip && !stack) ||
	    ((r->flags & GPU_LAUNCH_F_NOSTACK) && !stack)) {
		if (comm)
			store_str_unref(s, comm);
		if (name)
			store_str_unref(s, name);
		if (stack)
			store_stack_unref(s, stack);
		if (cgroup)
			store_str_unref(s, cgroup);
		p->local_drops++;
		return;
	}
	rec = (struct store_rec){
		.ts_ns = r->ts_ns,
		.cgroup = cgroup,
		.pid = r->pid,
		.tid = r->tid,
		.uid = r->uid,
		.comm = comm,
		.stack = stack,
		.name = name,
		.type = STORE_REC_GPU_LAUNCH,
		.cpu = r->cpu,
		.aux32 = r->api,
		.aux = {r->queue, r->correlation},
	};
	store_append(s, &rec);
	p->c->events++;
}

void gl_read_counters(struct gl_priv *p)
{
	if (!p->skel || !p->percpu)
		return;
	rbloop_percpu_sum(p->skel->maps.counters, 0, p->percpu, p->ncpus, &p->lost);
	rbloop_percpu_sum(p->skel->maps.counters, 1, p->percpu, p->ncpus, &p->unnamed);
	p->c->drops = p->lost + p->local_drops;
}

int gl_on_event(void *ctx, void *data, size_t size)
{
	struct gl_priv *p = ctx;
	const uint16_t *hdr = data;

	if (size < 4 || hdr[1] != GPU_LAUNCH_REC_VERSION)
		p->local_drops++;
	else if (hdr[0] == GPU_LAUNCH_REC_TYPE && size >= GPU_LAUNCH_HDR_BYTES)
		on_launch(p, data, size);
	else if (hdr[0] == GPU_PROC_REC_TYPE && size >= sizeof(struct gpu_proc_rec))
		gl_on_proc(p, data);
	else if (hdr[0] == GPU_ZEBIN_REC_TYPE && size >= sizeof(struct gpu_zebin_rec))
		gl_on_zebin(p, data);
	else
		p->local_drops++;
	p->c->drops = p->lost + p->local_drops;
	return rbloop_took(&p->rbl);
}
