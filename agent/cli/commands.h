/* The subcommands. Each lives in cmd_<name>.c: the front-end layer that
 * parses options, calls the silent modules, logs once and returns an exit
 * code from exitcode.h. */
#pragma once
#include "diag.h"
#include "inventory.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"

#include <getopt.h>

int cmd_validate(int argc, char **argv);
int cmd_inventory(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_boot(int argc, char **argv);
int cmd_kexec(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_image(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_bootcount(int argc, char **argv);
int cmd_network(int argc, char **argv);

/* The one option loop of every subcommand, over its static const struct
 * option options[]: getopt_long() from argv[0] on, each option in c.
 * optind = 0 is glibc's full reset (musl's too), so the loop starts afresh
 * whoever parsed before it. shortopts: "+..." stops at the first operand
 * (bench, inventory), else getopt permutes (validate: an option after the
 * files is an option, not a file named "--strict"). */
#define CMD_FOREACH_OPTION(c, argc, argv, shortopts, options) \
        for (optind = 0; ((c) = getopt_long((argc), (argv), (shortopts), (options), NULL)) >= 0;)

/* Shared by the subcommands (cmd_common.c); they log and return an exit code. */
/* After the option loop: at most max operands (argv[optind] on) are taken;
 * the first one more is refused by name ("unexpected argument 'X' (see
 * 'kiln CMD --help')", CMD argv[0]): KILN_EXIT_USAGE, else KILN_EXIT_OK. */
int cmd_check_operands(int argc, char **argv, int max);
/* Loads and validates the spec at path (its problems printed, sorted) and
 * registers its secrets; KILN_EXIT_OK and *ret set, or the exit code. Its
 * warnings are printed too, and with strict they make it fail (exit 2).
 * ret_diags (may be NULL) receives the diagnostics. */
int cmd_load_spec(const char *path, bool strict, struct spec **ret, struct diags *ret_diags);
/* After a plan was made: prints its warnings (clears diags); with strict any
 * warning refuses it (KILN_EXIT_REFUSED, said once), else KILN_EXIT_OK. */
int cmd_plan_warnings(struct diags *diags, bool strict, const char *verb, const char *subject);
/* After plan_decide() (or plan_build()) returned r < 0: prints the
 * problems in diags (sorted; clears them), says why once and returns the exit
 * code: -EPERM refused, -EINVAL bad spec, else failure. verb: "apply",
 * "plan"; subject: the spec's path or URL. */
int cmd_plan_failed(int r, struct diags *diags, const char *verb, const char *subject);
/* The inventory of a recording (path: a saved JSON file or a /sys + /dev
 * tree, as inventory_load() takes it) or, path NULL, of this machine;
 * KILN_EXIT_OK and *ret set, or the exit code. */
int cmd_load_inventory(const char *path, struct inventory **ret);
/* The exit code of apply_run()'s result: KILN_EXIT_OK for 0, else the one
 * the failing step's kind maps to (KILN_EXIT_STORAGE for storage steps,
 * KILN_EXIT_IMAGE, KILN_EXIT_BENCH, KILN_EXIT_REGISTER; KILN_EXIT_FAILURE
 * for anything else). */
int cmd_apply_exit_code(int r, enum plan_step_kind failed);

/* What `kiln apply` and `kiln boot` share (cmd_run.c): decide (plan_decide:
 * the fresh plan and a resume candidate), check (the hostname; then the
 * command's check; then the spec's ca: beside ca_file), prepare (the
 * command's), run (apply_run with the fresh plan as the resume's fallback).
 * Returns the exit code; run's plans stay for the caller (cmd_run_done). */
struct apply_options;
struct apply_inspection;
struct cmd_run {
        const char *subject;    /* the spec's path or URL, as messages name it */
        bool dry_run;
        bool fresh;             /* --fresh, kiln.fresh: never resume */
        const char *ca_file;    /* kiln.ca= (a file) or NULL */
        bool ca_in_dry_run;     /* kiln boot: a dry run loads the spec's ca: too */
        bool inspect;           /* this machine's disks (no recorded inventory): a resume candidate is
                                 * looked at read-only first (apply_inspect(): a finished node?) */
        const char *reinstall;  /* kiln.reinstall= or --reinstall (beats the spec's reinstall:) */
        bool marks;             /* a disk with the finished-install mark stops the run unless a new reinstall
                                 * token is given (kiln boot; kiln apply checks it itself without --yes) */
        /* the disks hold a finished run of this plan (PLAN_VERDICT_BOOT_INSTALLED): what the
         * command does instead of a run, with the stack still up read-only (in); an exit code */
        int (*installed)(struct cmd_run *run, struct apply_inspection *in, const char *why, void *userdata);
        /* before the CA: the command's own refusals (apply: --yes); an exit code */
        int (*check)(struct cmd_run *run, void *userdata);
        /* after every check, before apply_run: what the command adds (boot:
         * the run report, its events, the finish file); an exit code */
        int (*prepare)(struct cmd_run *run, struct apply_options *ao, void *userdata);
        void *userdata;
        /* set by cmd_run_spec() */
        struct plan *plan;      /* the fresh plan */
        struct plan *resume;    /* the resume candidate, or NULL */
        bool unwiped;           /* resuming over disks the spec may not wipe: no fresh fallback */
        char *spec_ca;          /* RUN_DIR/spec-ca.pem when the spec has a ca: */
        const char *run_ca;     /* the CA file of the run (spec_ca or ca_file) */
        enum plan_step_kind failed;
        enum plan_verdict verdict;
        bool inspected;         /* the verdict was made from a read-only look (marks included) */
};
int cmd_run_spec(const struct spec *spec, const struct inventory *inv, struct cmd_run *run, struct apply_options *ao);
void cmd_run_done(struct cmd_run *run);
/* The verdict of the finished-install marks on run->plan's inventory
 * (plan_verdict() without a record), acted on: KILN_EXIT_REFUSED with the
 * refusal logged, or KILN_EXIT_OK (RUN; REINSTALL: the resume dropped). */
int cmd_run_marks(struct cmd_run *run, const char *token);
/* A spec from memory (kiln boot: fetched), checked as cmd_load_spec() checks
 * a file: problems printed sorted, secrets registered. name: how messages
 * name it. */
int cmd_parse_spec(const char *name, const char *data, size_t len, struct spec **ret);
