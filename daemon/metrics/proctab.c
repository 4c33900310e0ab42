// SPDX-License-Identifier: MIT
/*
 * Counting the store's records for the metrics endpoint (proctab.h).
 *
 * Per-process series have bounded cardinality: at most `top` processes
 * hold a series (a slot), everything else is counted in one "other"
 * series. Processes are ranked by a decaying rate of their records. A
 * free slot goes to the busiest process without one; a slot changes hands
 * only when its holder ends, goes unseen for five minutes, or a process
 * without one runs at more than twice its rate (and then at most a
 * quarter of the slots per scan), so series do not flap between scrapes.
 * Each series counts from its admission (what the process did before is
 * in "other"), so every series is a true counter, and together they sum
 * to the total less the series that went.
 */
#include "proctab.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap.h"
#include "store/store.h"

#define PT_CAP 4096u			  /* processes tracked; a power of two */
#define PT_FILL (PT_CAP * 3 / 4)	  /* open addressing stays fast below this */
#define PT_IDLE_NS (300ull * 1000000000)  /* a slot's owner unseen this long loses it */
#define PT_FORGET_NS (30ull * 1000000000) /* untracked entries unseen this long go */
#define PT_GONE_NS (2ull * 1000000000)	  /* quiet this long: check it still runs */
#define PT_MAX_GT 8
#define RATE_DECAY 0.7 /* weight of the past in a process's rate, per scan */
#define RATE_MIN 1.0   /* below this a process takes no slot */

struct pt_ent {
	uint32_t pid; /* 0: empty */
	int32_t slot; /* index into slots, -1: counted in "other" */
	uint64_t seen_ns;
	uint64_t pend_cpu, pend_gpu; /* this scan's, not yet accounted */
	double rate;		     /* records per scan, decaying (RATE_DECAY) */
	uint32_t comm;		     /* store string id of its last record's comm, this scan */
};

struct pt_slot {
	uint32_t pid; /* 0: free */
	char pid_s[12];
	char comm[64];
	char cgroup[256];
	uint64_t cpu, gpu;
};

struct proctab {
	struct proctab_opts o;
	char proc_root[256];
	uint64_t last_appended;
	uint64_t cpu_total, gpu_total, missed;
	uint64_t other_cpu, other_gpu;
	struct pt_ent *ents; /* PT_CAP, hashed by pid */
	unsigned nents;
	struct pt_slot *slots; /* o.top */
	struct {
		bool have_mhz, have_busy;
		uint64_t mhz, busy_pct;
	} gt[PT_MAX_GT];
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int proctab_new(const struct proctab_opts *o, const struct store *st, struct proctab **ret)
{
	struct proctab *t = calloc(1, sizeof(*t));
	struct store_stats ss;

	if (!t)
		return -ENOMEM;
	t->o = *o;
	snprintf(t->proc_root, sizeof(t->proc_root), "%s", o->proc_root ? o->proc_root : "/proc");
	t->o.proc_root = t->proc_root;
	if (o->cpu || o->gpu) {
		t->ents = calloc(PT_CAP, sizeof(*t->ents));
		t->slots = calloc(o->top ? o->top : 1, sizeof(*t->slots));
		if (!t->ents || !t->slots) {
			proctab_free(t);
			return -ENOMEM;
		}
	}
	store_get_stats(st, &ss);
	t->last_appended = ss.appended;
	*ret = t;
	return 0;
}

void proctab_free(struct proctab *t)
{
	if (!t)
		return;
	free(t->ents);
	free(t->slots);
	free(t);
}

static unsigned hash_pid(uint32_t pid)
{
	return (pid * 2654435761u) & (PT_CAP - 1);
}

static void insert(struct proctab *t, const struct pt_ent *e)
{
	unsigned h = hash_pid(e->pid);

	while (t->ents[h].pid)
		h = (h + 1) & (PT_CAP - 1);
	t->ents[h] = *e;
	t->nents++;
}

/* Drop untracked entries nobody saw lately; those of this scan (pending
 * counts) and slot holders stay. */
static void rebuild(struct proctab *t, uint64_t now)
{
	struct pt_ent *old = t->ents;
	struct pt_ent *fresh = calloc(PT_CAP, sizeof(*fresh));

	if (!fresh)
		return;
	t->ents = fresh;
	t->nents = 0;
	for (unsigned i = 0; i < PT_CAP; i++) {
		const struct pt_ent *e = &old[i];

		if (e->pid &&
		    (e->slot >= 0 || e->pend_cpu || e->pend_gpu || now - e->seen_ns < PT_FORGET_NS))
			insert(t, e);
	}
	free(old);
}

/* The entry of pid, added if new; NULL when the table is full even after
 * forgetting the idle (the caller counts the record as "other"). */
static struct pt_ent *lookup(struct proctab *t, uint32_t pid, uint64_t now)
{
	unsigned h = hash_pid(pid);

