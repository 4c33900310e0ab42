// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/*
 * Driver-side GPU job lifecycle (docs/collectors.md, "GPU jobs"): tp_btf
 * programs on the xe and i915 submission/completion tracepoints, and on the
 * core kernel's dma_fence tracepoints as the generic fallback. Each program
 * sends one gpu_job_rec (gpu_job_abi.h) per event; userspace pairs submit /
 * start / end into intervals (daemon/collect/gpu_job_pair.c).
 *
 * Three groups, loaded independently: userspace turns autoload off for every
 * program whose tracepoint has no BTF on this kernel (no xe or i915 module,
 * i915 built without CONFIG_DRM_I915_LOW_LEVEL_TRACEPOINTS), so a missing
 * driver disables only its own programs. The driver structs below are local
 * CO-RE definitions (preserve_access_index) resolved against the module's
 * BTF at load; libbpf relocates only programs that are loaded.
 *
 * Field sources: xe_trace.h, and
 * (dma_fence), 3.3 (i915_trace.h). xe_hw_fence and i915_request both start
 * with their struct dma_fence, so their context/seqno are read as a fence.
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gpu_job_abi.h"
#include "owner.bpf.h"
#include "pystack.bpf.h"
#include "ustack.bpf.h"

/* bpf_get_stack() is gpl_only. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h */
/* The busy mark is set before the slot is written and cleared after it is
 * sent; only programs on this CPU see it. */
#define compiler_barrier() asm volatile("" ::: "memory")

/* Load-time knobs, set between gpu_job_bpf__open() and __load(). */
const volatile __u8 user_stacks = 1;   /* user stack at SUBMIT from a user task */
const volatile __u64 wakeup_bytes = 0; /* see cpu_sample.bpf.c */
/* Bytes of user stack a SUBMIT copies for the daemon's CFI unwinder
 * (ustack_abi.h); 0: frame-pointer stacks walked here instead. */
const volatile __u32 stack_bytes = USTACK_DEFAULT_BYTES;
/* Ring bytes waiting above which a SUBMIT walks frame pointers instead of
 * copying (userspace sets half the ring): see gpu_launch.bpf.c. */
const volatile __u64 copy_below = GPU_JOB_DEFAULT_RINGBUF_BYTES / 2;

/* xe (drivers/gpu/drm/xe/xe_sched_job_types.h, xe_exec_queue_types.h). */
/* An enum, not an int: CO-RE only matches a field against a target field
 * of the same kind (libbpf bpf_core_fields_are_compat), and xe's is an enum. */
enum xe_engine_class___gj { XE_ENGINE_CLASS_RENDER___gj = 0 };

struct xe_exec_queue___gj {
	enum xe_engine_class___gj class;
} __attribute__((preserve_access_index));

struct xe_sched_job___gj {
	struct xe_exec_queue___gj *q;
	struct dma_fence *fence; /* set by xe_sched_job_arm(), after _create */
} __attribute__((preserve_access_index));

/* i915 (drivers/gpu/drm/i915/i915_request.h, gt/intel_engine_types.h). */
struct intel_engine_cs___gj {
	__u8 uabi_class;
} __attribute__((preserve_access_index));

struct i915_request___gj {
	struct dma_fence fence;
	struct intel_engine_cs___gj *engine;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, GPU_JOB_DEFAULT_RINGBUF_BYTES);
} events SEC(".maps");

/* Staging for SUBMITs that copy the user stack, indexed by CPU
 * (max_entries set to the possible CPUs before load); shared by the groups'
 * instances like the ring. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gpu_job_scratch);
} scratch SEC(".maps");

/* Records lost to a full ring buffer; userspace sums the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void fill(struct gpu_job_rec *r, __u8 ev, __u8 group, __u8 flags,
				 __u8 engine, __u64 obj, const struct dma_fence *f)
{
	__u64 id = bpf_get_current_pid_tgid();

	r->type = GPU_JOB_REC_TYPE;
	r->version = GPU_JOB_REC_VERSION;
	r->ev = ev;
	r->group = group;
	r->flags = flags;
	r->engine = engine;
	r->pyflags = 0;
	r->nuser = 0;
	r->npy = 0;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->uid = current_owner();
	r->ts_ns = bpf_ktime_get_ns();
	r->obj = obj;
	r->ctx = f ? BPF_CORE_READ(f, context) : 0;
	r->seqno = f ? BPF_CORE_READ(f, seqno) : 0;
	/* Functions, not the ops table: text symbols are in /proc/kallsyms
	 * even without CONFIG_KALLSYMS_ALL, so userspace can name them. */
	r->ops = f ? (__u64)BPF_CORE_READ(f, ops, get_driver_name) : 0;
	r->release = f ? (__u64)BPF_CORE_READ(f, ops, release) : 0;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
}

