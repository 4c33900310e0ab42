// SPDX-License-Identifier: MIT
/* NEO debug-zebin parser and loader (zebin.h). */
#include "zebin.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xe.h"

static int fail(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EBADMSG;
}

/* The bytes of a section with file data, or NULL when it has none or
 * they lie outside the file. */
static const uint8_t *sec_bytes(const struct xe_zebin *z, const GElf_Shdr *sh)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_offset > z->len ||
	    sh->sh_size > z->len - sh->sh_offset)
		return NULL;
	return z->buf + sh->sh_offset;
}

static int add_kernel(struct xe_zebin *z, const char *name, uint64_t va, const uint8_t *bytes,
		      uint64_t size, char *why, size_t whylen)
{
	struct xe_zebin_kernel *k;

	if (!size)
		return 0;
	if (z->nk >= XE_ZEBIN_MAX_KERNELS)
		return fail(why, whylen, "more than %u kernels", XE_ZEBIN_MAX_KERNELS);
	if (!(z->nk & (z->nk - 1))) { /* 0, 1, 2, 4...: full, double */
		size_t cap = z->nk ? z->nk * 2 : 1;
		void *p = realloc(z->k, cap * sizeof(*z->k));

		if (!p)
			return -ENOMEM;
		z->k = p;
	}
	k = &z->k[z->nk];
	k->name = strndup(name && *name ? name : "[unnamed]", 1024);
	if (!k->name)
		return -ENOMEM;
	k->gpu_va = va & XE_VA_MASK;
	k->size = size;
	k->bytes = bytes;
	z->nk++;
	return 0;
}

/* One STT_FUNC: st_value is the GPU VA; it lies in its section's
 * [sh_addr, sh_addr + size), or (relocatable objects) is an offset. */
static int func_kernel(struct xe_zebin *z, Elf *e, const GElf_Sym *s, const char *name, char *why,
		       size_t whylen)
{
	GElf_Shdr sh;
	Elf_Scn *scn;
	const uint8_t *b;
	uint64_t off;

	if (s->st_shndx == SHN_UNDEF || s->st_shndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(e, s->st_shndx);
	if (!scn || !gelf_getshdr(scn, &sh))
		return fail(why, whylen, "symbol %s: bad section %u", name, s->st_shndx);
	b = sec_bytes(z, &sh);
	if (!b)
		return fail(why, whylen, "symbol %s: section %u outside the file", name,
			    s->st_shndx);
	if (sh.sh_addr && s->st_value >= sh.sh_addr && s->st_value - sh.sh_addr < sh.sh_size)
		off = s->st_value - sh.sh_addr;
	else if (s->st_value < sh.sh_size)
		off = s->st_value;
	else
		return fail(why, whylen, "symbol %s: value 0x%llx outside its section", name,
			    (unsigned long long)s->st_value);
	return add_kernel(z, name, sh.sh_addr + off, b + off, sh.sh_size - off, why, whylen);
}

static int walk(struct xe_zebin *z, Elf *e, char *why, size_t whylen)
{
	size_t nsec, shstr, nsym = 0;
	Elf_Scn *scn = NULL;
	bool symtab = false;
	int r;

	if (elf_kind(e) != ELF_K_ELF)
		return fail(why, whylen, "not an ELF file");
	if (elf_getshdrnum(e, &nsec) || elf_getshdrstrndx(e, &shstr))
		return fail(why, whylen, "bad section headers: %s", elf_errmsg(-1));
	if (nsec > XE_ZEBIN_MAX_SECTIONS)
		return fail(why, whylen, "%zu sections (at most %u)", nsec, XE_ZEBIN_MAX_SECTIONS);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh))
			return fail(why, whylen, "bad section header: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		symtab = true;
		if (!sec_bytes(z, &sh) || !sh.sh_entsize)
			return fail(why, whylen, "symbol table outside the file");
		d = elf_getdata(scn, NULL);
		if (!d)
			return fail(why, whylen, "symbol table: %s", elf_errmsg(-1));
		n = sh.sh_size / sh.sh_entsize;
		nsym += n;
		if (nsym > XE_ZEBIN_MAX_SYMBOLS)
			return fail(why, whylen, "more than %u symbols", XE_ZEBIN_MAX_SYMBOLS);
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s))
				return fail(why, whylen, "symbol %zu: %s", i, elf_errmsg(-1));
			if (GELF_ST_TYPE(s.st_info) != STT_FUNC)
				continue;
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				return fail(why, whylen, "symbol %zu: bad name", i);
			r = func_kernel(z, e, &s, name, why, whylen);
			if (r < 0)
				return r;
		}
	}
	if (symtab)
		return 0;
	/* no symbol table: every PROGBITS section with an address */
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const uint8_t *b;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return fail(why, whylen, "bad section header: %s", elf_errmsg(-1));
		if (sh.sh_type != SHT_PROGBITS || !sh.sh_addr || !sh.sh_size)
			continue;
		b = sec_bytes(z, &sh);
		if (!b)
			return fail(why, whylen, "section outside the file");
		name = elf_strptr(e, shstr, sh.sh_name);
		r = add_kernel(z, name, sh.sh_addr, b, sh.sh_size, why, whylen);
		if (r < 0)
			return r;
	}
	return 0;
}

