// SPDX-License-Identifier: MIT
/* NEO's compile_kernel USDT in the gpu collector test (zebin_usdt.h). */
#include "zebin_usdt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "collector.h"
#include "collect/gpu_launch.h"
#include "common/zebin_builder.h"
#include "xe.h"
#include "xe_int.h"
#include "zebin.h"

/* test.h counts failures per file: these report to the caller instead. */
#define ZCHECK(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: ZCHECK(%s) failed\n", __FILE__, __LINE__, #cond);  \
			zu.bad++;                                                                  \
		}                                                                                  \
	} while (0)

static struct {
	unsigned bad;
	struct xe *x;
	char path[64];
	unsigned loads;
	uint32_t pid;
} zu;

static int zu_load(void *arg, void *state, uint32_t pid, const char *path, char *why, size_t whylen)
{
	int r;

	(void)why, (void)whylen;
	ZCHECK(arg == &zu);
	zu.loads++;
	zu.pid = pid;
	r = strcmp(path, zu.path) ? -EINVAL : xe_zebin_load(zu.x, NULL, state, path, pid, 0);
	xe_zebin_free(state);
	return r;
}

static uint64_t counter(struct collector *c, const char *name)
{
	cJSON *o = cJSON_CreateObject();
	uint64_t v;

	if (!o)
		return UINT64_MAX;
	c->ops->status(c, o);
	v = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(o, name));
	cJSON_Delete(o);
	return v;
}

int zebin_usdt_setup(struct collector *c)
{
	uint8_t *img = NULL;
	size_t len = zebin_test_build(true, &img);
	int fd;

	memset(&zu, 0, sizeof(zu));
	snprintf(zu.path, sizeof(zu.path), "/tmp/dumped_zebin_module_gpuprof.XXXXXX");
	ZCHECK(len > 0);
	fd = mkstemp(zu.path);
	ZCHECK(fd >= 0);
	ZCHECK(fd >= 0 && write(fd, img, len) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
	free(img);
	ZCHECK(setenv("FAKE_NEO_ZEBIN", zu.path, 1) == 0);
	ZCHECK(xe_new(&(struct xe_config){0}, 0, &zu.x) == 0);
	ZCHECK(gpu_launch_set_zebin_hook(c, &(struct gpu_launch_zebin_hook){
						.read = xe_zebin_read_new,
						.load = zu_load,
						.discard = xe_zebin_free,
						.arg = &zu,
						.max_bytes = XE_ZEBIN_MAX_FILE,
					    }) == 0);
	return zu.bad ? -1 : 0;
}

bool zebin_usdt_done(struct collector *c)
{
	return counter(c, "zebins_loaded") + counter(c, "zebins_failed") > 0;
}

/* kern_a [0, 32) and kern_b [16, 32) overlap: the table keeps the later at
 * 16 (core.c); kern_a must have been added for pid from path all the same. */
static bool added(const char *name, uint32_t pid)
{
	for (uint32_t i = 0; i < zu.x->kused; i++) {
		const struct xe_kent *e = &zu.x->k[i];

		if (e->name && !strcmp(e->name, name) && e->pid == pid && e->file &&
		    !strcmp(e->file, zu.path))
			return true;
	}
	return false;
}

int zebin_usdt_check(struct collector *c, uint32_t pid)
{
	uint64_t a;
	struct xe_kent *e;

	ZCHECK(counter(c, "zebins_seen") == 1);
	ZCHECK(counter(c, "zebins_loaded") == 1);
	ZCHECK(counter(c, "zebins_failed") == 0);
	ZCHECK(counter(c, "zebins_skipped") == 0);
	ZCHECK(counter(c, "zebins_dropped") == 0);
	ZCHECK(zu.loads == 1);
	ZCHECK(zu.pid == pid);
	ZCHECK(zu.x && added("kern_a", pid));
	ZCHECK(zu.x && added("kern_b", pid));
	e = zu.x ? xe_kfind(zu.x, (ZEBIN_TEST_CANON_VA + 16) >> 3, &a) : NULL;
	ZCHECK(e && e->name && !strcmp(e->name, "kern_b") && e->pid == pid);
	unlink(zu.path);
	unsetenv("FAKE_NEO_ZEBIN");
	xe_free(zu.x);
	zu.x = NULL;
	if (!zu.bad)
		printf("ok: NEO's compile_kernel USDT loaded %s: kern_a, kern_b for pid %u\n",
		       zu.path, pid);
	return zu.bad ? -1 : 0;
}
