// SPDX-License-Identifier: MIT
/*
 * SASS text for `folded --weight stalls` (render/folded.h's insn hook):
 * the toolkit's nvdisasm run on a cubin the cupti collector kept, once per
 * cubin and render. A cubin is its owner's code, so a peer gets text only
 * for the cubins its uid owns (root: all). nvdisasm parses bytes a user
 * sent, so it never runs as root: as the cubin's owner (nobody for a
 * root-only owner or root itself), with its CPU time, memory and output
 * bounded, from a memfd rather than a file anyone could swap.
 *
 * The hook runs on a capture job's worker thread; the cache is the
 * collector's (cupti_dec.c), copied out under its lock.
 */
#include "cupti_sass.h"
#include "cupti_int.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cupti_sassmemo.h"
#include "capture/capsass.h"
#include "capture/capture.h"
#include "sym/demangle.h"

#define SASS_CUBINS 32		 /* distinct cubins one render disassembles */
#define SASS_OUT_MAX (16u << 20) /* nvdisasm output read at most */
#define SASS_TIMEOUT_MS 10000	 /* one nvdisasm run */
#define SASS_NOBODY 65534u
#define OWNER_ROOT_ONLY 0xffffffffu /* store_rec.uid of a root-only process */

struct sass_ins {
	uint32_t fn, pc; /* fn: index into names */
	char *text;
};

struct sass_cubin {
	uint64_t crc;
	bool done;    /* tried (ok or not) */
	char **names; /* functions: as nvdisasm names them, then demangled */
	char **dnames;
	size_t nnames;
	struct sass_ins *ins; /* sorted by (fn, pc) */
	size_t nins;
};

struct cupti_sass {
	struct cupti *cu;
	uint32_t uid;
	char tool[4096];
	struct sass_cubin c[SASS_CUBINS];
	size_t n;
	/* the last function looked up: callers ask for many offsets of one
	 * function in a row (a capture's keys are sorted), and a cubin may
	 * hold thousands of functions to compare names with */
	const struct sass_cubin *last_c;
	char *last_name;
	size_t last_f;
};

static bool executable(const char *p)
{
	return access(p, X_OK) == 0;
}

/* cupti.nvdisasm, else nvdisasm on the daemon's PATH, else the CUDA
 * prefix's; false: none (offsets are printed) */
static bool find_tool(const char *conf, char *out, size_t len)
{
	const char *path = getenv("PATH");
	static const char *const fixed[] = {"/usr/local/cuda/bin/nvdisasm",
					    "/opt/cuda/bin/nvdisasm"};

	if (conf && *conf) {
		snprintf(out, len, "%s", conf);
		return strcmp(conf, "off") && executable(out);
	}
	while (path && *path) {
		size_t n = strcspn(path, ":");

		if (n && (size_t)snprintf(out, len, "%.*s/nvdisasm", (int)n, path) < len &&
		    out[0] == '/' && executable(out))
			return true;
		path += n + (path[n] == ':');
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		snprintf(out, len, "%s", fixed[i]);
		if (executable(out))
			return true;
	}
	return false;
}

int cupti_sass_new(struct cupti *cu, const char *tool, uint32_t uid, struct cupti_sass **out)
{
	struct cupti_sass *s;

	*out = NULL;
	if (!cu)
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (!find_tool(tool, s->tool, sizeof(s->tool))) {
		free(s);
		return 0;
	}
	s->cu = cu;
	s->uid = uid;
	*out = s;
	return 0;
}

static void cubin_free(struct sass_cubin *c)
{
	for (size_t i = 0; i < c->nnames; i++) {
		free(c->names[i]);
		free(c->dnames[i]);
	}
	for (size_t i = 0; i < c->nins; i++)
		free(c->ins[i].text);
	free(c->names);
	free(c->dnames);
	free(c->ins);
}

void cupti_sass_free(struct cupti_sass *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		cubin_free(&s->c[i]);
	free(s->last_name);
	free(s);
}

