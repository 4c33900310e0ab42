// SPDX-License-Identifier: MIT
/*
 * Xe OA, hardware-free: the OA-unit query walk and the property chain on
 * byte buffers laid out by hand from xe_drm.h / xe_drm.h, the
 * period exponent, the sysfs metric-set look-up on a temporary tree, and
 * an OA stream on a pipe of synthetic 576-byte PEC reports whose
 * frequency / busy series is read back from a real store. Also the xe.*
 * config keys.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "test.h"

#include "config.h"
#include "oa.h"
#include "oa_open.h"
#include "store/store.h"
#include "stream.h"

static void put_u16(uint8_t *p, size_t off, uint16_t v)
{
	for (int i = 0; i < 2; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static void put_u32(uint8_t *p, size_t off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, size_t off, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p, size_t off)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[off + i];
	return v;
}

static uint32_t get_u32(const uint8_t *p, size_t off)
{
	return (uint32_t)get_u64(p, off) & 0xFFFFFFFFu;
}

/* drm_xe_oa_unit at off: id @8, type @12, capabilities @16,
 * oa_timestamp_freq @24, reserved @32..63, num_engines @64, eci[] @72 (8 B
 * each: class, instance, gt_id, pad). Returns the next element's offset. */
static size_t put_unit(uint8_t *b, size_t off, uint32_t id, uint32_t type, uint64_t freq,
		       unsigned nengines)
{
	put_u32(b, off + 8, id);
	put_u32(b, off + 12, type);
	put_u64(b, off + 16, 1);
	put_u64(b, off + 24, freq);
	put_u64(b, off + 64, nengines);
	for (unsigned e = 0; e < nengines; e++) {
		put_u16(b, off + 72 + 8 * e, 4); /* compute */
		put_u16(b, off + 72 + 8 * e + 2, (uint16_t)e);
		put_u16(b, off + 72 + 8 * e + 4, 0); /* gt_id */
	}
	return off + 72 + 8 * (size_t)nengines;
}

static void test_units(void)
{
	uint8_t b[512] = {0};
	struct xe_oa_unit_info u;
	size_t off = 16, end;

	/* header: extensions @0, num_oa_units @8, pad @12 */
	put_u32(b, 8, 3);
	off = put_unit(b, off, 5, 1 /* OAM */, 1000, 3);
	off = put_unit(b, off, 7, 0 /* OAG */, 19200000, 2);
	end = put_unit(b, off, 9, 0, 1, 0);
	CHECK_EQ_INT(xe_oa_find_oag(b, end, &u), 0);
	CHECK_EQ_INT(u.id, 7);
	CHECK_EQ_U64(u.ts_freq, 19200000);
	CHECK_EQ_U64(u.num_engines, 2);
	/* the OAG unit cut short, or its engine list running past the end */
	CHECK_EQ_INT(xe_oa_find_oag(b, off - 1, &u), -EPROTO);
	CHECK_EQ_INT(xe_oa_find_oag(b, 16 + 72 + 8, &u), -EPROTO);
	CHECK_EQ_INT(xe_oa_find_oag(b, 8, &u), -EPROTO);
	/* only the OAM unit */
	put_u32(b, 8, 1);
	CHECK_EQ_INT(xe_oa_find_oag(b, end, &u), -ENOENT);
	/* a huge engine count is refused, not walked */
	put_u32(b, 8, 3);
	put_u64(b, 16 + 64, 1ull << 60);
	CHECK_EQ_INT(xe_oa_find_oag(b, end, &u), -EPROTO);
}

