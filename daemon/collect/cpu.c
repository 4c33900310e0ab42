// SPDX-License-Identifier: MIT
/*
 * The always-on CPU stack sampler (userspace half of bpf/cpu_sample.bpf.c).
 *
 * One software cpu-clock perf event per online CPU (pid -1, cpu N), each
 * running the BPF program, which writes variable-length records to one BPF
 * ring buffer. The ring buffer's epoll fd sits on a uv_poll_t; a uv_timer_t
 * drains what the program committed without a wake-up and rescans the
 * online CPUs for hotplug. Each record becomes one STORE_REC_CPU_SAMPLE.
 */
#include "cpu.h"
#include "bpf_perm.h"
#include "rbloop.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cpu_sample_abi.h"
#include "cpu_sample.skel.h"
#include "gpd.h"
#include "log.h"
#include "pyframes/pyreg.h"
#include "store/store.h"
#include "unwind/unwind.h"

#define CPU_DEFAULT_FREQ_HZ 49
/* Drain period. The program wakes us only once a quarter of the ring is
 * pending, so at ordinary rates this timer is what delivers records: 4
 * wake-ups a second however many CPUs sample. */
#define CPU_TICK_MS 250
#define CPU_HOTPLUG_TICKS 20 /* rescan online CPUs every 5 s */
/* Least time between two wake-ups for new programs' first samples (BPF's
 * new_wake_gap_ns). A new program waits at most this (not the drain
 * period) for its mappings to be read: under bench/cpu/churn.sh 2, 50 ms
 * halved these wake-ups for 2 % more samples of processes gone before
 * their read; the drain period (250 ms) cut them 25-fold for 8 % more. */
#define CPU_NEW_WAKE_GAP_MS 50
/* Records handled per poll/timer callback, so a flooded ring cannot hold
 * the loop; the epoll fd stays readable and we come back next iteration. */
#define CPU_DRAIN_BUDGET 4096
#define CPU_STACK_MAX STORE_MAX_FRAMES /* user frames stored, Python ones included */
#define CPU_PIDSET_SLOTS 1024	       /* power of two */
#define CPU_PIDSET_PROBE 8
#define CPU_ONLINE_PATH "/sys/devices/system/cpu/online"

struct cpu_priv {
	struct collector *c;
	struct cpu_sample_bpf *skel; /* loaded by open, NULL when unavailable */
	struct rbloop rbl;	     /* the ring buffer on the loop, between start and stop */

	int ncpus;		 /* possible CPUs: sizes the arrays below */
	struct bpf_link **links; /* per CPU; a link owns its perf event fd */
	bool *online;		 /* scratch for rescans */
	uint64_t *percpu;	 /* scratch for reading the drops map */
	unsigned nattached;

	uint32_t freq_hz;
	size_t ringbuf_bytes;
	bool skip_self;

	unsigned ticks;
	uint64_t lost;		  /* ring buffer full in BPF (per-CPU map, summed) */
	uint64_t local_drops;	  /* tables full, malformed records */
	uint64_t attach_errors;	  /* per-CPU open/attach failures, cumulative */
	uint64_t new_wake_gap_ns; /* least time between wake-ups for new programs */

	struct collector_pid_hook pid_hook;
	struct {
		uint32_t pid;	  /* 0 = empty */
		uint32_t comm;	  /* its command name's string id when last seen */
	} pids[CPU_PIDSET_SLOTS]; /* recently seen processes */
};

static struct cpu_priv *priv_get(struct collector *c)
{
	struct cpu_priv *p = c->priv;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = c;
	p->ringbuf_bytes = CPU_SAMPLE_DEFAULT_RINGBUF_BYTES;
	p->new_wake_gap_ns = CPU_NEW_WAKE_GAP_MS * 1000000ull;
	c->priv = p;
	return p;
}

int cpu_collector_set_pid_hook(struct collector *c, collector_pid_fn fn, void *arg)
{
	struct cpu_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	collector_pid_hook_set(&p->pid_hook, fn, arg);
	memset(p->pids, 0, sizeof(p->pids));
	return 0;
}

int cpu_collector_set_new_wake_gap(struct collector *c, uint64_t gap_ns)
{
	struct cpu_priv *p = priv_get(c);

	if (!p)
		return -ENOMEM;
	p->new_wake_gap_ns = gap_ns;
	return 0;
}

