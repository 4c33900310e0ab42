// SPDX-License-Identifier: MIT
/*
 * MiniDebugInfo (gdb's name for it): a stripped binary may carry a
 * `.gnu_debugdata` section holding an xz-compressed ELF whose .symtab lists
 * the functions .dynsym lacks (Fedora and RHEL ship their system binaries
 * so). The section is untrusted like the rest of the file: the decompressed
 * size is capped before anything is allocated for it, the decoder's memory
 * too, and the inner ELF is read with libelf's checked accessors over the
 * buffer (elf_memory), so a hostile section fails cleanly.
 */
#include "symobj_int.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

/* xz's own decoder memory (the dictionary): the minidebuginfo recipe uses
 * the default preset (8 MiB dictionary); allow far more, never unbounded. */
#define XZ_MEMLIMIT (128u << 20)

/* Decompress the whole .xz stream in [in, in + n) into a malloc()ed buffer
 * of at most max bytes. -EFBIG when it would be larger, -EBADMSG when it is
 * not a valid stream, -ENOMEM. */
static int unxz(const uint8_t *in, size_t n, size_t max, uint8_t **ret, size_t *len)
{
	lzma_stream zs = LZMA_STREAM_INIT;
	size_t cap = n * 4 < max ? (n * 4 > 4096 ? n * 4 : 4096) : max;
	uint8_t *out = malloc(cap ? cap : 1);
	int r = -EBADMSG;

	if (!out)
		return -ENOMEM;
	if (lzma_stream_decoder(&zs, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK) {
		free(out);
		return -ENOMEM;
	}
	zs.next_in = in;
	zs.avail_in = n;
	zs.next_out = out;
	zs.avail_out = cap;
	for (;;) {
		lzma_ret lr = lzma_code(&zs, LZMA_FINISH);
		if (lr == LZMA_STREAM_END) {
			r = 0;
			break;
		}
		if (lr == LZMA_MEM_ERROR) {
			r = -ENOMEM;
			break;
		}
		if (lr != LZMA_OK && lr != LZMA_BUF_ERROR)
			break; /* corrupt data, bad options, memlimit */
		if (zs.avail_out) {
			if (lr == LZMA_BUF_ERROR) /* input ended mid-stream */
				break;
			continue;
		}
		if (cap >= max) {
			r = -EFBIG;
			break;
		}
		size_t nc = cap * 2 < max ? cap * 2 : max;
		uint8_t *no = realloc(out, nc);
		if (!no) {
			r = -ENOMEM;
			break;
		}
		out = no;
		zs.next_out = out + cap;
		zs.avail_out = nc - cap;
		cap = nc;
	}
	size_t got = (size_t)zs.total_out;
	lzma_end(&zs);
	if (r < 0) {
		free(out);
		return r;
	}
	*ret = out;
	*len = got;
	return 0;
}

long symobj_read_minidebug(Elf *e, struct symbuild *b, size_t max_bytes)
{
	GElf_Shdr sh;
	GElf_Ehdr eh, mh;
	Elf_Scn *scn = symobj_section(e, ".gnu_debugdata", &sh);
	if (!scn || sh.sh_type != SHT_PROGBITS || !gelf_getehdr(e, &eh))
		return 0;
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size)
		return 0;
	uint8_t *img;
	size_t len;
	int r = unxz(d->d_buf, d->d_size, max_bytes, &img, &len);
	if (r < 0)
		return r;
	long n = -ENOEXEC;
	Elf *me = elf_memory((char *)img, len);
	if (me && elf_kind(me) == ELF_K_ELF && gelf_getehdr(me, &mh)) {
		size_t first = b->o->nsyms;
		n = symobj_read_symbols(me, SHT_SYMTAB, b);
		/* The inner file is cut from the same link, so its addresses
		 * are the binary's; should a tool have moved it, the entry
		 * points say by how much (libdwfl resyncs the same way). */
		uint64_t bias = eh.e_entry - mh.e_entry;
		if (n > 0 && eh.e_entry && mh.e_entry && bias)
			for (size_t i = first; i < b->o->nsyms; i++)
				b->o->syms[i].addr += bias;
	}
	if (me)
		elf_end(me);
	free(img);
	return n;
}
