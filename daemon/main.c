// SPDX-License-Identifier: MIT
/* gpuprofd: orchestration only — options, configuration, start-up, shutdown. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include "capreg.h"
#include "collector.h"
#include "collect/registry.h"
#include "gpd.h"
#include "analysis/critpath/cpcache.h"
#include "rpc/tlcache.h"
#include "gpuprof-build.h"
#include "hooks.h"
#include "jobs.h"
#include "log.h"
#include "metrics/metrics.h"
#include "push/push.h"
#include "rpc/rpc.h"
#include "store/store.h"
#include "alloc/bigalloc.h"
#include "timeline/timeline.h"
#include "pyframes/pyreg.h"
#include "unwind/unwind.h"

#include <gpuprof/protocol.h>

static const char usage_text[] =
	"Usage: gpuprofd [OPTIONS]\n"
	"\n"
	"The gpuprof daemon: keeps its collectors (CPU stack sampling, GPU launch\n"
	"probes, driver and hardware samplers where present) attached all the time,\n"
	"streams what they see into a bounded in-memory store, and serves captures and\n"
	"analyses over JSON-RPC on a Unix socket (see gpuprofctl(1), docs/protocol.md).\n"
	"\n"
	"Options:\n"
	"  -f, --foreground       stay in the foreground (implied under systemd)\n"
	"  -s, --socket PATH      socket to listen on when not socket-activated\n"
	"                         (default: $GPUPROF_SOCKET, else " GPUPROF_DEFAULT_SOCKET ")\n"
	"  -d, --state-dir DIR    where captures are persisted\n"
	"                         (default " GPUPROF_DEFAULT_STATE_DIR ")\n"
	"  -c, --config FILE      configuration file (default " GPUPROF_DEFAULT_CONFIG
	", if present)\n"
	"  -v, --verbose          more logging (repeat for debug)\n"
	"  -V, --version          print the version and exit\n"
	"  -h, --help             print this help and exit\n"
	"\n"
	"Precedence: built-in defaults < config file < $GPUPROF_SOCKET < options.\n"
	"Signals: SIGTERM/SIGINT stop the daemon cleanly.\n"
	"Exit status: 0 after a clean stop, 1 on a start-up error, 2 on a usage error.\n"
	"See gpuprofd(8) and, for every configuration key, gpuprofd.conf(5).\n";

struct opts {
	bool foreground;
	const char *socket;
	const char *state_dir;
	const char *config;
	int verbose;
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"foreground", no_argument, NULL, 'f'},
		{"socket", required_argument, NULL, 's'},
		{"state-dir", required_argument, NULL, 'd'},
		{"config", required_argument, NULL, 'c'},
		{"verbose", no_argument, NULL, 'v'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "fs:d:c:vVh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			o->foreground = true;
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'd':
			o->state_dir = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'V':
			printf("gpuprofd %s (protocol %d)\n", GPUPROF_VERSION,
			       GPUPROF_PROTOCOL_VERSION);
			exit(0);
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuprofd: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static int build_config(const struct opts *o, struct config *cfg)
{
	char err[512];
	config_defaults(cfg);
	const char *path = o->config ? o->config : GPUPROF_DEFAULT_CONFIG;
	int r = config_load(cfg, path, err, sizeof(err));
	if (r < 0 && !(r == -ENOENT && !o->config)) {
		fprintf(stderr, "gpuprofd: %s\n", err);
		return r;
	}
	const char *env = getenv(GPUPROF_SOCKET_ENV);
	const char *sock = o->socket ? o->socket : (env && *env ? env : NULL);
	if (sock) {
		if (strlen(sock) >= sizeof(cfg->socket_path)) {
			fprintf(stderr, "gpuprofd: socket path too long: %s\n", sock);
			return -ENAMETOOLONG;
		}
		snprintf(cfg->socket_path, sizeof(cfg->socket_path), "%s", sock);
	}
	if (o->state_dir) {
		if (strlen(o->state_dir) >= sizeof(cfg->state_dir)) {
			fprintf(stderr, "gpuprofd: state dir path too long\n");
			return -ENAMETOOLONG;
		}
		snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", o->state_dir);
	}
	if (o->verbose > cfg->verbosity)
		cfg->verbosity = o->verbose;
	return 0;
}

static void daemonize(void)
{
	pid_t p = fork();
	if (p < 0)
		exit(1);
	if (p > 0)
		_exit(0);
	setsid();
	p = fork();
	if (p < 0)
		exit(1);
	if (p > 0)
		_exit(0);
	if (chdir("/") < 0)
		exit(1);
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
}

/* libbpf's own messages go through our log (and its priorities). */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log_verbosity < 2)
		return 0;
	char buf[512];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	size_t n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	/* Most of libbpf's messages already start with its name: one prefix. */
	const char *msg = strncmp(buf, "libbpf: ", 8) ? buf : buf + 8;
	log_msg(level == LIBBPF_WARN ? 4 : level == LIBBPF_INFO ? 6 : 7, "libbpf: %s", msg);
	return 0;
}

