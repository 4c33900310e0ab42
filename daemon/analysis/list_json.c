// SPDX-License-Identifier: MIT
/*
 * Prints the analysis table as analyze.list answers it. Run at build time:
 * gpuprofctl takes its analyze options from this (scripts/gendoc.py
 * analyses-header), so they come from the one table in analysis.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"

int main(void)
{
	cJSON *o = analysis_list_json();
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;
	int ok = s && puts(s) >= 0;

	free(s);
	cJSON_Delete(o);
	return ok ? 0 : 1;
}
