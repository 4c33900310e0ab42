// SPDX-License-Identifier: MIT
/* The two helpers every collector calls (collector.h). */
#include "collector.h"

#include <stdarg.h>
#include <stdio.h>

#include "log.h"

const char *collector_state_name(enum collector_state st)
{
	switch (st) {
	case COLLECTOR_OFF:
		return "off";
	case COLLECTOR_ATTACHED:
		return "attached";
	case COLLECTOR_UNAVAILABLE:
		return "unavailable";
	case COLLECTOR_BUSY:
		return "busy";
	case COLLECTOR_PAUSED:
		return "paused";
	case COLLECTOR_FAILED:
		return "failed";
	}
	return "unknown";
}

void collector_set_state(struct collector *c, enum collector_state st, const char *fmt, ...)
{
	c->state = st;
	c->reason[0] = '\0';
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
		va_end(ap);
	}
	if (st == COLLECTOR_ATTACHED)
		log_info("collector %s: attached", c->ops->name);
	else
		log_info("collector %s: %s%s%s", c->ops->name, collector_state_name(st),
			 c->reason[0] ? ": " : "", c->reason);
}
