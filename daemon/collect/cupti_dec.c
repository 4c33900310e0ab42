// SPDX-License-Identifier: MIT
/*
 * One message from a CUPTI library peer into store records (store/store.h,
 * "Records from the CUPTI library"). Two passes: the first checks the whole
 * message's framing, so a malformed message adds nothing; the second turns
 * records into store records, dropping (and counting) the ones that break a
 * bound or carry impossible times.
 *
 * What is malformed (the connection is closed):
 *  - a header with another magic or version, a message shorter than it;
 *  - records that do not tile the message exactly: a len below 8, not a
 *    multiple of 8 or past the end, more or fewer records than nrec;
 *  - a record shorter than its type's struct; a string whose id is 0 or
 *    >= GPI_STRING_IDS, or whose text is longer than GPI_STRING_MAX or than
 *    its record; a name id >= GPI_STRING_IDS;
 *  - a first message that does not start with a GPI_HELLO of version
 *    GPI_VERSION, or a GPI_HELLO anywhere else;
 *  - a cubin chunk longer than GPI_CUBIN_CHUNK or its record, of a cubin of
 *    size 0, or reaching past its cubin's size.
 * A name id below GPI_STRING_IDS that this connection never defined is not
 * malformed (the batch that defined it may be one the library dropped): the
 * record is kept without that name and counted as "undefined".
 */
#include "cupti_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "store/store.h"

/* A record may end this far past now (clocks read on different CPUs, a
 * library converting timestamps), and start this long before it (a batch
 * CUPTI held, a long NVTX range). Beyond either it is not a time of now. */
#define CUPTI_FUTURE_NS (5ull * 1000000000ull)
#define CUPTI_PAST_NS (3600ull * 1000000000ull)
/* What one defined string costs besides its text: the entry, the store's
 * own entry. */
#define CUPTI_STR_OVERHEAD 64u

static const size_t min_len[] = {
	[GPI_HELLO] = sizeof(struct gpi_hello),
	[GPI_STRING] = sizeof(struct gpi_string),
	[GPI_KERNEL] = sizeof(struct gpi_kernel),
	[GPI_MEMCPY] = sizeof(struct gpi_memcpy),
	[GPI_MEMSET] = sizeof(struct gpi_memset),
	[GPI_SYNC] = sizeof(struct gpi_sync),
	[GPI_GRAPH] = sizeof(struct gpi_graph),
	[GPI_API] = sizeof(struct gpi_api),
	[GPI_MARKER] = sizeof(struct gpi_marker),
	[GPI_STATS] = GPI_STATS_MIN, /* longer since: read as far as it goes */
	[GPI_STALL_NAME] = sizeof(struct gpi_stall_name),
	[GPI_PC] = sizeof(struct gpi_pc),
	[GPI_CUBIN] = sizeof(struct gpi_cubin),
	[GPI_PC_STATS] = GPI_PC_STATS_MIN, /* longer since: read as far as it goes */
	[GPI_CUDA_EVENT] = sizeof(struct gpi_cuda_event),
	[GPI_WINDOW] = sizeof(struct gpi_window),
};

static const char *const state_names[CUPTI_PEER_STATE_MAX] = {
	[CUPTI_PEER_HELLO] = "hello",
	[CUPTI_PEER_ACTIVE] = "active",
	[CUPTI_PEER_CONFLICT] = "conflict",
	[CUPTI_PEER_DISABLED] = "disabled",
};

const char *cupti_peer_state_name(enum cupti_peer_state st)
{
	return st < CUPTI_PEER_STATE_MAX ? state_names[st] : "?";
}

