// SPDX-License-Identifier: MIT
/*
 * The cupti collector: the listening SOCK_SEQPACKET socket the CUPTI
 * injection library connects to, the list of peers, a one-second tick for
 * the hello timeout, and the status block. A peer's own life is in
 * cupti_peer.c, its messages in cupti_dec.c.
 *
 * The socket is world-connectable (mode 0666): the CUDA processes a fleet
 * profiles run as every user. So its directory must be the daemon's: owned
 * by the daemon's uid and writable by nobody else, which is what makes
 * replacing a stale socket there safe (no one else can plant a link or swap
 * the name between the check and the unlink).
 */
#include "cupti.h"
#include "cupti_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "gpd.h"
#include "json.h"
#include "store/store.h"

/* Does something listen on path (another daemon's socket, not a stale
 * one)? A connect that is not refused says so. */
static bool socket_live(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool live;

	if (fd < 0)
		return false;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN ||
	       errno == EINPROGRESS;
	close(fd);
	return live;
}

/* Check the socket's directory and clear a stale socket in it. */
static int prepare_path(struct collector *c, const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], base[sizeof(dir)];
	struct stat st;
	int dfd, r = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cannot open the directory of %s: %s",
				    path, strerror(errno));
		return -errno;
	}
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE,
				    "the directory of %s must be owned by the daemon's uid and "
				    "writable by no one else",
				    path);
		r = -EPERM;
		goto out;
	}
	if (fstatat(dfd, basename(base), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			collector_set_state(c, COLLECTOR_UNAVAILABLE,
					    "%s exists and is not a socket", path);
			r = -EEXIST;
			goto out;
		}
		if (socket_live(path)) {
			collector_set_state(c, COLLECTOR_UNAVAILABLE,
					    "%s is in use by another process", path);
			r = -EADDRINUSE;
			goto out;
		}
		unlinkat(dfd, basename(base), 0);
	}
out:
	close(dfd);
	return r;
}

static int bind_socket(struct collector *c, struct cupti *cu)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *path = c->gpd->cfg.cupti.socket;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cupti.socket is too long");
		return -ENAMETOOLONG;
	}
	r = prepare_path(c, path);
	if (r < 0)
		return r;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 128) < 0) {
		r = -errno;
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cannot listen on %s: %s", path,
				    strerror(errno));
		close(fd);
		return r;
	}
	snprintf(cu->path, sizeof(cu->path), "%s", path);
	cu->lfd = fd;
	return 0;
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct cupti *cu = h->data;

	(void)events;
	if (status < 0)
		return;
	/* a bounded batch per wake-up, like the peers' reads */
	for (int i = 0; i < 32; i++) {
		int fd = accept4(cu->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				cupti_warn(cu, "accept: %s", strerror(errno));
			return;
		}
		if (cupti_peer_accept(cu, fd) < 0)
			cupti_warn(cu, "out of memory for a peer");
	}
}

static void on_tick(uv_timer_t *t)
{
	struct cupti *cu = t->data;
	uint64_t now = gpd_now_ns();
	struct cupti_peer *p = cu->peers, *next;

	for (; p; p = next) {
		next = p->next;
		cupti_peer_tick(p, now);
	}
}

static int cupti_open(struct collector *c)
{
	struct gpd *g = c->gpd;
	const struct config_cupti *cc = &g->cfg.cupti;
	struct store_stats st;
	struct cupti *cu;
	int r;

	if (!cc->socket[0]) {
		collector_set_state(c, COLLECTOR_UNAVAILABLE, "cupti.socket is empty (off)");
		return 0;
	}
	cu = calloc(1, sizeof(*cu));
	if (!cu)
		return -ENOMEM;
	cu->buf = malloc(GPI_MSG_MAX);
	if (!cu->buf) {
		free(cu);
		return -ENOMEM;
	}
	cu->col = c;
	cu->store = g->store;
	cu->loop = g->loop;
	cu->lfd = -1;
	cu->lim.max_peers = cc->max_peers;
	cu->lim.user_peers = cc->user_peers;
	cu->lim.peer_rate = cc->peer_rate;
	cu->lim.peer_strings = cc->peer_strings;
	cu->lim.peer_cubin_bytes = cc->peer_cubin_bytes;
	cu->lim.cubin_cache_bytes = cc->cubin_cache_bytes;
	cu->cubins_tail = &cu->cubins;
	pthread_mutex_init(&cu->cubins_mu, NULL);
	cu->lim.hello_timeout_ns = (uint64_t)cc->hello_timeout_ms * 1000000ull;
	/* every peer's names together keep at most a quarter of the store's
	 * string table, so the libraries cannot starve the other collectors */
	store_get_stats(g->store, &st);
	cu->lim.strings_total = st.table_budget / 4;
	c->priv = cu;
	r = bind_socket(c, cu);
	return r < 0 && c->state == COLLECTOR_UNAVAILABLE ? 0 : r;
}

