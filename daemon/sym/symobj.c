// SPDX-License-Identifier: MIT
/*
 * One ELF object's function symbols and load segments, read with libelf.
 * Object files are untrusted input (a container can map anything): every
 * header, section and string is reached through libelf's checked API
 * (gelf_get*, elf_strptr), counts are capped, and the file is read with
 * ELF_C_READ (pread) rather than mmap, so a file truncated under us
 * cannot SIGBUS the daemon.
 */
#include "symobj_int.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_PHDRS 4096
#define MAX_NAME 1024
#define MAX_STRS_BYTES (256u << 20)

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;

static void elf_init(void)
{
	elf_version(EV_CURRENT);
}

int sym_open_in_root(const char *root, const char *path)
{
	const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	struct stat st;
	int fd;

	if (!root || !*root) {
		fd = open(path, flags);
	} else {
		int dfd = open(root, O_PATH | O_CLOEXEC | O_DIRECTORY);
		if (dfd < 0)
			return -errno;
		struct open_how how = {
			.flags = flags,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
		};
		fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
		if (fd < 0 && errno == ENOSYS) /* before Linux 5.6: best effort */
			fd = openat(dfd, path[0] == '/' ? path + 1 : path, flags);
		int e = errno;
		close(dfd);
		errno = e;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOEXEC;
	}
	return fd;
}

static Elf *elf_open(int fd)
{
	pthread_once(&elf_once, elf_init);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return NULL;
	}
	return e;
}

static size_t build_id(Elf *e, uint8_t *id)
{
	const void *p;
	ssize_t n = dwelf_elf_gnu_build_id(e, &p);
	if (n <= 0 || n > SYM_BUILD_ID_MAX)
		return 0;
	memcpy(id, p, (size_t)n);
	return (size_t)n;
}

int symobj_read_build_id(int fd, uint8_t *id, size_t *len)
{
	Elf *e = elf_open(fd);
	if (!e)
		return -ENOEXEC;
	*len = build_id(e, id);
	elf_end(e);
	return 0;
}

static Elf_Scn *find_section(Elf *e, Elf64_Word type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, sh) && sh->sh_type == type)
			return scn;
	return NULL;
}

static bool has_section_named(Elf *e, const char *want)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (n && !strcmp(n, want) && sh.sh_type != SHT_NOBITS)
			return true;
	}
	return false;
}

Elf_Scn *symobj_section(Elf *e, const char *want, GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n = gelf_getshdr(scn, sh) ? elf_strptr(e, shstrndx, sh->sh_name) : NULL;
		if (n && !strcmp(n, want))
			return scn;
	}
	return NULL;
}

static int rank_of(unsigned bind, uint64_t size)
{
	int r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2;
	return size ? r : r + 3;
}

