/* SPDX-License-Identifier: MIT */
/* The parts of the continuous-profile pusher (push.h): one profile as
 * queued, the upload queue and thread (upload.c), the directory sink
 * (dirsink.c). */
#ifndef GPUPROF_PUSH_INT_H
#define GPUPROF_PUSH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config.h"

/* One rendered window: a gzip-compressed pprof profile. */
struct push_item {
	struct push_item *next;
	uint8_t *body; /* owned */
	size_t len;
	uint64_t from_ns, until_ns; /* the window, CLOCK_REALTIME */
	unsigned attempts;	    /* uploads tried */
};

void push_item_free(struct push_item *it);

/* ---- upload.c: the queue and its thread ---------------------------------- */
struct upload;

/*
 * Read the credential files, set up libcurl and start the thread. name is
 * Pyroscope's name parameter ("app{host=...}"), copied. Returns 0 or a
 * negative errno with why filled in; *ret untouched then.
 */
int upload_new(const struct config_push *cfg, const char *name, uint32_t sample_hz,
	       struct upload **ret, char *why, size_t whylen);
/* Queue it (ownership moves); at push.queue_max or push.queue_max_bytes
 * the oldest waiting profiles are dropped and counted. Never blocks on
 * the network. */
void upload_enqueue(struct upload *u, struct push_item *it);
/* Ask the thread to stop; an upload in flight is aborted. */
void upload_stop(struct upload *u);
/* Join the thread and free everything; NULL is a no-op. */
void upload_free(struct upload *u);
/* Counters into o (any thread); the last error (it may name the
 * endpoint's host) only for privileged peers. */
void upload_status(struct upload *u, cJSON *o, bool privileged);

/* ---- dirsink.c: rotating files in push.dir ------------------------------- */
struct dirsink;

/* Open (creating) the directory without following a symlink anywhere on
 * its path; it must be owned by us and writable by nobody else. Removes
 * temporary files a crash left. Returns 0 or a negative errno, why filled. */
int dirsink_open(const char *path, size_t max_bytes, struct dirsink **ret, char *why,
		 size_t whylen);
/* Write it atomically (temporary file, fsync, rename), then remove the
 * oldest profiles until the directory's profiles fit push.dir_max_bytes.
 * Builder thread only. Returns 0 or a negative errno (counted). */
int dirsink_write(struct dirsink *d, const struct push_item *it);
void dirsink_status(struct dirsink *d, cJSON *o, bool privileged);
void dirsink_free(struct dirsink *d);

#endif
