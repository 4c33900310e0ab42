// SPDX-License-Identifier: MIT
/* Kernel symbols from /proc/kallsyms: text symbols only, sorted by address. */
#include "sym_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KSYMS_MAX_BYTES (256u << 20)
#define KSYMS_MAX_SYMS (8u << 20)
/* kallsyms has no sizes: past the last text symbol, accept this much. */
#define KSYMS_TAIL 0x100000

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* stable order among aliases: prefer the earlier line */
	return x->name < y->name ? -1 : x->name > y->name;
}

static bool is_text(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* Parse the buffer in place: names and module names stay in it. */
static int parse(struct ksyms *k, char *buf, size_t len)
{
	size_t cap = 0;
	bool any_nonzero = false;
	char *p = buf, *end = buf + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line = p;
		if (!nl)
			nl = end;
		*nl = '\0';
		p = nl + 1;

		char *e;
		errno = 0;
		unsigned long long addr = strtoull(line, &e, 16);
		if (e == line || *e != ' ' || errno)
			continue;
		if (addr)
			any_nonzero = true;
		char type = e[1];
		if (!type || e[2] != ' ' || !is_text(type))
			continue;
		char *name = e + 3, *mod = NULL;
		char *tab = strchr(name, '\t');
		if (tab) {
			*tab = '\0';
			mod = tab + 1;
			if (*mod == '[') {
				mod++;
				char *rb = strchr(mod, ']');
				if (rb)
					*rb = '\0';
			}
		}
		if (!*name || !addr)
			continue;
		if (k->n == cap) {
			if (cap >= KSYMS_MAX_SYMS)
				break;
			size_t ncap = cap ? cap * 2 : 65536;
			struct ksym *ns = realloc(k->syms, ncap * sizeof(*ns));
			if (!ns)
				return -ENOMEM;
			k->syms = ns;
			cap = ncap;
		}
		k->syms[k->n++] = (struct ksym){
			.addr = addr,
			.name = (uint32_t)(name - buf),
			.mod = mod ? (uint32_t)(mod - buf) : (uint32_t)len,
		};
	}
	k->restricted = !any_nonzero;
	return 0;
}

int ksyms_load(const char *path, struct ksyms **ret)
{
	struct ksyms *k = calloc(1, sizeof(*k));
	char *buf = NULL;
	size_t len = 0;
	int r = -ENOMEM, fd;

	if (!k)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	r = sym_read_all(fd, KSYMS_MAX_BYTES, &buf, &len);
	close(fd);
	if (r < 0)
		goto fail;
	/* buf[len] is the NUL sym_read_all() adds: the "" module name */
	k->blob = buf;
	k->blob_len = len + 1;
	r = parse(k, buf, len);
	if (r < 0)
		goto fail;
	if (k->restricted)
		k->n = 0;
	if (k->n)
		qsort(k->syms, k->n, sizeof(*k->syms), ksym_cmp);
	*ret = k;
	return 0;
fail:
	ksyms_free(k);
	return r;
}

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->blob);
	free(k);
}

const char *ksyms_lookup(const struct ksyms *k, uint64_t addr, const char **mod)
{
	size_t lo = 0, hi = k ? k->n : 0;
	if (!hi || addr < k->syms[0].addr)
		return NULL;
	while (lo < hi) { /* first symbol above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t i = lo - 1;
	if (lo == k->n && addr - k->syms[i].addr > KSYMS_TAIL)
		return NULL;
	/* among aliases at one address, the first line (sorted first) */
	while (i > 0 && k->syms[i - 1].addr == k->syms[i].addr)
		i--;
	if (mod)
		*mod = k->blob + k->syms[i].mod;
	return k->blob + k->syms[i].name;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

uint64_t ksyms_modules_hash(const char *path)
{
	uint64_t h = 1469598103934665603ull;
	char *buf = NULL;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int r = sym_read_all(fd, 16u << 20, &buf, &len);
	close(fd);
	if (r < 0)
		return 0;
	/* Hash each module's name and load address ("name size refs deps
	 * state addr"), not its refcount, which changes without moving
	 * symbols. */
	for (char *p = buf, *end = buf + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		char *sp = memchr(p, ' ', (size_t)(nl - p));
		char *last = nl;
		while (last > p && last[-1] != ' ')
			last--;
		h = fnv(h, p, sp ? (size_t)(sp - p) : (size_t)(nl - p));
		h = fnv(h, last, (size_t)(nl - last));
		h = fnv(h, "\n", 1);
		p = nl + 1;
	}
	free(buf);
	return h | 1;
}

size_t ksyms_notes_build_id(const uint8_t *p, size_t n, uint8_t *id)
{
	/* Elf_Nhdr list: namesz, descsz, type, then name and desc, each padded
	 * to 4 bytes (the kernel's notes use 4-byte alignment) */
	for (size_t off = 0; n - off >= 12;) {
		uint32_t h[3];
		memcpy(h, p + off, 12);
		size_t nsz = ((size_t)h[0] + 3) & ~(size_t)3, dsz = ((size_t)h[1] + 3) & ~(size_t)3;
		off += 12;
		if (h[0] > n || h[1] > n || nsz > n - off || dsz > n - off - nsz)
			return 0;
		if (h[2] == 3 /* NT_GNU_BUILD_ID */ && h[0] == 4 && !memcmp(p + off, "GNU", 4) &&
		    h[1] && h[1] <= SYM_BUILD_ID_MAX) {
			memcpy(id, p + off + nsz, h[1]);
			return h[1];
		}
		off += nsz + dsz;
	}
	return 0;
}

int ksyms_build_id(const char *notes_path, uint8_t *id, size_t *len)
{
	uint8_t buf[4096];
	size_t got = 0;
	int fd = open(notes_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	*len = 0;
	if (fd < 0)
		return -errno;
	for (ssize_t r; got < sizeof(buf) && (r = read(fd, buf + got, sizeof(buf) - got)) > 0;)
		got += (size_t)r;
	close(fd);
	*len = ksyms_notes_build_id(buf, got, id);
	return 0;
}
