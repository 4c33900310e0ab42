// SPDX-License-Identifier: MIT
/*
 * Code objects of the interpreter's own image, named once for every
 * process of that interpreter (docs/pyframes.md, "Caching and bounds").
 *
 * CPython 3.11 and 3.12 deep-freeze the code of their frozen modules
 * (importlib._bootstrap, _bootstrap_external, os, site, codecs, io...):
 * the code objects, their name, qualified name and file strings and their
 * line tables are initialized data of libpython or of the executable,
 * at the same offset from the load address in every process of that
 * file. Every short-lived `python3 -c` starts in them, and each new
 * process used to read them all from its memory, about a dozen reads per
 * code object, before its first samples could be spliced.
 *
 * A code object whose qualified name (or name), file name and line table
 * all lie in the file-backed part of the image is named here from the
 * FILE, not from the process: the entry is a function of the file's
 * identity and those three offsets alone, so
 *  - no process's memory ever reaches another process's frames: a process
 *    that rewrote its copy of those strings gets the file's text, which is
 *    what every process of that file starts with (the same binary's static
 *    data, readable by anyone who can run it);
 *  - a code object freed and its address reused, or a deep-frozen one
 *    whose fields a process changed, has other field values: the caller
 *    (pyf_resolve) re-reads the code object's header from the process on
 *    every lookup it does not hold in its own cache, and a different
 *    pointer is a different key here;
 *  - a file rewritten in place (size or times changed) is another key.
 * The per-process checks stay the caller's: the code object's type is read
 * from the process before this is asked.
 *
 * Bounded: STATIC_SLOTS entries (direct-mapped, replaced on collision) and
 * STATIC_BYTES of strings and tables. Shared by every struct pyf_proc, on
 * any thread: one lock, held only to look up and to insert (the file is
 * read outside it).
 */
#include "pyf_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATIC_SLOTS 4096
#define STATIC_BYTES (4u << 20)

struct skey {
	uint64_t dev, ino, size;
	int64_t mtime_s, mtime_ns, ctime_s, ctime_ns;
	uint64_t qual, file, table; /* ELF virtual addresses of the three objects */
};

struct sent {
	struct skey k;
	bool used;
	char *qual, *file;
	uint8_t *table;
	uint32_t table_len;
	size_t bytes;
};

static struct {
	pthread_mutex_t lock;
	struct sent e[STATIC_SLOTS];
	size_t bytes;
	unsigned entries;
	uint64_t hits, fills, full;
} sc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The file offset of [vaddr, vaddr + len) when the file holds all of it. */
static bool file_off(const struct pyf_image *img, uint64_t vaddr, uint64_t len, uint64_t *off)
{
	for (unsigned i = 0; i < img->nseg; i++) {
		uint64_t s = img->seg[i].vaddr, n = img->seg[i].filesz;

		if (vaddr >= s && vaddr - s <= n && len <= n - (vaddr - s)) {
			*off = img->seg[i].offset + (vaddr - s);
			return true;
		}
	}
	return false;
}

/* addr (in the process) as an ELF virtual address inside the file-backed
 * part of the image, header included. */
static bool in_image(const struct pyf_image *img, uint64_t addr, uint64_t *vaddr)
{
	uint64_t off;

	if (!addr || addr < img->bias)
		return false;
	*vaddr = addr - img->bias;
	return file_off(img, *vaddr, 64, &off);
}

