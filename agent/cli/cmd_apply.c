/* kiln apply SPEC [--inventory FILE] [--dry-run] [--yes]
 * Builds the plan for this machine (or a recorded inventory) and runs it.
 * Destroying data needs --yes; --dry-run only prints the steps. */
#include "apply.h"
#include "commands.h"
#include "exitcode.h"
#include "inventory.h"
#include "log.h"
#include "plan.h"
#include "spec.h"

#include <getopt.h>

static void apply_usage(FILE *f) {
        fprintf(f, "usage: kiln apply SPEC [--inventory FILE|DIR] [--dry-run] [--yes] [--fresh]\n"
                   "  --dry-run        print the steps, change nothing\n"
                   "  --fresh          never resume an interrupted run: install from scratch\n"
                   "  --yes            confirm that the listed data may be destroyed\n"
                   "  --inventory X    plan against a recorded inventory (JSON or tree)\n");
}

struct apply_check {
        const char *spec_path;
        bool yes;
};

/* Destroying data needs --yes (a dry run needs nothing). */
static int apply_check(struct cmd_run *run, void *userdata) {
        const struct apply_check *chk = userdata;
        const struct plan *plan = run->plan;
        if (run->dry_run || chk->yes)
                return KILN_EXIT_OK;
        /* what exists now, per disk; not the devices the run would make and format */
        _cleanup_strbuf_ struct strbuf lost = STRBUF_INIT;
        bool destroys = !run->unwiped && plan->n_disks > 0;
        int r;
        if (destroys && (r = plan_losses_text(plan, &lost)) < 0)
                return log_error_errno(r, "failed to describe the plan of '%s': %m", chk->spec_path), KILN_EXIT_FAILURE;
        if (destroys) {
                log_redact(lost.buf);
                fprintf(stderr, "this run would destroy, on %zu disk%s:\n%s", plan->n_disks,
                        plan->n_disks == 1 ? "" : "s", strbuf_str(&lost));
        }
        log_error("refusing to apply '%s' without --yes (it writes to the disks%s); "
                  "see what it would do with --dry-run", chk->spec_path, destroys ? " and destroys the data above" : "");
        return KILN_EXIT_REFUSED;
}

int cmd_apply(int argc, char **argv) {
        static const struct option longopts[] = {
                { "inventory", required_argument, NULL, 'i' },
                { "dry-run", no_argument, NULL, 'n' },
                { "yes", no_argument, NULL, 'y' },
                { "fresh", no_argument, NULL, 'f' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *inv_path = NULL;
        bool dry_run = false, yes = false, fresh = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "i:nyfh", longopts, NULL)) >= 0)
                switch (c) {
                case 'i': inv_path = optarg; break;
                case 'n': dry_run = true; break;
                case 'y': yes = true; break;
                case 'f': fresh = true; break;
                case 'h': apply_usage(stdout); return KILN_EXIT_OK;
                default: apply_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (optind + 1 != argc) {
                apply_usage(stderr);
                return KILN_EXIT_USAGE;
        }
        const char *spec_path = argv[optind];

        _cleanup_spec_free_ struct spec *spec = NULL;
        int r = cmd_load_spec(spec_path, &spec);
        if (r != KILN_EXIT_OK)
                return r;

        _cleanup_inventory_free_ struct inventory *inv = NULL;
        r = cmd_load_inventory(inv_path, &inv);
        if (r != KILN_EXIT_OK)
                return r;

        struct apply_check chk = { .spec_path = spec_path, .yes = yes };
        _cleanup_(cmd_run_done) struct cmd_run run = {
                .subject = spec_path, .dry_run = dry_run, .fresh = fresh, .check = apply_check, .userdata = &chk,
        };
        struct apply_options opts = {};
        return cmd_run_spec(spec, inv, &run, &opts);
}