/* The child (after fork: only async-signal-safe calls): drop to uid
 * (never root), bound it, exec tool on the cubin (arg names the memfd). */
static void child(const char *tool, const char *arg, int outfd, uint32_t uid)
{
	struct rlimit cpu = {10, 10}, as = {(rlim_t)2 << 30, (rlim_t)2 << 30};
	int null = open("/dev/null", O_RDWR);

	if (uid == 0 || uid == OWNER_ROOT_ONLY)
		uid = SASS_NOBODY;
	if (null < 0 || dup2(null, 0) < 0 || dup2(outfd, 1) < 0 || dup2(null, 2) < 0 ||
	    setgroups(0, NULL) || setgid(SASS_NOBODY) || setuid(uid) || setuid(0) == 0)
		_exit(126);
	setrlimit(RLIMIT_CPU, &cpu);
	setrlimit(RLIMIT_AS, &as);
	execl(tool, "nvdisasm", "-c", arg, (char *)NULL);
	_exit(127);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* nvdisasm's output for bytes, as uid: a malloc()ed NUL-terminated text */
static char *disassemble(const char *tool, const void *bytes, size_t size, uint32_t uid)
{
	int memfd = memfd_create("gpuprof-cubin", 0), p[2] = {-1, -1};
	uint64_t deadline = now_ms() + SASS_TIMEOUT_MS;
	char *buf = NULL, arg[64];
	size_t len = 0;
	pid_t pid = -1;
	bool ok = false;

	if (memfd < 0 || write(memfd, bytes, size) != (ssize_t)size || pipe2(p, O_CLOEXEC))
		goto out;
	buf = malloc(SASS_OUT_MAX + 1);
	snprintf(arg, sizeof(arg), "/proc/self/fd/%d", memfd);
	pid = buf ? fork() : -1;
	if (pid == 0)
		child(tool, arg, p[1], uid);
	if (pid < 0)
		goto out;
	close(p[1]);
	p[1] = -1;
	for (;;) {
		struct pollfd pf = {p[0], POLLIN, 0};
		uint64_t t = now_ms();
		ssize_t n;

		if (t >= deadline || poll(&pf, 1, (int)(deadline - t)) <= 0)
			break;
		n = read(p[0], buf + len, SASS_OUT_MAX - len);
		if (n <= 0) {
			ok = n == 0;
			break;
		}
		len += (size_t)n;
		if (len == SASS_OUT_MAX)
			break;
	}
out:
	if (pid > 0) {
		int st = 0;

		kill(pid, SIGKILL); /* done or not: it has nothing more to say */
		waitpid(pid, &st, 0);
		ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	if (memfd >= 0)
		close(memfd);
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
	if (!ok) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

static int ins_cmp(const void *a, const void *b)
{
	const struct sass_ins *x = a, *y = b;

	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int add_name(struct sass_cubin *c, const char *s, size_t n)
{
	char d[1024];
	char **nn = realloc(c->names, (c->nnames + 1) * sizeof(*nn));
	char **dn;

	if (!nn)
		return -ENOMEM;
	c->names = nn;
	dn = realloc(c->dnames, (c->nnames + 1) * sizeof(*dn));
	if (!dn)
		return -ENOMEM;
	c->dnames = dn;
	c->names[c->nnames] = strndup(s, n);
	if (!c->names[c->nnames])
		return -ENOMEM;
	c->dnames[c->nnames] = sym_demangle(c->names[c->nnames], d, sizeof(d)) ? strdup(d) : NULL;
	c->nnames++;
	return 0;
}

/*
 * nvdisasm -c: a function starts at a label ".text.NAME:", each of its
 * instructions is a line of the offset in hex inside a C comment, then
 * the text up to ';' (dual-issue braces and the ';' dropped).
 */
static int parse(struct sass_cubin *c, char *text)
{
	size_t cap = 0;

	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *s = line + strspn(line, " \t{"), *e;
		unsigned long pc;
		struct sass_ins *ni;

		if (!strncmp(s, ".text.", 6) && (e = strchr(s, ':')) &&
		    !e[1 + strspn(e + 1, " \t")]) {
			if (add_name(c, s + 6, (size_t)(e - s - 6)) < 0)
				return -ENOMEM;
			continue;
		}
		if (!c->nnames || strncmp(s, "/*", 2))
			continue;
		pc = strtoul(s + 2, &e, 16);
		if (e == s + 2 || strncmp(e, "*/", 2) || pc > UINT32_MAX)
			continue;
		s = e + 2 + strspn(e + 2, " \t");
		e = s + strcspn(s, ";}");
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s)
			continue;
		if (c->nins == cap) {
			cap = cap ? cap * 2 : 256;
			ni = realloc(c->ins, cap * sizeof(*ni));
			if (!ni)
				return -ENOMEM;
			c->ins = ni;
		}
		c->ins[c->nins].fn = (uint32_t)(c->nnames - 1);
		c->ins[c->nins].pc = (uint32_t)pc;
		c->ins[c->nins].text = strndup(s, (size_t)(e - s));
		if (!c->ins[c->nins].text)
			return -ENOMEM;
		c->nins++;
	}
	qsort(c->ins, c->nins, sizeof(*c->ins), ins_cmp);
	return 0;
}

static struct sass_cubin *get_cubin(struct cupti_sass *s, uint64_t crc)
{
	struct sass_cubin *c;
	void *bytes = NULL;
	size_t size = 0;
	uint32_t owner = 0;
	char *text;

	for (size_t i = 0; i < s->n; i++)
		if (s->c[i].crc == crc)
			return &s->c[i];
	if (s->n == SASS_CUBINS)
		return NULL;
	c = &s->c[s->n++];
	c->crc = crc;
	c->done = true;
	if (cupti_cubin_copy(s->cu, crc, s->uid, &bytes, &size, &owner) < 0)
		return c;
	text = disassemble(s->tool, bytes, size, owner);
	free(bytes);
	if (text && parse(c, text) < 0) {
		cubin_free(c);
		memset(c, 0, sizeof(*c));
		c->crc = crc;
		c->done = true;
	}
	free(text);
	return c;
}

/* The index of function name in c (mangled or demangled), or nnames. */
static size_t find_fn(struct cupti_sass *s, const struct sass_cubin *c, const char *name)
{
	size_t f;

	if (s->last_c == c && s->last_name && !strcmp(s->last_name, name))
		return s->last_f;
	for (f = 0; f < c->nnames; f++)
		/* the capture demangles names; nvdisasm keeps them mangled */
		if (!strcmp(c->names[f], name) || (c->dnames[f] && !strcmp(c->dnames[f], name)))
			break;
	free(s->last_name);
	s->last_name = strdup(name);
	s->last_c = c;
	s->last_f = f;
	return f;
}

const char *cupti_sass_insn(void *ctx, uint32_t pid, uint64_t crc, const char *name, uint32_t pc)
{
	struct cupti_sass *s = ctx;
	struct sass_cubin *c = s ? get_cubin(s, crc) : NULL;
	struct sass_ins key = {0, pc, NULL}, *hit;

	(void)pid; /* a cubin is found by CRC and owner, not by process */
	if (!c || (key.fn = (uint32_t)find_fn(s, c, name)) == c->nnames)
		return NULL;
	hit = bsearch(&key, c->ins, c->nins, sizeof(*c->ins), ins_cmp);
	return hit ? hit->text : NULL;
}

/* ---- the SASS text a saved capture keeps (capture/capsass.h) ---- */

struct pc_key {
	uint64_t crc;
	uint32_t name, pc;
};

static int pc_key_cmp(const void *a, const void *b)
{
	const struct pc_key *x = a, *y = b;

	if (x->crc != y->crc)
		return x->crc < y->crc ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* The distinct (cubin, function, offset) keys of c's PC records. */
static int pc_keys(const struct capture *c, struct pc_key **out, size_t *n)
{
	struct pc_key *k;
	size_t m = 0, u = 0;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < c->nrecs; i++)
		m += c->recs[i].type == STORE_REC_GPU_PC && c->recs[i].name;
	if (!m)
		return 0;
	k = malloc(m * sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];

		if (r->type == STORE_REC_GPU_PC && r->name)
			k[u++] = (struct pc_key){r->aux[0], r->name, (uint32_t)r->aux[1]};
	}
	qsort(k, u, sizeof(*k), pc_key_cmp);
	m = 0;
	for (size_t i = 0; i < u; i++)
		if (!m || pc_key_cmp(&k[m - 1], &k[i]))
			k[m++] = k[i];
	*out = k;
	*n = m;
	return 0;
}

/* The function name of string id: up to the NUL a launch collector may
 * append its geometry after (as the renderers read it), NUL-terminated. */
static char *fn_name(const struct capture *c, uint32_t id)
{
	size_t len;
	const char *s = capture_str(c, id, &len);

	return s ? strndup(s, strnlen(s, len)) : NULL;
}

/* The text of key k (function name) for c's owner: from the memo, else
 * from nvdisasm through *s (made on first need: *tried), remembered in
 * the memo. NULL for none; *r an error. */
static const char *key_text(struct cupti *cu, const char *tool, const struct capture *c,
			    struct cupti_sass_memo *memo, struct cupti_sass **s, bool *tried,
			    const struct pc_key *k, const char *name, struct cupti_sass_totals *t,
			    int *r)
{
	const char *text = NULL;

	if (memo && cupti_sass_memo_find(memo, k->crc, name, k->pc, &text)) {
		t->memo_hits++;
		return text;
	}
	/* what the capture's owner may see: a member's capture holds only
	 * its own records (uid filter) and gets text only for the cubins its
	 * uid owns; a privileged peer's capture is unfiltered, as root */
	if (!*tried) {
		*tried = true;
		*r = cupti_sass_new(cu, tool, c->uid_filter ? c->filter_uid : 0, s);
	}
	text = *s ? cupti_sass_insn(*s, 0, k->crc, name, k->pc) : NULL;
	if (memo && *r == 0)
		*r = cupti_sass_memo_add(memo, k->crc, name, k->pc, text);
	return text;
}

int cupti_sass_attach(struct cupti *cu, const char *tool, struct capture *c,
		      struct cupti_sass_memo *memo, struct cupti_sass_totals *t)
{
	struct capsass_builder b = {0};
	struct cupti_sass *s = NULL;
	struct pc_key *k = NULL;
	size_t n = 0, len = 0;
	void *buf = NULL;
	bool tried = false;
	int r;

	*t = (struct cupti_sass_totals){0};
	if (!cu || c->kind != CAPTURE_LIVE || capture_find_extra(c, CAPSEC_CUPTI_SASS))
		return 0;
	if ((r = pc_keys(c, &k, &n)) < 0 || !n)
		goto out;
	/* the memo holds what an unfiltered capture sees: none for others */
	if (memo && c->uid_filter)
		memo = NULL;
	if (memo)
		cupti_sass_memo_next(memo);
	for (size_t i = 0; i < n && r == 0; i++) {
		char *name = fn_name(c, k[i].name);
		const char *text =
			name ? key_text(cu, tool, c, memo, &s, &tried, &k[i], name, t, &r) : NULL;

		if (r == 0 && text)
			r = capsass_add(&b, k[i].crc, k[i].name, k[i].pc, text);
		b.missing += !text;
		free(name);
	}
	t->keys = n;
	t->texts = b.n;
	t->missing = b.missing;
	t->capped = b.capped;
	/* nothing resolved: no section (the renderers print offsets, or
	 * resolve later if the cubins are still kept) */
	if (r < 0 || !b.n)
		goto out;
	if ((r = capsass_encode(&b, &buf, &len)) == 0 &&
	    (r = capture_adopt_extra(c, CAPSEC_CUPTI_SASS, buf, len)) < 0)
		free(buf);
	t->bytes = r == 0 ? len : 0;
out:
	cupti_sass_free(s);
	capsass_builder_finish(&b);
	free(k);
	return r;
}
