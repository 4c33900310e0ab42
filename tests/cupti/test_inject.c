// SPDX-License-Identifier: MIT
/* The injection library's pure parts: feature lists and the environment,
 * string ids (recycling, redefinition per connection), batch encoding. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inject.h"
#include "test.h"

static void test_features(void)
{
	uint32_t f = 0;

	CHECK_EQ_INT(config_parse_features("kernel,memcpy", &f), 0);
	CHECK_EQ_INT(f, GPI_F_KERNEL | GPI_F_MEMCPY);
	CHECK_EQ_INT(config_parse_features(" api , nvtx,,", &f), 0);
	CHECK_EQ_INT(f, GPI_F_API | GPI_F_NVTX);
	CHECK_EQ_INT(config_parse_features("default,graph", &f), 0);
	CHECK_EQ_INT(f, GPI_FEATURES_ALL);
	CHECK_EQ_INT(config_parse_features("none", &f), 0);
	CHECK_EQ_INT(f, 0);
	CHECK_EQ_INT(config_parse_features("kernel,kernels", &f), -EINVAL);
	CHECK_EQ_INT(config_parse_features("kern", &f), -EINVAL);
	CHECK(!(GPI_FEATURES_DEFAULT & GPI_F_GRAPH));
	CHECK_EQ_INT(config_parse_features("kernel,pc", &f), 0);
	CHECK_EQ_INT(f, GPI_F_KERNEL | GPI_F_PC);
	/* the event records come with the syncs that name them */
	CHECK_EQ_INT(config_parse_features("sync", &f), 0);
	CHECK_EQ_INT(f, GPI_F_SYNC | GPI_F_EVENT);
	CHECK(GPI_FEATURES_DEFAULT & GPI_F_EVENT);
}

static void test_config_env(void)
{
	struct gpi_config c;
	char long_path[200];

	unsetenv("GPUPROF_CUPTI");
	setenv("GPUPROF_CUPTI_FEATURES", "kernel,bogus", 1);
	setenv("GPUPROF_CUPTI_FLUSH_MS", "5", 1);
	memset(long_path, 'x', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = 0;
	setenv(GPI_SOCKET_ENV, long_path, 1);
	config_read(&c);
	CHECK_EQ_INT(c.enabled, 1);
	CHECK_EQ_INT(c.features, GPI_FEATURES_DEFAULT); /* a typo keeps the default */
	CHECK_EQ_INT(c.flush_ms, 500);			/* below 10: the default */
	CHECK_STREQ(c.socket, GPI_SOCKET_DEFAULT);	/* too long for sun_path */
	setenv("GPUPROF_CUPTI_FEATURES", "", 1);
	config_read(&c);
	CHECK_EQ_INT(c.features, GPI_FEATURES_DEFAULT); /* empty: the default */
	setenv("GPUPROF_CUPTI", "0", 1);
	setenv("GPUPROF_CUPTI_FEATURES", "kernel", 1);
	setenv("GPUPROF_CUPTI_FLUSH_MS", "100", 1);
	setenv(GPI_SOCKET_ENV, "/tmp/x.sock", 1);
	config_read(&c);
	CHECK_EQ_INT(c.enabled, 0);
	CHECK_EQ_INT(c.features, GPI_F_KERNEL);
	CHECK_EQ_INT(c.flush_ms, 100);
	CHECK_STREQ(c.socket, "/tmp/x.sock");
}

/* The duty cycle: the default when unset, empty or invalid (never "all
 * the time" by accident), the value when in range. */
static void test_config_duty(void)
{
	static const struct {
		const char *duty, *window;
		unsigned want_duty, want_window;
	} cases[] = {
		{NULL, NULL, GPI_DUTY_DEFAULT, GPI_WINDOW_MS_DEFAULT},
		{"", "", GPI_DUTY_DEFAULT, GPI_WINDOW_MS_DEFAULT},
		{"0", "0", GPI_DUTY_DEFAULT, GPI_WINDOW_MS_DEFAULT},
		{"101", "10001", GPI_DUTY_DEFAULT, GPI_WINDOW_MS_DEFAULT},
		{"5x", "-1", GPI_DUTY_DEFAULT, GPI_WINDOW_MS_DEFAULT},
		{"1", "1", 1, 1},
		{"100", "10000", 100, 10000},
		{"25", "20", 25, 20},
	};
	struct gpi_config c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].duty)
			setenv("GPUPROF_CUPTI_DUTY", cases[i].duty, 1);
		else
			unsetenv("GPUPROF_CUPTI_DUTY");
		if (cases[i].window)
			setenv("GPUPROF_CUPTI_WINDOW_MS", cases[i].window, 1);
		else
			unsetenv("GPUPROF_CUPTI_WINDOW_MS");
		config_read(&c);
		CHECK_EQ_INT(c.duty, cases[i].want_duty);
		CHECK_EQ_INT(c.window_ms, cases[i].want_window);
	}
	unsetenv("GPUPROF_CUPTI_DUTY");
	unsetenv("GPUPROF_CUPTI_WINDOW_MS");
}

/* The idle mode: only the exact word lets the subscription go; unset,
 * empty or anything else keeps it (the measured default). */
static void test_config_idle(void)
{
	static const struct {
		const char *val;
		int want;
	} cases[] = {
		{NULL, GPI_IDLE_SUBSCRIBED},	      {"", GPI_IDLE_SUBSCRIBED},
		{"subscribed", GPI_IDLE_SUBSCRIBED},  {"unsubscribed", GPI_IDLE_SUBSCRIBED},
		{"Unsubscribe", GPI_IDLE_SUBSCRIBED}, {"unsubscribe", GPI_IDLE_UNSUBSCRIBE},
	};
	struct gpi_config c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].val)
			setenv("GPUPROF_CUPTI_IDLE", cases[i].val, 1);
		else
			unsetenv("GPUPROF_CUPTI_IDLE");
		config_read(&c);
		CHECK_EQ_INT(c.idle, cases[i].want);
	}
	unsetenv("GPUPROF_CUPTI_IDLE");
}

