/* SPDX-License-Identifier: MIT */
/*
 * libgpuprof-cupti.so internals. Threads:
 *   - the application's threads run the API callbacks (callbacks.c): they
 *     only read the clock and push into their own lock-free ring
 *     (apiring.c);
 *   - CUPTI's threads (or the application's) call the buffer request and
 *     complete callbacks (buffers.c): a short mutex over a fixed pool;
 *   - one sender thread (sender.c) owns everything else: it walks the
 *     completed buffers (convert.c), drains the rings, interns strings
 *     (names.c), encodes batches (wire.c) and owns the socket.
 */
#ifndef GPUPROF_INJECT_H
#define GPUPROF_INJECT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cupti_abi.h"

/* The entry point the CUDA driver calls (the only exported symbol):
 * idempotent, returns 1. */
int InitializeInjection(void);

/* ------------------------------------------------------------ config */

/* GPI_F_EVENT comes with GPI_F_SYNC ("sync"): the records that say which
 * cudaEventRecord a wait waits on */
#define GPI_FEATURES_DEFAULT                                                                 \
	(GPI_F_KERNEL | GPI_F_MEMCPY | GPI_F_MEMSET | GPI_F_SYNC | GPI_F_EVENT | GPI_F_API | \
	 GPI_F_NVTX)
#define GPI_FEATURES_ALL (GPI_FEATURES_DEFAULT | GPI_F_GRAPH)

struct gpi_config {
	int enabled;	    /* GPUPROF_CUPTI != 0 */
	uint32_t features;  /* GPUPROF_CUPTI_FEATURES */
	char socket[108];   /* GPUPROF_CUPTI_SOCKET */
	unsigned flush_ms;  /* GPUPROF_CUPTI_FLUSH_MS: how often to ask CUPTI for buffers */
	int yield;	    /* GPUPROF_CUPTI_YIELD: enum gpi_yield */
	unsigned quiet_ms;  /* GPUPROF_CUPTI_YIELD_QUIET_MS: see coexist.c */
	unsigned duty;	    /* GPUPROF_CUPTI_DUTY: percent of the time collected (duty.c) */
	unsigned window_ms; /* GPUPROF_CUPTI_WINDOW_MS: one collection window */
	int idle;	    /* GPUPROF_CUPTI_IDLE: enum gpi_idle */
};

/* The duty cycle's defaults: 2 % of the time, in windows of 10 ms (one
 * every 500 ms). docs/collectors.md, "NVIDIA", has the arithmetic. */
#define GPI_DUTY_DEFAULT 2u
#define GPI_WINDOW_MS_DEFAULT 10u

/* When the library gives CUPTI up to another tool of the same process
 * (coexist.c; docs/collectors.md, "Other CUPTI users"). */
enum gpi_yield {
	GPI_YIELD_AUTO = 0, /* when our activity callbacks were replaced */
	GPI_YIELD_NEVER,    /* keep the subscription; a takeover is only reported */
	GPI_YIELD_TORCH,    /* auto, and as soon as PyTorch's CUDA library is loaded */
};

/* What the library holds between two duty-cycle windows. */
enum gpi_idle {
	GPI_IDLE_SUBSCRIBED = 0, /* the subscription (launch callbacks off) */
	GPI_IDLE_UNSUBSCRIBE,	 /* nothing: let go at each close, taken back at each open
				  * (cupti.c, "The idle subscription") */
};

/* Reads the environment into *cfg (defaults for anything unset or bad). */
void config_read(struct gpi_config *cfg);
/* Parses a feature list ("kernel,memcpy,...", "default", "all", "none");
 * -EINVAL on an unknown word. */
int config_parse_features(const char *s, uint32_t *out);
/* The number in environment variable name, or def when it is unset, not a
 * number or outside [lo, hi]. */
unsigned config_env_uint(const char *name, unsigned def, unsigned lo, unsigned hi);

/* ------------------------------------------------------------ shared state */

struct gpi_counters {
	_Atomic uint64_t records, cupti_dropped, buffers_refused, api_dropped;
	_Atomic uint64_t batches_sent, batches_dropped, records_dropped, reconnects;
	/* GPUPROF_CUPTI_IDLE=unsubscribe: subscriptions let go at a window's
	 * close, taken back at an open, and failed attempts to take it back */
	_Atomic uint64_t idle_unsubs, idle_subs, idle_sub_failed;
};