int cpu_collector_configure(struct collector *c, size_t ringbuf_bytes, bool skip_self)
{
	struct cpu_priv *p = priv_get(c);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), sz = page;

	if (!p)
		return -ENOMEM;
	if (ringbuf_bytes) {
		/* BPF_MAP_TYPE_RINGBUF: a power-of-two multiple of the page
		 * size (ringbuf_map_alloc() rejects anything else). */
		while (sz < ringbuf_bytes && sz < ((size_t)1 << 30))
			sz <<= 1;
		p->ringbuf_bytes = sz;
	}
	p->skip_self = skip_self;
	return 0;
}

int cpu_parse_cpulist(const char *s, bool *mask, int n)
{
	int count = 0;

	for (int i = 0; i < n; i++)
		mask[i] = false;
	while (*s && *s != '\n') {
		char *end;
		unsigned long lo, hi;

		errno = 0;
		lo = strtoul(s, &end, 10);
		if (end == s || errno)
			return -EINVAL;
		hi = lo;
		s = end;
		if (*s == '-') {
			s++;
			hi = strtoul(s, &end, 10);
			if (end == s || errno || hi < lo)
				return -EINVAL;
			s = end;
		}
		for (unsigned long cpu = lo; cpu <= hi && cpu < (unsigned long)n; cpu++) {
			if (!mask[cpu])
				count++;
			mask[cpu] = true;
		}
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -EINVAL;
	}
	return count;
}

static int read_online(struct cpu_priv *p)
{
	char buf[4096];
	ssize_t len;
	int fd = open(CPU_ONLINE_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf) - 1);
	if (len < 0)
		len = -errno;
	close(fd);
	if (len < 0)
		return (int)len;
	buf[len] = '\0';
	return cpu_parse_cpulist(buf, p->online, p->ncpus);
}

static int read_sysctl_int(const char *path, long *val)
{
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f)
		return -errno;
	if (fscanf(f, "%ld", val) != 1)
		r = -EINVAL;
	fclose(f);
	return r;
}

static int open_cpu_event(uint32_t freq_hz, int cpu)
{
	/* Software cpu-clock: an hrtimer per CPU, present on every kernel and
	 * VM (no PMU needed). With freq set the kernel turns sample_freq into
	 * a fixed period (perf_swevent_init_hrtimer()). Opened disabled:
	 * bpf_program__attach_perf_event() enables it once the program is
	 * set, so no sample fires into an event without one. */
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq_hz,
		.freq = 1,
		.disabled = 1,
	};
	long fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

/* Turn a perf_event_open() failure into a reason a reader can act on. */
static void perf_open_reason(struct cpu_priv *p, int err, char *buf, size_t len)
{
	long val;

	if ((err == -EACCES || err == -EPERM) &&
	    !read_sysctl_int("/proc/sys/kernel/perf_event_paranoid", &val))
		snprintf(buf, len, "perf_event_open: %s (kernel.perf_event_paranoid=%ld)",
			 strerror(-err), val);
	else if (err == -EINVAL &&
		 !read_sysctl_int("/proc/sys/kernel/perf_event_max_sample_rate", &val) &&
		 (long)p->freq_hz > val)
		snprintf(buf, len,
			 "perf_event_open: %s (sampling.cpu_frequency %" PRIu32
			 " Hz above kernel.perf_event_max_sample_rate=%ld)",
			 strerror(-err), p->freq_hz, val);
	else
		snprintf(buf, len, "perf_event_open(cpu-clock, %" PRIu32 " Hz): %s", p->freq_hz,
			 strerror(-err));
}

static int attach_cpu(struct cpu_priv *p, int cpu)
{
	struct bpf_link *link;
	int fd = open_cpu_event(p->freq_hz, cpu);

	if (fd < 0)
		return fd;
	link = bpf_program__attach_perf_event(p->skel->progs.cpu_sample, fd);
	if (!link) {
		int err = -errno;

		close(fd);
		return err;
	}
	p->links[cpu] = link;
	p->nattached++;
	return 0;
}

static void detach_cpu(struct cpu_priv *p, int cpu)
{
	if (!p->links[cpu])
		return;
	/* libbpf's perf link disables the event and closes its fd
	 * (bpf_link_perf_detach()), so no close() of our own. */
	bpf_link__destroy(p->links[cpu]);
	p->links[cpu] = NULL;
	p->nattached--;
}

/* Attach to CPUs that are online and not attached, detach from CPUs that
 * went away. A CPU that fails is counted and retried at the next rescan. */
static int sync_cpus(struct cpu_priv *p)
{
	int r = read_online(p), first_err = 0;

	if (r < 0)
		return r;
	for (int cpu = 0; cpu < p->ncpus; cpu++) {
		if (p->online[cpu] && !p->links[cpu]) {
			r = attach_cpu(p, cpu);
			if (r < 0) {
				p->attach_errors++;
				if (!first_err)
					first_err = r;
				log_debug("cpu: attach to CPU %d: %s", cpu, strerror(-r));
			}
		} else if (!p->online[cpu] && p->links[cpu]) {
			/* An offlined CPU's event is kept by the kernel but
			 * stays off when the CPU returns; reopen then. */
			detach_cpu(p, cpu);
		}
	}
	return first_err;
}

