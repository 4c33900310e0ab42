// SPDX-License-Identifier: MIT
/*
 * The upload queue and its thread (push_int.h): profiles go to a
 * Pyroscope-compatible ingest endpoint as Grafana Pyroscope documents it:
 *
 *   POST <push.url>?name=APP{host=H}&from=S&until=S&format=pprof&sampleRate=HZ
 *   Content-Type: multipart/form-data
 *     profile             the gzip-compressed pprof profile
 *     sample_type_config  which of its sample types to keep, and how
 *
 * (a bare pprof body would keep only the sample types the server knows
 * from Go, losing the GPU launches). libcurl carries it: HTTP/1.1 and
 * HTTPS with the system's CA store (or push.ca_file), proxies from the
 * environment, bearer
 * and basic authentication, timeouts; no redirect is followed, so
 * credentials never reach another host.
 *
 * Failures: a network error, 408, 429 or 5xx is retried after an
 * exponential backoff (0.5 s doubling up to push.retry_max, less up to a
 * quarter at random, so hosts that lost the same server do not come back
 * in step) while the profile stays at the head of the queue; any other
 * answer but 2xx drops the profile as rejected. Profiles that arrive while
 * the queue is full (push.queue_max, push.queue_max_bytes) push the oldest
 * out; each drop is counted for the status reply.
 */
#include "push_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "gpuprof-build.h"
#include "json.h"
#include "log.h"

#define SECRET_MAX 4096
#define BACKOFF_FIRST_MS 500

/* Our sample types as Pyroscope should store them; those not named (CPU
 * and GPU nanoseconds: its units are samples, objects or bytes) stay out. */
static const char sample_type_config[] =
	"{\"samples\":{\"units\":\"samples\",\"aggregation\":\"sum\","
	"\"display-name\":\"cpu\",\"sampled\":true},"
	"\"launches\":{\"units\":\"samples\",\"aggregation\":\"sum\","
	"\"display-name\":\"gpu_launches\",\"sampled\":false},"
	"\"stall_samples\":{\"units\":\"samples\",\"aggregation\":\"sum\","
	"\"display-name\":\"gpu_stalls\",\"sampled\":false}}";

struct upload {
	char url[1024];
	char name[512];
	uint32_t sample_hz;
	char *bearer;	    /* secret, or NULL */
	char *userpwd;	    /* "user:password", secret, or NULL */
	char tenant[300];   /* "X-Scope-OrgID: ..." or "" */
	char ca_file[4096]; /* "" = the system's CA store */
	uint32_t queue_max, timeout_ms, retry_max_ms;
	size_t queue_max_bytes;
	pthread_t thread;
	bool started;
	atomic_bool abort; /* stops a transfer in flight */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	/* guarded by mu */
	struct push_item *head, *tail;
	size_t n, bytes;
	bool stop;
	uint64_t next_try_ms; /* monotonic; 0 = now */
	unsigned failing;     /* consecutive failed attempts */
	uint64_t sent, sent_bytes, attempts, failures, retries, dropped_full, dropped_rejected;
	long last_status;
	char last_error[256];
	uint64_t last_success_ns; /* CLOCK_REALTIME */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A secret from a file: a regular file (no symlink followed) that nobody
 * but its owner and group may write and others may not read, at most 4 KiB,
 * trailing white space removed, no control characters left (a header must
 * not be split). Returns a malloc()ed string or NULL with why filled.
 */
static char *read_secret(const char *path, char *why, size_t whylen)
{
	char *buf = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SECRET_MAX) {
		snprintf(why, whylen, "%s: not a regular file of at most %d bytes", path,
			 SECRET_MAX);
		goto out;
	}
	if (st.st_mode & (S_IWOTH | S_IROTH)) {
		snprintf(why, whylen, "%s: readable or writable by others (mode %03o)", path,
			 (unsigned)st.st_mode & 0777);
		goto out;
	}
	buf = calloc(1, SECRET_MAX + 1);
	ssize_t n = buf ? read(fd, buf, SECRET_MAX) : -1;
	if (n < 0) {
		snprintf(why, whylen, "%s: %s", path, buf ? strerror(errno) : "out of memory");
		goto fail;
	}
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' ||
			 buf[n - 1] == '\t'))
		buf[--n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < ' ' || buf[i] == 0x7f) {
			snprintf(why, whylen, "%s: control characters in the secret", path);
			goto fail;
		}
	if (n == 0) {
		snprintf(why, whylen, "%s: empty", path);
		goto fail;
	}
	goto out;
