/* kiln's documented exit codes. Stable: operators and controllers script
 * against them. The one table is KILN_EXIT_CODES below: the enum, the list in
 * `kiln help` (main.c) and the check of docs/exit-codes.md
 * (tests/unit/test-exit-codes.c: the same codes, names and order) are made
 * from it. Exit codes exist only in the command layer: each cmd_*() maps the
 * negative errno (and for apply and boot the failing step's kind,
 * cmd_apply_exit_code()) to one of these; no stage below cli/ includes this
 * header. */
#pragma once

/* X(enum suffix, number, name as docs/exit-codes.md and `kiln help` say it, what it means) */
#define KILN_EXIT_CODES(X) \
        X(OK,        0,  "ok",             "everything asked for was done") \
        X(FAILURE,   1,  "failure",        "anything not listed below") \
        X(BAD_SPEC,  2,  "bad spec",       "the spec does not parse or validate") \
        X(REFUSED,   3,  "refused",        "safety refusal: disk selection, signatures, in use") \
        X(STORAGE,   4,  "storage",        "a storage step failed, or (register --firstboot) required storage is not up") \
        X(IMAGE,     5,  "image",          "image download, verification or extraction failed") \
        X(BENCH,     6,  "benchmark gate", "the crypt benchmark gate failed") \
        X(REGISTER,  7,  "registration",   "registration with the controller failed") \
        X(FETCH,     8,  "fetch",          "the spec (or key) could not be fetched or verified") \
        X(BOOT_FAILED, 9, "boot failed",   "a finished node's installed system failed to boot failed_boot_limit times: not booted, nothing written") \
        X(USAGE,     64, "usage",          "bad command line (EX_USAGE)")

enum kiln_exit {
#define KILN_EXIT_ENUM(id, num, name, meaning) KILN_EXIT_##id = num,
        KILN_EXIT_CODES(KILN_EXIT_ENUM)
#undef KILN_EXIT_ENUM
};

struct kiln_exit_code {
        int code;
        const char *name;
        const char *meaning;
};

static const struct kiln_exit_code kiln_exit_codes[] = {
#define KILN_EXIT_ROW(id, num, name, meaning) { num, name, meaning },
        KILN_EXIT_CODES(KILN_EXIT_ROW)
#undef KILN_EXIT_ROW
};
