#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <sys/mman.h>

#define LOG_TAIL_LINES 200
#define MAX_SECRETS 32

static enum log_level max_level = LOG_LEVEL_INFO;
static bool timestamps;
static uint64_t start_usec;
static char *tail[LOG_TAIL_LINES];
static size_t tail_next;
static char *secrets[MAX_SECRETS];
static size_t n_secrets;
static log_sink_t sink;
static void *sink_userdata;
/* A line, its tail entry and its sink call as one: helpers may run in two
 * threads at once (the boot-loader step's two grub-installs). */
static pthread_mutex_t emit_lock = PTHREAD_MUTEX_INITIALIZER;

void log_set_max_level(enum log_level level) { max_level = level; }
enum log_level log_get_max_level(void) { return max_level; }
void log_set_timestamps(bool on) {
        timestamps = on;
        if (!start_usec)
                start_usec = now_usec();
}
void log_set_sink(log_sink_t s, void *userdata) {
        sink = s;
        sink_userdata = userdata;
}

int log_register_secret(const char *secret) {
        if (!secret || strlen(secret) < 4)
                return 0;
        for (size_t i = 0; i < n_secrets; i++)
                if (streq(secrets[i], secret))
                        return 0;
        if (n_secrets >= MAX_SECRETS)
                return -ENOSPC;
        size_t n = strlen(secret) + 1;
        char *copy = malloc(n);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, secret, n);
        (void) mlock(copy, n);   /* best effort: keep it out of swap */
        secrets[n_secrets++] = copy;
        return 0;
}

void log_forget_secrets(void) {
        for (size_t i = 0; i < n_secrets; i++) {
                explicit_wipe(secrets[i], strlen(secrets[i]));
                free(secrets[i]);
                secrets[i] = NULL;
        }
        n_secrets = 0;
}

void log_redact(char *s) {
        static const char mask[] = "[redacted]";
        if (!s)
                return;
        for (size_t i = 0; i < n_secrets; i++) {
                size_t sl = strlen(secrets[i]);
                char *p;
                /* The mask is never longer than what it replaces when sl >= len(mask);
                 * for shorter secrets, overwrite with '*' to keep the length. */
                while ((p = strstr(s, secrets[i]))) {
                        if (sl >= sizeof(mask) - 1) {
                                memcpy(p, mask, sizeof(mask) - 1);
                                memmove(p + sizeof(mask) - 1, p + sl, strlen(p + sl) + 1);
                        } else
                                memset(p, '*', sl);
                }
        }
}

static void tail_push(const char *line) {
        free(tail[tail_next]);
        tail[tail_next] = strdup(line);
        tail_next = (tail_next + 1) % LOG_TAIL_LINES;
}

static char *log_tail_locked(size_t max_lines) {
        if (max_lines > LOG_TAIL_LINES)
                max_lines = LOG_TAIL_LINES;
        size_t total = 1;
        for (size_t i = 0; i < LOG_TAIL_LINES; i++)
                if (tail[i])
                        total += strlen(tail[i]) + 1;
        char *out = malloc(total);
        if (!out)
                return NULL;
        out[0] = 0;
        size_t have = 0;
        for (size_t i = 0; i < LOG_TAIL_LINES; i++)
                if (tail[(tail_next + i) % LOG_TAIL_LINES])
                        have++;
        size_t skip = have > max_lines ? have - max_lines : 0, pos = 0;
        for (size_t i = 0; i < LOG_TAIL_LINES; i++) {
                const char *l = tail[(tail_next + i) % LOG_TAIL_LINES];
                if (!l)
                        continue;
                if (skip) {
                        skip--;
                        continue;
                }
                size_t n = strlen(l);
                memcpy(out + pos, l, n);
                out[pos + n] = '\n';
                pos += n + 1;
        }
        out[pos] = 0;
        return out;
}

char *log_tail(size_t max_lines) {
        pthread_mutex_lock(&emit_lock);
        char *out = log_tail_locked(max_lines);
        pthread_mutex_unlock(&emit_lock);
        return out;
}

int log_emit(enum log_level level, int err, const char *fmt, ...) {
        int saved_errno = errno;
        int ret = err > 0 ? -err : err;
        if (ret == 0 && level == LOG_LEVEL_ERR)
                ret = -EIO;
        if (level > max_level && level != LOG_LEVEL_ERR)
                return ret;

        char line[4096];
        va_list ap;
        va_start(ap, fmt);
        errno = err < 0 ? -err : err;       /* for %m */
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        log_redact(line);

        static const char *prefix[] = { "error: ", "warning: ", "", "debug: " };
        pthread_mutex_lock(&emit_lock);
        if (timestamps) {
                uint64_t t = now_usec() - start_usec;
                fprintf(stderr, "[%5llu.%03llu] %s%s\n", (unsigned long long) (t / 1000000),
                        (unsigned long long) (t / 1000 % 1000), prefix[level], line);
        } else
                fprintf(stderr, "%s%s\n", prefix[level], line);
        tail_push(line);
        if (sink)
                sink(level, line, sink_userdata);
        pthread_mutex_unlock(&emit_lock);
        errno = saved_errno;
        return ret;
}
