/* SPDX-License-Identifier: MIT */
/*
 * The cupti collector's parts: cupti.c the listening socket, the peer list
 * and status; cupti_peer.c one connection's credentials, process watch and
 * reads; cupti_dec.c a message's records into the store.
 */
#ifndef GPUPROF_COLLECT_CUPTI_INT_H
#define GPUPROF_COLLECT_CUPTI_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "cupti_abi.h"

struct store;
struct collector;
struct cupti;

/* Why records or connections were refused: status "drops" members. */
enum cupti_drop {
	CUPTI_DROP_RATE,      /* beyond cupti.peer_rate */
	CUPTI_DROP_STRINGS,   /* string table full (ids or bytes) */
	CUPTI_DROP_UNDEFINED, /* named a string id never defined (kept, unnamed) */
	CUPTI_DROP_TIME,      /* no timestamps, end < start, or far from now */
	CUPTI_DROP_STORE,     /* the store could not take a string */
	CUPTI_DROP_PC,	      /* a PC record or stall name out of bounds (device, index, pc) */
	CUPTI_DROP_CUBIN,     /* a cubin over cupti.peer_cubin_bytes, the cache, or in pieces */
	CUPTI_DROP_MAX,
};

/* Why connections were closed or refused: status "closed" members. */
enum cupti_close {
	CUPTI_CLOSE_MALFORMED, /* a message broke the wire's rules */
	CUPTI_CLOSE_NO_HELLO,  /* no GPI_HELLO in time */
	CUPTI_CLOSE_EXITED,    /* the peer process exited */
	CUPTI_CLOSE_HANGUP,    /* the peer closed its end */
	CUPTI_CLOSE_LIMIT,     /* refused at accept: cupti.max_peers / user_peers */
	CUPTI_CLOSE_CRED,      /* refused at accept: no usable credentials or pidfd */
	CUPTI_CLOSE_MAX,
};

/* Activity kinds counted in status "records" (store records made). */
enum cupti_count {
	CUPTI_N_KERNEL,
	CUPTI_N_MEMCPY,
	CUPTI_N_MEMSET,
	CUPTI_N_SYNC,
	CUPTI_N_GRAPH,
	CUPTI_N_API,
	CUPTI_N_MARKER,
	CUPTI_N_STRING,
	CUPTI_N_STATS,
	CUPTI_N_STALL_NAME,
	CUPTI_N_PC,	 /* PC sample records (their samples: cupti_totals.pc_samples) */
	CUPTI_N_CUBIN,	 /* cubin chunks */
	CUPTI_N_EVENT,	 /* CUDA event records */
	CUPTI_N_WINDOW,	 /* duty-cycle collection windows */
	CUPTI_N_UNKNOWN, /* record types this daemon does not know: skipped */
	CUPTI_N_MAX,
};

enum cupti_peer_state {
	CUPTI_PEER_HELLO = 0, /* connected, no GPI_HELLO yet */
	CUPTI_PEER_ACTIVE,    /* collecting (or no gpi_stats yet) */
	CUPTI_PEER_CONFLICT,  /* the library stepped aside for another subscriber */
	CUPTI_PEER_DISABLED,  /* the library could enable nothing */
	CUPTI_PEER_STATE_MAX,
};

/* One peer's string ids: 256 pages of 256 entries, a page allocated when
 * one of its ids is first defined, so a peer pays for what it defines. */
#define CUPTI_STR_PAGE 256u
struct cupti_str {
	uint32_t sid; /* store string id (one reference held), 0 = none */
	uint32_t len; /* bytes charged; 0 = undefined */
};

struct cupti_strtab {
	struct cupti_str *pages[GPI_STRING_IDS / CUPTI_STR_PAGE];
	size_t bytes;	/* charged: text + per-entry overhead */
	uint32_t count; /* ids defined */
};

/* PC sampling of one peer: stall reason names per (device, index), and
 * the cubin being received. */
#define CUPTI_STALL_DEVS 16u
#define CUPTI_STALL_IDS 256u
struct cupti_pcstate {
	uint32_t *stall; /* [device * CUPTI_STALL_IDS + index]: store string id
			  * (a reference), NULL until the first name */
	uint8_t *cubin;	 /* the cubin being received, NULL none */
	uint64_t cubin_crc;
	uint32_t cubin_size, cubin_got;
	size_t cubin_bytes;	 /* charged: cubins this peer started, in bytes */
	struct gpi_pc_stats lib; /* the library's last GPI_PC_STATS */
	bool lib_seen;
};

/* A cubin kept for disassembly, one per (crc, owner): code is its owner's
 * to see. */
struct cupti_cubin {
	struct cupti_cubin *next; /* oldest first */
	uint64_t crc;
	uint32_t owner, pid;
	size_t size;
	uint8_t bytes[];
};

/* The libraries' own counters (their last gpi_stats), summed over peers:
 * what they lost, and their idle subscription counts (GPUPROF_CUPTI_IDLE) */
struct cupti_libsum {
	uint64_t cupti_dropped, api_dropped, records_dropped, buffers_refused;
	uint64_t idle_unsubs, idle_subs, idle_sub_failed;
};

/* adds one library's last stats to a sum */
void cupti_libsum_add(struct cupti_libsum *t, const struct gpi_stats *s);

/* The library's last gpi_stats, and what it says. */
struct cupti_libstats {
	struct gpi_stats s;
	char conflict[64]; /* the conflict string, "" none */
	bool seen;
};

