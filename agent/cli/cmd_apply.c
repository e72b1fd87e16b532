/* kiln apply SPEC [--inventory FILE] [--dry-run] [--yes] [--spec-url URL]
 * Builds the plan for this machine (or a recorded inventory) and runs it.
 * Destroying data needs --yes; --dry-run only prints the steps. A spec with
 * register.cloudstack needs --spec-url: the installed system fetches the
 * spec again from there at first boot, pinned by this file's sha256. */
#include "apply.h"
#include "commands.h"
#include "exitcode.h"
#include "fetch.h"
#include "inventory.h"
#include "log.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"
#include "url.h"

#include <openssl/evp.h>

static void apply_usage(FILE *f) {
        fprintf(f, "usage: kiln apply SPEC [--inventory FILE|DIR] [--dry-run] [--yes] [--fresh]\n"
                   "  --dry-run        print the steps, change nothing\n"
                   "  --fresh          never resume an interrupted run: install from scratch\n"
                   "  --yes            confirm that the listed data may be destroyed\n"
                   "  --inventory X    plan against a recorded inventory (JSON or tree)\n"
                   "  --spec-url URL   where the installed system fetches SPEC again for its first-boot\n"
                   "                   registration (needed with register.cloudstack; pinned by SPEC's sha256)\n");
}

struct apply_check {
        const char *spec_path;
        bool yes;
        const struct spec *spec;
        const char *spec_url;   /* --spec-url */
        char sha256[65];        /* of the file, when the first boot fetches it again */
};

/* register.cloudstack: the installed system fetches the spec again at first
 * boot (firstboot.h), from --spec-url, pinned by this file's sha256. The
 * last refusal, before anything is written. */
static int apply_check_firstboot(struct apply_check *chk) {
        if (!chk->spec->cloudstack.present)
                return KILN_EXIT_OK;
        if (!chk->spec_url)
                return log_error("spec '%s' registers with CloudStack at the installed system's first boot, which fetches "
                                 "the spec again: give --spec-url URL (where the node fetches this same file; its sha256 "
                                 "is pinned); nothing was written", chk->spec_path), KILN_EXIT_USAGE;
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        int r = read_full_file(chk->spec_path, SPEC_MAX_BYTES, &data, &len);
        if (r == 0 && (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32))
                r = -EIO;
        if (data)
                explicit_wipe(data, len);
        if (r < 0)
                return log_error_errno(r, "failed to hash spec '%s': %m", chk->spec_path), KILN_EXIT_FAILURE;
        hex_encode(md, 32, chk->sha256);
        return KILN_EXIT_OK;
}

/* Destroying data needs --yes (a dry run needs nothing); then the first boot's spec URL. */
static int apply_check(struct cmd_run *run, void *userdata) {
        struct apply_check *chk = userdata;
        const struct plan *plan = run->plan;
        if (run->dry_run)
                return KILN_EXIT_OK;
        if (chk->yes) {
                /* --yes is the operator's act: a finished install is installed over (docs/apply.md) */
                _cleanup_free_ struct plan_mark *m = NULL;
                size_t n = 0;
                if (plan_marks(plan->inv, &m, &n) == 0)
                        for (size_t i = 0; i < n; i++)
                                log_info("%s holds a finished kiln install; --yes: applying '%s' all the same",
                                         m[i].disk->path, chk->spec_path);
                return apply_check_firstboot(chk);
        }
        /* a finished install: the same refusal as kiln boot's, before the one about --yes
         * (a reinstall verdict changes nothing here: --yes is still needed) */
        const char *token = plan_reinstall_token(chk->spec, NULL);
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        enum plan_verdict v = PLAN_VERDICT_RUN;
        if (plan_verdict(plan, NULL, token, &v, &why) >= 0 && v == PLAN_VERDICT_REFUSE)
                return cmd_run_marks(run, token);
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
        static const struct option options[] = {
                { "inventory", required_argument, NULL, 'i' },
                { "dry-run", no_argument, NULL, 'n' },
                { "yes", no_argument, NULL, 'y' },
                { "fresh", no_argument, NULL, 'f' },
                { "spec-url", required_argument, NULL, 'u' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *inv_path = NULL, *spec_url = NULL;
        bool dry_run = false, yes = false, fresh = false;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "i:nyfh", options)
                switch (c) {
                case 'i': inv_path = optarg; break;
                case 'n': dry_run = true; break;
                case 'y': yes = true; break;
                case 'f': fresh = true; break;
                case 'u': spec_url = optarg; break;
                case 'h': apply_usage(stdout); return KILN_EXIT_OK;
                default: apply_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 1) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if (optind + 1 != argc) {
                apply_usage(stderr);
                return KILN_EXIT_USAGE;
        }
        const char *spec_path = argv[optind];

        _cleanup_spec_free_ struct spec *spec = NULL;
        int r = cmd_load_spec(spec_path, false, &spec, NULL);
        if (r != KILN_EXIT_OK)
                return r;
        if (spec_url && fetch_check_url(spec_url) < 0) {
                char shown[URL_DISPLAY_MAX];
                log_error("invalid --spec-url '%s': expected an http, https or file URL", url_display(spec_url, shown));
                return KILN_EXIT_USAGE;
        }

        _cleanup_inventory_free_ struct inventory *inv = NULL;
        r = cmd_load_inventory(inv_path, &inv);
        if (r != KILN_EXIT_OK)
                return r;

        struct apply_check chk = { .spec_path = spec_path, .yes = yes, .spec = spec, .spec_url = spec_url };
        _cleanup_(cmd_run_done) struct cmd_run run = {
                .subject = spec_path, .dry_run = dry_run, .fresh = fresh, .check = apply_check, .userdata = &chk,
        };
        struct apply_options opts = { .spec_url = spec_url, .spec_sha256 = chk.sha256 };   /* filled by apply_check */
        return cmd_run_spec(spec, inv, &run, &opts);
}
