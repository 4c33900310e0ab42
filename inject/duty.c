// SPDX-License-Identifier: MIT
/*
 * The collection's duty cycle, on the sender thread. What CUPTI costs a
 * launch-heavy process is per launch and inside CUPTI (the concurrent
 * kernel record, the callback dispatch): the library cannot make one
 * record cheaper, so by default it collects only part of the time. A
 * window of GPUPROF_CUPTI_WINDOW_MS opens every WINDOW_MS * 100 /
 * GPUPROF_CUPTI_DUTY ms; between windows the activity kinds and the API
 * callbacks that cost per launch are off (cupti.c, gpi_cupti_duty_set),
 * so the application's threads pay only CUPTI's subscription. Each closed
 * window goes to the daemon as a GPI_WINDOW record, so that a capture
 * says which of its time was covered instead of showing the rest as an
 * idle GPU. DUTY=100 never switches anything and sends no window (the
 * whole time is covered, as before there was a duty cycle).
 *
 * Records of work begun in a window but completed after it (a kernel
 * still running when its kind is switched off) arrive or not as CUPTI
 * decides; the daemon joins what it gets, an API record without its
 * activity record or the reverse included.
 */
#include "inject.h"

static int active; /* cycling: duty < 100 and CUPTI is ours */
static int open_;  /* a window is open */
static uint64_t win_start, next_switch, window_ns, period_ns;
static uint64_t windows;
/* GPI_CTL_FULL: the window stays open until then (0: cycling) */
static uint64_t full_until;
/* A window held open is sent in pieces this long, so that a capture cut
 * while it lasts already holds most of it. */
#define PIECE_NS (50ull * 1000000u)
/* how long to hold still before looking at a suspected takeover again */
#define HOLD_NS (20ull * 1000000u)

void duty_init(uint64_t now)
{
	if (gpi.cfg.duty >= 100 || !gpi_cupti_collecting())
		return;
	window_ns = (uint64_t)gpi.cfg.window_ms * 1000000u;
	period_ns = window_ns * 100u / gpi.cfg.duty;
	/* setup_cupti() enabled everything: the first window is open
	 * from the start, so a short process is seen at all */
	active = 1;
	open_ = 1;
	win_start = now;
	next_switch = now + window_ns;
	windows = 1;
}

static void emit_window(uint64_t end)
{
	struct gpi_window *w = emit(GPI_WINDOW, sizeof(*w));

	if (!w)
		return;
	w->start = win_start;
	w->end = end;
	w->duty = gpi.cfg.duty;
	w->period_ms = (uint32_t)(period_ns / 1000000u);
}

/* CUPTI is no longer ours (stepped aside, fatal error): the open window
 * ends now, and nothing is switched again. */
static void stop(uint64_t now)
{
	if (open_)
		emit_window(now);
	open_ = 0;
	active = 0;
}

void duty_tick(uint64_t now, int final)
{
	if (!active)
		return;
	if (final || !gpi_cupti_collecting()) {
		stop(now);
		return;
	}
	if (open_ && now < full_until) {
		if (now - win_start >= PIECE_NS) {
			emit_window(now);
			win_start = now;
		}
		return;
	}
	if (now < next_switch)
		return;
	if (coexist_suspected()) {
		/* another tool may own the kinds now: switching them would cut
		 * its trace short or feed it records it never asked for. Hold
		 * still until coexist.c steps aside or our buffers come back
		 * (looked at again a little later: no busy wait) */
		next_switch = now + HOLD_NS;
		return;
	}
	if (open_) {
		uint64_t end = gpi_now();

		if (gpi_cupti_duty_set(0)) {
			stop(end);
			return;
		}
		emit_window(end);
		open_ = 0;
		/* a late tick shortens the off-time, never the period */
		next_switch = win_start + period_ns;
		if (next_switch <= now)
			next_switch = now + (period_ns - window_ns);
	} else {
		if (gpi_cupti_duty_set(1)) {
			stop(now);
			return;
		}
		open_ = 1;
		win_start = gpi_now(); /* covered from when both are on */
		next_switch = win_start + window_ns;
		windows++;
	}
}

void duty_full(uint64_t now, uint32_t ms)
{
	uint64_t until;

	if (!active)
		return; /* collecting all the time, or CUPTI is not ours */
	until = now + (uint64_t)(ms < GPI_FULL_MAX_MS ? ms : GPI_FULL_MAX_MS) * 1000000u;
	if (until > full_until)
		full_until = until;
	if (!open_) {
		if (gpi_cupti_duty_set(1)) {
			stop(now);
			return;
		}
		open_ = 1;
		win_start = gpi_now();
		windows++;
	}
	/* the cycle resumes from the end of the held window */
	if (next_switch < full_until)
		next_switch = full_until;
}

unsigned duty_wait_ms(uint64_t now, unsigned max_ms)
{
	uint64_t left;

	if (!active || (open_ && now < full_until))
		return max_ms;
	left = next_switch > now ? (next_switch - now + 999999u) / 1000000u : 0;
	return left < max_ms ? (unsigned)left : max_ms;
}

int duty_collecting(void)
{
	return !active || open_;
}

uint64_t duty_windows(void)
{
	return windows;
}

void duty_atfork_child(void)
{
	active = 0; /* the child has no sender thread and no CUPTI of ours */
	open_ = 0;
}
