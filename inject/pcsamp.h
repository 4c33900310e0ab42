/* SPDX-License-Identifier: MIT */
/* PC sampling (pcsamp.c) and the cubins it points into (cubin.c). */
#ifndef GPUPROF_INJECT_PCSAMP_H
#define GPUPROF_INJECT_PCSAMP_H

#include <stddef.h>
#include <stdint.h>

#include <cupti.h>

/* Off by default (not in GPUPROF_CUPTI_FEATURES' default); once asked
 * for, sampling is on PCSAMP_DUTY_DEFAULT % of the time in windows of
 * PCSAMP_WINDOW_DEFAULT ms (docs/collectors.md, "PC sampling"). */
#define PCSAMP_DUTY_DEFAULT 10u
#define PCSAMP_WINDOW_DEFAULT 100u
#define PCSAMP_CUBIN_MB_DEFAULT 64u

/* When a duty-cycled context has CUPTI's PC sampling enabled
 * (GPUPROF_CUPTI_PC_ENABLE; docs/collectors.md, "PC sampling"). */
enum pcsamp_enable {
	PCSAMP_ENABLE_CONTEXT = 0, /* from its creation on; windows Start and Stop */
	PCSAMP_ENABLE_WINDOW,	   /* only while a window is open: Enable, Disable */
};

struct pcsamp_config {
	unsigned period;    /* GPUPROF_CUPTI_PC_PERIOD: log2 cycles 5..31, 0 = CUPTI's */
	unsigned duty;	    /* GPUPROF_CUPTI_PC_DUTY: % of the time sampled, 100 = always */
	unsigned window_ms; /* GPUPROF_CUPTI_PC_WINDOW_MS: one sampling window */
	unsigned first_ms;  /* GPUPROF_CUPTI_PC_FIRST_MS: first window this long after
			     * the context's first launch */
	unsigned cubin_mb;  /* GPUPROF_CUPTI_CUBIN_MB: cubin bytes kept, 0 = none */
	int enable;	    /* GPUPROF_CUPTI_PC_ENABLE: enum pcsamp_enable */
};
extern struct pcsamp_config pc_cfg;
void pcsamp_config_read(struct pcsamp_config *c);

/* Counters (under pcsamp's lock; read racily for reports). */
struct pcsamp_counters {
	uint64_t samples;	   /* read from CUPTI */
	uint64_t sent;		   /* in GPI_PC records */
	uint64_t dropped;	   /* CUPTI's droppedSamples + our table full */
	uint64_t oom;		   /* hardware buffer full: context re-enabled */
	uint64_t drains, windows;  /* GetData rounds started; duty windows opened */
	uint64_t contexts_refused; /* more contexts than we track */
	uint64_t getdata_calls;	   /* cuptiPCSamplingGetData calls */
	uint64_t pcs;		   /* PC records read (GetData and the configured buffer) */
	uint64_t total_samples;	   /* CUPTI's totalSamples summed: user, non-user, dropped */
	uint64_t nonuser_samples;  /* nonUsrKernelsTotalSamples summed */
	uint64_t errors;	   /* CUPTI errors of the PC calls */
	uint64_t cfgbuf_pcs;	   /* PC records found in the configured buffer */
	uint64_t names;		   /* distinct functionName pointers held */
	uint64_t names_untracked;  /* handed out past MAX_NAMES: never freed by us */
	uint32_t contexts_on, contexts_ever, contexts_off; /* off: by errors */
	uint32_t period;		/* log2 cycles of the last context configured, 0 unknown */
	uint64_t launch_ns, getdata_ns; /* gpi_pc_stats' */
	uint32_t enables;
	uint32_t last_call; /* enum gpi_pc_call of the last error */
	int32_t last_error; /* its CUptiResult */
};
extern struct pcsamp_counters pc_n;

/* cupti.c: resolves the PC sampling functions and enables the resource
 * callbacks; 0 or a CUptiResult (the feature is then off). */
int pcsamp_setup(CUpti_SubscriberHandle sub);
/* callbacks.c: a RESOURCE domain callback; a launch ENTER (duty cycle) */
void pcsamp_resource(uint32_t cbid, const void *data);
void pcsamp_launch(void *ctx);
/* sender.c: drain every context (periodic, continuous mode) and emit
 * what was drained; a new connection or a dropped batch */
void pcsamp_drain_all(void);
void pcsamp_emit(void);
void pcsamp_forget_sent(void);
/* sender.c, beside gpi_stats: a GPI_PC_STATS when pc was asked for */
void pcsamp_emit_stats(void);
/* cupti.c at exit: close windows, drain, disable; in a forked child: off */
void pcsamp_finish(void);
/* cupti.c at exit, after the last activity buffer was read: CUPTI's
 * function names freed, once each (not while a context still samples) */
void pcsamp_release_names(void);
/* cupti.c, stepping aside for another CUPTI user: drain, then off */
void pcsamp_stop(void);
void pcsamp_atfork_child(void);
/* cuptiGetCubinCrc: 0 or -EIO */
int pcsamp_crc(const void *cubin, size_t size, uint64_t *crc);

/* cubin.c: at most max bytes of distinct cubins kept (copied at module
 * load, deduplicated by CRC) and sent in GPI_CUBIN chunks */
void cubin_init(size_t max);
void cubin_keep(const void *cubin, size_t size);
void cubin_emit(void);
void cubin_forget_sent(void);
struct cubin_counters {
	uint64_t kept, dup, refused; /* refused: over the byte cap or no CRC */
	uint64_t bytes;
};
extern struct cubin_counters cubin_n;
void cubin_stats(uint64_t *kept, uint64_t *refused, uint64_t *bytes);

#endif
