// SPDX-License-Identifier: MIT
/*
 * cupti_decode() on messages made of cupti_abi.h's structs: what each
 * record becomes in the store (names, detail strings, fields), the drops,
 * and the reasons a message is malformed. No socket: a peer as the
 * collector would hold it, over a real store.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "test.h"
#include "collector.h"
#include "cupti_int.h"
#include "store/store.h"

#define NOW 1000000000000ull /* a CLOCK_MONOTONIC now, in ns */

struct fixture {
	struct collector col;
	struct cupti cu;
	struct cupti_peer p;
	struct store *s;
};

static void setup(struct fixture *f)
{
	struct store_config cfg = {.budget_bytes = 1 << 20};

	memset(f, 0, sizeof(*f));
	CHECK_EQ_INT(store_new(&cfg, &f->s), 0);
	f->cu.col = &f->col;
	f->cu.store = f->s;
	f->cu.lim.peer_rate = 1000000;
	f->cu.lim.peer_strings = 1 << 20;
	f->cu.lim.strings_total = 1 << 20;
	f->p.cu = &f->cu;
	f->p.pid = 4242;
	f->p.owner = 1000;
	f->p.tokens = 1000000;
	f->p.tokens_ns = NOW;
}

static void teardown(struct fixture *f)
{
	cupti_strtab_clear(&f->cu, &f->p.strs);
	CHECK_EQ_U64(f->cu.strings_bytes, 0);
	store_free(f->s);
}

/* a message under construction */
struct msg {
	uint8_t b[GPI_MSG_MAX + 64];
	size_t len;
	uint16_t n;
};

static void begin(struct msg *m, uint32_t seq)
{
	struct gpi_hdr h = {.magic = GPI_MAGIC, .version = GPI_VERSION, .seq = seq};

	memcpy(m->b, &h, sizeof(h));
	m->len = sizeof(h);
	m->n = 0;
}

static void add(struct msg *m, uint16_t type, void *rec, size_t len)
{
	struct gpi_rec *r = rec;
	size_t padded = (len + 7) & ~(size_t)7;

	r->type = type;
	r->len = (uint16_t)padded;
	memset(m->b + m->len, 0, padded);
	memcpy(m->b + m->len, rec, len);
	m->len += padded;
	m->n++;
	memcpy(m->b + offsetof(struct gpi_hdr, nrec), &m->n, 2);
}

static void add_hello(struct msg *m)
{
	struct gpi_hello h = {.lib_version = GPI_VERSION, .features = GPI_F_KERNEL};

	add(m, GPI_HELLO, &h, sizeof(h));
}

static void add_string(struct msg *m, uint32_t id, const char *text)
{
	uint8_t buf[sizeof(struct gpi_string) + GPI_STRING_MAX];
	struct gpi_string s = {.id = id, .len = (uint32_t)strlen(text)};

	memcpy(buf, &s, sizeof(s));
	memcpy(buf + sizeof(s), text, s.len);
	add(m, GPI_STRING, buf, sizeof(s) + s.len);
}

static int decode(struct fixture *f, struct msg *m)
{
	return cupti_decode(&f->p, m->b, m->len, NOW);
}

static const char *str(struct fixture *f, uint32_t id)
{
	static char buf[4096];
	size_t len = 0;
	const char *s = store_str(f->s, id, &len);

	snprintf(buf, sizeof(buf), "%.*s", (int)len, s ? s : "(none)");
	return buf;
}

static const struct store_rec *last(struct fixture *f)
{
	size_t n = store_count(f->s);

	return n ? store_at(f->s, n - 1) : NULL;
}

