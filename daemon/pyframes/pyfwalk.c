// SPDX-License-Identifier: MIT
/*
 * One thread's Python frames: its PyThreadState, then the frame chain.
 *
 * Which thread state belongs to a kernel TID: never the "current" thread
 * state (gilstate.tstate_current up to 3.11, the _Py_tss_tstate TLS from
 * 3.12): both forget a thread while it has released the GIL, though its
 * Python frames are live (a thread in time.sleep or in a C extension that
 * dropped the GIL). Instead every interpreter's thread list is walked:
 * - 3.11+: PyThreadState.native_thread_id is the thread's TID as the
 *   process sees it (gettid() in its PID namespace);
 * - 3.9/3.10 have no such field, only thread_id = pthread_self(), the
 *   address of glibc's struct pthread, which holds the TID at a fixed
 *   offset. That offset is found once per process by matching every thread
 *   state's struct pthread against the TIDs of /proc/PID/task: no
 *   assumption on the C library's version (the BPF walk will compare
 *   thread_id with the task's fsbase instead, which is the same value).
 * Both compare with the TID in the process's own PID namespace (NSpid in
 * /proc/PID/task/TID/status), so processes in containers work.
 */
#include "pyf_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PTHREAD_SCAN 1024 /* bytes of struct pthread searched for the TID */

/* The TID as the process itself sees it: the last NSpid field. */
static uint32_t ns_tid(const struct pyf_proc *p, uint32_t tid)
{
	char path[256], buf[2048], *s;
	unsigned long v = tid;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/task/%" PRIu32 "/status", p->proc_dir, p->pid,
		 tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tid;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return tid;
	buf[n] = '\0';
	s = strstr(buf, "\nNSpid:");
	if (!s)
		return tid;
	s += 7;
	for (;;) {
		char *e;
		unsigned long x = strtoul(s, &e, 10);

		if (e == s)
			break;
		v = x;
		s = e;
	}
	return (uint32_t)v;
}

/* Thread states of every interpreter, at most max, in list order; those
 * from *main_from on are the last interpreter's, the main one's. */
static unsigned list_tstates_main(struct pyf_proc *p, uint64_t *ts, unsigned max,
				  unsigned *main_from)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t interp;
	unsigned n = 0;

	*main_from = 0;
	if (pyf_read_u64(p, p->runtime + l->rt_interp_head, &interp))
		return 0;
	for (unsigned i = 0; interp && i < PYF_MAX_INTERPS; i++) {
		uint64_t t;

		*main_from = n;
		if (pyf_read_u64(p, interp + l->is_threads_head, &t))
			break;
		for (unsigned j = 0; t && j < PYF_MAX_THREADS && n < max; j++) {
			ts[n++] = t;
			if (pyf_read_u64(p, t + l->ts_next, &t))
				break;
		}
		if (pyf_read_u64(p, interp + l->is_next, &interp))
			break;
	}
	return n;
}

static unsigned list_tstates(struct pyf_proc *p, uint64_t *ts, unsigned max)
{
	unsigned main_from;

	return list_tstates_main(p, ts, max, &main_from);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The process's TIDs in its own namespace, sorted. */
static unsigned task_tids(struct pyf_proc *p, uint32_t *tids, unsigned max)
{
	char path[256];
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/task", p->proc_dir, p->pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < max) {
		char *e;
		unsigned long t = strtoul(de->d_name, &e, 10);

		if (*e || !t)
			continue;
		tids[n++] = ns_tid(p, (uint32_t)t);
	}
	closedir(d);
	qsort(tids, n, sizeof(*tids), cmp_u32);
	return n;
}

/* Where our own C library keeps the TID in struct pthread: the first guess
 * for the target, right when both use the same C library. */
static int own_pthread_tid_off(void)
{
	static int off = -2;
	uint32_t me = (uint32_t)gettid();
	const uint8_t *self = (const uint8_t *)pthread_self();

	if (off != -2)
		return off;
	off = -1;
	for (int k = 0; k + 4 <= PTHREAD_SCAN && off < 0; k += 4) {
		uint32_t v;

		memcpy(&v, self + k, 4);
		if (v == me)
			off = k;
	}
	return off;
}

