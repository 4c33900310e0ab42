// SPDX-License-Identifier: MIT
#include "hooks.h"

#include "gpd.h"

void hooks_init(struct gpd *g)
{
	(void)g;
}

void hooks_finish(struct gpd *g)
{
	(void)g;
}
