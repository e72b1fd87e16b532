/* kiln apply SPEC [--inventory FILE] [--dry-run] [--yes]
 * Builds the plan for this machine (or a recorded inventory) and runs it.
 * Destroying data needs --yes; --dry-run only prints the steps. */
#include "apply.h"
#include "ca.h"
#include "commands.h"
#include "exitcode.h"
#include "inventory.h"
#include "log.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"

#include <getopt.h>

static void apply_usage(FILE *f) {
        fprintf(f, "usage: kiln apply SPEC [--inventory FILE|DIR] [--dry-run] [--yes] [--fresh]\n"
                   "  --dry-run        print the steps, change nothing\n"
                   "  --fresh          never resume an interrupted run: install from scratch\n"
                   "  --yes            confirm that the listed data may be destroyed\n"
                   "  --inventory X    plan against a recorded inventory (JSON or tree)\n");
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

        struct diags diags = {};
        _cleanup_plan_free_ struct plan *plan = NULL;
        _cleanup_plan_free_ struct plan *resume = NULL;
        bool unwiped;   /* resuming over disks the spec may not wipe: no fresh fallback */
        r = resume_plan_decide(spec, inv, fresh, &diags, &plan, &resume, &unwiped);
        if (r < 0)
                return cmd_plan_failed(r, &diags, "apply", spec_path);
        (void) cmd_plan_warnings(&diags, false, "apply", spec_path);
        /* a resume plan is a candidate until its progress record is read: apply says which, once */
        if (resume)
                log_info("%s", resume->mode_why);
        else
                log_info("fresh install: %s", plan->mode_why);

        if (!dry_run && spec->hostname && !plan->hostname) {
                log_error("refusing to apply '%s': hostname '%s' needs ${%s}, %s%s%s; nothing was written",
                          spec_path, spec->hostname, plan->hostname_missing ? plan->hostname_missing : "?",
                          plan->hostname_placeholder ? "but this machine reports the placeholder '" :
                                                       "which this machine's inventory lacks",
                          plan->hostname_placeholder ?: "", plan->hostname_placeholder ? "'" : "");
                return KILN_EXIT_BAD_SPEC;
        }
        if (!dry_run && !yes) {
                /* what exists now, per disk; not the devices the run would make and format */
                _cleanup_strbuf_ struct strbuf lost = STRBUF_INIT;
                bool destroys = !unwiped && plan->n_disks > 0;
                if (destroys && (r = plan_losses_text(plan, &lost)) < 0)
                        return log_error_errno(r, "failed to describe the plan of '%s': %m", spec_path), KILN_EXIT_FAILURE;
                if (destroys) {
                        log_redact(lost.buf);
                        fprintf(stderr, "this run would destroy, on %zu disk%s:\n%s", plan->n_disks,
                                plan->n_disks == 1 ? "" : "s", strbuf_str(&lost));
                }
                log_error("refusing to apply '%s' without --yes (it writes to the disks%s); "
                          "see what it would do with --dry-run", spec_path, destroys ? " and destroys the data above" : "");
                return KILN_EXIT_REFUSED;
        }

        /* the spec's ca: serves every HTTPS transfer of the run (keys, image, controller) */
        _cleanup_free_ char *ca_file = NULL;
        _cleanup_strbuf_ struct strbuf ca_err = STRBUF_INIT;
        if (!dry_run && (r = ca_for_spec(spec->ca, NULL, &ca_file, &ca_err)) < 0)
                return log_error_errno(r, "failed to load the CA of spec '%s' (%s): %s; nothing was written", spec_path,
                                       ca_describe(spec->ca, (char[URL_DISPLAY_MAX]) {}), strbuf_why(&ca_err, r)), KILN_EXIT_FETCH;

        /* the hostname as plan_build expanded it: a dry run shows what `kiln plan` shows */
        struct apply_options opts = { .dry_run = dry_run, .hostname = plan->hostname, .fallback = resume && !unwiped ? plan : NULL,
                                      .ca_file = ca_file };
        enum plan_step_kind failed;
        r = apply_run(resume ? resume : plan, &opts, &failed);
        return cmd_apply_exit_code(r, failed);
}
