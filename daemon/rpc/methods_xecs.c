// SPDX-License-Identifier: MIT
/*
 * xe.batch and xe.zebin (methods_xe.h): a file passed as a descriptor is
 * read in a job (bounded by size and limits.io_timeout), then handed to
 * the xe collector on the loop, which owns it:
 *   xe.batch  a batch-buffer dump to the host parser (docs/gpu-cs.md);
 *             KSPs reach the kernel table when the collector has a
 *             stream, otherwise they are only counted;
 *   xe.zebin  a NEO debug zebin (docs/xe.md): its kernels to the kernel
 *             table (when there is a stream) and their binaries to the
 *             collector's store for instruction text.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/registry.h"
#include "cs.h"
#include "gpd.h"
#include "jobs.h"
#include "json.h"
#include "methods.h"
#include "xe_collector.h"
#include "zebin.h"

/* The host parser keeps at most 64 MiB of buffers; a dump adds headers. */
#define XE_BATCH_MAX_BYTES ((64u << 20) + (1u << 20))

struct fd_job;
/* Feed the bytes read to the collector c and reply (loop thread). */
typedef void (*fd_job_apply)(struct fd_job *j, struct collector *c);

struct fd_job {
	struct rpc_req *req;
	struct gpd *g;
	int fd;
	uint32_t io_timeout_ms;
	size_t max;	  /* bytes accepted */
	const char *what; /* "batch-buffer dump" */
	fd_job_apply apply;
	uint8_t *buf;
	size_t len;
	int err;	      /* negative errno of the read */
	uint32_t pid;	      /* xe.zebin: owner of the kernels (0 none) */
	char zebin_file[256]; /* xe.zebin: the kernels' file frame */
};

static void fd_job_read(void *arg)
{
	struct fd_job *j = arg;
	size_t cap = 1 << 16;

	j->buf = malloc(cap);
	if (!j->buf) {
		j->err = -ENOMEM;
		return;
	}
	for (;;) {
		ssize_t n;

		if (j->len == cap) {
			uint8_t *nb;

			if (cap > j->max) {
				j->err = -EFBIG;
				return;
			}
			nb = realloc(j->buf, cap * 2);
			if (!nb) {
				j->err = -ENOMEM;
				return;
			}
			j->buf = nb;
			cap *= 2;
		}
		n = fdio_read(j->fd, j->buf + j->len, cap - j->len, (int)j->io_timeout_ms);
		if (n < 0) {
			j->err = (int)n;
			return;
		}
		if (!n)
			break;
		j->len += (size_t)n;
	}
	if (j->len > j->max)
		j->err = -EFBIG;
}

static void fd_job_done(void *arg)
{
	struct fd_job *j = arg;
	struct collector *c = collectors_find(j->g, "xe");

	close(j->fd);
	if (j->err == -EFBIG) {
		rpc_error(j->req, GPUPROF_ERR_TOO_LARGE, NULL, "%s over %zu MiB", j->what,
			  j->max >> 20);
	} else if (j->err == -ETIMEDOUT) {
		rpc_error(j->req, GPUPROF_ERR_IO, NULL, "reading the %s: no data for %u ms",
			  j->what, j->io_timeout_ms);
	} else if (j->err) {
		rpc_error_errno(j->req, j->err, "reading the file");
	} else if (!c) {
		rpc_error(j->req, GPUPROF_ERR_UNAVAILABLE, NULL,
			  "the xe collector is not built in");
	} else {
		j->apply(j, c);
	}
	free(j->buf);
	free(j);
}