static int cupti_start(struct collector *c)
{
	struct cupti *cu = c->priv;
	int r;

	if (!cu || cu->lfd < 0)
		return 0;
	r = uv_poll_init(cu->loop, &cu->lpoll, cu->lfd);
	if (r < 0)
		return r;
	cu->lpoll.data = cu;
	cu->lpoll_on = true;
	r = uv_timer_init(cu->loop, &cu->tick);
	if (r < 0)
		return r;
	cu->tick.data = cu;
	cu->tick_on = true;
	uv_poll_start(&cu->lpoll, UV_READABLE, on_accept);
	uv_timer_start(&cu->tick, on_tick, 1000, 1000);
	uv_unref((uv_handle_t *)&cu->tick);
	collector_set_state(c, COLLECTOR_ATTACHED, "listening on %s", cu->path);
	return 0;
}

void cupti_handle_closed(struct cupti *cu)
{
	if (--cu->closing == 0 && cu->free_pending) {
		cupti_cubins_free(cu);
		free(cu->buf);
		free(cu);
	}
}

static void handle_closed(uv_handle_t *h)
{
	cupti_handle_closed(h->data);
}

static void cupti_stop(struct collector *c)
{
	struct cupti *cu = c->priv;

	if (!cu)
		return;
	while (cu->peers)
		cupti_peer_close(cu->peers, CUPTI_CLOSE_HANGUP, "daemon stopping");
	if (cu->lpoll_on) {
		cu->lpoll_on = false;
		cu->closing++;
		uv_close((uv_handle_t *)&cu->lpoll, handle_closed);
	}
	if (cu->tick_on) {
		cu->tick_on = false;
		cu->closing++;
		uv_close((uv_handle_t *)&cu->tick, handle_closed);
	}
	if (cu->lfd >= 0) {
		unlink(cu->path);
		close(cu->lfd);
		cu->lfd = -1;
	}
	if (c->state == COLLECTOR_ATTACHED)
		collector_set_state(c, COLLECTOR_OFF, "stopped");
}

static void cupti_free(struct collector *c)
{
	struct cupti *cu = c->priv;

	if (!cu)
		return;
	cupti_stop(c);
	c->priv = NULL;
	/* the handles' close callbacks, still to run on the loop, free it */
	if (cu->closing) {
		cu->free_pending = true;
		return;
	}
	cupti_cubins_free(cu);
	free(cu->buf);
	free(cu);
}

static const char *const drop_names[CUPTI_DROP_MAX] = {
	[CUPTI_DROP_RATE] = "rate",	      [CUPTI_DROP_STRINGS] = "strings",
	[CUPTI_DROP_UNDEFINED] = "undefined", [CUPTI_DROP_TIME] = "time",
	[CUPTI_DROP_STORE] = "store",	      [CUPTI_DROP_PC] = "pc",
	[CUPTI_DROP_CUBIN] = "cubin",
};
static const char *const close_names[CUPTI_CLOSE_MAX] = {
	[CUPTI_CLOSE_MALFORMED] = "malformed", [CUPTI_CLOSE_NO_HELLO] = "no_hello",
	[CUPTI_CLOSE_EXITED] = "exited",       [CUPTI_CLOSE_HANGUP] = "hangup",
	[CUPTI_CLOSE_LIMIT] = "limit",	       [CUPTI_CLOSE_CRED] = "credentials",
};
static const char *const count_names[CUPTI_N_MAX] = {
	[CUPTI_N_KERNEL] = "kernel",   [CUPTI_N_MEMCPY] = "memcpy",
	[CUPTI_N_MEMSET] = "memset",   [CUPTI_N_SYNC] = "sync",
	[CUPTI_N_GRAPH] = "graph",     [CUPTI_N_API] = "api",
	[CUPTI_N_MARKER] = "marker",   [CUPTI_N_STRING] = "string",
	[CUPTI_N_STATS] = "stats",     [CUPTI_N_STALL_NAME] = "stall_name",
	[CUPTI_N_PC] = "pc",	       [CUPTI_N_CUBIN] = "cubin",
	[CUPTI_N_EVENT] = "event",     [CUPTI_N_WINDOW] = "window",
	[CUPTI_N_UNKNOWN] = "unknown",
};
static const char *const feature_names[] = {"kernel", "memcpy", "memset", "sync", "graph",
					    "api",    "nvtx",	"pc",	  "mono", "event"};

