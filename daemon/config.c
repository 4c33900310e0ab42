// SPDX-License-Identifier: MIT
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof-build.h"
#include "cupti_abi.h" /* GPI_SOCKET_DEFAULT */
#include "duration.h"
#include "alloc/bigalloc.h" /* BIGALLOC_CACHE_DEFAULT */

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s", GPUPROF_DEFAULT_SOCKET);
	cfg->socket_mode = 0660;
	snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", GPUPROF_DEFAULT_STATE_DIR);
	cfg->store_budget_bytes = 64u << 20;
	cfg->capture_max_bytes = 256u << 20;
	cfg->jobs_max_bytes = (size_t)1 << 30; /* half the unit's MemoryMax=2G */
	cfg->analysis_cache_bytes = 512u << 20;
	cfg->graph_cache_bytes = 256u << 20;
	cfg->analysis_scratch_bytes = 256u << 20;
	cfg->captures_max = 256;
	/* One uid: an eighth of the captures, a quarter of the connections,
	 * half the job slots; root keeps a sixteenth, an eighth and one. */
	cfg->user_captures = 32;
	cfg->reserved_captures = 16;
	cfg->user_disk_bytes = (uint64_t)4 << 30;
	cfg->user_clients = 16;
	cfg->reserved_clients = 8;
	cfg->user_jobs = 2;
	cfg->reserved_jobs = 1;
	cfg->persist_queue = 16;
	cfg->persist_queue_bytes = 256u << 20;
	cfg->sample_freq_hz = 49;
	cfg->stack_bytes = 16384;
	cfg->gpu_stack_bytes = 65536;
	cfg->unwind_max_bytes = 128u << 20;
	cfg->python_max_bytes = 32u << 20;
	cfg->python_frames = true;
	cfg->cpu_sampling = true;
	cfg->demangle = true;
	cfg->sym_lines = true;
	cfg->gpu_jobs_pending = 4096;
	cfg->gpu_stack_sample = 32;
	cfg->gpu_watcher = CONFIG_GPU_WATCHER_AUTO;
	cfg->max_msg_bytes = 1u << 20;
	cfg->max_conn_out_bytes = 4u << 20;
	cfg->max_nesting = 32;
	cfg->max_clients = 64;
	cfg->idle_timeout_ms = 60000;
	cfg->idle_trim_ms = 10000;
	cfg->request_timeout_ms = 10000;
	cfg->io_timeout_ms = 30000;
	cfg->max_jobs = 4;
	cfg->import_max_bytes = (size_t)8 << 30;
	cfg->verbosity = 0;
	cfg->xe.rows = 1u << 18;
	cfg->xe.deferred = 65536;
	cfg->xe.kernels = 65536;
	cfg->xe.interval_ns = 100000000ull;
	cfg->xe.oa = true;
	cfg->metrics.top = 10;
	snprintf(cfg->cupti.socket, sizeof(cfg->cupti.socket), "%s", GPI_SOCKET_DEFAULT);
	cfg->cupti.max_peers = 256;
	cfg->cupti.user_peers = 64;
	cfg->cupti.peer_rate = 200000;
	cfg->cupti.peer_strings = 4u << 20;
	cfg->cupti.peer_cubin_bytes = (size_t)64 << 20;
	cfg->cupti.cubin_cache_bytes = (size_t)256 << 20;
	cfg->cupti.hello_timeout_ms = 10000;
	config_push_defaults(&cfg->push);
}

