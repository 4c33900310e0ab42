// SPDX-License-Identifier: MIT
/* A shared library for tests/sym: one exported and one static function.
 * noipa keeps them whole and un-cloned at any optimization level. */
#include <stdint.h>

int symtest_lib_exported(int x);
void *symtest_lib_static_addr(void);

__attribute__((noipa)) static int lib_static_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

__attribute__((noipa, visibility("default"))) int symtest_lib_exported(int x)
{
	return lib_static_fn(x) + 2;
}

__attribute__((visibility("default"))) void *symtest_lib_static_addr(void)
{
	return (void *)(uintptr_t)lib_static_fn;
}
