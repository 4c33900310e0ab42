// SPDX-License-Identifier: MIT
/*
 * Names for PLT stubs ("free@plt"), which no symbol table describes: without
 * them a frame in a stub takes the nearest preceding symbol (often _init)
 * and a profile blames the wrong function. Done as perf's
 * dso__synthesize_plt_symbols() and objdump do, for x86-64:
 *
 *   .plt (or .plt.sec in IBT builds)  slot i is .rela.plt's i-th entry by
 *       r_offset (the linker does not emit IFUNC relocations in PLT order,
 *       but the GOT slots are), after the one-slot PLT0 header of .plt;
 *       an R_X86_64_IRELATIVE slot is named after the function at its
 *       resolver's address (the addend), else "*ABS*+0x...@plt".
 *   .plt.got  8- or 16-byte stubs that jump through a .got slot
 *       (`jmp *disp(%rip)`, ff 25 disp32, after an endbr64 in IBT builds);
 *       named after the symbol of that slot's dynamic relocation.
 *
 * Everything is read through libelf's checked accessors and bounded by the
 * sections' own sizes; a malformed table just yields fewer names.
 */
#include "symobj_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RELOCS (1u << 20)

struct reloc {
	uint64_t off;	 /* GOT slot */
	uint64_t addend; /* IRELATIVE: the resolver */
	uint32_t sym;	 /* .dynsym index, 0 none */
	uint32_t type;
};

static int reloc_cmp(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The RELA (or REL) entries of one section, sorted by r_offset. */
static int read_relocs(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct reloc **ret, size_t *n)
{
	bool rela = sh->sh_type == SHT_RELA;
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t ent = gelf_fsize(e, rela ? ELF_T_RELA : ELF_T_REL, 1, EV_CURRENT);

	*ret = NULL;
	*n = 0;
	if ((!rela && sh->sh_type != SHT_REL) || !d || !d->d_buf || !ent ||
	    d->d_type != (rela ? ELF_T_RELA : ELF_T_REL))
		return 0;
	size_t cnt = d->d_size / ent;
	if (cnt > MAX_RELOCS)
		cnt = MAX_RELOCS;
	struct reloc *r = malloc((cnt ? cnt : 1) * sizeof(*r));
	if (!r)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < cnt; i++) {
		GElf_Rela ra;
		GElf_Rel rl;
		if (rela ? !gelf_getrela(d, (int)i, &ra) : !gelf_getrel(d, (int)i, &rl))
			break;
		if (!rela)
			ra = (GElf_Rela){rl.r_offset, rl.r_info, 0};
		r[k++] = (struct reloc){ra.r_offset, (uint64_t)ra.r_addend,
					(uint32_t)GELF_R_SYM(ra.r_info),
					(uint32_t)GELF_R_TYPE(ra.r_info)};
	}
	if (k)
		qsort(r, k, sizeof(*r), reloc_cmp);
	*ret = r;
	*n = k;
	return 0;
}

/* The dynamic symbol table the relocations index (sh_link of .rela.plt). */
struct dynsyms {
	Elf *e;
	Elf_Data *d;
	size_t strndx, n;
};

static void dynsyms_open(Elf *e, const GElf_Shdr *rel, struct dynsyms *ds)
{
	GElf_Shdr sh;
	Elf_Scn *scn = elf_getscn(e, rel->sh_link);
	size_t ent = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);

	memset(ds, 0, sizeof(*ds));
	ds->e = e;
	if (!scn || !gelf_getshdr(scn, &sh) ||
	    (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !ent)
		return;
	ds->d = elf_getdata(scn, NULL);
	if (!ds->d || !ds->d->d_buf || ds->d->d_type != ELF_T_SYM) {
		ds->d = NULL;
		return;
	}
	ds->strndx = sh.sh_link;
	ds->n = ds->d->d_size / ent;
}

static const char *dynsym_name(const struct dynsyms *ds, uint32_t idx)
{
	GElf_Sym s;
	if (!ds->d || !idx || idx >= ds->n || !gelf_getsym(ds->d, (int)idx, &s))
		return NULL;
	const char *n = elf_strptr(ds->e, ds->strndx, s.st_name);
	return n && *n ? n : NULL;
}

/* The exact symbol at vaddr among the first n (sorted) symbols, or NULL. */
static const char *symbol_at(const struct sym_obj *o, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->syms[mid].addr < vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && o->syms[lo].addr == vaddr ? o->strs + o->syms[lo].name : NULL;
}

static int add_stub(struct symbuild *b, const char *name, uint64_t addr, uint64_t size)
{
	char buf[1100];
	int n = snprintf(buf, sizeof(buf), "%s@plt", name);
	int r = symobj_add(b, buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1,
			   addr, size, SYMOBJ_RANK_SYNTH);
	return r == -E2BIG ? 0 : r < 0 ? r : 1;
}

