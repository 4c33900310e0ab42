// SPDX-License-Identifier: MIT
/*
 * Child process for tests/sym (a PIE): dlopen()s the library named in
 * argv[1], maps one anonymous executable page, prints the addresses the
 * test resolves ("name 0x..." lines, then "ready"), and waits for stdin
 * to close.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noipa)) int exe_func(int x);
__attribute__((noipa)) static int exe_static(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 7;
}

__attribute__((noipa)) int exe_func(int x)
{
	return exe_static(x) * 2;
}

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	void *exported = h ? dlsym(h, "symtest_lib_exported") : NULL;
	void *(*get_static)(void) = h ? (void *(*)(void))dlsym(h, "symtest_lib_static_addr") : NULL;
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char c;

	printf("exe_func %p\n", (void *)(uintptr_t)exe_func);
	printf("exe_static %p\n", (void *)(uintptr_t)exe_static);
	printf("lib_exported %p\n", exported);
	printf("lib_static %p\n", get_static ? get_static() : NULL);
	printf("anon %p\n", anon == MAP_FAILED ? NULL : anon);
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return exe_func(argc) == 0;
}
