// SPDX-License-Identifier: MIT
/*
 * Demangling: sym_demangle() on C++, Rust legacy, SYCL typeinfo and plain
 * names, sym_demangle_cut() on names cut short; then a real capture of this process's own functions, named with
 * mangled symbols, symbolized with and without demangling and rendered as
 * folded stacks.
 */
#include "membuf.h"
#include "test.h"
#include "capbuild.h"

#include "render/folded.h"
#include "sym/demangle.h"
#include "sym/sym.h"

#include <unistd.h>

/* Two functions of this executable under mangled symbol names. */
int cxx_fn(int x) __asm__("_ZN3foo3barEv");
int rust_fn(int x) __asm__("_ZN4demo4main17h0123456789abcdefE");

__attribute__((noipa, used)) int cxx_fn(int x)
{
	volatile int v = x;
	for (int i = 0; i < 3; i++)
		v += i * x;
	return v;
}

__attribute__((noipa, used)) int rust_fn(int x)
{
	volatile int v = cxx_fn(x);
	for (int i = 0; i < 3; i++)
		v ^= i + x;
	return v;
}

static char buf[4200];

static const char *dm(const char *in)
{
	strcpy(buf, "(untouched)");
	return sym_demangle(in, buf, sizeof(buf)) ? buf : "(kept)";
}

static void test_names(void)
{
	CHECK_STREQ(dm("_ZN3foo3barEv"), "foo::bar()");
	CHECK_STREQ(dm("_ZNSt6vectorIiSaIiEE9push_backERKi"),
		    "std::vector<int, std::allocator<int> >::push_back(int const&)");
	/* Rust legacy: the hash element goes, a hash-like name without the
	 * Rust shape stays */
	CHECK_STREQ(dm("_ZN4core3fmt5write17h2d5e4aa4c9b8d2a1E"), "core::fmt::write");
	CHECK_STREQ(dm("_ZN4demo4main17h0123456789abcdefE"), "demo::main");
	CHECK_STREQ(dm("_ZN4demo17hxxxxxxxxxxxxxxxxE"), "demo::hxxxxxxxxxxxxxxxx");
	CHECK_STREQ(dm("_ZN4demo3fooEv"), "demo::foo()");
	/* SYCL kernel typeinfo names: the type, without "typeinfo name for " */
	CHECK_STREQ(dm("_ZTSZ4mainE6kernel"), "main::kernel");
	CHECK_STREQ(dm("_ZTS10VecAddKern"), "VecAddKern");
	/* what is not mangled, or does not demangle, is kept as is */
	CHECK_STREQ(dm("main"), "(kept)");
	CHECK_STREQ(buf, "(untouched)");
	CHECK_STREQ(dm("_Znotmangled"), "(kept)");
	CHECK_STREQ(dm("_ZN3foo"), "(kept)");
	CHECK_STREQ(dm("_RNvCs1234_4demo4main"), "(kept)"); /* Rust v0 */
	CHECK_STREQ(dm(""), "(kept)");
	/* cut to the buffer */
	char small[6];
	CHECK(sym_demangle("_ZN3foo3barEv", small, sizeof(small)));
	CHECK_STREQ(small, "foo::");
	CHECK(!sym_demangle("_ZN3foo3barEv", small, 0));
}

static const char *cut(const char *in)
{
	return sym_demangle_cut(in, buf, sizeof(buf)) ? buf : "(none)";
}

/* A real kernel name as the launch probes kept it on an H200 (PyTorch
 * 2.11's normal distribution kernel, cut at 255 bytes). */
static const char torch_cut[] =
    "_ZN2at6native54_GLOBAL__N__d8ceb000_21_DistributionNormal_cu_0c5b6e85"
    "43distribution_elementwise_grid_stride_kernelIfLi4EZNS0_9templates4cuda"
    "20normal_and_transformIffPNS_17CUDAGeneratorImplEZZZNS4_13normal_kernelI"
    "S7_EEvRKNS_10TensorBaseEddT_ENKUlvE_clEvENK";

