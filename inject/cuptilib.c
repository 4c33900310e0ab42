// SPDX-License-Identifier: MIT
/*
 * Finding libcupti at run time. The library is not linked against CUPTI:
 * CUPTI is process-global state, so we must use the copy the application
 * already loaded (PyTorch's wheel brings its own), and a host without
 * CUPTI must still run its CUDA programs untouched. Order:
 *   1. GPUPROF_CUPTI_LIB, a path (tests, unusual installs);
 *   2. "libcupti.so.13": an already loaded copy matches by soname, else
 *      the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache);
 *   3. the CUDA prefix this library was built against.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuptilib.h"

static struct cuptilib lib;
struct cuptilib *cl;

/* record layouts (Kernel10, Memcpy6 ...) are those of CUPTI 13 */
#define CUPTI_MAJOR_MIN 130000u
#define CUPTI_MAJOR_END 140000u

static void *open_lib(void)
{
	const char *env = getenv("GPUPROF_CUPTI_LIB");
	void *h;

	if (env && *env)
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
	if (h || !GPI_CUPTI_LIBDIR[0])
		return h;
	return dlopen(GPI_CUPTI_LIBDIR "/libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
}

#define REQ(name)                                                                 \
	do {                                                                      \
		if (!(lib.name = (__typeof__(lib.name))dlsym(lib.handle, #name))) \
			return -ENOSYS;                                           \
	} while (0)
#define OPT(name) (lib.name = (__typeof__(lib.name))dlsym(lib.handle, #name))

static int resolve(void)
{
	REQ(cuptiGetVersion);
	REQ(cuptiSubscribe);
	REQ(cuptiUnsubscribe);
	REQ(cuptiEnableCallback);
	REQ(cuptiActivityRegisterCallbacks);
	REQ(cuptiActivityEnable);
	REQ(cuptiActivityDisable);
	REQ(cuptiActivityFlushAll);
	REQ(cuptiActivityGetNextRecord);
	REQ(cuptiActivityGetNumDroppedRecords);
	OPT(cuptiSubscribe_v2);
	OPT(cuptiActivitySetAttribute);
	OPT(cuptiActivityRegisterTimestampCallback);
	return 0;
}

int cuptilib_open(void)
{
	uint32_t v = 0;
	int err;

	lib.handle = open_lib();
	if (!lib.handle)
		return -ENOENT;
	err = resolve();
	if (err)
		return err; /* the handle stays open: the library may be the app's */
	if (lib.cuptiGetVersion(&v) != CUPTI_SUCCESS)
		v = 0;
	gpi.cupti_version = v;
	if (v < CUPTI_MAJOR_MIN || v >= CUPTI_MAJOR_END)
		return -EPROTO;
	cl = &lib;
	return 0;
}
