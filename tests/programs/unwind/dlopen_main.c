// SPDX-License-Identifier: MIT
/*
 * Program d: built -O2 -fomit-frame-pointer. Spins first in before_dlopen
 * until SIGUSR1 (sent once the profilers have seen this process and read
 * its mappings), then dlopen()s the plugin (libunwind_plugin.so, also
 * without frame pointers) and spends the rest of its time in it:
 * main -> run_plugin -> plugin_entry -> plugin_mid -> plugin_leaf.
 *
 *   unwind_dlopen seconds /path/to/libunwind_plugin.so
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"

static volatile uint64_t sink;
static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

FRAME static uint64_t before_dlopen(double until)
{
	uint64_t h = 1;

	while (!go && prog_now() < until)
		for (int i = 0; i < 100000; i++)
			h = h * 6364136223846793005ull + 1442695040888963407ull;
	return h;
}

FRAME static uint64_t run_plugin(uint64_t (*entry)(uint64_t), double until)
{
	uint64_t h = 1;

	while (prog_now() < until)
		h = entry(h);
	sink += h;
	return h;
}

int main(int argc, char **argv)
{
	double end = prog_now() + prog_seconds(argc, argv, 4.0);
	uint64_t (*entry)(uint64_t);
	void *lib;

	signal(SIGUSR1, on_usr1);
	if (argc < 3) {
		fprintf(stderr, "usage: %s seconds plugin.so\n", argv[0]);
		return 2;
	}
	sink += before_dlopen(end);
	lib = dlopen(argv[2], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	entry = (uint64_t(*)(uint64_t))dlsym(lib, "plugin_entry");
	if (!entry) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	sink += run_plugin(entry, end);
	printf("%llu\n", (unsigned long long)(sink & 1));
	return 0;
}
