// SPDX-License-Identifier: MIT
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int log_verbosity = 0;

void log_msg(int prio, const char *fmt, ...)
{
	if ((prio == 6 && log_verbosity < 1) || (prio == 7 && log_verbosity < 2))
		return;
	int saved = errno;
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* "<N>" prefix: journald maps it to the priority (sd-daemon(3)). */
	fprintf(stderr, "<%d>gpuprofd: %s\n", prio, buf);
	errno = saved;
}
