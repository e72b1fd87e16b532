/* kiln's log. Library-like modules never log; the stage that decides does,
 * once, and returns the error:
 *     return log_error_errno(r, "failed to open LUKS device '%s': %m", name);
 * %m prints strerror(-r). Every line passes through the secret filter: any
 * string registered with log_register_secret() is replaced by "[redacted]",
 * so a secret cannot reach the console, the log tail or a report by accident. */
#pragma once
#include "util.h"

enum log_level {
        LOG_LEVEL_ERR,
        LOG_LEVEL_WARN,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
};

void log_set_max_level(enum log_level level);
enum log_level log_get_max_level(void);
/* Prefix lines with monotonic seconds since start (boot mode, console). */
void log_set_timestamps(bool on);

/* Returns -abs(err) (or -EIO if err is 0 and level is ERR) so callers can "return log_...". */
int log_emit(enum log_level level, int err, const char *fmt, ...) _printf_(3, 4);

#define log_error_errno(err, ...) log_emit(LOG_LEVEL_ERR, (err), __VA_ARGS__)
#define log_warning_errno(err, ...) log_emit(LOG_LEVEL_WARN, (err), __VA_ARGS__)
#define log_error(...) log_emit(LOG_LEVEL_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_emit(LOG_LEVEL_WARN, 0, __VA_ARGS__)
#define log_info(...) log_emit(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_emit(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)

/* Secrets: registered copies are kept in locked memory and wiped at exit.
 * Strings shorter than 4 bytes are not registered (they would redact noise). */
int log_register_secret(const char *secret);
/* Redact registered secrets from s in place (used for reports and events too). */
void log_redact(char *s);
void log_forget_secrets(void);

/* The last lines of the log (already redacted), for failure reports.
 * Returns a newly allocated string, lines separated by '\n'. */
char *log_tail(size_t max_lines);

/* Optional sink that sees every emitted line (e.g. to forward as events). */
typedef void (*log_sink_t)(enum log_level level, const char *line, void *userdata);
void log_set_sink(log_sink_t sink, void *userdata);