static bool key_eq(const struct skey *a, const struct skey *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static struct sent *slot_of(const struct skey *k)
{
	uint64_t h = k->ino * 0x9e3779b97f4a7c15ull;

	h ^= k->qual * 0xc2b2ae3d27d4eb4full;
	h ^= k->file * 0x165667b19e3779f9ull;
	h ^= k->table * 0x27d4eb2f165667c5ull;
	return &sc.e[(h >> 40) & (STATIC_SLOTS - 1)];
}

static int fread_at(int fd, const struct pyf_image *img, uint64_t vaddr, void *buf, size_t len)
{
	uint64_t off;
	ssize_t r;

	if (!file_off(img, vaddr, len, &off))
		return -EFAULT;
	do
		r = pread(fd, buf, len, (off_t)off);
	while (r < 0 && errno == EINTR);
	return r == (ssize_t)len ? 0 : -EFAULT;
}

/* The word at the type slot of a static object in the file: 0 where the
 * dynamic loader writes it (RELA), else the type's own virtual address. */
static bool type_fits(uint64_t word, uint64_t type, const struct pyf_image *img)
{
	return !word || (type && word == type - img->bias);
}

/* A compact str object of the image, as pyfcode.c reads one from memory. */
static char *file_str(int fd, const struct pyf_proc *p, uint64_t vaddr)
{
	const struct pyf_layout *l = &p->lay;
	uint8_t hdr[40], raw[PYF_MAX_STR * 4];
	uint64_t type;
	int64_t len;
	uint32_t state, kind;
	size_t width, data;

	if (fread_at(fd, &p->img, vaddr, hdr, sizeof(hdr)))
		return NULL;
	memcpy(&type, hdr + 8, 8);
	memcpy(&len, hdr + 16, 8);
	memcpy(&state, hdr + 32, 4);
	kind = (state >> 2) & 7;
	if (!type_fits(type, p->unicode_type, &p->img) || !(state & 0x20) || len < 0 ||
	    (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if (len > PYF_MAX_STR)
		len = PYF_MAX_STR;
	width = state & 0x40 ? 1 : kind;
	data = state & 0x40 ? l->str_ascii_size : l->str_compact_size;
	if (len && fread_at(fd, &p->img, vaddr + data, raw, (size_t)len * width))
		return NULL;
	return pyf_str_utf8(raw, (size_t)len, width);
}

/* A bytes object of the image (the line table). */
static uint8_t *file_bytes(int fd, const struct pyf_proc *p, uint64_t vaddr, uint32_t *len)
{
	uint8_t hdr[32], *b;
	uint64_t type;
	int64_t n;

	if (fread_at(fd, &p->img, vaddr, hdr, sizeof(hdr)))
		return NULL;
	memcpy(&type, hdr + 8, 8);
	memcpy(&n, hdr + 16, 8);
	if (!type_fits(type, p->bytes_type, &p->img) || n < 0 || n > PYF_MAX_LINETABLE)
		return NULL;
	b = malloc(n ? (size_t)n : 1);
	if (b && n && fread_at(fd, &p->img, vaddr + 32, b, (size_t)n)) {
		free(b);
		return NULL;
	}
	*len = (uint32_t)n;
	return b;
}

/* The entry's names read from the file, which must still be the one the
 * key names. */
static int fill(const struct pyf_proc *p, const struct skey *k, struct sent *e)
{
	char mf[320];
	struct stat st;
	int fd, r = -ENOENT;

	snprintf(mf, sizeof(mf), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, p->proc_dir,
		 p->pid, p->img.map_start, p->img.map_end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || (uint64_t)st.st_dev != k->dev || (uint64_t)st.st_ino != k->ino ||
	    (uint64_t)st.st_size != k->size || st.st_mtim.tv_sec != k->mtime_s ||
	    st.st_mtim.tv_nsec != k->mtime_ns || st.st_ctim.tv_sec != k->ctime_s ||
	    st.st_ctim.tv_nsec != k->ctime_ns)
		goto out;
	memset(e, 0, sizeof(*e));
	e->qual = file_str(fd, p, k->qual);
	e->file = file_str(fd, p, k->file);
	e->table = file_bytes(fd, p, k->table, &e->table_len);
	if (!e->qual || !e->file || !e->table) {
		free(e->qual);
		free(e->file);
		free(e->table);
		goto out;
	}
	e->k = *k;
	e->used = true;
	e->bytes = strlen(e->qual) + strlen(e->file) + 2 + e->table_len;
	r = 0;
out:
	close(fd);
	return r;
}

/* Copies of e's names into c, for the caller's own cache. */
static int copy_out(const struct sent *e, struct pyf_code *c)
{
	c->qual = strdup(e->qual);
	c->file = strdup(e->file);
	c->table = malloc(e->table_len ? e->table_len : 1);
	if (!c->qual || !c->file || !c->table) {
		free(c->qual);
		free(c->file);
		free(c->table);
		c->qual = c->file = NULL;
		c->table = NULL;
		return -ENOMEM;
	}
	memcpy(c->table, e->table, e->table_len);
	c->table_len = e->table_len;
	return 0;
}

static void ent_clear(struct sent *e)
{
	free(e->qual);
	free(e->file);
	free(e->table);
	memset(e, 0, sizeof(*e));
}

int pyf_static_load(struct pyf_proc *p, struct pyf_code *c)
{
	const struct pyf_image *img = &p->img;
	struct sent *s, e;
	struct skey k;
	int r;

	if (!img->known || !in_image(img, c->qualname ? c->qualname : c->name, &k.qual) ||
	    !in_image(img, c->filename, &k.file) || !in_image(img, c->linetable, &k.table))
		return -ENOENT;
	k.dev = img->dev;
	k.ino = img->ino;
	k.size = img->size;
	k.mtime_s = img->mtime_s;
	k.mtime_ns = img->mtime_ns;
	k.ctime_s = img->ctime_s;
	k.ctime_ns = img->ctime_ns;
	pthread_mutex_lock(&sc.lock);
	s = slot_of(&k);
	if (s->used && key_eq(&s->k, &k)) {
		sc.hits++;
		r = copy_out(s, c);
		pthread_mutex_unlock(&sc.lock);
		return r < 0 ? -ENOENT : 0;
	}
	pthread_mutex_unlock(&sc.lock);
	if (fill(p, &k, &e) < 0)
		return -ENOENT;
	r = copy_out(&e, c);
	pthread_mutex_lock(&sc.lock);
	sc.fills++;
	s = slot_of(&k);
	if (s->used) {
		sc.bytes -= s->bytes;
		sc.entries--;
		ent_clear(s);
	}
	if (sc.bytes + e.bytes <= STATIC_BYTES) {
		*s = e;
		sc.bytes += e.bytes;
		sc.entries++;
	} else {
		sc.full++;
		ent_clear(&e);
	}
	pthread_mutex_unlock(&sc.lock);
	return r < 0 ? -ENOENT : 0;
}

void pyf_static_stats(struct pyf_static_stats *out)
{
	pthread_mutex_lock(&sc.lock);
	*out = (struct pyf_static_stats){.hits = sc.hits,
					 .fills = sc.fills,
					 .full = sc.full,
					 .entries = sc.entries,
					 .bytes = sc.bytes};
	pthread_mutex_unlock(&sc.lock);
}