static cJSON *features_json(uint32_t mask)
{
	cJSON *a = cJSON_CreateArray();

	for (unsigned i = 0; a && i < sizeof(feature_names) / sizeof(feature_names[0]); i++)
		if (mask & 1u << i)
			cJSON_AddItemToArray(a, cJSON_CreateString(feature_names[i]));
	return a;
}

static const char *const pc_call_names[] = {
	[GPI_PC_CALL_NONE] = "",
	[GPI_PC_CALL_ENABLE] = "cuptiPCSamplingEnable",
	[GPI_PC_CALL_STALL_REASONS] = "cuptiPCSamplingGetStallReasons",
	[GPI_PC_CALL_CONFIGURE] = "cuptiPCSamplingSetConfigurationAttribute",
	[GPI_PC_CALL_START] = "cuptiPCSamplingStart",
	[GPI_PC_CALL_STOP] = "cuptiPCSamplingStop",
	[GPI_PC_CALL_GET_DATA] = "cuptiPCSamplingGetData",
	[GPI_PC_CALL_DISABLE] = "cuptiPCSamplingDisable",
};

/* PC sampling as the library counts it (GPI_PC_STATS) */
static void pc_library_json(cJSON *d, const struct gpi_pc_stats *s)
{
	uint32_t call = s->last_call;

	json_add_u64(d, "samples", s->samples);
	json_add_u64(d, "sent", s->sent);
	json_add_u64(d, "dropped", s->dropped);
	json_add_u64(d, "oom", s->oom);
	json_add_u64(d, "drains", s->drains);
	json_add_u64(d, "windows", s->windows);
	json_add_u64(d, "contexts_refused", s->contexts_refused);
	json_add_u64(d, "cubins", s->cubins);
	json_add_u64(d, "cubins_refused", s->cubins_refused);
	json_add_u64(d, "cubin_bytes", s->cubin_bytes);
	json_add_u64(d, "getdata_calls", s->getdata_calls);
	json_add_u64(d, "pcs", s->pcs);
	json_add_u64(d, "cupti_total_samples", s->total_samples);
	json_add_u64(d, "cupti_nonuser_samples", s->nonuser_samples);
	json_add_u64(d, "config_buffer_pcs", s->cfgbuf_pcs);
	json_add_u64(d, "names_held", s->names);
	json_add_u64(d, "names_untracked", s->names_untracked);
	json_add_u64(d, "contexts_on", s->contexts_on);
	json_add_u64(d, "contexts_ever", s->contexts_ever);
	json_add_u64(d, "contexts_off", s->contexts_off);
	json_add_u64(d, "errors", s->errors);
	json_add_u64(d, "period_log2", s->period);
	json_add_u64(d, "launch_ns", s->launch_ns);
	json_add_u64(d, "getdata_ns", s->getdata_ns);
	json_add_u64(d, "enables", s->enables);
	cJSON_AddStringToObject(d, "enable_mode", s->enable_mode ? "window" : "context");
	cJSON_AddNumberToObject(d, "last_error", s->last_error);
	cJSON_AddStringToObject(d, "last_error_call",
				call < sizeof(pc_call_names) / sizeof(pc_call_names[0])
					? pc_call_names[call]
					: "unknown");
}

void cupti_libsum_add(struct cupti_libsum *t, const struct gpi_stats *s)
{
	t->cupti_dropped += s->cupti_dropped;
	t->api_dropped += s->api_dropped;
	t->records_dropped += s->records_dropped;
	t->buffers_refused += s->buffers_refused;
	t->idle_unsubs += s->idle_unsubs;
	t->idle_subs += s->idle_subs;
	t->idle_sub_failed += s->idle_sub_failed;
}

