/* exec_argv()'s log_lines (agent/storage/exec.c): a child's lines reach
 * kiln's log as they come, not when it exits; the per-line and line-count
 * bounds hold; stdout that is data (out) or a secret (out_secret) is never
 * logged; the stderr tail is still captured whole for the error message. */
#include "exec.h"
#include "log.h"
#include "tap.h"

#define MAX_SEEN 400

static struct {
        char *line[MAX_SEEN];
        uint64_t at[MAX_SEEN];
        size_t n;
} seen;

static void sink(enum log_level level, const char *line, void *userdata) {
        (void) userdata;
        if (level == LOG_LEVEL_INFO && seen.n < MAX_SEEN) {
                seen.at[seen.n] = now_usec();
                seen.line[seen.n++] = strdup(line);
        }
}

static void seen_reset(void) {
        for (size_t i = 0; i < seen.n; i++)
                free(seen.line[i]);
        seen.n = 0;
}

static ssize_t seen_find(const char *line) {
        for (size_t i = 0; i < seen.n; i++)
                if (streq(seen.line[i], line))
                        return (ssize_t) i;
        return -1;
}

static int sh(const char *script, struct exec_options *o) {
        const char *argv[] = { "/bin/sh", "-c", script, NULL };
        return exec_argv(argv, o, NULL);
}

int main(void) {
        log_set_sink(sink, NULL);
        log_set_max_level(LOG_LEVEL_INFO);

        /* lines arrive while the child still runs: it prints, sleeps 1 s, prints */
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        struct exec_options o = { .log_lines = true, .err = &err };
        CHECK_INT(sh("echo 'first line'; echo 'to stderr' >&2; sleep 1; printf 'last, no newline'", &o), 0);
        uint64_t exited = now_usec();
        ssize_t first = seen_find("sh: first line"), e = seen_find("sh: to stderr"), last = seen_find("sh: last, no newline");
        CHECK(first >= 0 && e >= 0 && last >= 0);
        if (first >= 0)
                CHECK(exited - seen.at[first] >= 800000);       /* logged ~1 s before the child exited */
        if (e >= 0)
                CHECK(exited - seen.at[e] >= 800000);
        CHECK_STR(strbuf_str(&err), "to stderr\n");             /* the error tail as before */
        CHECK_INT(seen.n, 3);
        seen_reset();

        /* the bounds: a long line is cut, a flood of lines ends in one summary line,
         * and the stderr tail still has the very last line for the error message */
        strbuf_reset(&err);
        CHECK_INT(sh("head -c 2000 /dev/zero | tr '\\0' x >&2; echo >&2; i=0; while [ $i -lt 300 ]; do echo line $i >&2; "
                     "i=$((i+1)); done; exit 3", &o), -EIO);
        CHECK_INT(seen.n, EXEC_LOG_LINES_MAX + 1);
        CHECK_INT(strlen(seen.line[0]), strlen("sh: ") + EXEC_LOG_LINE_MAX + strlen(" …"));
        CHECK_STR(seen.line[EXEC_LOG_LINES_MAX - 1], "sh: line 198");
        CHECK_STR(seen.line[EXEC_LOG_LINES_MAX], "sh: … 101 more lines");
        CHECK_STR(exec_last_line(&err), "line 299");
        seen_reset();

        /* control characters are shown as '?', a carriage return keeps the line's last state */
        CHECK_INT(sh("printf '10%%\\r50%%\\r100%% done\\n'; printf 'a\\033[1mb\\n'", &o), 0);
        CHECK(seen_find("sh: 100% done") >= 0);
        CHECK(seen_find("sh: a?[1mb") >= 0);
        seen_reset();

        /* a line that names its program already ("update-initramfs: Generating ...") gets no second name */
        CHECK_INT(sh("echo 'sh: names itself'; echo 'shell: does not'", &o), 0);
        CHECK(seen_find("sh: names itself") >= 0);
        CHECK(seen_find("sh: shell: does not") >= 0);
        seen_reset();

        /* log_name: the lines carry the caller's name (two grub-installs at once), that one included */
        struct exec_options on = { .log_lines = true, .log_name = "sh two" };
        CHECK_INT(sh("echo 'sh: names itself'; echo plain", &on), 0);
        CHECK(seen_find("sh two: names itself") >= 0);
        CHECK(seen_find("sh two: plain") >= 0);
        CHECK_INT(seen.n, 2);
        seen_reset();

        /* stdout that the caller takes as data is not logged; stderr still is */
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        struct exec_options od = { .log_lines = true, .out = &out };
        CHECK_INT(sh("echo data; echo note >&2", &od), 0);
        CHECK_STR(strbuf_str(&out), "data\n");
        CHECK_INT(seen.n, 1);
        CHECK(seen_find("sh: note") >= 0);
        seen_reset();

        /* a registered secret is redacted like every other log line */
        CHECK_INT(log_register_secret("s3cret-passphrase"), 0);
        CHECK_INT(sh("echo 'key is s3cret-passphrase'", &o), 0);
        CHECK(seen_find("sh: key is [redacted]") >= 0);
        seen_reset();

        /* the rule: a call whose stdout is a secret never logs; refused before it runs */
        char secret[64];
        size_t len = 0;
        char marker[] = "/tmp/kiln-test-exec-XXXXXX";
        int fd = mkstemp(marker);
        CHECK(fd >= 0);
        close(fd);
        unlink(marker);
        _cleanup_free_ char *script = strdupf("touch %s; echo secret", marker);
        struct exec_options os = { .log_lines = true, .out_secret = secret, .out_secret_size = sizeof secret,
                                   .out_secret_len = &len };
        CHECK_INT(sh(script, &os), -EINVAL);
        CHECK(access(marker, F_OK) < 0);        /* nothing ran */
        CHECK_INT(seen.n, 0);
        os.log_lines = false;                   /* without log_lines: the secret into the buffer, nothing logged */
        CHECK_INT(sh(script, &os), 0);
        CHECK_INT(len, 7);
        CHECK_INT(seen.n, 0);
        unlink(marker);

        /* without log_lines nothing is logged */
        struct exec_options quiet = { .err = &err };
        CHECK_INT(sh("echo out; echo err >&2", &quiet), 0);
        CHECK_INT(seen.n, 0);
        log_forget_secrets();
        return TEST_DONE();
}
