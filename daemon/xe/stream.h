/* SPDX-License-Identifier: MIT */
/*
 * One observation stream (EU stall or OA) of one GT on the event loop:
 * open -> enable -> non-blocking reads on a uv_poll_t, with the kernel's
 * error contract handled (the xe driver's EU-stall stream):
 *
 *   -EIO     data dropped by the hardware: counted, reading goes on
 *   -ENODEV  GT reset: closed and reopened with exponential backoff
 *   -EBUSY   (open) another tool holds the GT: state "busy", retried
 *   pause    the stream is closed for N seconds so VTune / unitrace can
 *            take the GT, then reopened (or at resume)
 *
 * The device is reached only through struct xe_obs_ops, so tests drive
 * this exact code with a pipe and a script of errno results.
 */
#ifndef GPUPROF_XE_STREAM_H
#define GPUPROF_XE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include "decode.h"

struct xe_stream;

struct xe_stream_cfg {
	char name[48]; /* "card0/gt0" */
	int drm_fd;    /* owned by the device, not the stream */
	uint16_t gt_id;
	bool oa;		/* OA stream (sink decides), else EU stall */
	uint64_t rate;		/* EU stall: sampling rate in GPU cycles (xe_drm.h);
			   * OA: the OA timestamp frequency in Hz */
	uint32_t oa_unit;	/* OA: unit id (an OAG unit) */
	uint32_t oa_exponent;	/* OA: period = 2^(exponent + 1) timestamp ticks */
	uint64_t oa_metric_set; /* OA: metric-set (config) id */
	uint32_t wait_num_reports;
	size_t record_size; /* stride: the query's record_size (64 today) */
	size_t read_bytes;  /* per read(); default 256 KiB */
	const struct xe_decoder *dec;
	unsigned busy_retry_ms;	 /* default 5000 */
	unsigned backoff_min_ms; /* default 100 */
	unsigned backoff_max_ms; /* default 30000 */
};

/* The device behind a stream. Each returns >= 0 or -errno. */
struct xe_obs_ops {
	int (*open)(void *ctx, const struct xe_stream_cfg *cfg); /* new fd, non-blocking */
	int (*enable)(void *ctx, int fd);
	int (*disable)(void *ctx, int fd);
	ssize_t (*read)(void *ctx, int fd, void *buf, size_t len);
	void (*close)(void *ctx, int fd);
};

/* Where whole records go (now_ns: CLOCK_MONOTONIC of the read). */
typedef void (*xe_sink_fn)(void *arg, struct xe_stream *s, const uint8_t *buf, size_t len,
			   uint64_t now_ns);
/* Told when the stream's state changes (the collector's summary). */
typedef void (*xe_state_fn)(void *arg, struct xe_stream *s);

enum xe_stream_state {
	XS_OFF,
	XS_RUNNING,
	XS_BUSY,   /* -EBUSY at open, retrying */
	XS_RESET,  /* -ENODEV, reopening with backoff */
	XS_PAUSED, /* released on request */
	XS_FAILED, /* open/enable/read failed otherwise: reason says why */
};

struct xe_stream_stats {
	uint64_t records, bytes, reads;
	uint64_t drops;	 /* -EIO episodes */
	uint64_t resets; /* -ENODEV */
	uint64_t busy;	 /* opens refused with -EBUSY */
	uint64_t opens;
};

int xe_stream_new(uv_loop_t *loop, const struct xe_stream_cfg *cfg, const struct xe_obs_ops *ops,
		  void *ops_ctx, xe_sink_fn sink, xe_state_fn on_state, void *arg,
		  struct xe_stream **ret);
/* Open and start reading; failures become the stream's state, not errors. */
void xe_stream_start(struct xe_stream *s);
/* Read what is there (poll callback body; also for tests and shutdown). */
void xe_stream_drain(struct xe_stream *s);
/* Close the stream for ms milliseconds (0: until resume). */
void xe_stream_pause(struct xe_stream *s, uint64_t ms);
void xe_stream_resume(struct xe_stream *s);
void xe_stream_stop(struct xe_stream *s);
/* Stop and free; the handles are closed through the loop. */
void xe_stream_free(struct xe_stream *s);

enum xe_stream_state xe_stream_state(const struct xe_stream *s);
const char *xe_stream_state_name(enum xe_stream_state st);
const char *xe_stream_reason(const struct xe_stream *s);
const struct xe_stream_cfg *xe_stream_cfg(const struct xe_stream *s);
void xe_stream_get_stats(const struct xe_stream *s, struct xe_stream_stats *st);
void xe_stream_status(const struct xe_stream *s, cJSON *obj);

#endif
