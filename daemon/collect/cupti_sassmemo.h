/* SPDX-License-Identifier: MIT */
/*
 * SASS texts kept from one capture to the next of the same viewer (a
 * continuous profile's windows, all cut for no owner), so that nvdisasm
 * runs on a cubin once rather than once per window (cupti_sassmemo.c).
 * (cubin CRC, function, offset) -> text, or none; a none is asked again
 * after CUPTI_SASS_MEMO_RETRY windows (the cubin may arrive later).
 * Bounded as one capture's section is (capture/capsass.h: keys, bytes):
 * emptied when full. One thread at a time.
 */
#ifndef GPUPROF_COLLECT_CUPTI_SASSMEMO_H
#define GPUPROF_COLLECT_CUPTI_SASSMEMO_H

#include <stdbool.h>
#include <stdint.h>

#define CUPTI_SASS_MEMO_RETRY 16

struct cupti_sass_memo;

/* 0 or -ENOMEM. */
int cupti_sass_memo_new(struct cupti_sass_memo **ret);
/* NULL is a no-op. */
void cupti_sass_memo_free(struct cupti_sass_memo *m);
/* A new window begins. */
void cupti_sass_memo_next(struct cupti_sass_memo *m);
/* Whether the key is known: *text its text, or NULL for none (valid
 * until the next add). */
bool cupti_sass_memo_find(const struct cupti_sass_memo *m, uint64_t crc, const char *name,
			  uint32_t pc, const char **text);
/* Remember the key's text (NULL: none). 0 or -ENOMEM. */
int cupti_sass_memo_add(struct cupti_sass_memo *m, uint64_t crc, const char *name, uint32_t pc,
			const char *text);

#endif