static void test_props(void)
{
	struct xe_ext_set_property p[XE_OA_NPROPS];
	const uint8_t *b = (const uint8_t *)p;
	/* xe_drm.h, the OA unit: ids and values in the documented order */
	const uint32_t ids[XE_OA_NPROPS] = {1, 2, 3, 4, 5, 6};
	const uint64_t vals[XE_OA_NPROPS] = {7, 1, 42, 5 | 1u << 8 | 1u << 16, 19, 1};

	memset(p, 0xAA, sizeof(p));
	xe_oa_props(p, 7, 42, 19);
	for (int i = 0; i < XE_OA_NPROPS; i++) {
		const uint8_t *e = b + 48 * i; /* drm_xe_ext_set_property: 48 B */
		uint64_t next = i + 1 < XE_OA_NPROPS ? (uint64_t)(uintptr_t)(e + 48) : 0;

		CHECK_EQ_U64(get_u64(e, 0), next); /* base.next_extension */
		CHECK_EQ_INT(get_u32(e, 8), 0);	   /* base.name = SET_PROPERTY */
		CHECK_EQ_INT(get_u32(e, 12), 0);   /* base.pad */
		CHECK_EQ_INT(get_u32(e, 16), ids[i]);
		CHECK_EQ_INT(get_u32(e, 20), 0); /* pad: MBZ */
		CHECK_EQ_U64(get_u64(e, 24), vals[i]);
		CHECK_EQ_U64(get_u64(e, 32), 0);
		CHECK_EQ_U64(get_u64(e, 40), 0);
	}
	/* 19.2 MHz: floor(log2) = 24 -> 23 by default; 100 ms = 1.92 M ticks
	 * -> 2^20 ticks is the longest period that fits -> 19 */
	CHECK_EQ_INT(xe_oa_exponent(19200000, 0), 23);
	CHECK_EQ_INT(xe_oa_exponent(19200000, 100000000), 19);
	CHECK_EQ_INT(xe_oa_exponent(19200000, 1), 0);
	CHECK_EQ_INT(xe_oa_exponent(19200000, 1000000000000ull), 31);
	CHECK_EQ_INT(xe_oa_exponent(0, 0), 0);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void test_metric_set(void)
{
	char root[] = "/tmp/gpuprof-xe-oa-XXXXXX", path[512];
	uint64_t id = 0;

	CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/renderD128", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/renderD128/device", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/renderD128/device/drm", root);
	mkdir(path, 0755);
	/* no card yet */
	CHECK_EQ_INT(xe_oa_metric_set_id(root, "renderD128", XE_OA_METRIC_UUID, &id), -ENOENT);
	snprintf(path, sizeof(path), "%s/renderD128/device/drm/card1", root);
	mkdir(path, 0755);
	/* card, but the set is not registered */
	CHECK_EQ_INT(xe_oa_metric_set_id(root, "renderD128", XE_OA_METRIC_UUID, &id), -ENOENT);
	snprintf(path, sizeof(path), "%s/card1", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/card1/metrics", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/card1/metrics/%s", root, XE_OA_METRIC_UUID);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/card1/metrics/%s/id", root, XE_OA_METRIC_UUID);
	write_file(path, "42\n");
	CHECK_EQ_INT(xe_oa_metric_set_id(root, "renderD128", XE_OA_METRIC_UUID, &id), 0);
	CHECK_EQ_U64(id, 42);
	write_file(path, "forty-two\n");
	CHECK_EQ_INT(xe_oa_metric_set_id(root, "renderD128", XE_OA_METRIC_UUID, &id), -EPROTO);
	CHECK_EQ_INT(xe_oa_metric_set_id(root, "renderD129", XE_OA_METRIC_UUID, &id), -ENOENT);
	unlink(path);
	snprintf(path, sizeof(path), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(path), 0);
}

/* ---- an OA stream on a pipe ---- */

struct pipe_dev {
	int rfd, wfd, enables;
};

static int p_open(void *ctx, const struct xe_stream_cfg *cfg)
{
	struct pipe_dev *d = ctx;
	int p[2];

	(void)cfg;
	if (d->rfd < 0) {
		if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0)
			return -errno;
		d->rfd = p[0];
		d->wfd = p[1];
	}
	return dup(d->rfd);
}

static int p_enable(void *ctx, int fd)
{
	(void)fd;
	((struct pipe_dev *)ctx)->enables++;
	return 0;
}

static int p_disable(void *ctx, int fd)
{
	(void)ctx;
	(void)fd;
	return 0;
}

static ssize_t p_read(void *ctx, int fd, void *buf, size_t len)
{
	ssize_t n = read(fd, buf, len);

	(void)ctx;
	return n < 0 ? -errno : n;
}

