// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/*
 * The xe / i915 submission hook (docs/gpu-cs.md, "Paths"): the batch-buffer
 * parser of gpu_cs_parse.h run in BPF on every xe exec and i915 execbuffer,
 * reading the batch from the submitting process at the moment it submits
 * (runtimes reuse command buffers, so a later read could see the next
 * batch).
 *
 * Attached to the raw syscall tracepoints (raw_tp sys_enter / sys_exit),
 * not to xe_exec_ioctl: they need no module BTF, no kprobes and no fentry,
 * and they see the user-space ioctl arguments the driver will copy in.
 * From the xe uAPI (xe_drm.h) it rebuilds, per (process, DRM
 * fd), where each GPU VA range lives in the process:
 *   VM_BIND MAP_USERPTR  gpu range -> user address (the op's userptr)
 *   VM_BIND MAP          gpu range -> (BO handle, offset in the BO)
 *   GEM_MMAP_OFFSET      (exit) fake offset -> BO handle
 *   mmap(fd, offset)     (exit) BO handle -> user address of its mapping
 *   VM_BIND UNMAP        forgets the range
 * and for i915 (i915_drm.h) GEM_USERPTR / GEM_MMAP / GEM_MMAP_OFFSET + mmap give
 * the objects' user memory, EXECBUFFER2's exec objects their GPU VA
 * (softpin). At EXEC (one batch buffer) / EXECBUFFER2 it parses from the
 * batch address, reading with bpf_probe_read_user() through those ranges,
 * and sends the result
 * (struct gpu_submit_event) to userspace, which feeds the xe kernel table
 * the way the host path does (daemon/xe/cs_hook.c).
 *
 * Cost on every other syscall: the programs return after one compare of the
 * syscall number, but the syscall tracepoints put every syscall on the
 * kernel's slow path (bench/gpucs/bench_submit_hook: +130 ns here).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpu_cs_parse.h"
#include "gpu_cs_user.bpf.h"
#include "gpu_submit_abi.h"
#include "owner.bpf.h"

/* bpf_probe_read_user() is gpl_only. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

#if defined(__TARGET_ARCH_x86)
#define NR_IOCTL 16
#define NR_MMAP 9
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#define SYSCALL_ARG6(regs) BPF_CORE_READ(regs, r9) /* libbpf 1.1 has no PARM6 */
#elif defined(__TARGET_ARCH_arm64)
#define NR_IOCTL 29
#define NR_MMAP 222
#define SYSCALL_NR(regs) BPF_CORE_READ((struct user_pt_regs *)(regs), regs[8])
#define SYSCALL_ARG6(regs) BPF_CORE_READ((struct user_pt_regs *)(regs), regs[5])
#else
#error "gpu_submit.bpf.c: syscall numbers for this architecture"
#endif

/* Load-time knobs, set between open and load. */
const volatile __u32 target_tgid = 0; /* 0: every process */
/* Treat failed ioctls as if they had succeeded. For tests on machines
 * without a DRM driver, where the xe ioctls fail with ENOTTY but the
 * tracepoints still see their arguments. Never set by the daemon. */
const volatile __u8 accept_failed = 0;

enum {
	PEND_MMAP_OFFSET = 1,
	PEND_MMAP = 2,
	PEND_I915_MMAP_OFFSET,
	PEND_I915_MMAP,
	PEND_I915_USERPTR
};

struct pend {
	__u32 what;
	__s32 fd;
	__u64 arg; /* MMAP_OFFSET: the user struct; MMAP: the BO handle */
	__u64 len;
};

struct okey {
	__u32 tgid;
	__s32 fd;
	__u64 off;
};

struct bokey {
	__u32 tgid;
	__s32 fd;
	__u32 handle;
	__u32 pad;
};

struct boval {
	__u64 cpu, len;
};

struct job {
	struct gpu_cs cs;
	__u32 tgid;
	__s32 fd;
	struct gpu_submit_bind op; /* the VM_BIND op being indexed */
	__u64 b0;		   /* its first bucket */
};

/* LRU: a thread killed inside the syscall never reaches its exit. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct pend);
} pend SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct okey);
	__type(value, __u32);
} offs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct bokey);
	__type(value, struct boval);
} bos SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct gpu_submit_bkey);
	__type(value, struct gpu_submit_bucket);
} binds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct job);
} jobs SEC(".maps");

/* The submission of a process waiting for its memory (GPU_SUBMIT_MAX_ATTEMPTS). */
struct deferred {
	__u64 batch;
	__s32 fd;
	__u32 driver, queue, nbb, attempts;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* tgid */
	__type(value, struct deferred);
} deferred SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GPU_SUBMIT_NCOUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by userspace before load */
} events SEC(".maps");

