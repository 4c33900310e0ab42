/* SPDX-License-Identifier: MIT */
/*
 * libgpuprof-client: talk to gpuprofd over its Unix socket.
 *
 * Conventions
 *  - Every function returning int returns >= 0 on success and a negative
 *    errno value on failure. A JSON-RPC error reply from the daemon is
 *    -EREMOTEIO; its code, message and data are then available from
 *    gpuprof_client_error_*() until the next call on the same client.
 *  - Strings returned through char ** are malloc()ed and owned by the
 *    caller (free()). Pointers returned directly (const char *) live until
 *    the next call on the same client or gpuprof_client_free().
 *  - A client is not thread-safe: use one per thread, or lock around it.
 *  - The library never logs and never changes signal dispositions; it
 *    sends with MSG_NOSIGNAL.
 *  - File descriptors passed to a call are duplicated into the daemon with
 *    SCM_RIGHTS; the caller keeps (and later closes) its own copies. The
 *    daemon switches a passed pipe or socket to O_NONBLOCK.
 */
#ifndef GPUPROF_CLIENT_H
#define GPUPROF_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <gpuprof/protocol.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpuprof_client;

/*
 * Connect to the daemon. path may be NULL: then $GPUPROF_SOCKET, else the
 * compiled-in default (/run/gpuprof/gpuprofd.sock). On success *ret holds a
 * new client; on failure *ret is untouched.
 */
int gpuprof_client_connect(const char *path, struct gpuprof_client **ret);

/* Close the connection and free the client. NULL is a no-op. */
void gpuprof_client_free(struct gpuprof_client *client);

/*
 * Set the timeout of blocking calls in milliseconds (default 0: wait as
 * long as the daemon needs; a capture with --duration waits that long).
 * A call that times out returns -ETIMEDOUT and the client must be freed.
 */
void gpuprof_client_set_timeout(struct gpuprof_client *client, int timeout_ms);

/*
 * Blocking JSON-RPC call. params_json is a JSON object or array as text, or
 * NULL for no params. fds (may be NULL when nfds == 0, at most
 * GPUPROF_MAX_FDS_PER_MSG) travel with the request. On success
 * *result_json (if result_json is not NULL) receives the "result" member
 * as JSON text.
 */
int gpuprof_client_call(struct gpuprof_client *client, const char *method, const char *params_json,
			const int *fds, size_t nfds, char **result_json);

/* Details of the last -EREMOTEIO: JSON-RPC error code, message, "data"
 * member as JSON text (NULL if absent). */
int gpuprof_client_error_code(const struct gpuprof_client *client);
const char *gpuprof_client_error_message(const struct gpuprof_client *client);
const char *gpuprof_client_error_data(const struct gpuprof_client *client);

/*
 * Event-loop integration. gpuprof_client_get_fd() returns the socket to
 * poll for readability. gpuprof_client_send() queues a request and sends
 * what it can without blocking (call gpuprof_client_flush() when the fd is
 * writable while gpuprof_client_pending_output() is non-zero), storing the
 * request id in *id. gpuprof_client_process() reads what is available
 * without blocking and returns the number of complete replies now queued,
 * or a negative errno (-ECONNRESET when the daemon closed the connection).
 * gpuprof_client_next_reply() pops one reply: returns 1 and fills the
 * outputs for a result (*err_code = 0) or an error (*err_code != 0, result
 * NULL, *err_message set), 0 if none is queued.
 */
int gpuprof_client_get_fd(const struct gpuprof_client *client);
int gpuprof_client_send(struct gpuprof_client *client, const char *method, const char *params_json,
			const int *fds, size_t nfds, uint64_t *id);
int gpuprof_client_flush(struct gpuprof_client *client);
size_t gpuprof_client_pending_output(const struct gpuprof_client *client);
int gpuprof_client_process(struct gpuprof_client *client);
int gpuprof_client_next_reply(struct gpuprof_client *client, uint64_t *id, char **result_json,
			      int *err_code, char **err_message);

