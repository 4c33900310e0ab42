// SPDX-License-Identifier: MIT
/*
 * The sender thread: owns the socket and the batch being built. Every
 * tick it connects if it has no daemon (non-blocking, with a backoff),
 * asks CUPTI for its buffers now and then, converts completed buffers and
 * drained API records into records, and sends the batch with MSG_DONTWAIT:
 * a batch the socket cannot take, or built while no daemon listens, is
 * dropped and counted. A new connection starts with a HELLO message and
 * sends string definitions again as they are needed. The daemon may send
 * requests back (gpi_control); they are read once a tick.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "pcsamp.h"

#define TICK_MS 20u
#define BACKOFF_MIN_MS 50u
#define BACKOFF_MAX_MS 1000u
#define STATS_MS 1000u
/* Room kept behind a string definition so that the record using it lands
 * in the same batch: were they split and the first batch dropped, the
 * record would name an id the daemon never got. */
#define REC_ROOM 256u			/* any record */
#define STR_ROOM (GPI_STRING_MAX + 24u) /* any string definition */

static struct wire w;
static int fd = -1;
static uint32_t seq;
static int ever_connected;
/* the daemon's end runs as root or as us: its requests are taken */
static int peer_trusted;
static uint64_t next_try, backoff_ms = BACKOFF_MIN_MS, last_stats, last_flush;

static pthread_t thread;
static int started;
static _Atomic int finishing;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done;

static void drop_batch(void)
{
	atomic_fetch_add_explicit(&gpi.n.batches_dropped, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&gpi.n.records_dropped, w.nrec, memory_order_relaxed);
	/* the batch may have carried definitions the daemon now lacks */
	names_forget_sent();
	pcsamp_forget_sent();
}

static void disconnect(void)
{
	close(fd);
	fd = -1;
	next_try = gpi_now() + (uint64_t)backoff_ms * 1000000u;
}

static void flush_batch(void)
{
	struct gpi_hdr *h = (struct gpi_hdr *)w.buf;

	if (!w.nrec)
		return;
	if (fd < 0) {
		drop_batch();
	} else {
		h->seq = seq++;
		if (send(fd, w.buf, w.used, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)w.used) {
			atomic_fetch_add_explicit(&gpi.n.batches_sent, 1, memory_order_relaxed);
		} else {
			int err = errno;

			drop_batch();
			if (err != EAGAIN && err != EWOULDBLOCK && err != ENOBUFS)
				disconnect();
		}
	}
	wire_reset(&w, 0);
}

void *emit(uint16_t type, size_t len)
{
	void *p = wire_add(&w, type, len);

	if (!p) {
		flush_batch();
		p = wire_add(&w, type, len);
	}
	return p;
}

static uint32_t emit_interned(const char *text, int constant, size_t tail)
{
	uint32_t id, len;
	int define;
	const char *t;

	if (!text || !*text)
		return 0;
	id = constant ? names_intern_const(text, &define) : names_intern(text, &define);
	if (!id || !define)
		return id;
	t = names_text(id, &len);
	if (w.used + sizeof(struct gpi_string) + len + 8 + tail > GPI_MSG_MAX)
		flush_batch();
	if (wire_add_string(&w, id, t, len))
		return 0;
	names_mark_sent(id);
	return id;
}

uint32_t emit_string(const char *text)
{
	return emit_interned(text, 0, REC_ROOM);
}

uint32_t emit_string_first_of_two(const char *text)
{
	return emit_interned(text, 0, STR_ROOM + REC_ROOM);
}

uint32_t emit_const_string(const char *text)
{
	return emit_interned(text, 1, REC_ROOM);
}

