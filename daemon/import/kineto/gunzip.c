// SPDX-License-Identifier: MIT
/*
 * gzip input: one inflate loop (gz_inflate_src) used two ways. Serially,
 * each output chunk is parsed as soon as it is inflated. Pipelined
 * (gz_pipe_*), a second thread inflates into NSLOT chunk buffers while the
 * importer's thread parses them in order: on a gzip trace inflate + CRC
 * (zlib's; ISA-L's, gzdec.c, is ~3x faster) were about a third of the
 * import, and they now run beside the parse on the second core. Memory
 * stays bounded: NSLOT chunks (512 KiB at the default 64 KiB), and the
 * thread never runs more than NSLOT chunks ahead.
 *
 * Results are those of the serial path: pieces arrive in order and the
 * thread's error (corrupt / truncated gzip, read error) is delivered only
 * after every piece inflated before it, so a JSON error earlier in the
 * stream still wins, at the same offset; the byte counts a failed import
 * reports are those recorded with the last piece the parser took.
 *
 * A large plain source (not gzip) goes through the same pipe, copied into
 * the chunks, so that the thread can parse beside the parser.
 *
 * Once the parser is inside the events array, the thread also parses
 * whole events of the pieces it inflates while the parser has a backlog
 * (kineto_spec.c): the parser adopts those instead of parsing them, so on
 * a large trace both cores parse. Memory: NSLOT chunks and their parses.
 *
 * Only sources that cannot block forever are read on the thread (memory,
 * regular files): a parse error must be able to stop it, and a thread
 * waiting on a client's pipe could not be stopped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gunzip.h"
#include "kineto_spec.h"

int gz_inflate_src(struct src *s, const uint8_t *in, ssize_t r, const struct gz_io *io, char *msg,
		   size_t msg_len)
{
	int err, st;

	msg[0] = '\0';
	while (r > 0) {
		size_t avail = (size_t)r;

		/* Until the input is used up and the last call left room in
		 * its output (so nothing is held back inside the backend). */
		for (;;) {
			const char *why = NULL;
			size_t got, before = avail;
			uint8_t *out;

			if (s->gz_done && !avail)
				break; /* a member ended with this input */
			if (!(out = io->out(io->arg)))
				return -ECANCELED;
			st = gz_step(s, &in, &avail, out, s->chunk, &got, &why);
			if (st == GZ_OK && !got && avail && avail == before) {
				st = GZ_ERR; /* stuck: never drop input silently */
				why = "inflate made no progress";
			}
			if (st == GZ_ERR) {
				snprintf(msg, msg_len,
					 "corrupt gzip data (%s) at compressed byte %llu", why,
					 (unsigned long long)(s->bytes_in - avail));
				io->put(io->arg, out, 0); /* what it holds is not handed on */
				return -EBADMSG;
			}
			if ((err = io->put(io->arg, out, got)) < 0)
				return err;
			if (st == GZ_END)
				s->gz_done = true;
			else if (got < s->chunk && !avail)
				break; /* needs more input */
		}
		r = src_raw(s, s->in, s->chunk, &in);
		if (r < 0) {
			snprintf(msg, msg_len, "read error");
			return (int)r;
		}
	}
	if (!s->gz_done) {
		snprintf(msg, msg_len, "truncated gzip stream after %llu compressed bytes",
			 (unsigned long long)s->bytes_in);
		return -EBADMSG;
	}
	return 0;
}

/* A plain source through the same pipe: read() into the chunks, the
 * importer's first piece copied (the thread's only work besides
 * speculative parses). */
static int copy_src(struct src *s, const uint8_t *in, ssize_t r, const struct gz_io *io, char *msg,
		    size_t msg_len)
{
	msg[0] = '\0';
	while (r > 0) {
		uint8_t *out = io->out(io->arg);
		int err;

		if (!out)
			return -ECANCELED;
		if (in != out)
			memcpy(out, in, (size_t)r);
		if ((err = io->put(io->arg, out, (size_t)r)) < 0)
			return err;
		if (!(out = io->out(io->arg)))
			return -ECANCELED;
		r = src_raw(s, out, s->chunk, &in);
	}
	if (r < 0) {
		snprintf(msg, msg_len, "read error");
		return (int)r;
	}
	return 0;
}

#define NSLOT 8
/* Parse a piece here only when the parser holds this many (its own
 * included): far enough ahead that it will not wait for this one. With
 * 2 (one queued) it did, ~2.5 ms in all on nccl_parser_config; 4 of 8
 * slots was the best wall time (bench_import, 3..16 slots, 2..8 held). */
#define SPEC_BACKLOG 4

struct gz_pipe {
	struct src *s;
	const uint8_t *in0;
	ssize_t r0;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv_full, cv_free;
	uint8_t *buf[NSLOT];
	size_t len[NSLOT];
	struct kseg *seg[NSLOT]; /* the slot's speculative parse (spec != OFF) */
	bool seg_set[NSLOT];	 /* ... made for the piece in it */
	enum gz_spec spec;
	bool plain;		/* not gzip: copy_src() */
	struct kspec_worker *w; /* the thread's parse state */
	bool ctx_ok;		/* ctx set by the parser */
	struct kspec_ctx ctx;
	uint64_t bytes_in[NSLOT], file_hi[NSLOT]; /* source counters after the piece */
	unsigned head, tail, nfull;		  /* nfull counts the piece the parser holds */
	bool holding;				  /* the parser holds buf[head] */
	bool took_any;
	uint64_t took_bytes_in, took_file_hi;
	bool cancel, done;
	int err;
	char msg[200];
};

