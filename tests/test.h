/* SPDX-License-Identifier: MIT */
/*
 * Minimal test harness: asserts that print both sides and keep going, and a
 * summary line "N passed, N failed" that CI and meson read. A test binary
 * exits 0 when nothing failed, 77 when it called TEST_SKIP().
 *
 *   static void test_x(void) { CHECK_EQ_INT(f(), 3); }
 *   int main(void) { RUN(test_x); return test_summary(); }
 */
#ifndef GPUPROF_TEST_H
#define GPUPROF_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failed_checks, test_cases_passed, test_cases_failed;
static int test_case_failed;
static const char *test_case_name = "";

#define TEST_FAIL_AT(...)                                                                          \
	do {                                                                                       \
		fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, test_case_name);                \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		test_failed_checks++;                                                              \
		test_case_failed = 1;                                                              \
	} while (0)

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			TEST_FAIL_AT("CHECK(%s) failed", #cond);                                   \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                                \
		if (_a != _b)                                                                      \
			TEST_FAIL_AT("%s == %s: %lld != %lld", #a, #b, _a, _b);                    \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b);                                   \
		if (_a != _b)                                                                      \
			TEST_FAIL_AT("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, _a, _b);         \
	} while (0)

#define CHECK_NEAR(a, b, eps)                                                                      \
	do {                                                                                       \
		double _a = (double)(a), _b = (double)(b);                                         \
		if (!(_a - _b <= (eps) && _b - _a <= (eps)))                                       \
			TEST_FAIL_AT("%s ~= %s: %.9g vs %.9g (eps %g)", #a, #b, _a, _b,            \
				     (double)(eps));                                               \
	} while (0)

#define CHECK_STREQ(a, b)                                                                          \
	do {                                                                                       \
		const char *_a = (a), *_b = (b);                                                   \
		if (!_a || !_b || strcmp(_a, _b) != 0)                                             \
			TEST_FAIL_AT("%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)",     \
				     _b ? _b : "(null)");                                          \
	} while (0)

/* Stop the whole binary as skipped (exit 77), with a reason. */
#define TEST_SKIP(...)                                                                             \
	do {                                                                                       \
		fprintf(stderr, "SKIP: ");                                                         \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(77);                                                                          \
	} while (0)

#define RUN(fn)                                                                                    \
	do {                                                                                       \
		test_case_name = #fn;                                                              \
		test_case_failed = 0;                                                              \
		fn();                                                                              \
		if (test_case_failed) {                                                            \
			test_cases_failed++;                                                       \
			fprintf(stderr, "FAIL %s\n", #fn);                                         \
		} else {                                                                           \
			test_cases_passed++;                                                       \
			fprintf(stderr, "ok   %s\n", #fn);                                         \
		}                                                                                  \
	} while (0)

static inline int test_summary(void)
{
	printf("%d passed, %d failed\n", test_cases_passed, test_cases_failed);
	return test_cases_failed ? 1 : 0;
}

#endif