/* x86-64 stub size: sh_entsize when it is 8 or 16, else what the alignment
 * says (as perf's get_plt_sizes()). */
static uint64_t slot_size(const GElf_Shdr *sh)
{
	if (sh->sh_entsize == 8 || sh->sh_entsize == 16)
		return sh->sh_entsize;
	return sh->sh_addralign == 8 ? 8 : 16;
}

/* .plt / .plt.sec from .rela.plt. The first nsorted symbols are the
 * object's own, sorted: symbol_at() names IRELATIVE slots with them. */
static long plt_slots(Elf *e, struct symbuild *b, size_t nsorted)
{
	GElf_Shdr rsh, psh;
	Elf_Scn *rscn = symobj_section(e, ".rela.plt", &rsh);
	if (!rscn)
		rscn = symobj_section(e, ".rel.plt", &rsh);
	Elf_Scn *pscn = symobj_section(e, ".plt.sec", &psh);
	bool sec = pscn && psh.sh_type == SHT_PROGBITS;
	if (!sec)
		pscn = symobj_section(e, ".plt", &psh);
	if (!rscn || !pscn || psh.sh_type != SHT_PROGBITS)
		return 0;

	struct reloc *rel;
	size_t nrel;
	struct dynsyms ds;
	if (read_relocs(e, rscn, &rsh, &rel, &nrel) < 0)
		return -ENOMEM;
	dynsyms_open(e, &rsh, &ds);
	uint64_t ent = slot_size(&psh);
	uint64_t at = psh.sh_addr + (sec ? 0 : ent); /* PLT0 is one slot */
	uint64_t end = psh.sh_addr + psh.sh_size;
	long added = 0;
	for (size_t i = 0; i < nrel && at < end && end - at >= ent; i++, at += ent) {
		char abs[40];
		const char *name = dynsym_name(&ds, rel[i].sym);
		if (!name && rel[i].type == R_X86_64_IRELATIVE) {
			name = symbol_at(b->o, nsorted, rel[i].addend);
			if (!name) {
				snprintf(abs, sizeof(abs), "*ABS*+0x%" PRIx64, rel[i].addend);
				name = abs;
			}
		}
		if (!name)
			continue;
		int r = add_stub(b, name, at, ent);
		if (r < 0) {
			free(rel);
			return r;
		}
		added += r;
	}
	free(rel);
	return added;
}

/* .plt.got: each stub's `jmp *disp(%rip)` names it after the relocation of
 * the GOT slot it jumps through (.rela.dyn: GLOB_DAT and friends). */
static long plt_got(Elf *e, struct symbuild *b)
{
	static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	GElf_Shdr gsh, rsh;
	Elf_Scn *gscn = symobj_section(e, ".plt.got", &gsh);
	Elf_Scn *rscn = symobj_section(e, ".rela.dyn", &rsh);
	if (!rscn)
		rscn = symobj_section(e, ".rel.dyn", &rsh);
	if (!gscn || !rscn || gsh.sh_type != SHT_PROGBITS)
		return 0;
	Elf_Data *d = elf_getdata(gscn, NULL);
	if (!d || !d->d_buf)
		return 0;
	const uint8_t *p = d->d_buf;
	size_t len = d->d_size;

	struct reloc *rel;
	size_t nrel;
	struct dynsyms ds;
	if (read_relocs(e, rscn, &rsh, &rel, &nrel) < 0)
		return -ENOMEM;
	dynsyms_open(e, &rsh, &ds);
	uint64_t ent = slot_size(&gsh);
	long added = 0;
	for (size_t off = 0; off + ent <= len; off += ent) {
		size_t j = ent >= 10 && !memcmp(p + off, endbr64, 4) ? 4 : 0;
		if (p[off + j] != 0xff || p[off + j + 1] != 0x25)
			continue;
		int32_t disp;
		memcpy(&disp, p + off + j + 2, 4);
		uint64_t slot = gsh.sh_addr + off + j + 6 + (uint64_t)(int64_t)disp;
		struct reloc key = {.off = slot};
		const struct reloc *hit = nrel ? bsearch(&key, rel, nrel, sizeof(*rel), reloc_cmp)
					       : NULL;
		const char *name = hit ? dynsym_name(&ds, hit->sym) : NULL;
		if (!name)
			continue;
		int r = add_stub(b, name, gsh.sh_addr + off, ent);
		if (r < 0) {
			free(rel);
			return r;
		}
		added += r;
	}
	free(rel);
	return added;
}

long symobj_add_plt(Elf *e, struct symbuild *b)
{
	GElf_Ehdr eh;
	if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64)
		return 0;
	long n = plt_slots(e, b, b->o->nsyms);
	if (n < 0)
		return n;
	long m = plt_got(e, b);
	return m < 0 ? m : n + m;
}