/*
 * Typed helpers for scripts. Each is a thin wrapper around
 * gpuprof_client_call() with the method's documented params.
 */

/* "version" / "status": result object as JSON text. */
int gpuprof_version(struct gpuprof_client *client, char **result_json);
int gpuprof_status(struct gpuprof_client *client, char **result_json);

/*
 * Options of gpuprof_capture_start(). Set size to sizeof(struct
 * gpuprof_capture_opts) as the caller's header has it (or leave it 0 for
 * the first layout, which ends at name): fields added later go at the end,
 * and the library reads only the size bytes a caller built against an
 * older header passes, taking the newer fields as zero. A caller built
 * against a newer header may pass a larger struct to an older library
 * only when the fields the library does not know are all zero (else
 * -E2BIG).
 */
struct gpuprof_capture_opts {
	size_t size;	     /* sizeof(struct gpuprof_capture_opts), or 0 (first layout) */
	const int32_t *pids; /* processes to keep; NULL/0 = all the peer may see */
	size_t npids;
	uint64_t duration_ms; /* record forward this long ... */
	uint64_t last_ms;     /* ... or cut this much from the past ... */
	int wait;	      /* non-zero: reply only once the capture is complete */
	const char *name;     /* optional label, may be NULL */
	/* Added after the first layout (read when size covers them):
	 * ... or cut the absolute window [start_ns, end_ns] (exactly one of
	 * duration_ms, last_ms and has_start). The times are CLOCK_MONOTONIC
	 * ns as a capture's "window" reports them (start_ns / end_ns of
	 * capture.info), or with realtime CLOCK_REALTIME ns since the epoch,
	 * which the daemon converts with its own clock offset. has_end: the
	 * window ends at end_ns, not now (also with last_ms: the last_ms
	 * before end_ns). */
	int has_start, has_end;
	uint64_t start_ns, end_ns;
	int realtime;
};

/* "capture.start": on success *id is the new capture's id. -EINVAL for
 * inconsistent options (not exactly one of duration_ms, last_ms and
 * has_start; has_end with duration_ms) or a size smaller than the first
 * layout, -E2BIG for a larger struct whose extra bytes are not all zero.
 * A window the daemon refuses (reversed, in the future, longer than a
 * day: GPUPROF_ERR_INVALID_PARAMS; wholly before what its ring holds:
 * GPUPROF_ERR_NO_DATA) fails with -EREMOTEIO and the daemon's error
 * (gpuprof_client_error_code() / _message()). */
int gpuprof_capture_start(struct gpuprof_client *client, const struct gpuprof_capture_opts *opts,
			  uint64_t *id);
/* "capture.stop": end a forward recording early. */
int gpuprof_capture_stop(struct gpuprof_client *client, uint64_t id);
/* "capture.list" / "capture.info": JSON text of the result. */
int gpuprof_capture_list(struct gpuprof_client *client, char **result_json);
int gpuprof_capture_info(struct gpuprof_client *client, uint64_t id, char **result_json);
/* "capture.delete". */
int gpuprof_capture_delete(struct gpuprof_client *client, uint64_t id);

/*
 * Run a method whose bulk output the daemon writes to out_fd (any fd the
 * caller opened for writing: a file, a pipe, a socket). params_json must not
 * contain "fd"; the helper adds "fd": 0. The call returns when the daemon
 * has finished writing. *result_json may be NULL.
 */
int gpuprof_call_with_output(struct gpuprof_client *client, const char *method,
			     const char *params_json, int out_fd, char **result_json);

/* Same, with an fd the daemon reads from (e.g. a trace for "capture.import"). */
int gpuprof_call_with_input(struct gpuprof_client *client, const char *method,
			    const char *params_json, int in_fd, char **result_json);

/* Parse a duration such as "500ms", "5s", "2m", "1h" or a bare number of
 * seconds into milliseconds. Returns 0 or -EINVAL / -ERANGE. */
int gpuprof_parse_duration_ms(const char *text, uint64_t *ms);

#ifdef __cplusplus
}
#endif

#endif /* GPUPROF_CLIENT_H */