static int send_hello(void)
{
	static struct wire hw;
	struct gpi_hello *he;

	wire_reset(&hw, 0);
	he = wire_add(&hw, GPI_HELLO, sizeof(*he));
	he->lib_version = GPI_VERSION;
	he->cupti_version = gpi.cupti_version;
	he->driver_version = gpi.driver_version;
	he->features = gpi.cfg.features | (gpi.mono ? GPI_F_MONO : 0);
	he->mono_ns = gpi_now();
	if (send(fd, hw.buf, hw.used, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)hw.used)
		return -errno;
	seq = 1;
	return 0;
}

static void try_connect(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	/* config_read() bounds the path below sizeof(sun_path) */
	memcpy(sa.sun_path, gpi.cfg.socket, strlen(gpi.cfg.socket) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && !send_hello()) {
		struct ucred cr;
		socklen_t len = sizeof(cr);

		peer_trusted = !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) &&
			       (cr.uid == 0 || cr.uid == getuid());
		backoff_ms = BACKOFF_MIN_MS;
		names_forget_sent();
		pcsamp_forget_sent();
		if (ever_connected)
			atomic_fetch_add_explicit(&gpi.n.reconnects, 1, memory_order_relaxed);
		ever_connected = 1;
		last_stats = 0; /* stats right away: the daemon shows our state */
		return;
	}
	if (fd >= 0)
		disconnect();
	else
		next_try = gpi_now() + (uint64_t)backoff_ms * 1000000u;
	backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff_ms * 2;
}

/* what the daemon was last told of our state and subscription */
static uint32_t told_state, told_flags = ~0u;

static uint32_t stats_flags(void)
{
	return GPI_SF_SUB_KNOWN | (gpi_cupti_subscribed() ? GPI_SF_SUBSCRIBED : 0) |
	       (gpi.cfg.idle == GPI_IDLE_UNSUBSCRIBE ? GPI_SF_IDLE_UNSUB : 0) |
	       (gpi_cupti_idle_unsub() ? GPI_SF_IDLE_APPLIES : 0) |
	       (gpi_cupti_idle_out() ? GPI_SF_IDLE_OUT : 0);
}

/* The state or the subscription changed since the last stats: the
 * daemon hears of it in this tick (an operator's release waits on it). */
static int stats_changed(void)
{
	return atomic_load(&gpi.state) != told_state || stats_flags() != told_flags;
}

static void emit_stats(void)
{
	uint32_t conflict = emit_string(gpi.conflict);
	struct gpi_stats *s = emit(GPI_STATS, sizeof(*s));

	if (!s)
		return;
	s->state = told_state = atomic_load(&gpi.state);
	s->flags = told_flags = stats_flags();
	s->on = atomic_load(&gpi.on);
	s->failed = atomic_load(&gpi.failed);
	s->last_error = atomic_load(&gpi.last_error);
	s->conflict = conflict;
	s->records = atomic_load(&gpi.n.records);
	s->cupti_dropped = atomic_load(&gpi.n.cupti_dropped);
	s->buffers_refused = atomic_load(&gpi.n.buffers_refused);
	s->api_dropped = atomic_load(&gpi.n.api_dropped);
	s->batches_sent = atomic_load(&gpi.n.batches_sent);
	s->batches_dropped = atomic_load(&gpi.n.batches_dropped);
	s->records_dropped = atomic_load(&gpi.n.records_dropped);
	s->reconnects = atomic_load(&gpi.n.reconnects);
	s->idle_unsubs = atomic_load(&gpi.n.idle_unsubs);
	s->idle_subs = atomic_load(&gpi.n.idle_subs);
	s->idle_sub_failed = atomic_load(&gpi.n.idle_sub_failed);
	pcsamp_emit_stats();
}

static void emit_api(const struct api_ev *ev, void *arg)
{
	uint32_t name = emit_const_string(ev->name);
	struct gpi_api *a = emit(GPI_API, sizeof(*a));

	convert_api_seen(ev);

	if (!a)
		return;
	a->enter = ev->enter;
	a->exit = ev->exit;
	a->corr = ev->corr;
	a->tid = ev->tid;
	a->name = name;
	a->cbid = ev->cbid;
	a->domain = ev->domain;
	a->failed = ev->failed;
}

