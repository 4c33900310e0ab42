/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's listening socket (metrics.listen). */
#ifndef GPUPROF_METRICS_LISTEN_H
#define GPUPROF_METRICS_LISTEN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Bind and listen on spec: "A.B.C.D:PORT", "[IPV6]:PORT" (numeric, no
 * name look-up) or an absolute Unix socket path (a stale socket there is
 * replaced; the socket is 0666, access is its directory's to decide).
 * Returns the descriptor (close-on-exec, non-blocking) or negative errno;
 * err receives what went wrong, where (the bound address, a port 0 made
 * real) on success.
 */
int metrics_listen(const char *spec, char *err, size_t errlen);

/* Whether fd listens where only this host reaches it (loopback, or a Unix
 * socket). */
bool metrics_listen_is_local(int fd);

#endif
