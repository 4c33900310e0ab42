// SPDX-License-Identifier: MIT
/*
 * Recognizing a CPython process: which mapped file holds _PyRuntime, which
 * version it is, and the layout to read it with, checked on the live
 * process before it is trusted.
 *
 * _PyRuntime is an exported symbol of libpythonX.Y.so (pyenv builds with
 * --enable-shared; its pythonX.Y executable is a small launcher) or of the
 * executable itself (Debian's python3.11 links libpython statically and is
 * ET_EXEC); 3.10+ also put it alone in a ".PyRuntime" section. Embedders
 * (uwsgi, a custom program) may carry it anywhere, so every mapped file is
 * a candidate: the executable first, then files named like libpython, then
 * the rest. Files are opened through /proc/PID/map_files, so a container's
 * files (another mount namespace) and deleted files work.
 */
#include "pyf_int.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAPS_MAX_BYTES (4u << 20)
#define MAX_CANDIDATES 512

int pyf_read(struct pyf_proc *p, uint64_t addr, void *buf, size_t len)
{
	ssize_t r;

	if (!addr || addr + len < addr)
		return -EFAULT;
	do
		r = pread(p->mem_fd, buf, len, (off_t)addr);
	while (r < 0 && errno == EINTR);
	return r == (ssize_t)len ? 0 : -EFAULT;
}

int pyf_read_u64(struct pyf_proc *p, uint64_t addr, uint64_t *v)
{
	return pyf_read(p, addr, v, sizeof(*v));
}

/* process_vm_readv() reads the process the pid names in this PID
 * namespace: only where proc_dir is this namespace's /proc (the daemon's;
 * tests may point the reader elsewhere). A transfer stops at the first
 * remote range that fails; a range read in part counts as not read. */
unsigned pyf_read_many(struct pyf_proc *p, const uint64_t *addr, uint8_t *buf, size_t len,
		       unsigned n)
{
	struct iovec loc[4], rem[4];
	ssize_t r;

	if (n > 4 || strcmp(p->proc_dir, "/proc"))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		if (!addr[i] || addr[i] + len < addr[i])
			return 0;
		loc[i] = (struct iovec){.iov_base = buf + i * len, .iov_len = len};
		rem[i] = (struct iovec){.iov_base = (void *)(uintptr_t)addr[i], .iov_len = len};
	}
	do
		r = process_vm_readv((pid_t)p->pid, loc, n, rem, n, 0);
	while (r < 0 && errno == EINTR);
	return r > 0 ? (unsigned)((size_t)r / len) : 0;
}

/* A mapped file: the lowest mapping at file offset 0 gives its base. */
struct cand {
	uint64_t start, end; /* that mapping, for map_files */
	char path[256];
	int rank; /* 0 executable, 1 libpython, 2 python, 3 other */
};

/* What a file told us about itself. */
struct elf_facts {
	bool has_runtime;
	uint64_t runtime, runtime_size; /* ELF virtual addresses */
	uint64_t py_version, code_type, bytes_type, unicode_type;
	uint64_t bias_vaddr; /* first PT_LOAD's page-aligned p_vaddr */
	char soname[64];
	char vstrings[8][24]; /* "3.X.Y" literals in .rodata */
	unsigned nvstrings;
	uint64_t getversion_buf;	/* Py_GetVersion()'s static buffer (.symtab) */
	uint64_t eval[PYF_MAX_EVAL][2]; /* the frame evaluator's code: [start, end) */
	unsigned neval;
	struct pyf_image segs; /* nseg and seg[] only: the file's PT_LOAD segments */
};

/* Every refusal has a kind (for the caller's logic) and a text (for people). */
#define set_reason(p, kind, ...) \
	((p)->refusal = (kind), snprintf((p)->reason, sizeof((p)->reason), __VA_ARGS__))

static int rank_of(const char *path, const char *exe)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (exe[0] && !strcmp(path, exe))
		return 0;
	if (!strncmp(base, "libpython", 9))
		return 1;
	return strstr(base, "python") ? 2 : 3;
}

static int cand_cmp(const void *a, const void *b)
{
	return ((const struct cand *)a)->rank - ((const struct cand *)b)->rank;
}

