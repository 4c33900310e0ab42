// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/*
 * Always-on CPU stack sampler. Runs on a per-CPU software cpu-clock perf
 * event (PERF_COUNT_SW_CPU_CLOCK, freq mode) opened by daemon/collect/cpu.c
 * and sends each sample -- task identity plus raw user and kernel stacks --
 * through one BPF ring buffer. Raw stacks instead of a BPF_MAP_TYPE_STACK_TRACE
 * id: no hash-bucket collisions silently dropping or mixing stacks, no map to
 * clear while sampling runs; the store deduplicates stacks in userspace
 * (docs/collectors.md, "CPU sampling").
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "cpu_sample_abi.h"
#include "owner.bpf.h"
#include "pystack.bpf.h"
#include "ustack.bpf.h"

/* bpf_get_stack() is gpl_only; "Dual MIT/GPL" is GPL-compatible for the
 * kernel's license_is_gpl_compatible(). */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Load-time knobs (rodata), set between cpu_sample_bpf__open() and __load(). */
const volatile __u32 self_tgid = 0;	  /* non-zero: never sample this process */
const volatile bool include_idle = false; /* sample the per-CPU idle task (pid 0) */
/* 0: let the kernel wake the reader for each record it finds caught up (the
 * ring buffer's default adaptive notification). Otherwise: commit without a
 * wake-up until this many bytes wait; userspace drains on a timer meanwhile,
 * so a mostly idle host pays for a few wake-ups a second, not one per sample. */
const volatile __u64 wakeup_bytes = 0;
/* Least time between two wake-ups for new programs (seen below); 0: one
 * for each. Several CPUs may take the same opening: a few more at worst. */
const volatile __u64 new_wake_gap_ns = 0;
/* Bytes of user stack to copy for the daemon's CFI unwinder (ustack.h);
 * 0: frame-pointer user stacks taken here instead. */
const volatile __u32 stack_bytes = USTACK_DEFAULT_BYTES;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	/* Resized from userspace (bpf_map__set_max_entries) before load. */
	__uint(max_entries, CPU_SAMPLE_DEFAULT_RINGBUF_BYTES);
} samples SEC(".maps");

/* Per-CPU staging area, indexed by CPU (max_entries set to the possible
 * CPUs before load): a full record is far too big for the 512-byte BPF
 * stack, and staging lets us send only the captured frames and bytes. A
 * perf_event program runs in NMI or hard-irq context, so one CPU never
 * runs two of it at once. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_sample_scratch);
} scratch SEC(".maps");

/* Programs sampled lately, by process and command name (an exec changes
 * it): the first sample of one wakes the reader at once, so the daemon
 * reads its mappings for unwinding while a short-lived process still
 * lives; others wait for the batched drain. At most one such wake-up per
 * new_wake_gap_ns, though: on a host that starts processes by the hundred a
 * wake-up for each was a large part of the sampler's cost, and one drain
 * reads every new program pending. A new program sampled within the gap
 * (counted in new_wakes) is read at the wake-up that the first sample after
 * the gap forces, or at the timer's drain if that comes first. */
struct seen_key {
	__u32 tgid;
	char comm[CPU_SAMPLE_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct seen_key);
	__type(value, __u8);
} seen SEC(".maps");

/* When a new program last woke the reader, and whether one has waited
 * since (one for all CPUs). */
struct new_wake {
	__u64 last_ns;
	__u64 pending;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct new_wake);
} new_wake_last SEC(".maps");

/* New programs that woke the reader (key 0), and those that waited for a
 * drain because another had woken it within new_wake_gap_ns (key 1); per
 * CPU, summed by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} new_wakes SEC(".maps");

/* Samples lost because the ring buffer was full; userspace sums the CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* The Python frame walk's cost, per CPU: its time (the clock reads
 * included), the samples that had Python frames and their frame-chain
 * nodes; read by bench/cpu for the added cost per Python sample. */
struct py_cost {
	__u64 ns, walks, nodes;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_cost);
} py_cost SEC(".maps");

/* pystack_take() timed. A subprogram: inlined, the accounting reshuffles
 * the registers that carry the record's bounds below, which the verifier
 * then cannot follow. */
static __noinline __u32 pystack_take_timed(struct pystack_scratch *ps, __u32 tgid, __u64 id,
					   __u16 *flags)
{
	__u64 t0 = bpf_ktime_get_ns();
	__u32 zero = 0, n = pystack_take(ps, tgid, id, flags);
	struct py_cost *pc;

	if (n && (pc = bpf_map_lookup_elem(&py_cost, &zero))) {
		pc->ns += bpf_ktime_get_ns() - t0;
		pc->walks++;
		pc->nodes += n;
	}
	return n;
}

/* The saved cs, read as the whole 8-byte slot: the perf_event context
 * allows only 8-byte reads of its registers, and newer kernels declare cs
 * as a 16-bit field of that slot. The low two bits are the ring. */
static __always_inline __u64 cs_word(struct bpf_perf_event_data *ctx)
{
	return *(volatile __u64 *)((char *)&ctx->regs + __builtin_offsetof(struct pt_regs, cs));
}