fail:
	free(buf);
	buf = NULL;
out:
	close(fd);
	return buf;
}

static void drop_head(struct upload *u)
{
	struct push_item *it = u->head;
	u->head = it->next;
	if (!u->head)
		u->tail = NULL;
	u->n--;
	u->bytes -= it->len;
	push_item_free(it);
}

/* Oldest first, until the queue fits its bounds. Under mu. */
static void enforce_bounds(struct upload *u)
{
	while (u->head && (u->n > u->queue_max || u->bytes > u->queue_max_bytes)) {
		drop_head(u);
		u->dropped_full++;
	}
}

void upload_enqueue(struct upload *u, struct push_item *it)
{
	pthread_mutex_lock(&u->mu);
	it->next = NULL;
	if (u->tail)
		u->tail->next = it;
	else
		u->head = it;
	u->tail = it;
	u->n++;
	u->bytes += it->len;
	enforce_bounds(u);
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

static int xferinfo(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct upload *u = arg;
	(void)dt, (void)dn, (void)ut, (void)un;
	return atomic_load(&u->abort) ? 1 : 0;
}

/* The answer's body is not needed: read and forget it. */
static size_t discard(char *p, size_t sz, size_t n, void *arg)
{
	(void)p, (void)arg;
	return sz * n;
}

enum outcome { SENT, RETRY, REJECTED };

static enum outcome send_one(struct upload *u, CURL *h, const struct push_item *it, long *status,
			     char *err, size_t errlen)
{
	char url[2048], cerr[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	enum outcome out = RETRY;
	curl_mime *mime = NULL;
	char *ename = curl_easy_escape(h, u->name, 0);
	uint64_t from = it->from_ns / 1000000000ull;
	uint64_t until = (it->until_ns + 999999999ull) / 1000000000ull;

	*status = 0;
	if (!ename) {
		snprintf(err, errlen, "out of memory");
		return RETRY;
	}
	snprintf(url, sizeof(url),
		 "%s%cname=%s&from=%" PRIu64 "&until=%" PRIu64 "&format=pprof&sampleRate=%u",
		 u->url, strchr(u->url, '?') ? '&' : '?', ename, from,
		 until > from ? until : from + 1, u->sample_hz);
	curl_free(ename);
	curl_easy_reset(h);
	mime = curl_mime_init(h);
	curl_mimepart *part = mime ? curl_mime_addpart(mime) : NULL;
	if (!part || curl_mime_name(part, "profile") || curl_mime_filename(part, "profile.pb.gz") ||
	    curl_mime_type(part, "application/octet-stream") ||
	    curl_mime_data(part, (const char *)it->body, it->len) ||
	    !(part = curl_mime_addpart(mime)) || curl_mime_name(part, "sample_type_config") ||
	    curl_mime_filename(part, "sample_type_config.json") ||
	    curl_mime_type(part, "application/json") ||
	    curl_mime_data(part, sample_type_config, CURL_ZERO_TERMINATED)) {
		snprintf(err, errlen, "building the request failed");
		goto out;
	}
	/* "Expect: 100-continue" would cost a round trip (or a second) per
	 * upload for no gain at these sizes */
	struct curl_slist *t = curl_slist_append(NULL, "Expect:");
	if (t && u->tenant[0])
		t = curl_slist_append(t, u->tenant) ? t : (curl_slist_free_all(t), NULL);
	if (!t) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	hdrs = t;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "gpuprofd/" GPUPROF_VERSION);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)u->timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(u->timeout_ms < 5000 ? u->timeout_ms : 5000));
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, xferinfo);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, u);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	if (u->ca_file[0])
		curl_easy_setopt(h, CURLOPT_CAINFO, u->ca_file);
	if (u->bearer) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, u->bearer);
	} else if (u->userpwd) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERPWD, u->userpwd);
	}
	CURLcode cr = curl_easy_perform(h);
	if (cr != CURLE_OK) {
		snprintf(err, errlen, "%s", cerr[0] ? cerr : curl_easy_strerror(cr));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	if (*status >= 200 && *status < 300)
		out = SENT;
	else if (*status == 408 || *status == 429 || *status >= 500)
		snprintf(err, errlen, "HTTP %ld", *status);
	else
		out = REJECTED, snprintf(err, errlen, "HTTP %ld (profile dropped)", *status);
out:
	curl_mime_free(mime);
	curl_slist_free_all(hdrs);
	return out;
}