/* The daemon's requests (cupti_abi.h, gpi_control): anything malformed,
 * unknown or from an untrusted peer is ignored. A message left unread
 * costs nothing: the daemon sends very few. */
static void read_control(void)
{
	uint8_t m[64] __attribute__((aligned(8)));
	const struct gpi_hdr *h = (const void *)m;
	const struct gpi_control *c = (const void *)(m + sizeof(*h));
	ssize_t n;

	while ((n = recv(fd, m, sizeof(m), MSG_DONTWAIT)) > 0) {
		if (!peer_trusted || (size_t)n < sizeof(*h) + sizeof(*c) || h->magic != GPI_MAGIC ||
		    h->version != GPI_VERSION || h->nrec != 1 || c->h.type != GPI_CONTROL ||
		    c->h.len < sizeof(*c))
			continue;
		if (c->op == GPI_CTL_RELEASE)
			coexist_release();
		else if (c->op == GPI_CTL_FULL)
			duty_full(gpi_now(), c->arg);
	}
}

/* *calls, *bufs: how many API records and activity buffers it handled */
static void drain(size_t *calls, size_t *bufs)
{
	uint8_t *buf;
	size_t valid;

	*calls = apiring_drain(emit_api, NULL);
	*bufs = 0;
	while ((buf = buffers_take(&valid))) {
		/* the calls behind buf's records were made before it completed:
		 * their API records first (an event record takes its call's
		 * time, convert_api_seen) */
		*calls += apiring_drain(emit_api, NULL);
		convert_buffer(buf, valid);
		buffers_put(buf, valid);
		(*bufs)++;
	}
	pcsamp_emit();
}

static void tick(int final)
{
	uint64_t now = gpi_now();
	size_t calls, bufs;
	int flushed = 0;

	if (fd < 0 && now >= next_try)
		try_connect();
	if (!final && now - last_flush >= (uint64_t)gpi.cfg.flush_ms * 1000000u) {
		gpi_cupti_flush(0); /* the final flush (forced) is the exit handler's */
		if (atomic_load(&gpi.on) & GPI_F_PC)
			pcsamp_drain_all();
		last_flush = now;
		flushed = 1;
	}
	duty_tick(now, final);
	drain(&calls, &bufs);
	if (!final && fd >= 0)
		read_control();
	if (!final)
		coexist_tick(now, calls, bufs, flushed);
	if (final ||
	    (fd >= 0 && (now - last_stats >= (uint64_t)STATS_MS * 1000000u || stats_changed()))) {
		emit_stats();
		last_stats = now;
	}
	flush_batch();
}

static void *sender_main(void *arg)
{
	duty_init(gpi_now());
	while (!atomic_load(&finishing)) {
		tick(0);
		buffers_wait(duty_wait_ms(gpi_now(), TICK_MS));
	}
	tick(1);
	pthread_mutex_lock(&done_lock);
	done = 1;
	pthread_cond_broadcast(&done_cond);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

int sender_start(void)
{
	pthread_attr_t a;
	sigset_t all, old;
	int err;

	wire_reset(&w, 0);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	/* the application's signals are not ours to take */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&thread, &a, sender_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (err)
		return -err;
	started = 1;
	return 0;
}

void sender_finish(unsigned ms)
{
	struct timespec ts;

	if (!started)
		return;
	atomic_store(&finishing, 1);
	buffers_wake();
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&done_lock);
	while (!done)
		if (pthread_cond_timedwait(&done_cond, &done_lock, &ts))
			break;
	pthread_mutex_unlock(&done_lock);
}

void sender_atfork_child(void)
{
	/* the sender thread does not exist in the child: it stays idle, and
	 * must not write into the parent's connection */
	if (fd >= 0)
		close(fd);
	fd = -1;
	started = 0;
	pthread_mutex_init(&done_lock, NULL);
}