int config_parse_size(const char *text, size_t *out)
{
	if (!text || !isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (shift && v > (SIZE_MAX >> shift))
		return -ERANGE;
	*out = (size_t)(v << shift);
	return 0;
}

static int parse_uint(const char *v, unsigned long long max, unsigned long long *out)
{
	if (!isdigit((unsigned char)*v))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long n = strtoull(v, &end, 0);
	if (errno == ERANGE || n > max)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = n;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_ms(const char *v, unsigned *out)
{
	uint64_t ms;
	int r = duration_parse_ms(v, &ms);
	if (r < 0)
		return r;
	if (ms > UINT32_MAX)
		return -ERANGE;
	*out = (unsigned)ms;
	return 0;
}

/* access.admin_group: a group name or a numeric gid; "none" (the default)
 * or "" disables it. A name is resolved once, here: the daemon must not
 * depend on NSS (a remote directory) when it decides on a connection. */
static int parse_group(const char *v, struct config *cfg)
{
	unsigned long long n;

	if (!*v || !strcmp(v, "none")) {
		cfg->admin_group_set = false;
		return 0;
	}
	if (isdigit((unsigned char)*v)) {
		/* (gid_t)-1 is "no group" to the kernel, never a real one */
		int r = parse_uint(v, (gid_t)-2, &n);
		if (r < 0)
			return r;
		cfg->admin_gid = (gid_t)n;
		cfg->admin_group_set = true;
		return 0;
	}
	struct group gr, *res = NULL;
	char buf[16384];
	if (getgrnam_r(v, &gr, buf, sizeof(buf), &res) != 0 || !res)
		return -EINVAL;
	cfg->admin_gid = res->gr_gid;
	cfg->admin_group_set = true;
	return 0;
}

/* xe.* keys (docs/operations.md); the ranges keep tables allocatable. */
static int set_xe_key(struct config_xe *x, const char *key, const char *v)
{
	unsigned long long n;
	uint64_t ms;
	int r;

	if (!strcmp(key, "xe.sample_rate")) {
		if (!strcmp(v, "slowest") || !strcmp(v, "fastest")) {
			x->sample_rate = v[0] == 's' ? CONFIG_XE_RATE_SLOWEST
						     : CONFIG_XE_RATE_FASTEST;
			return 0;
		}
		/* GPU cycles between samples: the kernel takes 251 x 1..7 */
		r = parse_uint(v, 1757, &n);
		if (r == 0 && n < 251)
			return -ERANGE;
		x->sample_rate = r ? x->sample_rate : n;
		return r;
	}
	if (!strcmp(key, "xe.wait_num_reports")) {
		if (!strcmp(v, "auto")) {
			x->wait_num_reports = 0;
			return 0;
		}
		r = parse_uint(v, 1u << 24, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		x->wait_num_reports = r ? x->wait_num_reports : (uint32_t)n;
		return r;
	}
	if (!strcmp(key, "xe.rows") || !strcmp(key, "xe.deferred") || !strcmp(key, "xe.kernels")) {
		uint32_t *dst = key[3] == 'r'	? &x->rows
				: key[3] == 'd' ? &x->deferred
						: &x->kernels;

		r = parse_uint(v, 1u << 22, &n);
		if (r == 0 && n < 16)
			return -ERANGE;
		*dst = r ? *dst : (uint32_t)n;
		return r;
	}
	if (!strcmp(key, "xe.interval") || !strcmp(key, "xe.oa_period")) {
		bool iv = key[3] == 'i';

		if (!iv && !strcmp(v, "auto")) {
			x->oa_period_ns = 0;
			return 0;
		}
		r = duration_parse_ms(v, &ms);
		if (r < 0)
			return r;
		if (ms < 1 || ms > 10000)
			return -ERANGE;
		*(iv ? &x->interval_ns : &x->oa_period_ns) = ms * 1000000ull;
		return 0;
	}
	if (!strcmp(key, "xe.oa"))
		return parse_bool(v, &x->oa);
	if (!strcmp(key, "xe.submit_hook")) {
		if (!strcmp(v, "auto"))
			x->submit_hook = CONFIG_XE_HOOK_AUTO;
		else if (!strcmp(v, "on"))
			x->submit_hook = CONFIG_XE_HOOK_ON;
		else if (!strcmp(v, "off"))
			x->submit_hook = CONFIG_XE_HOOK_OFF;
		else
			return -EINVAL;
		return 0;
	}
	return -ENOKEY;
}

/* metrics.* keys; the address itself is parsed when the endpoint binds
 * it (metrics/listen.c), which names what was wrong. */
static int set_metrics_key(struct config_metrics *m, const char *key, const char *v)
{
	unsigned long long n;
	int r;

	if (!strcmp(key, "metrics.listen")) {
		if (strlen(v) >= sizeof(m->listen))
			return -EINVAL;
		strcpy(m->listen, strcmp(v, "off") ? v : "");
		return 0;
	}
	if (!strcmp(key, "metrics.per_process"))
		return parse_bool(v, &m->per_process);
	if (!strcmp(key, "metrics.per_process_gpu"))
		return parse_bool(v, &m->per_process_gpu);
	if (!strcmp(key, "metrics.bpf_stats"))
		return parse_bool(v, &m->bpf_stats);
	if (!strcmp(key, "metrics.top")) {
		r = parse_uint(v, 1000, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		m->top = r ? m->top : (unsigned)n;
		return r;
	}
	return -ENOKEY;
}

/* cupti.* keys (docs/operations.md) */
static int set_cupti_key(struct config_cupti *c, const char *key, const char *v)
{
	unsigned long long n;
	uint64_t ms;
	int r;

	if (!strcmp(key, "cupti.socket")) {
		if (!strcmp(v, "off"))
			v = "";
		if (strlen(v) >= sizeof(c->socket) || (v[0] && v[0] != '/'))
			return -EINVAL;
		strcpy(c->socket, v);
		return 0;
	}
	if (!strcmp(key, "cupti.max_peers") || !strcmp(key, "cupti.user_peers")) {
		unsigned *dst = key[6] == 'm' ? &c->max_peers : &c->user_peers;

		r = parse_uint(v, 65536, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		*dst = r ? *dst : (unsigned)n;
		return r;
	}
	if (!strcmp(key, "cupti.peer_rate")) {
		r = parse_uint(v, 100000000, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		c->peer_rate = r ? c->peer_rate : (uint32_t)n;
		return r;
	}
	if (!strcmp(key, "cupti.peer_strings")) {
		size_t b;

		r = config_parse_size(v, &b);
		if (r == 0 && (b < 4096 || b > ((size_t)1 << 30)))
			return -ERANGE;
		c->peer_strings = r ? c->peer_strings : b;
		return r;
	}
	if (!strcmp(key, "cupti.peer_cubin_bytes") || !strcmp(key, "cupti.cubin_cache_bytes")) {
		size_t *dst = key[6] == 'p' ? &c->peer_cubin_bytes : &c->cubin_cache_bytes;
		size_t b;

		/* 0: no cubins kept (PC samples then print offsets) */
		r = config_parse_size(v, &b);
		if (r == 0 && b > ((size_t)4 << 30))
			return -ERANGE;
		*dst = r ? *dst : b;
		return r;
	}
	if (!strcmp(key, "cupti.nvdisasm")) {
		if (strlen(v) >= sizeof(c->nvdisasm) || (v[0] && v[0] != '/' && strcmp(v, "off")))
			return -EINVAL;
		strcpy(c->nvdisasm, v);
		return 0;
	}
	if (!strcmp(key, "cupti.hello_timeout")) {
		r = duration_parse_ms(v, &ms);
		if (r < 0)
			return r;
		if (ms < 100 || ms > 600000)
			return -ERANGE;
		c->hello_timeout_ms = (uint32_t)ms;
		return 0;
	}
	return -ENOKEY;
}

/* Per-uid caps (1 and up), privileged reserves (0 and up) and the
 * persist queue, all counts. */
static int set_quota_key(struct config *cfg, const char *key, const char *v)
{
	const struct {
		const char *key;
		unsigned min, max;
		unsigned *dst;
	} keys[] = {
		{"limits.user_captures", 1, 1000000, &cfg->user_captures},
		{"limits.reserved_captures", 0, 1000000, &cfg->reserved_captures},
		{"limits.user_clients", 1, 4096, &cfg->user_clients},
		{"limits.reserved_clients", 0, 4096, &cfg->reserved_clients},
		{"limits.user_jobs", 1, 64, &cfg->user_jobs},
		{"limits.reserved_jobs", 0, 64, &cfg->reserved_jobs},
		{"limits.persist_queue", 0, 100000, &cfg->persist_queue},
	};
	unsigned long long n;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(key, keys[i].key) != 0)
			continue;
		int r = parse_uint(v, keys[i].max, &n);
		if (r < 0)
			return r;
		if (n < keys[i].min)
			return -ERANGE;
		*keys[i].dst = (unsigned)n;
		return 0;
	}
	return -ENOKEY;
}

static int set_key(struct config *cfg, const char *key, const char *v)
{
	unsigned long long n;
	int r;

	if (!strcmp(key, "socket")) {
		if (strlen(v) >= sizeof(cfg->socket_path) || v[0] != '/')
			return -EINVAL;
		strcpy(cfg->socket_path, v);
		return 0;
	}
	if (!strcmp(key, "socket_mode")) {
		char *end;
		errno = 0;
		long m = strtol(v, &end, 8);
		if (*end || m < 0 || m > 0777)
			return -EINVAL;
		cfg->socket_mode = (unsigned)m;
		return 0;
	}
	if (!strcmp(key, "state_dir")) {
		if (strlen(v) >= sizeof(cfg->state_dir) || v[0] != '/')
			return -EINVAL;
		strcpy(cfg->state_dir, v);
		return 0;
	}
	if (!strcmp(key, "memory.store_budget")) {
		r = config_parse_size(v, &cfg->store_budget_bytes);
		if (r == 0 && cfg->store_budget_bytes < (64u << 10))
			return -ERANGE;
		return r;
	}
	if (!strcmp(key, "memory.capture_max"))
		return config_parse_size(v, &cfg->capture_max_bytes);
	if (!strcmp(key, "memory.jobs_max"))
		return config_parse_size(v, &cfg->jobs_max_bytes);
	if (!strcmp(key, "memory.python_max")) {
		r = config_parse_size(v, &cfg->python_max_bytes);
		if (r == 0 && cfg->python_max_bytes < (1u << 20))
			return -ERANGE;
		return r;
	}
	if (!strcmp(key, "sampling.python"))
		return parse_bool(v, &cfg->python_frames);
	if (!strcmp(key, "memory.unwind_max")) {
		r = config_parse_size(v, &cfg->unwind_max_bytes);
		if (r == 0 && cfg->unwind_max_bytes < (1u << 20))
			return -ERANGE;
		return r;
	}
	if (!strcmp(key, "sampling.stack_bytes") || !strcmp(key, "gpu.stack_bytes")) {
		size_t b;
		/* what BPF can copy (bpf/ustack_abi.h), whole 8-byte words */
		r = config_parse_size(v, &b);
		if (r == 0 && (b > 65536 || b % 8))
			return -ERANGE;
		if (r == 0 && key[0] == 's')
			cfg->stack_bytes = (uint32_t)b;
		else if (r == 0)
			cfg->gpu_stack_bytes = (uint32_t)b;
		return r;
	}
	if (!strcmp(key, "memory.idle_trim"))
		return parse_ms(v, &cfg->idle_trim_ms);
	if (!strcmp(key, "analysis.cache_bytes"))
		return config_parse_size(v, &cfg->analysis_cache_bytes);
	if (!strcmp(key, "analysis.graph_cache_bytes"))
		return config_parse_size(v, &cfg->graph_cache_bytes);
	if (!strcmp(key, "analysis.scratch_bytes"))
		return config_parse_size(v, &cfg->analysis_scratch_bytes);
	if (!strcmp(key, "limits.captures")) {
		r = parse_uint(v, 1000000, &n);
		cfg->captures_max = r ? cfg->captures_max : (size_t)n;
		return r;
	}
	if (!strcmp(key, "memory.persist_queue"))
		return config_parse_size(v, &cfg->persist_queue_bytes);
	if (!strcmp(key, "limits.user_disk")) {
		size_t b;
		r = config_parse_size(v, &b);
		if (r == 0 && b == 0)
			return -ERANGE;
		cfg->user_disk_bytes = r ? cfg->user_disk_bytes : b;
		return r;
	}
	r = set_quota_key(cfg, key, v);
	if (r != -ENOKEY)
		return r;
	if (!strcmp(key, "sampling.cpu"))
		return parse_bool(v, &cfg->cpu_sampling);
	if (!strcmp(key, "symbols.demangle"))
		return parse_bool(v, &cfg->demangle);
	if (!strcmp(key, "symbols.lines"))
		return parse_bool(v, &cfg->sym_lines);
	if (!strcmp(key, "gpu_jobs.pending")) {
		r = parse_uint(v, 1u << 24, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		cfg->gpu_jobs_pending = r ? cfg->gpu_jobs_pending : (size_t)n;
		return r;
	}
	if (!strcmp(key, "sampling.cpu_frequency")) {
		r = parse_uint(v, 100000, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		cfg->sample_freq_hz = r ? cfg->sample_freq_hz : (uint32_t)n;
		return r;
	}
	if (!strcmp(key, "gpu.stack_sample")) {
		r = parse_uint(v, 1000000, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		if (r == 0)
			cfg->gpu_stack_sample = (uint32_t)n;
		return r;
	}
	if (!strcmp(key, "gpu.watcher")) {
		if (!strcmp(v, "auto"))
			cfg->gpu_watcher = CONFIG_GPU_WATCHER_AUTO;
		else if (!strcmp(v, "sys_exit"))
			cfg->gpu_watcher = CONFIG_GPU_WATCHER_SYS_EXIT;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(key, "limits.max_message")) {
		r = config_parse_size(v, &cfg->max_msg_bytes);
		if (r == 0 && (cfg->max_msg_bytes < 1024 || cfg->max_msg_bytes > (1u << 20)))
			return -ERANGE;
		return r;
	}
	if (!strcmp(key, "limits.max_output_buffer"))
		return config_parse_size(v, &cfg->max_conn_out_bytes);
	if (!strcmp(key, "limits.max_nesting")) {
		r = parse_uint(v, 32, &n);
		if (r == 0 && n < 2)
			return -ERANGE;
		cfg->max_nesting = r ? cfg->max_nesting : (int)n;
		return r;
	}
	if (!strcmp(key, "limits.max_clients")) {
		r = parse_uint(v, 4096, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		cfg->max_clients = r ? cfg->max_clients : (unsigned)n;
		return r;
	}
	if (!strcmp(key, "limits.idle_timeout"))
		return parse_ms(v, &cfg->idle_timeout_ms);
	if (!strcmp(key, "limits.request_timeout"))
		return parse_ms(v, &cfg->request_timeout_ms);
	if (!strcmp(key, "limits.io_timeout"))
		return parse_ms(v, &cfg->io_timeout_ms);
	if (!strcmp(key, "limits.max_jobs")) {
		r = parse_uint(v, 64, &n);
		if (r == 0 && n == 0)
			return -ERANGE;
		cfg->max_jobs = r ? cfg->max_jobs : (unsigned)n;
		return r;
	}
	if (!strcmp(key, "limits.import_max"))
		return config_parse_size(v, &cfg->import_max_bytes);
	if (!strcmp(key, "access.admin_group"))
		return parse_group(v, cfg);
	if (!strcmp(key, "comm.params")) { /* checked as JSON by analyze.comm */
		if (strlen(v) >= sizeof(cfg->comm_params) || v[0] != '{')
			return -EINVAL;
		strcpy(cfg->comm_params, v);
		return 0;
	}
	if (!strncmp(key, "xe.", 3))
		return set_xe_key(&cfg->xe, key, v);
	if (!strncmp(key, "metrics.", 8))
		return set_metrics_key(&cfg->metrics, key, v);
	if (!strncmp(key, "cupti.", 6))
		return set_cupti_key(&cfg->cupti, key, v);
	if (!strncmp(key, "push.", 5))
		return config_push_set(&cfg->push, key, v);
	if (!strcmp(key, "log.verbosity")) {
		r = parse_uint(v, 2, &n);
		cfg->verbosity = r ? cfg->verbosity : (int)n;
		return r;
	}
	return -ENOKEY;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int config_load(struct config *cfg, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		int r = -errno;
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return r;
	}
	char line[8192];
	unsigned lineno = 0;
	int r = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%u: line too long", path, lineno);
			r = -EINVAL;
			break;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *s = trim(line);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			if (err)
				snprintf(err, errlen, "%s:%u: expected 'key = value'", path,
					 lineno);
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		r = set_key(cfg, key, val);
		if (r < 0) {
			if (err)
				snprintf(err, errlen, "%s:%u: %s '%s'", path, lineno,
					 r == -ENOKEY ? "unknown key" : "bad value for", key);
			r = -EINVAL;
			break;
		}
	}
	fclose(f);
	return r;
}
