/* SPDX-License-Identifier: MIT */
/*
 * gpuprof wire protocol constants, shared by gpuprofd and its clients.
 *
 * Transport: JSON-RPC 2.0 over a SOCK_STREAM Unix socket, one message per
 * line ('\n' terminated, no raw newline inside a message). File descriptors
 * travel as SCM_RIGHTS ancillary data sent with the bytes of the request that
 * uses them; see docs/protocol.md.
 */
#ifndef GPUPROF_PROTOCOL_H
#define GPUPROF_PROTOCOL_H

#define GPUPROF_PROTOCOL_VERSION 1

/* Message delimiter. */
#define GPUPROF_MSG_DELIM '\n'

/* Hard caps; the daemon may be configured lower, never higher. */
#define GPUPROF_MAX_MSG_SIZE (1024 * 1024)
/* Largest reply: bulk data travels on fds, but an analysis result can grow;
 * the daemon answers -32001 instead of sending a longer one. */
#define GPUPROF_MAX_REPLY_SIZE (64u * 1024 * 1024)
#define GPUPROF_MAX_NESTING 32
#define GPUPROF_MAX_FDS_PER_MSG 64 /* e.g. one trace per rank */

/* Environment variable naming the socket (client and daemon). */
#define GPUPROF_SOCKET_ENV "GPUPROF_SOCKET"

/* JSON-RPC 2.0 standard error codes. */
#define GPUPROF_ERR_PARSE -32700
#define GPUPROF_ERR_INVALID_REQUEST -32600
#define GPUPROF_ERR_METHOD_NOT_FOUND -32601
#define GPUPROF_ERR_INVALID_PARAMS -32602
#define GPUPROF_ERR_INTERNAL -32603

/*
 * gpuprof's own codes, in the implementation-defined server range
 * -32000..-32099. The message says what happened; "data" may add detail.
 */
#define GPUPROF_ERR_TOO_LARGE -32001	 /* message or nesting over a limit */
#define GPUPROF_ERR_PERMISSION -32002	 /* peer may not do this */
#define GPUPROF_ERR_NOT_FOUND -32003	 /* no such capture / pid */
#define GPUPROF_ERR_BUSY -32004		 /* too many jobs, try again later */
#define GPUPROF_ERR_IO -32005		 /* reading/writing a passed fd or disk failed */
#define GPUPROF_ERR_BAD_FD -32006	 /* fd missing, wrong type or wrong mode */
#define GPUPROF_ERR_DAMAGED -32007	 /* persisted capture failed validation */
#define GPUPROF_ERR_UNAVAILABLE -32008	 /* collector/feature not available */
#define GPUPROF_ERR_BAD_INPUT -32009	 /* a passed file could not be parsed */
#define GPUPROF_ERR_NO_DATA -32010	 /* capture holds nothing to analyse */
#define GPUPROF_ERR_TIMEOUT -32011	 /* peer too slow; connection is closed */
#define GPUPROF_ERR_SHUTTING_DOWN -32012 /* daemon is stopping */

#endif /* GPUPROF_PROTOCOL_H */