static void test_kinds(void)
{
	struct fixture f;
	struct msg m;
	const struct store_rec *r;

	setup(&f);
	begin(&m, 0);
	add_hello(&m);
	add_string(&m, 1, "_Z3foov");
	add_string(&m, 2, "line\nbreak");
	add_string(&m, 3, "NCCL");
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.p.state, CUPTI_PEER_ACTIVE);

	begin(&m, 1);
	struct gpi_kernel k = {.start = NOW - 5000,
			       .end = NOW - 4000,
			       .corr = 9,
			       .name = 1,
			       .device = 1,
			       .context = 2,
			       .stream = 3,
			       .grid = {4, 5, 6},
			       .block = {32, 1, 1},
			       .static_smem = 16,
			       .dynamic_smem = 256,
			       .local_mem = 8,
			       .regs = 24,
			       .flags = GPI_KF_DEVICE_LAUNCHED,
			       .graph_id = 7,
			       .graph_node = 99};
	add(&m, GPI_KERNEL, &k, sizeof(k));
	CHECK_EQ_INT(decode(&f, &m), 0);
	r = last(&f);
	CHECK(r && r->type == STORE_REC_GPU_INTERVAL);
	CHECK_EQ_INT(r->cpu, GPU_ENGINE_CUPTI << 8 | GPU_CUPTI_KERNEL);
	CHECK_EQ_INT(r->pid, 4242);
	CHECK_EQ_INT(r->uid, 1000);
	CHECK_EQ_INT(r->tid, 0);
	CHECK_EQ_U64(r->ts_ns, NOW - 5000);
	CHECK_EQ_U64(r->dur_ns, 1000);
	CHECK_STREQ(str(&f, r->name), "_Z3foov");
	CHECK_STREQ(str(&f, store_rec_detail(r)),
		    "grid [4,5,6] block [32,1,1] smem 16+256 regs 24 lmem 8 graph 7 node 99 "
		    "device-launched");
	CHECK_EQ_U64(r->aux[0], STORE_CUPTI_WHERE(1, 2, 3));
	CHECK_EQ_U64(r->aux[1] & UINT32_MAX, 9);
	CHECK_EQ_INT(r->aux32, 24);

	begin(&m, 2);
	struct gpi_memcpy mc = {.start = NOW - 3000,
				.end = NOW - 2000,
				.bytes = 3ull << 31,
				.copy_kind = 10,
				.src_kind = 3,
				.dst_kind = 3,
				.src_device = 0,
				.dst_device = 1,
				.flags = GPI_MF_P2P | GPI_MF_ASYNC,
				.graph_id = 5};
	add(&m, GPI_MEMCPY, &mc, sizeof(mc));
	CHECK_EQ_INT(decode(&f, &m), 0);
	r = last(&f);
	CHECK_STREQ(str(&f, r->name), "Memcpy PtoP (Device -> Device)");
	CHECK_STREQ(str(&f, store_rec_detail(r)), "bytes 6442450944 devices 0->1 async graph 5");
	CHECK_EQ_U64(STORE_BYTES64(r->aux32), 3ull << 31);

	begin(&m, 3);
	struct gpi_memcpy mu = {.start = NOW - 3000,
				.end = NOW - 2000,
				.copy_kind = 77,
				.src_kind = 200};
	struct gpi_memset ms = {.start = NOW - 2000,
				.end = NOW - 1000,
				.bytes = 64,
				.mem_kind = 5,
				.value = 255};
	struct gpi_sync sy = {.start = NOW - 900,
			      .end = NOW - 800,
			      .type = GPI_SYNC_STREAM_WAIT,
			      .stream = 3,
			      .event = 12};
	struct gpi_graph gr = {.start = NOW - 700, .end = NOW - 600, .graph_id = 3};
	add(&m, GPI_MEMCPY, &mu, sizeof(mu));
	add(&m, GPI_MEMSET, &ms, sizeof(ms));
	add(&m, GPI_SYNC, &sy, sizeof(sy));
	add(&m, GPI_GRAPH, &gr, sizeof(gr));
	CHECK_EQ_INT(decode(&f, &m), 0);
	size_t n = store_count(f.s);
	CHECK_STREQ(str(&f, store_at(f.s, n - 4)->name),
		    "Memcpy <unknown> (Unrecognized -> Unknown)");
	CHECK_STREQ(str(&f, store_at(f.s, n - 3)->name), "Memset (Managed)");
	CHECK_STREQ(str(&f, store_rec_detail(store_at(f.s, n - 3))), "bytes 64 value 255");
	CHECK_STREQ(str(&f, store_at(f.s, n - 2)->name), "Stream Wait Event");
	CHECK_EQ_INT(store_at(f.s, n - 2)->aux32, 12);
	CHECK_STREQ(str(&f, store_at(f.s, n - 1)->name), "Graph Launch");
	CHECK_EQ_INT(store_at(f.s, n - 1)->cpu & 0xff, GPU_CUPTI_GRAPH);

	begin(&m, 4);
	struct gpi_api a = {.enter = NOW - 100,
			    .exit = NOW - 50,
			    .corr = 9,
			    .tid = 77,
			    .name = 2,
			    .cbid = 211,
			    .domain = GPI_API_RUNTIME,
			    .failed = 1};
	struct gpi_marker mk = {.start = NOW - 40,
				.end = NOW - 40,
				.tid = 78,
				.name = 2,
				.domain = 3,
				.flags = GPI_MK_INSTANT};
	add(&m, GPI_API, &a, sizeof(a));
	add(&m, GPI_MARKER, &mk, sizeof(mk));
	CHECK_EQ_INT(decode(&f, &m), 0);
	n = store_count(f.s);
	r = store_at(f.s, n - 2);
	CHECK_EQ_INT(r->type, STORE_REC_GPU_API);
	CHECK_STREQ(str(&f, r->name), "line?break"); /* control bytes replaced */
	CHECK_EQ_INT(r->tid, 77);
	CHECK_EQ_INT(r->cpu, GPI_API_RUNTIME);
	CHECK_EQ_INT(r->aux32, 211 | 1 << 16);
	CHECK_EQ_U64(r->aux[1], 9);
	CHECK_EQ_INT(store_rec_detail(r), 0);
	r = store_at(f.s, n - 1);
	CHECK_EQ_INT(r->type, STORE_REC_MARK);
	CHECK_EQ_INT(r->cpu, 1);
	CHECK_EQ_U64(r->dur_ns, 0);
	CHECK_STREQ(str(&f, store_rec_detail(r)), "NCCL");
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_KERNEL], 1);
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_MEMCPY], 2);
	CHECK_EQ_INT(f.col.events, 8);
	CHECK_EQ_INT(f.col.drops, 0);
	teardown(&f);
}

