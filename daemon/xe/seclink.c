// SPDX-License-Identifier: MIT
/*
 * xe_sec_link_stacks() (xe_collector.h): the EU-stall section's kernel
 * launch stacks join the capture's stack table, so the symbolizer resolves
 * them and the outputs find their names by (pid, stack id) like any
 * record's. Apart from collector.c so that tests link it without the
 * collector registry.
 */
#include "xe_collector.h"

#include <errno.h>
#include <stdlib.h>

#include "capture/capture.h"
#include "section.h"

int xe_sec_link_stacks(struct capture *cap, void *buf, size_t len)
{
	struct xe_capdata d;
	int r = xe_sec_decode(buf, len, &d, NULL, 0);

	if (r < 0)
		return r;
	uint32_t nk = d.h->nkernels;
	struct capture_newstack *ns = calloc(nk + 1, sizeof(*ns));
	uint32_t *ids = calloc(nk + 1, sizeof(*ids)), *which = calloc(nk + 1, sizeof(*which));
	struct xe_sec_kernel *ks = (struct xe_sec_kernel *)((struct xe_sec_hdr *)buf + 1);
	size_t n = 0;

	r = -ENOMEM;
	if (ns && ids && which) {
		for (uint32_t i = 0; i < nk; i++) {
			const struct xe_sec_kernel *k = &d.k[i];

			if (!k->nips)
				continue;
			ns[n] = (struct capture_newstack){k->pid, k->uid, d.ips + k->ips_off,
							  k->nips, 0};
			which[n++] = i;
		}
		r = capture_add_stacks(cap, ns, n, ids);
	}
	for (size_t i = 0; r == 0 && i < n; i++)
		ks[which[i]].stack = ids[i];
	free(ns);
	free(ids);
	free(which);
	xe_sec_finish(&d);
	return r;
}