int cupti_peer_subscribed(const struct cupti_peer *p)
{
	if (!p->lib.seen || !(p->lib.s.flags & GPI_SF_SUB_KNOWN))
		return -1;
	return !!(p->lib.s.flags & GPI_SF_SUBSCRIBED);
}

/* What the library holds between duty windows (GPUPROF_CUPTI_IDLE): the
 * mode asked for, whether it applies (not with PC sampling, nor without a
 * duty cycle: the hello's features tell which), whether the
 * subscription is let go right now (it comes back at the next window),
 * and the counts. A library that predates it said nothing: "subscribed",
 * which is what it did. */
static void idle_json(cJSON *o, const struct cupti_peer *p)
{
	const struct gpi_stats *s = &p->lib.s;
	cJSON *d = cJSON_AddObjectToObject(o, "idle");
	uint32_t fl = p->lib.seen ? s->flags : 0;

	if (!d)
		return;
	cJSON_AddStringToObject(d, "mode", fl & GPI_SF_IDLE_UNSUB ? "unsubscribe" : "subscribed");
	cJSON_AddBoolToObject(d, "applies", !!(fl & GPI_SF_IDLE_APPLIES));
	if ((fl & GPI_SF_IDLE_UNSUB) && !(fl & GPI_SF_IDLE_APPLIES))
		cJSON_AddStringToObject(d, "kept_for",
					p->features & GPI_F_PC ? "pc sampling" : "no duty cycle");
	cJSON_AddBoolToObject(d, "unsubscribed_now", !!(fl & GPI_SF_IDLE_OUT));
	json_add_u64(d, "unsubscribes", p->lib.seen ? s->idle_unsubs : 0);
	json_add_u64(d, "resubscribes", p->lib.seen ? s->idle_subs : 0);
	json_add_u64(d, "resubscribe_failures", p->lib.seen ? s->idle_sub_failed : 0);
}

static void peer_json(cJSON *arr, const struct cupti_peer *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *d;

	if (!o)
		return;
	json_add_u64(o, "pid", p->pid);
	cJSON_AddStringToObject(o, "comm", p->comm_text);
	json_add_u64(o, "uid", p->uid);
	json_add_u64(o, "owner", p->owner);
	cJSON_AddStringToObject(o, "state", cupti_peer_state_name(p->state));
	json_add_u64(o, "connected_ns", p->connected_ns);
	json_add_u64(o, "lib_version", p->lib_version);
	json_add_u64(o, "cupti_version", p->cupti_version);
	cJSON_AddNumberToObject(o, "driver_version", p->driver_version);
	cJSON_AddNumberToObject(o, "hello_delay_ns", (double)p->hello_delay_ns);
	cJSON_AddItemToObject(o, "features", features_json(p->features));
	cJSON_AddItemToObject(o, "on", features_json(p->lib.seen ? p->lib.s.on : 0));
	cJSON_AddItemToObject(o, "failed", features_json(p->lib.seen ? p->lib.s.failed : 0));
	cJSON_AddStringToObject(o, "conflict", p->lib.conflict);
	/* whether the library holds the process's one CUPTI subscription
	 * (what another profiler's cuptiSubscribe needs free); null: not
	 * said yet, or by a library that predates the flag */
	if (cupti_peer_subscribed(p) < 0)
		cJSON_AddNullToObject(o, "subscribed");
	else
		cJSON_AddBoolToObject(o, "subscribed", cupti_peer_subscribed(p));
	idle_json(o, p);
	cJSON_AddNumberToObject(o, "last_cupti_error", p->lib.seen ? p->lib.s.last_error : 0);
	cJSON_AddStringToObject(o, "last_error", p->last_error);
	json_add_u64(o, "messages", p->msgs);
	json_add_u64(o, "records", p->records);
	json_add_u64(o, "seq_gaps", p->seq_gaps);
	json_add_u64(o, "strings", p->strs.count);
	json_add_u64(o, "string_bytes", p->strs.bytes);
	d = cJSON_AddObjectToObject(o, "drops");
	for (int i = 0; d && i < CUPTI_DROP_MAX; i++)
		json_add_u64(d, drop_names[i], p->drops[i]);
	d = cJSON_AddObjectToObject(o, "library");
	if (d && p->lib.seen) {
		json_add_u64(d, "records", p->lib.s.records);
		json_add_u64(d, "cupti_dropped", p->lib.s.cupti_dropped);
		json_add_u64(d, "buffers_refused", p->lib.s.buffers_refused);
		json_add_u64(d, "api_dropped", p->lib.s.api_dropped);
		json_add_u64(d, "batches_sent", p->lib.s.batches_sent);
		json_add_u64(d, "batches_dropped", p->lib.s.batches_dropped);
		json_add_u64(d, "records_dropped", p->lib.s.records_dropped);
		json_add_u64(d, "reconnects", p->lib.s.reconnects);
	}
	/* the duty cycle: the share of the time since the first window that
	 * windows covered (100 without one: the library collects always) */
	d = cJSON_AddObjectToObject(o, "duty");
	if (d) {
		uint64_t now = gpd_now_ns();
		uint64_t span = p->windows && now > p->first_window_ns ? now - p->first_window_ns
								       : 0;

		json_add_u64(d, "percent", p->windows ? p->duty : 100);
		json_add_u64(d, "period_ms", p->period_ms);
		json_add_u64(d, "windows", p->windows);
		json_add_u64(d, "covered_ns", p->covered_ns);
		cJSON_AddNumberToObject(d, "covered_fraction",
					span ? (double)(p->covered_ns < span ? p->covered_ns
									     : span) /
							(double)span
					     : 1.0);
	}
	/* PC sampling as the library counts it (GPI_PC_STATS) */
	d = p->pc.lib_seen ? cJSON_AddObjectToObject(o, "pc_library") : NULL;
	if (d)
		pc_library_json(d, &p->pc.lib);
	cJSON_AddItemToArray(arr, o);
}