int symobj_add(struct symbuild *b, const char *name, size_t nl, uint64_t addr, uint64_t size,
	       uint32_t rank)
{
	struct sym_obj *o = b->o;
	if (nl > MAX_NAME)
		nl = MAX_NAME;
	if (o->nsyms >= b->max || o->strs_len + nl + 1 > MAX_STRS_BYTES)
		return -E2BIG;
	if (o->nsyms == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 1024;
		struct objsym *ns = realloc(o->syms, nc * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		o->syms = ns;
		b->cap = nc;
	}
	if (o->strs_len + nl + 1 > b->scap) {
		size_t nc = b->scap ? b->scap : 16384;
		while (nc < o->strs_len + nl + 1)
			nc *= 2;
		char *np = realloc(o->strs, nc);
		if (!np)
			return -ENOMEM;
		o->strs = np;
		b->scap = nc;
	}
	memcpy(o->strs + o->strs_len, name, nl);
	o->strs[o->strs_len + nl] = '\0';
	o->syms[o->nsyms++] = (struct objsym){
		.addr = addr,
		.size = size,
		.name = (uint32_t)o->strs_len,
		.rank = rank,
	};
	o->strs_len += nl + 1;
	return 0;
}

/* Append the functions of one symbol table. Returns how many or -ENOMEM. */
long symobj_read_symbols(Elf *e, Elf64_Word type, struct symbuild *b)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_section(e, type, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	size_t ent = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	long added = 0;

	if (!d || !d->d_buf || !ent || d->d_type != ELF_T_SYM)
		return 0;
	size_t n = d->d_size / ent;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			break;
		unsigned t = GELF_ST_TYPE(s.st_info);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		const char *name = elf_strptr(e, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		int r = symobj_add(b, name, strnlen(name, MAX_NAME), s.st_value, s.st_size,
				   (uint32_t)rank_of(GELF_ST_BIND(s.st_info), s.st_size));
		if (r == -E2BIG)
			break;
		if (r < 0)
			return r;
		added++;
	}
	return added;
}

static int osym_cmp(const void *a, const void *b)
{
	const struct objsym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

void symobj_sort(struct sym_obj *o)
{
	if (o->nsyms)
		qsort(o->syms, o->nsyms, sizeof(*o->syms), osym_cmp);
	size_t w = 0;
	for (size_t i = 0; i < o->nsyms; i++)
		if (!w || o->syms[w - 1].addr != o->syms[i].addr)
			o->syms[w++] = o->syms[i];
	o->nsyms = w;
}

static int read_loads(Elf *e, struct sym_obj *o)
{
	size_t n;
	if (elf_getphdrnum(e, &n) < 0)
		return -ENOEXEC;
	if (n > MAX_PHDRS)
		n = MAX_PHDRS;
	o->loads = calloc(n ? n : 1, sizeof(*o->loads));
	if (!o->loads)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		o->loads[o->nloads++] = (struct objload){ph.p_offset, ph.p_filesz, ph.p_vaddr,
							 (ph.p_flags & PF_X) != 0};
	}
	return 0;
}

/* A separate debug file: /usr/lib/debug/.build-id/xx/rest.debug, then the
 * .gnu_debuglink name next to the object, in .debug/, under debug_dir. The
 * build-ids must agree when both files have one. */
static int open_debug_file(const struct symobj_opts *op, const struct sym_obj *o, Elf *e)
{
	const char *dbg = op->debug_dir ? op->debug_dir : "/usr/lib/debug";
	char cand[4][4096];
	int ncand = 0;

	if (o->build_id_len >= 2) {
		char hex[2 * SYM_BUILD_ID_MAX + 1];
		for (size_t i = 0; i < o->build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", o->build_id[i]);
		if (snprintf(cand[ncand], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug", dbg, hex,
			     hex + 2) < (int)sizeof(cand[0]))
			ncand++;
	}
	GElf_Word crc;
	const char *link = dwelf_elf_gnu_debuglink(e, &crc);
	if (link && *link && !strchr(link, '/') && op->path && op->path[0] == '/') {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", op->path);
		*strrchr(dir, '/') = '\0';
		const int n = (int)sizeof(cand[0]);
		if (snprintf(cand[ncand], sizeof(cand[0]), "%s/%s", dir, link) < n)
			ncand++;
		if (snprintf(cand[ncand], sizeof(cand[0]), "%s/.debug/%s", dir, link) < n)
			ncand++;
		if (snprintf(cand[ncand], sizeof(cand[0]), "%s%s/%s", dbg, dir, link) < n)
			ncand++;
	}
	for (int i = 0; i < ncand; i++) {
		/* The host's debug files first (debuginfod caches live there),
		 * then the container's. */
		for (int pass = 0; pass < 2; pass++) {
			const char *root = pass ? op->root : "";
			if (pass && (!root || !*root))
				break;
			int fd = sym_open_in_root(root, cand[i]);
			if (fd < 0)
				continue;
			uint8_t id[SYM_BUILD_ID_MAX];
			size_t idlen = 0;
			if (symobj_read_build_id(fd, id, &idlen) == 0 &&
			    (!o->build_id_len || !idlen ||
			     (idlen == o->build_id_len && !memcmp(id, o->build_id, idlen))))
				return fd;
			close(fd);
		}
	}
	return -ENOENT;
}

/*
 * libdw is less hardened than libelf: some malformed line tables make it
 * run strlen() past a section's end (seen with elfutils 0.188). So the
 * file is read whole into memory followed by zero padding and opened with
 * elf_memory(), where uncompressed sections point into that image: an
 * overrun stops at the padding instead of leaving the allocation.
 * Compressed debug sections (decompressed into exact-size buffers) are
 * refused. The image counts against the object cache's memory limit.
 */
#define DWARF_MAX_FILE (512u << 20)
#define DWARF_PAD 4096

static bool compressed_debug(Elf *e)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	if (elf_getshdrstrndx(e, &shstrndx) < 0)
		return true;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return true;
		const char *n = elf_strptr(e, shstrndx, sh.sh_name);
		if (n && (!strncmp(n, ".zdebug", 7) ||
			  (!strncmp(n, ".debug", 6) && (sh.sh_flags & SHF_COMPRESSED))))
			return true;
	}
	return false;
}

