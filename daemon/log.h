/* SPDX-License-Identifier: MIT */
/* Logging to stderr with sd-daemon priority prefixes (journald reads them). */
#ifndef GPUPROF_LOG_H
#define GPUPROF_LOG_H

extern int log_verbosity; /* 0 warn, 1 info, 2 debug */

void log_msg(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...) log_msg(3, __VA_ARGS__)
#define log_warn(...) log_msg(4, __VA_ARGS__)
#define log_info(...) log_msg(6, __VA_ARGS__)
#define log_debug(...) log_msg(7, __VA_ARGS__)

#endif
