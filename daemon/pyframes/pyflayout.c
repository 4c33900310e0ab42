// SPDX-License-Identifier: MIT
/*
 * Where the fields the reader needs sit in each CPython's structures.
 *
 * 3.9 to 3.12 publish nothing about their layout, so the offsets are
 * written down here, from each version's headers as pyenv installs them
 * (include/pythonX.Y/, internal headers included; x86-64 release builds
 * with the GIL). Every value was checked by compiling offsetof() against
 * those headers with Py_BUILD_CORE and by walking live processes.
 * Patch releases of one minor keep these structures; a debug (Py_DEBUG) or
 * otherwise different build is caught by the checks pyf_attach() runs on
 * the live process, not trusted.
 *
 * 3.13 and later describe themselves: _PyRuntime starts with
 * _Py_DebugOffsets (3.13 internal/pycore_runtime.h 61-195; from 3.14
 * internal/pycore_debug_offsets.h). That struct is only stable within a
 * minor, and grows between minors (3.14 adds interpreter_state.threads_main,
 * interpreter_frame.stackpointer, ...), so its groups are found by anchors
 * that hold in every version so far rather than at fixed positions: this
 * is what lets 3.14 and 3.15 work with no table here.
 */
#include "pyf_int.h"

#include <stdio.h>
#include <string.h>

static void common_unset(struct pyf_layout *l)
{
	l->ts_frame = l->ts_cframe = l->ts_native_tid = PYF_NONE;
	l->cf_current = l->cf_previous = PYF_NONE;
	l->fo_back = l->fo_code = l->fo_lasti = PYF_NONE;
	l->if_previous = l->if_code = l->if_instr = l->if_is_entry = l->if_owner = PYF_NONE;
	l->co_qualname = l->co_firsttraceable = l->co_code_adaptive = PYF_NONE;
	/* PyThreadState.next and .interp: the same in every version
	 * (prev, next, interp lead struct _ts) */
	l->ts_next = 8;
	l->ts_interp = 16;
}

/*
 * 3.9: struct _ts in cpython/pystate.h 49-139, struct _frame in
 * cpython/frameobject.h 17-47, _PyRuntimeState in internal/pycore_runtime.h
 * 52-108, struct _is (tstate_head) in internal/pycore_interp.h 71-74,
 * PyCodeObject in cpython/code.h 18-43 (co_lnotab 41).
 * 3.10: the same structures, with f_lasti/f_lineno moved up (frameobject.h
 * 28) and co_linetable in co_lnotab's place (cpython/code.h 41).
 */
static void table_39_310(unsigned minor, struct pyf_layout *l)
{
	l->chain = PYF_CHAIN_FRAMEOBJ;
	l->lines = minor == 9 ? PYF_LINES_LNOTAB : PYF_LINES_PEP626;
	l->lasti_units = minor == 10;
	l->rt_interp_head = 32;
	l->is_next = 0;
	l->is_threads_head = 8;
	l->ts_frame = 24;
	/* 3.10's CFrame (cpython/pystate.h 80) carries no frames, but it is a
	 * local of the running evaluator: it tells which thread runs a
	 * subinterpreter's thread state (pyfwalk.c) */
	l->ts_cframe = minor == 10 ? 48 : PYF_NONE;
	l->ts_thread_id = 176;
	l->fo_back = 24;
	l->fo_code = 32;
	l->fo_lasti = minor == 9 ? 104 : 96;
	l->co_firstlineno = 40;
	l->co_filename = 104;
	l->co_name = 112;
	l->co_linetable = 120;
	l->str_ascii_size = 48; /* sizeof(PyASCIIObject), cpython/unicodeobject.h */
	l->str_compact_size = 72;
}

/*
 * 3.11: struct _ts in cpython/pystate.h 82 on, _PyCFrame 38-53,
 * _PyInterpreterFrame in internal/pycore_frame.h 47-67 (owners 41-45),
 * _PyCode_DEF in cpython/code.h 36-100 (co_linetable 90,
 * _co_firsttraceable 94), _PyRuntimeState in internal/pycore_runtime.h 59 on,
 * struct _is in internal/pycore_interp.h 78 on.
 * 3.12: struct _ts in cpython/pystate.h 115 on, _PyCFrame 67-81,
 * _PyInterpreterFrame in internal/pycore_frame.h 51-75 (owners 44-49,
 * FRAME_OWNED_BY_CSTACK = 3), _PyCode_DEF in cpython/code.h 109-172,
 * struct _is (threads.head) in internal/pycore_interp.h 75 on.
 */
