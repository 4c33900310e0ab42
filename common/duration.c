// SPDX-License-Identifier: MIT
#include "duration.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int duration_parse_ms(const char *text, uint64_t *ms)
{
	if (!text || !isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	static const struct {
		const char *suffix;
		unsigned long long mul, div;
	} units[] = {
		{"", 1000, 1},	 {"s", 1000, 1},    {"ms", 1, 1},      {"us", 1, 1000},
		{"m", 60000, 1}, {"min", 60000, 1}, {"h", 3600000, 1},
	};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > UINT64_MAX / units[i].mul)
			return -ERANGE;
		unsigned long long r = v * units[i].mul;
		*ms = (r + units[i].div - 1) / units[i].div;
		return 0;
	}
	return -EINVAL;
}
