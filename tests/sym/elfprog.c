// SPDX-License-Identifier: MIT
/*
 * A program for tests/sym/test_sym_elf: calls through the PLT (libc and an
 * IFUNC, whose slot carries an R_X86_64_IRELATIVE relocation), and has a
 * static function that only .symtab (or MiniDebugInfo) names. Built twice:
 * plain (.plt with PLT0) and with IBT (.plt.sec, 16-byte .plt.got stubs).
 * With argument "wait" it prints the static function's address and waits
 * for stdin to close, so a test can resolve it in a live process.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noipa)) static int mini_static_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 5 + 3;
}

static int twice_impl(int x)
{
	return 2 * x;
}

static int (*resolve_twice(void))(int)
{
	return twice_impl;
}

int twice(int x) __attribute__((ifunc("resolve_twice")));

int main(int argc, char **argv)
{
	char *p = malloc(64), c;

	if (!p)
		return 1;
	strncpy(p, argv[0], 63);
	p[63] = '\0';
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		printf("mini_static_fn %p\nready\n", (void *)(uintptr_t)mini_static_fn);
		fflush(stdout);
		while (read(0, &c, 1) > 0)
			;
	}
	int r = twice(mini_static_fn(argc)) == 0 && p[0] == '\0';
	free(p);
	return r;
}