static __always_inline void lost_one(void)
{
	__u32 zero = 0;
	__u64 *lost = bpf_map_lookup_elem(&drops, &zero);

	if (lost)
		*lost += 1;
}

static __always_inline __u64 wake_flags(void)
{
	if (!wakeup_bytes)
		return 0;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline int emit_header(__u8 ev, __u8 group, __u8 flags, __u8 engine, __u64 obj,
				       const struct dma_fence *f)
{
	struct gpu_job_hdr *h = bpf_ringbuf_reserve(&events, sizeof(*h), 0);

	if (!h) {
		lost_one();
		return 0;
	}
	fill((struct gpu_job_rec *)h, ev, group, flags, engine, obj, f);
	bpf_ringbuf_submit(h, wake_flags());
	return 0;
}

/*
 * A SUBMIT with the user registers and the top of the user stack, for the
 * daemon's CFI unwinder: the task's pt_regs saved at its ioctl's entry. Staged
 * per CPU, then sent through a dynptr reservation of exactly the bytes taken.
 * These tracepoints run with preemption off but nest (a fence signalled, or
 * even created, from an interrupt while a process submits on the same CPU):
 * a SUBMIT that finds the CPU's slot busy goes out without a stack.
 */
static __always_inline int emit_copy(__u8 ev, __u8 group, __u8 flags, __u8 engine, __u64 obj,
				     const struct dma_fence *f)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct gpu_job_scratch *sc = bpf_map_lookup_elem(&scratch, &cpu);
	struct bpf_dynptr ptr;
	__u64 slen; /* 64-bit: a 32-bit copy's bound would not carry over */
	__u64 pylen;
	__u16 pyflags;

	if (!sc || *(volatile __u32 *)&sc->busy)
		return emit_header(ev, group, flags & ~GPU_JOB_F_USER, engine, obj, f);
	*(volatile __u32 *)&sc->busy = 1;
	compiler_barrier();
	fill(&sc->r, ev, group, flags, engine, obj, f);
	ustack_take_task(&sc->r.us, sc->stack, stack_bytes);
	sc->r.npy =
		pystack_take(&sc->py, sc->r.pid, ((__u64)sc->r.pid << 32) | sc->r.tid, &pyflags);
	sc->r.pyflags = (__u8)pyflags;
	pylen = (__u64)sc->r.npy * PYSTACK_NODE_BYTES;
	slen = sc->r.us.len;
	/* Bounds the verifier can follow at the writes below. */
	barrier_var(pylen);
	barrier_var(slen);
	if (pylen > sizeof(sc->py.nodes))
		pylen = 0;
	if (slen > USTACK_MAX_BYTES + USTACK_PAGE)
		slen = 0;
	if (bpf_ringbuf_reserve_dynptr(&events, GPU_JOB_FULL_BYTES + pylen + slen, 0, &ptr)) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		lost_one();
	} else if (bpf_dynptr_write(&ptr, 0, &sc->r, GPU_JOB_FULL_BYTES, 0) ||
		   (pylen && bpf_dynptr_write(&ptr, GPU_JOB_FULL_BYTES, sc->py.nodes, pylen, 0)) ||
		   (slen &&
		    bpf_dynptr_write(&ptr, GPU_JOB_FULL_BYTES + pylen, sc->stack, slen, 0))) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		lost_one();
	} else {
		bpf_ringbuf_submit_dynptr(&ptr, wake_flags());
	}
	compiler_barrier();
	*(volatile __u32 *)&sc->busy = 0;
	return 0;
}

/*
 * Records without a stack are reserved in the ring and filled in place.
 * Only a SUBMIT from a user task takes one: a copy for the CFI unwinder
 * (emit_copy), or, with copying off or the ring over half full, a
 * frame-pointer walk into a full-size reservation filled in place (no
 * staging slot to share between nested programs; the unused tail of it is
 * wasted ring space).
 */
static __always_inline int emit(void *ctx, __u8 ev, __u8 group, __u8 flags, __u8 engine, __u64 obj,
				const struct dma_fence *f)
{
	struct task_struct *task = bpf_get_current_task_btf();
	bool kthread = task->flags & PF_KTHREAD;
	struct gpu_job_rec *r;
	long ret;

	if (kthread)
		flags |= GPU_JOB_F_KTHREAD;
	if (ev != GPU_JOB_SUBMIT || kthread || !user_stacks)
		return emit_header(ev, group, flags, engine, obj, f);
	flags |= GPU_JOB_F_USER;
	if (stack_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < copy_below)
		return emit_copy(ev, group, flags, engine, obj, f);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		lost_one();
		return 0;
	}
	fill(r, ev, group, flags, engine, obj, f);
	r->us.len = 0;
	r->us.flags = 0;
	r->us.ip = r->us.sp = r->us.bp = 0;
	/* Unwinds from task_pt_regs(): the ioctl's caller, by frame pointer.
	 * A few µs, paid once per submission only. */
	ret = bpf_get_stack(ctx, r->ips, sizeof(r->ips), BPF_F_USER_STACK);
	if (ret > 0)
		r->nuser = (__u64)ret / sizeof(__u64);
	bpf_ringbuf_submit(r, wake_flags());
	return 0;
}

