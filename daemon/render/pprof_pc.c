// SPDX-License-Identifier: MIT
/*
 * NVIDIA PC samples of the pprof export (pprof.c): STORE_REC_GPU_PC
 * records summed per (process, launch stack, kernel, cubin, offset, stall
 * reason) into one Sample each, value type stall_samples/count. Stack,
 * leaf first, the frames `folded --weight stalls` draws (pcstall.h):
 *
 *   REASON_[g]          the stall reason (address 0, no mapping)
 *   INSTRUCTION_[g]     the SASS text the capture kept, else
 *                       "KERNEL+0x1a0_[g]"; address = the offset in the
 *                       function, no mapping (a cubin has no address of
 *                       its own in the process)
 *   KERNEL_[G]          as the launches' one-frame samples
 *   launch stack...     the CPU stack of the kernel's latest launch in
 *                       the process, resolved like every other stack
 *
 * and the reason again as the label "stall_reason", for -tagfocus and
 * Pyroscope's label filters. One value type rather than one per reason
 * (the EU-stall way, pprof_xe.c): NVIDIA's reasons are named per GPU by
 * CUPTI, some forty on current parts, where Intel's are a fixed ten.
 */
#include "pprof_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "pcstall.h"

struct pc_key {
	uint32_t pid, comm, stack, name, pc, reason;
	uint64_t crc;
};

bool pprof_pc_present(const struct capture *c)
{
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].type == STORE_REC_GPU_PC && c->recs[i].aux32)
			return true;
	return false;
}

/* "NAME_[G]" of string id name, cut to fit buf (at least 16 bytes) */
static size_t kernel_name(const struct capture *c, uint32_t name, char *buf, size_t cap)
{
	size_t nl;
	const char *s = capture_str(c, name, &nl);

	if (s)
		nl = strnlen(s, nl); /* up to a launch collector's geometry */
	if (!s || !nl)
		s = "[unknown]", nl = 9;
	if (nl > cap - 5)
		nl = cap - 5;
	memcpy(buf, s, nl);
	memcpy(buf + nl, "_[G]", 4);
	return nl + 4;
}

/* The instruction's frame: its text, else KERNEL+0xOFF; "_[g]" after. */
static uint64_t insn_loc(struct pprof *x, const struct pcstall *ps, const struct pc_key *k,
			 const char *kn, size_t knl)
{
	char name[512];
	size_t n, tl;
	const char *t = pcstall_insn(ps, k->crc, k->name, k->pc, &tl);

	if (t) {
		n = tl < sizeof(name) - 4 ? tl : sizeof(name) - 4;
		memcpy(name, t, n);
	} else {
		knl -= 4; /* without its "_[G]" */
		n = (size_t)snprintf(name, sizeof(name) - 4, "%.*s+0x%" PRIx32,
				     (int)(knl < 400 ? knl : 400), kn, k->pc);
	}
	memcpy(name + n, "_[g]", 4);
	return pprof_loc(x, name, n + 4, k->pc, 0, NULL, 0, 0);
}

static int sums(const struct capture *c, const struct pcstall *ps, struct bmap *keys,
		uint64_t **cnt, size_t *cap)
{
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		struct pc_key k;
		uint32_t id;

		if (r->type != STORE_REC_GPU_PC || !r->aux32)
			continue;
		k = (struct pc_key){r->pid,
				    r->comm,
				    pcstall_stack(ps, r),
				    r->name,
				    (uint32_t)r->aux[1],
				    store_rec_detail(r),
				    r->aux[0]};
		if (!(id = bmap_intern(keys, &k, sizeof(k), NULL)))
			return -ENOMEM;
		if (id > *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			uint64_t *nv = realloc(*cnt, nc * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			memset(nv + *cap, 0, (nc - *cap) * sizeof(*nv));
			*cnt = nv;
			*cap = nc;
		}
		(*cnt)[id - 1] = sat_add((*cnt)[id - 1], r->aux32);
	}
	return 0;
}

int pprof_pc_samples(struct pprof *x, struct pb *out, const struct capture *c, size_t iv, size_t nv,
		     uint64_t *events)
{
	struct pcstall ps;
	struct bmap keys;
	uint64_t *cnt = NULL, vals[PPROF_MAX_VALUES];
	size_t cap = 0;
	int r;

	bmap_init(&keys);
	r = pcstall_init(&ps, c);
	if (r == 0)
		r = sums(c, &ps, &keys, &cnt, &cap);
	for (uint32_t id = 1; r == 0 && id <= keys.n; id++) {
		size_t kl, rl, cl;
		struct pc_key k;
		char kn[512];

		memcpy(&k, bmap_key(&keys, id, &kl), sizeof(k));
		size_t knl = kernel_name(c, k.name, kn, sizeof(kn));
		const char *rs = pcstall_reason(c, k.reason, &rl);
		char rname[256];
		size_t rn = rl < sizeof(rname) - 4 ? rl : sizeof(rname) - 4;

		memcpy(rname, rs, rn);
		memcpy(rname + rn, "_[g]", 4);
		x->locv[0] = pprof_loc(x, rname, rn + 4, 0, 0, NULL, 0, 0);
		x->locv[1] = insn_loc(x, &ps, &k, kn, knl);
		x->locv[2] = pprof_loc(x, kn, knl, 0, 0, NULL, 0, 0);
		if (k.stack)
			capframes_get(x->f, k.pid, k.stack);
		else
			x->f->n = 0;
		size_t n = pprof_frames(x, x->f, 3);
		memset(vals, 0, sizeof(vals));
		vals[iv] = cnt[id - 1];
		const char *comm = capture_str(c, k.comm, &cl);
		x->slabel_key = "stall_reason";
		x->slabel = rs;
		x->slabel_len = rl;
		pprof_sample(x, out, n, vals, nv, k.pid, comm, comm ? cl : 0);
		x->slabel_key = NULL;
		(*events)++;
	}
	pcstall_finish(&ps);
	bmap_finish(&keys);
	free(cnt);
	return r;
}
