// SPDX-License-Identifier: MIT
/*
 * PC sampling with stall reasons (docs/collectors.md, "NVIDIA", "PC
 * sampling"), per CUDA context, through CUPTI's PC Sampling API:
 *
 *   CONTEXT_CREATED         Enable, read the device's stall reason names,
 *                           configure (continuous mode: kernels are never
 *                           serialized; start/stop control when duty-cycled)
 *   launch ENTER            duty cycle: open a window (Start) every
 *                           window * 100 / duty ms, close it (Stop, drain)
 *                           after window ms
 *
 * That is GPUPROF_CUPTI_PC_ENABLE=context. With =window (duty < 100) a
 * context is only remembered at CONTEXT_CREATED, and each window Enables
 * and configures it (no start/stop control; the stall reason names were
 * read at the device's first window) and closes with a drain and
 * Disable: between windows nothing of PC sampling is enabled, which
 * tells whether an enabled but stopped context is what slows kernels
 * down. Both modes handle the rest alike:
 *
 *   MODULE_LOADED/UNLOADING drain (CUPTI requires it around module loads in
 *                           continuous mode); keep the cubin (cubin.c)
 *   CONTEXT_DESTROY         drain, Disable
 *   sender tick, exit       drain every context (GetData never synchronizes
 *                           the device)
 *
 * A drain calls GetData with our own buffer until remainingNumPcs is 0 and
 * sums identical (device, cubin, function, pc, reason) keys into a bounded
 * table the sender thread empties into GPI_PC records. The configured
 * buffer is CUPTI's to fill, which it does at Disable (what GetData had
 * not handed out yet: the last samples of a context) and around module
 * loads: it is read then too.
 *
 * functionName: CUPTI may hand the same malloc'd string in many records,
 * in later GetData calls and in activity records ("should not be freed
 * until post processing of all the records is done", cupti_pcsampling.h),
 * and it is ours to free. So each distinct pointer is remembered once
 * (held[], bounded) and freed once, at exit, after every context's
 * sampling is disabled and the last activity buffer is read: never
 * per record. A pointer past the bound is left alone (a leak, counted).
 *
 * A full hardware buffer (CUPTI_ERROR_OUT_OF_MEMORY) wedges the context
 * until it is disabled, enabled and configured again, so that is what we
 * do. Any other error is counted with its code and the call that returned
 * it (GPI_PC_STATS); GetData, Start and Stop errors turn the context off
 * only after PC_ERR_STREAK in a row, and the feature is marked failed
 * when no context is left: an error that would silence sampling shows in
 * `gpuprofctl status`. One mutex covers all of it: the callbacks run on
 * the application's threads, drains on the sender's too.
 */
#include <cupti_pcsampling.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cuptilib.h"
#include "pcsamp.h"

#define MAX_CTX 64
#define MAX_REASONS 64
#define GET_PCS 512	/* PCs per GetData call */
#define AGG_SLOTS 8192	/* distinct keys between two sender ticks */
#define MAX_FNAMES 4096 /* distinct function names kept */
#define MAX_NAMES 4096	/* distinct CUPTI name pointers held (hash, <= 1/2 used) */
#define NAME_SLOTS 8192
#define PC_ERR_STREAK 8	  /* GetData/Start/Stop errors in a row before a context goes off */
#define DRAIN_ROUNDS 1024 /* GetData calls per drain at most */
#define TOGGLE_CHECK_NS 1000000ull

#define PC_FN(name) __typeof__(name) *name
static struct {
	PC_FN(cuptiPCSamplingEnable);
	PC_FN(cuptiPCSamplingDisable);
	PC_FN(cuptiPCSamplingStart);
	PC_FN(cuptiPCSamplingStop);
	PC_FN(cuptiPCSamplingSetConfigurationAttribute);
	PC_FN(cuptiPCSamplingGetConfigurationAttribute); /* optional: the period in force */
	PC_FN(cuptiPCSamplingGetNumStallReasons);
	PC_FN(cuptiPCSamplingGetStallReasons);
	PC_FN(cuptiPCSamplingGetData);
	PC_FN(cuptiGetCubinCrc);
	PC_FN(cuptiGetDeviceId);
} f;
#undef PC_FN

struct pcsamp_config pc_cfg;

/* a PC sampling buffer: the CUPTI struct plus the arrays it points to */
struct pcbuf {
	CUpti_PCSamplingData d;
	CUpti_PCSamplingPCData pcs[GET_PCS];
	CUpti_PCSamplingStallReason reasons[GET_PCS][MAX_REASONS];
};

