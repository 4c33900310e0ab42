// SPDX-License-Identifier: MIT
/*
 * Big allocations (bigalloc.h): huge-page blocks, the cache of kept
 * scratch blocks, array growth on huge pages, the idle-priority populator
 * and the helper-thread start the importers and indexes share.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bigalloc.h"

/* A kept block is poisoned under AddressSanitizer: a use after
 * bigalloc_free() is reported as a use after free() would be. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define BIG_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define BIG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define BIG_POISON(p, n) ((void)(p), (void)(n))
#define BIG_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* CLOCK_MONOTONIC in ns: the age of a kept block. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void bigalloc_prefault(void *base, size_t alloc, size_t *done, size_t upto)
{
	/* One madvise per 4 MiB instead of a page fault per 4 KiB: the
	 * faults on the growing event array were ~10 % of a 1 GB import.
	 * Only pages about to be written are populated (RSS unchanged); an
	 * old kernel without MADV_POPULATE_WRITE just faults as before. */
#ifdef MADV_POPULATE_WRITE
	const size_t step = 4u << 20;
	uintptr_t pg = 4096, a, e;

	if (upto <= *done || alloc < 4 * step)
		return;
	a = ((uintptr_t)base + *done + pg - 1) & ~(pg - 1);
	*done = upto + step < alloc ? upto + step : alloc;
	e = ((uintptr_t)base + *done) & ~(pg - 1);
	if (e > a)
		madvise((void *)a, e - a, MADV_POPULATE_WRITE);
#else
	(void)base;
	(void)alloc;
	(void)done;
	(void)upto;
#endif
}

#define TL_HUGE (2u << 20)
#define BIGALLOC_HUGE_MIN (4u << 20) /* smaller arrays: plain 4 KiB pages */

/*
 * Recycled big blocks. An analysis of a large capture allocates scratch
 * arrays of many MiB (sweep events, intervals, sort keys, call-graph
 * nodes) and frees them when it answers; the next analysis allocates the
 * same sizes again. glibc maps blocks over 32 MiB afresh each time, and
 * fresh memory is dear: the kernel faults and zeroes every page, and in a
 * VM the host may have to back it first. bigalloc_free() keeps such a block,
 * up to big_cap bytes in all, for a later bigalloc_malloc() of about the
 * same size; blocks unused for big_age_ns are freed (bigalloc_trim(), run by
 * the daemon's periodic timer, and on every call here), so an idle daemon
 * gives the memory back (figures: docs/import.md, "Later on 2026-11-26";
 * bench/analysis/bench_analyses --size 1G).
 */
#define BIG_SLOTS 16
/* glibc's largest dynamic mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on
 * 64-bit): a freed block up to this size raises the threshold, and later
 * blocks up to it come from glibc's heap, reused. Keeping such blocks here
 * would stop that (the first version did: JSON arrays of launch and
 * sequence rows then went to fresh mappings, twice as slow). */
#define BIG_KEEP_MIN (32u << 20)
static struct big_slot {
	void *p;
	size_t len;
	uint64_t t; /* when it was freed (CLOCK_MONOTONIC ns) */
} big_slot[BIG_SLOTS];
static size_t big_cached, big_cap = BIGALLOC_CACHE_DEFAULT;
static uint64_t big_age_ns = 10ull * 1000000000;
static struct bigalloc_stats big_stats;
static pthread_mutex_t big_mu = PTHREAD_MUTEX_INITIALIZER;

/* Under big_mu: take slot i out; its block is the caller's to free. */
static void *big_take(unsigned i)
{
	void *p = big_slot[i].p;

	BIG_UNPOISON(p, big_slot[i].len);
	big_cached -= big_slot[i].len;
	big_slot[i] = (struct big_slot){0};
	return p;
}

/* Under big_mu: big_take() for a block given back (not reused). */
static void *big_drop(unsigned i)
{
	big_stats.trimmed += big_slot[i].len;
	return big_take(i);
}

/* Under big_mu: move every block (all) or those freed before now - age
 * into out[]; returns how many. */
static unsigned big_expire(bool all, uint64_t now, void **out)
{
	uint64_t older = now > big_age_ns ? now - big_age_ns : 0;
	unsigned n = 0;

	for (unsigned i = 0; i < BIG_SLOTS; i++)
		if (big_slot[i].p && (all || big_slot[i].t < older))
			out[n++] = big_drop(i);
	return n;
}

static void free_all(void **v, unsigned n)
{
	while (n)
		free(v[--n]);
}

void bigalloc_cache_config(size_t cap, uint64_t age_ns)
{
	void *out[BIG_SLOTS];
	unsigned n;

	pthread_mutex_lock(&big_mu);
	big_cap = cap;
	big_age_ns = age_ns;
	n = cap ? 0 : big_expire(true, 0, out);
	pthread_mutex_unlock(&big_mu);
	free_all(out, n);
}

