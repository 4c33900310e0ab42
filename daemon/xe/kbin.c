// SPDX-License-Identifier: MIT
/* Kernel-binary store and the instruction text of the outputs (zebin.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "iga.h"
#include "xe.h"
#include "zebin.h"

/* Entries in insertion order (a list, oldest first): the store holds at
 * most a few thousand kernels, so a linear look-up by VA is fine. */
struct kbin_ent {
	struct kbin_ent *next;
	uint64_t va;
	uint32_t pid;
	size_t len;
	uint8_t bytes[];
};

struct xe_kbin {
	pthread_mutex_t mu;
	struct kbin_ent *head, *tail;
	size_t max_bytes, bytes;
	uint64_t kernels, dropped;
};

int xe_kbin_new(size_t max_bytes, struct xe_kbin **ret)
{
	struct xe_kbin *kb = calloc(1, sizeof(*kb));

	if (!kb)
		return -ENOMEM;
	pthread_mutex_init(&kb->mu, NULL);
	kb->max_bytes = max_bytes ? max_bytes : XE_KBIN_MAX_BYTES;
	*ret = kb;
	return 0;
}

void xe_kbin_free(struct xe_kbin *kb)
{
	if (!kb)
		return;
	for (struct kbin_ent *e = kb->head, *n; e; e = n) {
		n = e->next;
		free(e);
	}
	pthread_mutex_destroy(&kb->mu);
	free(kb);
}

/* Unlink the entry after prev (NULL: the head). Caller holds mu. */
static void unlink_after(struct xe_kbin *kb, struct kbin_ent *prev)
{
	struct kbin_ent *e = prev ? prev->next : kb->head;

	if (prev)
		prev->next = e->next;
	else
		kb->head = e->next;
	if (kb->tail == e)
		kb->tail = prev;
	kb->bytes -= e->len;
	kb->kernels--;
	free(e);
}

int xe_kbin_put(struct xe_kbin *kb, uint32_t pid, uint64_t gpu_va, const uint8_t *bytes, size_t len)
{
	struct kbin_ent *e, *prev = NULL;

	if (len > kb->max_bytes)
		return -EFBIG;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->next = NULL;
	e->va = gpu_va & XE_VA_MASK;
	e->pid = pid;
	e->len = len;
	memcpy(e->bytes, bytes, len);
	pthread_mutex_lock(&kb->mu);
	for (struct kbin_ent *c = kb->head; c; prev = c, c = c->next)
		if (c->va == e->va && c->pid == pid) {
			unlink_after(kb, prev);
			break;
		}
	while (kb->head && kb->bytes + len > kb->max_bytes) {
		unlink_after(kb, NULL);
		kb->dropped++;
	}
	if (kb->tail)
		kb->tail->next = e;
	else
		kb->head = e;
	kb->tail = e;
	kb->bytes += len;
	kb->kernels++;
	pthread_mutex_unlock(&kb->mu);
	return 0;
}

void xe_kbin_stats(struct xe_kbin *kb, struct xe_kbin_stats *st)
{
	pthread_mutex_lock(&kb->mu);
	st->kernels = kb->kernels;
	st->bytes = kb->bytes;
	st->dropped = kb->dropped;
	pthread_mutex_unlock(&kb->mu);
}

/* Decode the instruction at off of the kernel at va into out (under mu:
 * the entry may be dropped by a concurrent put). */
static int kbin_insn(struct xe_kbin *kb, struct xe_iga *g, uint32_t pid, uint64_t va, uint32_t off,
		     char *out, size_t outlen)
{
	const struct kbin_ent *any = NULL, *hit = NULL;
	int r = -ENOENT;

	va &= XE_VA_MASK;
	pthread_mutex_lock(&kb->mu);
	for (const struct kbin_ent *e = kb->head; e && !hit; e = e->next)
		if (e->va == va && e->pid == pid)
			hit = e;
		else if (e->va == va && !e->pid)
			any = e;
	/* pid 0: a zebin fed without an owner stands for any process */
	if (hit || any)
		r = xe_iga_insn(g, (hit ? hit : any)->bytes, (hit ? hit : any)->len, off, out,
				outlen);
	pthread_mutex_unlock(&kb->mu);
	return r;
}

/* Direct-mapped cache of decoded text per (kernel, offset). */
#define INSN_CACHE 4096
#define INSN_TEXT 128

struct insn_slot {
	uint64_t va;
	uint32_t pid, off;
	int8_t state; /* 0 empty, 1 text, -1 no text */
	char text[INSN_TEXT];
};

struct xe_insn_src {
	struct xe_kbin *kb;
	struct xe_iga *iga;
	bool own_iga;
	struct insn_slot slot[INSN_CACHE];
};

int xe_insn_src_new(struct xe_kbin *kb, struct xe_iga *iga, bool own_iga, struct xe_insn_src **ret)
{
	struct xe_insn_src *s;

	if (!kb || !iga)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->kb = kb;
	s->iga = iga;
	s->own_iga = own_iga;
	*ret = s;
	return 0;
}

void xe_insn_src_free(struct xe_insn_src *s)
{
	if (s && s->own_iga)
		xe_iga_free(s->iga);
	free(s);
}

const char *xe_insn_src_text(void *src, const struct xe_sec_kernel *k, uint32_t off)
{
	struct xe_insn_src *s = src;
	uint64_t va = k->start & XE_VA_MASK;
	uint64_t h = (va ^ (uint64_t)k->pid << 48 ^ ((uint64_t)off * 0x9E3779B97F4A7C15ull)) *
		     0xff51afd7ed558ccdull;
	struct insn_slot *sl = &s->slot[(h >> 32) % INSN_CACHE];

	if (sl->state && sl->va == va && sl->pid == k->pid && sl->off == off)
		return sl->state > 0 ? sl->text : NULL;
	sl->va = va;
	sl->pid = k->pid;
	sl->off = off;
	sl->state = kbin_insn(s->kb, s->iga, k->pid, va, off, sl->text, sizeof(sl->text)) > 0 ? 1
											      : -1;
	return sl->state > 0 ? sl->text : NULL;
}