struct gpi {
	struct gpi_config cfg;
	pid_t pid;		 /* the process that initialized (fork check) */
	_Atomic uint32_t state;	 /* enum gpi_state */
	_Atomic uint32_t on;	 /* enum gpi_feature: working */
	_Atomic uint32_t failed; /* enum gpi_feature: off after an error */
	_Atomic int32_t last_error;
	char conflict[64]; /* the other subscriber's name, "" none */
	uint32_t cupti_version;
	int32_t driver_version;
	int mono; /* CUPTI's timestamps are CLOCK_MONOTONIC */
	struct gpi_counters n;
};

extern struct gpi gpi;

/* CLOCK_MONOTONIC in ns */
uint64_t gpi_now(void);
/* A CUPTI call failed for feature f (0: none in particular): note it. */
void gpi_fail(uint32_t f, int err);

/* ------------------------------------------------------------ libcupti */

/* Opens libcupti (GPUPROF_CUPTI_LIB, else libcupti.so.13 by the normal
 * search, else the build's CUDA prefix) and resolves what we call:
 * 0, or -ENOENT (no library), -ENOSYS (a required symbol missing),
 * -EPROTO (a CUPTI major version we were not built for). */
int cuptilib_open(void);
/* The function table (valid after cuptilib_open() succeeded); optional
 * entries may be NULL. */
struct cuptilib;
extern struct cuptilib *cl;

/* ------------------------------------------------------------ API ring */

struct api_ev {
	uint64_t enter, exit;
	const char *name; /* CUPTI's constant function name */
	uint32_t corr, tid;
	uint16_t cbid;
	uint8_t domain, failed;
};

/* Appends one record to the calling thread's ring (allocated at the
 * thread's first call; no lock or allocation after that). Full: counted. */
void apiring_push(const struct api_ev *ev);
/* Sender thread: hands every queued record to fn; frees rings of exited
 * threads once drained. Returns how many were handed over. */
size_t apiring_drain(void (*fn)(const struct api_ev *ev, void *arg), void *arg);
/* In a forked child: forget the parent's threads' rings. */
void apiring_atfork_child(void);

/* ------------------------------------------------------------ buffers */

/* Allocates the pool: 0 or -ENOMEM. */
int buffers_init(void);
/* The callbacks registered with cuptiActivityRegisterCallbacks (they have
 * CUPTI's calling convention and types; see buffers.c). */
void buffers_request_cb(uint8_t **buf, size_t *size, size_t *max_records);
void buffers_complete_cb(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);
/* Sender thread: takes the oldest completed buffer (NULL none) ... */
uint8_t *buffers_take(size_t *valid);
/* ... and gives it back, zeroed, once walked. */
void buffers_put(uint8_t *buf, size_t valid);
/* The sender's wake-up (an eventfd): 0 or negative errno; without it the
 * sender only polls. */
int buffers_wake_init(void);
/* Wakes the sender (a buffer completed, a ring half full, exit is near):
 * one write(2), no lock. */
void buffers_wake(void);
/* Sender: waits up to ms for a completed buffer or a wake-up. */
void buffers_wait(unsigned ms);
void buffers_atfork_child(void);

/* ------------------------------------------------------------ strings */

/* Interns text (copied, at most GPI_STRING_MAX bytes) and returns its id;
 * *define is set when the id must be (re)sent on this connection before
 * use. Sender thread only. */
uint32_t names_intern(const char *text, int *define);
/* The same for a string that never changes while the process lives
 * (CUPTI's kernel and API function names): found by its address first. */
uint32_t names_intern_const(const char *text, int *define);
/* The text of an id as last interned (for the GPI_STRING record). */
const char *names_text(uint32_t id, uint32_t *len);
/* Every id must be sent again (a new connection, or a dropped batch that
 * may have carried definitions). */
void names_forget_sent(void);
void names_mark_sent(uint32_t id);

/* ------------------------------------------------------------ wire */

struct wire {
	uint8_t buf[GPI_MSG_MAX] __attribute__((aligned(8)));
	size_t used;
	uint16_t nrec;
};

void wire_reset(struct wire *w, uint32_t seq);
/* Room for a record of len bytes (rounded up to 8) of type: a zeroed
 * record with its gpi_rec filled in, or NULL when the message is full. */
void *wire_add(struct wire *w, uint16_t type, size_t len);
/* Appends a GPI_STRING record: 0 or -ENOSPC. */
int wire_add_string(struct wire *w, uint32_t id, const char *text, uint32_t len);

/* ------------------------------------------------------------ sender */

/* Starts the sender thread: 0 or negative errno. */
int sender_start(void);
/* At exit: asks for a last drain and stats, waits at most ms. */
void sender_finish(unsigned ms);
void sender_atfork_child(void);