struct pctx {
	CUcontext ctx;
	uint32_t device;
	int on, started;     /* Enabled (and configured); Started (context mode) */
	int off;	     /* turned off by errors: never enabled again */
	int ever;	     /* enabled at least once */
	int launched;	     /* its first launch was seen (the first window is timed from it) */
	unsigned err_streak; /* GetData, Start, Stop errors in a row */
	uint64_t close_at, open_at;
	size_t nreasons;
	uint32_t idx[MAX_REASONS];
	char names[MAX_REASONS][CUPTI_STALL_REASON_STRING_SIZE];
	uint64_t subset;      /* bit i: names[i] is a "_not_issued" twin */
	struct pcbuf *cfgbuf; /* handed to CUPTI with SAMPLING_DATA_BUFFER */
};

struct agg {
	uint64_t crc, pc;
	const char *fn; /* interned: fnames[] */
	uint32_t reason, device, corr;
	uint64_t samples; /* 0: slot free */
};

/* stall reason names per device, kept after its contexts go: the sender
 * sends them on every connection */
#define MAX_DEV 16
static struct {
	int have, sent;
	size_t n;
	uint64_t subset; /* as pctx's */
	uint32_t idx[MAX_REASONS];
	char names[MAX_REASONS][CUPTI_STALL_REASON_STRING_SIZE];
} devs[MAX_DEV];

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct pctx ctxs[MAX_CTX];
static struct pcbuf getbuf; /* our GetData buffer (under mu) */
static struct agg agg[AGG_SLOTS], out[AGG_SLOTS];
static size_t nagg;
static char *fnames[MAX_FNAMES];
static size_t nfnames;
/* CUPTI's functionName pointers, each held once until pcsamp_release_names(),
 * with the interned copy it reads as (NULL: past MAX_FNAMES) */
static struct {
	char *cupti;
	const char *fn;
} held[NAME_SLOTS];
static size_t nheld;
static _Atomic uint64_t next_check;
static _Atomic int active;
static int closing;	   /* at exit: no window opens any more (under mu) */
static _Atomic int resend; /* stall names must be sent again */
struct pcsamp_counters pc_n;

void pcsamp_config_read(struct pcsamp_config *c)
{
	const char *s;

	c->period = config_env_uint("GPUPROF_CUPTI_PC_PERIOD", 0, 5, 31);
	c->duty = config_env_uint("GPUPROF_CUPTI_PC_DUTY", PCSAMP_DUTY_DEFAULT, 1, 100);
	c->window_ms =
		config_env_uint("GPUPROF_CUPTI_PC_WINDOW_MS", PCSAMP_WINDOW_DEFAULT, 1, 60000);
	c->first_ms = config_env_uint("GPUPROF_CUPTI_PC_FIRST_MS", 0, 0, 86400000);
	c->cubin_mb = config_env_uint("GPUPROF_CUPTI_CUBIN_MB", PCSAMP_CUBIN_MB_DEFAULT, 0, 4096);
	s = getenv("GPUPROF_CUPTI_PC_ENABLE");
	/* unset or a typo: today's behaviour */
	c->enable = s && !strcmp(s, "window") ? PCSAMP_ENABLE_WINDOW : PCSAMP_ENABLE_CONTEXT;
}

/* sampling is enabled only while a window is open */
static bool windowed(void)
{
	return pc_cfg.duty < 100 && pc_cfg.enable == PCSAMP_ENABLE_WINDOW;
}

static int resolve(void)
{
	void *h = cl->handle;

#define R(n) (f.n = (__typeof__(f.n))dlsym(h, #n))
	R(cuptiGetCubinCrc);
	R(cuptiGetDeviceId);
	R(cuptiPCSamplingGetConfigurationAttribute);
	if (!R(cuptiPCSamplingEnable) || !R(cuptiPCSamplingDisable) || !R(cuptiPCSamplingStart) ||
	    !R(cuptiPCSamplingStop) || !R(cuptiPCSamplingSetConfigurationAttribute) ||
	    !R(cuptiPCSamplingGetNumStallReasons) || !R(cuptiPCSamplingGetStallReasons) ||
	    !R(cuptiPCSamplingGetData))
		return -ENOSYS;
#undef R
	return 0;
}

static void pcbuf_reset(struct pcbuf *b, size_t nreasons)
{
	memset(&b->d, 0, sizeof(b->d));
	b->d.size = sizeof(b->d);
	b->d.collectNumPcs = GET_PCS;
	b->d.pPcData = b->pcs;
	for (size_t i = 0; i < GET_PCS; i++) {
		memset(&b->pcs[i], 0, sizeof(b->pcs[i]));
		b->pcs[i].size = sizeof(b->pcs[i]);
		b->pcs[i].stallReasonCount = nreasons;
		b->pcs[i].stallReason = b->reasons[i];
	}
}

/* A copy of a function name that lives as long as the process (bounded:
 * a process with more distinct sampled functions loses the rest's
 * samples, counted). */
