// SPDX-License-Identifier: MIT
/* IGA through dlopen (iga.h). Types and values from IGA's iga.h. */
#include "iga.h"

#include <ctype.h>
#include <stdbool.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* iga.h: XE_VER(MAJ, MIN) = MAJ << 24 | MIN */
#define IGA_XE_VER(maj, min) ((uint32_t)(maj) << 24 | (min))
#define IGA_SUCCESS 0
#define IGA_VERSION_ERROR 7

struct iga_ctx_opts {
	size_t cb;
	uint32_t gen;
};

/* cb, formatting_opts, _reserved0, _reserved1, decoder_opts, base_pc_offset;
 * older libraries lack the last field and refuse a larger cb */
struct iga_dis_opts {
	uint32_t cb, formatting_opts, reserved0, reserved1, decoder_opts, base_pc_offset;
};

typedef int (*ctx_create_fn)(const struct iga_ctx_opts *, void **);
typedef int (*ctx_release_fn)(void *);
typedef int (*dis_insn_fn)(void *, const struct iga_dis_opts *, const void *,
			   const char *(*)(int32_t, void *), void *, char **);
typedef int (*platforms_fn)(size_t, uint32_t *, size_t *);

struct xe_iga {
	void *lib, *ctx;
	ctx_release_fn release;
	dis_insn_fn dis;
	uint32_t opts_cb;
	const char *platform;
};

/* Graphics IP -> IGA platform, for the IPs with an EU-stall layout (decode.c). */
static int iga_gen(unsigned maj, unsigned min, uint32_t *gen, const char **name)
{
	unsigned v = maj * 100 + (min > 99 ? 99 : min);

	if (v == 1260)
		*gen = IGA_XE_VER(1, 4), *name = "xehpc";
	else if (v >= 2000 && v < 3000)
		*gen = IGA_XE_VER(2, 0), *name = "xe2";
	else if (v >= 3000 && v < 3500)
		*gen = IGA_XE_VER(3, 0), *name = "xe3";
	else if (v >= 3500)
		*gen = IGA_XE_VER(3, 3), *name = "xe3p";
	else
		return -EOPNOTSUPP;
	return 0;
}

static bool lists_gen(platforms_fn list, uint32_t gen)
{
	uint32_t gens[64];
	size_t need = 0;

	if (list(sizeof(gens), gens, &need) != IGA_SUCCESS)
		return false;
	for (size_t i = 0; i < need / sizeof(gens[0]) && i < 64; i++)
		if (gens[i] == gen)
			return true;
	return false;
}

int xe_iga_new(unsigned ver_major, unsigned ver_minor, struct xe_iga **ret)
{
	const char *path = getenv("GPUPROF_IGA_LIB");
	struct xe_iga *g;
	ctx_create_fn create;
	platforms_fn list;
	uint32_t gen;
	const char *name;
	int r = iga_gen(ver_major, ver_minor, &gen, &name);

	if (r < 0)
		return r;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->lib = dlopen(path && *path ? path : "libiga64.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!g->lib) {
		free(g);
		return -ENOENT;
	}
	create = (ctx_create_fn)dlsym(g->lib, "iga_context_create");
	list = (platforms_fn)dlsym(g->lib, "iga_platforms_list");
	g->release = (ctx_release_fn)dlsym(g->lib, "iga_context_release");
	g->dis = (dis_insn_fn)dlsym(g->lib, "iga_context_disassemble_instruction");
	r = -EPROTO;
	if (!create || !list || !g->release || !g->dis)
		goto err;
	r = -EOPNOTSUPP;
	if (!lists_gen(list, gen))
		goto err;
	r = -EPROTO;
	if (create(&(struct iga_ctx_opts){sizeof(struct iga_ctx_opts), gen}, &g->ctx) !=
	    IGA_SUCCESS)
		goto err;
	g->opts_cb = sizeof(struct iga_dis_opts);
	g->platform = name;
	*ret = g;
	return 0;
err:
	dlclose(g->lib);
	free(g);
	return r;
}

void xe_iga_free(struct xe_iga *g)
{
	if (!g)
		return;
	g->release(g->ctx);
	dlclose(g->lib);
	free(g);
}

const char *xe_iga_platform(const struct xe_iga *g)
{
	return g->platform;
}

int xe_iga_insn(struct xe_iga *g, const uint8_t *isa, size_t len, size_t off, char *out,
		size_t outlen)
{
	char *text = NULL;
	size_t n;
	int st;

	/* CmptCtrl, bit 29 of the first dword: an 8-byte compacted form */
	if (off >= len || len - off < 8 || (!(isa[off + 3] & 0x20) && len - off < 16))
		return -EINVAL;
	for (;;) {
		struct iga_dis_opts o = {.cb = g->opts_cb};

		st = g->dis(g->ctx, &o, isa + off, NULL, NULL, &text);
		if (st != IGA_VERSION_ERROR || g->opts_cb == 20)
			break;
		g->opts_cb = 20; /* a library from before base_pc_offset */
	}
	if (st != IGA_SUCCESS || !text)
		return -EBADMSG;
	/* first line, blanks trimmed and runs of them (IGA aligns columns)
	 * collapsed: a flame-graph frame wants one short line */
	n = 0;
	for (const char *p = text; *p && *p != '\n'; p++) {
		if (isspace((unsigned char)*p) &&
		    (!n || isspace((unsigned char)p[1]) || !p[1] || p[1] == '\n'))
			continue;
		if (n + 1 < outlen)
			out[n] = isspace((unsigned char)*p) ? ' ' : *p;
		n++;
	}
	if (outlen)
		out[n < outlen ? n : outlen - 1] = '\0';
	return (int)n;
}
