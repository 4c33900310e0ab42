// SPDX-License-Identifier: MIT
/* bpf_perm_explain(): the permission cause named for each combination of
 * capabilities, kernel.unprivileged_bpf_disabled and lockdown. */
#include <stdint.h>
#include <string.h>

#include "collect/bpf_perm.h"
#include "test.h"

#define CAP(b) ((uint64_t)1 << (b))
#define SYS_ADMIN CAP(21)
#define PERFMON CAP(38)
#define BPF CAP(39)

static void test_root_has_no_permission_cause(void)
{
	char b[200];

	CHECK_EQ_INT(bpf_perm_explain(~(uint64_t)0, 2, NULL, b, sizeof(b)), 0);
	CHECK_STREQ(b, "");
	CHECK_EQ_INT(bpf_perm_explain(BPF | PERFMON, 2, "none", b, sizeof(b)), 0);
	/* before 5.8 CAP_SYS_ADMIN stood for both */
	CHECK_EQ_INT(bpf_perm_explain(SYS_ADMIN, 1, NULL, b, sizeof(b)), 0);
}

static void test_missing_capabilities_named(void)
{
	char b[200];

	CHECK(bpf_perm_explain(0, 2, NULL, b, sizeof(b)) > 0);
	CHECK(strstr(b, "lacks CAP_BPF and CAP_PERFMON") != NULL);
	CHECK(strstr(b, "kernel.unprivileged_bpf_disabled=2") != NULL);
	CHECK(strstr(b, "run it as root") != NULL);
	CHECK(bpf_perm_explain(BPF, 0, NULL, b, sizeof(b)) > 0);
	CHECK(strstr(b, "lacks CAP_PERFMON:") != NULL);
	CHECK(strstr(b, "unprivileged_bpf_disabled") == NULL);
	CHECK(bpf_perm_explain(PERFMON, -1, NULL, b, sizeof(b)) > 0);
	CHECK(strstr(b, "lacks CAP_BPF:") != NULL);
}

static void test_lockdown_named(void)
{
	char b[200];

	CHECK(bpf_perm_explain(BPF | PERFMON, 0, "confidentiality", b, sizeof(b)) > 0);
	CHECK(strstr(b, "lockdown is 'confidentiality'") != NULL);
	CHECK(strstr(b, "/sys/kernel/security/lockdown") != NULL);
}

static void test_small_buffer_truncates(void)
{
	char b[16];

	CHECK_EQ_INT(bpf_perm_explain(0, 2, NULL, b, sizeof(b)), sizeof(b) - 1);
	CHECK_EQ_INT(strlen(b), sizeof(b) - 1);
}

int main(void)
{
	RUN(test_root_has_no_permission_cause);
	RUN(test_missing_capabilities_named);
	RUN(test_lockdown_named);
	RUN(test_small_buffer_truncates);
	return test_summary();
}
