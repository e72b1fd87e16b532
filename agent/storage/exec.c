#include "exec.h"

#include "log.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

static const char *const exec_env[] = {
        "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG=C",
        "LC_ALL=C",
        "LVM_SUPPRESS_FD_WARNINGS=1",
        NULL,
};

static void exec_child(const char *prog, const char *const *argv, const char *root, int in_fd, int out_fd, int err_fd) {
        int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0 || dup2(in_fd >= 0 ? in_fd : null_fd, STDIN_FILENO) < 0)
                _exit(127);
        if (dup2(out_fd >= 0 ? out_fd : null_fd, STDOUT_FILENO) < 0)
                _exit(127);
        if (dup2(err_fd >= 0 ? err_fd : null_fd, STDERR_FILENO) < 0)
                _exit(127);
        /* Everything kiln opens is O_CLOEXEC; this also catches library descriptors. */
        (void) close_range(3, ~0U, 0);
        if (root && (chroot(root) < 0 || chdir("/") < 0))
                _exit(127);
        signal(SIGPIPE, SIG_DFL);
        execve(prog, (char *const *) argv, (char *const *) exec_env);
        _exit(127);
}

/* Keep at most max bytes: for stderr, the tail is what explains the failure. */
static int capture_append(struct strbuf *sb, const char *buf, size_t n, bool keep_tail) {
        size_t max = keep_tail ? EXEC_CAPTURE_MAX : (sb->max ? sb->max : 64u * 1024u * 1024u);
        if (!keep_tail)
                return strbuf_add(sb, buf, n);
        if (n >= max) {
                strbuf_reset(sb);
                return strbuf_add(sb, buf + n - max, max);
        }
        if (sb->len + n > max) {
                size_t drop = sb->len + n - max;
                memmove(sb->buf, sb->buf + drop, sb->len - drop);
                sb->len -= drop;
                sb->buf[sb->len] = '\0';
        }
        return strbuf_add(sb, buf, n);
}

/* log_lines: one stream's unfinished line, and the count both streams share. */
struct line_log {
        char buf[EXEC_LOG_LINE_MAX + 1];
        size_t len;
        bool cut;               /* the line went past EXEC_LOG_LINE_MAX; the rest is dropped */
};
struct line_log_count {
        const char *prog;       /* argv[0]'s last part: a line that starts "prog: " names itself */
        const char *name;       /* what the log calls it (prog, or exec_options.log_name) */
        unsigned logged, dropped;
};

static void line_log_flush(struct line_log *l, struct line_log_count *c) {
        if (l->len == 0 && !l->cut)
                return;
        if (c->logged < EXEC_LOG_LINES_MAX) {
                l->buf[l->len] = '\0';
                size_t n = strlen(c->prog);     /* "update-initramfs: Generating ..." names itself already */
                bool named = strncmp(l->buf, c->prog, n) == 0 && l->buf[n] == ':' && l->buf[n + 1] == ' ';
                log_info("%s: %s%s", c->name, named ? l->buf + n + 2 : l->buf, l->cut ? " …" : "");
                c->logged++;
        } else
                c->dropped++;
        l->len = 0;
        l->cut = false;
}

static void line_log_add(struct line_log *l, struct line_log_count *c, const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) buf[i];
                if (ch == '\n') {
                        line_log_flush(l, c);
                        continue;
                }
                if (ch == '\r')        /* a progress counter rewriting its line: keep the last state */
                        l->len = 0;
                else if (l->len < EXEC_LOG_LINE_MAX)
                        l->buf[l->len++] = ch < 0x20 || ch == 0x7f ? '?' : (char) ch;
                else
                        l->cut = true;
        }
}

/* The configured path, or, if nothing is there (a /sbin that is not merged
 * into /usr), the same program name in the usual directories. */
static const char *resolve_program(const char *root, const char *path, char *buf, size_t len) {
        static const char *const dirs[] = { "/usr/sbin", "/usr/bin", "/sbin", "/bin" };
        char full[4096];
        if (!root) {
                if (access(path, X_OK) == 0)
                        return path;
        } else if ((size_t) snprintf(full, sizeof full, "%s%s", root, path) < sizeof full && access(full, X_OK) == 0) {
                snprintf(buf, len, "%s", path);
                return buf;
        }
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(buf, len, "%s/%s", dirs[i], base);
                if ((size_t) snprintf(full, sizeof full, "%s%s", root ? root : "", buf) < sizeof full &&
                    access(full, X_OK) == 0)
                        return buf;
        }
        return NULL;
}

/* fork, exec and one poll loop over stdin, stdout and stderr with the
 * deadline: about 140 lines kept together so that every descriptor, the
 * child and its reaping have one cleanup path (a child is never left
 * running, a pipe never left open), whichever way the loop ends. */