	for (; t->ents[h].pid; h = (h + 1) & (PT_CAP - 1))
		if (t->ents[h].pid == pid)
			return &t->ents[h];
	if (t->nents >= PT_FILL) {
		rebuild(t, now);
		if (t->nents >= PT_FILL)
			return NULL;
		for (h = hash_pid(pid); t->ents[h].pid; h = (h + 1) & (PT_CAP - 1))
			;
	}
	t->ents[h] = (struct pt_ent){.pid = pid, .slot = -1};
	t->nents++;
	return &t->ents[h];
}

static void note_metric(struct proctab *t, const struct store *st, const struct store_rec *r)
{
	const char *name = store_str(st, r->name, NULL);

	if (!name || r->cpu >= PT_MAX_GT)
		return;
	if (!strcmp(name, "frequency-MHz")) {
		t->gt[r->cpu].mhz = r->aux[0];
		t->gt[r->cpu].have_mhz = true;
	} else if (!strcmp(name, "busy-percent")) {
		t->gt[r->cpu].busy_pct = r->aux[0];
		t->gt[r->cpu].have_busy = true;
	}
}

static void note_proc(struct proctab *t, const struct store_rec *r, bool cpu, uint64_t n,
		      uint64_t now)
{
	struct pt_ent *e;

	if (!t->ents || !r->pid || !(cpu ? t->o.cpu : t->o.gpu))
		return;
	e = lookup(t, r->pid, now);
	if (!e) {
		*(cpu ? &t->other_cpu : &t->other_gpu) += n;
		return;
	}
	*(cpu ? &e->pend_cpu : &e->pend_gpu) += n;
	e->seen_ns = now;
	if (r->comm && (r->tid == r->pid || !e->comm))
		e->comm = r->comm; /* the main thread's name is the process's */
}

/* Read a small /proc file into buf, NUL-terminated ("" when it cannot). */
static void read_small(const char *root, uint32_t pid, const char *what, char *buf, size_t len)
{
	char path[320];
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
}

/* The series labels a process gets, read once when it takes a slot: the
 * name and cgroup v2 path anyone on the host reads in /proc. */
static void fill_slot(struct proctab *t, const struct store *st, struct pt_slot *s,
		      const struct pt_ent *e)
{
	char cg[4096];
	const char *v2;

	memset(s, 0, sizeof(*s));
	s->pid = e->pid;
	snprintf(s->pid_s, sizeof(s->pid_s), "%u", e->pid);
	read_small(t->proc_root, e->pid, "comm", s->comm, sizeof(s->comm));
	s->comm[strcspn(s->comm, "\n")] = '\0';
	if (!s->comm[0] && e->comm) {
		size_t len = 0;
		const char *c = store_str(st, e->comm, &len);

		snprintf(s->comm, sizeof(s->comm), "%.*s", c ? (int)len : 0, c ? c : "");
	}
	/* the cgroup v2 line, "0::/path" (alone, or last of a hybrid set-up) */
	read_small(t->proc_root, e->pid, "cgroup", cg, sizeof(cg));
	v2 = !strncmp(cg, "0::", 3) ? cg : strstr(cg, "\n0::");
	if (v2) {
		v2 += v2[0] == '\n' ? 4 : 3;
		snprintf(s->cgroup, sizeof(s->cgroup), "%.*s", (int)strcspn(v2, "\n"), v2);
	}
}

static bool gone(const struct proctab *t, uint32_t pid)
{
	char path[320];

	snprintf(path, sizeof(path), "%s/%u", t->proc_root, pid);
	return access(path, F_OK) < 0 && errno == ENOENT;
}

static uint64_t weight(const struct proctab *t, const struct pt_ent *e)
{
	return (t->o.cpu ? e->pend_cpu : 0) + (t->o.gpu ? e->pend_gpu : 0);
}

/* The slot holder with the lowest rate (NULL when no slot is held). */
static struct pt_ent *weakest_holder(struct proctab *t)
{
	struct pt_ent *w = NULL;

