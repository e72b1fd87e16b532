/* Run a helper program (mdadm, lvm, mkfs.*) with an argv, never through a
 * shell. The child gets stdin from /dev/null, a minimal fixed environment
 * (no secrets can leak through it) and no inherited descriptors; its stderr
 * (and optionally stdout) is captured up to a bound so failures can say why. */
#pragma once
#include "strbuf.h"
#include "util.h"

#define EXEC_CAPTURE_MAX (16u * 1024u)        /* stderr kept for the error message */
#define EXEC_TIMEOUT_DEFAULT_USEC (300ull * 1000000ull)
#define EXEC_LOG_LINE_MAX 512u                /* log_lines: longer lines are cut there ("…" marks it) */
#define EXEC_LOG_LINES_MAX 200u               /* log_lines: then one "… N more lines" at the end */

struct exec_options {
        uint64_t timeout_usec;          /* 0 = EXEC_TIMEOUT_DEFAULT_USEC; the child is killed after it */
        struct strbuf *out;             /* stdout captured here if not NULL (bounded by out->max) */
        struct strbuf *err;             /* stderr captured here if not NULL (last EXEC_CAPTURE_MAX bytes) */
        const char *root;               /* run the program chrooted here (argv[0] is a path inside it) */
        const void *in;                 /* written to the child's stdin through a pipe (then closed); */
        size_t in_len;                  /* NULL: stdin is /dev/null. A key may pass this way, never argv/env */
        /* stdout into a caller's buffer (locked memory for a secret) instead of out:
         * at most out_secret_size bytes, more is -E2BIG; the length in *out_secret_len */
        char *out_secret;
        size_t out_secret_size, *out_secret_len;
        /* Log each complete line of the child's stderr (and of its stdout when out
         * does not take it) at info level as it arrives, as "PROG: line" (PROG is
         * argv[0]'s last part), within EXEC_LOG_LINE_MAX and EXEC_LOG_LINES_MAX; err
         * still gets the whole tail. Refused (-EINVAL) with out_secret: a call whose
         * stdout is a secret never logs what its child prints. */
        bool log_lines;
        const char *log_name;           /* log_lines: PROG in its lines instead of argv[0]'s last part */
};

/* Returns 0 when the program ran and exited 0; -ETIMEDOUT when it was killed
 * after the timeout; -ENOENT if it cannot be executed; -EIO when it exited
 * non-zero or died on a signal (*ret_status, if given, holds the wait status);
 * -EINVAL for log_lines with out_secret. */
int exec_argv(const char *const *argv, const struct exec_options *opts, int *ret_status);

/* "mdadm --create /dev/md/x ..." for logs (argv holds no secrets by rule). */
int exec_argv_to_string(const char *const *argv, struct strbuf *out);

/* The last line of captured stderr, trimmed, for one-line error messages. */
const char *exec_last_line(struct strbuf *err);