int exec_argv(const char *const *argv, const struct exec_options *opts, int *ret_status) {
        static const struct exec_options no_opts = { 0 };
        if (!argv || !argv[0])
                return -EINVAL;
        if (!opts)
                opts = &no_opts;
        char resolved[4096];
        const char *prog = resolve_program(opts->root, argv[0], resolved, sizeof resolved);
        if (!prog) {
                if (opts->err)
                        (void) strbuf_addf(opts->err, "cannot execute '%s'%s%s", argv[0], opts->root ? " in " : "",
                                           opts->root ? opts->root : "");
                return -ENOENT;
        }
        if (opts->log_lines && opts->out_secret)
                return -EINVAL;         /* the rule: what prints a secret is never logged */
        bool want_out = opts->out || opts->out_secret || opts->log_lines;
        const char *base = strrchr(argv[0], '/');
        struct line_log_count count = { .prog = base ? base + 1 : argv[0] };
        count.name = opts->log_name ? opts->log_name : count.prog;
        struct line_log lines[2] = {};    /* stderr, stdout */
        if (opts->out_secret_len)
                *opts->out_secret_len = 0;

        int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 }, in_pipe[2] = { -1, -1 };
        int r = 0;
        if ((want_out && pipe2(out_pipe, O_CLOEXEC) < 0) || pipe2(err_pipe, O_CLOEXEC) < 0 ||
            (opts->in && pipe2(in_pipe, O_CLOEXEC) < 0))
                r = -errno;
        pid_t pid = r < 0 ? -1 : fork();
        if (r == 0 && pid < 0)
                r = -errno;
        if (r < 0) {
                int fds[] = { out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_pipe[0], in_pipe[1] };
                for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                        if (fds[i] >= 0)
                                close(fds[i]);
                return r;
        }
        if (pid == 0)
                exec_child(prog, argv, opts->root, in_pipe[0], out_pipe[1], err_pipe[1]);

        close(err_pipe[1]);
        if (out_pipe[1] >= 0)
                close(out_pipe[1]);
        if (in_pipe[0] >= 0) {
                close(in_pipe[0]);
                (void) fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
        }
        size_t in_done = 0;
        if (opts->in && opts->in_len == 0) {
                close(in_pipe[1]);
                in_pipe[1] = -1;
        }

        uint64_t timeout = opts->timeout_usec ? opts->timeout_usec : EXEC_TIMEOUT_DEFAULT_USEC;
        uint64_t deadline = now_usec() + timeout;
        struct pollfd fds[3] = {
                { .fd = err_pipe[0], .events = POLLIN },
                { .fd = out_pipe[0], .events = POLLIN },
                { .fd = in_pipe[1], .events = POLLOUT },
        };
        bool timed_out = false;
        char buf[4096];
        for (;;) {
                if (fds[0].fd < 0 && fds[1].fd < 0)
                        break;
                uint64_t now = now_usec();
                if (now >= deadline) {
                        timed_out = true;
                        kill(pid, SIGKILL);
                        break;
                }
                uint64_t left_ms = (deadline - now) / 1000 + 1;
                int n = poll(fds, 3, left_ms > 60000 ? 60000 : (int) left_ms);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        kill(pid, SIGKILL);
                        break;
                }
                if (fds[2].fd >= 0 && fds[2].revents) {
                        ssize_t k = (fds[2].revents & POLLOUT)
                                ? write(fds[2].fd, (const char *) opts->in + in_done, opts->in_len - in_done) : -1;
                        if (k > 0)
                                in_done += (size_t) k;
                        if ((k < 0 && errno != EINTR && errno != EAGAIN) || in_done == opts->in_len) {
                                close(fds[2].fd);       /* done, or the child closed its stdin */
                                fds[2].fd = -1;
                        }
                }
                for (size_t i = 0; i < 2; i++) {
                        if (fds[i].fd < 0 || !fds[i].revents)
                                continue;
                        ssize_t k = read(fds[i].fd, buf, sizeof buf);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k <= 0) {
                                close(fds[i].fd);
                                fds[i].fd = -1;
                                continue;
                        }
                        if (opts->log_lines && (i == 0 || !opts->out))
                                line_log_add(&lines[i], &count, buf, (size_t) k);
                        if (i == 1 && opts->out_secret) {
                                size_t have = *opts->out_secret_len;
                                if (r == 0 && (size_t) k > opts->out_secret_size - have)
                                        r = -E2BIG;
                                if (r == 0) {
                                        memcpy(opts->out_secret + have, buf, (size_t) k);
                                        *opts->out_secret_len = have + (size_t) k;
                                }
                                continue;
                        }
                        struct strbuf *sb = i == 0 ? opts->err : opts->out;
                        if (sb && r == 0) {
                                int q = capture_append(sb, buf, (size_t) k, i == 0);
                                if (q < 0 && i == 1)
                                        r = q;   /* stdout over its bound: keep draining, fail at the end */
                        }
                }
        }
        explicit_wipe(buf, sizeof buf);         /* it may have held a secret the child printed */
        if (opts->log_lines) {
                for (size_t i = 0; i < 2; i++)
                        line_log_flush(&lines[i], &count);      /* a last line without its newline */
                if (count.dropped)
                        log_info("%s: … %u more lines", count.name, count.dropped);
        }
        for (size_t i = 0; i < 3; i++)
                if (fds[i].fd >= 0)
                        close(fds[i].fd);

        int status = 0;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (ret_status)
                *ret_status = status;
        if (timed_out)
                return -ETIMEDOUT;
        if (r < 0)
                return r;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return -EIO;
        return 0;
}

int exec_argv_to_string(const char *const *argv, struct strbuf *out) {
        for (size_t i = 0; argv && argv[i]; i++) {
                int r = strbuf_addf(out, "%s%s", i ? " " : "", argv[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

const char *exec_last_line(struct strbuf *err) {
        if (!err || !err->buf)
                return "";
        char *s = err->buf;
        size_t n = err->len;
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
                s[--n] = '\0';
        err->len = n;
        char *nl = strrchr(s, '\n');
        return nl ? nl + 1 : s;
}