static void test_cut_names(void)
{
	CHECK(strlen(torch_cut) == 255);
	CHECK(!sym_demangle(torch_cut, buf, sizeof(buf)));
	CHECK_STREQ(cut(torch_cut), "at::native::(anonymous namespace)::"
				    "distribution_elementwise_grid_stride_kernel<\u2026>");
	CHECK_STREQ(cut("_ZN2at6native18elementwise_kernelILi4E"),
		    "at::native::elementwise_kernel<\u2026>");
	CHECK_STREQ(cut("_ZNSt6vectorIiSaIiEE9push_ba"), "std::vector<\u2026>");
	CHECK_STREQ(cut("_ZNK3foo3barEv"), "foo::bar");
	CHECK_STREQ(cut("_ZN3foo"), "foo");
	CHECK_STREQ(cut("_ZN3foo12ab"), "foo");   /* cut inside an identifier */
	CHECK_STREQ(cut("_Z6vecaddPfS_"), "vecadd");
	CHECK_STREQ(cut("_ZN12_GLOBAL__N_13fooE"), "(anonymous namespace)::foo");
	CHECK_STREQ(cut("_ZN12ab"), "(none)");
	CHECK_STREQ(cut("_Zbroken"), "(none)");
	CHECK_STREQ(cut("_ZN"), "(none)");
	CHECK_STREQ(cut("_Z"), "(none)");
	CHECK_STREQ(cut("main"), "(none)");
	CHECK_STREQ(cut("_ZN99999999999999999999999a"), "(none)");
	/* cut to the buffer: whole components only */
	char small[6];
	CHECK(sym_demangle_cut("_ZN3foo3barEv", small, sizeof(small)));
	CHECK_STREQ(small, "foo");
	CHECK(!sym_demangle_cut("_ZN3foo3barEv", small, 1));
	/* every cut of a long real name: a prefix of the same qualified name */
	static const char full[] = "at::native::(anonymous namespace)::"
				   "distribution_elementwise_grid_stride_kernel";
	char name[sizeof(torch_cut)];
	for (size_t n = 0; n <= strlen(torch_cut); n++) {
		memcpy(name, torch_cut, n);
		name[n] = '\0';
		const char *r = cut(name);
		if (strcmp(r, "(none)") != 0)
			CHECK(!strncmp(r, full, strlen(r) < sizeof(full) - 1 ? strlen(r) : sizeof(full) - 1));
	}
}

/* Folded text of a capture of this process: three samples of one stack
 * (leaf cxx_fn called from rust_fn) and one of a stack whose leaf is
 * rust_fn itself, symbolized with or without demangling. */
static char *capture_folded(bool demangle)
{
	struct sym_opts o = {.refresh_ns = 1, .no_demangle = !demangle};
	struct symbolizer *s;
	struct capture *c;
	uint32_t pid = (uint32_t)getpid();
	struct membuf m = {0};

	CHECK_EQ_INT(sym_new(&o, &s), 0);
	CHECK_EQ_INT(capture_new(&c), 0);
	sym_note_pid(s, pid);
	uint32_t comm = cb_str(c, "demangle");
	uint64_t a[] = {(uint64_t)(uintptr_t)cxx_fn + 1, (uint64_t)(uintptr_t)rust_fn + 4};
	uint64_t b[] = {(uint64_t)(uintptr_t)rust_fn + 2};
	uint32_t st1 = cb_stack(c, a, 2, 0), st2 = cb_stack(c, b, 1, 0);
	for (int i = 0; i < 3; i++)
		cb_rec(c, 100 + i, pid, pid, comm, st1);
	cb_rec(c, 200, pid, pid, comm, st2);
	CHECK_EQ_INT(sym_symbolize_capture(s, c), 0);
	CHECK_EQ_INT(folded_write(c, NULL, membuf_write, &m, NULL), 0);
	capture_free(c);
	sym_free(s);
	return m.p;
}

static void test_capture(void)
{
	char *out = capture_folded(true);
	CHECK_STREQ(out ? out : "", "demangle;demo::main 1\n"
				    "demangle;demo::main;foo::bar() 3\n");
	free(out);
	out = capture_folded(false);
	CHECK_STREQ(out ? out : "", "demangle;_ZN4demo4main17h0123456789abcdefE 1\n"
				    "demangle;_ZN4demo4main17h0123456789abcdefE;_ZN3foo3barEv 3\n");
	free(out);
	CHECK(rust_fn(1) != 12345); /* keep both reachable */
}

