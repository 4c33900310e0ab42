// SPDX-License-Identifier: MIT
/* Folded-stack output from a capture built by hand, with a symbols section
 * built by hand: exact text, options, filters, sanitizing and totals. */
#include "membuf.h"
#include "test.h"
#include "capbuild.h"

#include "render/folded.h"
#include "sym/symtab.h"

#include <errno.h>
#include <unistd.h>

static void add_syms(struct sym_table_builder *b, uint32_t pid, uint32_t stack,
		     const char *const *names, uint16_t nu, uint16_t nk)
{
	uint32_t idx[16];
	for (size_t i = 0; i < (size_t)nu + nk; i++)
		sym_tb_name(b, names[i], strlen(names[i]), &idx[i]);
	CHECK_EQ_INT(sym_tb_add(b, pid, stack, idx, NULL, nu, nk), 0);
}

static struct capture *make_capture(void)
{
	struct capture *c;
	struct sym_table_builder *b;
	void *buf;
	size_t len;

	if (capture_new(&c) < 0)
		abort();
	uint32_t app = cb_str(c, "app"), other = cb_str(c, "other");
	uint32_t weird = cb_str(c, "we;ird\ncomm");
	uint64_t s1ips[] = {0x101, 0x102, 0x103, 0xffff1, 0xffff2};
	uint64_t s2ips[] = {0x1000, 0x2000};
	uint64_t s3ips[] = {0xffff1};
	uint32_t s1 = cb_stack(c, s1ips, 3, 2), s2 = cb_stack(c, s2ips, 2, 0);
	uint32_t s3 = cb_stack(c, s3ips, 0, 1);

	cb_rec(c, 100, 10, 10, app, s1);
	cb_rec(c, 200, 10, 12, app, s1);
	cb_rec(c, 300, 11, 11, app, s1);
	cb_rec(c, 400, 10, 10, app, s2);
	cb_rec(c, 500, 12, 12, other, s3);
	cb_rec(c, 600, 13, 13, weird, s2);
	cb_rec(c, 650, 10, 10, app, s1);
	c->recs[c->nrecs - 1].type = STORE_REC_GPU_LAUNCH; /* not a sample */
	cb_rec(c, 700, 10, 10, app, 0);
	cb_rec(c, 800, 14, 14, app, s2);

	if (sym_tb_new(false, &b) < 0)
		abort();
	static const char *const p10s1[] = {"leaf_fn", "mid;fn", "main", "do_syscall",
					    "entry_SYSCALL_64"};
	static const char *const p11s1[] = {"leaf\n2", "mid2", "main2", "do_syscall",
					    "entry_SYSCALL_64"};
	static const char *const s2n[] = {"b_leaf", "a_root"};
	static const char *const s3n[] = {"do_syscall"};
	add_syms(b, 10, s1, p10s1, 3, 2);
	add_syms(b, 11, s1, p11s1, 3, 2);
	add_syms(b, 10, s2, s2n, 2, 0);
	add_syms(b, 14, s2, s2n, 2, 0);
	add_syms(b, 12, s3, s3n, 0, 1);
	if (sym_tb_encode(b, &buf, &len) < 0 || capture_add_extra(c, CAPSEC_SYMBOLS, buf, len) < 0)
		abort();
	free(buf);
	sym_tb_free(b);
	return c;
}

static char *render(const struct capture *c, const struct folded_opts *o, struct folded_totals *t)
{
	struct membuf m = {0};
	CHECK_EQ_INT(folded_write(c, o, membuf_write, &m, t), 0);
	return m.p ? m.p : strdup("");
}

static void test_default(void)
{
	struct capture *c = make_capture();
	struct folded_totals t;
	char *out = render(c, NULL, &t);
	CHECK_STREQ(out, "app 1\n"
			 "app;a_root;b_leaf 2\n"
			 "app;main2;mid2;leaf 2;-;entry_SYSCALL_64;do_syscall 1\n"
			 "app;main;mid:fn;leaf_fn;-;entry_SYSCALL_64;do_syscall 2\n"
			 "other;do_syscall 1\n"
			 "we:ird comm;0x2000;0x1000 1\n");
	CHECK_EQ_INT(t.samples, 8);
	CHECK_EQ_INT(t.weight, 8);
	CHECK_EQ_INT(t.stacks, 6);
	CHECK(t.symbolized);
	free(out);
	capture_free(c);
}

