// SPDX-License-Identifier: MIT
/* The GPU launch collector's per-call-site stack cache (gpu_sites.h). */
#include "gpu_sites.h"

#include <stdbool.h>
#include <stdlib.h>

#include "store/store.h"

static uint32_t site_hash(uint32_t pid, uint32_t tid, uint64_t handle, uint64_t caller)
{
	uint64_t h = (uint64_t)pid << 32 | tid;

	h ^= handle * 0x9e3779b97f4a7c15ull;
	h ^= caller * 0xc2b2ae3d27d4eb4full;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

static bool site_is(const struct gpu_site_slot *e, uint32_t pid, uint32_t tid, uint64_t handle,
		    uint64_t caller)
{
	return e->stack && e->pid == pid && e->tid == tid && e->handle == handle &&
	       e->caller == caller;
}

/* The set (GPU_SITES_WAYS consecutive slots) a site lives in. */
static struct gpu_site_slot *site_set(struct gpu_sites *t, uint32_t pid, uint32_t tid,
				      uint64_t handle, uint64_t caller)
{
	uint32_t h = site_hash(pid, tid, handle, caller) % (GPU_SITES_SLOTS / GPU_SITES_WAYS);

	return t->slot + (size_t)h * GPU_SITES_WAYS;
}

void gpu_sites_put(struct gpu_sites *t, struct store *s, uint32_t pid, uint32_t tid,
		   uint64_t handle, uint64_t caller, uint32_t stack)
{
	struct gpu_site_slot *set, *victim;

	if (!t->slot && !(t->slot = calloc(GPU_SITES_SLOTS, sizeof(*t->slot))))
		return;
	set = site_set(t, pid, tid, handle, caller);
	victim = set;
	for (unsigned i = 0; i < GPU_SITES_WAYS; i++) {
		if (site_is(&set[i], pid, tid, handle, caller)) {
			victim = &set[i];
			break;
		}
		/* Empty slots first, then the least recently used. */
		if (victim->stack && (!set[i].stack || set[i].used < victim->used))
			victim = &set[i];
	}
	if (victim->stack == stack && site_is(victim, pid, tid, handle, caller)) {
		victim->used = ++t->clock;
		return;
	}
	stack = store_stack_ref(s, stack);
	if (!stack)
		return;
	if (victim->stack)
		store_stack_unref(s, victim->stack);
	*victim = (struct gpu_site_slot){.pid = pid,
					 .tid = tid,
					 .handle = handle,
					 .caller = caller,
					 .stack = stack,
					 .used = ++t->clock};
}

uint32_t gpu_sites_get(struct gpu_sites *t, struct store *s, uint32_t pid, uint32_t tid,
		       uint64_t handle, uint64_t caller)
{
	struct gpu_site_slot *set;
	uint32_t id;

	if (t->slot) {
		set = site_set(t, pid, tid, handle, caller);
		for (unsigned i = 0; i < GPU_SITES_WAYS; i++) {
			if (!site_is(&set[i], pid, tid, handle, caller))
				continue;
			id = store_stack_ref(s, set[i].stack);
			if (!id)
				break;
			set[i].used = ++t->clock;
			t->reused++;
			return id;
		}
	}
	t->misses++;
	return 0;
}

void gpu_sites_drop_pid(struct gpu_sites *t, struct store *s, uint32_t pid)
{
	for (size_t i = 0; t->slot && i < GPU_SITES_SLOTS; i++)
		if (t->slot[i].stack && t->slot[i].pid == pid) {
			store_stack_unref(s, t->slot[i].stack);
			t->slot[i].stack = 0;
		}
}

void gpu_sites_clear(struct gpu_sites *t, struct store *s)
{
	for (size_t i = 0; t->slot && i < GPU_SITES_SLOTS; i++)
		if (t->slot[i].stack)
			store_stack_unref(s, t->slot[i].stack);
	free(t->slot);
	t->slot = NULL;
}