/* Files mapped at offset 0, in the order they should be tried. */
static int list_candidates(struct pyf_proc *p, struct cand **ret, size_t *nret)
{
	char path[256], exe[256] = "", *buf = NULL, *line, *save = NULL;
	struct cand *c = NULL;
	size_t n = 0;
	ssize_t el;
	int r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/exe", p->proc_dir, p->pid);
	el = readlink(path, exe, sizeof(exe) - 1);
	exe[el > 0 ? el : 0] = '\0';
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", p->proc_dir, p->pid);
	r = gpd_read_text(path, MAPS_MAX_BYTES, &buf, NULL);
	if (r < 0)
		return r;
	/* not zeroed: each entry is written whole before it is counted, and
	 * zeroing this (143 KiB) was most of what attaching to a new process
	 * cost once its files were known */
	c = malloc(MAX_CANDIDATES * sizeof(*c));
	if (!c) {
		free(buf);
		return -ENOMEM;
	}
	for (line = strtok_r(buf, "\n", &save); line && n < MAX_CANDIDATES;
	     line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, end, off;
		int pathpos = 0;
		bool dup = false;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &off, &pathpos) <
			    3 ||
		    !pathpos || line[pathpos] != '/' || off != 0)
			continue;
		for (size_t i = 0; i < n && !dup; i++)
			dup = !strcmp(c[i].path, line + pathpos);
		if (dup)
			continue;
		c[n].start = start;
		c[n].end = end;
		snprintf(c[n].path, sizeof(c[n].path), "%s", line + pathpos);
		c[n].rank = rank_of(c[n].path, exe);
		n++;
	}
	free(buf);
	qsort(c, n, sizeof(*c), cand_cmp);
	*ret = c;
	*nret = n;
	return 0;
}

/*
 * _PyEval_EvalFrameDefault, the native function that runs Python frames
 * (exported: extension modules may call it), and the parts the compiler
 * split off it ("_PyEval_EvalFrameDefault.cold", named in .symtab only):
 * splicing replaces its activations in native stacks by Python frames.
 */
static void note_eval(struct elf_facts *f, const char *name, const GElf_Sym *sym)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	if (strncmp(name, eval, sizeof(eval) - 1) ||
	    (name[sizeof(eval) - 1] && name[sizeof(eval) - 1] != '.') ||
	    GELF_ST_TYPE(sym->st_info) != STT_FUNC || !sym->st_size)
		return;
	for (unsigned i = 0; i < f->neval; i++)
		if (f->eval[i][0] == sym->st_value)
			return;
	if (f->neval < PYF_MAX_EVAL) {
		f->eval[f->neval][0] = sym->st_value;
		f->eval[f->neval][1] = sym->st_value + sym->st_size;
		f->neval++;
	}
}

static void scan_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_facts *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t nsym = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < nsym; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		note_eval(f, name, &sym);
		if (!strcmp(name, "_PyRuntime")) {
			f->has_runtime = true;
			f->runtime = sym.st_value;
			f->runtime_size = sym.st_size;
		} else if (!strcmp(name, "Py_Version")) {
			f->py_version = sym.st_value;
		} else if (!strcmp(name, "PyCode_Type")) {
			f->code_type = sym.st_value;
		} else if (!strcmp(name, "PyBytes_Type")) {
			f->bytes_type = sym.st_value;
		} else if (!strcmp(name, "PyUnicode_Type")) {
			f->unicode_type = sym.st_value;
		}
	}
}

/*
 * Py_GetVersion() formats sys.version ("3.9.18 (main, ...) [GCC ...]") into
 * a function-local static buffer of 250 bytes, filled at start-up. Not
 * exported, but unstripped builds (pyenv's) name it in .symtab ("version.0"
 * with GCC): the running interpreter's own version text, which gives 3.9 and
 * 3.10 their patch level and checks the version of the others.
 */
static void scan_local_version(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_facts *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t nsym = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < nsym; i++) {
		GElf_Sym sym;
		const char *name;

		if (gelf_getsym(d, (int)i, &sym) && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
		    sym.st_shndx != SHN_UNDEF && (name = elf_strptr(e, sh->sh_link, sym.st_name)))
			note_eval(f, name, &sym);
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_size != 250 ||
		    GELF_ST_TYPE(sym.st_info) != STT_OBJECT ||
		    GELF_ST_BIND(sym.st_info) != STB_LOCAL)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (name && (!strcmp(name, "version") || !strncmp(name, "version.", 8)))
			f->getversion_buf = sym.st_value;
	}
}

