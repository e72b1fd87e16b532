/* The kiln.* options on the kernel command line (docs/guide.md "Netboot"),
 * following Ignition's and Anaconda's conventions:
 *
 *   kiln.spec=URL           the host spec; ${mac} ${uuid} ${serial} ${hostname}
 *                           are expanded by kiln boot (iPXE may expand
 *                           ${net0/mac} before the kernel sees it)
 *   kiln.spec.sha256=HEX    pin the spec's content
 *   kiln.ca=URL-or-path     an extra CA bundle (PEM) for HTTPS
 *   kiln.report=PATH        where /init writes the guest report (the rig)
 *   kiln.debug              a shell on failure (never on by default)
 *   kiln.fresh              never resume an interrupted run (docs/apply.md)
 *   kiln.reinstall=TOKEN    the operator's reinstall token: a finished node
 *                           is installed again when it differs from the one
 *                           on its disks (docs/reinstall.md)
 *   kiln.enlist=URL         no spec for this machine (or kiln.spec= answers
 *                           404): post the inventory there and power off
 *                           (docs/register.md "Enlist")
 *   kiln.enlist.timeout=SEC how long enlisting may try (default 300)
 *
 * cmdline_parse() is pure: it reads a string. Words are separated by
 * whitespace; double quotes group (kiln.spec="http://h/a b" or
 * "kiln.spec=..."), as the kernel's own parser does. A key given twice
 * takes the last value, as for kernel parameters. */
#pragma once
#include "util.h"

#define CMDLINE_MAX_BYTES 65536u        /* /proc/cmdline is at most a few KiB */

struct kiln_cmdline {
        char *spec;
        char *spec_sha256;      /* lower-cased */
        char *ca;
        char *report;
        char *enlist;
        char *reinstall;        /* kiln.reinstall=, checked by spec_reinstall_problem() */
        unsigned enlist_timeout_sec;    /* 0 = not given */
        bool debug;
        bool fresh;
        char **unknown;         /* NULL-terminated kiln.* keys this kiln does not know */
};

/* 0 on success; -EINVAL with *ret_bad (may be NULL) set to the offending
 * word when a kiln.* value is malformed (empty value, sha256 not 64 hex
 * digits, kiln.enlist.timeout not a number of seconds from 1 to 86400,
 * kiln.reinstall= not a token (spec_reinstall_problem()),
 * kiln.debug with a value other than 1/0/yes/no/true/false/on/off,
 * unterminated quote); -E2BIG for input over CMDLINE_MAX_BYTES; -ENOMEM. */
int cmdline_parse(const char *text, struct kiln_cmdline *ret, char **ret_bad);
/* Reads PROCFS/cmdline, then cmdline_parse(). */
int cmdline_read(const char *procfs, struct kiln_cmdline *ret, char **ret_bad);
void cmdline_done(struct kiln_cmdline *c);
static inline void cmdline_donep(struct kiln_cmdline *c) { cmdline_done(c); }
#define _cleanup_cmdline_ _cleanup_(cmdline_donep)
