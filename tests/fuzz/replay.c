// SPDX-License-Identifier: MIT
/*
 * Replays fuzz inputs through a harness's entry function without libFuzzer,
 * so a plain gcc (ASan/UBSan) build checks every committed corpus and
 * regression file. Arguments: files or directories (one level, sorted).
 * A directory that does not exist is skipped (a harness may have no
 * regressions yet).
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (!buf)
		return -1;
	/* An exact-size copy so ASan sees reads past the input's end. */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, errors = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			errors += replay_file(argv[i]) < 0;
			files++;
			continue;
		}
		struct dirent **names;
		int n = scandir(argv[i], &names, NULL, alphasort);
		if (n < 0)
			continue;
		for (int k = 0; k < n; k++) {
			char path[4096];
			if (names[k]->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name);
				if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
					errors += replay_file(path) < 0;
					files++;
				}
			}
			free(names[k]);
		}
		free(names);
	}
	printf("replayed %d input(s), %d unreadable\n", files, errors);
	printf("%d passed, %d failed\n", errors ? 0 : 1, errors ? 1 : 0);
	return errors ? 1 : 0;
}
