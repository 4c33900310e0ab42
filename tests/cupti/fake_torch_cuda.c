// SPDX-License-Identifier: MIT
/* An empty libtorch_cuda.so: its name in the process is what the
 * injection library looks for (GPUPROF_CUPTI_YIELD=torch). */
int gpuprof_fake_torch_cuda;
