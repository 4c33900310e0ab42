// SPDX-License-Identifier: MIT
/*
 * Times on the command line (capture --since / --until): the daemon's
 * CLOCK_MONOTONIC ns as a capture's window reports them, or a wall-clock
 * time, which the daemon converts with its own clock offset.
 */
#include "timearg.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NS 1000000000ull

/* n decimal digits at *s into *v; false when they are not all there. */
static bool digits(const char **s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (!isdigit((unsigned char)**s))
			return false;
		*v = *v * 10 + (**s - '0');
	}
	return true;
}

/* ".123" or ",123" (date -Ins) at *s: 1 to 9 digits as ns (more are
 * refused, not rounded). */
static bool fraction(const char **s, uint64_t *ns)
{
	uint64_t scale = NS / 10;
	int n = 0;

	*ns = 0;
	if (**s != '.' && **s != ',')
		return true;
	for ((*s)++; isdigit((unsigned char)**s); (*s)++, n++) {
		if (n == 9)
			return false;
		*ns += (uint64_t)(**s - '0') * scale;
		scale /= 10;
	}
	return n > 0;
}

/* "@SECONDS[.FRACTION]" since the epoch. */
static int epoch(const char *s, uint64_t *ns)
{
	uint64_t sec = 0, frac;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		if (sec > (UINT64_MAX / NS - 9) / 10)
			return -ERANGE;
		sec = sec * 10 + (uint64_t)(*s - '0');
	}
	if (!fraction(&s, &frac) || *s)
		return -EINVAL;
	*ns = sec * NS + frac;
	return 0;
}

/* "Z", "+HH:MM", "+HHMM", "-HH:MM": the offset east of UTC in seconds. */
static bool zone(const char *s, long *off)
{
	int h, m, sign;

	if (!strcmp(s, "Z") || !strcmp(s, "z")) {
		*off = 0;
		return true;
	}
	if (*s != '+' && *s != '-')
		return false;
	sign = *s++ == '-' ? -1 : 1;
	if (!digits(&s, 2, &h))
		return false;
	if (*s == ':')
		s++;
	if (!digits(&s, 2, &m) || *s || h > 23 || m > 59)
		return false;
	*off = sign * (h * 3600L + m * 60L);
	return true;
}

/* "YYYY-MM-DDTHH:MM:SS[.FRACTION](Z|+HH:MM)" (a space for the T too). */
static int iso8601(const char *s, uint64_t *ns)
{
	struct tm tm = {0};
	uint64_t frac;
	long off;
	time_t t;
	int v[6];

	if (!digits(&s, 4, &v[0]) || *s++ != '-' || !digits(&s, 2, &v[1]) || *s++ != '-' ||
	    !digits(&s, 2, &v[2]) || (*s != 'T' && *s != 't' && *s != ' ') || !++s ||
	    !digits(&s, 2, &v[3]) || *s++ != ':' || !digits(&s, 2, &v[4]) || *s++ != ':' ||
	    !digits(&s, 2, &v[5]) || !fraction(&s, &frac))
		return -EINVAL;
	if (!*s)
		return -EDOM; /* no zone: local time or UTC? refused, not guessed */
	if (!zone(s, &off))
		return -EINVAL;
	if (v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 ||
	    v[4] > 59 || v[5] > 60)
		return -ERANGE;
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	t = timegm(&tm);
	/* timegm() normalizes Feb 30 into March: such a date is refused */
	if (t == (time_t)-1 || tm.tm_mday != v[2] || (int64_t)t - off < 0)
		return -ERANGE;
	*ns = (uint64_t)((int64_t)t - off) * NS + frac;
	return 0;
}

int cli_parse_time(const char *text, uint64_t *ns, bool *realtime)
{
	const char *s = text;
	uint64_t v = 0;
	int r;

	if (!s || !*s)
		return -EINVAL;
	if (*s == '@') {
		if ((r = epoch(s + 1, &v)) < 0)
			return r;
		*realtime = true;
	} else if (strlen(s) > 4 && s[4] == '-') {
		if ((r = iso8601(s, &v)) < 0)
			return r;
		*realtime = true;
	} else {
		for (; *s; s++) {
			if (!isdigit((unsigned char)*s))
				return -EINVAL;
			if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
				return -ERANGE;
			v = v * 10 + (uint64_t)(*s - '0');
		}
		*realtime = false;
	}
	*ns = v;
	return 0;
}