static void batch_apply(struct fd_job *j, struct collector *c)
{
	struct xe_cs *cs = xe_collector_cs(c);
	char why[200];
	cJSON *res;
	int n;

	if (!cs) {
		rpc_error(j->req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
	} else if ((n = xe_cs_load(cs, xe_collector_core(c), j->buf, j->len, why, sizeof(why))) <
		   0) {
		if (n == -EBADMSG)
			rpc_error(j->req, GPUPROF_ERR_BAD_INPUT, NULL, "%s", why);
		else
			rpc_error_errno(j->req, n, "parsing the dump");
	} else {
		res = cJSON_CreateObject();
		cJSON_AddNumberToObject(res, "submits", n);
		xe_cs_status(cs, res);
		rpc_reply(j->req, res);
	}
}

static void zebin_apply(struct fd_job *j, struct collector *c)
{
	struct xe_kbin *kb = xe_collector_kbin(c);
	struct xe *x = xe_collector_core(c);
	struct xe_kbin_stats st;
	struct xe_zebin z;
	char why[200];
	cJSON *res;
	int n;

	if (!kb) {
		rpc_error(j->req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	n = xe_zebin_parse(j->buf, j->len, &z, why, sizeof(why));
	if (n == -EBADMSG) {
		rpc_error(j->req, GPUPROF_ERR_BAD_INPUT, NULL, "%s", why);
		return;
	} else if (n < 0) {
		rpc_error_errno(j->req, n, "parsing the zebin");
		return;
	}
	n = xe_zebin_load(x, kb, &z, j->zebin_file, j->pid, 0);
	if (n < 0) {
		rpc_error_errno(j->req, n, "adding the kernels");
	} else {
		res = cJSON_CreateObject();
		cJSON_AddNumberToObject(res, "kernels", n);
		cJSON_AddBoolToObject(res, "kernel_table", x != NULL);
		xe_kbin_stats(kb, &st);
		json_add_u64(res, "binaries", st.kernels);
		json_add_u64(res, "binary_bytes", st.bytes);
		json_add_u64(res, "binaries_dropped", st.dropped);
		rpc_reply(j->req, res);
	}
	xe_zebin_finish(&z);
}

/* Check the request, take its descriptor and read it in a job. */
static void fd_job_submit(struct rpc_req *req, struct fd_job *proto)
{
	struct fd_job *j;
	int fd, r;

	/* The file names pids and feeds the shared kernel table. */
	if (!req->privileged) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL,
			  "%s needs root or the admin group (access.admin_group)", req->method);
		return;
	}
	if (req->nfds != 1) {
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL, "pass the %s as one descriptor: \"fd\": 0",
			  proto->what);
		return;
	}
	fd = rpc_req_take_fd(req, 0);
	if (fd < 0 || fdio_prepare(fd, false) < 0) {
		if (fd >= 0)
			close(fd);
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL, "the descriptor must be open for reading");
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		close(fd);
		rpc_error(req, GPUPROF_ERR_INTERNAL, NULL, "out of memory");
		return;
	}
	*j = *proto;
	j->req = req;
	j->g = req->gpd;
	j->fd = fd;
	j->io_timeout_ms = req->gpd->cfg.io_timeout_ms;
	struct job_owner who = {req->uid, req->privileged};
	r = job_submit(req->gpd, &who, fd_job_read, fd_job_done, j);
	if (r < 0) {
		char why[256];

		close(fd);
		free(j);
		if (r == -EBUSY) {
			job_busy_reason(req->gpd, &who, why, sizeof(why));
			rpc_error(req, GPUPROF_ERR_BUSY, NULL, "%s", why);
		} else
			rpc_error_errno(req, r, "reading the file");
	}
}

void method_xe_batch(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"fd", NULL};

	if (!params_only(req, params, allowed))
		return;
	fd_job_submit(req, &(struct fd_job){.max = XE_BATCH_MAX_BYTES,
					    .what = "batch-buffer dump",
					    .apply = batch_apply});
}

void method_xe_zebin(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"fd", "pid", "file", NULL};
	const cJSON *file = cJSON_GetObjectItemCaseSensitive(params, "file");
	struct fd_job p = {.max = XE_ZEBIN_MAX_FILE, .what = "zebin", .apply = zebin_apply};
	uint64_t pid = 0;

	if (!params_only(req, params, allowed) ||
	    !param_u64(req, params, "pid", false, UINT32_MAX, &pid))
		return;
	if (file && (!cJSON_IsString(file) || strlen(file->valuestring) >= sizeof(p.zebin_file))) {
		rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
			  "\"file\" must be a string of at most %zu bytes",
			  sizeof(p.zebin_file) - 1);
		return;
	}
	p.pid = (uint32_t)pid;
	snprintf(p.zebin_file, sizeof(p.zebin_file), "%s", file ? file->valuestring : "[zebin]");
	fd_job_submit(req, &p);
}
