// SPDX-License-Identifier: MIT
/*
 * libgpuprof-cupti.so's entry point: the CUDA driver loads the library
 * named by CUDA_INJECTION64_PATH and calls InitializeInjection() while it
 * initializes. We subscribe to CUPTI (stepping aside when another tool
 * already did), make CUPTI's clock CLOCK_MONOTONIC, enable the activity
 * kinds and callbacks asked for, and start the sender thread. Whatever
 * fails turns its feature off and is reported in the stats record: the
 * application never notices us.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuptilib.h"
#include "pcsamp.h"

struct gpi gpi;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_done;
static CUpti_SubscriberHandle sub;
/* our buffer callbacks are registered and CUPTI is alive (read by the
 * sender thread) */
static _Atomic int activity_ours;
/* we hold the subscription (sub is valid) */
static _Atomic int subscribed;
/* stepped aside (sender thread only) */
static int stepped;
/* stepped aside: the timestamp callback answers with CUPTI's own clock */
static _Atomic int clock_default;
/* Letting the subscription go (gpi_cupti_step_aside): set, callbacks of
 * ours do nothing (callbacks.c) ... */
_Atomic int gpi_release_pending;
/* ... and this counts the callbacks of ours running now, on any thread */
_Atomic int gpi_cb_inflight;
static uint64_t release_asked;
/* the duty cycle switched the API callbacks off (sender thread only) */
static int api_duty_off;
/* GPUPROF_CUPTI_IDLE=unsubscribe: the subscription was let go (or is being
 * let go) for the time between two windows, and the next window takes it
 * back (sender thread only) */
static int idle_out;