static void read_lost(struct cpu_priv *p)
{
	if (!p->skel || rbloop_percpu_sum(p->skel->maps.drops, 0, p->percpu, p->ncpus, &p->lost))
		return;
	p->c->drops = p->lost + p->local_drops;
}

/*
 * A process was sampled: report it to the symbolizer the first time, and
 * again, as an exec, when its main thread's command name changed since
 * (the program it was first seen running -- say the shell or setpriv
 * before its exec -- is not the one it runs now). Only the main thread's
 * name counts: other threads name themselves freely, while exec renames
 * the thread that becomes the main one. An exec also drops the unwinder's
 * snapshot. comm 0: a sample of another thread.
 */
static void note_pid(struct cpu_priv *p, uint32_t pid, uint32_t comm)
{
	uint32_t h = (pid * 2654435761u) & (CPU_PIDSET_SLOTS - 1);
	bool exec = false;
	unsigned i;

	/* Slots are only ever overwritten, never emptied, so an empty slot
	 * ends the probe. A pid pushed out is reported again when seen next:
	 * harmless for a symbolizer that caches per pid. */
	for (i = 0; i < CPU_PIDSET_PROBE; i++) {
		unsigned k = (h + i) & (CPU_PIDSET_SLOTS - 1);

		if (p->pids[k].pid == pid) {
			if (!comm || p->pids[k].comm == comm)
				return;
			exec = p->pids[k].comm != 0;
			p->pids[k].comm = comm;
			if (!exec)
				return;
			break;
		}
		if (!p->pids[k].pid)
			break;
	}
	h = i < CPU_PIDSET_PROBE ? (h + i) & (CPU_PIDSET_SLOTS - 1) : h;
	p->pids[h].pid = pid;
	p->pids[h].comm = comm;
	if (exec && p->c->gpd->unwinder)
		unwind_forget_pid(p->c->gpd->unwinder, pid);
	pyreg_note_pid(p->c->gpd->pyreg, pid, exec);
	collector_pid_hook_call(&p->pid_hook, pid, exec);
}

/*
 * The sample's stack for the store: the user part unwound from the copied
 * stack when the program sent one (nuser 0 then), with the Python frames
 * BPF read spliced in, followed by the kernel frames. The copy is only read
 * here; the ring slot holding it is released as soon as this callback
 * returns.
 */
static uint32_t intern_stack(struct cpu_priv *p, const struct cpu_sample_rec *r, size_t size)
{
	struct gpd *g = p->c->gpd;
	const uint8_t *pyb = (const uint8_t *)r->ips + ((size_t)r->nuser + r->nkernel) * 8;
	const uint8_t *bytes = pyb + (size_t)r->npy * PYSTACK_NODE_BYTES;
	uint64_t ips[CPU_STACK_MAX + CPU_SAMPLE_MAX_FRAMES];
	struct pyreg_sample smp = {
		.pid = r->pid,
		.us = &r->us,
		.stack = bytes,
		.stack_avail = size - (size_t)(bytes - (const uint8_t *)r),
		.ips = (const uint64_t *)r->ips,
		.nips = r->nuser,
		.nodes = pyb,
		.nnodes = r->npy,
		.pyflags = r->pyflags,
	};
	unsigned nu = pyreg_user_stack(g->pyreg, g->unwinder, &smp, ips, CPU_STACK_MAX, NULL);

	memcpy(&ips[nu], (const uint64_t *)r->ips + r->nuser,
	       (size_t)r->nkernel * sizeof(uint64_t));
	return store_stack_intern(g->store, ips, (uint16_t)nu, r->nkernel);
}