static uint8_t *pipe_out(void *arg)
{
	struct gz_pipe *g = arg;
	uint8_t *b;

	pthread_mutex_lock(&g->mu);
	while (g->nfull == NSLOT && !g->cancel)
		pthread_cond_wait(&g->cv_free, &g->mu);
	b = g->cancel ? NULL : g->buf[g->tail];
	pthread_mutex_unlock(&g->mu);
	return b;
}

static int pipe_put(void *arg, uint8_t *buf, size_t n)
{
	struct gz_pipe *g = arg;
	struct kspec_ctx ctx;
	bool spec;
	int err = 0;

	if (!n)
		return 0;
	/* buf is buf[tail], this thread's until it is handed over below */
	pthread_mutex_lock(&g->mu);
	spec = g->ctx_ok && (g->spec == GZ_SPEC_ALL || g->nfull >= SPEC_BACKLOG);
	if (spec)
		ctx = g->ctx;
	pthread_mutex_unlock(&g->mu);
	if (spec)
		kseg_run(g->w, g->seg[g->tail], &ctx, buf, n);
	pthread_mutex_lock(&g->mu);
	if (g->cancel) {
		err = -ECANCELED;
	} else {
		g->seg_set[g->tail] = spec;
		g->len[g->tail] = n;
		g->bytes_in[g->tail] = g->s->bytes_in;
		g->file_hi[g->tail] = g->s->file_hi;
		g->tail = (g->tail + 1) % NSLOT;
		g->nfull++;
		pthread_cond_signal(&g->cv_full);
	}
	pthread_mutex_unlock(&g->mu);
	return err;
}

static void *pipe_main(void *arg)
{
	struct gz_pipe *g = arg;
	struct gz_io io = {.out = pipe_out, .put = pipe_put, .arg = g};
	char msg[sizeof(g->msg)];
	int err;

	err = g->plain ? copy_src(g->s, g->in0, g->r0, &io, msg, sizeof(msg))
		       : gz_inflate_src(g->s, g->in0, g->r0, &io, msg, sizeof(msg));
	pthread_mutex_lock(&g->mu);
	g->err = err;
	memcpy(g->msg, msg, sizeof(msg));
	g->done = true;
	pthread_cond_signal(&g->cv_full);
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

static void pipe_free(struct gz_pipe *g)
{
	for (int i = 0; i < NSLOT; i++) {
		free(g->buf[i]);
		kseg_free(g->seg[i]);
	}
	kspec_worker_free(g->w);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv_full);
	pthread_cond_destroy(&g->cv_free);
	free(g);
}

int gz_pipe_start(struct src *s, const uint8_t *in, ssize_t r, bool plain, enum gz_spec spec,
		  struct gz_pipe **ret)
{
	struct gz_pipe *g = calloc(1, sizeof(*g));
	int err;

	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv_full, NULL);
	pthread_cond_init(&g->cv_free, NULL);
	for (int i = 0; i < NSLOT; i++)
		if (!(g->buf[i] = malloc(s->chunk)) ||
		    (spec != GZ_SPEC_OFF && !(g->seg[i] = kseg_new()))) {
			pipe_free(g);
			return -ENOMEM;
		}
	g->spec = spec;
	g->plain = plain;
	if (spec != GZ_SPEC_OFF && !(g->w = kspec_worker_new())) {
		pipe_free(g);
		return -ENOMEM;
	}
	g->s = s;
	g->in0 = in;
	g->r0 = r;
	/* the thread takes no asynchronous signals (bigalloc_thread_start) */
	err = bigalloc_thread_start(&g->th, pipe_main, g);
	if (err) {
		pipe_free(g);
		return -err;
	}
	*ret = g;
	return 0;
}

void gz_pipe_spec(struct gz_pipe *g, const struct kspec_ctx *c)
{
	pthread_mutex_lock(&g->mu);
	if (g->spec != GZ_SPEC_OFF) {
		g->ctx = *c;
		g->ctx_ok = true;
	}
	pthread_mutex_unlock(&g->mu);
}

ssize_t gz_pipe_next(struct gz_pipe *g, const uint8_t **p, struct kseg **seg, char *msg,
		     size_t msg_len)
{
	ssize_t n;

	*seg = NULL;
	pthread_mutex_lock(&g->mu);
	if (g->holding) { /* the previous piece is parsed: its buffer is free */
		g->head = (g->head + 1) % NSLOT;
		g->nfull--;
		g->holding = false;
		pthread_cond_signal(&g->cv_free);
	}
	while (!g->nfull && !g->done)
		pthread_cond_wait(&g->cv_full, &g->mu);
	if (g->nfull) {
		*p = g->buf[g->head];
		n = (ssize_t)g->len[g->head];
		*seg = g->seg_set[g->head] ? g->seg[g->head] : NULL;
		g->took_bytes_in = g->bytes_in[g->head];
		g->took_file_hi = g->file_hi[g->head];
		g->took_any = g->holding = true;
	} else {
		n = g->err;
		snprintf(msg, msg_len, "%s", g->msg);
	}
	pthread_mutex_unlock(&g->mu);
	return n;
}

void gz_pipe_stop(struct gz_pipe *g)
{
	bool early;

	pthread_mutex_lock(&g->mu);
	early = !g->done || g->nfull;
	g->cancel = true;
	pthread_cond_signal(&g->cv_free);
	pthread_mutex_unlock(&g->mu);
	pthread_join(g->th, NULL);
	if (early && g->took_any) { /* as far as a serial import would have read */
		g->s->bytes_in = g->took_bytes_in;
		g->s->file_hi = g->took_file_hi;
	}
	pipe_free(g);
}