/* The record conversions (convert.c), on the sender thread: each walks
 * one CUPTI buffer and emits records through the sender's emitters. */
void convert_buffer(uint8_t *buf, size_t valid);
/* Sender thread, for each API record drained before the buffers: a
 * cudaEventRecord call's entry time is kept for the event record it made
 * (gpi_cuda_event.time). */
void convert_api_seen(const struct api_ev *ev);
/* cupti.c: cuptiActivityFlushAll (forced or not) when CUPTI is ours */
void gpi_cupti_flush(int forced);
/* cupti.c, sender thread: we collect or hold the subscription, and have
 * not stepped aside */
int gpi_cupti_collecting(void);
/* cupti.c, sender thread: stop collecting and leave CUPTI to another
 * tool; why goes to the stats' conflict string. kinds_ours: nobody else
 * has touched the activity kinds yet, so ours are disabled and our
 * buffers flushed back first. let_go: unsubscribe too (else the API
 * callbacks go on). */
void gpi_cupti_step_aside(const char *why, int kinds_ours, int let_go);
/* cupti.c, sender thread: lets the subscription go once asked and no
 * callback of ours runs (or after ms at the latest); every tick */
void gpi_cupti_release_poll(uint64_t now, unsigned ms);
/* cupti.c, sender thread: let the subscription go now (or as soon as no
 * callback of ours runs), whether we stepped aside or not */
void gpi_cupti_let_go(void);
/* cupti.c: we hold the process's CUPTI subscription now */
int gpi_cupti_subscribed(void);
/* cupti.c, sender thread: GPUPROF_CUPTI_IDLE=unsubscribe applies (asked
 * for, a duty cycle, and no PC sampling, which needs the subscription all
 * the time) */
int gpi_cupti_idle_unsub(void);
/* cupti.c, sender thread: the subscription was let go for the time
 * between two windows (or is being let go) and comes back at the next */
int gpi_cupti_idle_out(void);

/* cupti.c, sender thread: switches what costs per launch (the activity
 * kinds enabled at setup, and the API callbacks unless PC sampling needs
 * them) on or off for the duty cycle; off also flushes, and with
 * GPUPROF_CUPTI_IDLE=unsubscribe lets the subscription go, which on
 * takes back first. 0, or -EPERM when CUPTI is no longer ours (the cycle
 * stops; a subscription that could not be taken back has made us step
 * aside). */
int gpi_cupti_duty_set(int on);

/* ------------------------------------------------------------ duty cycle */

/* Sender thread (duty.c): starts the cycle once CUPTI is set up (nothing
 * at GPUPROF_CUPTI_DUTY=100) ... */
void duty_init(uint64_t now);
/* ... opens or closes a window when due, every tick; final: the last
 * tick (the open window is sent) */
void duty_tick(uint64_t now, int final);
/* how long the sender may sleep: at most max_ms, less before a switch */
unsigned duty_wait_ms(uint64_t now, unsigned max_ms);
/* the daemon asked for full collection for ms (GPI_CTL_FULL) */
void duty_full(uint64_t now, uint32_t ms);
/* windows opened so far */
uint64_t duty_windows(void);
/* a window is open, or there is no cycle (the kinds are as set up) */
int duty_collecting(void);
void duty_atfork_child(void);

/* ------------------------------------------------------------ coexistence */

/* PyTorch's CUDA library (and with it Kineto) is loaded in the process */
int coexist_torch_loaded(void);
/* Sender thread, every tick: calls = API records drained, bufs =
 * completed activity buffers taken, flushed = a periodic flush was
 * asked for. Decides whether to step aside (GPUPROF_CUPTI_YIELD). */
void coexist_tick(uint64_t now, size_t calls, size_t bufs, int flushed);
/* Sender thread: GPU work went on without a buffer of ours for a while:
 * another tool may hold the activity API (the duty cycle then leaves the
 * kinds as they are until that is settled). */
int coexist_suspected(void);
/* Sender thread: the daemon asked us to give CUPTI up (GPI_CTL_RELEASE). */
void coexist_release(void);
/* buffers.c: how many buffers CUPTI has asked us for so far */
uint64_t buffers_requests(void);

/* Emitters (sender.c): room for a record in the current batch, sending
 * the batch first when full. emit_string*() give a string's id, its
 * definition added first when this connection lacks it, with room kept
 * for the record that uses it (and, first_of_two, one more string). */
void *emit(uint16_t type, size_t len);
uint32_t emit_string(const char *text);
uint32_t emit_string_first_of_two(const char *text);
/* ... for a string that never changes (names_intern_const) */
uint32_t emit_const_string(const char *text);

#endif