static void open_dwarf(struct sym_obj *o, int fd, size_t max)
{
	struct stat st;
	size_t got = 0;
	if (!max || max > DWARF_MAX_FILE)
		max = DWARF_MAX_FILE;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || (uint64_t)st.st_size > max)
		return;
	char *img = calloc(1, (size_t)st.st_size + DWARF_PAD);
	if (!img)
		return;
	while (got < (size_t)st.st_size) {
		ssize_t n = pread(fd, img + got, (size_t)st.st_size - got, (off_t)got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	Elf *e = got == (size_t)st.st_size ? elf_memory(img, got) : NULL;
	if (e && elf_kind(e) == ELF_K_ELF && !compressed_debug(e))
		o->dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	if (!o->dw) {
		if (e)
			elf_end(e);
		free(img);
		return;
	}
	o->dw_elf = e;
	o->dw_image = img;
	o->bytes += got;
}

/* MiniDebugInfo is a compressed copy of symbols: bounded like the names
 * of one object, so a hostile section cannot make the daemon inflate more
 * than that. */
#define MINIDEBUG_MAX_BYTES (64u << 20)

int symobj_load(int fd, const struct symobj_opts *op, struct sym_obj **ret)
{
	struct sym_obj *o = calloc(1, sizeof(*o));
	Elf *e = NULL, *de = NULL;
	int dfd = -1, r = -ENOMEM;
	struct stat st;
	long n;

	if (!o)
		return -ENOMEM;
	struct symbuild b = {.o = o, .max = op->max_symbols ? op->max_symbols : (4u << 20)};
	pthread_mutex_init(&o->dw_lock, NULL);
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->size = st.st_size;
	o->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	r = -ENOEXEC;
	e = elf_open(fd);
	GElf_Ehdr eh;
	if (!e || !gelf_getehdr(e, &eh))
		goto out;
	o->build_id_len = build_id(e, o->build_id);
	r = read_loads(e, o);
	if (r < 0)
		goto out;

	r = -ENOMEM;
	n = symobj_read_symbols(e, SHT_SYMTAB, &b);
	if (n < 0)
		goto out;
	bool full = n > 0, want_dwarf = op->lines && !has_section_named(e, ".debug_info");
	if (!full || want_dwarf)
		dfd = open_debug_file(op, o, e);
	if (dfd >= 0)
		de = elf_open(dfd);
	if (de && !full) {
		n = symobj_read_symbols(de, SHT_SYMTAB, &b);
		if (n < 0)
			goto out;
		full = n > 0;
		o->from_debug_file = full;
	}
	if (!full) {
		/* .dynsym, plus what MiniDebugInfo adds: the local functions
		 * a stripped binary's .dynsym lacks (Fedora, RHEL) */
		if (symobj_read_symbols(e, SHT_DYNSYM, &b) < 0)
			goto out;
		n = symobj_read_minidebug(e, &b, MINIDEBUG_MAX_BYTES);
		if (n == -ENOMEM)
			goto out;
		o->from_minidebug = n > 0;
	}
	/* Only a file that has DWARF we can use (not compressed, see above)
	 * is read whole: lines cost nothing for the stripped system libraries
	 * most frames are in, nor for Debian's -dbg files (compressed). */
	if (op->lines && !want_dwarf && !compressed_debug(e))
		open_dwarf(o, fd, op->max_dwarf_bytes);
	else if (op->lines && de && has_section_named(de, ".debug_info") && !compressed_debug(de))
		open_dwarf(o, dfd, op->max_dwarf_bytes);

	symobj_sort(o);
	/* PLT stubs have no symbol anywhere: named from the relocations */
	n = symobj_add_plt(e, &b);
	if (n < 0)
		goto out;
	if (n > 0)
		symobj_sort(o);
	o->bytes += sizeof(*o) + o->nsyms * sizeof(*o->syms) + o->strs_len +
		    o->nloads * sizeof(*o->loads);
	*ret = o;
	o = NULL;
	r = 0;
out:
	if (de)
		elf_end(de);
	if (dfd >= 0)
		close(dfd);
	if (e)
		elf_end(e);
	symobj_free(o);
	return r;
}

void symobj_free(struct sym_obj *o)
{
	if (!o)
		return;
	if (o->dw)
		dwarf_end(o->dw);
	if (o->dw_elf)
		elf_end(o->dw_elf);
	free(o->dw_image);
	pthread_mutex_destroy(&o->dw_lock);
	free(o->loads);
	free(o->syms);
	free(o->strs);
	free(o);
}

bool symobj_file_to_vaddr(const struct sym_obj *o, uint64_t off, uint64_t *vaddr)
{
	/* Executable segments first: that is where frames point. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < o->nloads; i++) {
			const struct objload *l = &o->loads[i];
			if (l->exec == (pass == 0) && off >= l->off && off - l->off < l->filesz) {
				*vaddr = off - l->off + l->vaddr;
				return true;
			}
		}
	return false;
}

const char *symobj_lookup(const struct sym_obj *o, uint64_t vaddr)
{
	size_t lo = 0, hi = o->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The nearest preceding symbol, unless its size says it ends before
	 * vaddr; then a few more back, for a symbol nesting this one. */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct objsym *s = &o->syms[i - 1];
		if (!s->size) {
			if (k == 0)
				return o->strs + s->name;
			continue;
		}
		if (vaddr - s->addr < s->size)
			return o->strs + s->name;
	}
	return NULL;
}

int symobj_srcline(struct sym_obj *o, uint64_t vaddr, char *buf, size_t len)
{
	int r = -ENOENT;
	if (!o->dw)
		return r;
	pthread_mutex_lock(&o->dw_lock);
	Dwarf_Die cu;
	Dwarf_Line *l = dwarf_addrdie(o->dw, vaddr, &cu) ? dwarf_getsrc_die(&cu, vaddr) : NULL;
	int line = 0;
	const char *file = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	if (file && dwarf_lineno(l, &line) == 0 && line > 0) {
		snprintf(buf, len, "%s:%d", file, line);
		r = 0;
	}
	pthread_mutex_unlock(&o->dw_lock);
	return r;
}
