// SPDX-License-Identifier: MIT
#include "bpf_perm.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT 39

static bool has_cap(uint64_t mask, int bit)
{
	return mask & ((uint64_t)1 << bit);
}

size_t bpf_perm_explain(uint64_t cap_eff, int unpriv_disabled, const char *lockdown, char *buf,
			size_t n)
{
	/* CAP_SYS_ADMIN still stands for both on kernels before 5.8. */
	bool admin = has_cap(cap_eff, CAP_SYS_ADMIN_BIT);
	bool bpf = admin || has_cap(cap_eff, CAP_BPF_BIT);
	bool perfmon = admin || has_cap(cap_eff, CAP_PERFMON_BIT);
	int w = 0;

	if (!n)
		return 0;
	buf[0] = '\0';
	if (!bpf || !perfmon) {
		char knob[64] = "";
		if (unpriv_disabled > 0)
			snprintf(knob, sizeof(knob), " (kernel.unprivileged_bpf_disabled=%d)",
				 unpriv_disabled);
		w = snprintf(buf, n,
			     "permission denied: gpuprofd lacks %s%s%s%s: run it as root or grant "
			     "CAP_BPF and CAP_PERFMON (AmbientCapabilities= in its unit)",
			     bpf ? "" : "CAP_BPF", !bpf && !perfmon ? " and " : "",
			     perfmon ? "" : "CAP_PERFMON", knob);
	} else if (lockdown && *lockdown && strcmp(lockdown, "none") != 0) {
		w = snprintf(buf, n,
			     "permission denied: kernel lockdown is '%s' "
			     "(/sys/kernel/security/lockdown), which refuses BPF tracing: "
			     "boot with lockdown=none or Secure Boot's lockdown disabled",
			     lockdown);
	}
	if (w < 0)
		return 0;
	return (size_t)w < n ? (size_t)w : n - 1;
}

static uint64_t read_cap_eff(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	uint64_t mask = 0;

	if (!f)
		return ~(uint64_t)0; /* unknown: blame nothing */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %" SCNx64, &mask) == 1)
			break;
	fclose(f);
	return mask;
}

static int read_unpriv_disabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/unprivileged_bpf_disabled", "re");
	int v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The file lists every mode with the active one in brackets:
 * "none [integrity] confidentiality". */
static bool read_lockdown(char *mode, size_t n)
{
	FILE *f = fopen("/sys/kernel/security/lockdown", "re");
	char line[128];
	bool ok = false;

	if (!f)
		return false;
	if (fgets(line, sizeof(line), f)) {
		char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
		if (a && b && (size_t)(b - a - 1) < n) {
			memcpy(mode, a + 1, (size_t)(b - a - 1));
			mode[b - a - 1] = '\0';
			ok = true;
		}
	}
	fclose(f);
	return ok;
}

size_t bpf_perm_reason(char *buf, size_t n)
{
	char mode[32];
	bool have_mode = read_lockdown(mode, sizeof(mode));

	return bpf_perm_explain(read_cap_eff(), read_unpriv_disabled(), have_mode ? mode : NULL,
				buf, n);
}