void cupti_status_json(struct gpd *g, cJSON *obj, uid_t uid, bool privileged)
{
	struct collector *c = NULL;
	struct cupti *cu;
	unsigned states[CUPTI_PEER_STATE_MAX] = {0};
	struct cupti_libsum lib;
	cJSON *o, *x, *arr;

	for (unsigned i = 0; i < g->ncollectors; i++)
		if (g->collectors[i]->ops == &cupti_collector_ops)
			c = g->collectors[i];
	if (!c)
		return;
	cu = c->priv;
	o = cJSON_AddObjectToObject(obj, "cupti");
	if (!o)
		return;
	cJSON_AddStringToObject(o, "state", collector_state_name(c->state));
	cJSON_AddStringToObject(o, "socket", cu ? cu->path : "");
	if (!cu)
		return;
	lib = cu->tot.lib; /* the closed peers', then the open ones' */
	for (const struct cupti_peer *p = cu->peers; p; p = p->next) {
		states[p->state]++;
		if (p->lib.seen)
			cupti_libsum_add(&lib, &p->lib.s);
	}
	json_add_u64(o, "peers", cu->npeers);
	json_add_u64(o, "peers_ever", cu->tot.peers_ever);
	json_add_u64(o, "max_peers", cu->lim.max_peers);
	x = cJSON_AddObjectToObject(o, "states");
	for (int i = 0; x && i < CUPTI_PEER_STATE_MAX; i++)
		json_add_u64(x, cupti_peer_state_name(i), states[i]);
	json_add_u64(o, "conflicts", states[CUPTI_PEER_CONFLICT]);
	json_add_u64(o, "messages", cu->tot.msgs);
	json_add_u64(o, "seq_gaps", cu->tot.seq_gaps);
	json_add_u64(o, "string_bytes", cu->strings_bytes);
	json_add_u64(o, "pc_samples", cu->tot.pc_samples);
	json_add_u64(o, "cubins", cu->tot.cubins);
	json_add_u64(o, "cubin_bytes", cu->cubins_bytes);
	x = cJSON_AddObjectToObject(o, "records");
	for (int i = 0; x && i < CUPTI_N_MAX; i++)
		json_add_u64(x, count_names[i], cu->tot.records[i]);
	x = cJSON_AddObjectToObject(o, "drops");
	for (int i = 0; x && i < CUPTI_DROP_MAX; i++)
		json_add_u64(x, drop_names[i], cu->tot.drops[i]);
	x = cJSON_AddObjectToObject(o, "closed");
	for (int i = 0; x && i < CUPTI_CLOSE_MAX; i++)
		json_add_u64(x, close_names[i], cu->tot.closed[i]);
	x = cJSON_AddObjectToObject(o, "library_drops");
	if (x) {
		json_add_u64(x, "cupti_dropped", lib.cupti_dropped);
		json_add_u64(x, "api_dropped", lib.api_dropped);
		json_add_u64(x, "records_dropped", lib.records_dropped);
		json_add_u64(x, "buffers_refused", lib.buffers_refused);
	}
	/* how often the libraries let CUPTI's subscription go between duty
	 * windows, took it back and failed to: whether an unsubscribe mode
	 * really ran, after its processes are gone */
	x = cJSON_AddObjectToObject(o, "library_idle");
	if (x) {
		json_add_u64(x, "unsubscribes", lib.idle_unsubs);
		json_add_u64(x, "resubscribes", lib.idle_subs);
		json_add_u64(x, "resubscribe_failures", lib.idle_sub_failed);
	}
	/* a member sees the peers whose records it may see: the owner is
	 * its uid exactly when the process was its own and readable */
	arr = cJSON_AddArrayToObject(o, "peer_list");
	for (const struct cupti_peer *p = cu->peers; arr && p; p = p->next)
		if (privileged || p->owner == uid)
			peer_json(arr, p);
	/* the last peers gone with PC counters, the same rule */
	arr = cJSON_AddArrayToObject(o, "pc_closed");
	for (unsigned i = 0; arr && i < cu->npc_closed; i++) {
		const struct cupti_pc_closed *pc = &cu->pc_closed[i];
		cJSON *e;

		if (!privileged && pc->owner != uid)
			continue;
		if (!(e = cJSON_CreateObject()))
			break;
		json_add_u64(e, "pid", pc->pid);
		json_add_u64(e, "closed_ns", pc->closed_ns);
		x = cJSON_AddObjectToObject(e, "pc_library");
		if (x)
			pc_library_json(x, &pc->s);
		cJSON_AddItemToArray(arr, e);
	}
}