static int on_sample(void *ctx, void *data, size_t size)
{
	struct cpu_priv *p = ctx;
	struct collector *c = p->c;
	struct store *s = c->gpd->store;
	const struct cpu_sample_rec *r = data;
	uint32_t comm, stack;
	struct store_rec rec;

	if (size < CPU_SAMPLE_HDR_BYTES || r->type != CPU_SAMPLE_REC_TYPE ||
	    r->version != CPU_SAMPLE_REC_VERSION || r->nuser > CPU_SAMPLE_MAX_FRAMES ||
	    r->nkernel > CPU_SAMPLE_MAX_FRAMES || r->npy > PYSTACK_MAX_NODES ||
	    size < CPU_SAMPLE_HDR_BYTES + ((size_t)r->nuser + r->nkernel) * sizeof(uint64_t) +
			    (size_t)r->npy * PYSTACK_NODE_BYTES) {
		p->local_drops++;
		goto out;
	}

	comm = store_str_intern(s, r->comm, strnlen(r->comm, sizeof(r->comm)));
	/* before unwinding: an exec makes the unwinder's snapshot stale */
	note_pid(p, r->pid, r->tid == r->pid ? comm : 0);
	stack = intern_stack(p, r, size);
	if (!comm || !stack) {
		if (comm)
			store_str_unref(s, comm);
		if (stack)
			store_stack_unref(s, stack);
		p->local_drops++;
		goto out;
	}

	rec = (struct store_rec){
		.ts_ns = r->ts_ns,
		.pid = r->pid,
		.tid = r->tid,
		.uid = r->uid,
		.comm = comm,
		.stack = stack,
		.type = STORE_REC_CPU_SAMPLE,
		.cpu = (uint16_t)r->cpu,
		.aux32 = 1,
	};
	store_append(s, &rec);
	c->events++;

out:
	c->drops = p->lost + p->local_drops;
	return rbloop_took(&p->rbl);
}

/* Timer housekeeping, after each timer drain (rbloop). */
static void on_tick(void *arg)
{
	struct cpu_priv *p = arg;

	if (++p->ticks % CPU_HOTPLUG_TICKS == 0) {
		read_lost(p);
		sync_cpus(p);
	}
}

static void release_bpf(struct cpu_priv *p)
{
	cpu_sample_bpf__destroy(p->skel);
	p->skel = NULL;
	free(p->links);
	free(p->online);
	free(p->percpu);
	p->links = NULL;
	p->online = NULL;
	p->percpu = NULL;
}

static int cpu_open(struct collector *c)
{
	struct cpu_priv *p = priv_get(c);
	char why[200];
	int r, probe_cpu = -1;

	if (!p)
		return -ENOMEM;
	if (p->skel)
		return 0;
	p->freq_hz = c->gpd->cfg.sample_freq_hz ? c->gpd->cfg.sample_freq_hz : CPU_DEFAULT_FREQ_HZ;

	/* A kernel without BPF or without perf_event programs: say so and let
	 * the daemon run without CPU samples. */
	r = bpf_perm_ready(c, BPF_PROG_TYPE_PERF_EVENT, "perf_event");
	if (!r)
		return 0;
	p->ncpus = r;
	p->links = calloc((size_t)p->ncpus, sizeof(*p->links));
	p->online = calloc((size_t)p->ncpus, sizeof(*p->online));
	p->percpu = calloc((size_t)p->ncpus, sizeof(*p->percpu));
	if (!p->links || !p->online || !p->percpu) {
		r = -ENOMEM;
		goto err;
	}

	/* One trial event before loading anything: permission (paranoid
	 * level, missing CAP_PERFMON) and frequency limits show up here, with
	 * a reason that names the knob. */
	r = read_online(p);
	for (int cpu = 0; r > 0 && cpu < p->ncpus && probe_cpu < 0; cpu++)
		if (p->online[cpu])
			probe_cpu = cpu;
	if (probe_cpu < 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "no online CPU in %s: %s",
				    CPU_ONLINE_PATH, r < 0 ? strerror(-r) : "empty");
		release_bpf(p);
		return 0;
	}
	r = open_cpu_event(p->freq_hz, probe_cpu);
	if (r < 0) {
		perf_open_reason(p, r, why, sizeof(why));
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "%s", why);
		release_bpf(p);
		return 0;
	}
	close(r);

	p->skel = cpu_sample_bpf__open();
	if (!p->skel) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF open failed: %s",
				    strerror(errno));
		release_bpf(p);
		return 0;
	}
	p->skel->rodata->self_tgid = p->skip_self ? (uint32_t)getpid() : 0;
	p->skel->rodata->wakeup_bytes = p->ringbuf_bytes / 4;
	p->skel->rodata->new_wake_gap_ns = p->new_wake_gap_ns;
	/* No unwinder (sampling.stack_bytes 0): frame pointers in BPF. */
	p->skel->rodata->stack_bytes = c->gpd->unwinder ? c->gpd->cfg.stack_bytes : 0;
	r = bpf_map__set_max_entries(p->skel->maps.samples, (uint32_t)p->ringbuf_bytes);
	/* one map of Python processes for every program (pyreg.h) */
	if (r == 0 && pyreg_map_fd(c->gpd->pyreg) >= 0)
		r = bpf_map__reuse_fd(p->skel->maps.py_procs, pyreg_map_fd(c->gpd->pyreg));
	if (!r) /* one staging slot per possible CPU */
		r = bpf_map__set_max_entries(p->skel->maps.scratch, (uint32_t)p->ncpus);
	if (!r)
		r = cpu_sample_bpf__load(p->skel);
	if (r) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "BPF load failed: %s",
				    strerror(r < 0 ? -r : errno));
		release_bpf(p);
		return 0;
	}
	log_info("cpu: perf_event program loaded: cpu-clock at %" PRIu32
		 " Hz, %d possible CPUs, ring buffer %zu bytes",
		 p->freq_hz, p->ncpus, p->ringbuf_bytes);
	return 0;
