/* SPDX-License-Identifier: MIT */
/*
 * gzip input of the importer (gunzip.c): the inflate loop shared by the
 * serial path and the pipelined one, where a second thread inflates into
 * a few bounded chunks while the caller's thread parses.
 */
#ifndef GPUPROF_IMPORT_GUNZIP_H
#define GPUPROF_IMPORT_GUNZIP_H

#include "src.h"

/* Where inflated bytes go: out() gives the next output buffer (s->chunk
 * bytes; NULL: stop with -ECANCELED), put() takes it back with n bytes in
 * it (n may be 0) and returns 0, or < 0 to stop with that error. */
struct gz_io {
	uint8_t *(*out)(void *arg);
	int (*put)(void *arg, uint8_t *buf, size_t n);
	void *arg;
};

/* Inflate backend (gzdec.c): ISA-L where built in, else (or forced) zlib.
 * gz_begin sets s->gzd (-ENOMEM on failure); gz_end frees it (no-op when
 * unset). */
int gz_begin(struct src *s, bool force_zlib);
void gz_end(struct src *s);
const char *gz_backend_name(bool force_zlib);

enum { GZ_ERR = -1, GZ_OK = 0, GZ_END = 1 };

/* One inflate call: input [*in, *in + *avail) (both advanced past what was
 * consumed) into out (cap bytes; *got written). GZ_END: a gzip member
 * ended (what follows is the next member's); GZ_ERR: corrupt data, *why a
 * zlib-style reason. Resets for the next member first when s->gz_done. */
int gz_step(struct src *s, const uint8_t **in, size_t *avail, uint8_t *out, size_t cap, size_t *got,
	    const char **why);

/*
 * Inflate s (already gz_begin()'d; its first r bytes are at in) to the
 * end of its input, multi-member. Returns 0; or < 0 with msg set for a
 * gzip or read error ("corrupt gzip data (...) at compressed byte N",
 * "truncated gzip stream after N compressed bytes", "read error"); or the
 * error put() returned, msg left empty.
 */
int gz_inflate_src(struct src *s, const uint8_t *in, ssize_t r, const struct gz_io *io, char *msg,
		   size_t msg_len);

struct gz_pipe;
struct kseg;
struct kspec_ctx;

/* What the inflate thread also parses (kineto_spec.h). */
enum gz_spec {
	GZ_SPEC_AUTO, /* pieces inflated while the parser has a backlog */
	GZ_SPEC_OFF,
	GZ_SPEC_ALL, /* every piece (tests) */
};

/* Inflate s on a new thread (s belongs to it until gz_pipe_stop); plain:
 * s is not gzip, its bytes are copied as they are. Fails with -errno (e.g.
 * no thread could be made): then nothing was read. */
int gz_pipe_start(struct src *s, const uint8_t *in, ssize_t r, bool plain, enum gz_spec spec,
		  struct gz_pipe **ret);
/* From now on the thread may parse pieces speculatively from state c. */
void gz_pipe_spec(struct gz_pipe *g, const struct kspec_ctx *c);
/* The next inflated piece, in order: > 0 bytes at *p (valid until the next
 * call), with *seg its speculative parse or NULL; 0 at the end of the
 * stream; < 0 the error gz_inflate_src gave, msg set. */
ssize_t gz_pipe_next(struct gz_pipe *g, const uint8_t **p, struct kseg **seg, char *msg,
		     size_t msg_len);
/* Stop (early: the thread is told to quit after its current chunk), join
 * and free. s->bytes_in / s->file_hi are left as a serial import would
 * have them at the last piece taken. */
void gz_pipe_stop(struct gz_pipe *g);

#endif /* GPUPROF_IMPORT_GUNZIP_H */
