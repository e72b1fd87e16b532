/* kiln plan SPEC [--inventory FILE | --sysroot DIR] [--json] [--fresh] [--strict]
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
#include "json.h"

static void usage(FILE *f) {
        fprintf(f, "usage: kiln plan SPEC [--inventory FILE | --sysroot DIR] [--json] [--fresh] [--strict]\n"
                   "shows every step `kiln apply` would run, the device of each and what it destroys;\n"
                   "writes nothing (docs/plan.md)\n"
                   "  --inventory FILE  plan for the machine `kiln inventory --json` saved in FILE\n"
                   "  --sysroot DIR     plan for a recorded /sys + /dev tree (or a saved JSON file)\n"
                   "  --json            print the plan as JSON; a refusal too, as one object:\n"
                   "                    {\"refused\", \"exit_code\", \"kind\", \"rule\", \"disk\", \"reason\", \"problems\"}\n"
                   "  --fresh           the plan of a fresh install even if an interrupted run could resume\n"
                   "  --strict          warnings (of the spec: exit 2; of the plan: exit 3) are errors\n"
                   "exit codes: 0 planned, 2 bad spec, 3 refused (a disk rule or a disk is not safe to use)\n");
}

/* kiln plan --json that makes no plan: one JSON object on stdout instead,
 * with the first error's disk rule, disk and message, and every problem
 * (docs/plan.md "JSON"). Returns the exit code it is given. */
static int print_refusal(int exit_code, const struct diags *d) {
        const struct diag *first = NULL;
        for (size_t i = 0; i < d->n && !first; i++)
                first = &d->items[i];   /* warnings only (--strict): the first of them */
        for (size_t i = 0; i < d->n; i++)
                if (!d->items[i].warning) {
                        first = &d->items[i];
                        break;
                }
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        int r = strbuf_addf(&out, "{\"refused\":true,\"exit_code\":%d,\"kind\":\"%s\",\"rule\":", exit_code,
                            exit_code == KILN_EXIT_REFUSED ? "refused" : "bad-spec");
        if (r >= 0)
                r = first && first->rule ? strbuf_add_json_string(&out, first->rule) : strbuf_adds(&out, "null");
        if (r >= 0)
                r = strbuf_adds(&out, ",\"disk\":");
        if (r >= 0)
                r = first && first->disk ? strbuf_add_json_string(&out, first->disk) : strbuf_adds(&out, "null");
        if (r >= 0)
                r = strbuf_adds(&out, ",\"reason\":");
        if (r >= 0)
                r = first ? strbuf_add_json_string(&out, first->message) : strbuf_adds(&out, "null");
        if (r >= 0)
                r = strbuf_adds(&out, ",\"problems\":");
        if (r >= 0)
                r = diags_to_json(d, &out);
        if (r >= 0)
                r = strbuf_adds(&out, "}\n");
        if (r < 0)
                return log_error_errno(r, "failed to format the refusal: %m"), exit_code;
        log_redact(out.buf);
        fputs(out.buf, stdout);
        fflush(stdout);
        return exit_code;
}

/* kiln plan --json over marked disks: the plan's object gets
 * "finished_install": {"marked": [{"disk", "mark"}], "verdict", "why"} */
static int marks_json(struct strbuf *out, const struct plan_mark *m, size_t n, enum plan_verdict v, const char *why) {
        json_object *f = json_object_new_object(), *list = json_object_new_array();
        int r = 0;
        for (size_t i = 0; i < n; i++) {
                char what[64];
                json_object *e = json_object_new_object();
                json_set_str(e, "disk", m[i].disk->path, &r);
                json_set_str(e, "mark", mark_describe(&m[i].mark, what, sizeof what), &r);
                json_append(list, json_done(e, r), &r);
        }
        json_set(f, "marked", list, &r);
        json_set_str(f, "verdict", plan_verdict_name(v), &r);
        json_set_str(f, "why", why, &r);
        return json_text_add(out, "finished_install", json_done(f, r));
}

/* The plan's own warnings (not the spec's, which kiln validate shows) in the
 * JSON plan too, as "warnings": [{file, line, col, severity, message, rule,
 * disk}], when there are any: a program reading stdout would not see stderr. */