static void table_311_312(unsigned minor, struct pyf_layout *l)
{
	bool v11 = minor == 11;

	l->chain = PYF_CHAIN_CFRAME;
	l->lines = PYF_LINES_LOCATIONS;
	l->rt_interp_head = 40;
	l->is_next = 0;
	l->is_threads_head = v11 ? 16 : 72;
	l->ts_cframe = 56;
	l->ts_thread_id = v11 ? 152 : 136;
	l->ts_native_tid = v11 ? 160 : 144;
	l->cf_current = v11 ? 8 : 0;
	l->cf_previous = v11 ? 16 : 8;
	l->if_code = v11 ? 32 : 0;
	l->if_previous = v11 ? 48 : 8;
	l->if_instr = 56; /* prev_instr */
	l->if_is_entry = v11 ? 68 : PYF_NONE;
	l->if_owner = v11 ? 69 : 70;
	l->co_firstlineno = v11 ? 72 : 68;
	l->co_filename = 112;
	l->co_name = 120;
	l->co_qualname = 128;
	l->co_linetable = 136;
	l->co_firsttraceable = v11 ? 168 : 176;
	l->co_code_adaptive = v11 ? 184 : 192; /* = PyCode_Type.tp_basicsize */
	l->str_ascii_size = v11 ? 48 : 40;     /* 3.12 dropped wstr */
	l->str_compact_size = v11 ? 72 : 56;
}

bool pyf_layout_table(unsigned minor, struct pyf_layout *l)
{
	memset(l, 0, sizeof(*l));
	common_unset(l);
	l->minor = minor;
	if (minor == 9 || minor == 10)
		table_39_310(minor, l);
	else if (minor == 11 || minor == 12)
		table_311_312(minor, l);
	else
		return false;
	snprintf(l->source, sizeof(l->source), "table 3.%u", minor);
	return true;
}

/* An offset inside a structure of size sz. */
static bool inside(uint64_t off, uint64_t sz)
{
	return off < sz && sz < (1u << 20);
}

/* The groups of _Py_DebugOffsets, as u64 slot indexes. */
struct dbo_groups {
	size_t ts, frame, code, str;
};

/*
 * Find the groups by what their values must be, scanning forward from the
 * group before (each search window allows a few added fields):
 * - thread_state: {size, prev = 0, next = 8, interp = 16, current_frame,
 *   thread_id, native_thread_id, ...};
 * - interpreter_frame: {size, previous, executable, instr_ptr, localsplus,
 *   owner, ...}, localsplus being the last member, so size equals it or
 *   it plus one slot (localsplus[1]);
 * - code_object: {size, filename, name, qualname, linetable, firstlineno,
 *   argcount, localsplusnames, localspluskinds, co_code_adaptive, ...},
 *   co_code_adaptive being PyCode_Type.tp_basicsize;
 * - unicode_object: {size, state = 32, length = 16, asciiobject_size}.
 * In 3.13.0 they are at slots 19, 28, 34 and 67.
 */
