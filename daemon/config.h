/* SPDX-License-Identifier: MIT */
/*
 * gpuprofd configuration: compiled-in defaults, then the config file
 * ("key = value" lines, '#' comments; docs/operations.md lists the keys),
 * then the environment ($GPUPROF_SOCKET), then command-line options.
 */
#ifndef GPUPROF_CONFIG_H
#define GPUPROF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct config {
	char socket_path[108]; /* sun_path size */
	unsigned socket_mode; /* when gpuprofd binds the socket itself */
	char state_dir[4096];
	size_t store_budget_bytes; /* memory.store_budget */
	size_t capture_max_bytes; /* memory.capture_max: per capture in memory / on disk */
	size_t captures_max; /* limits.captures: persisted captures kept */
	uint32_t sample_freq_hz; /* sampling.cpu_frequency */
	bool cpu_sampling; /* sampling.cpu */
	size_t max_msg_bytes; /* limits.max_message */
	size_t max_conn_out_bytes; /* limits.max_output_buffer: per-client pending replies */
	int max_nesting; /* limits.max_nesting */
	unsigned max_clients; /* limits.max_clients */
	unsigned idle_timeout_ms; /* limits.idle_timeout */
	unsigned request_timeout_ms; /* limits.request_timeout: a partial message this old */
	unsigned io_timeout_ms; /* limits.io_timeout: a passed fd making no progress */
	unsigned max_jobs; /* limits.max_jobs: concurrent worker jobs */
	size_t import_max_bytes; /* limits.import_max: uncompressed trace bytes */
	int verbosity; /* 0 = warnings, 1 = info, 2 = debug */
	/* comm.params: JSON object of analyze.comm defaults (link_bandwidth,
	 * tags, tp/pp/dp/ep, iteration); request params win. "" = none. */
	char comm_params[4096];
};

void config_defaults(struct config *cfg);

/*
 * Read a config file. Unknown keys and bad values are errors naming the
 * line: err (if not NULL) receives a message. Returns 0 or -errno
 * (-ENOENT for a missing file, which callers may ignore for the default
 * path).
 */
int config_load(struct config *cfg, const char *path, char *err, size_t errlen);

/* Parse "64M", "1G", "4096", "512K" into bytes. */
int config_parse_size(const char *text, size_t *out);

#endif