static void p_close(void *ctx, int fd)
{
	(void)ctx;
	close(fd);
}

static const struct xe_obs_ops pipe_ops = {p_open, p_enable, p_disable, p_read, p_close};

struct oa_sink {
	struct xe_oa_state st;
	struct store *s;
	uint64_t bad;
};

static void oa_sink(void *arg, struct xe_stream *xs, const uint8_t *buf, size_t len, uint64_t now)
{
	struct oa_sink *k = arg;

	xe_oa_ingest(&k->st, k->s, xe_stream_cfg(xs)->gt_id, buf, len, XE_OA_PEC_REPORT_BYTES, now,
		     &k->bad);
}

/* A PEC report (xe_drm.h, the OA unit): rpt_id, time, ctx_id, ticks as u64 0..3,
 * busy (pec32) as u64 36; 68 u64 + 32 pad bytes. */
static void pec(uint8_t *r, uint64_t time, uint64_t ticks, uint64_t busy)
{
	memset(r, 0, XE_OA_PEC_REPORT_BYTES);
	put_u64(r, 0, 1ull << 32 | 3u << 19);
	put_u64(r, 8, time);
	put_u64(r, 24, ticks);
	put_u64(r, 36 * 8, busy);
}

static void run_for(uv_loop_t *loop, int ms)
{
	for (int i = 0; i < ms; i++) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
}

