// SPDX-License-Identifier: (MIT OR GPL-2.0-only)
/*
 * GPU launch probes on stock runtimes (docs/collectors.md, "GPU launches").
 *
 * Two halves:
 *  - the library watcher: a tp_btf program that sees each executable file
 *    mmap of a watched runtime library (on mmap_lock_released, i.e. once per
 *    mmap/munmap/mprotect-like call, or the older sys_exit program that
 *    runs on every syscall exit, kept as the fallback), and
 *    sched_process_exec/exit/fork. They keep a set of tracked processes in
 *    BPF, so only processes that map a runtime produce events; userspace
 *    attaches uprobes per library file.
 *  - the probes themselves: uprobes on launch entry points (Level Zero,
 *    CUDA driver, HIP), on the calls that name kernels (handle -> name, kept
 *    here in an LRU map keyed by (pid, handle)) and NEO's USDT launch probe.
 *    One program per argument shape; which entry point fired comes from the
 *    attach cookie (enum gpu_api).
 * Records go through one ring buffer (gpu_launch_abi.h). The user stack is
 * taken for one launch in stack_sample per (thread, kernel, call site);
 * the others go out without one (GPU_LAUNCH_F_NOSTACK) and userspace gives
 * them the stack last seen there, so counts stay exact. A launch that takes
 * one copies the user registers and the top of its stack for the daemon's
 * CFI unwinder (ustack.bpf.h), or walks frame pointers here when copying
 * is off (stack_bytes 0).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "gpu_launch_abi.h"
#include "owner.bpf.h"
#include "pystack.bpf.h"
#include "ustack.bpf.h"

/* bpf_get_stack() and bpf_probe_read_user*() are gpl_only. */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define PROT_EXEC 0x4
#define MAP_ANONYMOUS 0x20 /* the fd is ignored */
#define PF_KTHREAD 0x00200000

#if defined(__TARGET_ARCH_x86)
#define NR_MMAP 9
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP 222
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#else
#define NR_MMAP (-1)
#define SYSCALL_NR(regs) (-2)
#endif

/* libbpf 1.1's BPF_KPROBE stops at five arguments. */
#if defined(__TARGET_ARCH_x86)
#define ARG6(ctx) ((ctx)->r9)
#elif defined(__TARGET_ARCH_arm64)
#define ARG6(ctx) ((ctx)->regs[5])
#else
#define ARG6(ctx) 0
#endif

/* Load-time knobs, set between gpu_launch_bpf__open() and __load(). */
const volatile char watch[GPU_WATCH_MAX][GPU_WATCH_LEN] = {};
/* See cpu_sample.bpf.c: 0 = wake the reader per record; else batch. */
const volatile __u64 wakeup_bytes = 0;
/* Take the user stack for 1 launch in N per call site (1 = every one). */
const volatile __u32 stack_sample = 1;
/* Bytes of user stack a launch that takes a stack copies for the daemon's
 * CFI unwinder (ustack_abi.h); 0: frame-pointer stacks walked here instead. */
const volatile __u32 stack_bytes = USTACK_DEFAULT_BYTES;
/* Ring bytes waiting above which a launch walks frame pointers instead of
 * copying (userspace sets half the ring): in a launch storm the daemon
 * falls behind, and a copy per launch would fill the ring and lose
 * launches, where a frame-pointer stack is a few hundred bytes. */
const volatile __u64 copy_below = GPU_LAUNCH_DEFAULT_RINGBUF_BYTES / 2;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, GPU_LAUNCH_DEFAULT_RINGBUF_BYTES);
} events SEC(".maps");

/* (pid, handle) -> kernel name. LRU: a process that exits leaves its
 * entries behind (nothing here can enumerate them), they age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_LAUNCH_NAMES_MAX);
	__type(key, struct gpu_name_key);
	__type(value, struct gpu_name_val);
} names SEC(".maps");

enum pending_kind { PENDING_NAME = 1, PENDING_ALIAS = 2, PENDING_REG = 3 };

/* A naming call in flight on one thread: what its return probe needs.
 * The name is read there, not on entry: a probe cannot fault a page in,
 * and a string nothing has touched yet (cuBLAS names its kernels from
 * tables in a 500 MB library) has no page table entry until the callee,
 * looking the name up, reads it. */
