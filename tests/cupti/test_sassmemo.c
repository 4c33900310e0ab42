// SPDX-License-Identifier: MIT
/*
 * The SASS texts continuous profiles keep between windows
 * (daemon/collect/cupti_sassmemo.c): texts and nones by (cubin, function,
 * offset), a none asked again after CUPTI_SASS_MEMO_RETRY windows, and the
 * bound on keys (emptied when full).
 */
#include <stdio.h>

#include "capture/capsass.h"
#include "cupti_sassmemo.h"
#include "test.h"

static void test_find_add(void)
{
	struct cupti_sass_memo *m = NULL;
	const char *t = "x";

	CHECK_EQ_INT(cupti_sass_memo_new(&m), 0);
	if (!m)
		return;
	cupti_sass_memo_next(m);
	CHECK(!cupti_sass_memo_find(m, 7, "gemm", 0x40, &t));
	CHECK_EQ_INT(cupti_sass_memo_add(m, 7, "gemm", 0x40, "LDG.E R2"), 0);
	CHECK_EQ_INT(cupti_sass_memo_add(m, 7, "gemm", 0x50, NULL), 0);
	CHECK(cupti_sass_memo_find(m, 7, "gemm", 0x40, &t));
	CHECK_STREQ(t, "LDG.E R2");
	/* another cubin, function or offset is another key */
	CHECK(!cupti_sass_memo_find(m, 8, "gemm", 0x40, &t));
	CHECK(!cupti_sass_memo_find(m, 7, "relu", 0x40, &t));
	CHECK(cupti_sass_memo_find(m, 7, "gemm", 0x50, &t));
	CHECK(t == NULL);
	/* a none is asked again after the retry windows; a text stays */
	for (int i = 0; i < CUPTI_SASS_MEMO_RETRY; i++)
		cupti_sass_memo_next(m);
	CHECK(!cupti_sass_memo_find(m, 7, "gemm", 0x50, &t));
	CHECK(cupti_sass_memo_find(m, 7, "gemm", 0x40, &t));
	CHECK_EQ_INT(cupti_sass_memo_add(m, 7, "gemm", 0x50, "BAR.SYNC"), 0);
	CHECK(cupti_sass_memo_find(m, 7, "gemm", 0x50, &t) && t && !strcmp(t, "BAR.SYNC"));
	cupti_sass_memo_free(m);
	cupti_sass_memo_free(NULL);
}

/* Past CAPSASS_MAX_ENTRIES keys the memo starts again empty. */
static void test_bound(void)
{
	struct cupti_sass_memo *m = NULL;
	const char *t;
	char text[32];

	CHECK_EQ_INT(cupti_sass_memo_new(&m), 0);
	if (!m)
		return;
	for (uint32_t pc = 0; pc < CAPSASS_MAX_ENTRIES; pc++) {
		snprintf(text, sizeof(text), "I%u", pc);
		if (cupti_sass_memo_add(m, 1, "k", pc, text) < 0)
			break;
	}
	CHECK(cupti_sass_memo_find(m, 1, "k", 0, &t) && !strcmp(t, "I0"));
	CHECK(cupti_sass_memo_find(m, 1, "k", CAPSASS_MAX_ENTRIES - 1, &t));
	CHECK_EQ_INT(cupti_sass_memo_add(m, 1, "k", CAPSASS_MAX_ENTRIES, "last"), 0);
	CHECK(!cupti_sass_memo_find(m, 1, "k", 0, &t));
	CHECK(cupti_sass_memo_find(m, 1, "k", CAPSASS_MAX_ENTRIES, &t) && !strcmp(t, "last"));
	cupti_sass_memo_free(m);
}

int main(void)
{
	RUN(test_find_add);
	RUN(test_bound);
	return test_summary();
}