static void test_no_kernel(void)
{
	struct capture *c = make_capture();
	struct folded_opts o = {.no_kernel = true};
	struct folded_totals t;
	char *out = render(c, &o, &t);
	CHECK_STREQ(out, "app 1\n"
			 "app;a_root;b_leaf 2\n"
			 "app;main2;mid2;leaf 2 1\n"
			 "app;main;mid:fn;leaf_fn 2\n"
			 "other 1\n"
			 "we:ird comm;0x2000;0x1000 1\n");
	CHECK_EQ_INT(t.samples, 8);
	free(out);
	capture_free(c);
}

static void test_pid_tid(void)
{
	struct capture *c = make_capture();
	struct folded_opts o = {.pid = true};
	struct folded_totals t;
	char *out = render(c, &o, &t);
	CHECK_STREQ(out, "app-10 1\n"
			 "app-10;a_root;b_leaf 1\n"
			 "app-10;main;mid:fn;leaf_fn;-;entry_SYSCALL_64;do_syscall 2\n"
			 "app-11;main2;mid2;leaf 2;-;entry_SYSCALL_64;do_syscall 1\n"
			 "app-14;a_root;b_leaf 1\n"
			 "other-12;do_syscall 1\n"
			 "we:ird comm-13;0x2000;0x1000 1\n");
	CHECK_EQ_INT(t.stacks, 7);
	free(out);
	o = (struct folded_opts){.tid = true, .no_kernel = true};
	out = render(c, &o, &t);
	CHECK(strstr(out, "\napp-10/10;main;mid:fn;leaf_fn 1\n") != NULL);
	CHECK(strstr(out, "\napp-10/12;main;mid:fn;leaf_fn 1\n") != NULL);
	CHECK_EQ_INT(t.stacks, 8);
	CHECK_EQ_INT(t.weight, 8);
	free(out);
	capture_free(c);
}

static void test_filters(void)
{
	struct capture *c = make_capture();
	struct folded_totals t;
	uint32_t pids[] = {99, 10}, tids[] = {12};
	struct folded_opts o = {.pids = pids, .npids = 2, .no_kernel = true};
	char *out = render(c, &o, &t);
	CHECK_STREQ(out, "app 1\napp;a_root;b_leaf 1\napp;main;mid:fn;leaf_fn 2\n");
	CHECK_EQ_INT(t.samples, 4);
	free(out);

	o = (struct folded_opts){.tids = tids, .ntids = 1};
	out = render(c, &o, &t);
	CHECK_STREQ(out, "app;main;mid:fn;leaf_fn;-;entry_SYSCALL_64;do_syscall 1\n"
			 "other;do_syscall 1\n"); /* pid 12's thread 12 too */
	free(out);

	o = (struct folded_opts){.comm = "other"};
	out = render(c, &o, &t);
	CHECK_STREQ(out, "other;do_syscall 1\n");
	CHECK_EQ_INT(t.samples, 1);
	free(out);

	o = (struct folded_opts){.start_ns = 150, .end_ns = 400, .no_kernel = true};
	out = render(c, &o, &t);
	CHECK_STREQ(out,
		    "app;a_root;b_leaf 1\napp;main2;mid2;leaf 2 1\napp;main;mid:fn;leaf_fn 1\n");
	CHECK_EQ_INT(t.samples, 3);
	free(out);

	o = (struct folded_opts){.comm = "nobody"};
	out = render(c, &o, &t);
	CHECK_STREQ(out, "");
	CHECK_EQ_INT(t.samples, 0);
	CHECK_EQ_INT(t.stacks, 0);
	free(out);
	o = (struct folded_opts){.npids = 1};
	CHECK_EQ_INT(folded_write(c, &o, membuf_write, NULL, &t), -EINVAL);
	capture_free(c);
}

