// SPDX-License-Identifier: MIT
/*
 * The registry of Python processes and the splicing of their frames into
 * native stacks (pyreg.h).
 */
#include "pyreg_int.h"

#include <bpf/bpf.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "procmapq.h"
#include "pyframes.h"
#include "pystack_abi.h"
#include "sym/symtab.h"
#include "util.h"

/*
 * Attach attempts of a starting interpreter (or of a process whose
 * libpython the loader has not mapped yet): 20, 40, 80, 160 ms apart, then
 * every 250 ms, about 10 s in all. A process is first seen around its exec,
 * and its frames are missing until it is read: the first tries come soon.
 */
#define MAX_TRIES 44
#define RETRY_FIRST_NS 20000000ull
#define RETRY_NS 250000000ull
#define MAPS_PEEK (4u << 20) /* bytes of /proc/PID/maps searched for "python" */
/*
 * A recognized process's samples without frames: has it exec'd since? At
 * most this often per process (a stat of /proc/PID/exe). A Python parent
 * that forks and execs another Python keeps its command name, which the
 * collectors' exec detection relies on: the child is first seen and
 * recognized as its parent's image, and its samples have no frames until
 * this check notices. Checked every 64 frameless samples instead, that
 * took about 130 ms at 499 Hz, a few percent of a short program's run.
 */
#define EXEC_CHECK_NS 20000000ull

/* Each cause's name (status "cause", for programs) and text (for people,
 * unless the reader gave its own). */
static const struct {
	const char *name, *text;
} causes[PYC_COUNT] = {
	[PYC_NONE] = {"", ""},
	[PYC_NO_PYTHON_FILE] = {"no_python_file",
				"no file named like a Python interpreter is mapped"},
	[PYC_NOT_CPYTHON] = {"not_cpython", "not a CPython process"},
	[PYC_STARTING] = {"starting", "the interpreter is not initialized (yet)"},
	[PYC_UNSUPPORTED] = {"unsupported", "not supported"},
	[PYC_UNREADABLE] = {"unreadable", "its memory cannot be read"},
	[PYC_GONE] = {"gone", "the process went away"},
	[PYC_BPF_LAYOUT] = {"bpf_layout", "its frame layout does not fit the BPF reader"},
	[PYC_MAP_FULL] = {"map_full", "the BPF map of Python processes is full"},
};

/*
 * One process's inspection on the thread pool: what it needs copied in,
 * its results kept here until applied on the loop. p is cleared when the
 * process is forgotten meanwhile (exec, exit, the registry freed).
 */
struct pyscan {
	uv_work_t w;
	struct pyreg *r;
	struct pyp *p;
	uint32_t pid;
	char proc_dir[200];
	bool have_exe, python_file;
	bool raced;	   /* the process exec'd during the inspection */
	bool python_known; /* python_file decided on the loop (a maps source) */
	uint64_t exe_dev, exe_ino;
	int err; /* pyf_attach()'s */
	struct pyf_proc *pf;
	double ms;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct pyname *name_at(const struct pyreg *r, uint32_t id)
{
	return &r->chunks[id / PYREG_NAME_CHUNK][id % PYREG_NAME_CHUNK];
}

int pyreg_new(const struct pyreg_opts *opts, struct pyreg **ret)
{
	struct pyreg *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	if (opts)
		r->o = *opts;
	if (!r->o.budget_bytes)
		r->o.budget_bytes = 32u << 20;
	if (!r->o.max_procs || r->o.max_procs > PYSTACK_MAX_PROCS)
		r->o.max_procs = PYSTACK_MAX_PROCS;
	snprintf(r->proc_dir, sizeof(r->proc_dir), "%s", r->o.proc_dir ? r->o.proc_dir : "/proc");
	r->map_fd = -1;
	if (!r->o.no_bpf) {
		r->map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "py_procs", sizeof(uint32_t),
					   sizeof(struct pystack_layout), PYSTACK_MAX_PROCS, NULL);
		if (r->map_fd < 0) {
			int e = -errno;

			free(r);
			return e;
		}
	}
	*ret = r;
	return 0;
}

