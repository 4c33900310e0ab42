/* SPDX-License-Identifier: MIT */
/*
 * The `cupti` collector: gpuprofd's end of the wire from libgpuprof-cupti.so
 * (inject/cupti_abi.h). It listens on a SOCK_SEQPACKET Unix socket any local
 * user may connect to, attributes every record to the peer the kernel
 * reports (SO_PEERCRED, fixed at connect), and turns the batches into store
 * records as store/store.h describes ("Records from the CUPTI library").
 * docs/collectors.md, "NVIDIA", "In the daemon".
 */
#ifndef GPUPROF_COLLECT_CUPTI_H
#define GPUPROF_COLLECT_CUPTI_H

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "collector.h"

extern const struct collector_ops cupti_collector_ops;

struct gpd;

/*
 * The `cupti` block of `status` into obj: totals for everyone; the peers
 * list holds every peer for a privileged caller, else only the peers whose
 * records uid may see (their owner is uid). Nothing when the collector is
 * not in the registry.
 */
void cupti_status_json(struct gpd *g, cJSON *obj, uid_t uid, bool privileged);

/*
 * Asks the library in process pid to give CUPTI up (GPI_CTL_RELEASE), for
 * a caller who may see that peer in status (privileged, or the owner of
 * its records). 0 sent; -ENODEV no collector; -ESRCH no such peer the
 * caller may see; -EAGAIN the socket is full; other negative errno from
 * send(2). *state: the peer's state name before the request;
 * *subscribed: whether its library held the CUPTI subscription then (1,
 * 0, or -1 not said).
 */
int cupti_release(struct gpd *g, pid_t pid, uid_t uid, bool privileged, const char **state,
		  int *subscribed);

/*
 * Asks the library in process pid to collect all the time for ms
 * (GPI_CTL_FULL, at most GPI_FULL_MAX_MS) instead of its duty cycle, for
 * the same callers as cupti_release(); a library that collects all the
 * time anyway ignores it. Returns as cupti_release().
 */
int cupti_full(struct gpd *g, pid_t pid, uid_t uid, bool privileged, uint64_t ms);

#endif
