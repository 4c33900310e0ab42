// SPDX-License-Identifier: MIT
#include "membudget.h"

#include <errno.h>

int membudget_take(struct membudget *b, uint64_t bytes)
{
	uint64_t cur = atomic_load(&b->used);

	do {
		if (b->max && (cur + bytes < cur || cur + bytes > b->max))
			return -ENOSPC;
	} while (!atomic_compare_exchange_weak(&b->used, &cur, cur + bytes));
	return 0;
}

void membudget_give(struct membudget *b, uint64_t bytes)
{
	atomic_fetch_sub(&b->used, bytes);
}