static void proc_free(struct pyreg *r, struct pyp *p)
{
	if (r->map_fd >= 0 && p->state == PYP_READY)
		bpf_map_delete_elem(r->map_fd, &p->pid);
	if (p->scan)
		p->scan->p = NULL; /* its result is dropped when it ends */
	if (p->pf)
		pyf_free(p->pf);
	free(p->codes);
	r->bytes -= sizeof(*p) + (p->codes ? PYREG_CODE_SLOTS * sizeof(*p->codes) : 0);
	free(p);
}

void pyreg_free(struct pyreg *r)
{
	if (!r)
		return;
	for (unsigned b = 0; b < PYREG_PROC_BUCKETS; b++)
		while (r->buckets[b]) {
			struct pyp *p = r->buckets[b];

			r->buckets[b] = p->next;
			proc_free(r, p);
		}
	r->nprocs = 0;
	if (r->scanning) {
		r->freeing = true; /* the last scan to end frees the rest */
		return;
	}
	for (uint32_t i = PYREG_ID_FIRST; i < r->nnames; i++) {
		free(name_at(r, i)->qual);
		free(name_at(r, i)->file);
	}
	for (unsigned c = 0; c < PYREG_NAME_CHUNKS; c++)
		free(r->chunks[c]);
	free(r->htab);
	if (r->map_fd >= 0)
		close(r->map_fd);
	free(r);
}

int pyreg_map_fd(const struct pyreg *r)
{
	return r ? r->map_fd : -1;
}

