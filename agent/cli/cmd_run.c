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

static int disks_text(const struct plan *p, struct strbuf *out) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_disks; i++)
                r = strbuf_addf(out, "%s%s", i ? ", " : "", p->disks[i].disk->path);
        return r;
}

/* A verdict that is not boot-installed, acted on (one wording for each,
 * whichever way it was made): REFUSE stops the run, REINSTALL drops the
 * resume candidate (a fresh install) unless the spec may not wipe. */
static int verdict_act(struct cmd_run *run, enum plan_verdict v, const char *why) {
        _cleanup_strbuf_ struct strbuf disks = STRBUF_INIT;
        if (disks_text(run->plan, &disks) < 0)
                return log_error_errno(-ENOMEM, "failed to decide on '%s': %m", run->subject), KILN_EXIT_FAILURE;
        run->verdict = v;
        switch (v) {
        case PLAN_VERDICT_REFUSE:
                return log_error("refusing to apply '%s' on %s: %s; nothing was written; to reinstall on purpose, boot with "
                                 "kiln.reinstall=NEW-TOKEN or give the spec a new 'reinstall:' (docs/reinstall.md)",
                                 run->subject, disks.len ? strbuf_str(&disks) : "no disk", why), KILN_EXIT_REFUSED;
        case PLAN_VERDICT_REINSTALL:
                if (run->unwiped)
                        return log_error("refusing to reinstall '%s' on %s: %s, but the spec does not allow wiping "
                                         "these disks (wipe: true); nothing was written", run->subject, strbuf_str(&disks),
                                         why), KILN_EXIT_REFUSED;
                log_info("reinstall: %s; installing fresh on %s", why, strbuf_str(&disks));
                run->resume = plan_free(run->resume);
                free(run->plan->mode_why);
                run->plan->mode_why = strdupf("reinstall: %s", why);
                return KILN_EXIT_OK;
        default:
                return KILN_EXIT_OK;
        }
}

/* The resume candidate's stack brought up read-only, its record read, the
 * verdict made (plan_verdict(), pure) and acted on; KILN_EXIT_OK with
 * run->verdict set to go on (RUN, REINSTALL: run->resume dropped) or
 * after run->installed() (BOOT_INSTALLED). */
static int inspect(const struct spec *spec, struct cmd_run *run, const char *token, const struct plan *candidate) {
        struct apply_options io = { .ca_file = run->run_ca, .hostname = run->plan->hostname };
        struct apply_inspection in;
        int r = apply_inspect(candidate, &io, &in);
        if (r < 0)
                return log_error_errno(r, "failed to look at the disks of '%s': %m", run->subject), KILN_EXIT_STORAGE;
        if (in.record_err == -ENOKEY) {
                /* a generated key opens only through Tang: without the record, no verdict (not even a
                 * reinstall: its own luks-bind would need the same Tang, after the wipe) */
                log_error("cannot look at the disks of '%s': %s; nothing was written", run->subject,
                          in.why ? in.why : "?");
                (void) apply_inspect_end(&in);
                return KILN_EXIT_STORAGE;
        }
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT, disks = STRBUF_INIT;
        enum plan_verdict v;
        r = plan_verdict(run->plan, in.record_err == 0 ? &in.rec : NULL, token, &v, &why);
        if (r >= 0)
                r = disks_text(run->plan, &disks);
        if (r < 0) {
                (void) apply_inspect_end(&in);
                return log_error_errno(r, "failed to decide on '%s': %m", run->subject), KILN_EXIT_FAILURE;
        }
        run->verdict = v;
        if (v == PLAN_VERDICT_BOOT_INSTALLED) {
                log_info("boot-installed: %s on %s; nothing is written", strbuf_str(&why), strbuf_str(&disks));
                r = run->installed ? run->installed(run, &in, strbuf_str(&why), run->userdata) : KILN_EXIT_OK;
                int q = apply_inspect_end(&in);
                return r != KILN_EXIT_OK ? r : q < 0 ? KILN_EXIT_STORAGE : KILN_EXIT_OK;
        }
        if (in.why)     /* no record read: say why, whatever decides next (the marks, or a resume) */
                log_info("looked read-only at the disks: %s", in.why);
        if (apply_inspect_end(&in) < 0)
                return KILN_EXIT_STORAGE;       /* said which step */
        run->inspected = true;
        return verdict_act(run, v, strbuf_str(&why));
}