static void test_drops(void)
{
	struct fixture f;
	struct msg m;

	setup(&f);
	begin(&m, 0);
	add_hello(&m);
	struct gpi_kernel bad[] = {
		{.start = 0, .end = 0},
		{.start = NOW - 10, .end = NOW - 20},
		{.start = NOW + 6000000000ull, .end = NOW + 6000000001ull},
		{.start = NOW - 3700000000000ull, .end = NOW - 3699000000000ull},
	};
	for (size_t i = 0; i < 4; i++)
		add(&m, GPI_KERNEL, &bad[i], sizeof(bad[i]));
	struct gpi_kernel undef = {.start = NOW - 10, .end = NOW - 5, .name = 500};
	add(&m, GPI_KERNEL, &undef, sizeof(undef));
	uint8_t unknown[24] = {0};
	add(&m, 99, unknown, sizeof(unknown)); /* skipped by its length */
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.p.drops[CUPTI_DROP_TIME], 4);
	CHECK_EQ_INT(f.p.drops[CUPTI_DROP_UNDEFINED], 1);
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_UNKNOWN], 1);
	CHECK_EQ_INT(store_count(f.s), 1);
	CHECK_EQ_INT(last(&f)->name, 0);

	/* rate: 3 tokens, 5 records */
	f.p.tokens = 3;
	f.cu.lim.peer_rate = 1; /* refills a token a second */
	begin(&m, 1);
	for (int i = 0; i < 5; i++) {
		struct gpi_kernel k = {.start = NOW - 10, .end = NOW - 5};

		add(&m, GPI_KERNEL, &k, sizeof(k));
	}
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.p.drops[CUPTI_DROP_RATE], 2);
	CHECK_EQ_INT(store_count(f.s), 4);

	/* names: a bound of 3 pages' worth; a redefinition replaces */
	f.p.tokens = 1e9;
	f.cu.lim.peer_rate = 1000000000;
	f.cu.lim.peer_strings = 2 * 256 * sizeof(struct cupti_str) + 300;
	begin(&m, 2);
	add_string(&m, 1, "a");
	add_string(&m, 2, "bb");
	add_string(&m, 1, "ccc");	     /* replaces id 1 */
	add_string(&m, 300, "another page"); /* a second page */
	add_string(&m, 600, "a third page: refused");
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.p.strs.count, 3);
	CHECK_EQ_INT(f.p.drops[CUPTI_DROP_STRINGS], 1);
	CHECK(f.p.strs.bytes <= f.cu.lim.peer_strings);
	begin(&m, 3);
	struct gpi_kernel k1 = {.start = NOW - 10, .end = NOW - 5, .name = 1};
	struct gpi_kernel k6 = {.start = NOW - 10, .end = NOW - 5, .name = 600};
	add(&m, GPI_KERNEL, &k1, sizeof(k1));
	add(&m, GPI_KERNEL, &k6, sizeof(k6));
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_STREQ(str(&f, store_at(f.s, store_count(f.s) - 2)->name), "ccc");
	CHECK_EQ_INT(last(&f)->name, 0);
	/* the seq jump from 3 to 10 is 6 batches the library dropped */
	begin(&m, 10);
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.p.seq_gaps, 6);
	teardown(&f);
}