static const struct {
	uint32_t feature;
	CUpti_ActivityKind kind;
	int optional; /* refused: noted in last_error, the feature stays on */
} kinds[] = {
	/* never CUPTI_ACTIVITY_KIND_KERNEL: it serializes every kernel */
	{GPI_F_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
	{GPI_F_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY},
	/* peer to peer only: a host without it still has its copies */
	{GPI_F_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, 1},
	{GPI_F_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET},
	{GPI_F_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
	/* which cudaEventRecord a wait waits on (event id -> the record's
	 * correlation id and stream); its deviceTimestamp field stays off
	 * (cuptiActivityEnableCudaEventDeviceTimestamps): the link needs no
	 * device time */
	{GPI_F_EVENT, CUPTI_ACTIVITY_KIND_CUDA_EVENT},
	{GPI_F_GRAPH, CUPTI_ACTIVITY_KIND_GRAPH_TRACE},
	{GPI_F_NVTX, CUPTI_ACTIVITY_KIND_MARKER},
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
static int kind_on[NKINDS];

uint64_t gpi_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void gpi_fail(uint32_t f, int err)
{
	atomic_fetch_or(&gpi.failed, f);
	atomic_fetch_and(&gpi.on, ~f);
	atomic_store(&gpi.last_error, err);
}

static uint64_t CUPTIAPI mono_timestamp(void)
{
	struct timespec ts;

	/* The callback is process-global and cannot be taken back once a
	 * kind is enabled: after we stepped aside, the tool that now reads
	 * the records gets the clock CUPTI would have used on Linux. */
	if (!atomic_load_explicit(&clock_default, memory_order_relaxed))
		return gpi_now();
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void CUPTIAPI request_cb(uint8_t **buf, size_t *size, size_t *max_records)
{
	buffers_request_cb(buf, size, max_records);
}

static void CUPTIAPI complete_cb(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
				 size_t valid)
{
	buffers_complete_cb(ctx, stream, buf, size, valid);
}

static int32_t driver_version(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
	int (*get)(int *);
	int v = -1;

	if (!h)
		return -1;
	get = (int (*)(int *))dlsym(h, "cuDriverGetVersion");
	if (!get || get(&v))
		v = -1;
	dlclose(h);
	return v;
}

/* 0, or -EBUSY when another subscriber holds CUPTI (its name kept) */
static int subscribe(void)
{
	CUptiResult r;

	if (cl->cuptiSubscribe_v2) {
		char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
		CUpti_SubscriberParams p = {
			.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
			.subscriberName = "gpuprof",
			.oldSubscriberName = old,
			.oldSubscriberSize = sizeof(old),
		};

		r = cl->cuptiSubscribe_v2(&sub, gpi_api_cb, NULL, &p);
		if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
			snprintf(gpi.conflict, sizeof(gpi.conflict), "%s",
				 old[0] ? old : "unknown");
	} else {
		r = cl->cuptiSubscribe(&sub, gpi_api_cb, NULL);
		if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
			strcpy(gpi.conflict, "unknown");
	}
	if (r == CUPTI_SUCCESS) {
		atomic_store(&subscribed, 1);
		return 0;
	}
	atomic_store(&gpi.last_error, (int32_t)r);
	return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? -EBUSY : -EIO;
}

static void set_clock(void)
{
	/* before any kind is enabled: switching later mixes two clocks */
	if (cl->cuptiActivityRegisterTimestampCallback &&
	    cl->cuptiActivityRegisterTimestampCallback(mono_timestamp) == CUPTI_SUCCESS) {
		gpi.mono = 1;
		atomic_fetch_or(&gpi.on, GPI_F_MONO);
	}
}

static int setup_buffers(void)
{
	uint8_t zeroed = 1;
	size_t len = sizeof(zeroed);

	if (buffers_init())
		return -ENOMEM;
	/* our buffers come zeroed: CUPTI need not zero them on the app's thread */
	if (cl->cuptiActivitySetAttribute)
		cl->cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &len,
					      &zeroed);
	if (cl->cuptiActivityRegisterCallbacks(request_cb, complete_cb) != CUPTI_SUCCESS)
		return -EIO;
	activity_ours = 1;
	return 0;
}

static void enable_kinds(void)
{
	for (size_t i = 0; i < NKINDS; i++) {
		uint32_t f = kinds[i].feature;
		CUptiResult r;

		if (!(gpi.cfg.features & f) || (atomic_load(&gpi.failed) & f))
			continue;
		r = cl->cuptiActivityEnable(kinds[i].kind);
		if (r != CUPTI_SUCCESS) {
			if (kinds[i].optional)
				atomic_store(&gpi.last_error, (int32_t)r);
			else
				gpi_fail(f, r);
			continue;
		}
		kind_on[i] = 1;
		atomic_fetch_or(&gpi.on, f);
	}
	/* a feature of two kinds whose second failed: the first goes too */
	for (size_t i = 0; i < NKINDS; i++) {
		if (kind_on[i] && (atomic_load(&gpi.failed) & kinds[i].feature)) {
			cl->cuptiActivityDisable(kinds[i].kind);
			kind_on[i] = 0;
		}
	}
}

static void enable_api(void)
{
	int r;

	if (!(gpi.cfg.features & GPI_F_API))
		return;
	r = callbacks_enable(sub);
	if (r)
		gpi_fail(GPI_F_API, r);
	else
		atomic_fetch_or(&gpi.on, GPI_F_API);
}

static void enable_pc(void)
{
	int r;

	if (!(gpi.cfg.features & GPI_F_PC))
		return;
	r = pcsamp_setup(sub);
	if (r)
		gpi_fail(GPI_F_PC, r);
	else
		atomic_fetch_or(&gpi.on, GPI_F_PC);
}

void gpi_cupti_fatal(CUptiResult r)
{
	/* CUPTI calls cuptiFinalize() itself after this callback: nothing of
	 * ours may call it again; what was collected still goes out */
	atomic_store(&activity_ours, 0);
	atomic_store(&subscribed, 0); /* gone with it */
	gpi_fail(atomic_load(&gpi.on) & ~GPI_F_MONO, (int32_t)r);
	atomic_store(&gpi.state, GPI_ST_DISABLED);
}

int gpi_cupti_collecting(void)
{
	return !stepped && (atomic_load(&activity_ours) || atomic_load(&subscribed));
}

int gpi_cupti_subscribed(void)
{
	return atomic_load(&subscribed);
}

static void unsubscribe(void)
{
	/* let go between windows, the API records come back with the next */
	if (!idle_out)
		atomic_fetch_and(&gpi.on, ~GPI_F_API);
	if (atomic_exchange(&subscribed, 0)) {
		cl->cuptiUnsubscribe(sub);
		if (idle_out)
			atomic_fetch_add(&gpi.n.idle_unsubs, 1);
	}
}

/*
 * Sender thread: lets a subscription go that a release asked for, as soon
 * as no callback of ours runs. Why wait for that at all: cuptiUnsubscribe
 * is documented thread safe, but CUPTI does not say what becomes of a
 * callback it is already running for us on another thread (an application
 * thread inside a CUDA call, a resource callback in a module load), and
 * such a callback may still call CUPTI (PC sampling's drains and
 * toggles) and push records. So the callback and this function follow
 * the two-flag rule: a callback increments gpi_cb_inflight and then reads
 * gpi_release_pending; we set gpi_release_pending (before this is called)
 * and then read gpi_cb_inflight; all sequentially consistent. Either we
 * see its increment (and wait for the next tick), or it sees the pending
 * release and returns without doing anything. When we read 0, no callback
 * of ours is past that check, and none that starts later does anything:
 * the subscription can go now, from this thread, whatever the
 * application's threads do. The process idle (no CUDA call in flight)
 * reads 0 at once: the release is prompt, not deferred to the next call.
 *
 * A callback of ours runs for microseconds, so the next tick (20 ms)
 * normally reads 0 even in a busy process; should every look find one
 * running (many threads always inside CUDA calls, or a callback blocked),
 * we let go after ms anyway, since CUPTI calls the function thread safe.
 */
void gpi_cupti_release_poll(uint64_t now, unsigned ms)
{
	if (!atomic_load(&gpi_release_pending) || !atomic_load(&subscribed))
		return;
	/* now may be older than release_asked: the tick read the clock
	 * before a request in the same tick asked for the release */
	if (atomic_load(&gpi_cb_inflight) == 0 ||
	    (now >= release_asked && now - release_asked >= (uint64_t)ms * 1000000u))
		unsubscribe();
}

/* Sender thread: asks for the subscription to go (step aside with let_go,
 * or a release on request after we stepped aside but kept it under
 * GPUPROF_CUPTI_YIELD=never) and lets it go at once when no callback of
 * ours runs, else in a later tick (gpi_cupti_release_poll) */
void gpi_cupti_let_go(void)
{
	if (getpid() != gpi.pid || !atomic_load(&subscribed) || atomic_load(&gpi_release_pending))
		return;
	release_asked = gpi_now();
	atomic_store(&gpi_release_pending, 1);
	gpi_cupti_release_poll(release_asked, ~0u);
}

/*
 * The idle subscription (GPUPROF_CUPTI_IDLE=unsubscribe). Between two
 * windows the kinds and our launch callbacks are off, yet a subscribed
 * process still pays CUPTI's callback dispatch on its CUDA calls. With
 * unsubscribe a window's close lets the subscription go (kinds off and
 * buffers flushed first, then the release rule of gpi_cupti_release_poll:
 * not while a callback of ours runs, never from inside one) and the next
 * window's open subscribes again, then enables the fatal error callback
 * and our API callbacks (a new subscription has none), then the kinds.
 * The activity API (buffer and timestamp callbacks, kinds) belongs to no
 * subscriber and stays registered throughout.
 *
 * While we are out, another tool may subscribe (a profiler started
 * between two windows gets all of CUPTI, as after a release). Our next
 * subscribe then fails: we step aside for good, touching none of the
 * activity state (the other tool may have registered its own), and say
 * so in the stats. Not with PC sampling: its context and module
 * callbacks and its own window's launch callbacks need the subscription
 * all the time (gpi_cupti_idle_unsub). Nor at GPUPROF_CUPTI_DUTY=100: no
 * window ever closes.
 */
int gpi_cupti_idle_unsub(void)
{
	return gpi.cfg.idle == GPI_IDLE_UNSUBSCRIBE && !(gpi.cfg.features & GPI_F_PC) &&
	       gpi.cfg.duty < 100;
}

int gpi_cupti_idle_out(void)
{
	return idle_out && gpi_cupti_collecting();
}

/* Takes the subscription back after the idle time: 0, -EBUSY (another
 * tool subscribed meanwhile: its name in gpi.conflict) or -EIO. */
static int idle_return(void)
{
	int r;

	if (atomic_load(&subscribed)) {
		/* a callback of ours kept it from going: it simply stays
		 * (our callbacks were never switched off) */
		atomic_store(&gpi_release_pending, 0);
		idle_out = 0;
		return 0;
	}
	r = subscribe();
	if (r) {
		atomic_fetch_add(&gpi.n.idle_sub_failed, 1);
		return r;
	}
	atomic_fetch_add(&gpi.n.idle_subs, 1);
	cl->cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
	/* our callbacks work again: the old subscription's went long ago */
	atomic_store(&gpi_release_pending, 0);
	idle_out = 0;
	if ((atomic_load(&gpi.on) & GPI_F_API) && (r = callbacks_set(sub, 1)))
		gpi_fail(GPI_F_API, r);
	return 0;
}

/* Sender thread, at a window's close: kinds off, buffers flushed, then
 * the subscription goes as soon as no callback of ours runs. */
static void idle_let_go(void)
{
	cl->cuptiActivityFlushAll(0);
	idle_out = 1;
	gpi_cupti_let_go();
}

/* The subscription could not be taken back (err from idle_return): step
 * aside for good, the activity state left as it is (ours are off since
 * the window closed, and the tool that subscribed may have registered
 * its own buffers). */
static void idle_step_aside(int err)
{
	char why[64];

	if (err == -EBUSY)
		snprintf(why, sizeof(why), "%.36s subscribed between windows", gpi.conflict);
	else
		snprintf(why, sizeof(why), "subscribing again failed (CUPTI error %d)",
			 (int)atomic_load(&gpi.last_error));
	gpi_cupti_step_aside(why, 0, 1);
}

void gpi_cupti_step_aside(const char *why, int kinds_ours, int let_go)
{
	if (getpid() != gpi.pid || !gpi_cupti_collecting())
		return;
	stepped = 1;
	if (kinds_ours && atomic_load(&activity_ours)) {
		/* nobody else uses them yet: switch ours off and take our
		 * buffers back (the sender walks them on its next tick) */
		for (size_t i = 0; i < NKINDS; i++)
			if (kind_on[i])
				cl->cuptiActivityDisable(kinds[i].kind);
		cl->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	/* from here on CUPTI's activity state is the other tool's: no flush,
	 * no disable, not even at exit */
	atomic_store(&activity_ours, 0);
	atomic_store(&clock_default, 1);
	if (cl->cuptiActivitySetAttribute) {
		/* the other tool's buffers need not come zeroed: CUPTI's default */
		uint8_t zeroed = 0;
		size_t len = sizeof(zeroed);

		cl->cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &len,
					      &zeroed);
	}
	pcsamp_stop(); /* PC sampling is ours to end too */
	snprintf(gpi.conflict, sizeof(gpi.conflict), "%s", why);
	atomic_fetch_and(&gpi.on, GPI_F_MONO | GPI_F_API);
	atomic_store(&gpi.state, GPI_ST_CONFLICT);
	/* let go between windows: for good now, unless the policy keeps the
	 * subscription (for the API records) and it can be taken back */
	if (idle_out && (let_go || idle_return())) {
		idle_out = 0;
		if (!atomic_load(&subscribed))
			atomic_fetch_and(&gpi.on, ~GPI_F_API);
	}
	if (api_duty_off && !let_go && atomic_load(&subscribed)) {
		/* kept subscribed for the API records: they come back on */
		if (!callbacks_set(sub, 1))
			api_duty_off = 0;
	}
	if (!let_go)
		return; /* keep the subscription (and the API records) */
	gpi_cupti_let_go();
}

/* The API callbacks follow the duty cycle unless PC sampling's own
 * cycle needs the launch callbacks, or a release is letting the
 * subscription go. */
static int api_switchable(void)
{
	uint32_t on = atomic_load(&gpi.on);

	return atomic_load(&subscribed) && (on & GPI_F_API) && !(on & GPI_F_PC) &&
	       !atomic_load(&gpi_release_pending);
}

int gpi_cupti_duty_set(int on)
{
	int r;

	if (getpid() != gpi.pid || stepped || !atomic_load(&activity_ours))
		return -EPERM;
	if (on) {
		if (idle_out && (r = idle_return())) {
			idle_step_aside(r);
			return -EPERM;
		}
		/* callbacks first, kinds second: a launch between them has
		 * its API record and no activity, which the daemon takes */
		if (api_duty_off && api_switchable() && !callbacks_set(sub, 1))
			api_duty_off = 0;
		for (size_t i = 0; i < NKINDS; i++) {
			if (!kind_on[i])
				continue;
			r = cl->cuptiActivityEnable(kinds[i].kind);
			if (r != CUPTI_SUCCESS) {
				kind_on[i] = 0;
				if (!kinds[i].optional)
					gpi_fail(kinds[i].feature, r);
			}
		}
		return 0;
	}
	for (size_t i = 0; i < NKINDS; i++)
		if (kind_on[i])
			cl->cuptiActivityDisable(kinds[i].kind);
	if (gpi_cupti_idle_unsub() && atomic_load(&subscribed) &&
	    !atomic_load(&gpi_release_pending)) {
		/* the callbacks need not be switched off one by one: from
		 * here on they do nothing, and they go with the subscription */
		idle_let_go();
		return 0;
	}
	if (!api_duty_off && api_switchable() && !callbacks_set(sub, 0))
		api_duty_off = 1;
	/* what completed in the window, now rather than at the next
	 * periodic flush (not forced: records still being filled in come
	 * with a later flush) */
	cl->cuptiActivityFlushAll(0);
	return 0;
}

void gpi_cupti_flush(int forced)
{
	if (atomic_load(&activity_ours) && getpid() == gpi.pid)
		cl->cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
}

static void at_exit(void)
{
	if (getpid() != gpi.pid)
		return; /* a forked child: nothing of CUPTI's or ours runs here */
	if (atomic_load(&activity_ours) && (atomic_load(&gpi.on) & GPI_F_PC))
		pcsamp_finish(); /* the last window's samples */
	if (atomic_load(&activity_ours)) {
		for (size_t i = 0; i < NKINDS; i++)
			if (kind_on[i])
				cl->cuptiActivityDisable(kinds[i].kind);
		cl->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
		/* every record that may share CUPTI's function names is read */
		if (gpi.cfg.features & GPI_F_PC)
			pcsamp_release_names();
	}
	sender_finish(100); /* a bounded wait: exit never hangs on us */
}

static void atfork_child(void)
{
	apiring_atfork_child();
	buffers_atfork_child();
	pcsamp_atfork_child();
	duty_atfork_child();
	sender_atfork_child();
}

/* Sets CUPTI up; returns nothing: every outcome is in gpi.state. */
static void setup_cupti(void)
{
	int err;

	/* asked for nothing: do not take the one CUPTI subscription */
	if (!gpi.cfg.features)
		return;
	err = cuptilib_open();
	if (err) {
		atomic_store(&gpi.last_error, err);
		return;
	}
	if (gpi.cfg.yield == GPI_YIELD_TORCH && coexist_torch_loaded()) {
		/* PyTorch's profiler may want CUPTI: leave it whole */
		snprintf(gpi.conflict, sizeof(gpi.conflict), "libtorch_cuda loaded (yield=torch)");
		atomic_store(&gpi.state, GPI_ST_CONFLICT);
		return;
	}
	err = subscribe();
	if (err == -EBUSY) {
		/* another tool (Nsight, Kineto ...) holds CUPTI: touch
		 * nothing of its process-global state */
		atomic_store(&gpi.state, GPI_ST_CONFLICT);
		return;
	}
	if (err)
		return;
	/* CUPTI's own fatal errors: it detaches, we stop calling it */
	cl->cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
	set_clock();
	enable_pc();
	if (setup_buffers()) {
		gpi_fail(gpi.cfg.features & ~GPI_F_API, CUPTI_ERROR_UNKNOWN);
	} else {
		enable_kinds();
	}
	enable_api();
	if (atomic_load(&gpi.on) & ~GPI_F_MONO)
		atomic_store(&gpi.state, GPI_ST_ACTIVE);
}

static void start(void)
{
	config_read(&gpi.cfg);
	if (!gpi.cfg.enabled)
		return;
	gpi.pid = getpid();
	gpi.state = GPI_ST_DISABLED;
	gpi.driver_version = driver_version();
	buffers_wake_init();
	setup_cupti();
	atexit(at_exit);
	pthread_atfork(NULL, NULL, atfork_child);
	sender_start(); /* also when CUPTI failed: the daemon shows why */
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	pthread_mutex_lock(&init_lock);
	if (!init_done) {
		init_done = 1;
		start();
	}
	pthread_mutex_unlock(&init_lock);
	return 1;
}