static uv_signal_t sig_term, sig_int, sig_hup;
static uv_timer_t watchdog_timer, status_timer;
static struct metrics *metrics; /* the Prometheus endpoint; NULL when off */

static void notify_status(struct gpd *g, const char *extra)
{
	unsigned attached = 0;
	for (unsigned i = 0; i < g->ncollectors; i++)
		attached += g->collectors[i]->state == COLLECTOR_ATTACHED;
	sd_notifyf(0, "%sSTATUS=%u/%u collectors attached, %zu captures, %u clients", extra,
		   attached, g->ncollectors, capreg_count(g->captures), rpc_server_clients(g->rpc));
}

static void on_status_timer(uv_timer_t *t)
{
	notify_status(t->data, "");
	bigalloc_trim(false); /* scratch blocks unused for 10 s go back */
}

static void on_watchdog(uv_timer_t *t)
{
	sd_notify(0, "WATCHDOG=1");
}

static void walk_close(uv_handle_t *h, void *arg)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void shutdown_daemon(struct gpd *g)
{
	if (g->stopping)
		return;
	g->stopping = true;
	log_info("stopping");
	sd_notify(0, "STOPPING=1\nSTATUS=Stopping");
	uv_signal_stop(&sig_term);
	uv_signal_stop(&sig_int);
	uv_signal_stop(&sig_hup);
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
	uv_close((uv_handle_t *)&sig_hup, NULL);
	uv_timer_stop(&watchdog_timer);
	uv_timer_stop(&status_timer);
	uv_close((uv_handle_t *)&watchdog_timer, NULL);
	uv_close((uv_handle_t *)&status_timer, NULL);
	uv_timer_stop(&g->trim_timer);
	uv_close((uv_handle_t *)&g->trim_timer, NULL);
	metrics_stop(metrics);
	metrics = NULL;
	/* jobs waiting on clients' descriptors end now, not at their
	 * io_timeout: the loop below ends when they have */
	jobs_cancel_all(g);
	push_stop(g->push);
	collectors_stop(g);
	rpc_server_close(g->rpc);
	capreg_close(g->captures);
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct gpd *g = s->data;
	if (signum == SIGHUP) {
		log_info("SIGHUP ignored: restart the daemon to apply configuration changes");
		return;
	}
	shutdown_daemon(g);
}