static const char *fname_intern(const char *s)
{
	for (size_t i = 0; i < nfnames; i++)
		if (!strcmp(fnames[i], s))
			return fnames[i];
	if (nfnames == MAX_FNAMES || !(fnames[nfnames] = strdup(s)))
		return NULL;
	return fnames[nfnames++];
}

/* The interned name of one of CUPTI's functionName pointers, which is
 * held (freed once, by pcsamp_release_names()); NULL when the name cannot be
 * interned. A pointer that does not fit the table is read now and left
 * to CUPTI's care: never freed by us (names_untracked). */
static const char *name_hold(char *p)
{
	size_t i = (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull % NAME_SLOTS);

	for (size_t n = 0; n < NAME_SLOTS; n++, i = (i + 1) % NAME_SLOTS) {
		if (held[i].cupti == p)
			return held[i].fn;
		if (!held[i].cupti)
			break;
	}
	if (nheld >= MAX_NAMES || held[i].cupti) {
		pc_n.names_untracked++;
		return fname_intern(p);
	}
	held[i].cupti = p;
	held[i].fn = fname_intern(p);
	nheld++;
	pc_n.names = nheld;
	return held[i].fn;
}

/* Frees each held pointer once; only once no context samples (nothing
 * can hand them out again) and the caller has read every activity
 * record (which may share them). */
void pcsamp_release_names(void)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < MAX_CTX; i++)
		if (ctxs[i].ctx && ctxs[i].on)
			goto out; /* still sampling: left to the process's end */
	for (size_t i = 0; i < NAME_SLOTS; i++) {
		free(held[i].cupti);
		held[i].cupti = NULL;
	}
	nheld = 0; /* pc_n.names stays: how many were held */
out:
	pthread_mutex_unlock(&mu);
}

static uint64_t key_hash(const struct agg *k)
{
	uint64_t h = k->crc * 0x9e3779b97f4a7c15ull;

	h ^= k->pc + (h << 6) + (h >> 2);
	h ^= (uint64_t)(uintptr_t)k->fn + (h << 6) + (h >> 2);
	h ^= ((uint64_t)k->reason << 32 | k->device) + (h << 6) + (h >> 2);
	return h ^ k->corr;
}

static void agg_add(const struct agg *k)
{
	size_t i = (size_t)(key_hash(k) % AGG_SLOTS);

	for (size_t n = 0; n < AGG_SLOTS; n++, i = (i + 1) % AGG_SLOTS) {
		struct agg *a = &agg[i];

		if (!a->samples) {
			if (nagg * 4 >= AGG_SLOTS * 3)
				break; /* kept below 3/4 full: probes stay short */
			*a = *k;
			nagg++;
			return;
		}
		if (a->crc == k->crc && a->pc == k->pc && a->fn == k->fn &&
		    a->reason == k->reason && a->device == k->device && a->corr == k->corr) {
			a->samples += k->samples;
			return;
		}
	}
	pc_n.dropped += k->samples;
}

static bool reason_is_subset(const struct pctx *c, uint32_t index);

static void take_pc(struct pctx *c, CUpti_PCSamplingPCData *p, uint64_t now)
{
	struct agg k = {.crc = p->cubinCrc,
			.pc = p->pcOffset,
			.device = c->device,
			.corr = p->correlationId};
	size_t n = p->stallReasonCount < c->nreasons ? p->stallReasonCount : c->nreasons;

	(void)now;
	pc_n.pcs++;
	k.fn = p->functionName ? name_hold(p->functionName) : NULL;
	for (size_t j = 0; j < n; j++) {
		k.reason = p->stallReason[j].pcSamplingStallReasonIndex;
		k.samples = p->stallReason[j].samples;
		if (!k.samples || reason_is_subset(c, k.reason))
			continue;
		pc_n.samples += k.samples;
		if (k.fn)
			agg_add(&k);
		else
			pc_n.dropped += k.samples;
	}
}

static int configure(struct pctx *c)
{
	CUpti_PCSamplingConfigurationInfo info[7];
	CUpti_PCSamplingConfigurationInfoParams p = {
		.size = CUpti_PCSamplingConfigurationInfoParamsSize,
		.ctx = c->ctx,
		.pPCSamplingConfigurationInfo = info,
	};
	size_t n = 0;

	memset(info, 0, sizeof(info));
	pcbuf_reset(c->cfgbuf, c->nreasons);
	info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
	info[n++].attributeData.samplingDataBufferData.samplingDataBuffer = &c->cfgbuf->d;
	/* PARSED is the default; said anyway, as NVIDIA's samples do */
	info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
	info[n++].attributeData.outputDataFormatData.outputDataFormat =
		CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
	info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
	info[n++].attributeData.collectionModeData.collectionMode =
		CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
	info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
	info[n].attributeData.stallReasonData.stallReasonCount = c->nreasons;
	info[n++].attributeData.stallReasonData.pStallReasonIndex = c->idx;
	info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_ENABLE_START_STOP_CONTROL;
	info[n++].attributeData.enableStartStopControlData.enableStartStopControl =
		pc_cfg.duty < 100 && !windowed();
	/* unset by default: CUPTI picks one from the SM count, and explicit
	 * periods were seen to break sampling on some GPUs */
	if (pc_cfg.period) {
		info[n].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
		info[n++].attributeData.samplingPeriodData.samplingPeriod = pc_cfg.period;
	}
	p.numAttributes = n;
	return f.cuptiPCSamplingSetConfigurationAttribute(&p);
}

