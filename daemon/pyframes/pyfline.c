// SPDX-License-Identifier: MIT
/*
 * CPython line tables: instruction offset -> line, one decoder per format.
 * Each follows the interpreter's own lookup (PyCode_Addr2Line of that
 * version) so the line matches what a traceback of the same frame says.
 * Tables come from another process: every index is checked against n.
 */
#include "pyf_int.h"

/*
 * 3.9 co_lnotab (Objects/lnotab_notes.txt of 3.9): pairs of (unsigned byte
 * address increment, signed byte line increment) from (0, co_firstlineno);
 * the line of off is the one reached before the address passes off.
 */
int pyf_line_lnotab(const uint8_t *t, size_t n, int first, int32_t off)
{
	int64_t addr = 0;
	int line = first;

	if (off < 0)
		return first;
	for (size_t i = 0; i + 1 < n; i += 2) {
		addr += t[i];
		if (addr > off)
			break;
		line += (int8_t)t[i + 1];
	}
	return line;
}

/*
 * 3.10 co_linetable (PEP 626, "Out of process debuggers and profilers"):
 * pairs of (unsigned byte length of a bytecode range, signed byte line
 * delta); -128 marks a range with no line. The line accumulates from
 * co_firstlineno; off falls in exactly one range.
 */
int pyf_line_pep626(const uint8_t *t, size_t n, int first, int32_t off)
{
	int64_t start, end = 0;
	int line = first;

	if (off < 0)
		return first;
	for (size_t i = 0; i + 1 < n; i += 2) {
		int8_t ld = (int8_t)t[i + 1];

		start = end;
		end += t[i];
		if (ld != -128)
			line += ld;
		if (off >= start && off < end)
			return ld == -128 ? -1 : line;
	}
	return -1;
}

/* 6-bit little-endian chunks, bit 6 = more; i advances past it */
static uint32_t varint(const uint8_t *t, size_t n, size_t *i)
{
	uint32_t v = 0;
	unsigned shift = 0;

	while (*i < n && shift <= 30) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		if (!(b & 64))
			break;
		shift += 6;
	}
	return v;
}

static int32_t svarint(const uint8_t *t, size_t n, size_t *i)
{
	uint32_t v = varint(t, n, i);

	return v & 1 ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

/*
 * 3.11+ location table (Objects/locations.md of 3.11): entries whose first
 * byte has bit 7 set, bits 3-6 the kind of entry and bits 0-2 the length in
 * code units minus one. Kinds 0-9 keep the line, 10-12 add kind-10, 13 and
 * 14 start with a signed varint line delta, 15 has no location (line
 * unchanged, the range has none). Column bytes follow; they are skipped by
 * looking for the next byte with bit 7 set, as CPython itself does.
 */
int pyf_line_locations(const uint8_t *t, size_t n, int first, int32_t off)
{
	int64_t addr = 0;
	int line = first;
	size_t i = 0;

	if (off < 0)
		return first;
	while (i < n) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15;
		int64_t len = ((b & 7) + 1) * 2;
		size_t j = i;

		if (!(b & 0x80))
			return -1; /* not at an entry: a corrupt table */
		if (code == 13 || code == 14)
			line += svarint(t, n, &j);
		else if (code >= 10 && code <= 12)
			line += (int)code - 10;
		if (off >= addr && off < addr + len)
			return code == 15 ? -1 : line;
		addr += len;
		while (i < n && !(t[i] & 0x80))
			i++;
	}
	return -1;
}