static int listen_socket(struct gpd *g)
{
	int n = sd_listen_fds(1);
	if (n > 1) {
		log_err("expected one socket from the service manager, got %d", n);
		return -EINVAL;
	}
	if (n == 1) {
		int fd = SD_LISTEN_FDS_START;
		if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_err("inherited fd is not a listening Unix stream socket");
			return -EINVAL;
		}
		log_info("using the socket passed by the service manager");
		return rpc_server_listen_fd(g->rpc, fd);
	}
	int r = rpc_server_bind(g->rpc, g->cfg.socket_path, g->cfg.socket_mode);
	if (r < 0)
		log_err("Failed to listen on %s: %s", g->cfg.socket_path, strerror(-r));
	else
		log_info("listening on %s", g->cfg.socket_path);
	return r;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	static struct gpd g;
	int r;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (build_config(&o, &g.cfg) < 0)
		return 1;
	log_verbosity = g.cfg.verbosity;
	libbpf_set_print(libbpf_log);
	signal(SIGPIPE, SIG_IGN);
	bool under_systemd = getenv("NOTIFY_SOCKET") || getenv("LISTEN_FDS");
	if (!o.foreground && !under_systemd)
		daemonize();

	g.loop = uv_default_loop();
	g.start_mono_ns = gpd_now_ns();
	g.jobs_mem.max = g.cfg.jobs_max_bytes;
	struct store_config scfg = {.budget_bytes = g.cfg.store_budget_bytes};
	r = store_new(&scfg, &g.store);
	if (r < 0) {
		log_err("Failed to create the store: %s", strerror(-r));
		return 1;
	}
	if (g.cfg.stack_bytes || g.cfg.gpu_stack_bytes) {
		struct unwind_opts uo = {.budget_bytes = g.cfg.unwind_max_bytes};

		r = unwind_new(&uo, &g.unwinder);
		if (r < 0) {
			log_err("Failed to create the unwinder: %s", strerror(-r));
			return 1;
		}
	}
	if (g.cfg.python_frames) {
		struct pyreg_opts po = {.budget_bytes = g.cfg.python_max_bytes, .loop = g.loop};

		r = pyreg_new(&po, &g.pyreg);
		if (r < 0)
			log_warn("No Python frames in stacks: %s", strerror(-r));
	}
	r = capreg_new(&g, &g.captures);
	if (r < 0) {
		log_err("Failed to open the state directory %s: %s", g.cfg.state_dir, strerror(-r));
		return 1;
	}
	bigalloc_cache_config(g.cfg.analysis_scratch_bytes, 10ull * 1000000000);
	uv_timer_init(g.loop, &g.trim_timer); /* armed when the last job ends (jobs.c) */
	g.trim_timer.data = &g;
	r = tlcache_new(g.cfg.analysis_cache_bytes, &g.tlcache);
	if (r < 0) {
		log_err("Failed to create the analysis cache: %s", strerror(-r));
		return 1;
	}
	r = cp_cache_new(g.cfg.graph_cache_bytes, &g.cpcache);
	if (r < 0) {
		log_err("Failed to create the critical-path graph cache: %s", strerror(-r));
		return 1;
	}
	r = rpc_server_new(&g, &g.rpc);
	if (r < 0 || listen_socket(&g) < 0)
		return 1;

	uv_signal_init(g.loop, &sig_term);
	uv_signal_init(g.loop, &sig_int);
	uv_signal_init(g.loop, &sig_hup);
	sig_term.data = sig_int.data = sig_hup.data = &g;
	uv_signal_start(&sig_term, on_signal, SIGTERM);
	uv_signal_start(&sig_int, on_signal, SIGINT);
	uv_signal_start(&sig_hup, on_signal, SIGHUP);

	collectors_open(&g);
	hooks_init(&g);
	if (push_start(&g, g.symbolizer, hooks_push_window, &g, &g.push) < 0)
		return 1;
	collectors_start(&g);
	if (metrics_start(&g, &metrics) < 0)
		return 1;

	uv_timer_init(g.loop, &watchdog_timer);
	uv_timer_init(g.loop, &status_timer);
	status_timer.data = watchdog_timer.data = &g;
	uint64_t wd_usec = 0;
	if (sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec > 0) {
		uint64_t ms = wd_usec / 2000;
		uv_timer_start(&watchdog_timer, on_watchdog, ms ? ms : 1, ms ? ms : 1);
		log_info("watchdog: pinging every %llu ms", (unsigned long long)(ms ? ms : 1));
	}
	uv_timer_start(&status_timer, on_status_timer, 10000, 10000);
	notify_status(&g, "READY=1\n");
	log_info("ready (gpuprofd %s, pid %d)", GPUPROF_VERSION, (int)getpid());

	uv_run(g.loop, UV_RUN_DEFAULT);

	/* Everything is closed or closing; let jobs and close callbacks finish.
	 * The push builder's window reads the cupti collector's cubins. */
	push_join(g.push);
	collectors_free(&g);
	uv_walk(g.loop, walk_close, NULL);
	uv_run(g.loop, UV_RUN_DEFAULT);
	r = uv_loop_close(g.loop);
	if (r < 0)
		log_err("event loop did not close cleanly: %s", uv_strerror(r));
	push_free(g.push); /* before the symbolizer it uses goes */
	hooks_finish(&g);
	capreg_free(g.captures);
	rpc_server_free(g.rpc);
	tlcache_free(g.tlcache);
	cp_cache_free(g.cpcache);
	store_free(g.store);
	unwind_free(g.unwinder);
	pyreg_free(g.pyreg);
	log_info("stopped");
	return r < 0 ? 1 : 0;
}