/* The period a configured context samples at, as log2 of cycles, so the
 * stats say what an unset GPUPROF_CUPTI_PC_PERIOD left CUPTI to pick: read
 * back where CUPTI lets us, else what we asked for (0: unknown). Only
 * information, so a failed read is no error. */
static uint32_t period_in_force(struct pctx *c)
{
	CUpti_PCSamplingConfigurationInfo info;
	CUpti_PCSamplingConfigurationInfoParams p = {
		.size = CUpti_PCSamplingConfigurationInfoParamsSize,
		.ctx = c->ctx,
		.numAttributes = 1,
		.pPCSamplingConfigurationInfo = &info,
	};
	uint32_t v;

	if (!f.cuptiPCSamplingGetConfigurationAttribute)
		return pc_cfg.period;
	memset(&info, 0, sizeof(info));
	info.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
	if (f.cuptiPCSamplingGetConfigurationAttribute(&p) != CUPTI_SUCCESS ||
	    info.attributeStatus != CUPTI_SUCCESS)
		return pc_cfg.period;
	v = info.attributeData.samplingPeriodData.samplingPeriod;
	return v >= 5 && v <= 31 ? v : pc_cfg.period;
}

static int reasons(struct pctx *c)
{
	CUpti_PCSamplingGetNumStallReasonsParams np = {
		.size = CUpti_PCSamplingGetNumStallReasonsParamsSize,
		.ctx = c->ctx,
		.numStallReasons = &c->nreasons,
	};
	CUpti_PCSamplingGetStallReasonsParams rp = {
		.size = CUpti_PCSamplingGetStallReasonsParamsSize,
		.ctx = c->ctx,
	};
	char *names[MAX_REASONS];
	int r = f.cuptiPCSamplingGetNumStallReasons(&np);

	if (r)
		return r;
	if (c->nreasons > MAX_REASONS)
		c->nreasons = MAX_REASONS; /* the rest stay unnamed and unsampled */
	for (size_t i = 0; i < c->nreasons; i++)
		names[i] = c->names[i];
	rp.numStallReasons = c->nreasons;
	rp.stallReasonIndex = c->idx;
	rp.stallReasons = names;
	r = f.cuptiPCSamplingGetStallReasons(&rp);
	c->subset = 0;
	for (size_t i = 0; i < c->nreasons; i++) {
		size_t len;

		c->names[i][CUPTI_STALL_REASON_STRING_SIZE - 1] = 0;
		len = strlen(c->names[i]);
		if (len > 11 && !strcmp(c->names[i] + len - 11, "_not_issued"))
			c->subset |= 1ull << i;
	}
	return r;
}

/*
 * Whether a stall reason counts samples already counted: every reason X
 * has a twin "X_not_issued" that counts again those of X's samples whose
 * warp issued no instruction (Nsight Compute shows them as a separate
 * "not issued" metric). Summing both counted 75.7 M samples where CUPTI's
 * own totalSamples said 47.0 M on an H200; without the twins the sum is
 * CUPTI's total.
 */
static bool reason_is_subset(const struct pctx *c, uint32_t index)
{
	for (size_t i = 0; i < c->nreasons; i++)
		if (c->idx[i] == index)
			return (c->subset >> i) & 1;
	return false;
}

/* an error of CUPTI's: counted, with its code and the call, for status */
static void note_err(uint32_t call, int r)
{
	pc_n.errors++;
	pc_n.last_error = r;
	pc_n.last_call = call;
	atomic_store(&gpi.last_error, r);
}

static int enable(struct pctx *c)
{
	CUpti_PCSamplingEnableParams p = {.size = CUpti_PCSamplingEnableParamsSize, .ctx = c->ctx};
	int r = f.cuptiPCSamplingEnable(&p);

	if (!r)
		pc_n.enables++;
	return r;
}

/* the PCs of one filled buffer: taken, their names held */
static void take_buf(struct pctx *c, struct pcbuf *b, uint64_t now)
{
	size_t n = b->d.totalNumPcs < GET_PCS ? b->d.totalNumPcs : GET_PCS;

	pc_n.total_samples += b->d.totalSamples;
	pc_n.nonuser_samples += b->d.nonUsrKernelsTotalSamples;
	pc_n.dropped += b->d.droppedSamples;
	for (size_t i = 0; i < n; i++)
		take_pc(c, &b->pcs[i], now);
}