/* Each malformed message is refused whole, with a reason, and stores
 * nothing. */
static void test_malformed(void)
{
	struct fixture f;
	struct msg m;
	struct gpi_kernel k = {.start = NOW - 10, .end = NOW - 5};
	struct gpi_hello h = {.lib_version = 2};

	setup(&f);
	begin(&m, 0);
	add(&m, GPI_KERNEL, &k, sizeof(k));
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "first record is type 3, not a hello");
	begin(&m, 0);
	add(&m, GPI_HELLO, &h, sizeof(h));
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "library version 2 (this daemon speaks 1)");
	begin(&m, 0);
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "first message holds no hello");

	begin(&m, 0);
	add_hello(&m);
	CHECK_EQ_INT(decode(&f, &m), 0);

	/* a good record, then a bad one: the good one is not stored */
	begin(&m, 1);
	add(&m, GPI_KERNEL, &k, sizeof(k));
	add(&m, GPI_KERNEL, &k, sizeof(k));
	m.b[m.len - sizeof(k) + 2] = 0xff; /* second record's len: 255 + ... */
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK(strstr(f.p.last_error, "record 1: length"));
	CHECK_EQ_INT(store_count(f.s), 0);

	begin(&m, 1);
	add(&m, GPI_KERNEL, &k, 40); /* shorter than a kernel */
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 0: type 3 in 40 bytes (needs 96)");

	begin(&m, 1);
	add_hello(&m);
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 0: a hello after the first record");

	begin(&m, 1);
	add_string(&m, GPI_STRING_IDS, "x");
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 0: string id 65536");

	begin(&m, 1);
	struct gpi_api a = {.enter = NOW - 10, .exit = NOW - 5, .name = 70000};
	add(&m, GPI_API, &a, sizeof(a));
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 0: string id 70000");

	begin(&m, 1);
	add(&m, GPI_KERNEL, &k, sizeof(k));
	m.b[offsetof(struct gpi_hdr, nrec)] = 2; /* one record more than there is */
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 1 of 2 past the end");

	begin(&m, 1);
	add(&m, GPI_KERNEL, &k, sizeof(k));
	m.b[offsetof(struct gpi_hdr, nrec)] = 0; /* one record fewer */
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "96 bytes after record 0");

	begin(&m, 1);
	m.b[0] ^= 1;
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK(strstr(f.p.last_error, "bad magic"));
	CHECK_EQ_INT(cupti_decode(&f.p, m.b, 8, NOW), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "message of 8 bytes");
	CHECK_EQ_INT(store_count(f.s), 0);
	teardown(&f);
}

/* CUDA event records: kept as they came, no string, no detail; a short one
 * is malformed, a bad time dropped like any record's. */