struct pending {
	__u64 out; /* user pointer the callee writes the handle to;
		    * REG: the handle itself */
	__u64 src; /* ALIAS: the handle whose name the new one takes;
		    * NAME, REG: the user pointer to the name */
	__u32 kind;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPU_LAUNCH_PENDING_MAX);
	__type(key, __u32); /* tid */
	__type(value, struct pending);
} pending SEC(".maps");

/* Processes mapping a watched library: the watcher reports their exec,
 * exit and fork. Filled here (mmap) and by userspace's initial scan. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPU_LAUNCH_TRACKED_MAX);
	__type(key, __u32);
	__type(value, __u32);
} tracked SEC(".maps");

/* Processes whose NEO carries the level_zero:launch_kernel USDT (userspace
 * fills it): there the USDT reports launches and the loader's entry
 * probes only hand it the queue and group counts, so no launch counts twice. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPU_LAUNCH_TRACKED_MAX);
	__type(key, __u32);
	__type(value, __u32);
} usdt_pids SEC(".maps");

struct ze_inflight {
	__u64 queue;
	__u64 group_counts; /* user pointer, 0 = none */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GPU_LAUNCH_PENDING_MAX);
	__type(key, __u32); /* tid */
	__type(value, struct ze_inflight);
} ze_inflight SEC(".maps");

/* Launches per (thread, kernel, call site) since its last stack: which
 * launches take one. LRU: a forgotten site just takes a stack again. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GPU_LAUNCH_SITES_MAX);
	__type(key, struct gpu_site_key);
	__type(value, __u64);
} sites SEC(".maps");

/* Per-CPU staging: records, names and stack copies are too big for the
 * stack. An ARRAY indexed by CPU (max_entries set to the possible CPUs
 * before load): the stack room exceeds a per-CPU map value's 32 KiB. */
struct scratch {
	struct gpu_launch_rec rec; /* first: launch_send() finds the slot from it */
	struct gpu_name_val val;
	struct pystack_scratch py;
	__u8 stack[USTACK_MAX_BYTES + USTACK_PAGE];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* Records lost because the ring buffer was full (per CPU, summed by
 * userspace); [1]: launches whose kernel name was unknown. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

__u64 correlation = 0;

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline __u64 rb_flags(void)
{
	if (!wakeup_bytes)
		return 0;
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline struct scratch *get_scratch(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&scratch, &cpu);
}

/* ------------------------------------------------------------------ */
/* Library watcher                                                     */

struct vma_match {
	__u64 ino;
	char file[GPU_WATCH_LEN];
	int hit;
};

/* Is f a watched runtime library? Sets m->hit, m->ino and m->file. */
static __always_inline int file_match(struct file *f, struct vma_match *m)
{
	const unsigned char *name;

	if (!f || !m)
		return 0;
	name = BPF_CORE_READ(f, f_path.dentry, d_name.name);
	if (bpf_probe_read_kernel_str(m->file, sizeof(m->file), name) <= 0)
		return 0;
	/* A prefix match: the mapped file is the real one behind the soname
	 * link ("libcuda.so.550.54.14", "libze_loader.so.1.21.9"). */
	for (int i = 0; i < GPU_WATCH_MAX; i++) {
		if (!watch[i][0])
			continue;
		for (int j = 0; j < GPU_WATCH_LEN; j++) {
			if (!watch[i][j]) {
				m->hit = 1;
				m->ino = BPF_CORE_READ(f, f_inode, i_ino);
				return 0;
			}
			if (m->file[j] != watch[i][j])
				break;
		}
	}
	return 0;
}

static long vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	file_match(BPF_CORE_READ(vma, vm_file), data);
	return 0;
}

