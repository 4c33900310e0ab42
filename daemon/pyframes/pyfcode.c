// SPDX-License-Identifier: MIT
/*
 * Code objects -> qualified name, file, line.
 *
 * A code object's names and line table are read once and cached by the
 * object's address (direct-mapped, PYF_CODE_SLOTS entries). Addresses are
 * reused once a code object is freed (a module's code once it ran, a
 * reloaded module, an exec'd string, a lambda), so every lookup re-reads the
 * object's header and compares its type and the fields it was named from
 * (filename, name, qualname and line table pointers, co_firstlineno): any
 * difference reads it afresh, and an object that is no longer a code object
 * is refused. Lookups for BPF's samples compare the ident BPF read instead
 * (pyf_resolve_seen()), which holds those pointers.
 */
#include "pyf_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void pyf_codes_free(struct pyf_proc *p)
{
	if (!p->codes)
		return;
	for (size_t i = 0; i < PYF_CODE_SLOTS; i++) {
		if (!p->codes[i])
			continue;
		free(p->codes[i]->qual);
		free(p->codes[i]->file);
		free(p->codes[i]->table);
		free(p->codes[i]);
	}
	free(p->codes);
	p->codes = NULL;
}

static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 63));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | ((c >> 6) & 63));
		o[2] = (char)(0x80 | (c & 63));
		return 3;
	}
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | ((c >> 12) & 63));
	o[2] = (char)(0x80 | ((c >> 6) & 63));
	o[3] = (char)(0x80 | (c & 63));
	return 4;
}

/*
 * An object's header and, in the same read, what usually follows it: a
 * name's or a file name's characters, a short line table. Each read of
 * the process is a system call that finds and pins its pages, whatever
 * its length, and a new process's code objects were read in about a dozen
 * of them each. Reading past the object is harmless where it is followed
 * by mapped memory (the allocator's pools, the image's data); where it is
 * not, the header alone is read. Returns the bytes read: SPEC_BYTES, min,
 * or 0 on failure.
 */
#define SPEC_BYTES 192

static size_t read_spec(struct pyf_proc *p, uint64_t addr, uint8_t *buf, size_t min)
{
	if (!pyf_read(p, addr, buf, SPEC_BYTES))
		return SPEC_BYTES;
	return pyf_read(p, addr, buf, min) ? 0 : min;
}

/*
 * A str object as UTF-8 (malloc'd), at most PYF_MAX_STR code points.
 * PyASCIIObject.state (+32): kind in bits 2-4, compact bit 5, ascii bit 6
 * (cpython/unicodeobject.h, the same bits in 3.9-3.13); length (+16) counts
 * code points. Only compact strings (all names and file names are) are
 * read; NUL, lone surrogates and code points past U+10FFFF become '?'.
 */