static __always_inline void count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

static __always_inline struct job *job_get(void)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(&jobs, &k);
}

/* gpu_cs_parse.h's memory access: the binding holding gpu_addr, then the
 * submitting process's memory behind it. */
static __always_inline int gpu_cs_read(void *rctx, __u64 addr, __u32 *dst, __u32 max_dw)
{
	struct job *j = rctx;
	struct gpu_submit_bkey k = {j->tgid, j->fd, addr >> GPU_SUBMIT_BUCKET_SHIFT};
	struct gpu_submit_bucket *b = bpf_map_lookup_elem(&binds, &k);

	if (!b)
		return -14; /* EFAULT: nothing bound there (yet) */
	for (__u32 i = 0; i < GPU_SUBMIT_BINDS; i++) {
		struct gpu_submit_bind *x = &b->b[i];
		__u64 off, user, avail;
		int n;

		if (x->kind == GPU_SUBMIT_BIND_NONE || addr < x->gpu || addr - x->gpu >= x->len)
			continue;
		off = addr - x->gpu;
		avail = x->len - off;
		if (x->kind == GPU_SUBMIT_BIND_USERPTR) {
			user = x->src + off;
		} else {
			struct bokey bk = {j->tgid, j->fd, x->handle, 0};
			struct boval *bo = bpf_map_lookup_elem(&bos, &bk);
			__u64 in_bo = x->src + off;

			if (!bo || in_bo >= bo->len)
				return -14; /* the BO is not mapped in the process */
			user = bo->cpu + in_bo;
			if (bo->len - in_bo < avail)
				avail = bo->len - in_bo;
		}
		n = gpu_cs_read_user(dst, user, avail, max_dw);
		if (n < 0)
			count(GPU_SUBMIT_C_READ_FAULTS);
		return n;
	}
	return -14;
}

/* bpf_loop()'s context must live on the stack: a pointer to the job. */
struct jctx {
	struct job *j;
};

static long step_cb(__u32 index, void *arg)
{
	struct job *j = ((struct jctx *)arg)->j;

	return gpu_cs_step(&j->cs, j);
}

static __always_inline __u32 tgid_now(void)
{
	return (__u32)(bpf_get_current_pid_tgid() >> 32);
}

/* Index j->op under one bucket: drop the bindings it overlaps, take a free
 * slot, else evict slot (bucket % n). */
static long bind_cb(__u32 i, void *arg)
{
	struct job *j = ((struct jctx *)arg)->j;
	struct gpu_submit_bkey k = {j->tgid, j->fd, j->b0 + i};
	struct gpu_submit_bucket *b = bpf_map_lookup_elem(&binds, &k), fresh = {};
	__u32 slot = GPU_SUBMIT_BINDS;

	if (!b) {
		fresh.b[0] = j->op;
		bpf_map_update_elem(&binds, &k, &fresh, BPF_ANY);
		return 0;
	}
	for (__u32 s = 0; s < GPU_SUBMIT_BINDS; s++) {
		struct gpu_submit_bind *x = &b->b[s];

		/* a GPU VA maps one thing at a time: what the new range overlaps
		 * is gone (re-bound, softpinned elsewhere, or stale) */
		if (x->kind != GPU_SUBMIT_BIND_NONE && x->gpu < j->op.gpu + j->op.len &&
		    j->op.gpu < x->gpu + x->len)
			x->kind = GPU_SUBMIT_BIND_NONE;
		if (slot == GPU_SUBMIT_BINDS && x->kind == GPU_SUBMIT_BIND_NONE)
			slot = s;
	}
	if (slot == GPU_SUBMIT_BINDS) {
		slot = (__u32)(k.bucket % GPU_SUBMIT_BINDS);
		count(GPU_SUBMIT_C_BIND_EVICTED);
	}
	b->b[slot & (GPU_SUBMIT_BINDS - 1)] = j->op;
	return 0;
}