static void test_cuda_event(void)
{
	struct fixture f;
	struct msg m;
	const struct store_rec *r;

	setup(&f);
	begin(&m, 0);
	add_hello(&m);
	struct gpi_cuda_event e = {.time = NOW - 700,
				   .corr = 41,
				   .event = 12,
				   .device = 1,
				   .context = 2,
				   .stream = 13};
	add(&m, GPI_CUDA_EVENT, &e, sizeof(e));
	CHECK_EQ_INT(decode(&f, &m), 0);
	r = last(&f);
	CHECK(r && r->type == STORE_REC_GPU_EVENT);
	CHECK_EQ_INT(r->pid, 4242);
	CHECK_EQ_INT(r->uid, 1000);
	CHECK_EQ_INT(r->tid, 0);
	CHECK_EQ_U64(r->ts_ns, NOW - 700);
	CHECK_EQ_U64(r->dur_ns, 0);
	CHECK_EQ_INT(r->name, 0);
	CHECK_EQ_INT(r->aux32, 12);
	CHECK_EQ_U64(r->aux[0], STORE_CUPTI_WHERE(1, 2, 13));
	CHECK_EQ_U64(r->aux[1], 41);
	CHECK_EQ_INT(store_rec_detail(r), 0);
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_EVENT], 1);

	/* no time, or an hour old: dropped and counted */
	begin(&m, 1);
	e.time = 0;
	add(&m, GPI_CUDA_EVENT, &e, sizeof(e));
	e.time = NOW - 7200ull * 1000000000ull;
	add(&m, GPI_CUDA_EVENT, &e, sizeof(e));
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_EVENT], 1);
	CHECK_EQ_U64(f.p.drops[CUPTI_DROP_TIME], 2);

	/* shorter than its struct: the message adds nothing */
	begin(&m, 2);
	e.time = NOW - 10;
	add(&m, GPI_CUDA_EVENT, &e, sizeof(e));
	add(&m, GPI_CUDA_EVENT, &e, sizeof(e) - 8);
	CHECK_EQ_INT(decode(&f, &m), -EBADMSG);
	CHECK_STREQ(f.p.last_error, "record 1: type 15 in 32 bytes (needs 40)");
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_EVENT], 1);
	CHECK_EQ_INT(store_count(f.s), 1);
	teardown(&f);
}

/* Duty-cycle windows: kept as records of their time, counted per peer;
 * a bad time is dropped like any record's and counts nothing. */
static void test_window(void)
{
	struct fixture f;
	struct msg m;
	const struct store_rec *r;

	setup(&f);
	begin(&m, 0);
	add_hello(&m);
	struct gpi_window w = {.start = NOW - 300000000, .end = NOW - 290000000, .duty = 5,
			       .period_ms = 200};
	add(&m, GPI_WINDOW, &w, sizeof(w));
	w.start = NOW - 100000000;
	w.end = NOW - 90000000;
	add(&m, GPI_WINDOW, &w, sizeof(w));
	CHECK_EQ_INT(decode(&f, &m), 0);
	r = last(&f);
	CHECK(r && r->type == STORE_REC_GPU_WINDOW);
	CHECK_EQ_INT(r->pid, 4242);
	CHECK_EQ_U64(r->ts_ns, NOW - 100000000);
	CHECK_EQ_U64(r->dur_ns, 10000000);
	CHECK_EQ_INT(r->name, 0);
	CHECK_EQ_INT(r->aux32, 5);
	CHECK_EQ_U64(r->aux[0], 200);
	CHECK_EQ_INT(f.cu.tot.records[CUPTI_N_WINDOW], 2);
	CHECK_EQ_U64(f.p.windows, 2);
	CHECK_EQ_U64(f.p.covered_ns, 20000000);
	CHECK_EQ_U64(f.p.first_window_ns, NOW - 300000000);
	CHECK_EQ_INT(f.p.duty, 5);
	CHECK_EQ_INT(f.p.period_ms, 200);

	/* ends before it starts: dropped, nothing counted */
	begin(&m, 1);
	w.start = NOW - 10;
	w.end = NOW - 20;
	add(&m, GPI_WINDOW, &w, sizeof(w));
	CHECK_EQ_INT(decode(&f, &m), 0);
	CHECK_EQ_U64(f.p.windows, 2);
	CHECK_EQ_U64(f.p.drops[CUPTI_DROP_TIME], 1);
	CHECK_EQ_INT(store_count(f.s), 2);
	teardown(&f);
}

int main(void)
{
	RUN(test_kinds);
	RUN(test_window);
	RUN(test_cuda_event);
	RUN(test_drops);
	RUN(test_malformed);
	return test_summary();
}