/* A capture string's text, NUL-terminated (it may hold a NUL itself). */
static const char *cstr(const struct capture *c, uint32_t id, size_t *len)
{
	static char t[256];
	const char *p = capture_str(c, id, len);
	memcpy(t, p, *len < sizeof(t) - 1 ? *len : sizeof(t) - 1);
	t[*len < sizeof(t) - 1 ? *len : sizeof(t) - 1] = '\0';
	return t;
}

static void test_kernels(void)
{
	static const char launch_name[] = "_ZTSZ4mainE6kernel\0grid=4,1,1";
	for (int on = 0; on < 2; on++) {
		struct sym_opts o = {.no_demangle = !on};
		struct symbolizer *s;
		struct capture *c;
		size_t len;
		CHECK_EQ_INT(sym_new(&o, &s), 0);
		CHECK_EQ_INT(capture_new(&c), 0);
		uint32_t comm = cb_str(c, "_ZN3foo3barEv"); /* a comm: never demangled */
		uint32_t sycl = cb_str(c, "_ZTSZ4mainE6kernel");
		uint32_t cuda = cb_str(c, "_Z6vecaddPfS_S_");
		uint32_t plain = cb_str(c, "gemm_kernel");
		uint32_t bad = cb_str(c, "_Zbroken");
		uint32_t trunc = cb_str(c, torch_cut);
		/* a launch name with the collector's geometry after a NUL */
		c->str_blob = realloc(c->str_blob, c->str_blob_len + sizeof(launch_name) - 1);
		memcpy(c->str_blob + c->str_blob_len, launch_name, sizeof(launch_name) - 1);
		c->strs = realloc(c->strs, (c->nstrs + 1) * sizeof(*c->strs));
		c->strs[c->nstrs++] =
		    (struct capture_str){(uint32_t)c->str_blob_len, sizeof(launch_name) - 1};
		c->str_blob_len += sizeof(launch_name) - 1;
		uint32_t geo = c->nstrs;
		uint32_t ids[] = {sycl, cuda, plain, bad, geo, cuda, trunc};
		for (size_t i = 0; i < 7; i++) {
			cb_rec(c, 10 + i, 7, 7, comm, 0);
			c->recs[c->nrecs - 1].type =
			    i % 2 ? STORE_REC_GPU_INTERVAL : STORE_REC_GPU_LAUNCH;
			c->recs[c->nrecs - 1].name = ids[i];
		}
		CHECK_EQ_INT(sym_demangle_kernels(s, c), 0);
		CHECK_STREQ(cstr(c, comm, &len), "_ZN3foo3barEv");
		CHECK_STREQ(cstr(c, sycl, &len), on ? "main::kernel" : "_ZTSZ4mainE6kernel");
		CHECK_STREQ(cstr(c, cuda, &len),
			    on ? "vecadd(float*, float*, float*)" : "_Z6vecaddPfS_S_");
		CHECK_STREQ(cstr(c, plain, &len), "gemm_kernel");
		CHECK_STREQ(cstr(c, bad, &len), "_Zbroken");
		CHECK_STREQ(cstr(c, trunc, &len),
			    on ? "at::native::(anonymous namespace)::"
				 "distribution_elementwise_grid_stride_kernel<\u2026>"
			       : torch_cut);
		const char *g = cstr(c, geo, &len);
		CHECK_STREQ(g, on ? "main::kernel" : "_ZTSZ4mainE6kernel");
		CHECK(len == strlen(g) + 11 && !memcmp(g + strlen(g), "\0grid=4,1,1", 11));
		/* the folded GPU frame shows the demangled kernel name */
		struct membuf m = {0};
		struct folded_opts fo = {.weight = FOLDED_WEIGHT_LAUNCHES};
		CHECK_EQ_INT(folded_write(c, &fo, membuf_write, &m, NULL), 0);
		CHECK(m.p && strstr(m.p, on ? ";main::kernel_[G]" : ";_ZTSZ4mainE6kernel_[G]"));
		free(m.p);
		capture_free(c);
		sym_free(s);
	}
}

int main(void)
{
	RUN(test_names);
	RUN(test_cut_names);
	RUN(test_capture);
	RUN(test_kernels);
	return test_summary();
}
