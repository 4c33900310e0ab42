// SPDX-License-Identifier: MIT
// The kernel whose cubin the PC sampling tests load (tests/cupti/meson.build
// builds it with nvcc -cubin when a toolkit is present): the stand-in
// libcupti samples PCs inside its code, the daemon disassembles it.
extern "C" __global__ void gpuprof_pc_kernel(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		for (int k = 0; k < 8; k++)
			v = v * 1.0001f + 0.5f;
		x[i] = v;
	}
}
