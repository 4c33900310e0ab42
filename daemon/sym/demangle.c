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

/* Append text to buf at *at, always leaving it NUL-terminated; false once
 * it no longer fits. */
static bool put(char *buf, size_t len, size_t *at, const char *t, size_t n)
{
	if (*at + n >= len)
		return false;
	memcpy(buf + *at, t, n);
	*at += n;
	buf[*at] = '\0';
	return true;
}

bool sym_demangle_cut(const char *name, char *buf, size_t len)
{
	static const char anon[] = "(anonymous namespace)";
	const char *p = name + 2, *end = name + strlen(name);
	size_t at = 0, parts = 0;
	bool nested;

	if (len < 2 || strncmp(name, "_Z", 2) != 0)
		return false;
	buf[0] = '\0';
	nested = *p == 'N';
	if (nested)
		for (p++; p < end && strchr("rVKRO", *p); p++)
			;
	if (nested && end - p >= 2 && !strncmp(p, "St", 2)) {
		if (!put(buf, len, &at, "std", 3))
			return false;
		parts++;
		p += 2;
	}
	while (p < end && *p >= '1' && *p <= '9') {
		size_t n = 0;
		while (p < end && *p >= '0' && *p <= '9' && n < 4096)
			n = n * 10 + (size_t)(*p++ - '0');
		if (n > (size_t)(end - p))
			break; /* the cut fell inside this identifier */
		bool is_anon = n >= 10 && !strncmp(p, "_GLOBAL__N", 10);
		size_t before = at;
		if ((parts && !put(buf, len, &at, "::", 2)) ||
		    !put(buf, len, &at, is_anon ? anon : p, is_anon ? sizeof(anon) - 1 : n)) {
			buf[before] = '\0'; /* whole components only */
			return parts > 0;
		}
		parts++;
		p += n;
		if (!nested)
			break;
	}
	if (!parts)
		return false;
	/* Template arguments follow: there, not rendered. */
	if (p < end && *p == 'I')
		put(buf, len, &at, "<\xe2\x80\xa6>", 5);
	return true;
}