/*
 * A "3.X.Y" string literal (PY_VERSION, maybe with a tag such as "rc1")
 * starting a string in .rodata. Compilers may fold it into code (pyenv's
 * builds carry none); Debian's python3.11 has it, next to unrelated ones
 * ("3.2.0" of a bundled library), so all are kept and only those of the
 * interpreter's own minor are compared.
 */
static bool is_version_literal(const char *q, size_t len)
{
	size_t digits = strspn(q, "0123456789."), dots = 0;

	if (len < 5 || len >= 24 || q[0] != '3' || q[1] != '.' || digits < 5)
		return false;
	for (size_t i = 0; i < digits; i++)
		dots += q[i] == '.';
	if (dots != 2 || q[digits - 1] == '.')
		return false;
	for (size_t i = digits; i < len; i++)
		if (!isalnum((unsigned char)q[i]) && q[i] != '+')
			return false;
	return true;
}

static void scan_version_strings(Elf_Scn *scn, struct elf_facts *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const char *s, *end;

	if (!d || !d->d_buf)
		return;
	s = d->d_buf;
	end = s + d->d_size;
	for (const char *q = s; q + 6 < end; q++) {
		size_t len;

		if (q[0] != '3' || q[1] != '.' || (q > s && q[-1] != '\0'))
			continue;
		len = strnlen(q, (size_t)(end - q));
		if (q + len < end && is_version_literal(q, len)) {
			memcpy(f->vstrings[f->nvstrings++], q, len + 1);
			if (f->nvstrings == sizeof(f->vstrings) / sizeof(f->vstrings[0]))
				return;
		}
		q += len;
	}
}

static void read_soname(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct elf_facts *f)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;

	for (size_t i = 0; d && i < n; i++) {
		GElf_Dyn dyn;
		const char *s;

		if (!gelf_getdyn(d, (int)i, &dyn))
			break;
		if (dyn.d_tag == DT_SONAME && (s = elf_strptr(e, sh->sh_link, dyn.d_un.d_val)))
			snprintf(f->soname, sizeof(f->soname), "%s", s);
	}
}

/* Does the string table of a symbol section hold "_PyRuntime"? A cheap
 * test that spares walking the symbols of every library of a large process
 * (libtorch exports about 100,000). */
static bool strtab_has_runtime(Elf *e, const GElf_Shdr *symsh)
{
	static const char want[] = "\0_PyRuntime";
	Elf_Scn *str = elf_getscn(e, symsh->sh_link);
	Elf_Data *d = str ? elf_getdata(str, NULL) : NULL;

	return d && d->d_buf && memmem(d->d_buf, d->d_size, want, sizeof(want));
}

/* The file-backed part of each PT_LOAD segment (pyfstatic.c reads code
 * objects of the image from the file through them). */
static void load_segments(Elf *e, size_t nph, struct pyf_image *img)
{
	img->nseg = 0;
	for (size_t i = 0; i < nph && img->nseg < PYF_MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		img->seg[img->nseg].vaddr = ph.p_vaddr;
		img->seg[img->nseg].filesz = ph.p_filesz;
		img->seg[img->nseg].offset = ph.p_offset;
		img->nseg++;
	}
}