/* What CUPTI put in the configured buffer (at Disable, around module
 * loads), then the buffer ready for it again. */
static void take_cfgbuf(struct pctx *c, uint64_t now)
{
	size_t n = c->cfgbuf->d.totalNumPcs;

	if (n) {
		pc_n.cfgbuf_pcs += n < GET_PCS ? n : GET_PCS;
		take_buf(c, c->cfgbuf, now);
	}
	pcbuf_reset(c->cfgbuf, c->nreasons);
}

static void disable(struct pctx *c)
{
	CUpti_PCSamplingDisableParams p = {.size = CUpti_PCSamplingDisableParamsSize,
					   .ctx = c->ctx};
	int r = f.cuptiPCSamplingDisable(&p);

	if (r)
		note_err(GPI_PC_CALL_DISABLE, r);
	else
		take_cfgbuf(c, gpi_now());
	if (c->on)
		pc_n.contexts_on--;
	c->on = c->started = 0;
}

/* no context samples any more, nor will between windows: the feature
 * shows as failed */
static void failed_if_none(int err)
{
	for (size_t i = 0; i < MAX_CTX; i++)
		if (ctxs[i].ctx && !ctxs[i].off && (ctxs[i].on || windowed()))
			return;
	gpi_fail(GPI_F_PC, err);
}

/* an error on a context that samples: off after PC_ERR_STREAK in a row */
static void ctx_err(struct pctx *c, uint32_t call, int r)
{
	note_err(call, r);
	if (++c->err_streak < PC_ERR_STREAK)
		return;
	disable(c);
	c->off = 1;
	pc_n.contexts_off++;
	failed_if_none(r);
}

static int start_stop(struct pctx *c, int start)
{
	CUpti_PCSamplingStartParams p = {.size = CUpti_PCSamplingStartParamsSize, .ctx = c->ctx};
	int r;

	/* the Start and Stop params are the same struct */
	r = start ? f.cuptiPCSamplingStart(&p)
		  : f.cuptiPCSamplingStop((CUpti_PCSamplingStopParams *)&p);
	if (r) {
		ctx_err(c, start ? GPI_PC_CALL_START : GPI_PC_CALL_STOP, r);
	} else {
		c->started = start;
		c->err_streak = 0;
	}
	return r;
}

/* The hardware buffer overflowed: a context stays wedged until it is
 * disabled, enabled and configured again (stop and start do not do). */
static void recover(struct pctx *c)
{
	int was = c->started, r;
	uint32_t call = GPI_PC_CALL_ENABLE;

	pc_n.oom++;
	disable(c);
	r = enable(c);
	if (!r) {
		call = GPI_PC_CALL_CONFIGURE;
		r = configure(c);
	}
	if (r) {
		note_err(call, r);
		c->off = 1;
		pc_n.contexts_off++;
		if (call == GPI_PC_CALL_CONFIGURE) {
			CUpti_PCSamplingDisableParams d = {.size = CUpti_PCSamplingDisableParamsSize,
							   .ctx = c->ctx};

			f.cuptiPCSamplingDisable(&d);
		}
		failed_if_none(r);
		return;
	}
	c->on = 1;
	pc_n.contexts_on++;
	if (was && pc_cfg.duty < 100)
		start_stop(c, 1);
}

static void drain_ctx(struct pctx *c, uint64_t now)
{
	CUpti_PCSamplingGetDataParams p = {.size = CUpti_PCSamplingGetDataParamsSize,
					   .ctx = c->ctx,
					   .pcSamplingData = &getbuf.d};

	if (!c->on)
		return;
	pc_n.drains++;
	for (int round = 0; round < DRAIN_ROUNDS; round++) {
		uint64_t t0;
		int r;

		pcbuf_reset(&getbuf, c->nreasons);
		pc_n.getdata_calls++;
		t0 = gpi_now();
		r = f.cuptiPCSamplingGetData(&p);
		pc_n.getdata_ns += gpi_now() - t0;
		if (r == CUPTI_ERROR_OUT_OF_MEMORY || getbuf.d.hardwareBufferFull) {
			if (r == CUPTI_SUCCESS)
				take_buf(c, &getbuf, now); /* what it did hand out */
			else
				pc_n.dropped += getbuf.d.droppedSamples;
			recover(c);
			return;
		}
		if (r) {
			ctx_err(c, GPI_PC_CALL_GET_DATA, r);
			return;
		}
		c->err_streak = 0;
		take_buf(c, &getbuf, now);
		if (!getbuf.d.remainingNumPcs || !getbuf.d.totalNumPcs)
			return;
	}
}