/* Does every buffered struct pthread hold a distinct live TID at off? */
static bool tid_off_fits(uint8_t (*bufs)[PTHREAD_SCAN], unsigned nbuf, const uint32_t *tids,
			 unsigned ntids, int off)
{
	uint32_t seen[64];

	if (off < 0 || off + 4 > PTHREAD_SCAN || nbuf > 64)
		return false;
	for (unsigned i = 0; i < nbuf; i++) {
		uint32_t v;

		memcpy(&v, bufs[i] + off, 4);
		if (!v || !bsearch(&v, tids, ntids, sizeof(*tids), cmp_u32))
			return false;
		for (unsigned j = 0; j < i; j++)
			if (seen[j] == v)
				return false;
		seen[i] = v;
	}
	return true;
}

/*
 * The offset of the TID in struct pthread: our own C library's offset when
 * it fits the target, else the first 4-byte-aligned offset at which every
 * thread state's struct pthread (at its thread_id) holds a distinct live
 * TID of the process. With a single thread only the main TID is matched,
 * which a small namespace PID (1 in a container) could match by chance: such
 * a finding is weak and is redone when a lookup misses.
 */
static int calibrate_pthread_tid(struct pyf_proc *p)
{
	enum { MAXT = 64 };
	uint64_t ts[MAXT], selfs[MAXT];
	uint32_t tids[1024];
	unsigned nts = list_tstates(p, ts, MAXT), ntids = task_tids(p, tids, 1024), nbuf = 0;
	uint8_t(*bufs)[PTHREAD_SCAN];
	int found = -1;

	if (!nts || !ntids)
		return -ENOENT;
	bufs = calloc(nts, sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	for (unsigned i = 0; i < nts; i++) {
		uint64_t self;
		bool seen = false;

		if (pyf_read_u64(p, ts[i] + p->lay.ts_thread_id, &self) || !self)
			continue;
		/* a thread running code in a subinterpreter has a thread state
		 * in each: its struct pthread once */
		for (unsigned j = 0; j < nbuf && !seen; j++)
			seen = selfs[j] == self;
		if (!seen && !pyf_read(p, self, bufs[nbuf], PTHREAD_SCAN))
			selfs[nbuf++] = self;
	}
	if (nbuf && tid_off_fits(bufs, nbuf, tids, ntids, own_pthread_tid_off()))
		found = own_pthread_tid_off();
	for (int off = 0; nbuf && found < 0 && off + 4 <= PTHREAD_SCAN; off += 4)
		if (tid_off_fits(bufs, nbuf, tids, ntids, off))
			found = off;
	free(bufs);
	if (found < 0)
		return -ENOENT;
	p->pthread_tid_off = found;
	p->pthread_tid_weak = nbuf < 2;
	return 0;
}

/* The TID a thread state says it runs on (namespace TID), 0 unknown. */
static uint32_t tstate_tid(struct pyf_proc *p, uint64_t ts)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t v;
	uint32_t tid = 0;

	if (l->ts_native_tid != PYF_NONE)
		return pyf_read_u64(p, ts + l->ts_native_tid, &v) ? 0 : (uint32_t)v;
	if (!pyf_read_u64(p, ts + l->ts_thread_id, &v) && v)
		pyf_read(p, v + (uint64_t)p->pthread_tid_off, &tid, sizeof(tid));
	return tid;
}

/* Does the process run the main interpreter alone? Only then is a cached
 * thread state all of a thread's (subinterpreters give it more). */
static bool one_interp(struct pyf_proc *p)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t interp, next;

	return !pyf_read_u64(p, p->runtime + l->rt_interp_head, &interp) && interp &&
	       !pyf_read_u64(p, interp + l->is_next, &next) && !next;
}

