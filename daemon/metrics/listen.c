// SPDX-License-Identifier: MIT
/* metrics.listen: numeric addresses or a Unix socket path (listen.h). */
#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int parse_port(const char *s, uint16_t *port)
{
	char *end;
	unsigned long p;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	p = strtoul(s, &end, 10);
	if (errno || *end || p > 65535)
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

/* Fill ss from "A.B.C.D:PORT" or "[IPV6]:PORT". */
static int parse_inet(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[64];
	const char *colon;
	uint16_t port;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
			return -EINVAL;
		snprintf(host, sizeof(host), "%.*s", (int)(close - spec - 1), spec + 1);
		if (parse_port(close + 2, &port) < 0 ||
		    inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return 0;
	}
	colon = strrchr(spec, ':');
	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

	if (parse_port(colon + 1, &port) < 0 || inet_pton(AF_INET, host, &s4->sin_addr) != 1)
		return -EINVAL;
	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	*len = sizeof(*s4);
	return 0;
}

static int parse_unix(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_un *su = (struct sockaddr_un *)ss;
	struct stat st;

	if (strlen(spec) >= sizeof(su->sun_path))
		return -ENAMETOOLONG;
	memset(ss, 0, sizeof(*ss));
	su->sun_family = AF_UNIX;
	strcpy(su->sun_path, spec);
	*len = sizeof(*su);
	/* a socket left by an earlier run; anything else there stays */
	if (lstat(spec, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(spec);
	return 0;
}

static void describe(int fd, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN];

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, ntohs(s4->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	}
}

bool metrics_listen_is_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	if (ss.ss_family == AF_UNIX)
		return true;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
	return false;
}

int metrics_listen(const char *spec, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, fd, r;
	bool is_unix = spec[0] == '/';

	r = is_unix ? parse_unix(spec, &ss, &sl) : parse_inet(spec, &ss, &sl);
	if (r < 0) {
		snprintf(err, errlen,
			 "metrics.listen '%s': expected A.B.C.D:PORT, [IPV6]:PORT or an absolute "
			 "path",
			 spec);
		return r;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail;
	if (!is_unix)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0)
		goto fail;
	/* no credentials are asked of a scraper: who may connect is decided
	 * by the address (loopback) or the socket's directory */
	if (is_unix && chmod(spec, 0666) < 0)
		goto fail;
	if (listen(fd, 16) < 0)
		goto fail;
	snprintf(err, errlen, "%s", spec);
	if (!is_unix)
		describe(fd, err, errlen);
	return fd;
fail:
	r = -errno;
	/* systemd's RestrictAddressFamilies= makes socket() fail so */
	snprintf(err, errlen, "metrics.listen %s: %s%s", spec, strerror(errno),
		 errno == EAFNOSUPPORT ? " (a service's RestrictAddressFamilies= must allow it: "
					 "docs/operations.md, \"Metrics for Prometheus\")"
				       : "");
	if (fd >= 0)
		close(fd);
	return r;
}