/* Forget the bindings that start inside [op.gpu, op.gpu + op.len). */
static long unbind_cb(__u32 i, void *arg)
{
	struct job *j = ((struct jctx *)arg)->j;
	struct gpu_submit_bkey k = {j->tgid, j->fd, j->b0 + i};
	struct gpu_submit_bucket *b = bpf_map_lookup_elem(&binds, &k);

	if (!b)
		return 0;
	for (__u32 s = 0; s < GPU_SUBMIT_BINDS; s++)
		if (b->b[s].gpu >= j->op.gpu && b->b[s].gpu - j->op.gpu < j->op.len)
			b->b[s].kind = GPU_SUBMIT_BIND_NONE;
	return 0;
}

/* The 2 MiB buckets j->op covers, from j->b0 (at most GPU_SUBMIT_MAX_BUCKETS). */
static __always_inline __u32 op_buckets(const struct job *j)
{
	__u64 n = ((j->op.gpu + j->op.len - 1) >> GPU_SUBMIT_BUCKET_SHIFT) - j->b0 + 1;

	return n < GPU_SUBMIT_MAX_BUCKETS ? (__u32)n : GPU_SUBMIT_MAX_BUCKETS;
}

/* Index j->op under its buckets. */
static __always_inline void bind_range(struct job *j)
{
	struct jctx jc = {j};

	bpf_loop(op_buckets(j), bind_cb, &jc, 0);
	count(GPU_SUBMIT_C_BINDS);
}

/* One struct drm_xe_vm_bind_op (80 B, xe_drm.h) at user address uop. A
 * subprogram: a vector bind calls it in a loop (bpf_loop callbacks do not
 * nest here). */
static __noinline void bind_op(struct job *j, const void *uop)
{
	struct {
		__u64 extensions;
		__u32 obj;
		__u16 pat_index, pad;
		__u64 src; /* obj_offset / userptr */
		__u64 range, addr;
		__u32 op, flags;
	} o;

	if (bpf_probe_read_user(&o, sizeof(o), uop))
		return;
	o.addr &= GPU_CS_VA_MASK;
	if (!o.range || o.range > GPU_CS_VA_MASK)
		return;
	j->op.gpu = o.addr;
	j->op.len = o.range;
	j->op.src = o.src;
	j->op.handle = o.obj;
	j->b0 = o.addr >> GPU_SUBMIT_BUCKET_SHIFT;
	if (o.op == GPU_SUBMIT_XE_BIND_MAP || o.op == GPU_SUBMIT_XE_BIND_MAP_USERPTR) {
		j->op.kind = o.op == GPU_SUBMIT_XE_BIND_MAP ? GPU_SUBMIT_BIND_BO
							    : GPU_SUBMIT_BIND_USERPTR;
		bind_range(j);
	} else if (o.op == GPU_SUBMIT_XE_BIND_UNMAP) {
		struct jctx jc = {j};

		bpf_loop(op_buckets(j), unbind_cb, &jc, 0);
		count(GPU_SUBMIT_C_UNBINDS);
	}
}

/* struct drm_xe_vm_bind (136 B, xe_drm.h). */
static __always_inline void vm_bind(int fd, __u64 uarg)
{
	struct job *j = job_get();
	__u32 nb;
	__u64 vec;

	if (!j || bpf_probe_read_user(&nb, sizeof(nb), (const void *)(uarg + 20)))
		return;
	j->tgid = tgid_now();
	j->fd = fd;
	if (nb == 1) {
		bind_op(j, (const void *)(uarg + 24));
		return;
	}
	if (bpf_probe_read_user(&vec, sizeof(vec), (const void *)(uarg + 24)))
		return;
	for (__u32 i = 0; i < GPU_SUBMIT_VEC_OPS; i++) {
		if (i >= nb)
			break;
		bind_op(j, (const void *)(vec + (__u64)i * 80));
	}
}

/* No further parse of a submission follows this one. */
static __always_inline bool final_parse(__u32 status, __u32 attempt)
{
	return status != GPU_CS_RETRY || attempt >= GPU_SUBMIT_MAX_ATTEMPTS;
}

