// SPDX-License-Identifier: MIT
/* Zebin-like ELF files for tests (zebin_builder.h). */
#include "zebin_builder.h"

#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <unistd.h>

/* add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f, then nop (XeHPC) */
const uint8_t zebin_test_isa[32] = {
    0x40, 0x00, 0x10, 0x00, 0xa0, 0x0a, 0x05, 0x0a, 0x04, 0x0b, 0x10, 0x0a,
    0x04, 0x0c, 0x10, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

static Elf_Scn *add_scn(Elf *e, uint32_t name, uint32_t type, uint64_t addr, const void *buf,
			size_t len, size_t entsize, uint32_t link)
{
	Elf_Scn *s = elf_newscn(e);
	Elf_Data *d = elf_newdata(s);
	GElf_Shdr sh;

	d->d_buf = (void *)buf;
	d->d_size = len;
	d->d_type = ELF_T_BYTE;
	d->d_align = 1;
	gelf_getshdr(s, &sh);
	sh.sh_name = name;
	sh.sh_type = type;
	sh.sh_addr = addr;
	sh.sh_entsize = entsize;
	sh.sh_link = link;
	gelf_update_shdr(s, &sh);
	return s;
}

size_t zebin_test_build(bool symtab, uint8_t **out)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	static const char strtab[] = "\0kern_a\0kern_b";
	Elf64_Sym syms[4] = {0};
	/* libelf writes to an fd: an unlinked temporary file */
	char path[] = "/tmp/zebin_builder.XXXXXX";
	int fd = mkstemp(path);
	size_t len;
	Elf *e;
	Elf64_Ehdr *eh;

	elf_version(EV_CURRENT);
	*out = NULL;
	if (fd < 0)
		return 0;
	unlink(path);
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	if (!e) {
		close(fd);
		return 0;
	}
	eh = elf64_newehdr(e);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_EXEC;
	eh->e_machine = 205; /* EM_INTELGT */
	add_scn(e, 1, SHT_PROGBITS, ZEBIN_TEST_TEXT_VA, zebin_test_isa, sizeof(zebin_test_isa), 0,
		0);
	if (symtab) {
		syms[1].st_name = 1;
		syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[1].st_shndx = 1;
		syms[1].st_value = ZEBIN_TEST_TEXT_VA;
		syms[2].st_name = 8;
		syms[2].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		syms[2].st_shndx = 1;
		syms[2].st_value = ZEBIN_TEST_TEXT_VA + 16;
		syms[3].st_info = ELF64_ST_INFO(STB_LOCAL, STT_SECTION);
		syms[3].st_shndx = 1;
		Elf_Scn *s = add_scn(e, 7, SHT_SYMTAB, 0, syms, sizeof(syms), sizeof(Elf64_Sym), 3);
		elf_getdata(s, NULL)->d_type = ELF_T_SYM;
		add_scn(e, 15, SHT_STRTAB, 0, strtab, sizeof(strtab), 0, 0);
		add_scn(e, 23, SHT_STRTAB, 0, shstr, sizeof(shstr), 0, 0);
		eh->e_shstrndx = 4;
	} else {
		add_scn(e, 23, SHT_STRTAB, 0, shstr, sizeof(shstr), 0, 0);
		eh->e_shstrndx = 2;
	}
	if (elf_update(e, ELF_C_WRITE) <= 0) {
		elf_end(e);
		close(fd);
		return 0;
	}
	elf_end(e);
	len = (size_t)lseek(fd, 0, SEEK_END);
	*out = malloc(len);
	if (!*out || pread(fd, *out, len, 0) != (ssize_t)len) {
		free(*out);
		*out = NULL;
		len = 0;
	}
	close(fd);
	return len;
}
