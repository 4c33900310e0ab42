/* SPDX-License-Identifier: MIT */
/*
 * Symbol demangling (docs/symbolization.md): Itanium C++ names and Rust
 * legacy names (the same scheme, "::h<16 hex>" hash suffix stripped) with
 * libstdc++'s __cxa_demangle; SYCL kernel typeinfo names ("_ZTS...") lose
 * the "typeinfo name for " prefix. Rust v0 ("_R...") names stay mangled.
 */
#ifndef GPUPROF_DEMANGLE_H
#define GPUPROF_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>

/* Demangle the NUL-terminated name into buf (cut to len - 1 bytes). True
 * when it was demangled; false (buf untouched) when it is not a mangled
 * name, does not demangle, or memory is short. */
bool sym_demangle(const char *name, char *buf, size_t len);

/* For a mangled name that does not demangle, as one cut short is (the GPU
 * launch probes keep 255 bytes of a kernel's name; PyTorch's templated
 * kernels run longer): its qualified name, read up to the first template
 * argument list ("<…>" marks one) or parameter list, anonymous namespaces
 * shown as "(anonymous namespace)". E.g. "_ZN2at6native18elementwise_kernelILi4E"
 * cut anywhere after "kernel" gives "at::native::elementwise_kernel<…>".
 * True when it yields at least one name component; false (buf's content
 * unspecified) otherwise. */
bool sym_demangle_cut(const char *name, char *buf, size_t len);

#endif