/* Parse w's batch (attempt w->attempts) in the memory of process j->tgid
 * behind DRM fd w->fd and send the result; returns the parse's status. A
 * subprogram: the xe and i915 paths and the deferred re-parse share one
 * copy. */
static __noinline __u32 parse_send(struct job *j, const struct deferred *w)
{
	__u64 batch = w->batch;
	__u32 attempt = w->attempts;
	struct gpu_submit_event *ev;
	struct jctx jc = {j};
	__u64 id = bpf_get_current_pid_tgid();
	__u32 st;

	j->fd = w->fd;
	gpu_cs_begin(&j->cs, batch & GPU_CS_VA_MASK);
	bpf_loop(GPU_CS_MAX_COMMANDS, step_cb, &jc, 0);
	gpu_cs_finish(&j->cs);
	st = j->cs.r.status;
	count(GPU_SUBMIT_C_PARSED);
	ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count(GPU_SUBMIT_C_RINGBUF_FULL);
		return st;
	}
	ev->ts_ns = bpf_ktime_get_ns();
	ev->pid = (__u32)(id >> 32);
	ev->tid = (__u32)id;
	ev->uid = current_owner();
	ev->fd = w->fd;
	ev->exec_queue = w->queue;
	ev->driver = w->driver;
	ev->nbb = w->nbb;
	ev->attempt = attempt;
	ev->final = final_parse(st, attempt);
	ev->batch = batch & GPU_CS_VA_MASK;
	bpf_get_current_comm(ev->comm, sizeof(ev->comm));
	bpf_probe_read_kernel(&ev->r, sizeof(ev->r), &j->cs.r);
	bpf_ringbuf_submit(ev, 0);
	return st;
}

/* At a submission of process tgid: first its waiting one, if any, again. */
static __always_inline void retry_deferred(struct job *j, __u32 tgid)
{
	struct deferred *d = bpf_map_lookup_elem(&deferred, &tgid), w;
	__u32 st;

	if (!d)
		return;
	w = *d;
	j->tgid = tgid;
	w.attempts++;
	st = parse_send(j, &w);
	if (final_parse(st, w.attempts))
		bpf_map_delete_elem(&deferred, &tgid);
	else
		bpf_map_update_elem(&deferred, &tgid, &w, BPF_ANY);
}

/* Parse this submission; a `retry` end waits for the next one. */
static __always_inline void submit(struct job *j, int fd, __u64 batch, __u32 driver, __u32 queue,
				   __u32 nbb)
{
	__u32 tgid = tgid_now();
	struct deferred w = {batch, fd, driver, queue, nbb, 1};

	retry_deferred(j, tgid);
	j->tgid = tgid;
	if (parse_send(j, &w) == GPU_CS_RETRY)
		bpf_map_update_elem(&deferred, &tgid, &w, BPF_ANY);
}

/* struct drm_xe_exec (56 B, xe_drm.h). */
static __always_inline void xe_exec(int fd, __u64 uarg)
{
	struct {
		__u64 extensions;
		__u32 exec_queue_id, num_syncs;
		__u64 syncs, address;
		__u16 num_batch_buffer, pad[3];
	} x;
	struct job *j = job_get();

	count(GPU_SUBMIT_C_EXECS);
	if (!j || bpf_probe_read_user(&x, sizeof(x), (const void *)uarg))
		return;
	if (x.num_batch_buffer != 1) { /* sync-only, or parallel: an array of VAs */
		count(GPU_SUBMIT_C_SKIPPED);
		return;
	}
	submit(j, fd, x.address, GPU_SUBMIT_XE, x.exec_queue_id, x.num_batch_buffer);
}

/* One drm_i915_gem_exec_object2 (56 B, i915_drm.h): its GPU VA range, when the
 * object's user mapping is known, becomes a binding. Returns its offset. */
