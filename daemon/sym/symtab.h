/* SPDX-License-Identifier: MIT */
/*
 * The CAPSEC_SYMBOLS section: the resolved frames of a capture, one entry
 * per (pid, stack id) pair its records use. Written by the symbolizer, read
 * by the renderers; survives restarts inside the capture file.
 *
 * Layout, version 2, all integers little-endian (docs/symbolization.md):
 *
 *   header, 32 bytes
 *     u32 magic   "GPSY" (0x59535047)
 *     u16 version 2 (1 is read too: it is version 2 without the maps flag)
 *     u16 flags   bit 0 SYMTAB_F_LINES: a line array follows the frame array
 *                 bit 1 SYMTAB_F_MAPS: a mapping table and a per-frame
 *                 mapping array follow (version 2 only)
 *     u32 nnames, nentries, nrefs, blob_len
 *     u32 nmaps (with SYMTAB_F_MAPS; else 0, ignored on read)
 *     u32 reserved (0; ignored on read)
 *   names    nnames   x { u32 off, u32 len }       into blob
 *   entries  nentries x { u32 pid, u32 stack, u32 ref, u16 nuser, u16 nkernel }
 *            strictly ascending by (pid, stack)
 *   frames   nrefs    x u32 name index             per entry: refs[ref ..
 *                                                  ref + nuser + nkernel),
 *                                                  same order as the stack
 *   lines    nrefs    x u32 name index (0: none)   only with SYMTAB_F_LINES
 *   maps     nmaps    x { u64 start, u64 limit, u64 offset, u32 pid,
 *                         u32 file, u32 build_id, u32 flags }  (40 bytes;
 *            file and build_id are name indices, build_id as lowercase hex)
 *   fmaps    nrefs    x u32 mapping (0: none, k: maps[k - 1])   with maps
 *   blob     blob_len bytes of name text (not NUL-terminated)
 *
 * Name 0 is always the empty string. The decoder checks every count, offset,
 * index and the ordering, and rejects trailing bytes: it is fuzzed.
 */
#ifndef GPUPROF_SYMTAB_H
#define GPUPROF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SYMTAB_MAGIC 0x59535047u
#define SYMTAB_VERSION 2
#define SYMTAB_F_LINES 0x1
#define SYMTAB_F_MAPS 0x2
#define SYMTAB_MAPF_SYMBOLS 0x1 /* the object's symbol table was read */
#define SYMTAB_MAPF_MAIN 0x2	/* the process's executable (/proc/PID/exe) */
#define SYMTAB_MAX_NAME 4096	/* longer names are cut by the builder */

/*
 * The user frame a stack ends with when its unwinding stopped early
 * (UNWIND_IP_TRUNCATED in daemon/unwind/unwind.h, checked equal in
 * symcap.c): not an address in any mapping. The symbolizer names it
 * SYMTAB_TRUNCATED_NAME, and renderers print that name too where a
 * stack has no symbols, so no output shows it as "0x1".
 */
#define SYMTAB_IP_TRUNCATED 0x1ull
#define SYMTAB_TRUNCATED_NAME "[truncated]"

/*
 * The suffix that marks a Python frame in every output: the symbolizer
 * names one "qualname (file)_[p]" (daemon/pyframes/pyreg.h); renderers
 * colour it, split it into function and file, or put its line in
 * (docs/render.md, "Python frames").
 */
#define SYMTAB_PY_SUFFIX "_[p]"
#define SYMTAB_PY_SUFFIX_LEN (sizeof(SYMTAB_PY_SUFFIX) - 1)

static inline bool symtab_is_py_name(const char *name, size_t len)
{
	return len >= SYMTAB_PY_SUFFIX_LEN &&
	       !memcmp(name + len - SYMTAB_PY_SUFFIX_LEN, SYMTAB_PY_SUFFIX, SYMTAB_PY_SUFFIX_LEN);
}

/* ---- reading ---- */

struct sym_table;

struct sym_frames {
	const uint32_t *names; /* nuser + nkernel name indices, stack order */
	const uint32_t *lines; /* same length, or NULL without lines */
	const uint32_t *maps;  /* same length (0 or a mapping index), or NULL */
	uint16_t nuser, nkernel;
};

/* An executable file mapping of a process that frames fall into: what
 * pprof's Mapping and Parca/Pyroscope symbol upload need. */
struct sym_mapping {
	uint64_t start, limit, offset; /* [start, limit), file offset of start */
	uint32_t pid;
	uint32_t file, build_id; /* name indices: path, hex build id ("" none) */
	uint32_t flags;		 /* SYMTAB_MAPF_* */
};

/* Decode (copies; buf may be freed after). Returns 0, -EBADMSG with a
 * reason in why (if non-NULL), or -ENOMEM. */
int sym_table_decode(const void *buf, size_t len, struct sym_table **ret, char *why, size_t whylen);
void sym_table_free(struct sym_table *t);

/* Frames of (pid, stack); false when the table has no such entry. The
 * pointers live as long as t. O(log n). */
bool sym_table_find(const struct sym_table *t, uint32_t pid, uint32_t stack,
		    struct sym_frames *out);
/* Name text (not NUL-terminated) and its length; "" for a bad index. */
const char *sym_table_name(const struct sym_table *t, uint32_t idx, size_t *len);
size_t sym_table_entries(const struct sym_table *t);
bool sym_table_has_lines(const struct sym_table *t);
/* Number of mappings (0 for a version 1 section) and mapping idx (1-based,
 * as in sym_frames.maps); NULL for 0 or a bad index. */
size_t sym_table_nmaps(const struct sym_table *t);
const struct sym_mapping *sym_table_map(const struct sym_table *t, uint32_t idx);

/* ---- writing ---- */

struct sym_table_builder;

int sym_tb_new(bool lines, struct sym_table_builder **ret);
void sym_tb_free(struct sym_table_builder *b);
/* Intern a name (cut at SYMTAB_MAX_NAME bytes); *idx receives its index.
 * "" is always index 0. Returns 0 or -ENOMEM / -E2BIG (table full). */
int sym_tb_name(struct sym_table_builder *b, const char *s, size_t len, uint32_t *idx);
/* Add the frames of (pid, stack); lines may be NULL (then all 0). Each
 * (pid, stack) may be added once; entries may come in any order. */
int sym_tb_add(struct sym_table_builder *b, uint32_t pid, uint32_t stack, const uint32_t *names,
	       const uint32_t *lines, uint16_t nuser, uint16_t nkernel);
/* Same with a mapping index per frame (maps may be NULL: all 0). */
int sym_tb_add_maps(struct sym_table_builder *b, uint32_t pid, uint32_t stack,
		    const uint32_t *names, const uint32_t *lines, const uint32_t *maps,
		    uint16_t nuser, uint16_t nkernel);
/* Append a mapping (its file and build_id already interned); *idx gets its
 * 1-based index. Returns 0, -ENOMEM or -E2BIG. */
int sym_tb_map(struct sym_table_builder *b, const struct sym_mapping *m, uint32_t *idx);
/* Encode into a malloc()ed buffer the caller frees. Returns 0, -EEXIST
 * when a (pid, stack) pair was added twice, or -ENOMEM. */
int sym_tb_encode(struct sym_table_builder *b, void **buf, size_t *len);

#endif