static __always_inline void proc_event(__u32 ev, __u32 pid, __u32 ppid, struct vma_match *m)
{
	struct gpu_proc_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		count(0);
		return;
	}
	r->type = GPU_PROC_REC_TYPE;
	r->version = GPU_LAUNCH_REC_VERSION;
	r->event = ev;
	r->pid = pid;
	r->ppid = ppid;
	r->ino = m ? m->ino : 0;
	if (m)
		__builtin_memcpy(r->file, m->file, sizeof(r->file));
	else
		__builtin_memset(r->file, 0, sizeof(r->file));
	/* Process events are rare and userspace acts on them: wake it. */
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
}

static __always_inline void mapped(struct vma_match *m)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, one = 1;

	bpf_map_update_elem(&tracked, &tgid, &one, BPF_ANY);
	proc_event(GPU_PROC_MMAP, tgid, 0, m);
}

/*
 * The dynamic loader (and dlopen) map a library's text with
 * mmap(PROT_EXEC, fd); no tracepoint marks a new file mapping. The narrow
 * hook: mmap_lock_released fires when a write lock on an address space is
 * dropped (mmap, munmap, mprotect, brk, ...; read unlocks are rare next to
 * syscalls and return at once), not on every syscall. When the current
 * task's own syscall is an executable mmap of a file, that mmap has just
 * finished (vm_mmap_pgoff unlocks after do_mmap): the mapped file is its
 * fd's, and /proc/PID/maps shows it by the time userspace reads it. A
 * failed mmap only costs userspace a rescan.
 */
SEC("tp_btf/mmap_lock_released")
int BPF_PROG(gl_mmap_unlock, struct mm_struct *mm, bool write)
{
	struct task_struct *task;
	struct vma_match m = {};
	struct pt_regs *regs;
	struct fdtable *fdt;
	struct file **fds, *f = NULL;
	int fd;

	if (!write)
		return 0;
	task = bpf_get_current_task_btf();
	if ((task->flags & PF_KTHREAD) || task->mm != mm)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (SYSCALL_NR(regs) != NR_MMAP || !(PT_REGS_PARM3_CORE_SYSCALL(regs) & PROT_EXEC) ||
	    (PT_REGS_PARM4_CORE_SYSCALL(regs) & MAP_ANONYMOUS))
		return 0;
	fd = (int)PT_REGS_PARM5_CORE_SYSCALL(regs);
	fdt = BPF_CORE_READ(task, files, fdt);
	if (fd < 0 || !fdt || (unsigned)fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), fds + fd) || !f)
		return 0;
	file_match(f, &m);
	if (m.hit)
		mapped(&m);
	return 0;
}

/* The fallback: filter the generic syscall exit down to successful
 * executable file mmaps before any work is done. */