struct cupti_peer {
	struct cupti *cu;
	struct cupti_peer *next;
	int fd, pidfd;
	uv_poll_t sock_poll, pid_poll;
	unsigned closing; /* handles still to close */
	bool dead;	  /* closing: no more reads */
	/* identity, all fixed at accept from the kernel's view */
	uint32_t pid, uid, owner; /* SO_PEERCRED pid and uid; owner: the records' uid */
	uint32_t comm;		  /* store string id (one reference held) */
	char comm_text[16];
	uint64_t connected_ns, hello_deadline_ns;
	/* the library */
	enum cupti_peer_state state;
	uint32_t lib_version, cupti_version, features;
	int32_t driver_version;
	int64_t hello_delay_ns; /* our clock at the hello - the library's in it */
	struct cupti_libstats lib;
	/* the duty cycle (GPI_WINDOW): windows seen, the time they covered */
	uint32_t duty, period_ms; /* the last window's; 0: none (collects all the time) */
	uint64_t windows, covered_ns, first_window_ns;
	uint32_t next_seq;
	uint64_t seq_gaps; /* messages the library numbered but we never got */
	/* bounds */
	double tokens;
	uint64_t tokens_ns;
	struct cupti_strtab strs;
	struct cupti_pcstate pc;
	/* counters */
	uint64_t records, msgs;
	uint64_t drops[CUPTI_DROP_MAX];
	char last_error[96]; /* why we closed it or the last thing refused */
};

struct cupti_totals {
	uint64_t peers_ever;
	uint64_t msgs;
	uint64_t records[CUPTI_N_MAX];
	uint64_t drops[CUPTI_DROP_MAX];
	uint64_t closed[CUPTI_CLOSE_MAX];
	uint64_t seq_gaps;
	uint64_t pc_samples;	 /* in the PC records stored */
	uint64_t cubins;	 /* cubins kept (ever) */
	struct cupti_libsum lib; /* the closed peers' */
};

struct cupti_limits {
	unsigned max_peers, user_peers;
	uint32_t peer_rate;   /* records per second */
	size_t peer_strings;  /* bytes */
	size_t strings_total; /* bytes, every peer together */
	size_t peer_cubin_bytes, cubin_cache_bytes;
	uint64_t hello_timeout_ns;
};

struct cupti {
	struct collector *col;
	struct store *store;
	uv_loop_t *loop;
	int lfd;
	char path[108];
	uv_poll_t lpoll;
	uv_timer_t tick;
	bool lpoll_on, tick_on;
	unsigned closing;  /* handles of the collector and its peers still closing */
	bool free_pending; /* freed: the last close callback frees it */
	struct cupti_limits lim;
	struct cupti_peer *peers;
	unsigned npeers;
	size_t strings_bytes; /* every peer's strtab bytes */
	/* the cubin cache, oldest first; the loop thread changes it, render
	 * workers copy from it (cupti_cubin_copy): under cubins_mu */
	pthread_mutex_t cubins_mu;
	struct cupti_cubin *cubins, **cubins_tail;
	size_t cubins_bytes;
	struct cupti_totals tot;
	/* the PC counters of the last peers that closed with some (their
	 * last GPI_PC_STATS), newest first: why a process that is gone got
	 * no samples; shown like its peer was (to its owner) */
#define CUPTI_PC_CLOSED 8
	struct cupti_pc_closed {
		uint32_t pid, owner;
		uint64_t closed_ns;
		struct gpi_pc_stats s;
	} pc_closed[CUPTI_PC_CLOSED];
	unsigned npc_closed;
	uint64_t log_next_ns; /* rate limit of the peer warnings */
	unsigned log_suppressed;
	uint64_t *buf; /* one message, GPI_MSG_MAX bytes */
};

/* cupti.c: a handle of cu's finished closing */
void cupti_handle_closed(struct cupti *cu);

/* cupti_peer.c */
int cupti_peer_accept(struct cupti *cu, int fd);
void cupti_peer_close(struct cupti_peer *p, enum cupti_close why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void cupti_peer_tick(struct cupti_peer *p, uint64_t now_ns);
/* the rate-limited warning every peer problem goes through */
void cupti_warn(struct cupti *cu, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cupti_dec.c: one message of p; 0, or -EBADMSG with p->last_error set
 * (the caller closes the connection) */
int cupti_decode(struct cupti_peer *p, const void *msg, size_t len, uint64_t now_ns);
void cupti_strtab_clear(struct cupti *cu, struct cupti_strtab *t);
/* a closing peer's PC sampling state; the whole cubin cache */
void cupti_pc_clear(struct cupti *cu, struct cupti_pcstate *pc);
void cupti_cubins_free(struct cupti *cu);
/* The cubin of crc that uid may see (root: any), or NULL: loop thread. */
const struct cupti_cubin *cupti_cubin_find(struct cupti *cu, uint64_t crc, uint32_t uid);
/* Any thread: a malloc()ed copy of that cubin and its owner; 0 or
 * -ENOENT / -ENOMEM. */
int cupti_cubin_copy(struct cupti *cu, uint64_t crc, uint32_t uid, void **bytes, size_t *size,
		     uint32_t *owner);
const char *cupti_peer_state_name(enum cupti_peer_state st);
/* cupti.c: 1 the peer's library holds CUPTI's subscription, 0 it does
 * not, -1 it has not said (no gpi_stats yet, or a library without
 * GPI_SF_SUB_KNOWN) */
int cupti_peer_subscribed(const struct cupti_peer *p);

#endif
