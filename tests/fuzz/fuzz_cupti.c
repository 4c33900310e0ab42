// SPDX-License-Identifier: MIT
/*
 * The cupti collector's decoder, cupti_decode(): what any local user may
 * send to the daemon's world-connectable cupti.socket (inject/cupti_abi.h).
 * The input is a sequence of messages, each a 2-byte little-endian length
 * then that many bytes (capped at GPI_MSG_MAX), decoded in order on one
 * peer into a real store, the way one connection's messages are. Rejected
 * messages must leave the store and the peer's tables consistent:
 * afterwards every record's strings resolve (a CUDA event record holds
 * none), and clearing the peer gives back every string byte it was
 * charged.
 */
#include "fuzz.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "collect/cupti_int.h"
#include "collector.h"
#include "store/store.h"

#define NOW 1000000000000ull

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_config cfg = {.budget_bytes = 1 << 20};
	struct collector col;
	struct cupti cu;
	struct cupti_peer p;
	struct store *s;
	size_t off = 0;

	if (store_new(&cfg, &s))
		return 0;
	memset(&col, 0, sizeof(col));
	memset(&cu, 0, sizeof(cu));
	memset(&p, 0, sizeof(p));
	cu.col = &col;
	cu.store = s;
	cu.lim.peer_rate = 1000000;
	cu.lim.peer_strings = 1 << 16;
	cu.lim.strings_total = 1 << 16;
	cu.lim.peer_cubin_bytes = 1 << 16;
	cu.lim.cubin_cache_bytes = 1 << 17;
	cu.cubins_tail = &cu.cubins; /* as the collector opens it */
	p.cu = &cu;
	p.pid = 4242;
	p.owner = 1000;
	p.tokens = 1000000;
	p.tokens_ns = NOW;
	while (size - off >= 2) {
		size_t len = (size_t)data[off] | (size_t)data[off + 1] << 8;
		off += 2;
		if (len > size - off)
			len = size - off;
		/* a copy: the decoder may read up to len and no further */
		uint8_t *m = malloc(len ? len : 1);
		if (!m)
			break;
		memcpy(m, data + off, len);
		int r = cupti_decode(&p, m, len, NOW + off);
		free(m);
		off += len;
		if (r < 0)
			break; /* the daemon closes the connection here */
	}
	for (size_t i = 0; i < store_count(s); i++) {
		const struct store_rec *r = store_at(s, i);
		if ((r->name && !store_str(s, r->name, NULL)) ||
		    (r->comm && !store_str(s, r->comm, NULL)) ||
		    (store_rec_detail(r) && !store_str(s, store_rec_detail(r), NULL)))
			abort();
		/* a CUDA event record holds no string and no duration */
		if (r->type == STORE_REC_GPU_EVENT && (r->name || r->dur_ns || store_rec_detail(r)))
			abort();
	}
	cupti_strtab_clear(&cu, &p.strs);
	cupti_pc_clear(&cu, &p.pc);
	cupti_cubins_free(&cu);
	if (cu.strings_bytes)
		abort();
	store_free(s);
	return 0;
}