static struct pyp **slot_of(struct pyreg *r, uint32_t pid)
{
	struct pyp **pp = &r->buckets[(pid * 2654435761u) >> 22 & (PYREG_PROC_BUCKETS - 1)];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

static struct pyp *find(struct pyreg *r, uint32_t pid)
{
	return *slot_of(r, pid);
}

static void forget(struct pyreg *r, uint32_t pid)
{
	struct pyp **pp = slot_of(r, pid), *p = *pp;

	if (!p)
		return;
	*pp = p->next;
	r->nprocs--;
	proc_free(r, p);
}

/* Make room: drop processes that no longer exist. */
static void reap(struct pyreg *r)
{
	for (unsigned b = 0; b < PYREG_PROC_BUCKETS; b++) {
		struct pyp **pp = &r->buckets[b];

		while (*pp) {
			struct pyp *p = *pp;

			if (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH) {
				*pp = p->next;
				r->nprocs--;
				proc_free(r, p);
			} else {
				pp = &p->next;
			}
		}
	}
}

/* Does the process map a file named like an interpreter? A cheap filter
 * before the ELF inspection of every mapped file that attaching does. */
/* "python" in the path of an executable mapping, asked through
 * PROCMAP_QUERY (procmapq.h): every new process of the host is looked at,
 * and the kernel then prints neither the other mappings nor their paths.
 * -ENOTTY where the kernel has no such ioctl. */
static int maps_python_query(int fd, bool *yes)
{
	char name[4352];
	uint64_t addr = 0;
	struct pmq_map m;
	int r;

	*yes = false;
	while (!*yes && (r = pmq_next(fd, addr, PMQ_EXEC, &m, name, sizeof(name))) == 0 &&
	       m.end > addr) {
		addr = m.end;
		*yes = strstr(name, "python") != NULL;
	}
	return *yes || r == -ENOENT ? 0 : r;
}

static bool maps_python(const char *proc_dir, uint32_t pid)
{
	char path[256], *buf = NULL;
	bool yes;
	int fd;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_dir, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (maps_python_query(fd, &yes) != -ENOTTY) {
		close(fd);
		return yes;
	}
	close(fd);
	if (gpd_read_text(path, MAPS_PEEK, &buf, NULL) < 0)
		return false;
	yes = strstr(buf, "python") != NULL;
	free(buf);
	return yes;
}

/* The program a process runs, as /proc/PID/exe names it. */
static bool exe_id(const char *proc_dir, uint32_t pid, uint64_t *dev, uint64_t *ino)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", proc_dir, pid);
	if (stat(path, &st) < 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

/* reason: the reader's own text, else NULL (the cause's text is shown) */
static void set_none(struct pyp *p, enum pyp_cause cause, const char *reason)
{
	p->state = PYP_NONE;
	p->cause = cause;
	snprintf(p->reason, sizeof(p->reason), "%s", reason ? reason : "");
	if (p->pf) {
		pyf_free(p->pf);
		p->pf = NULL;
	}
}

static void retry_later(struct pyp *p, enum pyp_cause cause, const char *reason)
{
	if (++p->tries >= MAX_TRIES) {
		set_none(p, cause, reason);
		return;
	}
	p->cause = cause;
	snprintf(p->reason, sizeof(p->reason), "%s", reason ? reason : "");
	p->next_try_ns = now_ns() + (p->tries <= 4 ? RETRY_FIRST_NS << (p->tries - 1) : RETRY_NS);
}

/*
 * The slow part of recognizing a process (the ELF inspection of what it
 * maps, 3-11 ms): on the thread pool. Touches only s.
 */
static void scan_run(uv_work_t *w)
{
	struct pyscan *s = (struct pyscan *)w;
	uint64_t t0 = now_ns(), dev, ino;

	/* The program's identity is only used to notice an exec of a
	 * recognized process (exec_since()): most new processes of a busy
	 * host are no Python, and its stat was a third of what looking at one
	 * cost. Taken before the reader reads the mappings again, as before:
	 * an exec in between leaves the identity of an older program than the
	 * one attached, which exec_since() then takes for an exec (one more
	 * recognition, never frames read with a stale layout). */
	if (!s->python_known)
		s->python_file = maps_python(s->proc_dir, s->pid);
	if (s->python_file) {
		s->have_exe = exe_id(s->proc_dir, s->pid, &s->exe_dev, &s->exe_ino);
		s->err = pyf_attach(s->pid, s->proc_dir, &s->pf);
		/* A Python that forks and execs another under its own name may
		 * exec while it is read: the reader then mixes the two images
		 * (the old one's files, the new one's memory), and what it
		 * concluded, even a refusal, holds for neither. */
		s->raced = s->have_exe && exe_id(s->proc_dir, s->pid, &dev, &ino) &&
			   (dev != s->exe_dev || ino != s->exe_ino ||
			    (s->pf && !pyf_refusal(s->pf) && !pyf_same_image(s->pf, false)));
	}
	s->ms = (double)(now_ns() - t0) / 1e6;
}

/* On the loop: the reader is there; hand its layout to BPF. */
static void settle(struct pyreg *r, struct pyp *p)
{
	struct pystack_layout lay;
	int e;

	switch (pyf_refusal(p->pf)) {
	case PYF_REFUSED_NONE:
		break;
	case PYF_REFUSED_NOT_PYTHON:
	case PYF_REFUSED_STARTING:
		/* a starting interpreter is retried, as is one whose library
		 * the dynamic loader has not mapped yet (a process caught
		 * during its start-up); the reader is attached afresh */
		retry_later(p,
			    pyf_refusal(p->pf) == PYF_REFUSED_STARTING ? PYC_STARTING
								       : PYC_NOT_CPYTHON,
			    pyf_reason(p->pf));
		pyf_free(p->pf);
		p->pf = NULL;
		return;
	case PYF_REFUSED_UNSUPPORTED:
		set_none(p, PYC_UNSUPPORTED, pyf_reason(p->pf));
		return;
	}
	e = pyf_bpf_layout(p->pf, &lay);
	if (e == -EAGAIN) {
		retry_later(p, PYC_STARTING, NULL); /* the reader stays */
		return;
	}
	if (e == -EFAULT) {
		/* unreadable where the reader found an interpreter: the process
		 * exec'd since it was read (or is exiting); kept, that reader
		 * would fail every retry until the process is given up on */
		retry_later(p, PYC_STARTING, NULL);
		pyf_free(p->pf);
		p->pf = NULL;
		return;
	}
	if (e < 0) {
		set_none(p, PYC_BPF_LAYOUT, NULL);
		return;
	}
	lay.generation = ++r->generation;
	if (r->map_fd >= 0 && bpf_map_update_elem(r->map_fd, &p->pid, &lay, BPF_ANY) < 0) {
		set_none(p, PYC_MAP_FULL, NULL);
		return;
	}
	p->version = pyf_version(p->pf);
	p->neval = pyf_eval_ranges(p->pf, p->eval, 4);
	p->state = PYP_READY;
	p->cause = PYC_NONE;
	p->reason[0] = '\0';
}

/* On the loop: a scan's result, to its process if that is still known. */
static void scan_apply(struct pyreg *r, struct pyscan *s)
{
	struct pyp *p = s->p;

	r->scans++;
	if (s->ms > r->scan_ms_max)
		r->scan_ms_max = s->ms;
	if (!p) {
		pyf_free(s->pf);
		return;
	}
	p->scan = NULL;
	if (s->raced) {
		pyf_free(s->pf);
		retry_later(p, PYC_STARTING, NULL);
		return;
	}
	if (s->have_exe) {
		p->exe_dev = s->exe_dev;
		p->exe_ino = s->exe_ino;
	}
	if (!s->python_file) {
		set_none(p, PYC_NO_PYTHON_FILE, NULL);
		return;
	}
	if (s->err < 0) {
		set_none(p, s->err == -EACCES ? PYC_UNREADABLE : PYC_GONE, NULL);
		return;
	}
	p->pf = s->pf;
	settle(r, p);
}

static void scan_done(uv_work_t *w, int status)
{
	struct pyscan *s = (struct pyscan *)w;
	struct pyreg *r = s->r;

	(void)status; /* nothing calls uv_cancel() */
	r->scanning--;
	scan_apply(r, s);
	free(s);
	if (r->freeing && !r->scanning)
		pyreg_free(r);
}

/* A read of the mappings younger than this is the process as it is now. */
#define SHARED_MAX_AGE_NS (100ull * 1000000ull)

static void note_python(void *ctx, const struct pmq_map *m, const char *name)
{
	(void)m;
	if (name && strstr(name, "python"))
		*(bool *)ctx = true;
}

/* Whether p maps a Python, from the maps source's read; false when it has
 * none (the scan then reads the mappings itself). */
static bool python_from_source(struct pyreg *r, struct pyp *p, bool *yes)
{
	*yes = false;
	if (!r->maps_src ||
	    r->maps_src(r->maps_src_arg, p->pid, SHARED_MAX_AGE_NS, note_python, yes) < 0)
		return false;
	r->maps_shared++;
	return true;
}

/*
 * Recognize p: settle the reader it has, else inspect the process, on the
 * thread pool when the registry has a loop. With PYREG_MAX_SCANS running,
 * p stays pending and is tried again on its next sample.
 */
static void try_attach(struct pyreg *r, struct pyp *p)
{
	struct pyscan *s;
	bool known, yes;

	if (p->scan)
		return;
	if (p->pf) {
		settle(r, p);
		return;
	}
	known = python_from_source(r, p, &yes);
	if (known && !yes) {
		set_none(p, PYC_NO_PYTHON_FILE, NULL);
		return;
	}
	if (r->o.loop && r->scanning >= PYREG_MAX_SCANS) {
		r->scans_deferred++;
		p->next_try_ns = 0;
		return;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		retry_later(p, PYC_STARTING, NULL);
		return;
	}
	s->r = r;
	s->p = p;
	s->pid = p->pid;
	s->python_known = known;
	s->python_file = known;
	snprintf(s->proc_dir, sizeof(s->proc_dir), "%s", r->proc_dir);
	if (r->o.loop && uv_queue_work(r->o.loop, &s->w, scan_run, scan_done) == 0) {
		p->scan = s;
		r->scanning++;
		return;
	}
	scan_run(&s->w);
	scan_apply(r, s);
	free(s);
}

void pyreg_note_pid(struct pyreg *r, uint32_t pid, bool exec)
{
	struct pyp *p;

	if (!r || !pid)
		return;
	if (exec)
		forget(r, pid);
	else if (find(r, pid))
		return;
	if (r->nprocs >= r->o.max_procs)
		reap(r);
	if (r->nprocs >= r->o.max_procs || r->bytes + sizeof(*p) > r->o.budget_bytes) {
		r->procs_full++;
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->pid = pid;
	*slot_of(r, pid) = p;
	r->nprocs++;
	r->bytes += sizeof(*p);
	/* with a maps source, on the first sample: the collectors note a pid
	 * before the source reads its mappings */
	if (!r->maps_src)
		try_attach(r, p);
}

void pyreg_set_maps_source(struct pyreg *r, pyreg_maps_fn fn, void *arg)
{
	if (!r)
		return;
	r->maps_src = fn;
	r->maps_src_arg = arg;
}

/*
 * Samples of a recognized process keep coming without frames: did it exec
 * another program since (one that kept its command name, which the
 * collectors' exec detection misses)? Then it is forgotten, to be
 * recognized afresh. Another program changes /proc/PID/exe; the same
 * interpreter exec'd again (a Python test runner's subprocess running the
 * runner's own python3) does not, but it is a new address space, where
 * BPF found no thread state at the old one's addresses: the reader's
 * memory no longer reads, or, for a process read between its vfork() and
 * its exec (the runner's own memory, then), differs from the process's
 * now, asked only while none of its samples had frames.
 */
static bool exec_since(struct pyreg *r, struct pyp *p)
{
	uint64_t dev, ino;
	uint32_t pid = p->pid;

	if (!exe_id(r->proc_dir, pid, &dev, &ino) ||
	    (dev == p->exe_dev && ino == p->exe_ino && pyf_same_image(p->pf, !p->with_frames)))
		return false;
	forget(r, pid);
	pyreg_note_pid(r, pid, false);
	return true;
}

struct pyp *pyreg_sample_proc(struct pyreg *r, uint32_t pid, bool with_frames)
{
	struct pyp *p = find(r, pid);

	if (!p)
		return NULL;
	if (p->state == PYP_PENDING && now_ns() >= p->next_try_ns)
		try_attach(r, p);
	if (p->state != PYP_READY)
		return NULL;
	if (!with_frames) {
		uint64_t now = now_ns();

		if (now >= p->next_exec_check_ns) {
			p->next_exec_check_ns = now + EXEC_CHECK_NS;
			if (exec_since(r, p))
				return NULL; /* re-recognized on its next sample */
		}
		p->samples++;
		return NULL;
	}
	r->samples++;
	p->samples++;
	p->with_frames++;
	return p;
}

/* ---- the frame table ---- */

static uint32_t hash_frame(const char *qual, const char *file, int line)
{
	uint32_t h = 2166136261u;

	for (const char *s = qual; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (const char *s = file; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return (h ^ (uint32_t)line) * 16777619u;
}

static int grow_hash(struct pyreg *r)
{
	uint32_t ncap = r->hcap ? r->hcap * 2 : 1024, *nt;

	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (uint32_t id = PYREG_ID_FIRST; id < r->nnames; id++) {
		uint32_t k = name_at(r, id)->hash & (ncap - 1);

		while (nt[k])
			k = (k + 1) & (ncap - 1);
		nt[k] = id;
	}
	r->bytes += (size_t)(ncap - r->hcap) * sizeof(*nt);
	free(r->htab);
	r->htab = nt;
	r->hcap = ncap;
	return 0;
}

static int add_name(struct pyreg *r, const char *qual, const char *file, int line, uint32_t h)
{
	size_t need = strlen(qual) + strlen(file) + 2 + sizeof(struct pyname);
	uint32_t id = r->nnames;
	struct pyname *n;

	if (r->bytes + need > r->o.budget_bytes || id >= PYREG_NAME_CHUNK * PYREG_NAME_CHUNKS)
		return -ENOSPC;
	if (!r->chunks[id / PYREG_NAME_CHUNK]) {
		r->chunks[id / PYREG_NAME_CHUNK] = calloc(PYREG_NAME_CHUNK, sizeof(struct pyname));
		if (!r->chunks[id / PYREG_NAME_CHUNK])
			return -ENOMEM;
		r->bytes += PYREG_NAME_CHUNK * sizeof(struct pyname);
	}
	if ((id + 1) * 2 > r->hcap && grow_hash(r) < 0)
		return -ENOMEM;
	n = name_at(r, id);
	*n = (struct pyname){.qual = strdup(qual), .file = strdup(file), .line = line, .hash = h};
	if (!n->qual || !n->file) {
		free(n->qual);
		free(n->file);
		*n = (struct pyname){0};
		return -ENOMEM;
	}
	r->bytes += need - sizeof(struct pyname);
	/* complete before readers on other threads can see it */
	__atomic_store_n(&r->nnames, id + 1, __ATOMIC_RELEASE);
	return (int)id;
}

uint32_t pyreg_intern(struct pyreg *r, const char *qual, const char *file, int line)
{
	uint32_t h = hash_frame(qual, file, line), k;
	int id;

	if (!r->nnames)
		r->nnames = PYREG_ID_FIRST;
	for (k = r->hcap ? h & (r->hcap - 1) : 0; r->hcap && r->htab[k];
	     k = (k + 1) & (r->hcap - 1)) {
		const struct pyname *n = name_at(r, r->htab[k]);

		if (n->hash == h && n->line == line && !strcmp(n->qual, qual) &&
		    !strcmp(n->file, file))
			return r->htab[k];
	}
	id = add_name(r, qual, file, line, h);
	if (id < 0) {
		r->table_full++;
		return PYREG_ID_FULL;
	}
	for (k = h & (r->hcap - 1); r->htab[k]; k = (k + 1) & (r->hcap - 1))
		;
	r->htab[k] = (uint32_t)id;
	return (uint32_t)id;
}

bool pyreg_frame_name(const struct pyreg *r, uint64_t ip, char *name, size_t len, char *line,
		      size_t linelen)
{
	uint64_t id = ip & ~PYREG_IP_FLAG;
	const struct pyname *n;
	const char *f, *s;

	if (line && linelen)
		line[0] = '\0';
	if (!r || !PYREG_IS_PY(ip))
		return false;
	if (id == PYREG_ID_FULL || id == PYREG_ID_TRUNCATED) {
		snprintf(name, len, "%s",
			 id == PYREG_ID_FULL ? "[python: frame table full]" SYMTAB_PY_SUFFIX
					     : "[truncated]");
		return true;
	}
	if (id < PYREG_ID_FIRST || id >= __atomic_load_n(&r->nnames, __ATOMIC_ACQUIRE))
		return false;
	n = name_at(r, (uint32_t)id);
	/* a package-relative path, as tracebacks of installed code read */
	f = n->file;
	if ((s = strstr(f, "/site-packages/")) || (s = strstr(f, "/dist-packages/")))
		f = s + 15;
	else if ((s = strstr(f, "/lib/python3")) && (s = strchr(s + 12, '/')))
		f = s + 1;
	snprintf(name, len, "%s (%s)" SYMTAB_PY_SUFFIX, n->qual, f);
	if (line && linelen)
		snprintf(line, linelen, "%s:%d", n->file, n->line);
	return true;
}

void pyreg_status(const struct pyreg *r, struct cJSON *obj, bool with_processes)
{
	struct pyf_static_stats ss;
	unsigned ready = 0;
	cJSON *arr = with_processes ? cJSON_AddArrayToObject(obj, "by_process") : NULL;

	for (unsigned b = 0; b < PYREG_PROC_BUCKETS; b++)
		for (const struct pyp *p = r->buckets[b]; p; p = p->next) {
			cJSON *o;

			ready += p->state == PYP_READY;
			if (!arr || p->cause == PYC_NO_PYTHON_FILE)
				continue;
			o = cJSON_CreateObject();
			if (!o)
				continue;
			cJSON_AddNumberToObject(o, "pid", p->pid);
			if (p->version) {
				char v[24];

				/* PY_VERSION_HEX; a zero release level: the patch
				 * level is not known (docs/pyframes.md) */
				if (p->version & 0xff)
					snprintf(v, sizeof(v), "%u.%u.%u", p->version >> 24,
						 p->version >> 16 & 0xff, p->version >> 8 & 0xff);
				else
					snprintf(v, sizeof(v), "%u.%u", p->version >> 24,
						 p->version >> 16 & 0xff);
				cJSON_AddStringToObject(o, "version", v);
			}
			cJSON_AddStringToObject(o, "state",
						p->state == PYP_READY	  ? "frames"
						: p->state == PYP_PENDING ? "pending"
									  : "none");
			if (p->cause != PYC_NONE) {
				cJSON_AddStringToObject(o, "cause", causes[p->cause].name);
				cJSON_AddStringToObject(o, "reason",
							p->reason[0] ? p->reason
								     : causes[p->cause].text);
			}
			cJSON_AddNumberToObject(o, "samples", (double)p->samples);
			cJSON_AddNumberToObject(o, "with_frames", (double)p->with_frames);
			cJSON_AddNumberToObject(o, "unresolved", (double)p->unresolved);
			cJSON_AddNumberToObject(o, "replaced", (double)p->replaced);
			cJSON_AddItemToArray(arr, o);
		}
	cJSON_AddNumberToObject(obj, "processes", ready);
	cJSON_AddNumberToObject(obj, "samples", (double)r->samples);
	cJSON_AddNumberToObject(obj, "spliced", (double)r->spliced);
	cJSON_AddNumberToObject(obj, "spliced_subinterpreter", (double)r->spliced_sub);
	cJSON_AddNumberToObject(obj, "splice_ns_mean",
				r->spliced ? (double)r->splice_ns / (double)r->spliced : 0);
	cJSON_AddNumberToObject(obj, "frames",
				r->nnames > PYREG_ID_FIRST ? r->nnames - PYREG_ID_FIRST : 0);
	cJSON_AddNumberToObject(obj, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(obj, "budget", (double)r->o.budget_bytes);
	cJSON_AddNumberToObject(obj, "table_full", (double)r->table_full);
	cJSON_AddNumberToObject(obj, "processes_full", (double)r->procs_full);
	cJSON_AddNumberToObject(obj, "scans", (double)r->scans);
	cJSON_AddNumberToObject(obj, "scans_running", r->scanning);
	cJSON_AddNumberToObject(obj, "scans_deferred", (double)r->scans_deferred);
	cJSON_AddNumberToObject(obj, "scan_ms_max", r->scan_ms_max);
	cJSON_AddNumberToObject(obj, "maps_shared", (double)r->maps_shared);
	pyf_static_stats(&ss);
	cJSON_AddNumberToObject(obj, "static_code_hits", (double)ss.hits);
	cJSON_AddNumberToObject(obj, "static_code_fills", (double)ss.fills);
	cJSON_AddNumberToObject(obj, "static_code_entries", (double)ss.entries);
	cJSON_AddNumberToObject(obj, "static_code_bytes", (double)ss.bytes);
}
