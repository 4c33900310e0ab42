// SPDX-License-Identifier: MIT
/* capture.start, capture.stop, capture.list, capture.info, capture.delete */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "capreg.h"
#include "capwindow.h"
#include "collect/cupti.h"
#include "gpd.h"
#include "store/store.h"
#include "tlcache.h"
#include "methods.h"

/* What /proc says about a process's credentials (the daemon's pid
 * namespace): every uid and gid, the permitted capabilities, and the owner
 * of /proc/PID, which the kernel sets to root while the process is not
 * dumpable (task_dump_owner()). */
struct proc_cred {
	uid_t uid[4]; /* real, effective, saved, fs */
	gid_t gid[4];
	unsigned long long cap_prm;
	uid_t dump_uid;
	gid_t dump_gid;
};

static int proc_cred(int32_t pid, struct proc_cred *pc)
{
	char path[64], line[256];
	struct stat st;
	int seen = 0;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		return -ESRCH;
	pc->dump_uid = st.st_uid;
	pc->dump_gid = st.st_gid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f)) {
		unsigned a, b, c, d;
		if (sscanf(line, "Uid: %u %u %u %u", &a, &b, &c, &d) == 4) {
			pc->uid[0] = a, pc->uid[1] = b, pc->uid[2] = c, pc->uid[3] = d;
			seen |= 1;
		} else if (sscanf(line, "Gid: %u %u %u %u", &a, &b, &c, &d) == 4) {
			pc->gid[0] = a, pc->gid[1] = b, pc->gid[2] = c, pc->gid[3] = d;
			seen |= 2;
		} else if (sscanf(line, "CapPrm: %llx", &pc->cap_prm) == 1) {
			seen |= 4;
		}
	}
	fclose(f);
	return seen == 7 ? 0 : -ESRCH; /* gone while we read it */
}

/*
 * May a peer of uid/gid read process pid? The kernel's own rule for
 * /proc/PID/maps and perf (ptrace access mode read, filesystem
 * credentials): every uid of the target is the peer's, every gid is the
 * peer's, the target is dumpable and permits no capability the peer lacks
 * (an unprivileged peer has none). 0, -ESRCH when there is no such
 * process, -EACCES when another user's, -EPERM when the user's own but
 * with other credentials (setuid, setgid, another group, file
 * capabilities, not dumpable).
 */
static int peer_may_read(int32_t pid, uid_t uid, gid_t gid)
{
	struct proc_cred pc;
	int r = proc_cred(pid, &pc);

	if (r < 0)
		return r;
	if (pc.uid[0] != uid)
		return -EACCES;
	for (int i = 0; i < 4; i++)
		if (pc.uid[i] != uid || pc.gid[i] != gid)
			return -EPERM;
	if (pc.cap_prm || pc.dump_uid != uid || pc.dump_gid != gid)
		return -EPERM;
	return 0;
}

/* Does the ring hold records of pid in the past window w that a peer of
 * uid (unless privileged) may see? The flight-recorder case of a process
 * that has exited: same window and filter as capreg_start() will cut. */
static bool ring_has_pid(const struct store *s, int32_t pid, const struct capwin *w, uid_t uid,
			 bool privileged)
{
	uint64_t t0, t1;

	capwin_span(w, &t0, &t1);
	for (size_t i = store_count(s); i-- > 0;) {
		const struct store_rec *r = store_at(s, i);
		if (r->pid == (uint32_t)pid && r->ts_ns >= t0 && r->ts_ns <= t1 &&
		    (privileged || r->uid == uid))
			return true;
	}
	return false;
}

struct capentry *capture_for_req(struct rpc_req *req, const cJSON *params, bool allow_damaged)
{
	uint64_t id = 0;
	if (!param_u64(req, params, "id", true, UINT64_MAX >> 11, &id))
		return NULL;
	struct capentry *e = capreg_find(req->gpd->captures, id);
	if (!e || !capreg_visible(e, req->uid, req->privileged)) {
		rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL, "no capture %llu",
			  (unsigned long long)id);
		return NULL;
	}
	if (!allow_damaged && e->sum->state == CAPTURE_DAMAGED) {
		rpc_error(req, GPUPROF_ERR_DAMAGED, NULL, "capture %llu is damaged: %s",
			  (unsigned long long)id, e->sum->damage);
		return NULL;
	}
	if (!allow_damaged && e->sum->state == CAPTURE_FAILED) {
		rpc_error(req, GPUPROF_ERR_NO_DATA, NULL, "capture %llu failed: %s",
			  (unsigned long long)id, e->sum->damage);
		return NULL;
	}
	return e;
}

