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

#endif
