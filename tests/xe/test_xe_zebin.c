// SPDX-License-Identifier: MIT
/*
 * NEO debug-zebin kernels (daemon/xe/zebin.c, kbin.c): ELF files from
 * tests/common/zebin_builder.c (a symbol table with two STT_FUNC kernels in
 * an addressed .text; a variant without symbols), hostile and truncated
 * files, the bounded binary store, and (where libiga64.so.1 loads; else
 * that part exits 77) the instruction text in the EU-stall folded output
 * of a synthetic PVC capture, with the encodings of test_xe_iga.c.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

#include "decode.h"
#include "iga.h"
#include "output.h"
#include "section.h"
#include "xe.h"
#include "xe_test_util.h"
#include "zebin.h"
#include "common/zebin_builder.h"

static void test_parse(void)
{
	struct xe_zebin z;
	char why[160];
	uint8_t *img;
	size_t len = zebin_test_build(true, &img);

	CHECK(len > 0);
	CHECK_EQ_INT(xe_zebin_parse(img, len, &z, why, sizeof(why)), 0);
	CHECK_EQ_INT(z.nk, 2);
	if (z.nk == 2) {
		CHECK_STREQ(z.k[0].name, "kern_a");
		CHECK_EQ_U64(z.k[0].gpu_va, ZEBIN_TEST_CANON_VA);
		CHECK_EQ_U64(z.k[0].size, 32);
		CHECK(memcmp(z.k[0].bytes, zebin_test_isa, 32) == 0);
		CHECK_STREQ(z.k[1].name, "kern_b");
		CHECK_EQ_U64(z.k[1].gpu_va, ZEBIN_TEST_CANON_VA + 16);
		CHECK_EQ_U64(z.k[1].size, 16);
		CHECK(memcmp(z.k[1].bytes, zebin_test_isa + 16, 16) == 0);
	}
	xe_zebin_finish(&z);

	/* truncations: every prefix is rejected cleanly or parses within bounds */
	for (size_t cut = 0; cut < len; cut += 7) {
		int r = xe_zebin_parse(img, cut, &z, why, sizeof(why));

		CHECK(r == 0 || r == -EBADMSG);
		if (r == 0)
			xe_zebin_finish(&z);
	}
	/* hostile: symbol pointing past its section, section offset past the end */
	uint8_t *bad = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)bad;

	memcpy(bad, img, len);
	Elf64_Shdr *sh = (Elf64_Shdr *)(bad + eh->e_shoff);
	sh[1].sh_offset = len + 100;
	CHECK_EQ_INT(xe_zebin_parse(bad, len, &z, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "outside") != NULL);
	memcpy(bad, img, len);
	sh[1].sh_size = 8; /* kern_b's value now lies outside .text */
	CHECK_EQ_INT(xe_zebin_parse(bad, len, &z, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "kern_b") != NULL);
	memcpy(bad, img, len);
	eh->e_shnum = 0xffff;
	CHECK_EQ_INT(xe_zebin_parse(bad, len, &z, why, sizeof(why)), -EBADMSG);
	CHECK_EQ_INT(xe_zebin_parse("junk", 4, &z, why, sizeof(why)), -EBADMSG);
	CHECK_EQ_INT(xe_zebin_parse(img, XE_ZEBIN_MAX_FILE + 1ull, &z, why, sizeof(why)), -EFBIG);
	free(bad);
	free(img);

	/* no symbol table: the addressed PROGBITS section */
	len = zebin_test_build(false, &img);
	CHECK(len > 0);
	CHECK_EQ_INT(xe_zebin_parse(img, len, &z, why, sizeof(why)), 0);
	CHECK_EQ_INT(z.nk, 1);
	if (z.nk == 1) {
		CHECK_STREQ(z.k[0].name, ".text");
		CHECK_EQ_U64(z.k[0].gpu_va, ZEBIN_TEST_CANON_VA);
		CHECK_EQ_U64(z.k[0].size, 32);
	}
	xe_zebin_finish(&z);
	free(img);
}

static void test_kbin(void)
{
	struct xe_kbin *kb;
	struct xe_kbin_stats st;
	uint8_t b[100] = {1};

	CHECK_EQ_INT(xe_kbin_new(250, &kb), 0);
	CHECK_EQ_INT(xe_kbin_put(kb, 7, 0x1000, b, 100), 0);
	CHECK_EQ_INT(xe_kbin_put(kb, 7, 0x2000, b, 100), 0);
	CHECK_EQ_INT(xe_kbin_put(kb, 7, 0x2000, b, 100), 0); /* replaces */
	xe_kbin_stats(kb, &st);
	CHECK_EQ_U64(st.kernels, 2);
	CHECK_EQ_U64(st.dropped, 0);
	CHECK_EQ_INT(xe_kbin_put(kb, 7, 0x3000, b, 100), 0); /* oldest (0x1000) goes */
	xe_kbin_stats(kb, &st);
	CHECK_EQ_U64(st.kernels, 2);
	CHECK_EQ_U64(st.bytes, 200);
	CHECK_EQ_U64(st.dropped, 1);
	CHECK_EQ_INT(xe_kbin_put(kb, 8, 0x3000, b, 60), 0); /* other pid: its own entry */
	xe_kbin_stats(kb, &st);
	CHECK_EQ_U64(st.kernels, 2); /* 0x2000 dropped for the budget */
	CHECK_EQ_U64(st.bytes, 160);
	CHECK_EQ_U64(st.dropped, 2);
	CHECK_EQ_INT(xe_kbin_put(kb, 7, 0x4000, b, 251), -EFBIG);
	xe_kbin_free(kb);
}