static __noinline __u64 i915_object(struct job *j, const void *uobj)
{
	struct {
		__u32 handle, relocation_count;
		__u64 relocs_ptr, alignment, offset;
	} o;
	struct bokey k;
	struct boval *bo;

	if (bpf_probe_read_user(&o, sizeof(o), uobj))
		return 0;
	k = (struct bokey){j->tgid, j->fd, o.handle, 0};
	bo = bpf_map_lookup_elem(&bos, &k);
	if (bo && bo->len && bo->len <= GPU_CS_VA_MASK) {
		j->op.gpu = o.offset & GPU_CS_VA_MASK;
		j->op.len = bo->len;
		j->op.src = 0;
		j->op.handle = o.handle;
		j->op.kind = GPU_SUBMIT_BIND_BO;
		j->b0 = j->op.gpu >> GPU_SUBMIT_BUCKET_SHIFT;
		bind_range(j);
	}
	return o.offset;
}

struct objs_ctx {
	struct job *j;
	__u64 objs;
	__u32 n, batch_idx;
	__u64 batch_off;
};

static long objs_cb(__u32 i, void *arg)
{
	struct objs_ctx *c = arg;
	__u64 off;

	if (i >= c->n)
		return 1;
	off = i915_object(c->j, (const void *)(c->objs + (__u64)i * 56));
	if (i == c->batch_idx)
		c->batch_off = off;
	return 0;
}

/* struct drm_i915_gem_execbuffer2 (64 B, i915_drm.h): the exec objects' offsets
 * (softpin: the GPU VA they are at) are this process's layout; the batch
 * is object 0 with BATCH_FIRST, else the last. */
