/* SPDX-License-Identifier: MIT */
/*
 * Internal to the capture registry: its record, shared by capreg.c (ids,
 * windows, persisting) and capquota.c (per-uid quotas, the persist queue's
 * bounds). Loop thread only.
 */
#ifndef GPUPROF_CAPREG_INT_H
#define GPUPROF_CAPREG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capreg.h"

struct capreg {
	struct gpd *g;
	int dirfd;
	struct capentry *head, *tail; /* id order */
	uint64_t next_id;
	size_t count;
	capreg_prepare_fn prepare;
	void *prepare_arg;
	bool closed;
	/* Taken captures waiting for a job slot to be saved, oldest first:
	 * bounded by limits.persist_queue and memory.persist_queue, started
	 * from on_slot_free() before any request can take a freed slot. */
	struct capentry *wait_head, *wait_tail;
	unsigned nwaiting;
	uint64_t waiting_bytes;
};

/* Bytes a capture's data takes in memory, and about as much on disk. */
uint64_t capquota_data_bytes(const struct capture *c);
/* Whether e's data, add bytes, fits its owner's limits.user_disk: 0, or
 * -EDQUOT with why (CAPREG_WHY_MAX) naming it. */
int capquota_disk_admit(const struct capentry *e, uint64_t add, char *why);
/*
 * Room in the persist queue for e (e->data_bytes set). Privileged owners
 * may fill it; the others together three quarters of it (count and
 * bytes), one uid a quarter, so a member queueing small captures cannot
 * make root's fail. 0, or -EBUSY with why naming the limit.
 */
int capquota_wait_admit(const struct capentry *e, char *why);

#endif
