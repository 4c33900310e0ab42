// SPDX-License-Identifier: MIT
/*
 * What the capture registry may take for one uid: the count of captures
 * (limits.captures, its privileged reserve, limits.user_captures), bytes
 * on disk (limits.user_disk) and places in the queue of captures waiting
 * for a job slot (limits.persist_queue, memory.persist_queue). Privileged
 * peers are bound by the global limits only; every refusal names the
 * limit, with the numbers, for the -32004 the client gets.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "capreg.h"
#include "capreg_int.h"
#include "gpd.h"

uint64_t capquota_data_bytes(const struct capture *c)
{
	uint64_t b = c->nrecs * sizeof(struct store_rec) + c->str_blob_len + c->nips * 8 +
		     c->nstacks * sizeof(struct capture_stack) +
		     c->nstrs * sizeof(struct capture_str);
	for (size_t i = 0; i < c->nextras; i++)
		b += c->extras[i].len;
	return b;
}

/* Bytes on disk an entry takes, or will once saved. */
static uint64_t entry_disk_bytes(const struct capentry *e)
{
	if (e->waiting || e->persisting)
		return e->data_bytes; /* the worker may be writing file_bytes */
	if (e->sum->state == CAPTURE_READY || e->sum->state == CAPTURE_DAMAGED)
		return e->sum->file_bytes;
	return 0;
}

struct usage {
	size_t count;
	uint64_t bytes;
};

static struct usage uid_usage(const struct capreg *r, uid_t uid)
{
	struct usage u = {0, 0};
	for (const struct capentry *e = r->head; e; e = e->next) {
		if (e->deleted || e->sum->owner_uid != uid)
			continue;
		u.count++;
		u.bytes += entry_disk_bytes(e);
	}
	return u;
}

int capreg_admit(struct capreg *r, uid_t uid, bool privileged, char *why)
{
	const struct config *cfg = &r->g->cfg;
	size_t share = config_unpriv_max(cfg->captures_max, cfg->reserved_captures);
	size_t cap = config_user_max(cfg->captures_max, cfg->reserved_captures, cfg->user_captures);

	if (r->count >= cfg->captures_max) {
		snprintf(why, CAPREG_WHY_MAX,
			 "too many captures: %zu of limits.captures (%zu) in use; delete some first",
			 r->count, cfg->captures_max);
		return -EBUSY;
	}
	if (privileged)
		return 0;
	if (r->count >= share) {
		snprintf(why, CAPREG_WHY_MAX,
			 "too many captures: %zu in use, and the last %zu of limits.captures (%zu) "
			 "are kept for privileged users (limits.reserved_captures)",
			 r->count, cfg->captures_max - share, cfg->captures_max);
		return -EBUSY;
	}
	struct usage u = uid_usage(r, uid);
	if (u.count >= cap) {
		snprintf(why, CAPREG_WHY_MAX,
			 "uid %u has %zu captures (limits.user_captures = %zu); delete some first",
			 (unsigned)uid, u.count, cap);
		return -EBUSY;
	}
	if (u.bytes >= cfg->user_disk_bytes) {
		snprintf(why, CAPREG_WHY_MAX,
			 "uid %u's captures take %" PRIu64 " bytes (limits.user_disk = %" PRIu64
			 "); delete some first",
			 (unsigned)uid, u.bytes, cfg->user_disk_bytes);
		return -EDQUOT;
	}
	return 0;
}

int capquota_disk_admit(const struct capentry *e, uint64_t add, char *why)
{
	const struct config *cfg = &e->reg->g->cfg;
	if (e->owner_privileged)
		return 0;
	struct usage u = uid_usage(e->reg, e->sum->owner_uid);
	if (u.bytes + add <= cfg->user_disk_bytes)
		return 0;
	snprintf(why, CAPREG_WHY_MAX,
		 "the capture's %" PRIu64 " bytes would take uid %u's captures to %" PRIu64
		 " bytes (limits.user_disk = %" PRIu64 ")",
		 add, (unsigned)e->sum->owner_uid, u.bytes + add, cfg->user_disk_bytes);
	return -EDQUOT;
}

int capquota_wait_admit(const struct capentry *e, char *why)
{
	const struct capreg *r = e->reg;
	const struct config *cfg = &r->g->cfg;
	unsigned qmax = cfg->persist_queue;
	uint64_t bmax = cfg->persist_queue_bytes;
	unsigned n = r->nwaiting, nuid = 0;
	uint64_t b = r->waiting_bytes, buid = 0;
	const char *whose = "";

	if (!e->owner_privileged) {
		unsigned nall = 0;
		uint64_t ball = 0;
		for (const struct capentry *w = r->wait_head; w; w = w->wait_next) {
			if (w->owner_privileged)
				continue;
			nall++;
			ball += w->data_bytes;
			if (w->sum->owner_uid == e->sum->owner_uid) {
				nuid++;
				buid += w->data_bytes;
			}
		}
		if (n < qmax && b + e->data_bytes <= bmax) {
			/* room overall: now the unprivileged share, then this uid's */
			if (nall >= config_unpriv_max(qmax, qmax / 4) ||
			    ball + e->data_bytes > bmax - bmax / 4) {
				n = nall;
				b = ball;
				whose = "unprivileged users' ";
				qmax -= qmax / 4;
				bmax -= bmax / 4;
			} else {
				n = nuid;
				b = buid;
				whose = "this user's ";
				qmax = qmax / 4 ? qmax / 4 : 1;
				bmax /= 4;
			}
		}
	}
	if (n >= qmax) {
		snprintf(why, CAPREG_WHY_MAX,
			 "no job slot is free for it and %u of %s%u places are taken in the queue of "
			 "captures waiting to be saved (limits.persist_queue = %u)",
			 n, whose, qmax, cfg->persist_queue);
		return -EBUSY;
	}
	if (b + e->data_bytes > bmax) {
		snprintf(why, CAPREG_WHY_MAX,
			 "no job slot is free for it and the capture's %" PRIu64
			 " bytes do not fit the %s%" PRIu64
			 " bytes the queue of captures waiting to be saved may hold, %" PRIu64
			 " in use (memory.persist_queue = %zu)",
			 e->data_bytes, whose, bmax, b, cfg->persist_queue_bytes);
		return -EBUSY;
	}
	return 0;
}
