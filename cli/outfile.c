// SPDX-License-Identifier: MIT
/*
 * --out FILE written atomically: the daemon writes into a temporary file in
 * FILE's directory and it replaces FILE only once the request succeeded, so
 * a failed request (a mistyped id, a daemon error, a full disk) leaves an
 * existing FILE as it was instead of truncated.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The file a symlinked --out points at: writing through the link is what
 * open(O_TRUNC) did, and renaming over the link would replace the link. */
static char *resolve_target(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *r = realpath(path, NULL);
		if (r)
			return r;
		/* a dangling link: write where it points, as open() would */
		char buf[PATH_MAX];
		ssize_t n = readlink(path, buf, sizeof(buf) - 1);
		if (n > 0 && buf[0] == '/') {
			buf[n] = '\0';
			return strdup(buf);
		}
	}
	return strdup(path);
}

static int open_in_place(struct cli_out *o, const char *path)
{
	o->fd = open(o->target, O_WRONLY | O_CLOEXEC);
	if (o->fd < 0)
		return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
	o->in_place = true;
	return EXIT_OK;
}

static int out_open(struct cli_out *o, const char *path)
{
	struct stat st;
	*o = (struct cli_out){.fd = -1, .path = path};
	if (!path || !strcmp(path, "-")) {
		fflush(stdout);
		o->fd = STDOUT_FILENO;
		o->is_stdout = true;
		/* A terminal gets the output escaped (cli_out_close()): folded
		 * stacks carry process names, which any user sets. */
		if (isatty(STDOUT_FILENO)) {
			o->fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
			if (o->fd < 0) {
				char t[] = "/tmp/gpuprofctl.XXXXXX";
				o->fd = mkostemp(t, O_CLOEXEC);
				if (o->fd >= 0)
					unlink(t);
			}
			if (o->fd < 0)
				return cli_fail(EXIT_LOCAL_IO, "cannot create a temporary file: %s",
						strerror(errno));
			o->tty = true;
		}
		return EXIT_OK;
	}
	o->target = resolve_target(path);
	if (!o->target)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	int sr = stat(o->target, &st);
	/* A FIFO, a device, /dev/null: nothing to replace, written directly. */
	if (sr == 0 && !S_ISREG(st.st_mode)) {
		o->fd = open(o->target, O_WRONLY | O_CLOEXEC);
		if (o->fd < 0)
			return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
		return EXIT_OK;
	}
	bool exists = sr == 0;
	/* Same permission as before: the existing file's mode, else what
	 * open(O_CREAT, 0644) would give under the umask. */
	mode_t mode;
	if (exists) {
		/* refuse what open(O_WRONLY) would have refused */
		if (access(o->target, W_OK) < 0)
			return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(errno));
		/* never setuid/setgid bits on a file the daemon wrote */
		mode = st.st_mode & 0777;
	} else {
		mode_t um = umask(0);
		umask(um);
		mode = 0644 & ~um;
	}
	/* A file replaced by rename() would lose its owner (when it is not
	 * ours and we cannot chown) and its other hard links; a directory we
	 * may not write cannot hold the temporary file. Such a file is
	 * written in place, but not truncated before the request succeeds:
	 * a request that fails before writing leaves it as it was. */
	if (exists && (st.st_nlink > 1 ||
		       ((st.st_uid != geteuid() || st.st_gid != getegid()) && geteuid() != 0)))
		return open_in_place(o, path);
	const char *slash = strrchr(o->target, '/');
	size_t dlen = slash ? (size_t)(slash - o->target) + 1 : 0;
	size_t need = dlen + strlen(slash ? slash + 1 : o->target) + 16;
	o->tmp = malloc(need);
	if (!o->tmp)
		return cli_fail(EXIT_LOCAL_IO, "out of memory");
	snprintf(o->tmp, need, "%.*s.%s.XXXXXX", (int)dlen, o->target,
		 slash ? slash + 1 : o->target);
	o->fd = mkostemp(o->tmp, O_CLOEXEC);
	if (o->fd < 0) {
		int e = errno;
		free(o->tmp);
		o->tmp = NULL;
		if (exists && (e == EACCES || e == EPERM || e == EROFS))
			return open_in_place(o, path);
		return cli_fail(EXIT_LOCAL_IO, "cannot open %s: %s", path, strerror(e));
	}
	if (fchmod(o->fd, mode) < 0)
		return cli_fail(EXIT_LOCAL_IO, "cannot set the mode of %s: %s", path,
				strerror(errno));
	/* root replacing another user's file gives it back to that user */
	if (exists && (st.st_uid != geteuid() || st.st_gid != getegid()) &&
	    fchown(o->fd, st.st_uid, st.st_gid) < 0)
		return cli_fail(EXIT_LOCAL_IO, "cannot set the owner of %s: %s", path,
				strerror(errno));
	return EXIT_OK;
}