/*
 * May req's peer capture pid? Answers the error itself when not. A process
 * that does not exist is refused, except for a window in the past (the
 * flight-recorder case) when the ring holds records of it the peer may
 * see: an empty capture of a mistyped pid would look like a success.
 */
static bool pid_allowed(struct rpc_req *req, int32_t pid, const struct capwin *w)
{
	int r = req->privileged ? (kill(pid, 0) == 0 || errno == EPERM ? 0 : -ESRCH)
				: peer_may_read(pid, req->uid, req->gid);

	if (r == -ESRCH) {
		if (w->past && ring_has_pid(req->gpd->store, pid, w, req->uid, req->privileged))
			return true;
		rpc_error(req, GPUPROF_ERR_NOT_FOUND, NULL, "no process %d", pid);
		return false;
	}
	if (r == -EACCES) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL, "process %d belongs to another user",
			  pid);
		return false;
	}
	if (r < 0) {
		rpc_error(req, GPUPROF_ERR_PERMISSION, NULL,
			  "process %d runs with credentials other than yours (setuid, setgid, "
			  "another group, capabilities or not dumpable)",
			  pid);
		return false;
	}
	return true;
}

/* The code for a capture that could not be saved. */
static int not_saved_code(int err)
{
	switch (-err) {
	case EBUSY:
	case EDQUOT:
		return GPUPROF_ERR_BUSY;
	case EFBIG:
		return GPUPROF_ERR_TOO_LARGE;
	case ENOMEM:
		return GPUPROF_ERR_INTERNAL;
	case ESHUTDOWN:
		return GPUPROF_ERR_SHUTTING_DOWN;
	default:
		return GPUPROF_ERR_IO;
	}
}

static void saved(struct capwaiter *w, struct capentry *e, enum capwait_end end, int err,
		  const char *what)
{
	struct rpc_req *req = (struct rpc_req *)((char *)w - offsetof(struct rpc_req, wait));

	switch (end) {
	case CAPWAIT_SAVED:
		rpc_reply(req, capreg_info(e));
		break;
	case CAPWAIT_GONE:
		rpc_error_errno(req, err, what);
		break;
	case CAPWAIT_NOT_SAVED:
		rpc_error(req, not_saved_code(err), NULL, "capture %" PRIu64 " not saved: %s",
			  e->id, what);
		break;
	}
}

void rpc_wait_saved(struct rpc_req *req, struct capentry *e)
{
	req->wait.done = saved;
	capreg_wait(e, &req->wait);
}

