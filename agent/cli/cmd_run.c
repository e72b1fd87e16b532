/* What `kiln apply` and `kiln boot` share once they hold a spec and an
 * inventory: decide (plan_decide: the fresh plan, a resume candidate),
 * check (the hostname, the command's own checks, the spec's ca:), run
 * (apply_run, with the fresh plan as the resume's fallback). One wording
 * for each refusal, whichever command says it. Front-end code: it logs,
 * once, and returns an exit code from exitcode.h. */
#include "apply.h"
#include "ca.h"
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "resume.h"

void cmd_run_done(struct cmd_run *run) {
        run->plan = plan_free(run->plan);
        run->resume = plan_free(run->resume);
        free(run->spec_ca);
        run->spec_ca = NULL;
}

int cmd_run_spec(const struct spec *spec, const struct inventory *inv, struct cmd_run *run, struct apply_options *ao) {
        struct diags diags = {};
        int r = plan_decide(spec, inv, run->fresh, &diags, &run->plan, &run->resume, &run->unwiped);
        if (r < 0)
                return cmd_plan_failed(r, &diags, "apply", run->subject);
        (void) cmd_plan_warnings(&diags, false, "apply", run->subject);
        /* a resume plan is only a candidate until the progress record is read:
         * apply says once which it is ("resuming ..." or "not resuming ...") */
        const struct plan *plan = run->plan;
        if (run->resume)
                log_info("%s", run->resume->mode_why);
        else
                log_info("fresh install: %s", plan->mode_why);

        /* the hostname as plan_build expanded it: a dry run shows what `kiln plan` shows */
        if (!run->dry_run && spec->hostname && !plan->hostname)
                return log_error("refusing to apply '%s': hostname '%s' needs ${%s}, %s%s%s; nothing was written",
                                 run->subject, spec->hostname, plan->hostname_missing ? plan->hostname_missing : "?",
                                 plan->hostname_placeholder ? "but this machine reports the placeholder '" :
                                                              "which this machine's inventory lacks",
                                 plan->hostname_placeholder ?: "", plan->hostname_placeholder ? "'" : ""), KILN_EXIT_BAD_SPEC;
        if (run->check && (r = run->check(run, run->userdata)) != KILN_EXIT_OK)
                return r;

        /* the spec's ca: beside kiln.ca= for every HTTPS transfer of the run (keys, image, controller) */
        run->run_ca = run->ca_file;
        if (!run->dry_run || run->ca_in_dry_run) {
                _cleanup_free_ char *ca_err = NULL;
                r = ca_for_spec(spec->ca, run->ca_file, &run->spec_ca, &ca_err);
                if (r < 0)
                        return log_error_errno(r, "failed to load the CA of spec '%s' (%s): %s; nothing was written", run->subject,
                                               ca_describe(spec->ca, (char[URL_DISPLAY_MAX]) {}), ca_err ? ca_err : strerror(-r)),
                               KILN_EXIT_FETCH;
                if (run->spec_ca)
                        run->run_ca = run->spec_ca;
        }
        if (run->prepare && (r = run->prepare(run, ao, run->userdata)) != KILN_EXIT_OK)
                return r;

        ao->dry_run = run->dry_run;
        ao->hostname = plan->hostname;
        ao->ca_file = run->run_ca;
        ao->fallback = run->resume && !run->unwiped ? plan : NULL;
        r = apply_run(run->resume ? run->resume : plan, ao, &run->failed);
        return cmd_apply_exit_code(r, run->failed);
}
