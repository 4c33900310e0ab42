// SPDX-License-Identifier: MIT
/*
 * The registry of Python processes and the splicing of their frames into
 * native stacks (pyreg.h).
 */
#include "pyreg.h"

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

#include "pyframes.h"
#include "pystack_abi.h"
#include "sym/symtab.h"
#include "util.h"

#define PROC_BUCKETS 1024
#define CODE_SLOTS 1024	      /* per process: (code, instr) -> frame id */
#define MAX_TRIES 40	      /* attach attempts of a starting interpreter */
#define RETRY_NS 250000000ull /* between them */
#define MAX_SPLICE 256	      /* Python frames interpreted per sample */
#define MAPS_PEEK (4u << 20)  /* bytes of /proc/PID/maps searched for "python" */

enum pyp_state {
	PYP_PENDING, /* not recognized yet: retried on a later sample */
	PYP_READY,   /* layout in BPF, frames read */
	PYP_NONE,    /* not a CPython this reader handles: reason says why */
};

struct pyp_code {
	uint64_t code;
	int32_t firstlineno, instr;
	uint32_t id; /* 0: empty */
};

struct pyp {
	struct pyp *next;
	uint32_t pid;
	uint8_t state, tries;
	uint64_t next_try_ns;
	struct pyf_proc *pf;
	char reason[120];
	uint32_t version;
	uint64_t eval[4][2];
	unsigned neval;
	struct pyp_code *codes; /* CODE_SLOTS, on first use */
	uint64_t samples, with_frames, unresolved;
	uint64_t exe_dev, exe_ino; /* the program attached to (an exec changes it) */
	unsigned misses;	   /* samples in a row without frames */
};

/* One distinct (function, file, line) */
struct pyname {
	char *qual, *file;
	int line;
	uint32_t hash;
};

/*
 * Names are read by symbolization jobs on other threads while the loop
 * adds more: entries live in chunks that never move, are complete before
 * nnames (released) covers them, and are freed only with the registry.
 */
#define NAME_CHUNK 4096
#define NAME_CHUNKS 256 /* at most 1M distinct frames */

