/* SPDX-License-Identifier: MIT */
/*
 * Building one object's symbol list (symobj.c), shared with the pieces
 * that add symbols from other places than a symbol table: PLT stubs
 * (symplt.c) and MiniDebugInfo (symmini.c). Not for use outside
 * daemon/sym.
 */
#ifndef GPUPROF_SYMOBJ_INT_H
#define GPUPROF_SYMOBJ_INT_H

#include "sym_internal.h"

#include <gelf.h>
#include <libelf.h>

/* Ranks of symbols at one address (lower wins, symobj.c rank_of()):
 * 0..5 from a symbol table; synthesized names lose to all of them. */
#define SYMOBJ_RANK_SYNTH 6

struct symbuild {
	struct sym_obj *o;
	size_t max;	  /* symbols at most (symobj_opts.max_symbols) */
	size_t cap, scap; /* allocated o->syms entries, o->strs bytes */
};

/* Append one symbol (name cut at 1 KiB). -E2BIG when the object's caps
 * are reached (not an error: the rest is dropped), -ENOMEM. */
int symobj_add(struct symbuild *b, const char *name, size_t len, uint64_t addr, uint64_t size,
	       uint32_t rank);
/* Append the functions of e's symbol table of this type (SHT_SYMTAB,
 * SHT_DYNSYM). Returns how many, or -ENOMEM. */
long symobj_read_symbols(Elf *e, Elf64_Word type, struct symbuild *b);
/* Sort o->syms by address, best rank first, one symbol per address. */
void symobj_sort(struct sym_obj *o);
/* The section called name, or NULL. */
Elf_Scn *symobj_section(Elf *e, const char *name, GElf_Shdr *sh);

/* symplt.c: name the PLT stubs of e "foo@plt" (x86-64). o->syms must be
 * sorted (symobj_sort): an IRELATIVE slot is named after the symbol at its
 * resolver's address. Returns how many were added, or -ENOMEM. */
long symobj_add_plt(Elf *e, struct symbuild *b);

/* symmini.c: the functions of the MiniDebugInfo (.gnu_debugdata) of e,
 * an xz-compressed ELF holding a .symtab, decompressed up to max_bytes.
 * Returns how many were added, 0 without such a section, -ENOMEM, or
 * another -errno for a section that cannot be read (nothing added). */
long symobj_read_minidebug(Elf *e, struct symbuild *b, size_t max_bytes);

#endif