static __always_inline void i915_execbuffer(int fd, __u64 uarg)
{
	struct {
		__u64 buffers_ptr;
		__u32 buffer_count, batch_start_offset, batch_len, dr1, dr4, num_cliprects;
		__u64 cliprects_ptr, flags, rsvd1, rsvd2;
	} eb;
	struct job *j = job_get();
	struct objs_ctx c;

	count(GPU_SUBMIT_C_EXECS);
	if (!j || bpf_probe_read_user(&eb, sizeof(eb), (const void *)uarg))
		return;
	if (!eb.buffer_count) {
		count(GPU_SUBMIT_C_SKIPPED);
		return;
	}
	j->tgid = tgid_now();
	j->fd = fd;
	c.j = j;
	c.objs = eb.buffers_ptr;
	c.n = eb.buffer_count < GPU_SUBMIT_I915_OBJECTS ? eb.buffer_count : GPU_SUBMIT_I915_OBJECTS;
	c.batch_idx = eb.flags & GPU_SUBMIT_I915_BATCH_FIRST ? 0 : eb.buffer_count - 1;
	c.batch_off = 0;
	if (c.batch_idx >= GPU_SUBMIT_I915_OBJECTS) { /* the batch is past what we index */
		count(GPU_SUBMIT_C_SKIPPED);
		return;
	}
	bpf_loop(GPU_SUBMIT_I915_OBJECTS, objs_cb, &c, 0);
	submit(j, fd, c.batch_off + eb.batch_start_offset, GPU_SUBMIT_I915, (__u32)eb.rsvd1,
	       eb.buffer_count);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(gpu_submit_enter, struct pt_regs *regs, long id)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	int fd;

	if (id != NR_IOCTL && id != NR_MMAP)
		return 0;
	if (target_tgid && (__u32)(pt >> 32) != target_tgid)
		return 0;
	if (id == NR_MMAP) {
		struct okey k = {(__u32)(pt >> 32), (int)PT_REGS_PARM5_CORE_SYSCALL(regs),
				 SYSCALL_ARG6(regs)};
		__u32 *h;

		if (k.fd < 0 || !(h = bpf_map_lookup_elem(&offs, &k)))
			return 0;
		struct pend p = {PEND_MMAP, k.fd, *h, PT_REGS_PARM2_CORE_SYSCALL(regs)};

		bpf_map_update_elem(&pend, &tid, &p, BPF_ANY);
		return 0;
	}
	__u32 cmd = (__u32)PT_REGS_PARM2_CORE_SYSCALL(regs);
	__u64 uarg = PT_REGS_PARM3_CORE_SYSCALL(regs);

	fd = (int)PT_REGS_PARM1_CORE_SYSCALL(regs);
	if (cmd == GPU_SUBMIT_XE_EXEC) {
		xe_exec(fd, uarg);
	} else if (cmd == GPU_SUBMIT_XE_VM_BIND) {
		vm_bind(fd, uarg);
	} else if (cmd == GPU_SUBMIT_I915_EXECBUFFER2 || cmd == GPU_SUBMIT_I915_EXECBUFFER2_WR) {
		i915_execbuffer(fd, uarg);
	} else if (cmd == GPU_SUBMIT_XE_GEM_MMAP_OFFSET || cmd == GPU_SUBMIT_I915_GEM_MMAP_OFFSET ||
		   cmd == GPU_SUBMIT_I915_GEM_MMAP || cmd == GPU_SUBMIT_I915_GEM_USERPTR) {
		struct pend p = {cmd == GPU_SUBMIT_XE_GEM_MMAP_OFFSET	  ? PEND_MMAP_OFFSET
				 : cmd == GPU_SUBMIT_I915_GEM_MMAP_OFFSET ? PEND_I915_MMAP_OFFSET
				 : cmd == GPU_SUBMIT_I915_GEM_MMAP	  ? PEND_I915_MMAP
									  : PEND_I915_USERPTR,
				 fd, uarg, 0};

		bpf_map_update_elem(&pend, &tid, &p, BPF_ANY);
	}
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(gpu_submit_exit, struct pt_regs *regs, long ret)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	long nr;
	struct pend *p;

	if (target_tgid && (__u32)(pt >> 32) != target_tgid)
		return 0;
	nr = SYSCALL_NR(regs);
	if (nr != NR_IOCTL && nr != NR_MMAP)
		return 0;
	p = bpf_map_lookup_elem(&pend, &tid);
	if (!p)
		return 0;
	if (p->what == PEND_MMAP_OFFSET && nr == NR_IOCTL && (ret == 0 || accept_failed)) {
		struct {
			__u64 extensions;
			__u32 handle, flags;
			__u64 offset;
		} mo;

		if (!bpf_probe_read_user(&mo, sizeof(mo), (const void *)p->arg)) {
			struct okey k = {(__u32)(pt >> 32), p->fd, mo.offset};

			bpf_map_update_elem(&offs, &k, &mo.handle, BPF_ANY);
		}
	} else if (p->what == PEND_I915_MMAP_OFFSET && nr == NR_IOCTL &&
		   (ret == 0 || accept_failed)) {
		struct {
			__u32 handle, pad;
			__u64 offset;
		} mo;

		if (!bpf_probe_read_user(&mo, sizeof(mo), (const void *)p->arg)) {
			struct okey k = {(__u32)(pt >> 32), p->fd, mo.offset};

			bpf_map_update_elem(&offs, &k, &mo.handle, BPF_ANY);
		}
	} else if ((p->what == PEND_I915_MMAP || p->what == PEND_I915_USERPTR) && nr == NR_IOCTL &&
		   (ret == 0 || accept_failed)) {
		/* drm_i915_gem_mmap {handle, pad, offset, size, addr_ptr (out)} maps
		 * [offset, offset + size) of the object at addr_ptr;
		 * drm_i915_gem_userptr {user_ptr, user_size, flags, handle (out)} */
		__u64 f[5];
		struct bokey k = {(__u32)(pt >> 32), p->fd, 0, 0};
		struct boval v;

		if (!bpf_probe_read_user(f, p->what == PEND_I915_MMAP ? 32 : 24,
					 (const void *)p->arg)) {
			if (p->what == PEND_I915_MMAP) {
				k.handle = (__u32)f[0];
				v = (struct boval){f[3] - f[1], f[1] + f[2]};
			} else {
				k.handle = (__u32)(f[2] >> 32);
				v = (struct boval){f[0], f[1]};
			}
			bpf_map_update_elem(&bos, &k, &v, BPF_ANY);
			count(GPU_SUBMIT_C_MMAPS);
		}
	} else if (p->what == PEND_MMAP && nr == NR_MMAP && (unsigned long)ret < -4095UL) {
		struct bokey k = {(__u32)(pt >> 32), p->fd, (__u32)p->arg, 0};
		struct boval v = {(__u64)ret, p->len};

		bpf_map_update_elem(&bos, &k, &v, BPF_ANY);
		count(GPU_SUBMIT_C_MMAPS);
	}
	bpf_map_delete_elem(&pend, &tid);
	return 0;
}