int cmd_run_marks(struct cmd_run *run, const char *token) {
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        enum plan_verdict v;
        if (plan_verdict(run->plan, NULL, token, &v, &why) < 0)
                return log_error_errno(-ENOMEM, "failed to decide on '%s': %m", run->subject), KILN_EXIT_FAILURE;
        return verdict_act(run, v, strbuf_str(&why));
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
        if (!run->dry_run && plan->hostname_template && !plan->hostname)
                return log_error("refusing to apply '%s': hostname '%s' needs ${%s}, %s%s%s; nothing was written",
                                 run->subject, plan->hostname_template, plan->hostname_missing ? plan->hostname_missing : "?",
                                 plan->hostname_placeholder ? "but this machine reports the placeholder '" :
                                                              "which this machine's inventory lacks",
                                 plan->hostname_placeholder ?: "", plan->hostname_placeholder ? "'" : ""), KILN_EXIT_BAD_SPEC;
        if (run->check && (r = run->check(run, run->userdata)) != KILN_EXIT_OK)
                return r;

        /* the spec's ca: beside kiln.ca= for every HTTPS transfer of the run (keys, image, controller) */
        run->run_ca = run->ca_file;
        if (!run->dry_run || run->ca_in_dry_run) {
                _cleanup_strbuf_ struct strbuf ca_err = STRBUF_INIT;
                r = ca_for_spec(spec->ca, run->ca_file, &run->spec_ca, &ca_err);
                if (r < 0)
                        return log_error_errno(r, "failed to load the CA of spec '%s' (%s): %s; nothing was written", run->subject,
                                               ca_describe(spec->ca, (char[URL_DISPLAY_MAX]) {}), strbuf_why(&ca_err, r)),
                               KILN_EXIT_FETCH;
                if (run->spec_ca)
                        run->run_ca = run->spec_ca;
        }
        /* a finished node: looked at read-only; booted, refused or, on the operator's act, reinstalled */
        const char *token = plan_reinstall_token(spec, run->reinstall);
        _cleanup_plan_free_ struct plan *probe = NULL;
        if (run->inspect && run->fresh) {
                /* --fresh, kiln.fresh: never resume, but a finished node is still
                 * looked at (only a reinstall token installs it again): with the
                 * resume plan of the one fresh plan, never run */
                _cleanup_free_ char *why = NULL;
                if (resume_plan_build(run->plan, &probe, &why) <= 0)
                        probe = NULL;
        }
        const struct plan *candidate = run->resume ? run->resume : probe;
        if (run->inspect && candidate && (r = inspect(spec, run, token, candidate)) != KILN_EXIT_OK)
                return r;
        if (run->verdict == PLAN_VERDICT_BOOT_INSTALLED)
                return KILN_EXIT_OK;
        /* nothing looked at (no candidate: another layout, or a recorded
         * inventory): a disk with the finished-install mark still stops it */
        if (run->marks && !run->inspected && (r = cmd_run_marks(run, token)) != KILN_EXIT_OK)
                return r;
        if (run->prepare && (r = run->prepare(run, ao, run->userdata)) != KILN_EXIT_OK)
                return r;
        ao->reinstall = token;

        ao->dry_run = run->dry_run;
        ao->hostname = plan->hostname;
        ao->ca_file = run->run_ca;
        ao->fallback = run->resume && !run->unwiped ? plan : NULL;
        r = apply_run(run->resume ? run->resume : plan, ao, &run->failed);
        return cmd_apply_exit_code(r, run->failed);
}