SEC("tp_btf/sys_exit")
int BPF_PROG(gl_sys_exit, struct pt_regs *regs, long ret)
{
	struct vma_match m = {};
	long nr = SYSCALL_NR(regs);

	if (nr != NR_MMAP || (ret < 0 && ret > -4096))
		return 0;
	if (!(PT_REGS_PARM3_CORE_SYSCALL(regs) & PROT_EXEC))
		return 0;
	if ((int)PT_REGS_PARM5_CORE_SYSCALL(regs) < 0)
		return 0;
	bpf_find_vma(bpf_get_current_task_btf(), (__u64)ret, vma_cb, &m, 0);
	if (m.hit)
		mapped(&m);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(gl_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (!bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	bpf_map_delete_elem(&tracked, &tgid);
	bpf_map_delete_elem(&usdt_pids, &tgid);
	proc_event(GPU_PROC_EXEC, tgid, 0, NULL);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(gl_exit, struct task_struct *p, bool group_dead)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (!group_dead || !bpf_map_lookup_elem(&tracked, &tgid))
		return 0;
	bpf_map_delete_elem(&tracked, &tgid);
	bpf_map_delete_elem(&usdt_pids, &tgid);
	proc_event(GPU_PROC_EXIT, tgid, 0, NULL);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(gl_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	__u32 one = 1, *u;

	/* A new thread shares the parent's mappings: nothing changes. */
	if (ctgid == ptgid || !bpf_map_lookup_elem(&tracked, &ptgid))
		return 0;
	bpf_map_update_elem(&tracked, &ctgid, &one, BPF_ANY);
	u = bpf_map_lookup_elem(&usdt_pids, &ptgid);
	if (u)
		bpf_map_update_elem(&usdt_pids, &ctgid, &one, BPF_ANY);
	proc_event(GPU_PROC_FORK, ctgid, ptgid, NULL);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernel naming                                                       */

/* src: the name's user pointer (NAME, REG) or the aliased handle (ALIAS). */
static __always_inline int name_entry(__u64 out, __u64 src, __u32 kind)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending p = {.out = out, .src = src, .kind = kind};

	if (!src)
		return 0;
	bpf_map_update_elem(&pending, &tid, &p, BPF_ANY);
	return 0;
}

/* zeKernelCreate(hModule, const ze_kernel_desc_t *desc, ze_kernel_handle_t *phKernel) */
SEC("uprobe")
int BPF_KPROBE(gl_ze_kernel_create, void *module, const void *desc, void *phkernel)
{
	const char *name = NULL;

	/* ze_kernel_desc_t.pKernelName at offset 24 (x86-64 layout). */
	if (bpf_probe_read_user(&name, sizeof(name), desc + 24))
		return 0;
	return name_entry((__u64)phkernel, (__u64)name, PENDING_NAME);
}

/* cuModuleGetFunction(CUfunction *, CUmodule, const char *name),
 * cuLibraryGetKernel(CUkernel *, CUlibrary, const char *name),
 * hipModuleGetFunction(hipFunction_t *, hipModule_t, const char *name) */
SEC("uprobe")
int BPF_KPROBE(gl_name_out1_name3, void *out, void *module, const char *name)
{
	return name_entry((__u64)out, (__u64)name, PENDING_NAME);
}

/* cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) */
SEC("uprobe")
int BPF_KPROBE(gl_cu_kernel_get_function, void *out, void *kernel)
{
	return name_entry((__u64)out, (__u64)kernel, PENDING_ALIAS);
}

/* The return probe of every naming call (those above and
 * __hipRegisterFunction below): read the handle the callee wrote, and the
 * name now that the callee has read it, and remember them. */
SEC("uretprobe")
int BPF_KRETPROBE(gl_name_ret, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct gpu_name_key k = {.pid = id >> 32};
	struct gpu_name_key src = {.pid = id >> 32};
	struct gpu_name_val *from;
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);
	struct scratch *s = get_scratch();

	if (!p)
		return 0;
	if (!s)
		goto out;
	if (p->kind == PENDING_REG) {
		/* __hipRegisterFunction returns nothing; the handle is the host
		 * stub launches are given. */
		k.handle = p->out;
	} else if ((int)ret != 0 ||
		   bpf_probe_read_user(&k.handle, sizeof(k.handle), (void *)p->out)) {
		/* All three runtimes return 0 for success (ZE_RESULT_SUCCESS,
		 * CUDA_SUCCESS, hipSuccess); the result is an int-sized enum. */
		goto out;
	}
	if (p->kind == PENDING_ALIAS) {
		src.handle = p->src;
		from = bpf_map_lookup_elem(&names, &src);
		if (from) {
			__builtin_memcpy(&s->val, from, sizeof(s->val));
			bpf_map_update_elem(&names, &k, &s->val, BPF_ANY);
		}
		goto out;
	}
	__builtin_memset(&s->val, 0, sizeof(s->val) - sizeof(s->val.name));
	if (bpf_probe_read_user_str(s->val.name, sizeof(s->val.name), (void *)p->src) > 0)
		bpf_map_update_elem(&names, &k, &s->val, BPF_ANY);
out:
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}

/* __hipRegisterFunction(void **modules, const void *hostFunction,
 *                       char *deviceFunction, const char *deviceName, ...):
 * hipLaunchKernel is given the host stub; this is where its name is. */
SEC("uprobe")
int BPF_KPROBE(gl_hip_register_function, void *modules, void *host_fn, const char *dev_fn,
	       const char *dev_name)
{
	if (!host_fn)
		return 0;
	return name_entry((__u64)host_fn, (__u64)(dev_name ?: dev_fn), PENDING_REG);
}

/* zeKernelSetGroupSize(hKernel, x, y, z): the block size of later launches. */
SEC("uprobe")
int BPF_KPROBE(gl_ze_set_group_size, void *kernel, __u32 x, __u32 y, __u32 z)
{
	struct gpu_name_key k = {.pid = bpf_get_current_pid_tgid() >> 32, .handle = (__u64)kernel};
	struct gpu_name_val *v = bpf_map_lookup_elem(&names, &k);

	if (!v)
		return 0;
	v->block[0] = x;
	v->block[1] = y;
	v->block[2] = z;
	v->has_block = 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Launches                                                            */

static __always_inline struct gpu_launch_rec *launch_begin(__u16 api, __u64 handle, __u64 queue)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gpu_name_key k = {.pid = id >> 32, .handle = handle};
	struct scratch *s = get_scratch();
	struct gpu_launch_rec *r;
	struct gpu_name_val *v;

	if (!s)
		return NULL;
	r = &s->rec;
	r->type = GPU_LAUNCH_REC_TYPE;
	r->version = GPU_LAUNCH_REC_VERSION;
	r->pid = id >> 32;
	r->tid = (__u32)id;
	r->uid = current_owner();
	r->api = api;
	r->flags = 0;
	r->cpu = (__u16)bpf_get_smp_processor_id();
	r->ts_ns = bpf_ktime_get_ns();
	r->correlation = __sync_fetch_and_add(&correlation, 1) + 1;
	r->queue = queue;
	r->handle = handle;
	r->gpu_addr = 0;
	r->iba = 0;
	r->isa_size = 0;
	r->caller = 0;
	r->us.len = 0;
	r->npy = 0;
	r->pyflags = 0;
	r->pad = 0;
	r->us.flags = 0;
	r->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	v = handle ? bpf_map_lookup_elem(&names, &k) : NULL;
	if (v && v->name[0]) {
		/* Map value to record: a bounded copy of the whole buffer is
		 * cheaper for the verifier than a string copy. */
		__builtin_memcpy(r->name, v->name, sizeof(r->name));
		r->flags |= GPU_LAUNCH_F_NAME;
	} else {
		r->name[0] = '\0';
	}
	if (v && v->has_block) {
		r->block[0] = v->block[0];
		r->block[1] = v->block[1];
		r->block[2] = v->block[2];
		r->flags |= GPU_LAUNCH_F_BLOCK;
	}
	return r;
}

/* Whether this launch skips the stack walk: a call site seen before on
 * this thread for this kernel, and not its stack_sample'th launch since. */
static __always_inline bool stack_skip(const struct gpu_launch_rec *r)
{
	struct gpu_site_key k = {.tid = r->tid, .handle = r->handle, .caller = r->caller};
	__u64 one = 1, *n;

	/* USDT launches have no call site to key on: always walked; and a
	 * Python process launches from the same native site (ctypes, a
	 * framework's binding) for many Python callers. */
	if (stack_sample <= 1 || !r->caller || bpf_map_lookup_elem(&py_procs, &r->pid))
		return false;
	n = bpf_map_lookup_elem(&sites, &k);
	if (!n) {
		bpf_map_update_elem(&sites, &k, &one, BPF_ANY);
		return false;
	}
	/* Per-thread key: no other CPU updates it concurrently. */
	*n += 1;
	return *n % stack_sample != 0;
}

/*
 * The registers and the top of the stack, sent for the daemon's CFI
 * unwinder: a uprobe's ctx is the user pt_regs at the probed instruction.
 * A dynptr reservation takes a size known only now, so the ring holds
 * exactly the bytes copied.
 */
static __always_inline int send_copy(struct pt_regs *ctx, struct gpu_launch_rec *r)
{
	struct scratch *s = (struct scratch *)r; /* rec is the slot's first member */
	struct bpf_dynptr ptr;
	__u64 slen; /* 64-bit: a 32-bit copy's bound would not carry over */
	__u64 pylen;

	r->nuser = 0;
	ustack_copy(&r->us, s->stack, stack_bytes, PT_REGS_IP(ctx), PT_REGS_SP(ctx),
		    PT_REGS_FP(ctx));
	r->npy = pystack_take(&s->py, r->pid, ((__u64)r->pid << 32) | r->tid, &r->pyflags);
	pylen = (__u64)r->npy * PYSTACK_NODE_BYTES;
	barrier_var(pylen);
	if (pylen > sizeof(s->py.nodes))
		pylen = 0;
	slen = r->us.len;
	barrier_var(slen);
	if (slen > USTACK_MAX_BYTES + USTACK_PAGE)
		slen = 0;
	if (bpf_ringbuf_reserve_dynptr(&events, GPU_LAUNCH_HDR_BYTES + pylen + slen, 0, &ptr)) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		count(0);
		return 0;
	}
	if (bpf_dynptr_write(&ptr, 0, r, GPU_LAUNCH_HDR_BYTES, 0) ||
	    (pylen && bpf_dynptr_write(&ptr, GPU_LAUNCH_HDR_BYTES, s->py.nodes, pylen, 0)) ||
	    (slen && bpf_dynptr_write(&ptr, GPU_LAUNCH_HDR_BYTES + pylen, s->stack, slen, 0))) {
		bpf_ringbuf_discard_dynptr(&ptr, 0);
		count(0);
		return 0;
	}
	bpf_ringbuf_submit_dynptr(&ptr, rb_flags());
	return 0;
}

static __always_inline int launch_send(struct pt_regs *ctx, struct gpu_launch_rec *r)
{
	long ret;
	__u64 n;

	if (r->api != GPU_API_ZE_USDT)
		bpf_probe_read_user(&r->caller, sizeof(r->caller), (void *)PT_REGS_SP(ctx));

	if (!(r->flags & GPU_LAUNCH_F_NAME))
		count(1);
	if (stack_skip(r)) {
		r->flags |= GPU_LAUNCH_F_NOSTACK;
		r->nuser = 0;
		if (bpf_ringbuf_output(&events, r, GPU_LAUNCH_HDR_BYTES, rb_flags()))
			count(0);
		return 0;
	}
	if (stack_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) < copy_below)
		return send_copy(ctx, r);
	/* Frame pointers: at a function-entry uprobe the caller's frame is
	 * found from the return address at the stack pointer (x86: kernel
	 * >= 6.11 adds it when the probe sits on the push of %rbp; userspace
	 * adds it otherwise). */
	ret = bpf_get_stack(ctx, r->ips, sizeof(r->ips), BPF_F_USER_STACK);
	n = ret > 0 ? (__u64)ret / sizeof(__u64) : 0;
	if (n > GPU_LAUNCH_MAX_FRAMES)
		n = GPU_LAUNCH_MAX_FRAMES;
	r->nuser = n;
	if (bpf_ringbuf_output(&events, r, GPU_LAUNCH_HDR_BYTES + n * sizeof(__u64), rb_flags()))
		count(0);
	return 0;
}