static void test_weights_and_raw(void)
{
	struct capture *c = make_capture();
	struct folded_totals t;
	c->recs[0].aux32 = 5; /* weight */
	/* a damaged symbols section: raw addresses, no crash */
	free(c->extras[0].data);
	c->extras[0].data = strdup("garbage");
	c->extras[0].len = 7;
	struct folded_opts o = {.comm = "app", .pids = (uint32_t[]){10}, .npids = 1};
	char *out = render(c, &o, &t);
	CHECK_STREQ(out, "app 1\n"
			 "app;0x103;0x102;0x101;-;0xffff2;0xffff1 6\n"
			 "app;0x2000;0x1000 1\n");
	CHECK(!t.symbolized);
	CHECK_EQ_INT(t.weight, 8);
	CHECK_EQ_INT(t.samples, 4);
	free(out);
	capture_free(c);
}

static void test_fd(void)
{
	struct capture *c = make_capture();
	struct folded_totals t;
	int p[2];
	char buf[4096];
	CHECK_EQ_INT(pipe(p), 0);
	CHECK_EQ_INT(folded_write_fd(c, NULL, p[1], &t), 0);
	close(p[1]);
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	buf[n > 0 ? n : 0] = '\0';
	CHECK(strncmp(buf, "app 1\napp;a_root;b_leaf 2\n", 26) == 0);
	CHECK_EQ_INT(t.stacks, 6);
	CHECK_EQ_INT(folded_write_fd(c, NULL, -1, &t), -EBADF);
	capture_free(c);
}

/* --cgroup: each launch's cgroup path as the root frame, before comm;
 * launches without one (and CPU samples) under "[no cgroup]". */
static void test_cgroup(void)
{
	struct capture *c = make_capture();
	uint32_t app = c->recs[0].comm, s2 = c->recs[3].stack, gemm = cb_str(c, "gemm");
	uint32_t cga = cb_str(c, "/a.slice/x.service"), cgb = cb_str(c, "/b;c");
	struct folded_totals t;

	for (uint32_t i = 0; i < 5; i++) {
		cb_rec(c, 900 + i, i < 3 ? 10 : 14, 10, app, s2);
		c->recs[c->nrecs - 1].type = STORE_REC_GPU_LAUNCH;
		c->recs[c->nrecs - 1].name = gemm;
		c->recs[c->nrecs - 1].cgroup = i < 3 ? cga : cgb;
	}
	struct folded_opts o = {.weight = FOLDED_WEIGHT_LAUNCHES, .cgroup = true};
	char *out = render(c, &o, &t);
	CHECK_STREQ(out, "/a.slice/x.service;app;a_root;b_leaf;gemm_[G] 3\n"
			 "/b:c;app;a_root;b_leaf;gemm_[G] 2\n"
			 "[no cgroup];app;main;mid:fn;leaf_fn;-;entry_SYSCALL_64;do_syscall 1\n");
	CHECK_EQ_INT(t.samples, 6);
	CHECK_EQ_INT(t.stacks, 3);
	free(out);
	/* without the option the containers merge */
	o.cgroup = false;
	out = render(c, &o, &t);
	CHECK(strstr(out, "app;a_root;b_leaf;gemm_[G] 5\n") != NULL);
	free(out);
	/* samples have no cgroup */
	o = (struct folded_opts){.cgroup = true, .comm = "other"};
	out = render(c, &o, &t);
	CHECK_STREQ(out, "[no cgroup];other;do_syscall 1\n");
	free(out);
	capture_free(c);
}

int main(void)
{
	RUN(test_default);
	RUN(test_no_kernel);
	RUN(test_pid_tid);
	RUN(test_filters);
	RUN(test_weights_and_raw);
	RUN(test_fd);
	RUN(test_cgroup);
	return test_summary();
}
