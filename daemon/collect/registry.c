// SPDX-License-Identifier: MIT
#include "registry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "cpu.h"
#include "cupti.h"
#include "gpu_job.h"
#include "gpu_launch.h"
#include "xe_collector.h"
#include "gpd.h"
#include "log.h"

/* Every collector, in the order they open, start and show in status. */
static const struct collector_ops *const collector_table[] = {
	&cpu_collector_ops,	&gpu_launch_collector_ops, &xe_collector_ops,
	&gpu_job_collector_ops, &cupti_collector_ops,	   NULL,
};

static bool enabled(const struct gpd *g, const char *name)
{
	if (!strcmp(name, "cpu"))
		return g->cfg.cpu_sampling;
	return true;
}

int collectors_open(struct gpd *g)
{
	for (size_t i = 0; collector_table[i] && g->ncollectors < GPD_MAX_COLLECTORS; i++) {
		const struct collector_ops *ops = collector_table[i];
		struct collector *c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->ops = ops;
		c->gpd = g;
		g->collectors[g->ncollectors++] = c;
		if (!enabled(g, ops->name)) {
			collector_set_state(c, COLLECTOR_OFF, "disabled in configuration");
			continue;
		}
		int r = ops->open(c);
		if (r < 0 && c->state != COLLECTOR_UNAVAILABLE)
			collector_set_state(c, COLLECTOR_FAILED, "open: %s", strerror(-r));
	}
	return 0;
}

void collectors_start(struct gpd *g)
{
	for (unsigned i = 0; i < g->ncollectors; i++) {
		struct collector *c = g->collectors[i];
		if (c->state != COLLECTOR_OFF || !enabled(g, c->ops->name) || c->reason[0])
			continue;
		int r = c->ops->start(c);
		if (r < 0 && c->state != COLLECTOR_UNAVAILABLE)
			collector_set_state(c, COLLECTOR_FAILED, "start: %s", strerror(-r));
	}
	/* Each collector logged its reason at info level; a daemon that
	 * records nothing at all deserves one line an operator will see. */
	unsigned attached = 0;
	for (unsigned i = 0; i < g->ncollectors; i++)
		attached += g->collectors[i]->state == COLLECTOR_ATTACHED;
	if (!attached)
		log_warn("no collector attached: captures will be empty "
			 "(see 'gpuprofctl status' for each collector's reason)");
}

void collectors_stop(struct gpd *g)
{
	for (unsigned i = 0; i < g->ncollectors; i++) {
		struct collector *c = g->collectors[i];
		if (c->ops->stop)
			c->ops->stop(c);
	}
}

void collectors_free(struct gpd *g)
{
	for (unsigned i = 0; i < g->ncollectors; i++) {
		struct collector *c = g->collectors[i];
		if (c->ops->free)
			c->ops->free(c);
		free(c);
		g->collectors[i] = NULL;
	}
	g->ncollectors = 0;
}

cJSON *collectors_status(struct gpd *g)
{
	cJSON *arr = cJSON_CreateArray();
	for (unsigned i = 0; arr && i < g->ncollectors; i++) {
		struct collector *c = g->collectors[i];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		cJSON_AddStringToObject(o, "name", c->ops->name);
		cJSON_AddStringToObject(o, "state", collector_state_name(c->state));
		cJSON_AddStringToObject(o, "reason", c->reason);
		cJSON_AddNumberToObject(o, "events", (double)c->events);
		cJSON_AddNumberToObject(o, "drops", (double)c->drops);
		if (c->ops->status)
			c->ops->status(c, o);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

struct collector *collectors_find(struct gpd *g, const char *name)
{
	for (unsigned i = 0; i < g->ncollectors; i++)
		if (!strcmp(g->collectors[i]->ops->name, name))
			return g->collectors[i];
	return NULL;
}
