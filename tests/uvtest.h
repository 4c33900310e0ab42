/* SPDX-License-Identifier: MIT */
/*
 * Tearing a test's event loop down the way the daemon does (daemon/main.c):
 * run it until nothing is active, then close it. A collector's thread-pool
 * jobs (uprobe detaches wait for RCU grace periods: seconds on a loaded
 * machine) outlive its free() as active requests; a fixed number of
 * uv_loop_close() retries gives up on a slow one, and the next case that
 * re-initialises a loop at the same stack address then receives the old
 * job's completion (libuv asserts in uv__queue_done).
 */
#ifndef GPUPROF_TESTS_UVTEST_H
#define GPUPROF_TESTS_UVTEST_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <uv.h>

static void uvtest_walk_close(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* A teardown that never ends is a bug to report, not to retry around:
 * say what is still active and stop here. */
static void uvtest_watchdog(uv_timer_t *t)
{
	uv_loop_t *loop = t->loop;

	fprintf(stderr, "teardown: the loop still has %u active request(s) and these handles:\n",
		loop->active_reqs.count);
	uv_print_all_handles(loop, stderr);
	abort();
}

/*
 * Close what the test left open, run the loop until its collectors' jobs
 * and close callbacks are done (at most timeout_ms, else abort), and close
 * it. Returns uv_loop_close()'s result: 0 when nothing leaked a handle.
 */
static inline int uvtest_loop_finish(uv_loop_t *loop, uint64_t timeout_ms)
{
	uv_timer_t wd;

	uv_walk(loop, uvtest_walk_close, NULL);
	/* Unreferenced: it fires only while something else keeps the loop
	 * alive, which is what it guards. */
	uv_timer_init(loop, &wd);
	uv_timer_start(&wd, uvtest_watchdog, timeout_ms, 0);
	uv_unref((uv_handle_t *)&wd);
	uv_run(loop, UV_RUN_DEFAULT);
	uv_close((uv_handle_t *)&wd, NULL);
	uv_run(loop, UV_RUN_DEFAULT);
	return uv_loop_close(loop);
}

#endif
