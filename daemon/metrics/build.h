/* SPDX-License-Identifier: MIT */
/* Building a metrics snapshot from the daemon's state. Loop thread only. */
#ifndef GPUPROF_METRICS_BUILD_H
#define GPUPROF_METRICS_BUILD_H

#include <stdbool.h>

#include <cjson/cJSON.h>

struct gpd;
struct proctab;
struct msnap;

/* A new snapshot (NULL when memory ran out): the daemon's health, what pt
 * counted, BPF run time (bpf_on: the daemon holds accounting on) and the
 * GPU clock from sysfs. */
struct msnap *metrics_build(struct gpd *g, struct proctab *pt, bool bpf_on);

/* The health families, from a status result (rpc_status_json()); split
 * out so a unit test can feed it a status of its own. */
void metrics_add_status(struct msnap *s, const cJSON *status);

#endif