size_t bigalloc_trim(bool all)
{
	void *out[BIG_SLOTS];
	size_t before;
	unsigned n;

	pthread_mutex_lock(&big_mu);
	before = big_cached;
	n = big_expire(all, mono_ns(), out);
	before -= big_cached;
	pthread_mutex_unlock(&big_mu);
	free_all(out, n);
	return before;
}

void bigalloc_stats(struct bigalloc_stats *st)
{
	pthread_mutex_lock(&big_mu);
	*st = big_stats;
	st->cached = big_cached;
	st->cap = big_cap;
	pthread_mutex_unlock(&big_mu);
}

/* A kept block of len bytes (a multiple of TL_HUGE) or more, at most
 * twice that (a small request does not pin a big block); NULL. */
static void *big_reuse(size_t len)
{
	void *out[BIG_SLOTS], *p = NULL;
	unsigned best = BIG_SLOTS, n;

	pthread_mutex_lock(&big_mu);
	n = big_expire(false, mono_ns(), out);
	for (unsigned i = 0; i < BIG_SLOTS; i++)
		if (big_slot[i].p && big_slot[i].len >= len && big_slot[i].len / 2 <= len &&
		    (best == BIG_SLOTS || big_slot[i].len < big_slot[best].len))
			best = i;
	if (best < BIG_SLOTS) {
		p = big_take(best);
		big_stats.reused++;
	} else {
		big_stats.fresh++;
	}
	pthread_mutex_unlock(&big_mu);
	free_all(out, n);
	return p;
}

void bigalloc_free(void *p)
{
	void *out[BIG_SLOTS + 1];
	size_t len;
	unsigned n = 0, free_slot = BIG_SLOTS;
	uint64_t now;

	if (!p)
		return;
	len = malloc_usable_size(p);
	/* only huge_alloc()'s blocks (aligned) that glibc would map afresh */
	if (len <= BIG_KEEP_MIN || ((uintptr_t)p & (TL_HUGE - 1))) {
		free(p);
		return;
	}
	now = mono_ns();
	pthread_mutex_lock(&big_mu);
	n = big_expire(false, now, out);
	if (len > big_cap) {
		out[n++] = p;
		goto unlock;
	}
	/* room: drop the oldest blocks until this one fits */
	for (;;) {
		unsigned old = BIG_SLOTS;

		free_slot = BIG_SLOTS;
		for (unsigned i = 0; i < BIG_SLOTS; i++) {
			if (!big_slot[i].p)
				free_slot = i;
			else if (old == BIG_SLOTS || big_slot[i].t < big_slot[old].t)
				old = i;
		}
		if (free_slot < BIG_SLOTS && big_cached + len <= big_cap)
			break;
		out[n++] = big_drop(old);
	}
	BIG_POISON(p, len);
	big_slot[free_slot] = (struct big_slot){.p = p, .len = len, .t = now};
	big_cached += len;
unlock:
	pthread_mutex_unlock(&big_mu);
	free_all(out, n);
}

/* bytes on 2 MiB-aligned huge pages (advice), the first `populate` of
 * them populated at once (one madvise instead of a fault per page). */
static void *huge_alloc(size_t bytes, size_t populate)
{
	size_t len;
	void *p;

	len = (bytes + TL_HUGE - 1) & ~(size_t)(TL_HUGE - 1);
	if (len < bytes)
		return NULL;
	if ((p = big_reuse(len)))
		goto populate; /* advised when it was made */
	if (posix_memalign(&p, TL_HUGE, len))
		return NULL;
#ifdef MADV_HUGEPAGE
	/* the analyses walk event arrays of many MiB in stream or correlation
	 * order, and a TLB miss costs a two-level page walk in a VM. Advice
	 * only: with THP off ("never") nothing changes */
	madvise(p, len, MADV_HUGEPAGE);
#endif
populate:
#ifdef MADV_POPULATE_WRITE
	populate = (populate + TL_HUGE - 1) & ~(size_t)(TL_HUGE - 1);
	if (populate)
		madvise(p, populate < len ? populate : len, MADV_POPULATE_WRITE);
#else
	(void)populate;
#endif
	return p;
}

void *bigalloc_malloc(size_t bytes)
{
	if (bytes < BIGALLOC_HUGE_MIN)
		return malloc(bytes ? bytes : 1);
	return huge_alloc(bytes, bytes);
}

void *bigalloc_malloc_room(size_t bytes)
{
	if (bytes < BIGALLOC_HUGE_MIN)
		return malloc(bytes ? bytes : 1);
	return huge_alloc(bytes, 0);
}

void *bigalloc_calloc(size_t n, size_t sz)
{
	void *p;

	if (sz && n > SIZE_MAX / sz)
		return NULL;
	if (n * sz < BIGALLOC_HUGE_MIN)
		return calloc(n ? n : 1, sz ? sz : 1);
	if ((p = bigalloc_malloc(n * sz))) /* recycled memory: not known to be zero */
		memset(p, 0, n * sz);
	return p;
}