SEC("perf_event")
int cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct cpu_sample_scratch *sc;
	struct cpu_sample_rec *r;
	struct bpf_dynptr ptr;
	__u64 flags = 0, size, *dropped, nu = 0, nk;
	__u32 slen, pylen;
	long ret;

	if (tgid == 0 && !include_idle)
		return 0;
	if (self_tgid && tgid == self_tgid)
		return 0;

	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc)
		return 0;
	r = &sc->r;

	r->type = CPU_SAMPLE_REC_TYPE;
	r->version = CPU_SAMPLE_REC_VERSION;
	r->pid = tgid;
	r->tid = (__u32)id;
	r->uid = current_owner();
	r->cpu = cpu;
	r->ts_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(r->comm, sizeof(r->comm));

	/*
	 * User stack first. With copying on, the registers and the top of the
	 * stack go to the daemon, which unwinds them by CFI. Otherwise the
	 * helper walks frame pointers from the interrupted registers (from
	 * task_pt_regs() when the interrupt hit kernel mode).
	 */
	if (stack_bytes) {
		/* ctx->regs are the interrupted registers: the user ones
		 * when the sample hit user mode (cs ring 3). */
		if ((cs_word(ctx) & 3) == 3)
			ustack_copy(&r->us, sc->stack, stack_bytes, ctx->regs.ip, ctx->regs.sp,
				    ctx->regs.bp);
		else
			ustack_take_task(&r->us, sc->stack, stack_bytes);
	} else {
		r->us.len = 0;
		r->us.flags = 0;
		ret = bpf_get_stack(ctx, r->ips, CPU_SAMPLE_MAX_FRAMES * sizeof(__u64),
				    BPF_F_USER_STACK);
		/* Byte count -> frames (BPF has no signed division). */
		nu = ret > 0 ? (__u64)ret / sizeof(__u64) : 0;
	}
	/* Explicit clamp so the verifier can bound the kernel stack's offset. */
	if (nu > CPU_SAMPLE_MAX_FRAMES)
		nu = CPU_SAMPLE_MAX_FRAMES;
	/* Kernel stack right behind the user frames; empty when the sample hit
	 * user mode. */
	ret = bpf_get_stack(ctx, &r->ips[nu], CPU_SAMPLE_MAX_FRAMES * sizeof(__u64), 0);
	nk = ret > 0 ? (__u64)ret / sizeof(__u64) : 0;
	if (nk > CPU_SAMPLE_MAX_FRAMES)
		nk = CPU_SAMPLE_MAX_FRAMES;
	r->nuser = nu;
	r->nkernel = nk;
	r->npy = pystack_take_timed(&sc->py, tgid, id, &r->pyflags);
	r->pad = 0;

	size = CPU_SAMPLE_HDR_BYTES + (nu + nk) * sizeof(__u64);
	pylen = r->npy * PYSTACK_NODE_BYTES;
	if (pylen > sizeof(sc->py.nodes))
		pylen = 0;
	slen = r->us.len;
	if (slen > USTACK_MAX_BYTES + USTACK_PAGE)
		slen = 0;
	if (wakeup_bytes)
		flags = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes
				? BPF_RB_FORCE_WAKEUP
				: BPF_RB_NO_WAKEUP;
	if (wakeup_bytes && slen) {
		struct seen_key k = {.tgid = tgid};
		struct new_wake *nw = bpf_map_lookup_elem(&new_wake_last, &zero);
		bool open = !new_wake_gap_ns || !nw || r->ts_ns - nw->last_ns >= new_wake_gap_ns;
		bool wake = nw && nw->pending && open;
		__u8 one = 1;

		__builtin_memcpy(k.comm, r->comm, sizeof(k.comm));
		if (!bpf_map_lookup_elem(&seen, &k)) {
			__u32 waited = !open;
			__u64 *cnt = bpf_map_lookup_elem(&new_wakes, &waited);

			bpf_map_update_elem(&seen, &k, &one, BPF_ANY);
			if (cnt)
				*cnt += 1;
			if (open)
				wake = true;
			else if (nw)
				nw->pending = 1;
		}
		/* A new program that waited is read at the first sample of
		 * any program once the gap is over: it waits at most the gap
		 * (and the next sample), not the drain period. */
		if (wake) {
			if (nw) {
				nw->last_ns = r->ts_ns;
				nw->pending = 0;
			}
			flags = BPF_RB_FORCE_WAKEUP;
		}
	}
	/* A dynptr reservation takes a size known only now; the frames and the
	 * stack bytes are written from the staging area, only what was taken. */
	if (bpf_ringbuf_reserve_dynptr(&samples, size + pylen + slen, 0, &ptr)) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		dropped = bpf_map_lookup_elem(&drops, &zero);
		if (dropped)
			*dropped += 1;
		return 0;
	}
	if (size > sizeof(*r) || bpf_dynptr_write(&ptr, 0, r, size, 0) ||
	    (pylen && bpf_dynptr_write(&ptr, size, sc->py.nodes, pylen, 0)) ||
	    (slen && bpf_dynptr_write(&ptr, size + pylen, sc->stack, slen, 0))) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		return 0;
	}
	bpf_ringbuf_submit_dynptr(&ptr, flags);
	return 0;
}