static int elf_inspect(Elf *e, struct elf_facts *f)
{
	Elf_Scn *scn = NULL, *rodata = NULL, *pyrt = NULL, *dynsym = NULL, *symtab = NULL;
	Elf_Scn *dynamic = NULL;
	GElf_Shdr pyrt_sh = {0}, dynsym_sh = {0}, symtab_sh = {0}, dynamic_sh = {0};
	GElf_Ehdr eh;
	size_t shstr, nph;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(e, &shstr) || elf_getphdrnum(e, &nph))
		return -ENOEXEC;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(e, shstr, sh.sh_name);
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn, dynsym_sh = sh;
		else if (sh.sh_type == SHT_SYMTAB)
			symtab = scn, symtab_sh = sh;
		else if (sh.sh_type == SHT_DYNAMIC)
			dynamic = scn, dynamic_sh = sh;
		else if (name && !strcmp(name, ".rodata"))
			rodata = scn;
		else if (name && !strcmp(name, ".PyRuntime"))
			pyrt = scn, pyrt_sh = sh;
	}
	if (!pyrt && !(dynsym && strtab_has_runtime(e, &dynsym_sh)))
		return 0; /* no interpreter here */
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			f->bias_vaddr = ph.p_vaddr & ~0xfffull;
			break;
		}
	}
	load_segments(e, nph, &f->segs);
	if (dynsym)
		scan_symbols(e, dynsym, &dynsym_sh, f);
	/* A stripped dynamic symbol table still leaves the section. */
	if (!f->has_runtime && pyrt) {
		f->has_runtime = true;
		f->runtime = pyrt_sh.sh_addr;
		f->runtime_size = pyrt_sh.sh_size;
	}
	if (!f->has_runtime)
		return 0;
	if (symtab)
		scan_local_version(e, symtab, &symtab_sh, f);
	if (dynamic)
		read_soname(e, dynamic, &dynamic_sh, f);
	if (rodata)
		scan_version_strings(rodata, f);
	return 0;
}

/*
 * What elf_inspect() found in a file, by its identity: on a host that
 * starts Python processes all the time (a build's `python3 -c`), each new one
 * otherwise read the interpreter's sections again and scanned its .rodata
 * byte by byte, the largest part of what its recognition cost. The key has
 * the file's size and its change time, so a file rewritten in place is read
 * again. A few entries, replaced in turn; one lock: the registry inspects
 * on a thread pool.
 */
#define ELF_CACHE_SLOTS 16