/* The doubled capacity that holds need (0 when none fits in 32 bits). */
static uint64_t grown_cap(uint32_t cap, uint32_t need)
{
	uint64_t ncap = cap ? (uint64_t)cap * 2 : 64;

	while (ncap < need)
		ncap *= 2;
	if (ncap > UINT32_MAX)
		ncap = UINT32_MAX;
	return ncap < need ? 0 : ncap;
}

int bigalloc_grow(void **arr, uint32_t *cap, uint32_t need, size_t sz)
{
	uint64_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	if (!(ncap = grown_cap(*cap, need)))
		return -E2BIG;
	p = realloc(*arr, ncap * sz);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = (uint32_t)ncap;
	return 0;
}

/* Move the n elements of *arr to a new huge-page block of ncap elements,
 * only the copied part populated. */
static int move_big(void **arr, uint32_t *cap, uint32_t n, uint64_t ncap, size_t sz)
{
	void *p = huge_alloc(ncap * sz, (size_t)n * sz);

	if (!p)
		return -ENOMEM;
	if (n)
		memcpy(p, *arr, (size_t)n * sz);
	/* free(), not bigalloc_free(): kept, the old arrays raised a 1 GB
	 * import's peak RSS from 0.66 to 0.86 x its JSON (bench_import) */
	free(*arr);
	*arr = p;
	*cap = (uint32_t)ncap;
	return 0;
}

int bigalloc_grow_huge(void **arr, uint32_t *cap, uint32_t n, uint32_t need, size_t sz)
{
	uint64_t ncap;

	if (need <= *cap)
		return 0;
	if (!(ncap = grown_cap(*cap, need)))
		return -E2BIG;
	if (ncap * sz < BIGALLOC_HUGE_MIN)
		return bigalloc_grow(arr, cap, need, sz);
	/* Past the doubling, room that is not written costs address space
	 * only (populated as it fills): 4 times more room, 4 times fewer
	 * copies. Where that much cannot be had, the doubling. */
	if (ncap * 2 <= UINT32_MAX && move_big(arr, cap, n, ncap * 2, sz) == 0)
		return 0;
	return move_big(arr, cap, n, ncap, sz);
}

int bigalloc_reserve(void **arr, uint32_t *cap, uint32_t n, uint32_t want, size_t sz)
{
	if (want <= *cap)
		return 0;
	if ((uint64_t)want * sz < BIGALLOC_HUGE_MIN) {
		void *p = realloc(*arr, (size_t)want * sz);

		if (!p)
			return -ENOMEM;
		*arr = p;
		*cap = want;
		return 0;
	}
	return move_big(arr, cap, n, want, sz);
}

int bigalloc_thread_start(pthread_t *th, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(th, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

static void *popper_main(void *arg)
{
	struct bigalloc_popper *p = arg;
	struct sched_param sp = {0};

	/* only the time no other thread of the machine wants */
	if (p->idle)
		pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	for (int i = 0; i < 2; i++) {
		for (size_t off = 0; off < p->len[i]; off += TL_HUGE) {
			if (atomic_load_explicit(&p->stop, memory_order_relaxed))
				return NULL;
#ifdef MADV_POPULATE_WRITE
			madvise(p->base[i] + off,
				p->len[i] - off < TL_HUGE ? p->len[i] - off : TL_HUGE,
				MADV_POPULATE_WRITE);
#endif
		}
	}
	return NULL;
}

/* The whole huge pages inside base[from .. to): *lo, and their length
 * (0 when none, or base is NULL). */
static size_t huge_inside(void *base, size_t from, size_t to, char **lo)
{
	uintptr_t a = ((uintptr_t)base + from + TL_HUGE - 1) & ~(uintptr_t)(TL_HUGE - 1);
	uintptr_t b = ((uintptr_t)base + to) & ~(uintptr_t)(TL_HUGE - 1);

	*lo = (char *)a;
	return base && b > a ? b - a : 0;
}

void bigalloc_popper_start(struct bigalloc_popper *p, bool idle, void *a, size_t a_from,
			   size_t a_to, void *b, size_t b_from, size_t b_to)
{
	bigalloc_popper_stop(p);
	p->len[0] = huge_inside(a, a_from, a_to, &p->base[0]);
	p->len[1] = huge_inside(b, b_from, b_to, &p->base[1]);
	atomic_store(&p->stop, false);
	p->idle = idle;
	p->running = (p->len[0] || p->len[1]) && bigalloc_two_cpus() &&
		     bigalloc_thread_start(&p->th, popper_main, p) == 0;
}

void bigalloc_popper_stop(struct bigalloc_popper *p)
{
	if (!p->running)
		return;
	atomic_store(&p->stop, true);
	pthread_join(p->th, NULL);
	p->running = false;
}

void bigalloc_room_release(void *base, size_t used, size_t cap)
{
	char *lo;
	size_t len = huge_inside(base, used, cap, &lo);

	if (len)
		madvise(lo, len, MADV_DONTNEED);
}

bool bigalloc_two_cpus(void)
{
	cpu_set_t cpus;

	return sched_getaffinity(0, sizeof(cpus), &cpus) != 0 || CPU_COUNT(&cpus) >= 2;
}