/* PVC record: ip (29 bits, 8-byte units) and an "active" count (bit 29) */
static void pvc_rec(uint8_t *rec, uint64_t ip, unsigned active)
{
	uint64_t v = (ip & ((1ull << 29) - 1)) | (uint64_t)active << 29;

	memset(rec, 0, 64);
	memcpy(rec, &v, sizeof(v));
}

static void test_folded_iga(void)
{
	struct xe_iga *g;
	int r = xe_iga_new(12, 60, &g);

	if (r == -ENOENT && !test_cases_failed)
		TEST_SKIP("libiga64.so.1 not installed (Debian: libigc1)");
	CHECK_EQ_INT(r, 0);
	if (r < 0)
		return;

	/* frames print ';' as ':' (folded syntax); kernels at a low VA with no IBA: EU IPs are full
	 * addresses */
	const uint64_t va = 0x10000;
	const struct xe_decoder *d = xe_decoder_by_name("pvc");
	struct xe_zebin z = {0};
	struct xe_zebin_kernel zk = {.name = "kern_a", .gpu_va = va, .size = 32, .bytes = zebin_test_isa};
	struct xe_kbin *kb;
	struct xe *x;
	struct xe_insn_src *src;
	uint8_t recs[64 * 3];
	void *buf;
	size_t len;
	struct xe_capdata cd;
	char why[128], *out = NULL;
	struct xe_out_totals t;

	z.k = &zk;
	z.nk = 1;
	CHECK_EQ_INT(xe_new(&(struct xe_config){0}, 0, &x), 0);
	CHECK_EQ_INT(xe_kbin_new(0, &kb), 0);
	CHECK_EQ_INT(xe_zebin_load(x, kb, &z, "/tmp/dumped_zebin_module.elf", 42, 1000), 1);
	pvc_rec(recs, va >> 3, 5);	       /* the add */
	pvc_rec(recs + 64, (va + 16) >> 3, 2); /* the nop */
	pvc_rec(recs + 128, (va + 16) >> 3, 1);
	CHECK_EQ_INT(xe_ingest(x, d, recs, sizeof(recs), 64, 1), 3);
	CHECK_EQ_INT(xe_export(x, 0, 1000, NULL, &buf, &len), 0);
	CHECK_EQ_INT(xe_sec_decode(buf, len, &cd, why, sizeof(why)), 0);
	CHECK_EQ_INT(xe_insn_src_new(kb, g, false, &src), 0);
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, xe_insn_src_text, src, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "kern_a_[G];add (16|M0) r10.0<1>:f r11.0<1:1,0>:f "
				 "r12.0<1:1,0>:f_[g];active_[g];0x0_[g] 5") != NULL);
	CHECK(out && strstr(out, "kern_a_[G];nop_[g];active_[g];0x10_[g] 3") != NULL);
	free(out);
	out = NULL;
	/* without the binary: the offset, as before */
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, NULL, NULL, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "kern_a_[G];0x10_[g];active_[g]") != NULL);
	free(out);
	out = NULL;
	xe_insn_src_free(src);
	/* another process's binary at that VA does not serve pid 42; pid 0's does */
	xe_kbin_free(kb);
	CHECK_EQ_INT(xe_kbin_new(0, &kb), 0);
	CHECK_EQ_INT(xe_zebin_load(NULL, kb, &z, NULL, 43, 0), 1);
	CHECK_EQ_INT(xe_insn_src_new(kb, g, false, &src), 0);
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, xe_insn_src_text, src, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "kern_a_[G];0x10_[g];active_[g]") != NULL);
	free(out);
	out = NULL;
	xe_insn_src_free(src);
	CHECK_EQ_INT(xe_zebin_load(NULL, kb, &z, NULL, 0, 0), 1);
	CHECK_EQ_INT(xe_insn_src_new(kb, g, false, &src), 0);
	CHECK_EQ_INT(xe_write_folded(&cd, NULL, xe_insn_src_text, src, sink_buf, &out, &t), 0);
	CHECK(out && strstr(out, "kern_a_[G];nop_[g];active_[g];0x10_[g] 3") != NULL);
	free(out);
	xe_insn_src_free(src);
	xe_sec_finish(&cd);
	free(buf);
	xe_kbin_free(kb);
	xe_free(x);
	xe_iga_free(g);
}

int main(void)
{
	RUN(test_parse);
	RUN(test_kbin);
	/* last: exits 77 without IGA when the rest passed */
	RUN(test_folded_iga);
	return test_summary();
}
