// SPDX-License-Identifier: MIT
/*
 * IGA instruction text (daemon/xe/iga.c). Runs only where libiga64.so.1
 * loads (Debian: libigc1; or $GPUPROF_IGA_LIB), exit 77 otherwise. The
 * encodings were made with Debian 12's iga64 1.0.12504.6:
 *   iga64 -p=12p72 -a t.asm   (t.asm: the add below, then nop)
 */
#include <errno.h>
#include <string.h>

#include "test.h"

#include "iga.h"

/* add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f, then nop */
static const uint8_t isa[32] = {
    0x40, 0x00, 0x10, 0x00, 0xa0, 0x0a, 0x05, 0x0a, 0x04, 0x0b, 0x10, 0x0a,
    0x04, 0x0c, 0x10, 0x00, 0x60, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
};

int main(void)
{
	struct xe_iga *g;
	char text[256];
	int r = xe_iga_new(12, 60, &g);

	if (r == -ENOENT)
		TEST_SKIP("libiga64.so.1 not installed (Debian: libigc1)");
	CHECK_EQ_INT(r, 0);
	if (r < 0)
		return test_summary();
	CHECK_STREQ(xe_iga_platform(g), "xehpc");
	r = xe_iga_insn(g, isa, sizeof(isa), 0, text, sizeof(text));
	CHECK(r > 0);
	/* runs of blanks collapsed to one */
	CHECK_STREQ(text, "add (16|M0) r10.0<1>:f r11.0<1;1,0>:f r12.0<1;1,0>:f");
	CHECK_EQ_INT(xe_iga_insn(g, isa, sizeof(isa), 16, text, sizeof(text)), 3);
	CHECK_STREQ(text, "nop");
	/* an uncompacted instruction cut short */
	CHECK_EQ_INT(xe_iga_insn(g, isa, 12, 0, text, sizeof(text)), -EINVAL);
	CHECK_EQ_INT(xe_iga_insn(g, isa, 24, 16, text, sizeof(text)), -EINVAL);
	xe_iga_free(g);
	/* IPs without EU stall have no platform here; Xe2 needs a newer IGA
	 * than Debian 12's (which lists platforms up to 12p72) */
	CHECK_EQ_INT(xe_iga_new(12, 55, &g), -EOPNOTSUPP);
	r = xe_iga_new(20, 4, &g);
	CHECK(r == 0 || r == -EOPNOTSUPP);
	if (r == 0)
		xe_iga_free(g);
	return test_summary();
}
