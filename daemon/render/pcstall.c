// SPDX-License-Identifier: MIT
/* NVIDIA PC samples as the outputs draw them (pcstall.h). */
#include "pcstall.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/gpumatch.h"

/* CUPTI's stall reason names all start so; the frame keeps the rest */
#define STALL_PREFIX "smsp__pcsamp_warps_issue_stalled_"

/* A launch's or a PC sample's (pid, kernel name) as one number: the name
 * up to the NUL a launch collector may append its geometry after, so the
 * launch probe's name and CUPTI's function name meet when they agree. */
static uint64_t launch_key(const struct capture *c, uint32_t pid, uint32_t name)
{
	size_t len;
	const char *s = name ? capture_str(c, name, &len) : NULL;
	uint64_t h = 0xcbf29ce484222325ull ^ pid;

	for (size_t i = 0; s && i < len && s[i]; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static int launch_cmp(const void *a, const void *b)
{
	const struct pcstall_launch *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

int pcstall_init(struct pcstall *p, const struct capture *c)
{
	size_t n = 0;

	*p = (struct pcstall){.c = c};
	/* the loader checked the section; one it could not read is left out */
	if (capsass_of_capture(c, &p->sass, NULL, 0) == -ENOMEM)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++)
		n += c->recs[i].type == STORE_REC_GPU_LAUNCH && c->recs[i].stack;
	if (!n)
		return 0;
	/* a launch known only by handle, by the kernel name CUPTI gave it */
	uint32_t *kname = NULL;

	p->launches = malloc(n * sizeof(*p->launches));
	if (!p->launches || gpu_launch_names(c, &kname) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++) {
		const struct store_rec *r = &c->recs[i];
		uint32_t name = gpu_launch_name(kname, i, r);

		if (r->type == STORE_REC_GPU_LAUNCH && r->stack)
			p->launches[p->nlaunches++] =
				(struct pcstall_launch){launch_key(c, r->pid, name), r->ts_ns,
							r->stack};
	}
	free(kname);
	qsort(p->launches, p->nlaunches, sizeof(*p->launches), launch_cmp);
	return 0;
}

void pcstall_finish(struct pcstall *p)
{
	if (!p)
		return;
	free(p->launches);
	capsass_finish(&p->sass);
	*p = (struct pcstall){0};
}

uint32_t pcstall_stack(const struct pcstall *p, const struct store_rec *r)
{
	struct pcstall_launch want = {launch_key(p->c, r->pid, r->name), r->ts_ns, 0};
	size_t lo = 0, hi = p->nlaunches;

	while (lo < hi) { /* the first entry after want */
		size_t mid = lo + (hi - lo) / 2;

		if (launch_cmp(&p->launches[mid], &want) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && p->launches[lo - 1].key == want.key ? p->launches[lo - 1].stack : 0;
}

const char *pcstall_insn(const struct pcstall *p, uint64_t crc, uint32_t name, uint32_t pc,
			 size_t *len)
{
	return capsass_find(&p->sass, crc, name, pc, len);
}

const char *pcstall_reason(const struct capture *c, uint32_t reason, size_t *len)
{
	const char *rs = reason ? capture_str(c, reason, len) : NULL;

	if (!rs) {
		*len = 0;
		return "";
	}
	if (*len > sizeof(STALL_PREFIX) - 1 &&
	    !memcmp(rs, STALL_PREFIX, sizeof(STALL_PREFIX) - 1)) {
		rs += sizeof(STALL_PREFIX) - 1;
		*len -= sizeof(STALL_PREFIX) - 1;
	}
	return rs;
}