	for (unsigned i = 0; i < PT_CAP; i++) {
		struct pt_ent *e = &t->ents[i];

		if (e->pid && e->slot >= 0 && (!w || e->rate < w->rate))
			w = e;
	}
	return w;
}

/* The busiest process without a slot (NULL when none runs enough). */
static struct pt_ent *best_candidate(struct proctab *t)
{
	struct pt_ent *b = NULL;

	for (unsigned i = 0; i < PT_CAP; i++) {
		struct pt_ent *e = &t->ents[i];

		if (e->pid && e->slot < 0 && e->rate >= RATE_MIN && (!b || e->rate > b->rate))
			b = e;
	}
	return b;
}

static void release(struct proctab *t, struct pt_ent *e)
{
	t->slots[e->slot].pid = 0;
	e->slot = -1;
}

/* Free the slots of processes that ended or went quiet, give free slots
 * to the busiest processes without one, then let a few much busier ones
 * take the slots of the least busy holders. */
static void assign_slots(struct proctab *t, const struct store *st, uint64_t now)
{
	unsigned swaps = t->o.top / 4 + 1;

	for (unsigned i = 0; i < PT_CAP; i++) {
		struct pt_ent *e = &t->ents[i];

		if (!e->pid || e->slot < 0 || weight(t, e))
			continue;
		if (now - e->seen_ns > PT_IDLE_NS ||
		    (now - e->seen_ns > PT_GONE_NS && gone(t, e->pid))) {
			release(t, e);
			e->rate = 0; /* not a candidate for the slot it frees */
		}
	}
	for (unsigned s = 0; s < t->o.top; s++) {
		struct pt_ent *best;

		if (t->slots[s].pid)
			continue;
		best = best_candidate(t);
		if (!best)
			return;
		best->slot = (int32_t)s;
		fill_slot(t, st, &t->slots[s], best);
	}
	while (swaps--) {
		struct pt_ent *best = best_candidate(t), *weak = weakest_holder(t);
		int32_t s;

		if (!best || !weak || best->rate <= 2 * weak->rate)
			return;
		s = weak->slot;
		release(t, weak);
		best->slot = s;
		fill_slot(t, st, &t->slots[s], best);
	}
}

static void account(struct proctab *t)
{
	for (unsigned i = 0; i < PT_CAP; i++) {
		struct pt_ent *e = &t->ents[i];

		if (!e->pid || !(e->pend_cpu | e->pend_gpu))
			continue;
		if (e->slot >= 0) {
			t->slots[e->slot].cpu += e->pend_cpu;
			t->slots[e->slot].gpu += e->pend_gpu;
		} else {
			t->other_cpu += e->pend_cpu;
			t->other_gpu += e->pend_gpu;
		}
		e->pend_cpu = e->pend_gpu = 0;
		e->comm = 0; /* a string id means nothing after this scan */
	}
}

void proctab_scan(struct proctab *t, const struct store *st)
{
	struct store_stats ss;
	uint64_t now = now_ns(), fresh, avail;
	size_t count = store_count(st);

	store_get_stats(st, &ss);
	fresh = ss.appended - t->last_appended;
	t->last_appended = ss.appended;
	avail = fresh < count ? fresh : count;
	t->missed += fresh - avail;
	for (size_t i = count - avail; i < count; i++) {
		const struct store_rec *r = store_at(st, i);

		switch (r->type) {
		case STORE_REC_CPU_SAMPLE: {
			uint64_t n = r->aux32 ? r->aux32 : 1;

			t->cpu_total += n;
			note_proc(t, r, true, n, now);
			break;
		}
		case STORE_REC_GPU_LAUNCH:
			t->gpu_total++;
			note_proc(t, r, false, 1, now);
			break;
		case STORE_REC_GPU_METRIC:
			note_metric(t, st, r);
			break;
		default:
			break;
		}
	}
	if (t->ents) {
		for (unsigned i = 0; i < PT_CAP; i++)
			if (t->ents[i].pid)
				t->ents[i].rate = t->ents[i].rate * RATE_DECAY +
						  (double)weight(t, &t->ents[i]);
		assign_slots(t, st, now);
		account(t);
	}
}

static void emit_per_process(const struct proctab *t, struct msnap *s, bool cpu)
{
	if (cpu)
		msnap_family(s, "gpuprof_process_cpu_samples", MSNAP_COUNTER, NULL,
			     "CPU stack samples taken of a process since it got its series "
			     "(metrics.top busiest; comm=\"other\": all the rest).");
	else
		msnap_family(s, "gpuprof_process_gpu_launches", MSNAP_COUNTER, NULL,
			     "GPU kernel launches by a process since it got its series "
			     "(metrics.top busiest; comm=\"other\": all the rest).");
	for (unsigned i = 0; i < t->o.top; i++) {
		const struct pt_slot *p = &t->slots[i];

		if (p->pid)
			msnap_add(s, (double)(cpu ? p->cpu : p->gpu), "pid", p->pid_s, "comm",
				  p->comm, "cgroup", p->cgroup, NULL);
	}
	msnap_add(s, (double)(cpu ? t->other_cpu : t->other_gpu), "pid", "", "comm", "other",
		  "cgroup", "", NULL);
}

void proctab_emit(const struct proctab *t, struct msnap *s)
{
	char gt[8];

	msnap_family(s, "gpuprof_cpu_samples", MSNAP_COUNTER, NULL,
		     "CPU stack samples the daemon stored since the endpoint started.");
	msnap_add(s, (double)t->cpu_total, NULL);
	msnap_family(s, "gpuprof_gpu_launches", MSNAP_COUNTER, NULL,
		     "GPU kernel launches the daemon stored since the endpoint started.");
	msnap_add(s, (double)t->gpu_total, NULL);
	msnap_family(s, "gpuprof_metrics_records_missed", MSNAP_COUNTER, NULL,
		     "Records the store evicted before the endpoint counted them.");
	msnap_add(s, (double)t->missed, NULL);
	if (t->ents && t->o.cpu)
		emit_per_process(t, s, true);
	if (t->ents && t->o.gpu)
		emit_per_process(t, s, false);
	msnap_family(s, "gpuprof_gpu_frequency_hertz", MSNAP_GAUGE, "hertz",
		     "GPU clock over the last hardware sample (Intel Xe OA), per GT.");
	for (unsigned i = 0; i < PT_MAX_GT; i++) {
		snprintf(gt, sizeof(gt), "%u", i);
		if (t->gt[i].have_mhz)
			msnap_add(s, (double)t->gt[i].mhz * 1e6, "gt", gt, NULL);
	}
	msnap_family(s, "gpuprof_gpu_busy_ratio", MSNAP_GAUGE, "ratio",
		     "Share of the last hardware sample the GPU was busy (Intel Xe OA), per GT.");
	for (unsigned i = 0; i < PT_MAX_GT; i++) {
		snprintf(gt, sizeof(gt), "%u", i);
		if (t->gt[i].have_busy)
			msnap_add(s, (double)t->gt[i].busy_pct / 100.0, "gt", gt, NULL);
	}
}

bool proctab_proc_hides_pids(const char *mountinfo)
{
	char line[1024];
	bool hides = false;
	FILE *f = fopen(mountinfo, "re");

	if (!f)
		return false;
	while (!hides && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - proc ");
		const char *opt = sep ? strstr(sep, "hidepid=") : NULL;

		/* 0 and "off" hide nothing; 1, 2, "noaccess", "invisible" do */
		if (opt && strncmp(opt + 8, "0", 1) && strncmp(opt + 8, "off", 3))
			hides = true;
	}
	fclose(f);
	return hides;
}