static char *read_str(struct pyf_proc *p, uint64_t addr, const uint8_t *head)
{
	const struct pyf_layout *l = &p->lay;
	uint8_t raw[SPEC_BYTES + PYF_MAX_STR * 4];
	uint64_t type;
	int64_t len;
	uint32_t state, kind;
	size_t width, data, have = SPEC_BYTES, need;

	if (head)
		memcpy(raw, head, SPEC_BYTES);
	else if (!(have = read_spec(p, addr, raw, 40)))
		return NULL;
	memcpy(&type, raw + 8, 8);
	memcpy(&len, raw + 16, 8);
	memcpy(&state, raw + 32, 4);
	kind = (state >> 2) & 7;
	if ((p->unicode_type && type != p->unicode_type) || !(state & 0x20) || len < 0 ||
	    (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	if (len > PYF_MAX_STR)
		len = PYF_MAX_STR;
	width = state & 0x40 ? 1 : kind;
	data = state & 0x40 ? l->str_ascii_size : l->str_compact_size;
	need = data + (size_t)len * width;
	if (need > have && pyf_read(p, addr + have, raw + have, need - have))
		return NULL;
	return pyf_str_utf8(raw + data, (size_t)len, width);
}

char *pyf_str_utf8(const uint8_t *raw, size_t len, size_t width)
{
	char *s, *o;

	s = o = malloc(len * 4 + 1);
	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		uint32_t c;

		if (width == 1) {
			c = raw[i];
		} else if (width == 2) {
			uint16_t w;

			memcpy(&w, raw + i * 2, 2);
			c = w;
		} else {
			memcpy(&c, raw + i * 4, 4);
		}
		if (!c || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
			c = '?';
		o += put_utf8(o, c);
	}
	*o = '\0';
	return s;
}

/* A bytes object's contents (malloc'd), at most PYF_MAX_LINETABLE. */
static uint8_t *read_bytes(struct pyf_proc *p, uint64_t addr, const uint8_t *pre, uint32_t *len)
{
	uint8_t head[SPEC_BYTES], *b;
	size_t have = SPEC_BYTES, got;
	uint64_t type;
	int64_t n;

	/* PyBytesObject: ob_size at 16, ob_sval at 32 in every version */
	if (pre)
		memcpy(head, pre, SPEC_BYTES);
	else if (!(have = read_spec(p, addr, head, 32)))
		return NULL;
	memcpy(&type, head + 8, 8);
	memcpy(&n, head + 16, 8);
	if ((p->bytes_type && type != p->bytes_type) || n < 0 || n > PYF_MAX_LINETABLE)
		return NULL;
	b = malloc(n ? (size_t)n : 1);
	if (!b)
		return NULL;
	got = have - 32 < (size_t)n ? have - 32 : (size_t)n;
	memcpy(b, head + 32, got);
	if ((size_t)n > got && pyf_read(p, addr + 32 + got, b + got, (size_t)n - got)) {
		free(b);
		return NULL;
	}
	*len = (uint32_t)n;
	return b;
}

/* The identifying fields of the code object at addr, as it is now, and
 * where its prologue ends when the version says (_co_firsttraceable). */
static int read_ident(struct pyf_proc *p, uint64_t addr, struct pyf_code *c)
{
	const struct pyf_layout *l = &p->lay;
	uint8_t hdr[256];
	__u64 words[PYSTACK_CODE_IDENT_BYTES / 8];
	uint32_t hlen = l->co_linetable + 8;
	int32_t first = 0;

	if (l->co_qualname != PYF_NONE && l->co_qualname + 8 > hlen)
		hlen = l->co_qualname + 8;
	if (l->co_firstlineno + 4 > hlen)
		hlen = l->co_firstlineno + 4;
	if (l->co_filename + 8 > hlen)
		hlen = l->co_filename + 8;
	if (l->co_name + 8 > hlen)
		hlen = l->co_name + 8;
	if (l->co_firsttraceable != PYF_NONE && l->co_firsttraceable + 4 > hlen)
		hlen = l->co_firsttraceable + 4;
	if (hlen > sizeof(hdr) || l->co_linetable + 8 < PYSTACK_CODE_IDENT_BYTES)
		return -EINVAL;
	if (pyf_read(p, addr, hdr, hlen))
		return -EFAULT;
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	memcpy(words, hdr + pyf_ident_off(l), sizeof(words));
	c->ident = pystack_code_ident(words);
	memcpy(&c->type, hdr + 8, 8);
	memcpy(&c->filename, hdr + l->co_filename, 8);
	memcpy(&c->name, hdr + l->co_name, 8);
	if (l->co_qualname != PYF_NONE)
		memcpy(&c->qualname, hdr + l->co_qualname, 8);
	memcpy(&c->linetable, hdr + l->co_linetable, 8);
	memcpy(&c->firstlineno, hdr + l->co_firstlineno, 4);
	if (l->co_firsttraceable != PYF_NONE)
		memcpy(&first, hdr + l->co_firsttraceable, 4);
	/* in code units; a lying value leaves the prologue empty */
	c->prologue = first > 0 && first < (1 << 20) ? first * 2 : 0;
	return c->type == p->code_type ? 0 : -EINVAL;
}

static bool same_ident(const struct pyf_code *a, const struct pyf_code *b)
{
	return a->addr == b->addr && a->type == b->type && a->filename == b->filename &&
	       a->name == b->name && a->qualname == b->qualname && a->linetable == b->linetable &&
	       a->firstlineno == b->firstlineno && a->ident == b->ident;
}

static void code_clear(struct pyf_code *c)
{
	free(c->qual);
	free(c->file);
	free(c->table);
	memset(c, 0, sizeof(*c));
}

static int table_line(const struct pyf_proc *p, const struct pyf_code *c, int32_t instr)
{
	switch (p->lay.lines) {
	case PYF_LINES_LNOTAB:
		return pyf_line_lnotab(c->table, c->table_len, c->firstlineno, instr);
	case PYF_LINES_PEP626:
		return pyf_line_pep626(c->table, c->table_len, c->firstlineno, instr);
	case PYF_LINES_LOCATIONS:
		return pyf_line_locations(c->table, c->table_len, c->firstlineno, instr);
	}
	return -1;
}

/*
 * The prologue: instructions that run before the function's body starts
 * (copying cells and free variables in, making a generator), some of which
 * have no line in the table (3.10's GEN_START; 3.11+'s MAKE_CELL and
 * COPY_FREE_VARS; 3.12's POP_TOP after RETURN_GENERATOR). CPython itself
 * never names a line there: its walkers skip such "incomplete" frames
 * (instruction before _co_firsttraceable, 3.11-3.13), and a frame that has
 * not started gets the function's first line (PyCode_Addr2Line of an
 * offset below 0). A sample caught there is the function's own time, so
 * it keeps the frame and gives it that first line. Where the version's
 * _co_firsttraceable is not known (3.9/3.10, 3.14+), the leading
 * instructions without a line are the prologue.
 */
static void find_prologue(const struct pyf_proc *p, struct pyf_code *c)
{
	int32_t off = 0;

	while (off < 64 && table_line(p, c, off) < 0)
		off += 2;
	if (off < 64 && off > c->prologue)
		c->prologue = off;
}

static int code_load(struct pyf_proc *p, struct pyf_code *c)
{
	/* the interpreter's own (deep-frozen) code, from its file */
	if (pyf_static_load(p, c) == 0) {
		find_prologue(p, c);
		return 0;
	}
	uint64_t at[3] = {c->qualname ? c->qualname : c->name, c->filename, c->linetable};
	uint8_t head[3][SPEC_BYTES];
	unsigned n = pyf_read_many(p, at, head[0], SPEC_BYTES, 3);

	/* the three heads in one read where it went through, each object's
	 * own reads for what it did not */
	c->qual = read_str(p, at[0], n > 0 ? head[0] : NULL);
	c->file = read_str(p, at[1], n > 1 ? head[1] : NULL);
	c->table = read_bytes(p, at[2], n > 2 ? head[2] : NULL, &c->table_len);
	if (!c->qual || !c->file || !c->table) {
		code_clear(c);
		return -EFAULT;
	}
	find_prologue(p, c);
	return 0;
}

/* The line of the instruction at byte offset instr (-1: not started). */
static int line_of(const struct pyf_proc *p, const struct pyf_code *c, int32_t instr)
{
	if (instr < c->prologue)
		return c->firstlineno;
	return table_line(p, c, instr);
}

/* The cache slot of the code object at code (direct-mapped) */
static struct pyf_code **code_slot(const struct pyf_proc *p, uint64_t code)
{
	return &p->codes[(code >> 4) * 0x9e3779b97f4a7c15ull >> 53 & (PYF_CODE_SLOTS - 1)];
}

int pyf_resolve(struct pyf_proc *p, uint64_t code, int32_t instr, const char **qualname,
		const char **file, int *line)
{
	struct pyf_code now, *slot, **sp;
	int r;

	if (p->reason[0])
		return -ENOTSUP;
	if (!p->codes && !(p->codes = calloc(PYF_CODE_SLOTS, sizeof(*p->codes))))
		return -ENOMEM;
	r = read_ident(p, code, &now);
	if (r < 0)
		return r;
	sp = code_slot(p, code);
	if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
		return -ENOMEM;
	slot = *sp;
	if (!same_ident(slot, &now)) {
		code_clear(slot);
		*slot = now;
		r = code_load(p, slot);
		if (r < 0)
			return r;
	}
	*qualname = slot->qual;
	*file = slot->file;
	*line = line_of(p, slot, instr);
	return 0;
}

/*
 * The ident, not the first line, tells whether the cached object is the one
 * sampled: every module's code object has first line 1, and the next module
 * compiled often takes a freed one's address (same size, allocators reuse
 * the last block freed), so a sample of the first module cached under that
 * address named the second module's <module> frame with the first one's file
 * and its line table.
 */
int pyf_resolve_seen(struct pyf_proc *p, uint64_t code, uint32_t ident, int32_t instr,
		     const char **qualname, const char **file, int *line)
{
	const struct pyf_code *slot;
	int r;

	if (p->codes && !p->reason[0] && ident) {
		slot = *code_slot(p, code);
		if (slot && slot->addr == code && slot->qual && slot->ident == ident) {
			*qualname = slot->qual;
			*file = slot->file;
			*line = line_of(p, slot, instr);
			return 0;
		}
	}
	r = pyf_resolve(p, code, instr, qualname, file, line);
	if (r == 0 && ident && (*code_slot(p, code))->ident != ident)
		return -ESTALE;
	return r;
}