static bool find_groups(const uint64_t *s, size_t n, uint64_t code_basicsize, struct dbo_groups *g)
{
	bool found = false;

	/* runtime_state (3..5) and interpreter_state (6: size, id, next,
	 * threads_head, ...) come first; 13 or 14 interpreter fields so far */
	for (g->ts = 16; g->ts < 40 && g->ts + 8 < n; g->ts++) {
		const uint64_t *t = s + g->ts;

		if (t[1] == 0 && t[2] == 8 && t[3] == 16 && inside(t[4], t[0]) &&
		    inside(t[5], t[0]) && inside(t[6], t[0])) {
			found = true;
			break;
		}
	}
	if (!found)
		return false;
	found = false;
	for (g->frame = g->ts + 9; g->frame < g->ts + 40 && g->frame + 6 < n; g->frame++) {
		const uint64_t *f = s + g->frame;

		if ((f[4] == f[0] || f[4] + 8 == f[0]) && inside(f[1], f[0]) &&
		    inside(f[2], f[0]) && inside(f[3], f[0]) && inside(f[5], f[0]) && f[0] >= 32) {
			found = true;
			break;
		}
	}
	if (!found)
		return false;
	found = false;
	for (g->code = g->frame + 6; g->code < g->frame + 40 && g->code + 10 < n; g->code++) {
		const uint64_t *c = s + g->code;

		if (c[9] == code_basicsize && c[0] >= c[9] && inside(c[1], c[0]) &&
		    inside(c[2], c[0]) && inside(c[3], c[0]) && inside(c[4], c[0]) &&
		    inside(c[5], c[0])) {
			found = true;
			break;
		}
	}
	if (!found)
		return false;
	for (g->str = g->code + 10; g->str + 4 < n && g->str < g->code + 80; g->str++) {
		const uint64_t *u = s + g->str;

		if (u[1] == 32 && u[2] == 16 && (u[3] == 40 || u[3] == 48) && u[0] >= u[3])
			return true;
	}
	return false;
}

const char *pyf_layout_debug_offsets(const uint64_t *s, size_t n, unsigned minor,
				     uint64_t code_basicsize, struct pyf_layout *l)
{
	struct dbo_groups g;

	if (n < 16 || memcmp(s, "xdebugpy", 8))
		return "no _Py_DebugOffsets at the start of _PyRuntime";
	if (s[2])
		return "free-threaded CPython builds are not supported";
	if (!find_groups(s, n, code_basicsize, &g))
		return "_Py_DebugOffsets has a layout this reader does not recognize";
	memset(l, 0, sizeof(*l));
	common_unset(l);
	l->minor = minor;
	l->chain = PYF_CHAIN_DIRECT;
	l->lines = PYF_LINES_LOCATIONS;
	l->tagged_code = minor >= 14;
	l->rt_interp_head = (uint32_t)s[5];
	l->is_next = (uint32_t)s[8];
	l->is_threads_head = (uint32_t)s[9];
	if (!inside(l->is_next, s[6]) || !inside(l->is_threads_head, s[6]) ||
	    !inside(l->rt_interp_head, s[3]))
		return "_Py_DebugOffsets has out-of-range interpreter offsets";
	l->ts_next = (uint32_t)s[g.ts + 2];
	l->ts_interp = (uint32_t)s[g.ts + 3];
	l->ts_frame = (uint32_t)s[g.ts + 4];
	l->ts_thread_id = (uint32_t)s[g.ts + 5];
	l->ts_native_tid = (uint32_t)s[g.ts + 6];
	l->if_previous = (uint32_t)s[g.frame + 1];
	l->if_code = (uint32_t)s[g.frame + 2];
	l->if_instr = (uint32_t)s[g.frame + 3];
	l->if_owner = (uint32_t)s[g.frame + 5];
	l->co_filename = (uint32_t)s[g.code + 1];
	l->co_name = (uint32_t)s[g.code + 2];
	l->co_qualname = (uint32_t)s[g.code + 3];
	l->co_linetable = (uint32_t)s[g.code + 4];
	l->co_firstlineno = (uint32_t)s[g.code + 5];
	l->co_code_adaptive = (uint32_t)s[g.code + 9];
	/*
	 * _co_firsttraceable is not among the debug offsets. For 3.13 it is
	 * at 184 (cpython/code.h of 3.13); later versions take the prologue
	 * (the instructions before RESUME, which get the function's first
	 * line) from the line table alone: its leading instructions without
	 * a line.
	 */
	l->co_firsttraceable = minor == 13 ? 184 : PYF_NONE;
	l->str_ascii_size = (uint32_t)s[g.str + 3];
	/* PyCompactUnicodeObject adds utf8_length and utf8 (3.12+) */
	l->str_compact_size = l->str_ascii_size + 16;
	snprintf(l->source, sizeof(l->source), "_Py_DebugOffsets");
	return NULL;
}