int xe_zebin_parse(const void *buf, size_t len, struct xe_zebin *z, char *why, size_t whylen)
{
	Elf *e;
	int r;

	memset(z, 0, sizeof(*z));
	if (len > XE_ZEBIN_MAX_FILE) {
		if (why && whylen)
			snprintf(why, whylen, "file of %zu bytes (at most %u)", len,
				 XE_ZEBIN_MAX_FILE);
		return -EFBIG;
	}
	if (len < sizeof(Elf64_Ehdr))
		return fail(why, whylen, "file of %zu bytes is too short for an ELF header", len);
	z->buf = malloc(len);
	if (!z->buf)
		return -ENOMEM;
	memcpy(z->buf, buf, len);
	z->len = len;
	elf_version(EV_CURRENT);
	e = elf_memory((char *)z->buf, len);
	if (!e) {
		r = fail(why, whylen, "not an ELF file: %s", elf_errmsg(-1));
		goto out;
	}
	r = walk(z, e, why, whylen);
	elf_end(e);
	if (r == 0 && !z->nk)
		r = fail(why, whylen, "no kernels (no STT_FUNC symbol, no addressed section)");
out:
	if (r < 0)
		xe_zebin_finish(z);
	return r;
}

int xe_zebin_read_fd(int fd, struct xe_zebin *z, char *why, size_t whylen)
{
	size_t len = 0, cap = 0;
	uint8_t *buf = NULL;
	int r;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			void *p;

			if (cap > XE_ZEBIN_MAX_FILE) {
				free(buf);
				if (why && whylen)
					snprintf(why, whylen, "file over %u bytes",
						 XE_ZEBIN_MAX_FILE);
				return -EFBIG;
			}
			cap = cap ? cap * 2 : 64 * 1024;
			p = realloc(buf, cap);
			if (!p) {
				free(buf);
				return -ENOMEM;
			}
			buf = p;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			free(buf);
			if (why && whylen)
				snprintf(why, whylen, "read: %s", strerror(-r));
			return r;
		}
		if (!n)
			break;
		len += (size_t)n;
	}
	r = xe_zebin_parse(buf, len, z, why, whylen);
	free(buf);
	return r;
}

void xe_zebin_finish(struct xe_zebin *z)
{
	for (size_t i = 0; i < z->nk; i++)
		free(z->k[i].name);
	free(z->k);
	free(z->buf);
	memset(z, 0, sizeof(*z));
}

int xe_zebin_read_new(int fd, void **state, char *why, size_t whylen)
{
	struct xe_zebin *z = malloc(sizeof(*z));
	int r;

	if (!z)
		return -ENOMEM;
	r = xe_zebin_read_fd(fd, z, why, whylen);
	if (r < 0) {
		free(z);
		return r;
	}
	*state = z;
	return 0;
}

void xe_zebin_free(void *state)
{
	if (!state)
		return;
	xe_zebin_finish(state);
	free(state);
}

int xe_zebin_load(struct xe *x, struct xe_kbin *kb, const struct xe_zebin *z, const char *file,
		  uint32_t pid, uint32_t uid)
{
	int added = 0;

	for (size_t i = 0; i < z->nk; i++) {
		const struct xe_zebin_kernel *k = &z->k[i];
		struct xe_kernel_info ki = {
			.gpu_addr = k->gpu_va,
			.size = k->size,
			.pid = pid,
			.uid = uid,
			.name = k->name,
			.file = file,
		};
		int r = x ? xe_ktab_add(x, &ki) : 0;

		if (r < 0)
			return r;
		if (kb) {
			r = xe_kbin_put(kb, pid, k->gpu_va, k->bytes, k->size);
			if (r < 0 && r != -EFBIG)
				return r;
		}
		added++;
	}
	return added;
}