static int malformed(struct cupti_peer *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int malformed(struct cupti_peer *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

static bool known(uint16_t type)
{
	return type < sizeof(min_len) / sizeof(min_len[0]) && min_len[type];
}

/* The name ids a record of a known type carries, for the range check. */
static void name_ids(uint16_t type, const uint8_t *rec, uint32_t ids[2])
{
	ids[0] = ids[1] = 0;
	switch (type) {
	case GPI_KERNEL:
		memcpy(&ids[0], rec + offsetof(struct gpi_kernel, name), 4);
		break;
	case GPI_API:
		memcpy(&ids[0], rec + offsetof(struct gpi_api, name), 4);
		break;
	case GPI_MARKER:
		memcpy(&ids[0], rec + offsetof(struct gpi_marker, name), 4);
		memcpy(&ids[1], rec + offsetof(struct gpi_marker, domain), 4);
		break;
	case GPI_STATS:
		memcpy(&ids[0], rec + offsetof(struct gpi_stats, conflict), 4);
		break;
	case GPI_STALL_NAME:
		memcpy(&ids[0], rec + offsetof(struct gpi_stall_name, name), 4);
		break;
	case GPI_PC:
		memcpy(&ids[0], rec + offsetof(struct gpi_pc, function), 4);
		break;
	}
}

static int check_record(struct cupti_peer *p, uint16_t type, const uint8_t *rec, size_t len,
			size_t i, bool first)
{
	uint32_t ids[2];

	if (type == GPI_HELLO && !first)
		return malformed(p, "record %zu: a hello after the first record", i);
	if (first && type != GPI_HELLO)
		return malformed(p, "first record is type %u, not a hello", type);
	if (!known(type))
		return 0;
	if (len < min_len[type])
		return malformed(p, "record %zu: type %u in %zu bytes (needs %zu)", i, type, len,
				 min_len[type]);
	if (type == GPI_HELLO) {
		struct gpi_hello h;

		memcpy(&h, rec, sizeof(h));
		if (h.lib_version != GPI_VERSION)
			return malformed(p, "library version %u (this daemon speaks %u)",
					 h.lib_version, GPI_VERSION);
	}
	if (type == GPI_STRING) {
		struct gpi_string s;

		memcpy(&s, rec, sizeof(s));
		if (s.id == 0 || s.id >= GPI_STRING_IDS)
			return malformed(p, "record %zu: string id %u", i, s.id);
		if (s.len > GPI_STRING_MAX || s.len > len - sizeof(s))
			return malformed(p, "record %zu: string of %u bytes in a %zu-byte record",
					 i, s.len, len);
	}
	if (type == GPI_CUBIN) {
		struct gpi_cubin c;

		memcpy(&c, rec, sizeof(c));
		if (c.len > GPI_CUBIN_CHUNK || c.len > len - sizeof(c) || !c.size ||
		    c.offset > c.size || c.len > c.size - c.offset || (!c.len && c.offset < c.size))
			return malformed(p, "record %zu: cubin chunk %u+%u of %u in %zu bytes", i,
					 c.offset, c.len, c.size, len);
	}
	name_ids(type, rec, ids);
	if (ids[0] >= GPI_STRING_IDS || ids[1] >= GPI_STRING_IDS)
		return malformed(p, "record %zu: string id %u", i,
				 ids[0] >= GPI_STRING_IDS ? ids[0] : ids[1]);
	return 0;
}

/* Pass one: the framing of the whole message. */
static int check_message(struct cupti_peer *p, const uint8_t *msg, size_t len)
{
	struct gpi_hdr h;
	size_t off = sizeof(h), i;

	if (len < sizeof(h))
		return malformed(p, "message of %zu bytes", len);
	memcpy(&h, msg, sizeof(h));
	if (h.magic != GPI_MAGIC)
		return malformed(p, "bad magic 0x%08x", h.magic);
	if (h.version != GPI_VERSION)
		return malformed(p, "wire version %u", h.version);
	for (i = 0; i < h.nrec; i++) {
		struct gpi_rec r;
		int ret;

		if (len - off < sizeof(r))
			return malformed(p, "record %zu of %u past the end", i, h.nrec);
		memcpy(&r, msg + off, sizeof(r));
		if (r.len < sizeof(r) || r.len % 8 || r.len > len - off)
			return malformed(p, "record %zu: length %u at byte %zu of %zu", i, r.len,
					 off, len);
		ret = check_record(p, r.type, msg + off, r.len, i,
				   p->state == CUPTI_PEER_HELLO && i == 0);
		if (ret < 0)
			return ret;
		off += r.len;
	}
	if (p->state == CUPTI_PEER_HELLO && h.nrec == 0)
		return malformed(p, "first message holds no hello");
	if (off != len)
		return malformed(p, "%zu bytes after record %u", len - off, h.nrec);
	return 0;
}

static void drop(struct cupti_peer *p, enum cupti_drop why)
{
	p->drops[why]++;
	p->cu->tot.drops[why]++;
	p->cu->col->drops++;
}

#define CUPTI_PAGE_BYTES (CUPTI_STR_PAGE * sizeof(struct cupti_str))

/* Can t take cost more bytes, within the peer's and everyone's bound? */
static bool str_room(const struct cupti *cu, const struct cupti_strtab *t, size_t cost)
{
	return t->bytes + cost <= cu->lim.peer_strings &&
	       cu->strings_bytes + cost <= cu->lim.strings_total;
}

/* id's entry; with alloc, its page is made (and charged like names, so ids
 * spread over every page cost what they hold) */
static struct cupti_str *str_slot(struct cupti *cu, struct cupti_strtab *t, uint32_t id, bool alloc)
{
	struct cupti_str **pg = &t->pages[id / CUPTI_STR_PAGE];

	if (!*pg && alloc && str_room(cu, t, CUPTI_PAGE_BYTES)) {
		*pg = calloc(CUPTI_STR_PAGE, sizeof(**pg));
		if (*pg) {
			t->bytes += CUPTI_PAGE_BYTES;
			cu->strings_bytes += CUPTI_PAGE_BYTES;
		}
	}
	return *pg ? &(*pg)[id % CUPTI_STR_PAGE] : NULL;
}

static void str_release(struct cupti *cu, struct cupti_strtab *t, struct cupti_str *e)
{
	if (!e->len)
		return;
	if (e->sid)
		store_str_unref(cu->store, e->sid);
	t->bytes -= e->len;
	cu->strings_bytes -= e->len;
	t->count--;
	*e = (struct cupti_str){0};
}

void cupti_strtab_clear(struct cupti *cu, struct cupti_strtab *t)
{
	for (size_t pg = 0; pg < GPI_STRING_IDS / CUPTI_STR_PAGE; pg++) {
		if (!t->pages[pg])
			continue;
		for (size_t k = 0; k < CUPTI_STR_PAGE; k++)
			str_release(cu, t, &t->pages[pg][k]);
		free(t->pages[pg]);
		t->pages[pg] = NULL;
		t->bytes -= CUPTI_PAGE_BYTES;
		cu->strings_bytes -= CUPTI_PAGE_BYTES;
	}
}

/* A definition replaces the id's text; when it cannot be kept (a bound,
 * the store) the id is left undefined, so records naming it later carry no
 * name rather than the old one. Control bytes become '?': names end up in
 * folded lines and tables that other users (root) read. */
static void define_string(struct cupti_peer *p, const uint8_t *rec)
{
	struct cupti *cu = p->cu;
	struct cupti_strtab *t = &p->strs;
	struct gpi_string s;
	char text[GPI_STRING_MAX + 1];
	struct cupti_str *e;
	size_t len, cost;

	memcpy(&s, rec, sizeof(s));
	len = strnlen((const char *)rec + sizeof(s), s.len);
	memcpy(text, rec + sizeof(s), len);
	for (size_t k = 0; k < len; k++)
		if ((unsigned char)text[k] < 0x20 || text[k] == 0x7f)
			text[k] = '?';
	e = str_slot(cu, t, s.id, true);
	if (!e) {
		drop(p, CUPTI_DROP_STRINGS);
		snprintf(p->last_error, sizeof(p->last_error), "string table full (%zu bytes)",
			 t->bytes);
		return;
	}
	str_release(cu, t, e);
	cost = len + CUPTI_STR_OVERHEAD;
	if (!str_room(cu, t, cost)) {
		drop(p, CUPTI_DROP_STRINGS);
		snprintf(p->last_error, sizeof(p->last_error),
			 "string table full (%zu bytes, %u ids)", t->bytes, t->count);
		return;
	}
	e->sid = store_str_intern(cu->store, text, len);
	if (!e->sid && len)
		drop(p, CUPTI_DROP_STORE);
	e->len = (uint32_t)cost;
	t->bytes += cost;
	cu->strings_bytes += cost;
	t->count++;
}

/* One more store reference on id's text for a record; 0 for none. */
static uint32_t name_ref(struct cupti_peer *p, uint32_t id)
{
	struct cupti_str *e;

	if (!id)
		return 0;
	e = str_slot(p->cu, &p->strs, id, false);
	if (!e || !e->len) {
		drop(p, CUPTI_DROP_UNDEFINED);
		return 0;
	}
	return e->sid ? store_str_ref(p->cu->store, e->sid) : 0;
}

static bool time_ok(struct cupti_peer *p, uint64_t start, uint64_t end, uint64_t now)
{
	if (!start || !end || end < start || end > now + CUPTI_FUTURE_NS ||
	    start + CUPTI_PAST_NS < now) {
		drop(p, CUPTI_DROP_TIME);
		/* the most common cause is a clock other than CLOCK_MONOTONIC:
		 * say how far off */
		snprintf(p->last_error, sizeof(p->last_error),
			 "record times %llu..%llu dropped (now %llu)", (unsigned long long)start,
			 (unsigned long long)end, (unsigned long long)now);
		return false;
	}
	return true;
}

static bool take_token(struct cupti_peer *p, uint64_t now)
{
	double rate = p->cu->lim.peer_rate;

	if (now > p->tokens_ns) {
		p->tokens += (double)(now - p->tokens_ns) * rate / 1e9;
		if (p->tokens > rate)
			p->tokens = rate;
		p->tokens_ns = now;
	}
	if (p->tokens < 1.0) {
		drop(p, CUPTI_DROP_RATE);
		return false;
	}
	p->tokens -= 1.0;
	return true;
}

static uint32_t intern_detail(struct cupti_peer *p, const char *buf, int n)
{
	uint32_t id;

	if (n <= 0)
		return 0;
	id = store_str_intern(p->cu->store, buf, (size_t)n < 256 ? (size_t)n : 255);
	if (!id)
		drop(p, CUPTI_DROP_STORE);
	return id;
}

/* A record of p with what every record of the peer carries. */
static struct store_rec base_rec(struct cupti_peer *p, uint16_t type, uint64_t start, uint64_t end)
{
	return (struct store_rec){
		.ts_ns = start,
		.dur_ns = end - start,
		.pid = p->pid,
		.uid = p->owner,
		.comm = p->comm ? store_str_ref(p->cu->store, p->comm) : 0,
		.type = type,
	};
}

static void append(struct cupti_peer *p, struct store_rec *r, enum cupti_count kind)
{
	store_append(p->cu->store, r);
	p->records++;
	p->cu->tot.records[kind]++;
	p->cu->col->events++;
}

static void interval(struct cupti_peer *p, enum gpu_cupti_kind kind, uint64_t start, uint64_t end,
		     uint32_t name, uint32_t where_dev, uint32_t ctx, uint32_t stream,
		     uint32_t corr, uint32_t detail, uint32_t aux32, enum cupti_count count)
{
	struct store_rec r = base_rec(p, STORE_REC_GPU_INTERVAL, start, end);

	r.name = name;
	r.cpu = (uint16_t)(GPU_ENGINE_CUPTI << 8 | kind);
	r.aux[0] = STORE_CUPTI_WHERE(where_dev, ctx, stream);
	r.aux[1] = (uint64_t)detail << 32 | corr;
	r.aux32 = aux32;
	append(p, &r, count);
}

/* Kineto's names for memory kinds (CUpti_ActivityMemoryKind) and copy
 * kinds (CUpti_ActivityMemcpyKind), so the timeline classifies a live
 * record as it classifies the same activity in a PyTorch trace. */
static const char *mem_kind(unsigned k)
{
	static const char *const n[] = {"Unknown", "Pageable", "Pinned",	"Device",
					"Array",   "Managed",  "Device Static", "Managed Static"};

	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "Unrecognized";
}

static const char *copy_kind(unsigned k)
{
	static const char *const n[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					"AtoD",	     "DtoA", "DtoD", "HtoH", "PtoP"};

	return k >= 1 && k < sizeof(n) / sizeof(n[0]) ? n[k] : "<unknown>";
}

static const char *sync_name(uint32_t type)
{
	switch (type) {
	case GPI_SYNC_EVENT:
		return "Event Sync";
	case GPI_SYNC_STREAM_WAIT:
		return "Stream Wait Event";
	case GPI_SYNC_STREAM:
		return "Stream Sync";
	case GPI_SYNC_CONTEXT:
		return "Context Sync";
	}
	return "Unknown Sync";
}

static uint32_t intern_name(struct cupti_peer *p, const char *s)
{
	uint32_t id = store_str_intern(p->cu->store, s, strlen(s));

	if (!id)
		drop(p, CUPTI_DROP_STORE);
	return id;
}

static void dec_kernel(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_kernel k;
	char d[256];
	int n;

	memcpy(&k, rec, sizeof(k));
	if (!time_ok(p, k.start, k.end, now))
		return;
	n = snprintf(d, sizeof(d), "grid [%u,%u,%u] block [%u,%u,%u] smem %u+%u regs %u lmem %u",
		     k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
		     k.static_smem, k.dynamic_smem, k.regs, k.local_mem);
	if (k.graph_id && n > 0 && (size_t)n < sizeof(d))
		n += snprintf(d + n, sizeof(d) - (size_t)n, " graph %u node %llu", k.graph_id,
			      (unsigned long long)k.graph_node);
	if ((k.flags & GPI_KF_DEVICE_LAUNCHED) && n > 0 && (size_t)n < sizeof(d))
		n += snprintf(d + n, sizeof(d) - (size_t)n, " device-launched");
	interval(p, GPU_CUPTI_KERNEL, k.start, k.end, name_ref(p, k.name), k.device, k.context,
		 k.stream, k.corr, intern_detail(p, d, n), k.regs, CUPTI_N_KERNEL);
}

static void dec_memcpy(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_memcpy m;
	char name[96], d[128];
	int n;

	memcpy(&m, rec, sizeof(m));
	if (!time_ok(p, m.start, m.end, now))
		return;
	snprintf(name, sizeof(name), "Memcpy %s (%s -> %s)", copy_kind(m.copy_kind),
		 mem_kind(m.src_kind), mem_kind(m.dst_kind));
	n = snprintf(d, sizeof(d), "bytes %llu", (unsigned long long)m.bytes);
	if ((m.flags & GPI_MF_P2P) || m.src_device != m.dst_device)
		n += snprintf(d + n, sizeof(d) - (size_t)n, " devices %u->%u", m.src_device,
			      m.dst_device);
	if (m.flags & GPI_MF_ASYNC)
		n += snprintf(d + n, sizeof(d) - (size_t)n, " async");
	if (m.graph_id)
		n += snprintf(d + n, sizeof(d) - (size_t)n, " graph %u", m.graph_id);
	interval(p, GPU_CUPTI_MEMCPY, m.start, m.end, intern_name(p, name), m.device, m.context,
		 m.stream, m.corr, intern_detail(p, d, n), STORE_BYTES32(m.bytes), CUPTI_N_MEMCPY);
}

static void dec_memset(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_memset m;
	char name[64], d[96];
	int n;

	memcpy(&m, rec, sizeof(m));
	if (!time_ok(p, m.start, m.end, now))
		return;
	snprintf(name, sizeof(name), "Memset (%s)", mem_kind(m.mem_kind));
	n = snprintf(d, sizeof(d), "bytes %llu value %u", (unsigned long long)m.bytes, m.value);
	if (m.flags & GPI_MF_ASYNC)
		n += snprintf(d + n, sizeof(d) - (size_t)n, " async");
	if (m.graph_id)
		n += snprintf(d + n, sizeof(d) - (size_t)n, " graph %u", m.graph_id);
	interval(p, GPU_CUPTI_MEMSET, m.start, m.end, intern_name(p, name), m.device, m.context,
		 m.stream, m.corr, intern_detail(p, d, n), STORE_BYTES32(m.bytes), CUPTI_N_MEMSET);
}

static void dec_sync(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_sync s;
	char d[64];
	int n = 0;

	memcpy(&s, rec, sizeof(s));
	if (!time_ok(p, s.start, s.end, now))
		return;
	if (s.event)
		n = snprintf(d, sizeof(d), "event %u", s.event);
	/* a sync has no device of its own: its context's, unknown here */
	interval(p, GPU_CUPTI_SYNC, s.start, s.end, intern_name(p, sync_name(s.type)), 0, s.context,
		 s.stream, s.corr, intern_detail(p, d, n), s.event, CUPTI_N_SYNC);
}

/* Kept as it came: which sync waits on it is decided where a capture is
 * read, once every buffer of the window is in (capture/gpumatch.h). */
static void dec_cuda_event(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_cuda_event e;
	struct store_rec r;

	memcpy(&e, rec, sizeof(e));
	if (!time_ok(p, e.time, e.time, now))
		return;
	r = base_rec(p, STORE_REC_GPU_EVENT, e.time, e.time);
	r.aux32 = e.event;
	r.aux[0] = STORE_CUPTI_WHERE(e.device, e.context, e.stream);
	r.aux[1] = e.corr;
	append(p, &r, CUPTI_N_EVENT);
}

/* A duty cycle's window: kept in the store, so that a capture can tell
 * the time the library did not look from an idle GPU. */
static void dec_window(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_window w;
	struct store_rec r;

	memcpy(&w, rec, sizeof(w));
	if (!time_ok(p, w.start, w.end, now))
		return;
	r = base_rec(p, STORE_REC_GPU_WINDOW, w.start, w.end);
	r.aux32 = w.duty > 100 ? 100 : w.duty;
	r.aux[0] = w.period_ms;
	append(p, &r, CUPTI_N_WINDOW);
	if (!p->windows)
		p->first_window_ns = w.start;
	p->windows++;
	p->covered_ns += w.end - w.start;
	p->duty = (uint32_t)r.aux32;
	p->period_ms = w.period_ms;
}

static void dec_graph(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_graph g;
	char d[32];
	int n;

	memcpy(&g, rec, sizeof(g));
	if (!time_ok(p, g.start, g.end, now))
		return;
	n = snprintf(d, sizeof(d), "graph %u", g.graph_id);
	interval(p, GPU_CUPTI_GRAPH, g.start, g.end, intern_name(p, "Graph Launch"), g.device,
		 g.context, g.stream, g.corr, intern_detail(p, d, n), g.graph_id, CUPTI_N_GRAPH);
}

static void dec_api(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_api a;
	struct store_rec r;

	memcpy(&a, rec, sizeof(a));
	if (!time_ok(p, a.enter, a.exit, now))
		return;
	r = base_rec(p, STORE_REC_GPU_API, a.enter, a.exit);
	r.tid = a.tid;
	r.name = name_ref(p, a.name);
	r.cpu = a.domain;
	r.aux32 = a.cbid | (uint32_t)(a.failed ? 1 : 0) << 16;
	r.aux[1] = a.corr;
	append(p, &r, CUPTI_N_API);
}

static void dec_marker(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_marker m;
	struct store_rec r;

	memcpy(&m, rec, sizeof(m));
	if (!time_ok(p, m.start, m.end, now))
		return;
	r = base_rec(p, STORE_REC_MARK, m.start, m.end);
	r.tid = m.tid;
	r.name = name_ref(p, m.name);
	r.cpu = 1;
	r.aux32 = m.flags & (GPI_MK_INSTANT | GPI_MK_RANGE);
	r.aux[1] = (uint64_t)name_ref(p, m.domain) << 32;
	append(p, &r, CUPTI_N_MARKER);
}

/* ------------------------------------------------------------ PC sampling */

static void dec_stall_name(struct cupti_peer *p, const uint8_t *rec)
{
	struct cupti_pcstate *pc = &p->pc;
	struct gpi_stall_name s;
	uint32_t *slot;

	memcpy(&s, rec, sizeof(s));
	if (s.device >= CUPTI_STALL_DEVS || s.index >= CUPTI_STALL_IDS) {
		drop(p, CUPTI_DROP_PC);
		return;
	}
	if (!pc->stall) {
		/* 16 KiB once per peer that samples: charged like names */
		size_t cost = (size_t)CUPTI_STALL_DEVS * CUPTI_STALL_IDS * sizeof(uint32_t);

		if (!str_room(p->cu, &p->strs, cost) ||
		    !(pc->stall = calloc(CUPTI_STALL_DEVS * CUPTI_STALL_IDS, sizeof(uint32_t)))) {
			drop(p, CUPTI_DROP_STRINGS);
			return;
		}
		p->strs.bytes += cost;
		p->cu->strings_bytes += cost;
	}
	slot = &pc->stall[s.device * CUPTI_STALL_IDS + s.index];
	if (*slot)
		store_str_unref(p->cu->store, *slot);
	*slot = name_ref(p, s.name);
	p->cu->tot.records[CUPTI_N_STALL_NAME]++;
}

/* A stall reason's store string (a new reference): its name, or
 * "stall_<index>" when the peer never named it. */
static uint32_t stall_ref(struct cupti_peer *p, uint32_t device, uint32_t index)
{
	uint32_t sid = p->pc.stall ? p->pc.stall[device * CUPTI_STALL_IDS + index] : 0;
	char buf[32];

	if (sid)
		return store_str_ref(p->cu->store, sid);
	drop(p, CUPTI_DROP_UNDEFINED);
	snprintf(buf, sizeof(buf), "stall_%u", index);
	return intern_name(p, buf);
}

static void dec_pc(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_pc g;
	struct store_rec r;

	memcpy(&g, rec, sizeof(g));
	if (g.device >= CUPTI_STALL_DEVS || g.reason >= CUPTI_STALL_IDS || g.pc > UINT32_MAX ||
	    !g.samples) {
		drop(p, CUPTI_DROP_PC);
		return;
	}
	if (!time_ok(p, g.time, g.time, now))
		return;
	r = base_rec(p, STORE_REC_GPU_PC, g.time, g.time);
	r.name = name_ref(p, g.function);
	r.cpu = (uint16_t)g.device;
	r.aux32 = g.samples;
	r.aux[0] = g.cubin_crc;
	r.aux[1] = (uint64_t)stall_ref(p, g.device, g.reason) << 32 | (uint32_t)g.pc;
	p->cu->tot.pc_samples += g.samples;
	append(p, &r, CUPTI_N_PC);
}

static const struct cupti_cubin *find_locked(struct cupti *cu, uint64_t crc, uint32_t uid)
{
	for (const struct cupti_cubin *c = cu->cubins; c; c = c->next)
		if (c->crc == crc && (c->owner == uid || uid == 0))
			return c;
	return NULL;
}

const struct cupti_cubin *cupti_cubin_find(struct cupti *cu, uint64_t crc, uint32_t uid)
{
	const struct cupti_cubin *c;

	pthread_mutex_lock(&cu->cubins_mu);
	c = find_locked(cu, crc, uid);
	pthread_mutex_unlock(&cu->cubins_mu);
	return c; /* only the loop thread frees it: valid for its caller there */
}

int cupti_cubin_copy(struct cupti *cu, uint64_t crc, uint32_t uid, void **bytes, size_t *size,
		     uint32_t *owner)
{
	const struct cupti_cubin *c;
	int r = -ENOENT;

	pthread_mutex_lock(&cu->cubins_mu);
	c = find_locked(cu, crc, uid);
	if (c) {
		*bytes = malloc(c->size);
		r = *bytes ? 0 : -ENOMEM;
		if (!r) {
			memcpy(*bytes, c->bytes, c->size);
			*size = c->size;
			*owner = c->owner;
		}
	}
	pthread_mutex_unlock(&cu->cubins_mu);
	return r;
}

static void cubin_abort(struct cupti_pcstate *pc)
{
	free(pc->cubin);
	pc->cubin = NULL;
	pc->cubin_got = pc->cubin_size = 0;
}

/* The cubin received whole: into the cache, the oldest out to make room. */
static void cubin_keep(struct cupti_peer *p)
{
	struct cupti *cu = p->cu;
	struct cupti_pcstate *pc = &p->pc;
	size_t size = pc->cubin_size;
	struct cupti_cubin *c;

	if (size > cu->lim.cubin_cache_bytes || !(c = malloc(sizeof(*c) + size))) {
		drop(p, CUPTI_DROP_CUBIN);
		cubin_abort(pc);
		return;
	}
	pthread_mutex_lock(&cu->cubins_mu);
	while (cu->cubins && cu->cubins_bytes + size > cu->lim.cubin_cache_bytes) {
		struct cupti_cubin *old = cu->cubins;

		cu->cubins = old->next;
		if (!cu->cubins)
			cu->cubins_tail = &cu->cubins;
		cu->cubins_bytes -= old->size;
		free(old);
	}
	c->next = NULL;
	c->crc = pc->cubin_crc;
	c->owner = p->owner;
	c->pid = p->pid;
	c->size = size;
	memcpy(c->bytes, pc->cubin, size);
	*cu->cubins_tail = c;
	cu->cubins_tail = &c->next;
	cu->cubins_bytes += size;
	pthread_mutex_unlock(&cu->cubins_mu);
	cu->tot.cubins++;
	cubin_abort(pc);
}

/*
 * Chunks come in order, a chunk at offset 0 (re)starting a cubin. A cubin
 * already kept for this owner is not received again; one that would pass
 * cupti.peer_cubin_bytes is refused whole; a chunk out of order drops the
 * cubin it belongs to (the library sends it again after a dropped batch).
 */
static void dec_cubin(struct cupti_peer *p, const uint8_t *rec)
{
	struct cupti_pcstate *pc = &p->pc;
	struct gpi_cubin c;

	memcpy(&c, rec, sizeof(c));
	p->cu->tot.records[CUPTI_N_CUBIN]++;
	if (c.offset == 0) {
		cubin_abort(pc);
		if (cupti_cubin_find(p->cu, c.crc, p->owner))
			return;
		if (c.size > p->cu->lim.peer_cubin_bytes - pc->cubin_bytes ||
		    pc->cubin_bytes > p->cu->lim.peer_cubin_bytes ||
		    !(pc->cubin = malloc(c.size))) {
			drop(p, CUPTI_DROP_CUBIN);
			snprintf(p->last_error, sizeof(p->last_error),
				 "cubin of %u bytes refused (%zu of %zu delivered)", c.size,
				 pc->cubin_bytes, p->cu->lim.peer_cubin_bytes);
			return;
		}
		pc->cubin_bytes += c.size;
		pc->cubin_crc = c.crc;
		pc->cubin_size = c.size;
	} else if (!pc->cubin) {
		return; /* the rest of one not received (kept already, or refused) */
	} else if (c.crc != pc->cubin_crc || c.size != pc->cubin_size ||
		   c.offset != pc->cubin_got) {
		drop(p, CUPTI_DROP_CUBIN);
		cubin_abort(pc);
		return;
	}
	memcpy(pc->cubin + c.offset, rec + sizeof(c), c.len);
	pc->cubin_got = c.offset + c.len;
	if (pc->cubin_got == pc->cubin_size)
		cubin_keep(p);
}

void cupti_pc_clear(struct cupti *cu, struct cupti_pcstate *pc)
{
	if (pc->stall) {
		for (size_t i = 0; i < CUPTI_STALL_DEVS * CUPTI_STALL_IDS; i++)
			if (pc->stall[i])
				store_str_unref(cu->store, pc->stall[i]);
		free(pc->stall);
		pc->stall = NULL;
		/* the peer's strtab bytes go with it; the total is every peer's */
		cu->strings_bytes -= (size_t)CUPTI_STALL_DEVS * CUPTI_STALL_IDS * sizeof(uint32_t);
	}
	cubin_abort(pc);
}

void cupti_cubins_free(struct cupti *cu)
{
	pthread_mutex_lock(&cu->cubins_mu);
	while (cu->cubins) {
		struct cupti_cubin *c = cu->cubins;

		cu->cubins = c->next;
		free(c);
	}
	cu->cubins_tail = &cu->cubins;
	cu->cubins_bytes = 0;
	pthread_mutex_unlock(&cu->cubins_mu);
}

static void dec_stats(struct cupti_peer *p, const uint8_t *rec, size_t rlen)
{
	struct cupti_libstats *l = &p->lib;
	struct cupti_str *e;
	size_t len = 0;
	const char *s = NULL;

	/* an older library's shorter record: the fields it lacks read 0 */
	memset(&l->s, 0, sizeof(l->s));
	memcpy(&l->s, rec, rlen < sizeof(l->s) ? rlen : sizeof(l->s));
	l->seen = true;
	l->conflict[0] = '\0';
	e = l->s.conflict ? str_slot(p->cu, &p->strs, l->s.conflict, false) : NULL;
	if (e && e->sid)
		s = store_str(p->cu->store, e->sid, &len);
	if (s)
		snprintf(l->conflict, sizeof(l->conflict), "%.*s", (int)len, s);
	switch (l->s.state) {
	case GPI_ST_CONFLICT:
		p->state = CUPTI_PEER_CONFLICT;
		break;
	case GPI_ST_DISABLED:
		p->state = CUPTI_PEER_DISABLED;
		break;
	default:
		p->state = CUPTI_PEER_ACTIVE;
	}
	p->cu->tot.records[CUPTI_N_STATS]++;
}

static void dec_hello(struct cupti_peer *p, const uint8_t *rec, uint64_t now)
{
	struct gpi_hello h;

	memcpy(&h, rec, sizeof(h));
	p->lib_version = h.lib_version;
	p->cupti_version = h.cupti_version;
	p->driver_version = h.driver_version;
	p->features = h.features;
	p->state = CUPTI_PEER_ACTIVE;
	/* the library's CLOCK_MONOTONIC when it sent the hello, against ours
	 * when we read it: small and positive when both read the same clock */
	p->hello_delay_ns = (int64_t)(now - h.mono_ns);
}

static void dec_record(struct cupti_peer *p, uint16_t type, const uint8_t *rec, size_t len,
		       uint64_t now)
{
	if (type == GPI_HELLO) {
		dec_hello(p, rec, now);
		return;
	}
	if (type == GPI_STATS) {
		dec_stats(p, rec, len);
		return;
	}
	if (type == GPI_PC_STATS) { /* like gpi_stats: a state, not a record */
		memset(&p->pc.lib, 0, sizeof(p->pc.lib));
		memcpy(&p->pc.lib, rec, len < sizeof(p->pc.lib) ? len : sizeof(p->pc.lib));
		p->pc.lib_seen = true;
		return;
	}
	/* every record but those two costs a token, unknown ones too: what
	 * the daemon reads of a peer is bounded, not only what it keeps */
	if (!take_token(p, now))
		return;
	if (!known(type)) {
		p->cu->tot.records[CUPTI_N_UNKNOWN]++;
		return;
	}
	switch (type) {
	case GPI_STRING:
		define_string(p, rec);
		p->cu->tot.records[CUPTI_N_STRING]++;
		break;
	case GPI_KERNEL:
		dec_kernel(p, rec, now);
		break;
	case GPI_MEMCPY:
		dec_memcpy(p, rec, now);
		break;
	case GPI_MEMSET:
		dec_memset(p, rec, now);
		break;
	case GPI_SYNC:
		dec_sync(p, rec, now);
		break;
	case GPI_GRAPH:
		dec_graph(p, rec, now);
		break;
	case GPI_CUDA_EVENT:
		dec_cuda_event(p, rec, now);
		break;
	case GPI_WINDOW:
		dec_window(p, rec, now);
		break;
	case GPI_API:
		dec_api(p, rec, now);
		break;
	case GPI_MARKER:
		dec_marker(p, rec, now);
		break;
	case GPI_STALL_NAME:
		dec_stall_name(p, rec);
		break;
	case GPI_PC:
		dec_pc(p, rec, now);
		break;
	case GPI_CUBIN:
		dec_cubin(p, rec);
		break;
	}
}

int cupti_decode(struct cupti_peer *p, const void *msg, size_t len, uint64_t now_ns)
{
	const uint8_t *m = msg;
	struct gpi_hdr h;
	size_t off = sizeof(h);
	int r = check_message(p, m, len);

	if (r < 0)
		return r;
	memcpy(&h, m, sizeof(h));
	/* seq counts from 0; a jump forward is batches the library dropped */
	if (p->msgs && h.seq > p->next_seq) {
		p->seq_gaps += h.seq - p->next_seq;
		p->cu->tot.seq_gaps += h.seq - p->next_seq;
	}
	p->next_seq = h.seq + 1;
	p->msgs++;
	p->cu->tot.msgs++;
	for (size_t i = 0; i < h.nrec; i++) {
		struct gpi_rec rh;

		memcpy(&rh, m + off, sizeof(rh));
		dec_record(p, rh.type, m + off, rh.len, now_ns);
		off += rh.len;
	}
	return 0;
}
