// SPDX-License-Identifier: MIT
/*
 * Test-only stand-ins for the two registry helpers cpu.c calls, so the CPU
 * collector's tests link without the whole collector registry
 * (daemon/collect/registry.c, which would pull in every collector).
 */
#include <stdarg.h>
#include <stdio.h>

#include "collect/collector.h"
#include "log.h"

const char *collector_state_name(enum collector_state st)
{
	static const char *const names[] = {
	    [COLLECTOR_OFF] = "off",
	    [COLLECTOR_ATTACHED] = "attached",
	    [COLLECTOR_UNAVAILABLE] = "unavailable",
	    [COLLECTOR_BUSY] = "busy",
	    [COLLECTOR_PAUSED] = "paused",
	    [COLLECTOR_FAILED] = "failed",
	};

	if ((unsigned)st < sizeof(names) / sizeof(names[0]) && names[st])
		return names[st];
	return "unknown";
}

void collector_set_state(struct collector *c, enum collector_state st, const char *fmt, ...)
{
	va_list ap;

	c->state = st;
	c->reason[0] = '\0';
	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
		va_end(ap);
	}
	log_info("collector %s: %s%s%s", c->ops->name, collector_state_name(st),
		 c->reason[0] ? ": " : "", c->reason);
}