static __always_inline void set_grid(struct gpu_launch_rec *r, __u32 x, __u32 y, __u32 z)
{
	r->grid[0] = x;
	r->grid[1] = y;
	r->grid[2] = z;
	r->flags |= GPU_LAUNCH_F_GRID;
}

static __always_inline void set_block(struct gpu_launch_rec *r, __u32 x, __u32 y, __u32 z)
{
	r->block[0] = x;
	r->block[1] = y;
	r->block[2] = z;
	r->flags |= GPU_LAUNCH_F_BLOCK;
}

/* With NEO's USDT attached for this process, leave the launch to it. */
static __always_inline bool ze_defer_to_usdt(__u64 queue, __u64 group_counts)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct ze_inflight in = {.queue = queue, .group_counts = group_counts};

	if (!bpf_map_lookup_elem(&usdt_pids, &tgid))
		return false;
	bpf_map_update_elem(&ze_inflight, &tid, &in, BPF_ANY);
	return true;
}

/* zeCommandListAppendLaunchKernel / ...Cooperative / ...WithParameters:
 * (hCommandList, hKernel, const ze_group_count_t *, ...) */
SEC("uprobe")
int BPF_KPROBE(gl_ze_launch, void *cmdlist, void *kernel, const __u32 *group_counts)
{
	struct gpu_launch_rec *r;
	__u32 gc[3];

	if (ze_defer_to_usdt((__u64)cmdlist, (__u64)group_counts))
		return 0;
	r = launch_begin((__u16)bpf_get_attach_cookie(ctx), (__u64)kernel, (__u64)cmdlist);
	if (!r)
		return 0;
	if (group_counts && !bpf_probe_read_user(gc, sizeof(gc), group_counts))
		set_grid(r, gc[0], gc[1], gc[2]);
	return launch_send(ctx, r);
}

