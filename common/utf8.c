// SPDX-License-Identifier: MIT
#include "utf8.h"

size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cpout)
{
	uint32_t c = s[0], cp, min;
	size_t n;

	if (c < 0x80) {
		n = 1, cp = c;
		goto done;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, min = 0x10000;
	else
		return 0;
	if (len < n)
		return 0;
	cp = c & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
done:
	if (cpout)
		*cpout = cp;
	return n;
}