/*
 * Does the C stack of host TID tid hold addr? self is the thread's struct
 * pthread (its thread_id), which glibc and musl put in the same mapping as
 * the stack, above it; the main thread's stack is [stack].
 */
static bool on_stack(struct pyf_proc *p, uint32_t tid, uint64_t self, uint64_t addr)
{
	char path[256], line[512];
	bool found = false, mine = false;
	FILE *f;

	if (!addr)
		return false;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", p->proc_dir, p->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		uint64_t lo, hi;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) != 2 || addr < lo || addr >= hi)
			continue;
		found = true;
		if (tid == p->pid)
			mine = strstr(line, "[stack]") != NULL;
		else
			mine = self >= lo && self < hi;
	}
	fclose(f);
	return mine;
}

/*
 * Is thread state t, in a subinterpreter, run by host TID tid (want: its
 * namespace TID; self: its struct pthread, 0 unknown)? Up to 3.12,
 * _xxsubinterpreters.run_string() runs code on the interpreter's first
 * thread state, whatever thread calls it, so its TID names the thread that
 * made the interpreter: what tells the running thread is the thread
 * state's cframe (3.10-3.12), a local of the evaluator running it, on that
 * thread's stack. 3.13 gives each thread that runs code its own thread
 * state. 3.9 has neither: its subinterpreters are not read.
 */
static bool sub_mine(struct pyf_proc *p, uint64_t t, uint32_t tid, uint32_t want, uint64_t self)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t cframe;

	if (l->minor < 10)
		return false;
	if (l->ts_cframe == PYF_NONE)
		return tstate_tid(p, t) == want;
	return !pyf_read_u64(p, t + l->ts_cframe, &cframe) && on_stack(p, tid, self, cframe);
}

/*
 * The thread states of host TID tid, at most max: one per interpreter it
 * runs code in, in the runtime's list order (newest interpreter first, the
 * main one last), which is the order of their chains from the leaf when
 * each interpreter's code was run from an older one's. Returns how many,
 * or negative errno. The main interpreter's is cached, and used alone
 * while it still names this TID (a thread state freed and reused for
 * another thread names that one) and the process has one interpreter.
 */
static int find_tstates(struct pyf_proc *p, uint32_t tid, uint64_t *ret, unsigned max)
{
	unsigned slot = (tid * 2654435761u) >> 24 & (PYF_TID_SLOTS - 1);
	uint64_t *ts, main = 0, self = 0;
	unsigned n, k = 0, main_from;
	uint32_t want;

	if (p->lay.ts_native_tid == PYF_NONE && p->pthread_tid_off < 0 &&
	    calibrate_pthread_tid(p) < 0)
		return -ENOENT;
	if (p->tids[slot].tid == tid &&
	    tstate_tid(p, p->tids[slot].tstate) == p->tids[slot].ns_tid && one_interp(p)) {
		ret[0] = p->tids[slot].tstate;
		return 1;
	}
	want = ns_tid(p, tid);
	ts = malloc(PYF_MAX_THREADS * sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	n = list_tstates_main(p, ts, PYF_MAX_THREADS, &main_from);
	for (unsigned i = main_from; i < n && !main; i++)
		if (tstate_tid(p, ts[i]) == want)
			main = ts[i];
	if (main && pyf_read_u64(p, main + p->lay.ts_thread_id, &self))
		self = 0;
	for (unsigned i = 0; i < main_from && k + 1 < max; i++)
		if (sub_mine(p, ts[i], tid, want, self))
			ret[k++] = ts[i];
	free(ts);
	if (main) {
		ret[k++] = main;
		p->tids[slot].tid = tid;
		p->tids[slot].ns_tid = want;
		p->tids[slot].tstate = main;
	}
	if (k)
		return (int)k;
	if (p->pthread_tid_weak)
		p->pthread_tid_off = -1;
	return -ENOENT;
}

/* 3.9/3.10: PyFrameObjects, each run by its own activation. */
static int walk_frameobj(struct pyf_proc *p, uint64_t ts, struct pyf_runs *c)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t f;

	if (pyf_read_u64(p, ts + l->ts_frame, &f))
		return -EFAULT;
	for (unsigned steps = 0; f; steps++) {
		uint8_t hdr[128];
		struct pystack_node nd = {.frame = f};
		uint32_t lasti;

		if (steps >= PYF_MAX_WALK)
			return PYF_TRUNCATED;
		if (pyf_read(p, f, hdr, l->fo_lasti + 4))
			return c->n ? PYF_TRUNCATED : -EFAULT;
		memcpy(&nd.code, hdr + l->fo_code, 8);
		memcpy(&lasti, hdr + l->fo_lasti, 4);
		nd.instr = lasti; /* as BPF reads it: the low 32 bits */
		if (pyf_chain_add(c, &nd, 0))
			return PYF_TRUNCATED;
		memcpy(&f, hdr + l->fo_back, 8);
	}
	return 0;
}