static struct pctx *find(CUcontext ctx)
{
	for (size_t i = 0; i < MAX_CTX; i++)
		if (ctx && ctxs[i].ctx == ctx)
			return &ctxs[i];
	return NULL;
}

/* The device's stall reason names and indices into c: read from CUPTI
 * at the device's first enabled context, copied after that (the same
 * GPU has the same reasons). 0 or a CUptiResult. */
static int ctx_reasons(struct pctx *c)
{
	uint32_t dev = c->device;
	int r;

	if (dev < MAX_DEV && devs[dev].have) {
		c->nreasons = devs[dev].n;
		memcpy(c->idx, devs[dev].idx, sizeof(c->idx));
		memcpy(c->names, devs[dev].names, sizeof(c->names));
		c->subset = devs[dev].subset;
		return 0;
	}
	r = reasons(c);
	if (!r && dev < MAX_DEV) {
		devs[dev].have = 1;
		devs[dev].n = c->nreasons;
		devs[dev].subset = c->subset;
		memcpy(devs[dev].idx, c->idx, sizeof(c->idx));
		memcpy(devs[dev].names, c->names, sizeof(c->names));
	}
	return r;
}

/* Enable, stall reasons, configure: 0, or a CUptiResult (noted, with
 * the call that returned it in *call; the context is left disabled). */
static int ctx_enable(struct pctx *c, uint32_t *call)
{
	int r;

	*call = GPI_PC_CALL_ENABLE;
	pcbuf_reset(c->cfgbuf, 0); /* empty until configured: Disable reads it */
	r = enable(c);
	if (r) {
		note_err(*call, r);
		return r;
	}
	*call = GPI_PC_CALL_STALL_REASONS;
	r = ctx_reasons(c);
	if (!r) {
		*call = GPI_PC_CALL_CONFIGURE;
		r = configure(c);
	}
	if (r) {
		note_err(*call, r);
		disable(c);
		return r;
	}
	c->on = 1;
	c->started = 0;
	pc_n.contexts_on++;
	if (!c->ever) {
		c->ever = 1;
		pc_n.contexts_ever++;
		pc_n.period = period_in_force(c);
	}
	return 0;
}

static void ctx_created(CUcontext ctx)
{
	struct pctx *c = NULL;
	uint32_t dev = 0, call;
	int r;

	for (size_t i = 0; i < MAX_CTX && !c; i++)
		if (!ctxs[i].ctx)
			c = &ctxs[i];
	if (!c) {
		pc_n.contexts_refused++;
		return;
	}
	if (!c->cfgbuf && !(c->cfgbuf = malloc(sizeof(*c->cfgbuf)))) {
		pc_n.contexts_refused++;
		return;
	}
	if (f.cuptiGetDeviceId && f.cuptiGetDeviceId(ctx, &dev))
		dev = 0;
	c->ctx = ctx;
	c->device = dev;
	c->on = c->started = c->off = c->ever = c->launched = 0;
	c->err_streak = 0;
	c->open_at = 0;
	c->nreasons = 0;
	pcbuf_reset(c->cfgbuf, 0);
	if (windowed())
		return; /* enabled by its windows */
	r = ctx_enable(c, &call);
	if (r) {
		/* this GPU or driver does not let us: none will */
		gpi_fail(GPI_F_PC, r);
		c->ctx = NULL;
	}
}

static void ctx_destroy(CUcontext ctx, uint64_t now)
{
	struct pctx *c = find(ctx);

	if (!c)
		return;
	if (c->on) {
		if (c->started)
			start_stop(c, 0);
		drain_ctx(c, now);
		disable(c);
	}
	c->ctx = NULL;
}

void pcsamp_resource(uint32_t cbid, const void *data)
{
	const CUpti_ResourceData *rd = data;
	uint64_t now = gpi_now();
	struct pctx *c;

	if (!rd || !atomic_load(&active))
		return;
	pthread_mutex_lock(&mu);
	switch (cbid) {
	case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
		if (!(atomic_load(&gpi.failed) & GPI_F_PC))
			ctx_created(rd->context);
		break;
	case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
		ctx_destroy(rd->context, now);
		break;
	case CUPTI_CBID_RESOURCE_MODULE_LOADED:
	case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
		/* before the module changes: the samples so far still name
		 * it; CUPTI may also have flushed into the configured buffer */
		if ((c = find(rd->context)) && c->on) {
			drain_ctx(c, now);
			if (c->on && c->cfgbuf->d.totalNumPcs)
				take_cfgbuf(c, now);
		}
		if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED && rd->resourceDescriptor) {
			const CUpti_ModuleResourceData *m = rd->resourceDescriptor;

			cubin_keep(m->pCubin, m->cubinSize);
		}
		break;
	}
	pthread_mutex_unlock(&mu);
}