/* zeCommandListAppendLaunchKernelIndirect: the counts live in device
 * memory (pLaunchArgumentsBuffer), not readable here. */
SEC("uprobe")
int BPF_KPROBE(gl_ze_launch_indirect, void *cmdlist, void *kernel)
{
	struct gpu_launch_rec *r;

	if (ze_defer_to_usdt((__u64)cmdlist, 0))
		return 0;
	r = launch_begin(GPU_API_ZE_INDIRECT, (__u64)kernel, (__u64)cmdlist);
	if (!r)
		return 0;
	return launch_send(ctx, r);
}

/* zeCommandListAppendLaunchKernelWithArguments(hCommandList, hKernel,
 * ze_group_count_t groupCounts, ze_group_size_t groupSizes, ...): each
 * 12-byte struct by value takes two integer registers (SysV x86-64). */
SEC("uprobe")
int BPF_KPROBE(gl_ze_launch_args, void *cmdlist, void *kernel, __u64 gxy, __u64 gz, __u64 bxy)
{
	__u64 bz = ARG6(ctx);
	struct gpu_launch_rec *r;

	if (ze_defer_to_usdt((__u64)cmdlist, 0))
		return 0;
	r = launch_begin(GPU_API_ZE_WITH_ARGS, (__u64)kernel, (__u64)cmdlist);
	if (!r)
		return 0;
	set_grid(r, (__u32)gxy, (__u32)(gxy >> 32), (__u32)gz);
	set_block(r, (__u32)bxy, (__u32)(bxy >> 32), (__u32)bz);
	return launch_send(ctx, r);
}

