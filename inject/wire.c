// SPDX-License-Identifier: MIT
/* Encoding one batch (cupti_abi.h): a gpi_hdr, then 8-aligned records. */
#include <errno.h>
#include <string.h>

#include "inject.h"

void wire_reset(struct wire *w, uint32_t seq)
{
	struct gpi_hdr *h = (struct gpi_hdr *)w->buf;

	memset(h, 0, sizeof(*h));
	h->magic = GPI_MAGIC;
	h->version = GPI_VERSION;
	h->seq = seq;
	w->used = sizeof(*h);
	w->nrec = 0;
}

void *wire_add(struct wire *w, uint16_t type, size_t len)
{
	struct gpi_rec *r;

	len = (len + 7) & ~(size_t)7;
	if (len > UINT16_MAX || w->used + len > GPI_MSG_MAX || w->nrec == UINT16_MAX)
		return NULL;
	r = (struct gpi_rec *)(w->buf + w->used);
	memset(r, 0, len);
	r->type = type;
	r->len = (uint16_t)len;
	w->used += len;
	w->nrec++;
	((struct gpi_hdr *)w->buf)->nrec = w->nrec;
	return r;
}

int wire_add_string(struct wire *w, uint32_t id, const char *text, uint32_t len)
{
	struct gpi_string *s;

	if (len > GPI_STRING_MAX)
		len = GPI_STRING_MAX;
	s = wire_add(w, GPI_STRING, sizeof(*s) + len);
	if (!s)
		return -ENOSPC;
	s->id = id;
	s->len = len;
	memcpy(s->text, text, len);
	return 0;
}