/* the time from one window's close to the next one's opening */
static uint64_t gap_ns(void)
{
	return (uint64_t)pc_cfg.window_ms * 1000000u * (100 - pc_cfg.duty) / pc_cfg.duty;
}

/* context mode: Start and Stop an enabled context */
static void tick_started(struct pctx *c, uint64_t now)
{
	if (!c->started && now >= c->open_at) {
		if (!start_stop(c, 1)) {
			c->close_at = now + (uint64_t)pc_cfg.window_ms * 1000000u;
			pc_n.windows++;
		}
	} else if (c->started && now >= c->close_at) {
		if (!start_stop(c, 0))
			drain_ctx(c, now);
		/* closed for window * (100 / duty - 1) */
		c->open_at = now + gap_ns();
	}
}

/* window mode: Enable at the opening, drain and Disable at the close */
static void tick_enabled(struct pctx *c, uint64_t now)
{
	uint32_t call;
	int r;

	if (!c->on && now >= c->open_at) {
		r = ctx_enable(c, &call);
		if (!r) {
			c->close_at = now + (uint64_t)pc_cfg.window_ms * 1000000u;
			c->err_streak = 0;
			pc_n.windows++;
			return;
		}
		c->open_at = now + gap_ns(); /* tried again at the next window */
		/* never enabled: this GPU or driver does not let us (as at
		 * CONTEXT_CREATED in context mode); else off after a streak */
		if (!c->ever || ++c->err_streak >= PC_ERR_STREAK) {
			c->off = 1;
			if (c->ever)
				pc_n.contexts_off++;
			failed_if_none(r);
		}
	} else if (c->on && now >= c->close_at) {
		drain_ctx(c, now);
		if (c->on)
			disable(c); /* the last samples come in the configured buffer */
		c->open_at = now + gap_ns();
	}
}

void pcsamp_launch(void *ctx)
{
	uint64_t now;
	struct pctx *c;

	if (pc_cfg.duty >= 100 || !atomic_load_explicit(&active, memory_order_relaxed))
		return;
	now = gpi_now();
	if (now < atomic_load_explicit(&next_check, memory_order_relaxed))
		return; /* the common case: no lock */
	atomic_store_explicit(&next_check, now + TOGGLE_CHECK_NS, memory_order_relaxed);
	pthread_mutex_lock(&mu);
	c = find(ctx);
	if (c && !c->launched) {
		c->launched = 1;
		c->open_at = now + (uint64_t)pc_cfg.first_ms * 1000000u;
	}
	if (c && !c->off && !closing) {
		if (windowed())
			tick_enabled(c, now);
		else if (c->on)
			tick_started(c, now);
	}
	/* what the application's launching thread paid here, the wait for
	 * a drain of the sender's included */
	pc_n.launch_ns += gpi_now() - now;
	pthread_mutex_unlock(&mu);
}

void pcsamp_drain_all(void)
{
	uint64_t now = gpi_now();

	if (!atomic_load(&active))
		return;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < MAX_CTX; i++)
		if (ctxs[i].ctx)
			drain_ctx(&ctxs[i], now);
	pthread_mutex_unlock(&mu);
}

void pcsamp_finish(void)
{
	uint64_t now = gpi_now();

	if (!atomic_load(&active))
		return;
	pthread_mutex_lock(&mu);
	closing = 1;
	for (size_t i = 0; i < MAX_CTX; i++) {
		struct pctx *c = &ctxs[i];

		/* Disable hands over what GetData had not yet (into the
		 * configured buffer): a process that never destroys its
		 * context loses no samples of its last moments */
		if (c->ctx && c->on) {
			if (c->started)
				start_stop(c, 0);
			drain_ctx(c, now);
			if (c->on)
				disable(c);
		}
	}
	pthread_mutex_unlock(&mu);
}

int pcsamp_crc(const void *cubin, size_t size, uint64_t *crc)
{
	CUpti_GetCubinCrcParams p = {.size = CUpti_GetCubinCrcParamsSize,
				     .cubinSize = size,
				     .cubin = cubin};

	if (!f.cuptiGetCubinCrc || f.cuptiGetCubinCrc(&p))
		return -EIO;
	*crc = p.cubinCrc;
	return 0;
}

int pcsamp_setup(CUpti_SubscriberHandle sub)
{
	static const CUpti_CallbackId ids[] = {
		CUPTI_CBID_RESOURCE_CONTEXT_CREATED,
		CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
		CUPTI_CBID_RESOURCE_MODULE_LOADED,
		CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING,
	};
	int r;

	pcsamp_config_read(&pc_cfg);
	if (resolve())
		return CUPTI_ERROR_NOT_SUPPORTED;
	cubin_init((size_t)pc_cfg.cubin_mb << 20);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		r = cl->cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, ids[i]);
		if (r)
			return r;
	}
	/* the duty cycle turns on launch ENTER: the launch callbacks must run
	 * even when API records were not asked for (they are then not sent) */
	if (pc_cfg.duty < 100 && (r = callbacks_enable(sub)))
		return r;
	atomic_store(&active, 1);
	return 0;
}

