// SPDX-License-Identifier: MIT
/*
 * Configuration from the environment: the library runs inside every CUDA
 * process of a host, so it has no file of its own to read (docs/collectors.md,
 * "NVIDIA", lists the variables).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"

static const struct {
	const char *word;
	uint32_t bits;
} feature_words[] = {
	{"kernel", GPI_F_KERNEL},
	{"memcpy", GPI_F_MEMCPY},
	{"memset", GPI_F_MEMSET},
	{"sync", GPI_F_SYNC | GPI_F_EVENT}, /* the waits, and the event records they wait on */
	{"graph", GPI_F_GRAPH},
	{"api", GPI_F_API},
	{"nvtx", GPI_F_NVTX},
	{"pc", GPI_F_PC}, /* never in "default" or "all": asked for by name */
	{"default", GPI_FEATURES_DEFAULT},
	{"all", GPI_FEATURES_ALL},
	{"none", 0},
};

static int feature_word(const char *w, size_t n, uint32_t *bits)
{
	for (size_t i = 0; i < sizeof(feature_words) / sizeof(feature_words[0]); i++) {
		if (strlen(feature_words[i].word) == n && !strncmp(feature_words[i].word, w, n)) {
			*bits = feature_words[i].bits;
			return 0;
		}
	}
	return -EINVAL;
}

int config_parse_features(const char *s, uint32_t *out)
{
	uint32_t acc = 0, bits;

	while (*s) {
		size_t n = strcspn(s, ", ");

		if (n && feature_word(s, n, &bits))
			return -EINVAL;
		if (n)
			acc |= bits;
		s += n;
		s += strspn(s, ", ");
	}
	*out = acc;
	return 0;
}

unsigned config_env_uint(const char *name, unsigned def, unsigned lo, unsigned hi)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi)
		return def;
	return (unsigned)v;
}

void config_read(struct gpi_config *cfg)
{
	const char *s;

	memset(cfg, 0, sizeof(*cfg));
	s = getenv("GPUPROF_CUPTI");
	cfg->enabled = !(s && (!strcmp(s, "0") || !strcmp(s, "off") || !strcmp(s, "no")));
	cfg->features = GPI_FEATURES_DEFAULT;
	s = getenv("GPUPROF_CUPTI_FEATURES");
	if (s && *s && config_parse_features(s, &cfg->features))
		cfg->features = GPI_FEATURES_DEFAULT; /* a typo must not switch it all off */
	s = getenv(GPI_SOCKET_ENV);
	if (!s || !*s || strlen(s) >= sizeof(cfg->socket))
		s = GPI_SOCKET_DEFAULT;
	strcpy(cfg->socket, s);
	cfg->flush_ms = config_env_uint("GPUPROF_CUPTI_FLUSH_MS", 500, 10, 60000);
	s = getenv("GPUPROF_CUPTI_YIELD");
	cfg->yield = GPI_YIELD_AUTO; /* unset or a typo: the safe default */
	if (s && !strcmp(s, "never"))
		cfg->yield = GPI_YIELD_NEVER;
	else if (s && !strcmp(s, "torch"))
		cfg->yield = GPI_YIELD_TORCH;
	cfg->quiet_ms = config_env_uint("GPUPROF_CUPTI_YIELD_QUIET_MS", 5000, 100, 600000);
	/* out of range or not a number: the default, not "always on" */
	cfg->duty = config_env_uint("GPUPROF_CUPTI_DUTY", GPI_DUTY_DEFAULT, 1, 100);
	cfg->window_ms =
		config_env_uint("GPUPROF_CUPTI_WINDOW_MS", GPI_WINDOW_MS_DEFAULT, 1, 10000);
	/* unset or a typo: keep the subscription, the tested default */
	s = getenv("GPUPROF_CUPTI_IDLE");
	cfg->idle = s && !strcmp(s, "unsubscribe") ? GPI_IDLE_UNSUBSCRIBE : GPI_IDLE_SUBSCRIBED;
}