static void test_config_yield(void)
{
	static const struct {
		const char *yield, *quiet;
		int want_yield;
		unsigned want_quiet;
	} cases[] = {
		{NULL, NULL, GPI_YIELD_AUTO, 5000},
		{"auto", "300", GPI_YIELD_AUTO, 300},
		{"never", "100", GPI_YIELD_NEVER, 100},
		{"torch", "600000", GPI_YIELD_TORCH, 600000},
		{"Torch", "99", GPI_YIELD_AUTO, 5000},	  /* unknown word, below range */
		{"", "600001", GPI_YIELD_AUTO, 5000},	  /* empty, above range */
		{"never ", "1x", GPI_YIELD_AUTO, 5000},	  /* no trimming, not a number */
	};
	struct gpi_config c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].yield)
			setenv("GPUPROF_CUPTI_YIELD", cases[i].yield, 1);
		else
			unsetenv("GPUPROF_CUPTI_YIELD");
		if (cases[i].quiet)
			setenv("GPUPROF_CUPTI_YIELD_QUIET_MS", cases[i].quiet, 1);
		else
			unsetenv("GPUPROF_CUPTI_YIELD_QUIET_MS");
		config_read(&c);
		CHECK_EQ_INT(c.yield, cases[i].want_yield);
		CHECK_EQ_INT(c.quiet_ms, cases[i].want_quiet);
	}
	unsetenv("GPUPROF_CUPTI_YIELD");
	unsetenv("GPUPROF_CUPTI_YIELD_QUIET_MS");
}

static void test_names(void)
{
	uint32_t a, b, a2, len;
	int def;
	char buf[32];

	names_forget_sent();
	a = names_intern("kernel_a", &def);
	CHECK(a > 0);
	CHECK_EQ_INT(def, 1);
	names_mark_sent(a);
	a2 = names_intern("kernel_a", &def);
	CHECK_EQ_INT(a2, a);
	CHECK_EQ_INT(def, 0);
	b = names_intern("kernel_b", &def);
	CHECK(b != a);
	CHECK_STREQ(names_text(a, &len), "kernel_a");
	CHECK_EQ_INT(len, 8);
	names_forget_sent(); /* a new connection */
	names_intern("kernel_a", &def);
	CHECK_EQ_INT(def, 1);
	CHECK_EQ_INT(names_intern(NULL, &def), 0);
	/* far more names than ids: every id stays in range and names the
	 * text last interned for it */
	for (int i = 0; i < 20000; i++) {
		uint32_t id;

		snprintf(buf, sizeof(buf), "n%d", i);
		id = names_intern(buf, &def);
		CHECK(id >= 1 && id < GPI_STRING_IDS);
		CHECK_STREQ(names_text(id, &len), buf);
	}
}

static void test_names_const(void)
{
	char name[] = "_Z6kernelPfi";
	uint32_t a, b, len;
	int def;

	names_forget_sent();
	a = names_intern_const(name, &def);
	CHECK(a > 0);
	CHECK_EQ_INT(def, 1);
	names_mark_sent(a);
	CHECK_EQ_INT(names_intern_const(name, &def), a);
	CHECK_EQ_INT(def, 0);
	CHECK_EQ_INT(names_intern("_Z6kernelPfi", &def), a); /* same text, same id */
	/* another text at the same address (a freed and reused name) */
	name[3] = 'K';
	b = names_intern_const(name, &def);
	CHECK_STREQ(names_text(b, &len), "_Z6KernelPfi");
	CHECK_EQ_INT(def, 1);
	/* the address cache survives its slot taking another text */
	for (int i = 0; i < 20000; i++) {
		char buf[16];

		snprintf(buf, sizeof(buf), "m%d", i);
		names_intern(buf, &def);
	}
	CHECK_STREQ(names_text(names_intern_const(name, &def), &len), "_Z6KernelPfi");
}

static void test_wire(void)
{
	static struct wire w;
	struct gpi_hdr *h = (struct gpi_hdr *)w.buf;
	struct gpi_kernel *k;
	char big[GPI_STRING_MAX + 100];
	int n = 0;

	wire_reset(&w, 7);
	CHECK_EQ_INT(h->magic, GPI_MAGIC);
	CHECK_EQ_INT(h->seq, 7);
	CHECK_EQ_INT(wire_add_string(&w, 3, "abc", 3), 0);
	CHECK_EQ_INT(((struct gpi_rec *)(w.buf + 16))->len, 24); /* 16 + 3, padded */
	memset(big, 'y', sizeof(big));
	CHECK_EQ_INT(wire_add_string(&w, 4, big, sizeof(big)), 0); /* cut to GPI_STRING_MAX */
	CHECK_EQ_INT(((struct gpi_string *)(w.buf + 40))->len, GPI_STRING_MAX);
	while ((k = wire_add(&w, GPI_KERNEL, sizeof(*k))))
		n++;
	CHECK(w.used <= GPI_MSG_MAX);
	CHECK(w.used + sizeof(*k) > GPI_MSG_MAX);
	CHECK_EQ_INT(h->nrec, n + 2);
	CHECK_EQ_INT(w.used % 8, 0);
}

int main(void)
{
	RUN(test_features);
	RUN(test_config_env);
	RUN(test_config_yield);
	RUN(test_config_duty);
	RUN(test_config_idle);
	RUN(test_names);
	RUN(test_names_const);
	RUN(test_wire);
	return test_summary();
}