void pcsamp_stop(void)
{
	/* stepping aside for another CUPTI user: the last samples, then
	 * every context's sampling off, before the subscription goes */
	pcsamp_finish();
	pthread_mutex_lock(&mu);
	if (atomic_exchange(&active, 0))
		for (size_t i = 0; i < MAX_CTX; i++)
			if (ctxs[i].ctx && ctxs[i].on)
				disable(&ctxs[i]);
	pthread_mutex_unlock(&mu);
}

void pcsamp_atfork_child(void)
{
	/* CUPTI does not follow a fork: the child samples nothing, and the
	 * lock may have been held by a thread that is not there */
	atomic_store(&active, 0);
	pthread_mutex_init(&mu, NULL);
}

/* ------------------------------------------------------------ sender side */

/* Sender thread, also from inside emit() (a dropped batch): no lock of
 * ours is taken here, the next pcsamp_emit() acts on it. */
void pcsamp_forget_sent(void)
{
	atomic_store(&resend, 1);
	cubin_forget_sent();
}

/* stall names of devices not yet named on this connection; under mu */
static void emit_names(void)
{
	for (uint32_t d = 0; d < MAX_DEV; d++) {
		if (!devs[d].have || devs[d].sent)
			continue;
		for (size_t j = 0; j < devs[d].n; j++) {
			uint32_t id = emit_string(devs[d].names[j]);
			struct gpi_stall_name *s = emit(GPI_STALL_NAME, sizeof(*s));

			if (!s)
				return;
			s->device = d;
			s->index = devs[d].idx[j];
			s->name = id;
		}
		devs[d].sent = 1;
	}
}

void pcsamp_emit_stats(void)
{
	struct gpi_pc_stats *s;

	if (!(gpi.cfg.features & GPI_F_PC) || !(s = emit(GPI_PC_STATS, sizeof(*s))))
		return;
	/* read without the lock: counters, each word whole on x86-64 and
	 * arm64, at worst one drain old */
	s->samples = pc_n.samples;
	s->sent = pc_n.sent;
	s->dropped = pc_n.dropped;
	s->oom = pc_n.oom;
	s->drains = pc_n.drains;
	s->windows = pc_n.windows;
	s->contexts_refused = pc_n.contexts_refused;
	s->getdata_calls = pc_n.getdata_calls;
	s->pcs = pc_n.pcs;
	s->total_samples = pc_n.total_samples;
	s->nonuser_samples = pc_n.nonuser_samples;
	s->errors = pc_n.errors;
	s->cfgbuf_pcs = pc_n.cfgbuf_pcs;
	s->names = pc_n.names;
	s->names_untracked = pc_n.names_untracked;
	s->contexts_on = pc_n.contexts_on;
	s->contexts_ever = pc_n.contexts_ever;
	s->contexts_off = pc_n.contexts_off;
	s->last_call = pc_n.last_call;
	s->last_error = pc_n.last_error;
	s->period = pc_n.period;
	s->launch_ns = pc_n.launch_ns;
	s->getdata_ns = pc_n.getdata_ns;
	s->enables = pc_n.enables;
	s->enable_mode = windowed();
	cubin_stats(&s->cubins, &s->cubins_refused, &s->cubin_bytes);
}

void pcsamp_emit(void)
{
	uint64_t now = gpi_now();
	size_t n = 0;

	if (!atomic_load(&active))
		return;
	pthread_mutex_lock(&mu);
	if (atomic_exchange(&resend, 0))
		for (size_t i = 0; i < MAX_DEV; i++)
			devs[i].sent = 0;
	emit_names();
	for (size_t i = 0; i < AGG_SLOTS && nagg; i++) {
		if (agg[i].samples) {
			out[n++] = agg[i];
			agg[i].samples = 0;
			nagg--;
		}
	}
	pthread_mutex_unlock(&mu);
	/* the records outside mu: the app's launches may wait on it */
	for (size_t i = 0; i < n; i++) {
		uint32_t fn = emit_string(out[i].fn);
		struct gpi_pc *p = emit(GPI_PC, sizeof(*p));

		if (!p)
			break;
		p->time = now;
		p->cubin_crc = out[i].crc;
		p->pc = out[i].pc;
		p->function = fn;
		p->reason = out[i].reason;
		p->samples = out[i].samples > UINT32_MAX ? UINT32_MAX : (uint32_t)out[i].samples;
		p->device = out[i].device;
		p->corr = out[i].corr;
		pc_n.sent += out[i].samples;
	}
	cubin_emit();
}