static struct {
	pthread_mutex_t lock;
	struct elf_cached {
		dev_t dev;
		ino_t ino;
		off_t size;
		struct timespec mtime, ctime;
		bool used;
		struct elf_facts f;
	} e[ELF_CACHE_SLOTS];
	unsigned next;
	uint64_t hits;
} elf_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool same_file(const struct elf_cached *c, const struct stat *st)
{
	return c->used && c->dev == st->st_dev && c->ino == st->st_ino && c->size == st->st_size &&
	       c->mtime.tv_sec == st->st_mtim.tv_sec && c->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       c->ctime.tv_sec == st->st_ctim.tv_sec && c->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static bool elf_cache_get(const struct stat *st, struct elf_facts *f)
{
	bool hit = false;

	pthread_mutex_lock(&elf_cache.lock);
	for (unsigned i = 0; i < ELF_CACHE_SLOTS && !hit; i++)
		if (same_file(&elf_cache.e[i], st)) {
			*f = elf_cache.e[i].f;
			elf_cache.hits++;
			hit = true;
		}
	pthread_mutex_unlock(&elf_cache.lock);
	return hit;
}

static void elf_cache_put(const struct stat *st, const struct elf_facts *f)
{
	pthread_mutex_lock(&elf_cache.lock);
	elf_cache.e[elf_cache.next] = (struct elf_cached){
		.dev = st->st_dev,
		.ino = st->st_ino,
		.size = st->st_size,
		.mtime = st->st_mtim,
		.ctime = st->st_ctim,
		.used = true,
		.f = *f,
	};
	elf_cache.next = (elf_cache.next + 1) % ELF_CACHE_SLOTS;
	pthread_mutex_unlock(&elf_cache.lock);
}

uint64_t pyf_elf_cache_hits(void)
{
	uint64_t n;

	pthread_mutex_lock(&elf_cache.lock);
	n = elf_cache.hits;
	pthread_mutex_unlock(&elf_cache.lock);
	return n;
}

static int inspect_candidate(struct pyf_proc *p, const struct cand *c, struct elf_facts *f,
			     struct stat *stp)
{
	char mf[320];
	Elf *e;
	int fd, r;

	snprintf(mf, sizeof(mf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, p->proc_dir,
		 p->pid, c->start, c->end);
	fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, stp) || !S_ISREG(stp->st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	if (elf_cache_get(stp, f)) {
		close(fd);
		return 0;
	}
	/* pread, not mmap: the file is the profiled user's, and one truncated
	 * under us would SIGBUS the daemon (as for the unwinder's objects) */
	e = elf_begin(fd, ELF_C_READ, NULL);
	r = e ? elf_inspect(e, f) : -ENOEXEC;
	if (e)
		elf_end(e);
	close(fd);
	if (r == 0)
		elf_cache_put(stp, f);
	return r;
}

/* Minor version from a name such as libpython3.10.so.1.0 or python3.9. */
static unsigned minor_from_name(const char *name)
{
	const char *s = strstr(name, "python3.");
	unsigned minor;

	if (!s || sscanf(s + 8, "%u", &minor) != 1 || minor > 99)
		return 0;
	return minor;
}

/* _PyRuntime sizes of the builds the tables were written from: a check of
 * last resort, quoted when the live checks fail. */
static uint64_t expected_runtime_size(unsigned minor)
{
	switch (minor) {
	case 9:
		return 656;
	case 10:
		return 672;
	case 11:
		return 0x28b20;
	case 12:
		return 0x704a8;
	}
	return 0;
}

static bool read_str(struct pyf_proc *p, uint64_t addr, char *buf, size_t len)
{
	if (pyf_read(p, addr, buf, len))
		return false;
	buf[len - 1] = '\0';
	return true;
}

/*
 * Does the layout fit the live process? PyCode_Type must be named "code"
 * (a shifted object header would break that), its tp_basicsize must be
 * co_code_adaptive (3.11+), and when an interpreter exists its first thread
 * state must point back at it.
 *
 * Whether the interpreter exists is asked first: until it does, the
 * process may be one the dynamic loader has mapped libpython into but not
 * relocated yet, where PyCode_Type.tp_name still holds its unrelocated
 * value (0 in the file, with RELA relocations). Checked there, a process
 * caught during its start-up was refused for good as "not the code type";
 * it is only starting, and is attached again later. So is one whose
 * _PyRuntime or main interpreter cannot be read: memory that does not
 * read tells nothing about the layout (a process caught while the loader
 * maps it, or exec'ing), and the retries are bounded.
 */
static const char *check_live(struct pyf_proc *p, bool *uninit)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t tp_name, basicsize, interp, ts, back;
	char name[8];

	*uninit = false;
	if (pyf_read_u64(p, p->runtime + l->rt_interp_head, &interp)) {
		*uninit = true;
		return "_PyRuntime is unreadable";
	}
	if (!interp) {
		*uninit = true;
		return "the interpreter is not initialized (yet)";
	}
	if (!p->code_type || pyf_read_u64(p, p->code_type + 24, &tp_name) ||
	    !read_str(p, tp_name, name, 5) || strcmp(name, "code"))
		return "PyCode_Type does not look like the code type";
	if (l->co_code_adaptive != PYF_NONE &&
	    (pyf_read_u64(p, p->code_type + 32, &basicsize) || basicsize != l->co_code_adaptive))
		return "PyCode_Type.tp_basicsize differs from the layout's code object size";
	if (pyf_read_u64(p, interp + l->is_threads_head, &ts)) {
		*uninit = true;
		return "the main interpreter is unreadable";
	}
	if (ts && (pyf_read_u64(p, ts + l->ts_interp, &back) || back != interp))
		return "a thread state does not point back at its interpreter";
	return NULL;
}

static void settle_layout(struct pyf_proc *p, const struct elf_facts *f)
{
	unsigned minor = (p->version >> 16) & 0xff;
	const char *why = NULL;
	bool uninit;

	if ((p->version >> 24) != 3 || minor < 9) {
		char v[16];

		snprintf(v, sizeof(v), "%u.%u", p->version >> 24, minor);
		set_reason(p, PYF_REFUSED_UNSUPPORTED,
			   "CPython %s is not supported (3.9 and later are)", v);
		return;
	}
	if (minor <= 12) {
		pyf_layout_table(minor, &p->lay);
	} else {
		uint64_t slots[128] = {0}, basicsize = 0;
		size_t n = f->runtime_size ? f->runtime_size / 8 : 128;

		if (n > 128)
			n = 128;
		if (!p->code_type) {
			set_reason(p, PYF_REFUSED_UNSUPPORTED, "no PyCode_Type next to _PyRuntime");
			return;
		}
		if (pyf_read(p, p->runtime, slots, n * 8) ||
		    pyf_read_u64(p, p->code_type + 32, &basicsize)) {
			/* as in check_live(): tried again later */
			set_reason(p, PYF_REFUSED_STARTING, "_PyRuntime is unreadable");
			return;
		}
		if (slots[1] != p->version && f->py_version) {
			set_reason(p, PYF_REFUSED_UNSUPPORTED,
				   "_Py_DebugOffsets and Py_Version disagree on the version");
			return;
		}
		why = pyf_layout_debug_offsets(slots, n, minor, basicsize, &p->lay);
		if (why) {
			set_reason(p, PYF_REFUSED_UNSUPPORTED, "%s", why);
			return;
		}
	}
	why = check_live(p, &uninit);
	if (why && !uninit && minor <= 12 && p->runtime_size &&
	    p->runtime_size != expected_runtime_size(minor)) {
		set_reason(p, PYF_REFUSED_UNSUPPORTED,
			   "%.60s (_PyRuntime is %" PRIu64 " bytes, not %" PRIu64
			   ": a debug build?)",
			   why, p->runtime_size, expected_runtime_size(minor));
	} else if (why) {
		set_reason(p, uninit ? PYF_REFUSED_STARTING : PYF_REFUSED_UNSUPPORTED, "%s", why);
	}
}

/*
 * Does a "3.X.Y..." text agree with p->version? Where only the minor was
 * known (3.9/3.10), it supplies the patch level (a final release when no
 * tag such as "rc1" follows).
 */
static bool version_text_agrees(struct pyf_proc *p, const char *text)
{
	unsigned a = 0, b = 0;
	int end = 0;

	if (sscanf(text, "3.%u.%u%n", &a, &b, &end) != 2 || a != ((p->version >> 16) & 0xff) ||
	    b > 255)
		return false;
	if (!(p->version & 0xffff)) {
		p->version |= b << 8;
		if (!text[end])
			p->version |= 0xf0;
		return true;
	}
	return b == ((p->version >> 8) & 0xff);
}

/* The version: Py_Version (3.11+), else the file's name or soname. The
 * version texts in the binary, when there are, must agree. */
static void settle_version(struct pyf_proc *p, const struct elf_facts *f, uint64_t bias,
			   const char *path)
{
	unsigned minor = minor_from_name(f->soname);
	uint64_t v = 0;

	if (f->py_version && !pyf_read_u64(p, bias + f->py_version, &v))
		p->version = (uint32_t)v;
	if (!p->version) {
		const char *base = strrchr(path, '/');

		if (!minor)
			minor = minor_from_name(base ? base + 1 : path);
		if (!minor) {
			set_reason(p, PYF_REFUSED_UNSUPPORTED,
				   "CPython of unknown version (no Py_Version, no versioned name)");
			return;
		}
		p->version = 0x03000000u | minor << 16;
	}
	for (unsigned i = 0; i < f->nvstrings; i++) {
		unsigned minor_here;

		if (sscanf(f->vstrings[i], "3.%u.", &minor_here) != 1 ||
		    minor_here != ((p->version >> 16) & 0xff))
			continue;
		if (!version_text_agrees(p, f->vstrings[i])) {
			set_reason(p, PYF_REFUSED_UNSUPPORTED,
				   "the version string %s in the binary contradicts Py_Version",
				   f->vstrings[i]);
			return;
		}
	}
	if (f->getversion_buf) {
		char text[24];

		/* empty until start-up formatted it: nothing to check then */
		if (pyf_read(p, bias + f->getversion_buf, text, sizeof(text)) || text[0] != '3')
			return;
		text[sizeof(text) - 1] = '\0';
		text[strcspn(text, " ")] = '\0';
		if (!version_text_agrees(p, text))
			set_reason(p, PYF_REFUSED_UNSUPPORTED,
				   "sys.version %s contradicts the interpreter's version", text);
	}
}

static void set_image(struct pyf_proc *p, const struct stat *st, const struct pyf_image *segs,
		      uint64_t bias, uint64_t start, uint64_t end)
{
	struct pyf_image *img = &p->img;

	*img = *segs;
	img->known = true;
	img->dev = st->st_dev;
	img->ino = st->st_ino;
	img->size = (uint64_t)st->st_size;
	img->mtime_s = st->st_mtim.tv_sec;
	img->mtime_ns = st->st_mtim.tv_nsec;
	img->ctime_s = st->st_ctim.tv_sec;
	img->ctime_ns = st->st_ctim.tv_nsec;
	img->bias = bias;
	img->map_start = start;
	img->map_end = end;
}

int pyf_image_from_mapping(struct pyf_proc *p, uint64_t start, uint64_t end)
{
	struct pyf_image segs = {0};
	char mf[320];
	struct stat st;
	GElf_Phdr ph;
	size_t nph;
	Elf *e;
	int fd, r = -ENOEXEC;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	snprintf(mf, sizeof(mf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, p->proc_dir,
		 p->pid, start, end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!fstat(fd, &st) && e && !elf_getphdrnum(e, &nph)) {
		load_segments(e, nph, &segs);
		for (size_t i = 0; i < nph; i++)
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				set_image(p, &st, &segs, start - (ph.p_vaddr & ~0xfffull), start,
					  end);
				r = 0;
				break;
			}
	}
	if (e)
		elf_end(e);
	close(fd);
	return r;
}

static int find_runtime(struct pyf_proc *p)
{
	struct cand *c;
	size_t n;
	int r = list_candidates(p, &c, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct elf_facts f = {0};
		struct stat st;
		uint64_t bias;
		const char *base;

		if (inspect_candidate(p, &c[i], &f, &st) < 0 || !f.has_runtime)
			continue;
		bias = c[i].start - f.bias_vaddr;
		set_image(p, &st, &f.segs, bias, c[i].start, c[i].end);
		p->runtime = bias + f.runtime;
		p->runtime_size = f.runtime_size;
		p->code_type = f.code_type ? bias + f.code_type : 0;
		p->bytes_type = f.bytes_type ? bias + f.bytes_type : 0;
		p->unicode_type = f.unicode_type ? bias + f.unicode_type : 0;
		for (unsigned k = 0; k < f.neval; k++) {
			p->eval[k][0] = bias + f.eval[k][0];
			p->eval[k][1] = bias + f.eval[k][1];
		}
		p->neval = f.neval;
		base = strrchr(c[i].path, '/');
		base = base ? base + 1 : c[i].path;
		snprintf(p->module, sizeof(p->module), "%.*s", (int)sizeof(p->module) - 1, base);
		settle_version(p, &f, bias, c[i].path);
		if (!p->reason[0])
			settle_layout(p, &f);
		free(c);
		return 0;
	}
	free(c);
	set_reason(p, PYF_REFUSED_NOT_PYTHON,
		   "not a CPython process (no _PyRuntime in any mapped file)");
	return 0;
}

int pyf_attach(uint32_t pid, const char *proc_dir, struct pyf_proc **ret)
{
	struct pyf_proc *p;
	char path[256];
	int r;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->pthread_tid_off = -1;
	snprintf(p->proc_dir, sizeof(p->proc_dir), "%s", proc_dir ? proc_dir : "/proc");
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/mem", p->proc_dir, pid);
	p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (p->mem_fd < 0) {
		r = -errno;
		free(p);
		return r;
	}
	r = find_runtime(p);
	if (r < 0) {
		pyf_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void pyf_free(struct pyf_proc *p)
{
	if (!p)
		return;
	pyf_codes_free(p);
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	free(p);
}

bool pyf_same_image(struct pyf_proc *p, bool thorough)
{
	uint64_t addr = p->runtime + p->lay.rt_interp_head, mine, now;
	char path[256];
	ssize_t n;
	int fd;

	if (!p->runtime || pyf_read_u64(p, addr, &mine))
		return false;
	if (!thorough)
		return true;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/mem", p->proc_dir, p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* gone, or not ours to read: nothing to tell */
	n = pread(fd, &now, sizeof(now), (off_t)addr);
	close(fd);
	return n == sizeof(now) && now == mine;
}

const char *pyf_reason(const struct pyf_proc *p)
{
	return p->reason[0] ? p->reason : NULL;
}

enum pyf_refusal pyf_refusal(const struct pyf_proc *p)
{
	return p->reason[0] ? p->refusal : PYF_REFUSED_NONE;
}

uint32_t pyf_version(const struct pyf_proc *p)
{
	return p->version;
}

const char *pyf_layout_source(const struct pyf_proc *p)
{
	return p->reason[0] ? "" : p->lay.source;
}
