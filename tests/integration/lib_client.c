// SPDX-License-Identifier: MIT
/*
 * Drives a running gpuprofd through libgpuprof-client only: blocking typed
 * helpers, error reporting, and the event-loop API with pipelined requests.
 * Usage: lib_client SOCKET (run by test_daemon.py against a private daemon).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <gpuprof/client.h>

#include "test.h"

static const char *sock;

static cJSON *parse(char *text)
{
	cJSON *j = cJSON_Parse(text);
	free(text);
	return j;
}

static void test_blocking(void)
{
	struct gpuprof_client *c = NULL;
	CHECK_EQ_INT(gpuprof_client_connect(sock, &c), 0);
	if (!c)
		return;
	char *txt = NULL;
	CHECK_EQ_INT(gpuprof_version(c, &txt), 0);
	cJSON *v = parse(txt);
	CHECK_EQ_INT(cJSON_GetObjectItem(v, "protocol")->valueint, GPUPROF_PROTOCOL_VERSION);
	cJSON_Delete(v);

	CHECK_EQ_INT(gpuprof_status(c, &txt), 0);
	cJSON *st = parse(txt);
	CHECK(cJSON_IsArray(cJSON_GetObjectItem(st, "collectors")));
	cJSON_Delete(st);

	int32_t pid = getpid();
	struct gpuprof_capture_opts o = {.pids = &pid, .npids = 1, .last_ms = 1000, .wait = 1,
					 .name = "from-lib"};
	uint64_t id = 0;
	CHECK_EQ_INT(gpuprof_capture_start(c, &o, &id), 0);
	CHECK(id > 0);
	CHECK_EQ_INT(gpuprof_capture_info(c, id, &txt), 0);
	cJSON *info = parse(txt);
	CHECK_STREQ(cJSON_GetObjectItem(info, "name")->valuestring, "from-lib");
	CHECK_STREQ(cJSON_GetObjectItem(info, "state")->valuestring, "ready");
	/* the same window again, absolute, as the info reports it */
	cJSON *w = cJSON_GetObjectItem(info, "window");
	struct gpuprof_capture_opts ao = {
		.size = sizeof(ao),
		.pids = &pid,
		.npids = 1,
		.wait = 1,
		.has_start = 1,
		.start_ns = (uint64_t)cJSON_GetObjectItem(w, "start_ns")->valuedouble,
		.has_end = 1,
		.end_ns = (uint64_t)cJSON_GetObjectItem(w, "end_ns")->valuedouble,
	};
	cJSON_Delete(info);
	uint64_t id2 = 0;
	CHECK_EQ_INT(gpuprof_capture_start(c, &ao, &id2), 0);
	CHECK_EQ_INT(gpuprof_capture_info(c, id2, &txt), 0);
	info = parse(txt);
	w = cJSON_GetObjectItem(info, "window");
	CHECK_EQ_U64((uint64_t)cJSON_GetObjectItem(w, "start_ns")->valuedouble, ao.start_ns);
	CHECK_EQ_U64((uint64_t)cJSON_GetObjectItem(w, "end_ns")->valuedouble, ao.end_ns);
	cJSON_Delete(info);
	CHECK_EQ_INT(gpuprof_capture_delete(c, id2), 0);
	/* reversed: the daemon's invalid-params error */
	ao.start_ns = ao.end_ns + 1;
	CHECK_EQ_INT(gpuprof_capture_start(c, &ao, &id2), -EREMOTEIO);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_INVALID_PARAMS);
	CHECK(strstr(gpuprof_client_error_message(c), "after it ends") != NULL);

	CHECK_EQ_INT(gpuprof_capture_list(c, &txt), 0);
	cJSON *lst = parse(txt);
	int found = 0;
	cJSON *it;
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(lst, "captures"))
		found += (uint64_t)cJSON_GetObjectItem(it, "id")->valuedouble == id;
	CHECK_EQ_INT(found, 1);
	cJSON_Delete(lst);

	CHECK_EQ_INT(gpuprof_capture_delete(c, id), 0);
	/* errors come back as -EREMOTEIO with the daemon's code and message */
	CHECK_EQ_INT(gpuprof_capture_info(c, id, &txt), -EREMOTEIO);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_NOT_FOUND);
	CHECK(strstr(gpuprof_client_error_message(c), "no capture") != NULL);
	CHECK_EQ_INT(gpuprof_client_call(c, "no.such.method", NULL, NULL, 0, NULL), -EREMOTEIO);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_METHOD_NOT_FOUND);
	CHECK_EQ_INT(gpuprof_client_call(c, "status", "{\"bogus\":1}", NULL, 0, NULL),
		     -EREMOTEIO);
	CHECK_EQ_INT(gpuprof_client_error_code(c), GPUPROF_ERR_INVALID_PARAMS);
	/* the client stays usable after daemon-side errors */
	CHECK_EQ_INT(gpuprof_version(c, NULL), 0);
	gpuprof_client_free(c);
}

static void test_event_loop(void)
{
	struct gpuprof_client *c = NULL;
	CHECK_EQ_INT(gpuprof_client_connect(sock, &c), 0);
	if (!c)
		return;
	uint64_t ids[3];
	CHECK_EQ_INT(gpuprof_client_send(c, "version", NULL, NULL, 0, &ids[0]), 0);
	CHECK_EQ_INT(gpuprof_client_send(c, "status", NULL, NULL, 0, &ids[1]), 0);
	CHECK_EQ_INT(gpuprof_client_send(c, "capture.info", "{\"id\":987654}", NULL, 0, &ids[2]),
		     0);
	int seen = 0, errors = 0;
	while (seen < 3) {
		while (gpuprof_client_pending_output(c) > 0)
			CHECK(gpuprof_client_flush(c) >= 0);
		struct pollfd p = {.fd = gpuprof_client_get_fd(c), .events = POLLIN};
		if (poll(&p, 1, 5000) <= 0) {
			TEST_FAIL_AT("no reply within 5 s");
			break;
		}
		int r = gpuprof_client_process(c);
		CHECK(r >= 0);
		if (r < 0)
			break;
		uint64_t id;
		char *res, *msg;
		int code;
		while (gpuprof_client_next_reply(c, &id, &res, &code, &msg) == 1) {
			CHECK(id == ids[0] || id == ids[1] || id == ids[2]);
			if (code) {
				errors++;
				CHECK_EQ_U64(id, ids[2]);
				CHECK_EQ_INT(code, GPUPROF_ERR_NOT_FOUND);
			}
			free(res);
			free(msg);
			seen++;
		}
	}
	CHECK_EQ_INT(errors, 1);
	gpuprof_client_free(c);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lib_client SOCKET\n");
		return 2;
	}
	sock = argv[1];
	RUN(test_blocking);
	RUN(test_event_loop);
	return test_summary();
}
