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

/*
 * The main interpreter: the last of the runtime's list, where the first
 * interpreter made stays (each new one is put at the head), so a process
 * attached after it made subinterpreters is not taken for the newest.
 */
static int main_interp(struct pyf_proc *p, uint64_t *ret)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t interp, next;

	if (pyf_read_u64(p, p->runtime + l->rt_interp_head, &interp))
		return -EFAULT;
	if (!interp)
		return -EAGAIN;
	for (unsigned i = 0; i < PYF_MAX_INTERPS; i++) {
		if (pyf_read_u64(p, interp + l->is_next, &next))
			return -EFAULT;
		if (!next) {
			*ret = interp;
			return 0;
		}
		interp = next;
	}
	return -EFAULT; /* a loop, or more than any process makes */
}

int pyf_bpf_layout(struct pyf_proc *p, struct pystack_layout *out)
{
	const struct pyf_layout *l = &p->lay;
	uint64_t interp;
	int r;
	bool old = l->chain == PYF_CHAIN_FRAMEOBJ;
	uint32_t prev = old ? l->fo_back : l->if_previous, code = old ? l->fo_code : l->if_code,
		 instr = old ? l->fo_lasti : l->if_instr;

	if (p->reason[0])
		return -ENOTSUP;
	if (!fits(prev, 8) || !fits(code, 8) || !fits(instr, old ? 4 : 8) ||
	    (!old && !fits(l->if_owner, 1)) ||
	    (l->if_is_entry != PYF_NONE && !fits(l->if_is_entry, 1)) ||
	    l->co_linetable + 8 < PYSTACK_CODE_IDENT_BYTES)
		return -ENOTSUP;
	r = main_interp(p, &interp);
	if (r < 0)
		return r;
	memset(out, 0, sizeof(*out));
	out->threads_head = interp + l->is_threads_head;
	/* 3.9 has nothing that tells which thread runs a subinterpreter's
	 * thread state (pystack_abi.h): its main interpreter's only */
	out->interps_head = l->minor >= 10 ? p->runtime + l->rt_interp_head : 0;
	out->ts_on_stack = bpf_off(l->ts_cframe);
	out->main_interp = interp;
	out->is_next = l->is_next;
	out->is_threads = l->is_threads_head;
	out->ts_next = l->ts_next;
	out->ts_thread_id = l->ts_thread_id;
	out->ts_first = l->chain == PYF_CHAIN_CFRAME ? l->ts_cframe : l->ts_frame;
	out->cf_current = l->chain == PYF_CHAIN_CFRAME ? l->cf_current : PYSTACK_NONE;
	out->f_prev = prev;
	out->f_code = code;
	out->f_instr = instr;
	out->f_owner = old ? PYSTACK_NONE : bpf_off(l->if_owner);
	out->f_entry = old ? PYSTACK_NONE : bpf_off(l->if_is_entry);
	out->co_ident = pyf_ident_off(l);
	return 0;
}

unsigned pyf_eval_ranges(const struct pyf_proc *p, uint64_t (*ranges)[2], unsigned max)
{
	unsigned n = p->neval < max ? p->neval : max;

	memcpy(ranges, p->eval, n * sizeof(*ranges));
	return n;
}