static uint64_t backoff_ms(struct upload *u, unsigned *seed)
{
	unsigned shift = u->failing > 20 ? 20 : u->failing - 1;
	uint64_t ms = (uint64_t)BACKOFF_FIRST_MS << shift;
	if (ms > u->retry_max_ms)
		ms = u->retry_max_ms;
	return ms - ms * (uint64_t)(rand_r(seed) % 250) / 1000;
}

/* Under mu: wait until there is a profile to send and its time came. */
static struct push_item *next_item(struct upload *u)
{
	for (;;) {
		if (u->stop)
			return NULL;
		uint64_t now = mono_ms();
		if (u->head && now >= u->next_try_ms) {
			struct push_item *it = u->head;
			u->head = it->next;
			if (!u->head)
				u->tail = NULL;
			u->n--;
			u->bytes -= it->len;
			return it;
		}
		if (!u->head) {
			pthread_cond_wait(&u->cv, &u->mu);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t wait = u->next_try_ms - now;
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&u->cv, &u->mu, &ts);
	}
}

static void *upload_main(void *arg)
{
	struct upload *u = arg;
	unsigned seed = (unsigned)getpid() ^ (unsigned)mono_ms();
	CURL *h = curl_easy_init(); /* kept: its connection is reused */

	pthread_mutex_lock(&u->mu);
	for (;;) {
		struct push_item *it = next_item(u);
		if (!it)
			break;
		pthread_mutex_unlock(&u->mu);
		char err[256] = "";
		long status = 0;
		enum outcome o = h ? send_one(u, h, it, &status, err, sizeof(err))
				   : (snprintf(err, sizeof(err), "libcurl could not start"), RETRY);
		pthread_mutex_lock(&u->mu);
		u->attempts++;
		u->retries += it->attempts > 0;
		it->attempts++;
		u->last_status = status;
		if (o == SENT) {
			if (u->failing)
				log_info("push: uploads succeed again after %u failures",
					 u->failing);
			u->failing = 0;
			u->next_try_ms = 0;
			u->sent++;
			u->sent_bytes += it->len;
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			u->last_success_ns =
				(uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
			push_item_free(it);
			continue;
		}
		u->failures++;
		snprintf(u->last_error, sizeof(u->last_error), "%s", err);
		if (o == REJECTED) {
			log_warn("push: the store refused a profile: %s", err);
			u->dropped_rejected++;
			push_item_free(it);
			continue;
		}
		if (!u->failing++)
			log_warn("push: upload failed, retrying with backoff: %s", err);
		u->next_try_ms = mono_ms() + backoff_ms(u, &seed);
		/* back at the head: it is still the oldest */
		it->next = u->head;
		u->head = it;
		if (!u->tail)
			u->tail = it;
		u->n++;
		u->bytes += it->len;
		enforce_bounds(u);
	}
	pthread_mutex_unlock(&u->mu);
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

int upload_new(const struct config_push *cfg, const char *name, uint32_t sample_hz,
	       struct upload **ret, char *why, size_t whylen)
{
	pthread_condattr_t ca;
	struct upload *u;
	int r = -EINVAL;

	if (cfg->bearer_token_file[0] && cfg->basic_auth_file[0]) {
		snprintf(why, whylen, "push.bearer_token_file and push.basic_auth_file both set");
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	snprintf(u->url, sizeof(u->url), "%s", cfg->url);
	snprintf(u->name, sizeof(u->name), "%s", name);
	u->sample_hz = sample_hz;
	u->queue_max = cfg->queue_max;
	u->queue_max_bytes = cfg->queue_max_bytes;
	u->timeout_ms = cfg->timeout_ms;
	u->retry_max_ms = cfg->retry_max_ms;
	snprintf(u->ca_file, sizeof(u->ca_file), "%s", cfg->ca_file);
	if (cfg->tenant[0])
		snprintf(u->tenant, sizeof(u->tenant), "X-Scope-OrgID: %s", cfg->tenant);
	if (cfg->bearer_token_file[0] &&
	    !(u->bearer = read_secret(cfg->bearer_token_file, why, whylen)))
		goto fail;
	if (cfg->basic_auth_file[0]) {
		if (!(u->userpwd = read_secret(cfg->basic_auth_file, why, whylen)))
			goto fail;
		if (!strchr(u->userpwd, ':')) {
			snprintf(why, whylen, "%s: expected \"user:password\"",
				 cfg->basic_auth_file);
			goto fail;
		}
	}
	if ((u->bearer || u->userpwd) && !strncmp(u->url, "http://", 7))
		log_warn("push: credentials go to %s in clear text (not https)", u->url);
	/* before any thread of ours uses libcurl (not thread-safe itself) */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(why, whylen, "libcurl failed to initialize");
		r = -EIO;
		goto fail;
	}
	pthread_mutex_init(&u->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = -pthread_create(&u->thread, NULL, upload_main, u);
	if (r < 0) {
		snprintf(why, whylen, "starting the upload thread: %s", strerror(-r));
		upload_free(u);
		return r;
	}
	u->started = true;
	*ret = u;
	return 0;
fail:
	free(u->bearer);
	free(u->userpwd);
	free(u);
	return r;
}

void upload_stop(struct upload *u)
{
	if (!u)
		return;
	atomic_store(&u->abort, true);
	pthread_mutex_lock(&u->mu);
	u->stop = true;
	pthread_cond_signal(&u->cv);
	pthread_mutex_unlock(&u->mu);
}

void upload_free(struct upload *u)
{
	if (!u)
		return;
	upload_stop(u);
	if (u->started)
		pthread_join(u->thread, NULL);
	while (u->head)
		drop_head(u);
	pthread_cond_destroy(&u->cv);
	pthread_mutex_destroy(&u->mu);
	curl_global_cleanup();
	if (u->bearer)
		explicit_bzero(u->bearer, strlen(u->bearer));
	if (u->userpwd)
		explicit_bzero(u->userpwd, strlen(u->userpwd));
	free(u->bearer);
	free(u->userpwd);
	free(u);
}

void upload_status(struct upload *u, cJSON *o, bool privileged)
{
	pthread_mutex_lock(&u->mu);
	json_add_u64(o, "queued", u->n);
	json_add_u64(o, "queued_bytes", u->bytes);
	json_add_u64(o, "sent", u->sent);
	json_add_u64(o, "sent_bytes", u->sent_bytes);
	json_add_u64(o, "attempts", u->attempts);
	json_add_u64(o, "failures", u->failures);
	json_add_u64(o, "retries", u->retries);
	json_add_u64(o, "dropped_queue_full", u->dropped_full);
	json_add_u64(o, "dropped_rejected", u->dropped_rejected);
	json_add_u64(o, "consecutive_failures", u->failing);
	json_add_u64(o, "last_http_status", (uint64_t)(u->last_status > 0 ? u->last_status : 0));
	json_add_u64(o, "last_success_ns", u->last_success_ns);
	if (privileged)
		cJSON_AddStringToObject(o, "last_error", u->last_error);
	pthread_mutex_unlock(&u->mu);
}
