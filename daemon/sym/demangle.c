// SPDX-License-Identifier: MIT
/* Symbol demangling; see demangle.h. */
#include "demangle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (cxxabi.h), declared here so this stays C. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

bool sym_demangle(const char *name, char *buf, size_t len)
{
	static const char typeinfo[] = "typeinfo name for ";
	if (!len || strncmp(name, "_Z", 2) != 0)
		return false;
	int status = -1;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return false;
	}
	const char *p = d;
	size_t n = strlen(d);
	/* SYCL kernels are named by their typeinfo name: keep the type. */
	if (strncmp(name, "_ZTS", 4) == 0 && strncmp(p, typeinfo, sizeof(typeinfo) - 1) == 0) {
		p += sizeof(typeinfo) - 1;
		n -= sizeof(typeinfo) - 1;
	}
	/* Rust legacy: the last path element "17h<16 hex>" is a hash. */
	size_t nlen = strlen(name);
	if (nlen > 20 && memcmp(name + nlen - 20, "17h", 3) == 0 && name[nlen - 1] == 'E' &&
	    n > 19 && memcmp(p + n - 19, "::h", 3) == 0 && is_hex(p + n - 16, 16))
		n -= 19;
	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	free(d);
	return true;
}
