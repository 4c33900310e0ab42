// SPDX-License-Identifier: MIT
/*
 * push.* configuration keys (docs/operations.md, "Continuous profiles"),
 * read by daemon/push/. Secrets are never values here: only the paths of
 * files holding them, so the config file can stay world-readable like any
 * other in /etc. "none" (or nothing) turns a string key off.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

void config_push_defaults(struct config_push *p)
{
	memset(p, 0, sizeof(*p));
	p->interval_ms = 15000;
	snprintf(p->app_name, sizeof(p->app_name), "gpuprof");
	p->queue_max = 16;
	p->queue_max_bytes = 32u << 20;
	p->timeout_ms = 10000;
	p->retry_max_ms = 60000;
	p->dir_max_bytes = 256u << 20;
}

/* Printable ASCII without spaces: what goes into a URL or a header
 * verbatim must not smuggle a CR/LF or a second field. */
static bool plain(const char *v)
{
	for (; *v; v++)
		if (*v <= ' ' || *v > '~')
			return false;
	return true;
}

static int set_str(char *dst, size_t cap, const char *v)
{
	if (!strcmp(v, "none"))
		v = "";
	if (strlen(v) >= cap)
		return -ENAMETOOLONG;
	strcpy(dst, v);
	return 0;
}

/* "" (off) or an absolute path. */
static int set_path(char *dst, size_t cap, const char *v)
{
	if (*v && strcmp(v, "none") && (v[0] != '/' || !plain(v)))
		return -EINVAL;
	return set_str(dst, cap, v);
}

/* The application name goes before "{labels}" in Pyroscope's name
 * parameter: letters, digits, '.', '_' and '-' only. */
static int set_app(struct config_push *p, const char *v)
{
	if (!*v)
		return -EINVAL;
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
			return -EINVAL;
	return set_str(p->app_name, sizeof(p->app_name), v);
}

/* http:// or https:// only, and no user:password@ (credentials belong in
 * the auth files, and a URL is shown in logs). */
static int set_url(struct config_push *p, const char *v)
{
	if (!*v || !strcmp(v, "none"))
		return set_str(p->url, sizeof(p->url), "");
	const char *rest = !strncmp(v, "http://", 7)	? v + 7
			   : !strncmp(v, "https://", 8) ? v + 8
							: NULL;
	if (!rest || !*rest || !plain(v) || strchr(v, '#'))
		return -EINVAL;
	size_t host = strcspn(rest, "/?");
	if (memchr(rest, '@', host))
		return -EINVAL;
	return set_str(p->url, sizeof(p->url), v);
}

static int set_ms(uint32_t *dst, const char *v, uint64_t min, uint64_t max)
{
	uint64_t ms;
	int r = duration_parse_ms(v, &ms);
	if (r < 0)
		return r;
	if (ms < min || ms > max)
		return -ERANGE;
	*dst = (uint32_t)ms;
	return 0;
}

int config_push_set(struct config_push *p, const char *key, const char *v)
{
	size_t b;
	int r;

	if (!strcmp(key, "push.url"))
		return set_url(p, v);
	if (!strcmp(key, "push.interval"))
		return set_ms(&p->interval_ms, v, 1000, 3600000);
	if (!strcmp(key, "push.app_name"))
		return set_app(p, v);
	if (!strcmp(key, "push.bearer_token_file"))
		return set_path(p->bearer_token_file, sizeof(p->bearer_token_file), v);
	if (!strcmp(key, "push.basic_auth_file"))
		return set_path(p->basic_auth_file, sizeof(p->basic_auth_file), v);
	if (!strcmp(key, "push.ca_file"))
		return set_path(p->ca_file, sizeof(p->ca_file), v);
	if (!strcmp(key, "push.tenant"))
		return plain(v) ? set_str(p->tenant, sizeof(p->tenant), v) : -EINVAL;
	if (!strcmp(key, "push.queue_max")) {
		char *end;
		errno = 0;
		unsigned long n = isdigit((unsigned char)*v) ? strtoul(v, &end, 10) : 0;
		if (!isdigit((unsigned char)*v) || *end)
			return -EINVAL;
		if (errno || n < 1 || n > 10000)
			return -ERANGE;
		p->queue_max = (uint32_t)n;
		return 0;
	}
	bool q = !strcmp(key, "push.queue_max_bytes");
	if (q || !strcmp(key, "push.dir_max_bytes")) {
		r = config_parse_size(v, &b);
		if (r == 0 && b < (64u << 10))
			return -ERANGE;
		if (r == 0)
			*(q ? &p->queue_max_bytes : &p->dir_max_bytes) = b;
		return r;
	}
	if (!strcmp(key, "push.timeout"))
		return set_ms(&p->timeout_ms, v, 100, 600000);
	if (!strcmp(key, "push.retry_max"))
		return set_ms(&p->retry_max_ms, v, 100, 3600000);
	if (!strcmp(key, "push.dir"))
		return set_path(p->dir, sizeof(p->dir), v);
	return -ENOKEY;
}
