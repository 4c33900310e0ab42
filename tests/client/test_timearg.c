// SPDX-License-Identifier: MIT
/* gpuprofctl's times (cli/timearg.c): capture --since / --until. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "test.h"
#include "timearg.h"

static void test_forms(void)
{
	static const struct {
		const char *text;
		int ret;
		uint64_t ns;
		bool wall;
	} cases[] = {
		{"123456789", 0, 123456789ull, false},
		{"0", 0, 0, false},
		{"18446744073709551615", 0, UINT64_MAX, false},
		{"18446744073709551616", -ERANGE, 0, false},
		{"@1764315000", 0, 1764315000000000000ull, true},
		{"@1764315000.5", 0, 1764315000500000000ull, true},
		{"@1764315000.123456789", 0, 1764315000123456789ull, true},
		{"@1764315000.1234567891", -EINVAL, 0, false}, /* 10 digits: not rounded */
		{"@1764315000.", -EINVAL, 0, false},
		{"@", -EINVAL, 0, false},
		{"@-5", -EINVAL, 0, false},
		{"2025-11-28T07:30:00Z", 0, 1764315000000000000ull, true},
		{"2025-11-28 07:30:00z", 0, 1764315000000000000ull, true},
		{"2025-11-28T08:30:00+01:00", 0, 1764315000000000000ull, true},
		{"2025-11-28T02:00:00-0530", 0, 1764315000000000000ull, true},
		/* date -Ins: a comma before the fraction */
		{"2025-11-28T07:30:00,250000000+00:00", 0, 1764315000250000000ull, true},
		{"2025-11-28T07:30:00", -EDOM, 0, false}, /* no zone */
		{"2025-02-30T07:30:00Z", -ERANGE, 0, false},
		{"2025-13-01T07:30:00Z", -ERANGE, 0, false},
		{"2025-11-28T07:30Z", -EINVAL, 0, false},
		{"2025-11-28T07:30:00+25:00", -EINVAL, 0, false},
		{"2025-11-28T07:30:00 UTC", -EINVAL, 0, false},
		{"1969-12-31T23:59:59Z", -ERANGE, 0, false},
		{"10s", -EINVAL, 0, false},
		{"", -EINVAL, 0, false},
		{"-1", -EINVAL, 0, false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t ns = 7;
		bool wall = !cases[i].wall;
		int r = cli_parse_time(cases[i].text, &ns, &wall);

		CHECK_EQ_INT(r, cases[i].ret);
		if (r == 0 && cases[i].ret == 0) {
			CHECK_EQ_U64(ns, cases[i].ns);
			CHECK_EQ_INT(wall, cases[i].wall);
		}
	}
}

int main(void)
{
	RUN(test_forms);
	return test_summary();
}