/* 3.11+: _PyInterpreterFrames. */
static int walk_iframes(struct pyf_proc *p, uint64_t ts, struct pyf_runs *c)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t f, cframe = 0;
	size_t hlen = l->if_owner + 1;

	if (l->chain == PYF_CHAIN_CFRAME) {
		if (pyf_read_u64(p, ts + l->ts_cframe, &cframe) ||
		    pyf_read_u64(p, cframe + l->cf_current, &f))
			return -EFAULT;
	} else if (pyf_read_u64(p, ts + l->ts_frame, &f)) {
		return -EFAULT;
	}
	if (l->if_code + 8 > hlen)
		hlen = l->if_code + 8;
	if (l->if_previous + 8 > hlen)
		hlen = l->if_previous + 8;
	if (l->if_instr + 8 > hlen)
		hlen = l->if_instr + 8;
	if (l->if_is_entry != PYF_NONE && l->if_is_entry + 1 > hlen)
		hlen = l->if_is_entry + 1;
	if (hlen > 256)
		return -EINVAL;
	for (unsigned steps = 0; f; steps++) {
		uint8_t hdr[256];
		struct pystack_node nd = {.frame = f};

		if (steps >= PYF_MAX_WALK)
			return PYF_TRUNCATED;
		if (pyf_read(p, f, hdr, hlen))
			return c->n ? PYF_TRUNCATED : -EFAULT;
		memcpy(&nd.code, hdr + l->if_code, 8);
		memcpy(&nd.instr, hdr + l->if_instr, 8);
		nd.owner = hdr[l->if_owner];
		nd.entry = l->if_is_entry != PYF_NONE && hdr[l->if_is_entry];
		/* 3.11: an entry frame's activation has the next _PyCFrame of
		 * the thread state's chain, its marker */
		if (pyf_chain_add(c, &nd, cframe))
			return PYF_TRUNCATED;
		if (nd.entry && cframe && pyf_read_u64(p, cframe + l->cf_previous, &cframe))
			cframe = 0;
		memcpy(&f, hdr + l->if_previous, 8);
	}
	return 0;
}

int pyf_thread_stack(struct pyf_proc *p, uint32_t tid, struct pyf_frame *frames, unsigned max,
		     unsigned *n)
{
	struct pyf_runs c = {.l = &p->lay, .out = frames, .max = max};
	uint64_t ts[PYSTACK_MAX_TSTATES];
	int nts, r = 0;

	*n = 0;
	if (p->reason[0])
		return -ENOTSUP;
	nts = find_tstates(p, tid, ts, PYSTACK_MAX_TSTATES);
	if (nts < 0)
		return nts;
	/* each chain ends at a run boundary: read one after the other */
	for (int i = 0; i < nts && r == 0; i++)
		r = p->lay.chain == PYF_CHAIN_FRAMEOBJ ? walk_frameobj(p, ts[i], &c)
						       : walk_iframes(p, ts[i], &c);
	*n = c.n;
	return r;
}
