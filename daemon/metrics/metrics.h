/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus / OpenMetrics endpoint (docs/operations.md, "Metrics for
 * Prometheus"): off unless metrics.listen is set. HTTP is served by
 * libmicrohttpd on a thread of its own; every figure comes from a
 * snapshot built on the daemon's loop, so a scrape never touches daemon
 * state and a slow scraper never holds up the loop.
 */
#ifndef GPUPROF_METRICS_H
#define GPUPROF_METRICS_H

struct gpd;
struct metrics;

/*
 * Bind metrics.listen and start serving. *ret is NULL (and 0 returned)
 * when the endpoint is off. Negative errno when the address is bad or
 * cannot be bound (logged). Loop thread, after the store exists.
 */
int metrics_start(struct gpd *g, struct metrics **ret);

/* Stop serving (waits for the HTTP thread, at most one scrape's wait),
 * close the listener and free m once its handles have closed through the
 * loop. NULL is a no-op. Loop thread. */
void metrics_stop(struct metrics *m);

#endif
