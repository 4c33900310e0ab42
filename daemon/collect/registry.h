/* SPDX-License-Identifier: MIT */
/* The collector registry: one table of collector ops, walked in order. */
#ifndef GPUPROF_COLLECT_REGISTRY_H
#define GPUPROF_COLLECT_REGISTRY_H

#include <cjson/cJSON.h>

struct gpd;

/* Create and open every configured collector. A collector that cannot run
 * on this host is kept, in state "unavailable", so status can say why. */
int collectors_open(struct gpd *g);
void collectors_start(struct gpd *g);
void collectors_stop(struct gpd *g);
void collectors_free(struct gpd *g);
/* Array of per-collector status objects (owned by caller). */
cJSON *collectors_status(struct gpd *g);
/* Look a collector up by name (NULL if absent). */
struct collector *collectors_find(struct gpd *g, const char *name);

#endif