/* ---- xe ---------------------------------------------------------------- */

/* Fires inside xe_exec_ioctl(): the submitting process, before the job's
 * fence is armed, so the job address is the key until _run. */
SEC("tp_btf/xe_sched_job_create")
int BPF_PROG(xe_job_create, struct xe_sched_job___gj *job)
{
	__u8 engine = (__u8)BPF_CORE_READ(job, q, class);

	return emit(ctx, GPU_JOB_SUBMIT, GPU_JOB_G_XE, GPU_JOB_F_OBJ_KEY, engine, (__u64)job, 0);
}

/* DRM scheduler run_job: handed to the GuC / ring (a start bound). */
SEC("tp_btf/xe_sched_job_run")
int BPF_PROG(xe_job_run, struct xe_sched_job___gj *job)
{
	struct dma_fence *f = BPF_CORE_READ(job, fence);
	__u8 engine = (__u8)BPF_CORE_READ(job, q, class);

	return emit(ctx, GPU_JOB_START, GPU_JOB_G_XE, 0, engine, (__u64)job, f);
}

/* The seqno was seen complete; struct xe_hw_fence starts with its fence. */
SEC("tp_btf/xe_hw_fence_signal")
int BPF_PROG(xe_fence_signal, struct dma_fence *f)
{
	return emit(ctx, GPU_JOB_END, GPU_JOB_G_XE, 0, 0xff, 0, f);
}

SEC("tp_btf/xe_sched_job_free")
int BPF_PROG(xe_job_free, struct xe_sched_job___gj *job)
{
	return emit(ctx, GPU_JOB_FREE, GPU_JOB_G_XE, GPU_JOB_F_OBJ_KEY, 0xff, (__u64)job, 0);
}

/* ---- i915 -------------------------------------------------------------- */

static __always_inline int i915_ev(void *ctx, __u8 ev, struct i915_request___gj *rq)
{
	__u8 engine = BPF_CORE_READ(rq, engine, uabi_class);

	return emit(ctx, ev, GPU_JOB_G_I915, 0, engine, (__u64)rq, (struct dma_fence *)rq);
}

/* In the execbuffer ioctl: the submitting process. */
SEC("tp_btf/i915_request_add")
int BPF_PROG(i915_add, struct i915_request___gj *rq)
{
	return i915_ev(ctx, GPU_JOB_SUBMIT, rq);
}

/* Low-level tracepoints (CONFIG_DRM_I915_LOW_LEVEL_TRACEPOINTS): the true
 * hardware start and end; absent otherwise, and retire ends the job. */
SEC("tp_btf/i915_request_in")
int BPF_PROG(i915_in, struct i915_request___gj *rq, unsigned int port)
{
	return i915_ev(ctx, GPU_JOB_START, rq);
}

SEC("tp_btf/i915_request_out")
int BPF_PROG(i915_out, struct i915_request___gj *rq)
{
	return i915_ev(ctx, GPU_JOB_END, rq);
}

SEC("tp_btf/i915_request_retire")
int BPF_PROG(i915_retire, struct i915_request___gj *rq)
{
	return i915_ev(ctx, GPU_JOB_END, rq);
}

/* ---- dma_fence (core kernel) -------------------------------------------- */

SEC("tp_btf/dma_fence_init")
int BPF_PROG(fence_init, struct dma_fence *f)
{
	return emit(ctx, GPU_JOB_SUBMIT, GPU_JOB_G_FENCE, 0, 0xff, (__u64)f, f);
}

SEC("tp_btf/dma_fence_emit")
int BPF_PROG(fence_emit, struct dma_fence *f)
{
	return emit(ctx, GPU_JOB_START, GPU_JOB_G_FENCE, 0, 0xff, (__u64)f, f);
}

SEC("tp_btf/dma_fence_signaled")
int BPF_PROG(fence_signaled, struct dma_fence *f)
{
	return emit(ctx, GPU_JOB_END, GPU_JOB_G_FENCE, 0, 0xff, (__u64)f, f);
}

SEC("tp_btf/dma_fence_destroy")
int BPF_PROG(fence_destroy, struct dma_fence *f)
{
	return emit(ctx, GPU_JOB_FREE, GPU_JOB_G_FENCE, 0, 0xff, (__u64)f, f);
}
