// SPDX-License-Identifier: MIT
/*
 * The Xe EU-stall stream state machine driven through a pipe with a script
 * of errno results in place of the device (the same code the device fd
 * runs), and the OA frequency / busy decoder.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "test.h"

#include "decode.h"
#include "oa.h"
#include "stream.h"
#include "xe.h"
#include "xe_collector.h"
#include "xe_int.h"
#include "xe_test_util.h"

struct script {
	int rfd, wfd;
	int open_err[4];
	unsigned nopen;
	int read_err[8]; /* returned before reading the pipe, in order */
	unsigned nread, iread;
	unsigned opens, enables, closes;
};

static int s_open(void *ctx, const struct xe_stream_cfg *cfg)
{
	struct script *s = ctx;
	int p[2];

	(void)cfg;
	if (s->opens < s->nopen && s->open_err[s->opens])
		return s->open_err[s->opens++];
	s->opens++;
	if (s->rfd < 0) {
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
			return -errno;
		s->rfd = p[0];
		s->wfd = p[1];
	}
	return dup(s->rfd);
}

static int s_enable(void *ctx, int fd)
{
	(void)fd;
	((struct script *)ctx)->enables++;
	return 0;
}

static int s_disable(void *ctx, int fd)
{
	(void)ctx;
	(void)fd;
	return 0;
}

static ssize_t s_read(void *ctx, int fd, void *buf, size_t len)
{
	struct script *s = ctx;
	ssize_t n;

	if (s->iread < s->nread)
		return s->read_err[s->iread++];
	n = read(fd, buf, len);
	return n < 0 ? -errno : n;
}

static void s_close(void *ctx, int fd)
{
	((struct script *)ctx)->closes++;
	close(fd);
}

static const struct xe_obs_ops script_ops = {s_open, s_enable, s_disable, s_read, s_close};

static struct xe *g_x;

static void sink(void *arg, struct xe_stream *st, const uint8_t *buf, size_t len, uint64_t now)
{
	(void)arg;
	xe_ingest(g_x, xe_stream_cfg(st)->dec, buf, len, 64, now);
}

static void run_for(uv_loop_t *loop, int ms)
{
	uint64_t end = uv_now(loop) + (uint64_t)ms;

	while (uv_now(loop) < end) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
		uv_update_time(loop);
	}
}