/* level_zero:launch_kernel(u64 iba, u64 gpu_addr, u64 size, char *name),
 * fired inside NEO's appendLaunchKernelWithParams. */
SEC("usdt")
int BPF_USDT(gl_ze_usdt_launch, __u64 iba, __u64 gpu_addr, __u64 size, const char *name)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ze_inflight *in = bpf_map_lookup_elem(&ze_inflight, &tid);
	struct gpu_launch_rec *r;
	__u32 gc[3];

	r = launch_begin(GPU_API_ZE_USDT, 0, in ? in->queue : 0);
	if (!r)
		return 0;
	r->gpu_addr = gpu_addr;
	r->iba = iba;
	r->isa_size = size;
	if (name && bpf_probe_read_user_str(r->name, sizeof(r->name), name) > 0)
		r->flags |= GPU_LAUNCH_F_NAME;
	if (in) {
		if (in->group_counts &&
		    !bpf_probe_read_user(gc, sizeof(gc), (void *)in->group_counts))
			set_grid(r, gc[0], gc[1], gc[2]);
		bpf_map_delete_elem(&ze_inflight, &tid);
	}
	return launch_send(ctx, r);
}

/* level_zero:compile_kernel(char *path), fired in NEO's
 * ModuleImp::initialize() once it wrote a debug zebin to path. */
