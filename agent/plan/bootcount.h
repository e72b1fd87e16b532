/* The installed system's boot counter (docs/reinstall.md "A boot that
 * failed"): how many boots began since the last one that got far enough
 * (multi-user, and the network up when the spec has one). The installed
 * system writes it (`kiln bootcount`, apply/bootcount.h); kiln's read-only
 * look at a netbooted finished node reads it and decides with
 * bootcount_verdict(). The one place of its format and of the rule. Pure.
 *
 * The file (kiln_paths.t_bootcount, /boot/kiln/bootcount in the installed
 * root), one `key=value` a line, '#' comments:
 *   version=1
 *   attempts=N                boots begun since the last good one
 *   last_attempt=TIME         when the latest began (UTC, 2026-12-03T05:40:00Z)
 *   last_good=TIME            when the latest good one was marked (absent: never)
 * Unknown keys are refused (a later kiln's file is not guessed at). */
#pragma once
#include "strbuf.h"

#include <stdbool.h>
#include <time.h>

#define BOOTCOUNT_VERSION 1
#define BOOTCOUNT_MAX_BYTES 4096u
#define BOOTCOUNT_ATTEMPTS_MAX 1000000u        /* beyond it, attempt stops counting */
#define BOOTCOUNT_TIME_LEN 20                  /* 2026-12-03T05:40:00Z */

struct bootcount {
        unsigned attempts;
        char last_attempt[BOOTCOUNT_TIME_LEN + 1];     /* "" when never */
        char last_good[BOOTCOUNT_TIME_LEN + 1];        /* "" when never */
};

/* text into *ret (set only on success); -EBADMSG with err saying where
 * ("line 2: 'attempts' is not a number: 'x'", "no 'attempts'") otherwise. */
int bootcount_parse(const char *text, struct bootcount *ret, struct strbuf *err);
/* The file's text of bc. */
int bootcount_format(const struct bootcount *bc, struct strbuf *out);

/* A counter that cannot be read as one (bootcount_parse() failed): taken as
 * one boot that did not end well. Something wrote the file and no good boot
 * replaced it since; but a damaged file alone does not stop a node: the look
 * reports it (boot-failed, with the parse error) and boots; `attempt` counts
 * on from it, `good` replaces it. */
void bootcount_unreadable(struct bootcount *ret);

/* The installed system's updates (now: the time to record). */
void bootcount_attempt(struct bootcount *bc, time_t now);
void bootcount_good(struct bootcount *bc, time_t now);

/* What the look does with the counter it read (bc NULL: no file). */
enum bootcount_verdict {
        BOOTCOUNT_BOOT,         /* no failed boot: boot as always, no event */
        BOOTCOUNT_BOOT_REPORT,  /* failed boots below the limit: post boot-failed, boot */
        BOOTCOUNT_STOP,         /* at the limit: post boot-failed, do not boot, write nothing */
};
enum bootcount_verdict bootcount_verdict(const struct bootcount *bc, unsigned limit);
const char *bootcount_verdict_name(enum bootcount_verdict v);

/* UTC text of t (BOOTCOUNT_TIME_LEN characters) into buf. */
void bootcount_time(time_t t, char buf[static BOOTCOUNT_TIME_LEN + 1]);