void method_capture_start(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"pids",	  "duration_ms", "last_ms",
					      "start_ns", "end_ns",	 "clock",
					      "wait",	  "name",	 NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capreg_start o = {
		.owner_uid = req->uid,
		.privileged = req->privileged,
		.uid_filter = !req->privileged,
	};
	int32_t pids[CAPTURE_MAX_PIDS];
	bool wait = false;
	struct capwin w;
	if (!param_bool(req, params, "wait", &wait) ||
	    !param_name(req, params, "name", CAPTURE_NAME_MAX - 1, &o.name) ||
	    !capwin_param(req, params, &w))
		return;
	o.duration_ms = w.duration_ms;
	if (w.absolute) {
		o.start_ns = w.t0_ns;
		o.end_ns = w.t1_ns;
	} else {
		o.last_ms = w.last_ms;
	}
	/* A window in the past holds what happened up to its end, and whether
	 * an exited pid had records decides below whether it may be named
	 * (capwin_param drained the rings for an absolute one). */
	if (o.last_ms && req->gpd->drain_rings)
		req->gpd->drain_rings(req->gpd);
	const cJSON *jp = params ? cJSON_GetObjectItemCaseSensitive(params, "pids") : NULL;
	if (jp) {
		if (!cJSON_IsArray(jp) || cJSON_GetArraySize(jp) > CAPTURE_MAX_PIDS) {
			rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
				  "\"pids\" must be an array of at most %d pids", CAPTURE_MAX_PIDS);
			return;
		}
		const cJSON *it;
		cJSON_ArrayForEach(it, jp)
		{
			double d = cJSON_IsNumber(it) ? it->valuedouble : -1;
			if (d < 1 || d > 4194304 || d != (double)(int32_t)d) {
				rpc_error(req, GPUPROF_ERR_INVALID_PARAMS, NULL,
					  "\"pids\" must hold process ids (1..4194304)");
				return;
			}
			int32_t pid = (int32_t)d;
			if (!pid_allowed(req, pid, &w))
				return;
			pids[o.npids++] = pid;
		}
	}
	o.pids = pids;
	struct capentry *e;
	char why[CAPREG_WHY_MAX];
	/* why names the limit that refused it: the count of captures, this
	 * user's quota, the queue of captures waiting for a job slot, ... */
	int r = capreg_start(req->gpd->captures, &o, &e, why);
	if (r == -EBUSY || r == -EDQUOT) {
		rpc_error(req, GPUPROF_ERR_BUSY, NULL, "%s", why);
		return;
	}
	if (r == -EFBIG) {
		rpc_error(req, GPUPROF_ERR_TOO_LARGE, NULL, "%s", why);
		return;
	}
	if (r < 0) {
		rpc_error_errno(req, r, why);
		return;
	}
	/* a recording of named processes: their CUPTI libraries collect all
	 * the time while it lasts (a second more for the request's way
	 * there and the last buffers), not only in their duty-cycle windows;
	 * a pid without a library, or one the caller may not see, is none
	 * of this */
	for (size_t i = 0; o.duration_ms && i < o.npids; i++)
		cupti_full(req->gpd, (pid_t)pids[i], req->uid, req->privileged,
			   o.duration_ms + 1000);
	if (wait && e->sum->state == CAPTURE_RECORDING)
		rpc_wait_saved(req, e);
	else
		rpc_reply(req, capreg_info(e));
}

void method_capture_stop(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", "wait", NULL};
	bool wait = false;
	if (!params_only(req, params, allowed) || !param_bool(req, params, "wait", &wait))
		return;
	struct capentry *e = capture_for_req(req, params, false);
	if (!e)
		return;
	uint64_t id = e->id;
	capreg_stop(e); /* one that cannot be saved stays, failed */
	e = capreg_find(req->gpd->captures, id);
	if (!e) {
		rpc_error(req, GPUPROF_ERR_IO, NULL, "capture %llu failed", (unsigned long long)id);
		return;
	}
	if (wait && e->sum->state == CAPTURE_RECORDING)
		rpc_wait_saved(req, e);
	else
		rpc_reply(req, capreg_info(e));
}

void method_capture_list(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {NULL};
	if (!params_only(req, params, allowed))
		return;
	cJSON *o = cJSON_CreateObject();
	cJSON *arr = cJSON_AddArrayToObject(o, "captures");
	for (struct capentry *e = capreg_first(req->gpd->captures); e; e = e->next)
		if (capreg_visible(e, req->uid, req->privileged))
			cJSON_AddItemToArray(arr, capreg_info(e));
	rpc_reply(req, o);
}

void method_capture_info(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capentry *e = capture_for_req(req, params, true);
	if (e)
		rpc_reply(req, capreg_info(e));
}

void method_capture_delete(struct rpc_req *req, const cJSON *params)
{
	static const char *const allowed[] = {"id", NULL};
	if (!params_only(req, params, allowed))
		return;
	struct capentry *e = capture_for_req(req, params, true);
	if (!e)
		return;
	uint64_t id = e->id;
	int r = capreg_delete(e);
	if (r < 0) {
		rpc_error_errno(req, r, "deleting the capture");
		return;
	}
	tlcache_drop(req->gpd->tlcache, id); /* its decoded timeline, if kept */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddBoolToObject(o, "deleted", 1);
	rpc_reply(req, o);
}