err:
	release_bpf(p);
	return r;
}

static void cpu_stop(struct collector *c);

static int cpu_start(struct collector *c)
{
	struct cpu_priv *p = c->priv;
	int r;

	if (!p || !p->skel)
		return 0; /* unavailable: open said why */
	if (rbloop_running(&p->rbl))
		return 0;
	if (rbloop_start(&p->rbl, c, "cpu", bpf_map__fd(p->skel->maps.samples), on_sample, p,
			 CPU_DRAIN_BUDGET, CPU_TICK_MS, on_tick, p) < 0)
		return 0; /* the collector says why */

	r = sync_cpus(p);
	if (!p->nattached) {
		char why[200];

		perf_open_reason(p, r ? r : -ENODEV, why, sizeof(why));
		collector_set_state(c, COLLECTOR_FAILED, "no CPU attached: %s", why);
		cpu_stop(c);
		return 0;
	}
	if (r < 0)
		log_warn("cpu: attached to %u CPUs; some failed: %s", p->nattached, strerror(-r));
	collector_set_state(c, COLLECTOR_ATTACHED, NULL);
	return 0;
}

static void cpu_stop(struct collector *c)
{
	struct cpu_priv *p = c->priv;

	if (!p || !p->skel)
		return;
	for (int cpu = 0; p->links && cpu < p->ncpus; cpu++)
		detach_cpu(p, cpu);
	rbloop_stop(&p->rbl); /* delivers what was committed before the detach */
	read_lost(p);
	/* Back to "off" with no reason: the registry may start it again. */
	if (c->state == COLLECTOR_ATTACHED)
		collector_set_state(c, COLLECTOR_OFF, NULL);
}

/* New programs that woke the loop at once, and those that waited (at most
 * the gap, or the drain if sooner): the mappings of one that exited
 * meanwhile are lost to its stacks (the unwinder's "process_gone"). */
static void new_wakes_status(struct cpu_priv *p, cJSON *obj)
{
	uint64_t woke = 0, waited = 0;
	cJSON *o;

	if (!p->skel || rbloop_percpu_sum(p->skel->maps.new_wakes, 0, p->percpu, p->ncpus, &woke) ||
	    rbloop_percpu_sum(p->skel->maps.new_wakes, 1, p->percpu, p->ncpus, &waited))
		return;
	o = cJSON_AddObjectToObject(obj, "new_program_wakeups");
	if (!o)
		return;
	cJSON_AddNumberToObject(o, "gap_ms", (double)p->skel->rodata->new_wake_gap_ns / 1e6);
	cJSON_AddNumberToObject(o, "woke", (double)woke);
	cJSON_AddNumberToObject(o, "waited_for_drain", (double)waited);
}

static void cpu_status(struct collector *c, cJSON *obj)
{
	struct cpu_priv *p = c->priv;

	if (!p)
		return;
	read_lost(p);
	cJSON_AddNumberToObject(obj, "frequency_hz", p->freq_hz);
	cJSON_AddNumberToObject(obj, "cpus", p->nattached);
	cJSON_AddNumberToObject(obj, "ringbuf_bytes", (double)p->ringbuf_bytes);
	cJSON_AddNumberToObject(obj, "lost", (double)p->lost);
	cJSON_AddNumberToObject(obj, "attach_errors", (double)p->attach_errors);
	cJSON_AddNumberToObject(obj, "stack_bytes", p->skel ? p->skel->rodata->stack_bytes : 0);
	new_wakes_status(p, obj);
}

static void cpu_free(struct collector *c)
{
	struct cpu_priv *p = c->priv;

	if (!p)
		return;
	cpu_stop(c);
	release_bpf(p);
	free(p);
	c->priv = NULL;
}

const struct collector_ops cpu_collector_ops = {
	.name = "cpu",
	.open = cpu_open,
	.start = cpu_start,
	.stop = cpu_stop,
	.status = cpu_status,
	.free = cpu_free,
};