int cli_out_open(struct cli_out *o, const char *path)
{
	int r = out_open(o, path);
	if (r != EXIT_OK) {
		if (o->fd >= 0 && (!o->is_stdout || o->tty))
			close(o->fd);
		if (o->tmp)
			unlink(o->tmp);
		free(o->tmp);
		free(o->target);
		*o = (struct cli_out){.fd = -1, .path = path};
	}
	return r;
}

/* The output gathered for a terminal, escaped line by line (cli_escape():
 * lines are whole, so no character is split). */
static int copy_escaped(int fd)
{
	FILE *f = lseek(fd, 0, SEEK_SET) == 0 ? fdopen(dup(fd), "r") : NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = EXIT_OK;
	if (!f)
		return cli_fail(EXIT_LOCAL_IO, "reading the output back: %s", strerror(errno));
	while ((n = getline(&line, &cap, f)) > 0) {
		bool nl = line[n - 1] == '\n';
		if (nl)
			line[n - 1] = '\0';
		/* a NUL inside the line ends it here: shown as \x00 */
		char *e = cli_escape(line);
		if (!e) {
			r = cli_fail(EXIT_LOCAL_IO, "out of memory");
			break;
		}
		fputs(e, stdout);
		if (strlen(line) < (size_t)n - nl)
			fputs("\\x00...", stdout);
		if (nl)
			fputc('\n', stdout);
		free(e);
	}
	free(line);
	fclose(f);
	if (fflush(stdout) == EOF && r == EXIT_OK)
		r = cli_fail(EXIT_LOCAL_IO, "writing to stdout: %s", strerror(errno));
	return r;
}

int cli_out_close(struct cli_out *o, int status)
{
	if (o->tty) {
		if (status == EXIT_OK)
			status = copy_escaped(o->fd);
		close(o->fd);
		o->fd = -1;
		o->tty = false;
		return status;
	}
	if (o->is_stdout || o->fd < 0) {
		free(o->target);
		o->target = NULL;
		o->fd = -1;
		return status;
	}
	/* in place: cut what is left of the old content after the new */
	if (status == EXIT_OK && o->in_place) {
		off_t end = lseek(o->fd, 0, SEEK_CUR);
		if (end < 0 || ftruncate(o->fd, end) < 0)
			status =
				cli_fail(EXIT_LOCAL_IO, "writing %s: %s", o->path, strerror(errno));
	}
	/* fsync so a crash after the rename cannot leave an empty file
	 * where the old one was */
	if (status == EXIT_OK && o->tmp && fsync(o->fd) < 0)
		status = cli_fail(EXIT_LOCAL_IO, "writing %s: %s", o->path, strerror(errno));
	if (close(o->fd) < 0 && status == EXIT_OK)
		status = cli_fail(EXIT_LOCAL_IO, "writing %s: %s", o->path, strerror(errno));
	o->fd = -1;
	if (o->tmp) {
		if (status == EXIT_OK && rename(o->tmp, o->target) < 0)
			status = cli_fail(EXIT_LOCAL_IO, "cannot replace %s: %s", o->path,
					  strerror(errno));
		if (status != EXIT_OK)
			unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	free(o->target);
	o->target = NULL;
	return status;
}
