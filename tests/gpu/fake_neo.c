// SPDX-License-Identifier: MIT
/*
 * A fake NEO (libze_intel_gpu.so.1) with iaprof's USDT probes
 * (compute-runtime-usdt patch, probes.d):
 *   provider level_zero {
 *     probe launch_kernel(uint64_t iba, uint64_t baseAddress, uint64_t size,
 *                         uintptr_t kernelName);
 *     probe compile_kernel(uintptr_t pathName);
 *   }
 * guarded by SDT semaphores, as NEO's LEVEL_ZERO_*_ENABLED() are: the probe
 * fires only while a tracer holds the semaphore up.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdlib.h>
#include <sys/sdt.h>

__attribute__((used, section(".probes"))) volatile unsigned short level_zero_launch_kernel_semaphore;
__attribute__((used, section(".probes"))) volatile unsigned short level_zero_compile_kernel_semaphore;

volatile uint64_t fake_neo_launches, fake_neo_probed, fake_neo_compiled;

/* ModuleImp::initialize(): after a link NEO writes a debug zebin and names
 * it through compile_kernel. Here the module is "linked" before the first
 * launch, and the zebin is the one the test wrote to $FAKE_NEO_ZEBIN. */
__attribute__((visibility("default"), noinline)) void fake_neo_module_init(void)
{
	static int done;
	const char *path = getenv("FAKE_NEO_ZEBIN");

	if (done++ || !path)
		return;
	fake_neo_compiled++;
	if (level_zero_compile_kernel_semaphore)
		STAP_PROBE1(level_zero, compile_kernel, (uintptr_t)path);
}

__attribute__((visibility("default"), noinline)) void
fake_neo_append_launch(const char *name, uint64_t gpu_addr, uint64_t size)
{
	fake_neo_module_init();
	fake_neo_launches++;
	if (level_zero_launch_kernel_semaphore) {
		fake_neo_probed++;
		STAP_PROBE4(level_zero, launch_kernel, (uint64_t)0xfe0000000000ull, gpu_addr, size,
			     (uintptr_t)name);
	}
}
