/* SPDX-License-Identifier: MIT */
/* The entry point every harness defines (libFuzzer's, and replay.c's). */
#ifndef GPUPROF_TESTS_FUZZ_H
#define GPUPROF_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