struct pyreg {
	struct pyreg_opts o;
	char proc_dir[200];
	int map_fd;
	uint32_t generation;
	struct pyp *buckets[PROC_BUCKETS];
	unsigned nprocs;
	struct pyname *chunks[NAME_CHUNKS]; /* ids below ID_FIRST unused */
	uint32_t nnames;		    /* atomic: written by the loop only */
	uint32_t *htab;			    /* open addressing, ids; size hcap (power of two) */
	uint32_t hcap;
	size_t bytes;
	uint64_t table_full, procs_full, samples;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Reserved ids */
#define ID_FULL 1      /* the table is full */
#define ID_TRUNCATED 2 /* more Python frames than were read */
#define ID_FIRST 3

static struct pyname *name_at(const struct pyreg *r, uint32_t id)
{
	return &r->chunks[id / NAME_CHUNK][id % NAME_CHUNK];
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
	if (p->pf)
		pyf_free(p->pf);
	free(p->codes);
	r->bytes -= sizeof(*p) + (p->codes ? CODE_SLOTS * sizeof(*p->codes) : 0);
	free(p);
}

void pyreg_free(struct pyreg *r)
{
	if (!r)
		return;
	for (unsigned b = 0; b < PROC_BUCKETS; b++)
		while (r->buckets[b]) {
			struct pyp *p = r->buckets[b];

			r->buckets[b] = p->next;
			proc_free(r, p);
		}
	for (uint32_t i = ID_FIRST; i < r->nnames; i++) {
		free(name_at(r, i)->qual);
		free(name_at(r, i)->file);
	}
	for (unsigned c = 0; c < NAME_CHUNKS; c++)
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
	struct pyp **pp = &r->buckets[(pid * 2654435761u) >> 22 & (PROC_BUCKETS - 1)];

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
	for (unsigned b = 0; b < PROC_BUCKETS; b++) {
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
static bool maps_python(struct pyreg *r, uint32_t pid)
{
	char path[256], *buf = NULL;
	bool yes;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", r->proc_dir, pid);
	if (gpd_read_text(path, MAPS_PEEK, &buf, NULL) < 0)
		return false;
	yes = strstr(buf, "python") != NULL;
	free(buf);
	return yes;
}

static void set_none(struct pyp *p, const char *why)
{
	p->state = PYP_NONE;
	snprintf(p->reason, sizeof(p->reason), "%s", why);
	if (p->pf) {
		pyf_free(p->pf);
		p->pf = NULL;
	}
}

static void retry_later(struct pyp *p, const char *why)
{
	if (++p->tries >= MAX_TRIES) {
		set_none(p, why);
		return;
	}
	snprintf(p->reason, sizeof(p->reason), "%s", why);
	p->next_try_ns = now_ns() + RETRY_NS;
}

/* The program a process runs, as /proc/PID/exe names it. */
static bool exe_id(struct pyreg *r, uint32_t pid, uint64_t *dev, uint64_t *ino)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", r->proc_dir, pid);
	if (stat(path, &st) < 0)
		return false;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return true;
}

static void try_attach(struct pyreg *r, struct pyp *p)
{
	struct pystack_layout lay;
	const char *why;
	int e;

	if (!p->pf) {
		exe_id(r, p->pid, &p->exe_dev, &p->exe_ino);
		if (!maps_python(r, p->pid)) {
			set_none(p, "no file named like a Python interpreter is mapped");
			return;
		}
		e = pyf_attach(p->pid, r->proc_dir, &p->pf);
		if (e < 0) {
			set_none(p, e == -EACCES ? "its memory cannot be read"
						 : "the process went away");
			return;
		}
	}
	why = pyf_reason(p->pf);
	if (why) {
		/* a starting interpreter is retried, as is one whose library
		 * the dynamic loader has not mapped yet (a process caught
		 * during its start-up); other refusals stand */
		if (strstr(why, "not initialized") || !strncmp(why, "not a CPython process", 21)) {
			retry_later(p, why); /* copies why, which p->pf holds */
			pyf_free(p->pf);
			p->pf = NULL;
		} else {
			set_none(p, why);
		}
		return;
	}
	e = pyf_bpf_layout(p->pf, &lay);
	if (e == -EAGAIN || e == -EFAULT) {
		retry_later(p, "the interpreter is not initialized (yet)");
		return;
	}
	if (e < 0) {
		set_none(p, "its frame layout does not fit the BPF reader");
		return;
	}
	lay.generation = ++r->generation;
	if (r->map_fd >= 0 && bpf_map_update_elem(r->map_fd, &p->pid, &lay, BPF_ANY) < 0) {
		set_none(p, "the BPF map of Python processes is full");
		return;
	}
	p->version = pyf_version(p->pf);
	p->neval = pyf_eval_ranges(p->pf, p->eval, 4);
	p->state = PYP_READY;
	p->reason[0] = '\0';
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
	try_attach(r, p);
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
	for (uint32_t id = ID_FIRST; id < r->nnames; id++) {
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

	if (r->bytes + need > r->o.budget_bytes || id >= NAME_CHUNK * NAME_CHUNKS)
		return -ENOSPC;
	if (!r->chunks[id / NAME_CHUNK]) {
		r->chunks[id / NAME_CHUNK] = calloc(NAME_CHUNK, sizeof(struct pyname));
		if (!r->chunks[id / NAME_CHUNK])
			return -ENOMEM;
		r->bytes += NAME_CHUNK * sizeof(struct pyname);
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

static uint32_t intern(struct pyreg *r, const char *qual, const char *file, int line)
{
	uint32_t h = hash_frame(qual, file, line), k;
	int id;

	if (!r->nnames)
		r->nnames = ID_FIRST;
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
		return ID_FULL;
	}
	for (k = h & (r->hcap - 1); r->htab[k]; k = (k + 1) & (r->hcap - 1))
		;
	r->htab[k] = (uint32_t)id;
	return (uint32_t)id;
}

/* The frame id of a frame BPF read: cached per process by (code, first
 * line, instruction), else resolved through the reader and interned. 0
 * when it cannot be named (freed code object, process gone). */
static uint32_t frame_id(struct pyreg *r, struct pyp *p, const struct pyf_frame *f)
{
	uint64_t k = (f->code >> 4) ^ ((uint64_t)(uint32_t)f->instr * 0x9e3779b97f4a7c15ull);
	struct pyp_code *c;
	const char *qual, *file;
	int line;

	if (!p->codes) {
		if (r->bytes + CODE_SLOTS * sizeof(*p->codes) > r->o.budget_bytes)
			return 0;
		p->codes = calloc(CODE_SLOTS, sizeof(*p->codes));
		if (!p->codes)
			return 0;
		r->bytes += CODE_SLOTS * sizeof(*p->codes);
	}
	c = &p->codes[(k * 0x9e3779b97f4a7c15ull) >> 54 & (CODE_SLOTS - 1)];
	if (c->id && c->code == f->code && c->instr == f->instr && c->firstlineno == f->firstlineno)
		return c->id;
	if (pyf_resolve_seen(p->pf, f->code, f->firstlineno, f->instr, &qual, &file, &line) < 0) {
		p->unresolved++;
		return 0;
	}
	*c = (struct pyp_code){.code = f->code,
			       .firstlineno = f->firstlineno,
			       .instr = f->instr,
			       .id = intern(r, qual, file, line)};
	return c->id;
}

/* ---- splicing ---- */

static bool in_eval(const struct pyp *p, uint64_t pc)
{
	for (unsigned i = 0; i < p->neval; i++)
		if (pc >= p->eval[i][0] && pc < p->eval[i][1])
			return true;
	return false;
}

/*
 * Samples of a recognized process keep coming without frames: did it exec
 * another program since (one that kept its command name, which the
 * collectors' exec detection misses)? Then it is forgotten, to be
 * recognized afresh.
 */
static bool exec_since(struct pyreg *r, struct pyp *p)
{
	uint64_t dev, ino;
	uint32_t pid = p->pid;

	if (!exe_id(r, pid, &dev, &ino) || (dev == p->exe_dev && ino == p->exe_ino))
		return false;
	forget(r, pid);
	pyreg_note_pid(r, pid, false);
	return true;
}

struct run {
	unsigned start, end; /* frames [start, end), leaf first */
	uint64_t marker;     /* 0: none (pair in order) */
};

/* Group frames into the runs of each activation (leaf first). */
static unsigned make_runs(const struct pyf_frame *f, unsigned n, struct run *runs, unsigned max)
{
	unsigned nr = 0, start = 0;

	for (unsigned i = 0; i < n && nr < max; i++)
		if (f[i].flags & PYF_FRAME_ENTRY || i + 1 == n) {
			runs[nr++] = (struct run){.start = start,
						  .end = i + 1,
						  .marker = f[i].flags & PYF_FRAME_ENTRY
								    ? f[i].marker
								    : 0};
			start = i + 1;
		}
	return nr;
}

/* Counts past max, so the caller can tell the stack was cut. */
static unsigned put(uint64_t *out, unsigned k, unsigned max, uint64_t v)
{
	if (k < max)
		out[k] = v;
	return k + 1;
}

/* A run's frames; the outermost run read gets a [truncated] frame beyond
 * it when BPF stopped reading before the chain's end. */
static unsigned put_run(struct pyreg *r, struct pyp *p, const struct pyf_frame *f,
			const struct run *run, bool cut, uint64_t *out, unsigned k, unsigned max)
{
	for (unsigned i = run->start; i < run->end; i++) {
		uint32_t id = frame_id(r, p, &f[i]);

		if (id)
			k = put(out, k, max, PYREG_IP_FLAG | id);
	}
	if (cut)
		k = put(out, k, max, PYREG_IP_FLAG | ID_TRUNCATED);
	return k;
}

/*
 * Which run native frame i (an evaluator activation, stack [lo, hi)) ran:
 * the next run in order, unless that run's marker places it in another
 * activation further out (the activation at i had not linked its frames
 * yet: a sample in its prologue). -1: none.
 */
static int run_for(const struct run *runs, unsigned nr, unsigned next, uint64_t lo, uint64_t hi,
		   bool have_cfa)
{
	if (next >= nr)
		return -1;
	if (!have_cfa || !runs[next].marker)
		return (int)next;
	return runs[next].marker >= lo && runs[next].marker < hi ? (int)next : -1;
}

unsigned pyreg_splice(struct pyreg *r, uint32_t pid, const uint64_t *ips, const uint64_t *cfas,
		      unsigned nu, uint64_t sp, const struct pystack_node *nodes, unsigned nn,
		      unsigned flags, uint64_t *out, unsigned max)
{
	struct pyf_frame f[MAX_SPLICE];
	struct run runs[MAX_SPLICE];
	struct pyp *p = r ? find(r, pid) : NULL;
	unsigned nf, nr, next = 0, k = 0;
	uint64_t lo = sp;
	bool cut = flags & PYSTACK_F_TRUNCATED;

	if (p && p->state == PYP_PENDING && now_ns() >= p->next_try_ns)
		try_attach(r, p);
	if (p && p->state == PYP_READY && !nn && ++p->misses % 64 == 0 && exec_since(r, p))
		p = NULL; /* re-recognized on its next sample */
	if (!p || p->state != PYP_READY || !nn) {
		if (p && p->state == PYP_READY)
			p->samples++;
		nu = nu < max ? nu : max;
		memcpy(out, ips, nu * sizeof(*out));
		return nu;
	}
	r->samples++;
	p->samples++;
	p->with_frames++;
	p->misses = 0;
	nf = pyf_from_nodes(p->pf, nodes, nn, f, MAX_SPLICE);
	nr = make_runs(f, nf, runs, MAX_SPLICE);
	for (unsigned i = 0; i < nu; i++) {
		uint64_t hi = cfas ? cfas[i] : 0;
		int ri = -1;

		/* below the leaf, frames are return addresses */
		if (in_eval(p, i ? ips[i] - 1 : ips[i]))
			ri = run_for(runs, nr, next, lo, hi, cfas != NULL);
		if (ri >= 0) {
			k = put_run(r, p, f, &runs[ri], cut && (unsigned)ri + 1 == nr, out, k, max);
			next = (unsigned)ri + 1;
		} else if (ips[i] == 0x1 /* the unwinder's [truncated] */ && next < nr) {
			/* the native stack could not be followed out to the
			 * remaining activations: keep their Python frames
			 * beyond the mark */
			k = put(out, k, max, ips[i]);
			for (; next < nr; next++)
				k = put_run(r, p, f, &runs[next], cut && next + 1 == nr, out, k,
					    max);
		} else {
			k = put(out, k, max, ips[i]);
		}
		lo = hi;
	}
	if (k > max) { /* longer than a stored stack: cut at the root */
		out[max - 1] = 0x1;
		k = max;
	}
	return k;
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
	if (id == ID_FULL || id == ID_TRUNCATED) {
		snprintf(name, len, "%s",
			 id == ID_FULL ? "[python: frame table full]" SYMTAB_PY_SUFFIX : "[truncated]");
		return true;
	}
	if (id < ID_FIRST || id >= __atomic_load_n(&r->nnames, __ATOMIC_ACQUIRE))
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
	unsigned ready = 0;
	cJSON *arr = with_processes ? cJSON_AddArrayToObject(obj, "by_process") : NULL;

	for (unsigned b = 0; b < PROC_BUCKETS; b++)
		for (const struct pyp *p = r->buckets[b]; p; p = p->next) {
			cJSON *o;

			ready += p->state == PYP_READY;
			if (!arr || (p->state == PYP_NONE &&
				     !strcmp(p->reason,
					     "no file named like a Python interpreter is mapped")))
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
			if (p->reason[0])
				cJSON_AddStringToObject(o, "reason", p->reason);
			cJSON_AddNumberToObject(o, "samples", (double)p->samples);
			cJSON_AddNumberToObject(o, "with_frames", (double)p->with_frames);
			cJSON_AddNumberToObject(o, "unresolved", (double)p->unresolved);
			cJSON_AddItemToArray(arr, o);
		}
	cJSON_AddNumberToObject(obj, "processes", ready);
	cJSON_AddNumberToObject(obj, "samples", (double)r->samples);
	cJSON_AddNumberToObject(obj, "frames", r->nnames > ID_FIRST ? r->nnames - ID_FIRST : 0);
	cJSON_AddNumberToObject(obj, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(obj, "budget", (double)r->o.budget_bytes);
	cJSON_AddNumberToObject(obj, "table_full", (double)r->table_full);
	cJSON_AddNumberToObject(obj, "processes_full", (double)r->procs_full);
}
