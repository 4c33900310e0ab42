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
#include <sys/sdt.h>

__attribute__((used, section(".probes"))) volatile unsigned short level_zero_launch_kernel_semaphore;
__attribute__((used, section(".probes"))) volatile unsigned short level_zero_compile_kernel_semaphore;

volatile uint64_t fake_neo_launches, fake_neo_probed;

__attribute__((visibility("default"), noinline)) void
fake_neo_append_launch(const char *name, uint64_t gpu_addr, uint64_t size)
{
	fake_neo_launches++;
	if (level_zero_launch_kernel_semaphore) {
		fake_neo_probed++;
		STAP_PROBE4(level_zero, launch_kernel, (uint64_t)0xfe0000000000ull, gpu_addr, size,
			     (uintptr_t)name);
	}
}
