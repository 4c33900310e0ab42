// SPDX-License-Identifier: MIT
/*
 * Sharing the process's one CUPTI with a tool that starts after us, on
 * the sender thread. CUPTI 13 allows one subscriber per process, and its
 * activity state is process-global: the buffer callbacks, the enabled
 * kinds and the timestamp callback belong to no subscriber. A profiler
 * started later in the process (PyTorch's, Kineto) fails to subscribe,
 * then registers its own buffer callbacks, which replaces ours, and
 * enables and later disables the kinds it wants, ours among them. Nothing
 * tells us; what we can see is its effect:
 *
 *   - our API callbacks keep seeing calls that put work on the GPU, while
 *     CUPTI neither asks us for a buffer nor hands one back across several
 *     of our flushes for GPUPROF_CUPTI_YIELD_QUIET_MS: our registration is
 *     gone. We then step aside (cupti.c): stop flushing, reading and
 *     touching the kinds (they are the other tool's now) and, unless the
 *     policy is "never", unsubscribe so that the other tool's next
 *     cuptiSubscribe succeeds (Kineto retries in its teardown and when it
 *     re-initializes after cuptiFinalize).
 *   - with GPUPROF_CUPTI_YIELD=torch, PyTorch's CUDA library in the
 *     process is enough: we step aside before its profiler can start, so
 *     Kineto gets a whole CUPTI (its subscription included).
 *   - the daemon asks (GPI_CTL_RELEASE, an operator freeing CUPTI before
 *     running a profiler): the same, under every policy, and a
 *     subscription kept after a takeover goes too. The unsubscription
 *     happens on the sender thread as soon as no callback of ours runs
 *     (at once in an idle process), and the stats that confirm it
 *     (GPI_SF_SUBSCRIBED clear) go out in the same tick.
 *
 * The first needs our API callbacks and every activity kind that those
 * calls produce (kernel, memcpy, memset); with fewer it stays off rather
 * than guess. A kernel that runs longer than the quiet time while more
 * than REPLACED_MIN_CALLS calls queue behind it would look the same: we
 * would step aside for nothing, which costs our data, never the
 * application's.
 */
#include <link.h>
#include <string.h>

#include "inject.h"

#define REPLACED_MIN_CALLS 32u
#define REPLACED_MIN_FLUSHES 2u
#define TORCH_CHECK_NS 1000000000ull
/* the latest a release waits for a callback of ours to return (cupti.c,
 * gpi_cupti_release_poll): normally none runs and it is immediate */
#define RELEASE_WAIT_MS 1000u
#define DETECT_FEATURES (GPI_F_API | GPI_F_KERNEL | GPI_F_MEMCPY | GPI_F_MEMSET)

static uint64_t quiet_since, calls_since, last_requests, last_torch_check;
static unsigned flushes_since;

static int torch_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(name, '/');

	base = base ? base + 1 : name;
	return !strncmp(base, "libtorch_cuda.so", strlen("libtorch_cuda.so"));
}

int coexist_torch_loaded(void)
{
	return dl_iterate_phdr(torch_cb, NULL) != 0;
}

/* Our activity callbacks look replaced: GPU work went on, buffers did not. */
static int replaced(uint64_t now, size_t calls, size_t bufs, int flushed)
{
	uint64_t req = buffers_requests();

	if ((atomic_load(&gpi.on) & DETECT_FEATURES) != DETECT_FEATURES)
		return 0;
	if (bufs || req != last_requests || !quiet_since) {
		last_requests = req;
		quiet_since = now;
		calls_since = 0;
		flushes_since = 0;
		return 0;
	}
	calls_since += calls;
	flushes_since += (unsigned)flushed;
	return calls_since >= REPLACED_MIN_CALLS && flushes_since >= REPLACED_MIN_FLUSHES &&
	       now - quiet_since >= (uint64_t)gpi.cfg.quiet_ms * 1000000u;
}

int coexist_suspected(void)
{
	return quiet_since && calls_since >= REPLACED_MIN_CALLS;
}

void coexist_release(void)
{
	/* our kinds are still ours unless a takeover is already suspected:
	 * switching them off then would cut the other tool's trace short */
	int suspected = coexist_suspected();

	if (gpi_cupti_collecting())
		gpi_cupti_step_aside("released on request", !suspected, 1);
	else
		gpi_cupti_let_go(); /* stepped aside already, the subscription kept */
}

void coexist_tick(uint64_t now, size_t calls, size_t bufs, int flushed)
{
	gpi_cupti_release_poll(now, RELEASE_WAIT_MS);
	if (!gpi_cupti_collecting())
		return;
	/* Between duty windows our kinds are off, so no buffer is due: the
	 * calls that PC sampling's launch callbacks still see then say
	 * nothing of a takeover (counted, they made the cycle hold still
	 * after its first window and auto step aside after the quiet time). */
	if (!duty_collecting())
		calls = 0;
	if (gpi.cfg.yield == GPI_YIELD_TORCH && now - last_torch_check >= TORCH_CHECK_NS) {
		last_torch_check = now;
		if (coexist_torch_loaded()) {
			gpi_cupti_step_aside("libtorch_cuda loaded (yield=torch)", 1, 1);
			return;
		}
	}
	if (replaced(now, calls, bufs, flushed))
		gpi_cupti_step_aside("activity callbacks replaced", 0,
				     gpi.cfg.yield != GPI_YIELD_NEVER);
}