SEC("usdt")
int BPF_USDT(gl_ze_usdt_compile, const char *path)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gpu_zebin_rec *r;

	if (!path)
		return 0;
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(0);
		return 0;
	}
	r->type = GPU_ZEBIN_REC_TYPE;
	r->version = GPU_LAUNCH_REC_VERSION;
	r->pid = (__u32)(id >> 32);
	r->tid = (__u32)id;
	r->pad = 0;
	r->ts_ns = bpf_ktime_get_ns();
	if (bpf_probe_read_user_str(r->path, sizeof(r->path), path) <= 0) {
		bpf_ringbuf_discard(r, 0);
		return 0;
	}
	/* Rare, and userspace reads the file before NEO may overwrite it. */
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* cuLaunchKernel[_ptsz] / cuLaunchCooperativeKernel / hipModuleLaunchKernel:
 * (f, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMem, stream, ...).
 * Arguments 7.. are on the stack above the return address (SysV x86-64). */
SEC("uprobe")
int BPF_KPROBE(gl_cu_launch, void *f, __u32 gx, __u32 gy, __u32 gz, __u32 bx)
{
	__u32 by = (__u32)ARG6(ctx);
	struct gpu_launch_rec *r;
	__u64 stk[3] = {}; /* blockDimZ, sharedMemBytes, hStream */

	bpf_probe_read_user(stk, sizeof(stk), (void *)(PT_REGS_SP(ctx) + 8));
	r = launch_begin((__u16)bpf_get_attach_cookie(ctx), (__u64)f, stk[2]);
	if (!r)
		return 0;
	set_grid(r, gx, gy, gz);
	set_block(r, bx, by, (__u32)stk[0]);
	return launch_send(ctx, r);
}

/* cuLaunchKernelEx[_ptsz](const CUlaunchConfig *config, CUfunction f, ...) */
SEC("uprobe")
int BPF_KPROBE(gl_cu_launch_ex, const __u32 *config, void *f)
{
	struct gpu_launch_rec *r;
	__u32 cfg[10] = {}; /* grid[3], block[3], sharedMem, pad, hStream @32 */

	if (bpf_probe_read_user(cfg, sizeof(cfg), config))
		return 0;
	r = launch_begin(GPU_API_CU_LAUNCH_EX, (__u64)f, (__u64)cfg[8] | (__u64)cfg[9] << 32);
	if (!r)
		return 0;
	set_grid(r, cfg[0], cfg[1], cfg[2]);
	set_block(r, cfg[3], cfg[4], cfg[5]);
	return launch_send(ctx, r);
}

/* hipLaunchKernel[_spt] / hipExtLaunchKernel(const void *host_stub,
 * dim3 numBlocks, dim3 dimBlocks, void **args, size_t shmem, hipStream_t):
 * each dim3 by value in two registers, shmem and stream on the stack. */
SEC("uprobe")
int BPF_KPROBE(gl_hip_launch, void *fn, __u64 gxy, __u64 gz, __u64 bxy, __u64 bz)
{
	struct gpu_launch_rec *r;
	__u64 stk[2] = {}; /* sharedMemBytes, stream */

	bpf_probe_read_user(stk, sizeof(stk), (void *)(PT_REGS_SP(ctx) + 8));
	r = launch_begin((__u16)bpf_get_attach_cookie(ctx), (__u64)fn, stk[1]);
	if (!r)
		return 0;
	set_grid(r, (__u32)gxy, (__u32)(gxy >> 32), (__u32)gz);
	set_block(r, (__u32)bxy, (__u32)(bxy >> 32), (__u32)bz);
	return launch_send(ctx, r);
}

/* Tells userspace that uprobes can be attached at all (see gpu_launch.c). */
SEC("uprobe")
int BPF_KPROBE(gl_selftest)
{
	return 0;
}
