// SPDX-License-Identifier: MIT
/*
 * The comm SVG of a comm result read from a JSON file, for the browser
 * suite (tests/browser): comm_svg() draws from the result alone, so a
 * hand-written result is enough.
 *   comm_svg_tool RESULT.json > comm.svg
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/comm/comm.h"
#include "analysis/comm/comm_int.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t n = 0, cap = 0, k;
	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			char *q = realloc(p, cap = 2 * cap + 4096 + 1);
			if (!q) {
				free(p);
				fclose(f);
				return NULL;
			}
			p = q;
		}
		k = fread(p + n, 1, cap - n - 1, f);
		n += k;
	} while (k);
	fclose(f);
	p[n] = 0;
	return p;
}

int main(int argc, char **argv)
{
	char *text, *svg = NULL;
	cJSON *r;
	size_t len = 0;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: comm_svg_tool RESULT.json\n");
		return 2;
	}
	if (!(text = slurp(argv[1]))) {
		fprintf(stderr, "comm_svg_tool: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	r = cJSON_Parse(text);
	free(text);
	rc = r ? comm_svg(r, &svg, &len) : -EINVAL;
	if (rc == 0)
		fwrite(svg, 1, len, stdout);
	else
		fprintf(stderr, "comm_svg_tool: %s\n", strerror(-rc));
	free(svg);
	cJSON_Delete(r);
	return rc ? 1 : 0;
}
