// SPDX-License-Identifier: MIT
/*
 * xe.batch (methods_xe.h, docs/gpu-cs.md): a batch-buffer dump passed as a
 * descriptor is read in a job (bounded by size and limits.io_timeout),
 * then fed to the xe collector's host batch-buffer parser on the loop,
 * which owns it. KSPs reach the kernel table when the collector has a
 * stream; otherwise they are only counted.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "collect/registry.h"
#include "cs.h"
#include "gpd.h"
#include "jobs.h"
#include "methods.h"
#include "methods_xe.h"
#include "xe_collector.h"

/* The host parser keeps at most 64 MiB of buffers; a dump adds headers. */
#define XE_BATCH_MAX_BYTES ((64u << 20) + (1u << 20))

struct batch_job {
	struct rpc_req *req;
	struct gpd *g;
	int fd;
	uint32_t io_timeout_ms;
	uint8_t *buf;
	size_t len;
	int err; /* negative errno of the read */
};

static void batch_read(void *arg)
{
	struct batch_job *j = arg;
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

			if (cap > XE_BATCH_MAX_BYTES) {
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
	if (j->len > XE_BATCH_MAX_BYTES)
		j->err = -EFBIG;
}

static void batch_done(void *arg)
{
	struct batch_job *j = arg;
	struct collector *c = collectors_find(j->g, "xe");
	struct xe_cs *cs = c ? xe_collector_cs(c) : NULL;
	char why[200];
	cJSON *res;
	int n;

	close(j->fd);
	if (j->err == -EFBIG) {
		rpc_error(j->req, GPUPROF_ERR_TOO_LARGE, NULL, "batch-buffer dump over %u MiB",
			  XE_BATCH_MAX_BYTES >> 20);
	} else if (j->err == -ETIMEDOUT) {
		rpc_error(j->req, GPUPROF_ERR_IO, NULL, "reading the dump: no data for %u ms",
			  j->io_timeout_ms);
	} else if (j->err) {
		rpc_error_errno(j->req, j->err, "reading the dump");
	} else if (!cs) {
		rpc_error(j->req, GPUPROF_ERR_UNAVAILABLE, NULL,
			  "the xe collector is not built in");
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
	free(j->buf);
	free(j);
}

void method_xe_batch(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"fd", NULL};
	struct batch_job *j;
	int fd, r;

	if (!params_only(req, params, allowed))
		return;
	/* The dump names pids and feeds the shared kernel table. */
	if (!req->privileged) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL, "xe.batch needs root or CAP_PERFMON");
		return;
	}
	if (req->nfds != 1) {
		rpc_error(req, GPUPROF_ERR_BAD_FD, NULL,
			  "pass the dump as one descriptor: \"fd\": 0");
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
	*j = (struct batch_job){
	    .req = req, .g = req->gpd, .fd = fd, .io_timeout_ms = req->gpd->cfg.io_timeout_ms};
	r = job_submit(req->gpd, batch_read, batch_done, j);
	if (r < 0) {
		close(fd);
		free(j);
		if (r == -EBUSY)
			rpc_error(req, GPUPROF_ERR_BUSY, NULL,
				  "too many jobs running (limits.max_jobs); retry later");
		else
			rpc_error_errno(req, r, "reading the dump");
	}
}