static void test_stream(void)
{
	uv_loop_t loop;
	struct script sc = {.rfd = -1, .wfd = -1, .open_err = {-EBUSY}, .nopen = 1,
			    .read_err = {-EIO, -EAGAIN}, .nread = 2};
	struct xe_stream_cfg cfg = {.name = "test/gt0", .record_size = 64,
				    .dec = xe_decoder_by_name("xe2"), .busy_retry_ms = 20,
				    .backoff_min_ms = 10, .backoff_max_ms = 40};
	struct xe_stream *s;
	struct xe_stream_stats st;
	struct xe_stats xs;
	uint8_t rec[64 * 3];

	uv_loop_init(&loop);
	CHECK_EQ_INT(xe_new(NULL, 0, &g_x), 0);
	CHECK_EQ_INT(xe_stream_new(&loop, &cfg, &script_ops, &sc, sink, NULL, NULL, &s), 0);
	xe_stream_start(s);
	CHECK_EQ_INT(xe_stream_state(s), XS_BUSY); /* another tool holds the GT */
	run_for(&loop, 60);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	CHECK_EQ_INT(sc.enables, 1);

	/* data with a record split across two writes, then -EIO handled */
	for (int i = 0; i < 3; i++)
		xe2_rec(rec + 64 * i, 0x100 + (unsigned)i, XE_R_SBID, 2);
	CHECK_EQ_INT(write(sc.wfd, rec, 100), 100);
	run_for(&loop, 20);
	CHECK_EQ_INT(write(sc.wfd, rec + 100, sizeof(rec) - 100), (int)sizeof(rec) - 100);
	run_for(&loop, 20);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.records, 3);
	CHECK_EQ_U64(st.drops, 1);
	CHECK_EQ_U64(st.busy, 1);
	xe_get_stats(g_x, &xs);
	CHECK_EQ_U64(xs.records, 3);
	CHECK_EQ_U64(xs.deferred_now, 3); /* no kernel known: waiting, not dropped */

	/* reset: -ENODEV closes and reopens with backoff */
	sc.read_err[0] = -ENODEV;
	sc.iread = 0;
	sc.nread = 1;
	CHECK_EQ_INT(write(sc.wfd, rec, 64), 64);
	run_for(&loop, 5);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.resets, 1);
	run_for(&loop, 60);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	xe_stream_get_stats(s, &st);
	CHECK_EQ_U64(st.opens, 2);
	CHECK_EQ_U64(st.records, 4); /* the pending record read after reopen */

	/* pause for 0.05 s... expressed in ms here; resume explicitly too */
	xe_stream_pause(s, 50);
	CHECK_EQ_INT(xe_stream_state(s), XS_PAUSED);
	unsigned closes = sc.closes;
	CHECK_EQ_INT(closes, 2);
	run_for(&loop, 80);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);
	xe_stream_pause(s, 0);
	run_for(&loop, 30);
	CHECK_EQ_INT(xe_stream_state(s), XS_PAUSED);
	xe_stream_resume(s);
	CHECK_EQ_INT(xe_stream_state(s), XS_RUNNING);

	/* another errno: failed with a reason */
	sc.read_err[0] = -EINVAL;
	sc.iread = 0;
	sc.nread = 1;
	CHECK_EQ_INT(write(sc.wfd, rec, 64), 64);
	run_for(&loop, 10);
	CHECK_EQ_INT(xe_stream_state(s), XS_FAILED);
	CHECK(strstr(xe_stream_reason(s), "Invalid argument") != NULL);

	xe_stream_free(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	close(sc.rfd);
	close(sc.wfd);
	xe_free(g_x);
}

static void test_oa(void)
{
	uint8_t rep[XE_OA_PEC_REPORT_BYTES] = {0};
	struct xe_oa_state st = {.ts_freq_hz = 19200000};
	struct xe_oa_sample s;
	uint64_t mhz = 0, busy = 0, v;

	/* report 1: time near the 56-bit wrap, ticks near the 32-bit wrap */
	v = (1ull << 56) - 960000; /* 50 ms before the wrap at 19.2 MHz */
	memcpy(rep + 8, &v, 8);
	v = 0xFFFFFFFFull - 1000;
	memcpy(rep + 24, &v, 8);
	v = 5000;
	memcpy(rep + 36 * 8, &v, 8);
	v = (3ull << 32) | (5u << 19);
	memcpy(rep, &v, 8);
	CHECK(xe_oa_parse(rep, sizeof(rep), &s));
	CHECK_EQ_INT(s.tile, 3);
	CHECK_EQ_INT(s.reason, 5);
	CHECK(!xe_oa_step(&st, &s, &mhz, &busy));
	/* 100 ms later (1.92 M timestamps), 120 M ticks => 1200 MHz, busy 25 % */
	v = 960000;
	memcpy(rep + 8, &v, 8);
	v = 120000000ull - 1001;
	memcpy(rep + 24, &v, 8);
	v = 5000 + 30000000;
	memcpy(rep + 36 * 8, &v, 8);
	CHECK(xe_oa_parse(rep, sizeof(rep), &s));
	CHECK(xe_oa_step(&st, &s, &mhz, &busy));
	CHECK_EQ_U64(mhz, 1200);
	CHECK_EQ_U64(busy, 25);
	CHECK(!xe_oa_parse(rep, 100, &s));
}

int main(void)
{
	RUN(test_stream);
	RUN(test_oa);
	return test_summary();
}
