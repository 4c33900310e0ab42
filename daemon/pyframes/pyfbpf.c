// SPDX-License-Identifier: MIT
/*
 * What the BPF walk (bpf/pystack.bpf.h) needs from the reader: the layout
 * of one process and where its frame evaluator lies (the chain BPF reads is
 * interpreted by pyfchain.c, as a chain read from user space is).
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

unsigned pyf_eval_ranges(const struct pyf_proc *p, uint64_t (*ranges)[2], unsigned max)
{
	unsigned n = p->neval < max ? p->neval : max;

	memcpy(ranges, p->eval, n * sizeof(*ranges));
	return n;
}
