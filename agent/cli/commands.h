/* The subcommands. Each lives in cmd_<name>.c: the front-end layer that
 * parses options, calls the silent modules, logs once and returns an exit
 * code from exitcode.h. */
#pragma once
#include "diag.h"
#include "inventory.h"
#include "plan.h"
#include "spec.h"

int cmd_validate(int argc, char **argv);
int cmd_inventory(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_boot(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_image(int argc, char **argv);

/* Shared by the subcommands (cmd_common.c); both log and return an exit code. */
/* Loads and validates the spec at path (its problems printed, sorted) and
 * registers its secrets; KILN_EXIT_OK and *ret set, or the exit code. */
int cmd_load_spec(const char *path, struct spec **ret);
/* The same; its warnings are printed too, and with strict they make it fail
 * (exit 2). ret_diags (may be NULL) receives the diagnostics. */
int cmd_load_spec_full(const char *path, bool strict, struct spec **ret, struct diags *ret_diags);
/* After a plan was made: prints its warnings (clears diags); with strict any
 * warning refuses it (KILN_EXIT_REFUSED, said once), else KILN_EXIT_OK. */
int cmd_plan_warnings(struct diags *diags, bool strict, const char *verb, const char *subject);
/* After resume_plan_decide() (or plan_build()) returned r < 0: prints the
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
