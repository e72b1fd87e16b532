/* kiln plan SPEC [--inventory FILE | --sysroot DIR] [--json]
 * Prints the steps `kiln apply` would run on this (or a recorded) machine.
 * Never writes: the spec is parsed, the inventory probed or loaded, and
 * plan_build() makes every safety refusal. */
#include "commands.h"
#include "exitcode.h"
#include "inventory.h"
#include "log.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"
#include <getopt.h>

static void usage(FILE *f) {
        fprintf(f, "usage: kiln plan SPEC [--inventory FILE | --sysroot DIR] [--json] [--fresh]\n"
                   "  --inventory FILE  plan for the machine `kiln inventory --json` saved in FILE\n"
                   "  --sysroot DIR     plan for a recorded /sys + /dev tree (or a saved JSON file)\n"
                   "  --json            print the plan as JSON\n"
                   "  --fresh           the plan of a fresh install even if an interrupted run could resume\n"
                   "exit codes: 0 planned, 2 bad spec, 3 refused (a disk rule or a disk is not safe to use)\n");
}

int cmd_plan(int argc, char **argv) {
        static const struct option options[] = {
                { "inventory", required_argument, NULL, 'i' },
                { "sysroot", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "fresh", no_argument, NULL, 'f' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *inventory_file = NULL, *sysroot = NULL;
        bool json = false, fresh = false;
        int c;
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'i': inventory_file = optarg; break;
                case 's': sysroot = optarg; break;
                case 'j': json = true; break;
                case 'f': fresh = true; break;
                case 'h': usage(stdout); return KILN_EXIT_OK;
                default: usage(stderr); return KILN_EXIT_USAGE;
                }
        if (optind + 1 != argc || (inventory_file && sysroot)) {
                usage(stderr);
                return KILN_EXIT_USAGE;
        }
        const char *spec_path = argv[optind];

        _cleanup_spec_free_ struct spec *spec = NULL;
        int r = cmd_load_spec(spec_path, &spec);
        if (r != KILN_EXIT_OK)
                return r;

        _cleanup_inventory_free_ struct inventory *inv = NULL;
        r = cmd_load_inventory(inventory_file ? inventory_file : sysroot, &inv);
        if (r != KILN_EXIT_OK)
                return r;

        _cleanup_(diags_clear) struct diags diags = {};
        _cleanup_plan_free_ struct plan *plan = NULL;
        _cleanup_plan_free_ struct plan *resume = NULL;
        bool unwiped;
        r = resume_plan_decide(spec, inv, fresh, &diags, &plan, &resume, &unwiped);
        if (r < 0)
                return cmd_plan_failed(r, &diags, "plan", spec_path);
        const struct plan *shown = resume ? resume : plan;
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        r = json ? plan_to_json(shown, &out) : plan_to_text(shown, &out);
        if (r < 0) {
                log_error_errno(r, "failed to format the plan of '%s': %m", spec_path);
                return KILN_EXIT_FAILURE;
        }
        if (out.buf)
                log_redact(out.buf);
        if (fputs(strbuf_str(&out), stdout) < 0 || fflush(stdout) != 0) {
                log_error_errno(-EIO, "failed to write the plan: %m");
                return KILN_EXIT_FAILURE;
        }
        return KILN_EXIT_OK;
}
