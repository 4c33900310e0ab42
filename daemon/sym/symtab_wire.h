/* SPDX-License-Identifier: MIT */
/* CAPSEC_SYMBOLS wire records shared by the decoder (symtab.c) and the
 * builder/encoder (symtab_build.c); the layout is in docs/symbolization.md. */
#ifndef GPD_SYM_SYMTAB_WIRE_H
#define GPD_SYM_SYMTAB_WIRE_H

#include <stdint.h>

struct st_name {
	uint32_t off, len;
};

struct st_entry {
	uint32_t pid, stack, ref;
	uint16_t nuser, nkernel;
};

_Static_assert(sizeof(struct st_name) == 8, "wire layout");
_Static_assert(sizeof(struct st_entry) == 16, "wire layout");

#define HDR_LEN 32
#define MAP_LEN 40

#endif
