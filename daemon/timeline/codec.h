/* SPDX-License-Identifier: MIT */
/* Wire constants of the timeline encoding (encode.c, decode.c). */
#ifndef GPUPROF_TIMELINE_CODEC_H
#define GPUPROF_TIMELINE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define TL_ENC_MAGIC "GPTL"
/* Wire sizes, used by decode to bound counts by the bytes left. */
#define TL_ENC_EVENT 108
#define TL_ENC_ARGS 124
#define TL_ENC_FLOW 44
#define TL_ENC_META 24
#define TL_ENC_DEVICE 48

#endif /* GPUPROF_TIMELINE_CODEC_H */
