// SPDX-License-Identifier: MIT
/*
 * What the BPF walk (bpf/pystack.bpf.h) needs from the reader: the layout
 * of one process, and the interpretation of the raw chain it reads, the
 * same as pyfwalk.c gives for a chain read from user space.
 */
#include "pyf_int.h"

#include <errno.h>
#include <string.h>

#include "pystack_abi.h"

static uint32_t bpf_off(uint32_t off)
{
	return off == PYF_NONE ? PYSTACK_NONE : off;
}

/* An offset into a frame BPF reads PYSTACK_FRAME_BYTES of. */
static bool fits(uint32_t off, uint32_t width)
{
	return off != PYF_NONE && off + width <= PYSTACK_FRAME_BYTES;
}

int pyf_bpf_layout(struct pyf_proc *p, struct pystack_layout *out)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t interp;
	bool old = l->chain == PYF_CHAIN_FRAMEOBJ;
	uint32_t prev = old ? l->fo_back : l->if_previous, code = old ? l->fo_code : l->if_code,
		 instr = old ? l->fo_lasti : l->if_instr;

	if (p->reason[0])
		return -ENOTSUP;
	if (!fits(prev, 8) || !fits(code, 8) || !fits(instr, old ? 4 : 8) ||
	    (!old && !fits(l->if_owner, 1)) ||
	    (l->if_is_entry != PYF_NONE && !fits(l->if_is_entry, 1)))
		return -ENOTSUP;
	if (pyf_read_u64(p, p->runtime + l->rt_interp_head, &interp))
		return -EFAULT;
	if (!interp)
		return -EAGAIN;
	memset(out, 0, sizeof(*out));
	out->threads_head = interp + l->is_threads_head;
	out->ts_next = l->ts_next;
	out->ts_thread_id = l->ts_thread_id;
	out->ts_first = l->chain == PYF_CHAIN_CFRAME ? l->ts_cframe : l->ts_frame;
	out->cf_current = l->chain == PYF_CHAIN_CFRAME ? l->cf_current : PYSTACK_NONE;
	out->f_prev = prev;
	out->f_code = code;
	out->f_instr = instr;
	out->f_owner = old ? PYSTACK_NONE : bpf_off(l->if_owner);
	out->f_entry = old ? PYSTACK_NONE : bpf_off(l->if_is_entry);
	out->co_firstlineno = l->co_firstlineno;
	return 0;
}

static int32_t instr_offset(const struct pyf_layout *l, const struct pystack_node *nd,
			    uint64_t code)
{
	int64_t off;
	int32_t lasti;

	if (l->chain == PYF_CHAIN_FRAMEOBJ) {
		lasti = (int32_t)(uint32_t)nd->instr;
		if (lasti < 0)
			return -1;
		if (l->lasti_units)
			return lasti > INT32_MAX / 2 ? -1 : lasti * 2;
		return lasti;
	}
	off = (int64_t)(nd->instr - (code + l->co_code_adaptive));
	return off < 0 || off > INT32_MAX ? -1 : (int32_t)off;
}

unsigned pyf_from_nodes(const struct pyf_proc *p, const struct pystack_node *nodes, unsigned n,
			struct pyf_frame *out, unsigned max)
{
	const struct pyf_layout *l = &p->lay;
	unsigned k = 0, run_start = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct pystack_node *nd = &nodes[i];
		uint64_t code = l->tagged_code ? nd->code & ~7ull : nd->code;

		if (l->chain != PYF_CHAIN_FRAMEOBJ && nd->owner >= 3) {
			/* a shim: the end of one activation's run (3.12+) */
			if (nd->owner == 3) {
				pyf_end_run(out, k, run_start, nd->frame);
				run_start = k;
			}
			continue;
		}
		if (!code)
			continue;
		if (k >= max)
			break;
		out[k++] = (struct pyf_frame){
			.code = code,
			.frame = nd->frame,
			.instr = instr_offset(l, nd, code),
			.flags = l->chain == PYF_CHAIN_FRAMEOBJ ? PYF_FRAME_ENTRY : 0,
			.firstlineno = (int32_t)nd->firstlineno,
		};
		/* 3.11: the entry frame ends its run; its marker (the
		 * activation's _PyCFrame) is not read by BPF */
		if (nd->entry) {
			pyf_end_run(out, k, run_start, 0);
			run_start = k;
		}
	}
	return k;
}

unsigned pyf_eval_ranges(const struct pyf_proc *p, uint64_t (*ranges)[2], unsigned max)
{
	unsigned n = p->neval < max ? p->neval : max;

	memcpy(ranges, p->eval, n * sizeof(*ranges));
	return n;
}