static int control(struct gpd *g, pid_t pid, uid_t uid, bool privileged, uint32_t op, uint32_t arg,
		   const char **state, int *subscribed)
{
	struct {
		struct gpi_hdr h;
		struct gpi_control c;
	} m = {
		.h = {.magic = GPI_MAGIC, .version = GPI_VERSION, .nrec = 1},
		.c = {.h = {.type = GPI_CONTROL, .len = sizeof(struct gpi_control)},
		      .op = op,
		      .arg = arg},
	};
	struct cupti *cu = NULL;
	struct cupti_peer *p;

	for (unsigned i = 0; i < g->ncollectors; i++)
		if (g->collectors[i]->ops == &cupti_collector_ops)
			cu = g->collectors[i]->priv;
	if (!cu)
		return -ENODEV;
	/* the peers a caller may see are the ones it may release: nobody
	 * learns of, or stops, another user's process */
	for (p = cu->peers; p; p = p->next)
		if (!p->dead && p->pid == (uint32_t)pid && (privileged || p->owner == uid))
			break;
	if (!p)
		return -ESRCH;
	*state = cupti_peer_state_name(p->state);
	if (subscribed)
		*subscribed = cupti_peer_subscribed(p);
	if (send(p->fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(m))
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return 0;
}

int cupti_release(struct gpd *g, pid_t pid, uid_t uid, bool privileged, const char **state,
		  int *subscribed)
{
	return control(g, pid, uid, privileged, GPI_CTL_RELEASE, 0, state, subscribed);
}

int cupti_full(struct gpd *g, pid_t pid, uid_t uid, bool privileged, uint64_t ms)
{
	const char *state;

	return control(g, pid, uid, privileged, GPI_CTL_FULL,
		       (uint32_t)(ms < GPI_FULL_MAX_MS ? ms : GPI_FULL_MAX_MS), &state, NULL);
}

const struct collector_ops cupti_collector_ops = {
	.name = "cupti",
	.open = cupti_open,
	.start = cupti_start,
	.stop = cupti_stop,
	.free = cupti_free,
};
