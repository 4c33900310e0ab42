// SPDX-License-Identifier: MIT
/*
 * nsys importer: getting the export off a descriptor. It is read whole into
 * memory (bounded) for sqlite3_deserialize().
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memcap.h"
#include "nsys_int.h"
#include "src.h"

#define DEF_MAX_BYTES (64ull << 30)

/* Read fd to EOF into a malloc'ed buffer, at most max bytes (max_name: the
 * limit that set it) and, as the buffer grows, within mem's limits. A
 * regular file's size is known first: one over the limit is refused
 * before anything is read (a sparse file costs no disk but would cost its
 * full size here). */
static int slurp(int fd, uint64_t max, const char *max_name, const struct import_opts *o,
		 struct tl_memcap *mem, uint8_t **out, size_t *outlen, struct import_result *res)
{
	uint32_t timeout_ms = o ? o->io_timeout_ms : 0;
	size_t len = 0, cap = 1 << 20;
	uint8_t *b = NULL, *nb;
	struct stat st;
	int err;

	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		off_t at = lseek(fd, 0, SEEK_CUR);
		uint64_t left =
			(uint64_t)st.st_size - (at > 0 && at < st.st_size ? (uint64_t)at : 0);

		if (left > max)
			goto too_big;
		cap = (size_t)left + 1; /* one read, no realloc */
	}
	if (cap > max + 1)
		cap = (size_t)max + 1;
	if ((err = tl_mem_charge(mem, cap, res->error_msg, sizeof(res->error_msg))) < 0)
		return err;
	if (!(b = malloc(cap)))
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (len == cap) {
			size_t ncap;

			if (cap >= max + 1)
				goto too_big;
			ncap = cap * 2 > max + 1 ? (size_t)max + 1 : cap * 2;
			/* realloc may copy: old and new held at once */
			if ((err = tl_mem_charge(mem, cap + ncap, res->error_msg,
						 sizeof(res->error_msg))) < 0) {
				free(b);
				return err;
			}
			if (!(nb = realloc(b, ncap))) {
				free(b);
				return -ENOMEM;
			}
			b = nb;
			cap = ncap;
		}
		r = read(fd, b + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) { /* a client's non-blocking pipe */
			if ((err = src_wait_in(fd, timeout_ms, o ? o->cancel : NULL)) < 0) {
				free(b);
				return err;
			}
			continue;
		}
		if (r < 0) {
			err = -errno;
			free(b);
			return err;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > max)
			goto too_big;
	}
	*out = b;
	*outlen = len;
	return 0;
too_big:
	free(b);
	snprintf(res->error_msg, sizeof(res->error_msg),
		 "export larger than %s (%llu bytes): an SQLite export is read into memory whole",
		 max_name, (unsigned long long)max);
	return -EFBIG;
}

int timeline_import_nsys_fd(int fd, const struct import_opts *o, struct timeline *tl,
			    struct import_result *res)
{
	struct import_result dummy;
	uint64_t max = o && o->max_bytes ? o->max_bytes : DEF_MAX_BYTES;
	const char *max_name = "the import cap";
	struct tl_memcap mem;
	uint8_t *buf = NULL;
	size_t len = 0;
	int err;

	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	/* the whole export is in memory while it is read: the memory limit
	 * bounds it too, checked before reading */
	if (o && o->max_mem && o->max_mem < max) {
		max = o->max_mem;
		max_name = o->max_mem_name ? o->max_mem_name : "the import's memory limit";
	}
	tl_memcap_init(&mem, o, tl);
	err = slurp(fd, max, max_name, o, &mem, &buf, &len, res);
	if (err) {
		if (!res->error_msg[0])
			snprintf(res->error_msg, sizeof(res->error_msg), "reading the export: %s",
				 strerror(-err));
		return res->error = err;
	}
	res->bytes_in = len;
	if (!timeline_is_sqlite(buf, len)) {
		free(buf);
		snprintf(res->error_msg, sizeof(res->error_msg), "not an SQLite database");
		return res->error = -EBADMSG;
	}
	err = nsys_import_db(buf, len, o, tl, res, mem.o ? &mem : NULL);
	res->bytes_in = len;
	free(buf);
	return err;
}
