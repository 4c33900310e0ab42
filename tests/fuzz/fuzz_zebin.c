// SPDX-License-Identifier: MIT
/*
 * The NEO debug-zebin parser (daemon/xe/zebin.c) and the kernel-binary
 * store (kbin.c). Input: an ELF file. Then: a parse either fails with a
 * reason or yields kernels whose bytes lie inside the parsed copy and
 * whose VAs are canonical; loading them into a small store keeps it
 * within its budget.
 */
#include "fuzz.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xe.h"
#include "zebin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xe_kbin_stats st;
	struct xe_kbin *kb;
	struct xe_zebin z;
	char why[200] = "";
	int r = xe_zebin_parse(data, size, &z, why, sizeof(why));

	if (r < 0) {
		if ((r == -EBADMSG || r == -EFBIG) && !why[0])
			abort(); /* an error without a reason */
		return 0;
	}
	for (size_t i = 0; i < z.nk; i++) {
		const struct xe_zebin_kernel *k = &z.k[i];

		if (!k->name || !k->size || k->gpu_va > XE_VA_MASK || k->bytes < z.buf ||
		    k->bytes + k->size > z.buf + z.len)
			abort();
	}
	if (xe_kbin_new(4096, &kb) == 0) {
		if (xe_zebin_load(NULL, kb, &z, "fuzz.elf", 1, 0) != (int)z.nk)
			abort();
		xe_kbin_stats(kb, &st);
		if (st.bytes > 4096)
			abort();
		xe_kbin_free(kb);
	}
	xe_zebin_finish(&z);
	return 0;
}