static void test_oa_stream(void)
{
	uv_loop_t loop;
	struct pipe_dev dev = {.rfd = -1, .wfd = -1};
	struct xe_stream_cfg cfg = {.name = "test/oa0",
				    .gt_id = 3,
				    .oa = true,
				    .rate = 19200000,
				    .record_size = XE_OA_PEC_REPORT_BYTES};
	struct oa_sink k = {.st = {.ts_freq_hz = 19200000}};
	struct store_config sc = {.budget_bytes = 1 << 20};
	uint8_t r[4 * XE_OA_PEC_REPORT_BYTES];
	const uint64_t t0 = (1ull << 56) - 960000; /* 50 ms before the 56-bit wrap */
	const uint64_t k0 = 0xFFFFFFFFull - 1000;  /* just before the 32-bit wrap */
	struct xe_stream *s;

	CHECK_EQ_INT(store_new(&sc, &k.s), 0);
	uv_loop_init(&loop);
	CHECK_EQ_INT(xe_stream_new(&loop, &cfg, &pipe_ops, &dev, oa_sink, NULL, &k, &s), 0);
	xe_stream_start(s);
	CHECK_EQ_INT(dev.enables, 1);
	/* every 100 ms (1.92 M timestamps): 120 M ticks (1200 MHz) 25 % busy;
	 * then 150 M ticks, all busy, with junk above bit 56 of time and bit
	 * 32 of ticks (both must be masked); then 60 M ticks, 10 % busy */
	pec(r, t0, k0, 5000);
	pec(r + 576, (t0 + 1920000) & ((1ull << 56) - 1), (k0 + 120000000) & 0xFFFFFFFF,
	    5000 + 30000000);
	pec(r + 1152, 0xAB00000000000000ull | ((t0 + 3840000) & ((1ull << 56) - 1)),
	    (1ull << 40) | ((k0 + 270000000) & 0xFFFFFFFF), 5000 + 180000000);
	pec(r + 1728, (t0 + 5760000) & ((1ull << 56) - 1), (k0 + 330000000) & 0xFFFFFFFF,
	    5000 + 186000000);
	CHECK_EQ_INT(write(dev.wfd, r, 3 * 576), 3 * 576);
	run_for(&loop, 20);
	/* the last report split across two writes */
	CHECK_EQ_INT(write(dev.wfd, r + 1728, 300), 300);
	run_for(&loop, 10);
	CHECK_EQ_INT(write(dev.wfd, r + 2028, 276), 276);
	run_for(&loop, 20);

	static const uint64_t want[3][2] = {{1200, 25}, {1500, 100}, {600, 10}};
	size_t n = store_count(k.s);
	uint64_t ts[3] = {0};

	CHECK_EQ_U64(n, 6);
	for (size_t i = 0; i < n && i < 6; i++) {
		const struct store_rec *rec = store_at(k.s, i);
		const char *name = store_str(k.s, rec->name, NULL);

		CHECK_EQ_INT(rec->type, STORE_REC_GPU_METRIC);
		CHECK_EQ_INT(rec->cpu, 3);
		CHECK_STREQ(name, i % 2 ? "busy-percent" : "frequency-MHz");
		CHECK_EQ_U64(rec->aux[0], want[i / 2][i % 2]);
		ts[i / 2] = rec->ts_ns;
	}
	/* reports of one read keep the hardware's spacing: exactly 100 ms */
	CHECK_EQ_U64(ts[1] - ts[0], 100000000);
	CHECK(ts[2] >= ts[1]);
	CHECK_EQ_U64(k.bad, 0);

	xe_stream_free(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	close(dev.rfd);
	close(dev.wfd);
	store_free(k.s);
}

static int load_text(struct config *c, const char *text, char *err, size_t errlen)
{
	char path[] = "/tmp/gpuprof-xe-conf-XXXXXX";
	int fd = mkstemp(path), r;

	if (fd < 0)
		return -errno;
	CHECK_EQ_INT(write(fd, text, strlen(text)), (int)strlen(text));
	close(fd);
	config_defaults(c);
	r = config_load(c, path, err, errlen);
	unlink(path);
	return r;
}

static void test_config(void)
{
	struct config c;
	char err[256];

	CHECK_EQ_INT(load_text(&c, "", err, sizeof(err)), 0);
	CHECK_EQ_U64(c.xe.sample_rate, CONFIG_XE_RATE_SLOWEST);
	CHECK_EQ_U64(c.xe.rows, 1u << 18);
	CHECK_EQ_U64(c.xe.interval_ns, 100000000);
	CHECK(c.xe.oa);
	CHECK_EQ_INT(load_text(&c,
			       "xe.sample_rate = 502\nxe.wait_num_reports = 64\nxe.rows = 4096\n"
			       "xe.deferred = 1024\nxe.kernels = 256\nxe.interval = 250ms\n"
			       "xe.oa = false\nxe.oa_period = 1s\n",
			       err, sizeof(err)),
		     0);
	CHECK_EQ_U64(c.xe.sample_rate, 502);
	CHECK_EQ_U64(c.xe.wait_num_reports, 64);
	CHECK_EQ_U64(c.xe.rows, 4096);
	CHECK_EQ_U64(c.xe.deferred, 1024);
	CHECK_EQ_U64(c.xe.kernels, 256);
	CHECK_EQ_U64(c.xe.interval_ns, 250000000);
	CHECK(!c.xe.oa);
	CHECK_EQ_U64(c.xe.oa_period_ns, 1000000000);
	CHECK_EQ_INT(load_text(&c, "xe.sample_rate = fastest\nxe.wait_num_reports = auto\n", err,
			       sizeof(err)),
		     0);
	CHECK_EQ_U64(c.xe.sample_rate, CONFIG_XE_RATE_FASTEST);
	CHECK_EQ_U64(c.xe.wait_num_reports, 0);

	static const char *const bad[] = {
	    "xe.sample_rate = 100\n",	 "xe.sample_rate = 2000\n", "xe.sample_rate = quick\n",
	    "xe.wait_num_reports = 0\n", "xe.rows = 8\n",	    "xe.rows = 999999999\n",
	    "xe.kernels = many\n",	 "xe.interval = 0\n",	    "xe.interval = 1h\n",
	    "xe.oa = maybe\n",		 "xe.unknown = 1\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (load_text(&c, bad[i], err, sizeof(err)) != -EINVAL)
			TEST_FAIL_AT("config \"%s\" accepted", bad[i]);
		CHECK(strstr(err, ":1:") != NULL && strstr(err, "'xe.") != NULL);
	}
}

int main(void)
{
	RUN(test_units);
	RUN(test_props);
	RUN(test_metric_set);
	RUN(test_oa_stream);
	RUN(test_config);
	return test_summary();
}