static int warnings_json(struct strbuf *out, const struct diags *d) {
        _cleanup_strbuf_ struct strbuf w = STRBUF_INIT;
        json_object *list = NULL;
        int r = diags_to_json(d, &w);
        if (r < 0 || (r = json_parse(strbuf_str(&w), w.len, &list)) < 0)
                return r;
        return json_text_add(out, "warnings", list);
}

int cmd_plan(int argc, char **argv) {
        static const struct option options[] = {
                { "inventory", required_argument, NULL, 'i' },
                { "sysroot", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "fresh", no_argument, NULL, 'f' },
                { "strict", no_argument, NULL, 'S' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *inventory_file = NULL, *sysroot = NULL;
        bool json = false, fresh = false, strict = false;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'i': inventory_file = optarg; break;
                case 's': sysroot = optarg; break;
                case 'j': json = true; break;
                case 'f': fresh = true; break;
                case 'S': strict = true; break;
                case 'h': usage(stdout); return KILN_EXIT_OK;
                default: usage(stderr); return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if (optind + 1 != argc || (inventory_file && sysroot)) {
                usage(stderr);
                return KILN_EXIT_USAGE;
        }
        const char *spec_path = argv[optind];

        _cleanup_spec_free_ struct spec *spec = NULL;
        _cleanup_(diags_clear) struct diags spec_diags = {};
        int r = cmd_load_spec(spec_path, strict, &spec, json ? &spec_diags : NULL);
        if (r != KILN_EXIT_OK)
                return json && spec_diags.n ? print_refusal(r, &spec_diags) : r;

        _cleanup_inventory_free_ struct inventory *inv = NULL;
        r = cmd_load_inventory(inventory_file ? inventory_file : sysroot, &inv);
        if (r != KILN_EXIT_OK)
                return r;

        _cleanup_(diags_clear) struct diags diags = {};
        _cleanup_plan_free_ struct plan *plan = NULL;
        _cleanup_plan_free_ struct plan *resume = NULL;
        bool unwiped;
        r = plan_decide(spec, inv, fresh, &diags, &plan, &resume, &unwiped);
        if (r < 0) {
                if (json && (r == -EPERM || r == -EINVAL))
                        (void) print_refusal(r == -EPERM ? KILN_EXIT_REFUSED : KILN_EXIT_BAD_SPEC, &diags);
                return cmd_plan_failed(r, &diags, "plan", spec_path);
        }
        if (json && strict && diags_warnings(&diags, 0) > 0)
                (void) print_refusal(KILN_EXIT_REFUSED, &diags);
        const struct plan *shown = resume ? resume : plan;
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        r = json ? plan_to_json(shown, &out) : plan_to_text(shown, &out);
        if (r >= 0 && json && diags_warnings(&diags, 0) > 0) {
                diags_sort(&diags);
                r = warnings_json(&out, &diags);
        }
        int rc = cmd_plan_warnings(&diags, strict, "plan", spec_path);
        if (rc != KILN_EXIT_OK)
                return rc;
        if (r < 0) {
                log_error_errno(r, "failed to format the plan of '%s': %m", spec_path);
                return KILN_EXIT_FAILURE;
        }
        /* a finished install on this machine's disks (any of them): what kiln boot would decide */
        _cleanup_free_ struct plan_mark *marks = NULL;
        size_t n_marks = 0;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        enum plan_verdict v = PLAN_VERDICT_RUN;
        if (r >= 0 && (r = plan_marks(inv, &marks, &n_marks)) >= 0 && n_marks > 0)
                r = plan_verdict(plan, NULL, plan_reinstall_token(spec, NULL), &v, &why);
        if (r >= 0 && n_marks > 0)
                r = json ? marks_json(&out, marks, n_marks, v, strbuf_str(&why))
                         : strbuf_addf(&out, "finished install: %s\nverdict: %s (kiln boot %s; kiln apply without --yes "
                                       "refuses it, --yes installs over it)\n", strbuf_str(&why), plan_verdict_name(v),
                                       v == PLAN_VERDICT_REFUSE ? "refuses this plan, exit 3, nothing written" :
                                       "reinstalls: a fresh install");
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
