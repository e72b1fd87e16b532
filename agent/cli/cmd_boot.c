/* kiln boot [--cmdline FILE] [--inventory X] [--dry-run] [--no-finish] [--no-kexec] [--skip-storage]
 *
 * What the initramfs' /init runs: reads kiln.* from the kernel command line
 * (cmdline.h), looks at this machine (inventory), fetches the host spec
 * (kiln.spec=, ${mac} ${uuid} ${serial} ${hostname} expanded, pinned by
 * kiln.spec.sha256=, extra CA from kiln.ca=), validates it, plans, runs the
 * plan, and finishes as the spec says. With --no-finish the spec's finish
 * (reboot, poweroff, none) is written to RUN_DIR/finish instead, so that
 * /init can report first and then do it. Every failure is one line naming
 * the stage, the subject and the reason, and a documented exit code.
 *
 * A finished node of the same plan (the progress record says so, read with
 * everything opened read-only) is not installed again: kiln boots its
 * installed system (kexec), refuses another plan, and reinstalls only on a
 * new reinstall token (kiln.reinstall=, the spec's reinstall:);
 * docs/reinstall.md. --no-kexec prints what it would kexec instead. The
 * installed system's boot counter decides first: failed boots are posted
 * (boot-failed), and at the spec's failed_boot_limit nothing is booted
 * (exit 9; docs/reinstall.md "A boot that failed").
 *
 * --skip-storage is a test knob (tests/fleet): with a recorded inventory it
 * runs only the network half of a real run (spec, image into KILN_TARGET as
 * a plain directory, webhook events, registration) and never the finish. */
#include "apply.h"
#include "bootcounter.h"
#include "cmdline.h"
#include "commands.h"
#include "enlist.h"
#include "exitcode.h"
#include "fetch.h"
#include "finish.h"
#include "inventory.h"
#include "log.h"
#include "paths.h"
#include "plan.h"
#include "progress.h"
#include "register.h"
#include "report.h"
#include "spec.h"
#include "url.h"

#include <json-c/json.h>
#include <limits.h>
#include <sys/reboot.h>

#define BOOT_CA_MAX_BYTES (1024u * 1024u)
#define BOOT_CA_FILE "ca.pem"           /* in RUN_DIR: kiln.ca= fetched from a URL */
#define BOOT_FETCH_RETRIES 8            /* the network of a node that just booted may need a while */

static void boot_usage(FILE *f) {
        fprintf(f, "usage: kiln boot [--cmdline FILE] [--inventory FILE|DIR] [--dry-run] [--no-finish] [--no-kexec] [--skip-storage]\n"
                   "  reads kiln.spec= kiln.spec.sha256= kiln.ca= kiln.fresh kiln.reinstall= kiln.enlist= from /proc/cmdline,\n"
                   "  fetches the host spec and applies it (what the kiln initramfs runs); without a spec\n"
                   "  (none given, or it answers 404) posts the inventory to kiln.enlist= and powers off\n"
                   "  a finished node of this plan boots its installed system, unless that failed to boot the\n"
                   "  spec's failed_boot_limit times in a row (its boot counter): then boot-failed, exit 9\n"
                   "  --cmdline FILE   read the kernel command line from FILE\n"
                   "  --inventory X    plan against a recorded inventory (with --dry-run)\n"
                   "  --dry-run        fetch, validate and print the steps; change nothing\n"
                   "  --no-finish      write the spec's finish to RUN_DIR/finish instead of doing it\n"
                   "                   (a finished node: 'kexec', /init's internal finish for `kiln kexec`,\n"
                   "                   not a value of the spec's finish:)\n"
                   "  --no-kexec       a finished node of this plan: print what would be kexec'd, exit 0\n"
                   "  --skip-storage   test knob, needs --inventory: skip every storage step, install the image\n"
                   "                   into KILN_TARGET as a plain directory, register, never finish\n");
}

static const char *finish_name(enum spec_finish f) {
        return f == SPEC_FINISH_REBOOT ? "reboot" : f == SPEC_FINISH_POWEROFF ? "poweroff" : "none";
}

static bool is_url(const char *s) {
        return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0 || strncmp(s, "file://", 7) == 0;
}

/* No spec for this machine: post its inventory to kiln.enlist= and power
 * off. Nothing is planned and nothing is written to a disk; RUN_DIR gets
 * enlist.json (the body posted) and, with --no-finish, the finish. */
static int boot_enlist(const struct inventory *inv, const struct kiln_cmdline *cl, const char *ca_file, const char *why,
                       const struct enlist_target *no_fit, bool dry_run, bool power_off, bool no_finish) {
        char shown[URL_DISPLAY_MAX];
        int r;

        if (!cl->enlist)
                return log_error("no kiln.enlist= to enlist at (%s)", why), KILN_EXIT_USAGE;
        url_display(cl->enlist, shown);
        const char *node = enlist_node_id(inv);
        if (!node)
                return log_error("cannot enlist at '%s': this machine has neither a machine UUID nor a MAC", shown),
                       KILN_EXIT_REGISTER;
        if (dry_run) {
                printf("dry run: %s: would enlist '%s' at '%s' (post this machine's inventory, then power off); "
                       "nothing is written\n", why, node, shown);
                return KILN_EXIT_OK;
        }
        _cleanup_free_ char *key = NULL, *body = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = enlist_load_key(kiln_paths.enlist_key, &key);
        if (r < 0)
                return log_error_errno(r, "failed to read the enlist key '%s': %m", kiln_paths.enlist_key), KILN_EXIT_REGISTER;
        unsigned sec = cl->enlist_timeout_sec ? cl->enlist_timeout_sec : ENLIST_DEFAULT_TIMEOUT_SEC;
        struct delivery_policy pol = {
                .connect_timeout_ms = 5000, .request_timeout_ms = 20000, .total_ms = sec * 1000u,
                .backoff_base_ms = 1000, .backoff_cap_ms = 30000,
        };
        struct enlist_target t = { .url = cl->enlist, .key = key, .ca_file = ca_file, .policy = &pol };
        if (no_fit) {
                t.why = no_fit->why;
                t.spec = no_fit->spec;
                t.reasons = no_fit->reasons;
                t.n_reasons = no_fit->n_reasons;
        }
        log_info("enlisting '%s' at '%s' (%s): posting this machine's inventory, at most %u s", node, shown, why, sec);
        r = enlist_post(inv, &t, &body, &err);
        explicit_wipe(key, strlen(key));
        if (body) {
                int k = run_file_write("enlist.json", body, strlen(body), NULL);
                if (k < 0)
                        log_warning_errno(k, "failed to save '%s/enlist.json': %m", kiln_paths.run_dir);
        }
        if (r < 0)
                return log_error("failed to enlist '%s' at '%s': %s", node, shown, strbuf_why(&err, r)), KILN_EXIT_REGISTER;
        log_info("enlisted '%s' at '%s'; %s", node, shown, power_off ? "powering off" : "finish: poweroff");
        if (no_finish) {
                r = run_file_write("finish", "poweroff\n", strlen("poweroff\n"), NULL);
                if (r < 0)
                        return log_error_errno(r, "failed to write '%s/finish': %m", kiln_paths.run_dir), KILN_EXIT_FAILURE;
        }
        if (!power_off)
                return KILN_EXIT_OK;
        sync();
        if (reboot(RB_POWER_OFF) < 0)
                return log_error_errno(-errno, "failed to power off: %m"), KILN_EXIT_FAILURE;
        return KILN_EXIT_OK;
}

/* Does this machine fit none of spec's layouts? Then enlist it with the
 * reasons and return the exit code; -1 when a layout fits (the run goes on). */
static int boot_no_fit(const struct spec *spec, const struct inventory *inv, const struct kiln_cmdline *cl, const char *ca_file,
                       const char *shown, bool dry_run, bool power_off, bool no_finish) {
        _cleanup_(diags_clear) struct diags d = {};
        const struct spec *l = NULL;
        struct plan_miss *m = NULL;
        size_t n = 0;
        int r = plan_choose_layout(spec, inv, &l, &m, &n, &d);
        if (r == 0) {
                plan_misses_free(m, n);
                return -1;
        }
        if (r != -EPERM)
                return log_error_errno(r, "failed to plan '%s': %m", shown), KILN_EXIT_FAILURE;
        diags_print(&d, stderr);
        _cleanup_free_ struct enlist_reason *why = calloc(n ? n : 1, sizeof *why);
        if (!why) {
                plan_misses_free(m, n);
                return log_error_errno(-ENOMEM, "failed to plan '%s': %m", shown), KILN_EXIT_FAILURE;
        }
        for (size_t i = 0; i < n; i++)
                why[i] = (struct enlist_reason) { .layout = m[i].layout, .rule = m[i].rule, .reason = m[i].reason };
        struct enlist_target t = { .why = "this machine fits none of the spec's layouts", .spec = shown,
                                   .reasons = why, .n_reasons = n };
        log_info("'%s': this machine fits none of its %zu layouts: enlisting with the reasons", shown, spec->n_layouts);
        r = boot_enlist(inv, cl, ca_file, "it fits none of the spec's layouts", &t, dry_run, power_off, no_finish);
        plan_misses_free(m, n);
        return r;
}

struct boot_run {
        const struct spec *spec;
        const struct inventory *inv;
        bool no_finish;
        bool no_kexec;          /* --no-kexec (and --dry-run): say what would be kexec'd */
        bool loaded;            /* the installed kernel is loaded (kexec_file_load) */
        struct report *report;
        struct register_options ro;
        struct register_events ev;
        bool events;
};

/* After every check: the finish for /init, the run report (every step
 * becomes a stage, and a webhook event when the spec has a webhook; bench,
 * image and registration add their figures; a failed run is reported too). */
static int boot_prepare(struct cmd_run *run, struct apply_options *ao, void *userdata) {
        struct boot_run *b = userdata;
        int r;
        if (!run->dry_run && b->no_finish) {
                _cleanup_free_ char *f = strdupf("%s\n", finish_name(b->spec->finish));
                r = f ? run_file_write("finish", f, strlen(f), NULL) : -ENOMEM;
                if (r < 0)
                        return log_error_errno(r, "failed to write '%s/finish': %m", kiln_paths.run_dir), KILN_EXIT_FAILURE;
        }
        r = report_new(&b->report);
        if (r < 0)
                return log_error_errno(r, "failed to start the run report: %m"), KILN_EXIT_FAILURE;
        (void) report_set_node(b->report, b->inv, run->plan->hostname, NULL);
        register_options_default(&b->ro);
        b->ro.ca_file = run->run_ca;
        if (!run->dry_run) {
                register_attach_events(b->report, &b->ev, b->spec, &b->ro);
                b->events = true;
        }
        ao->userdata = b->report;
        ao->report = b->report;
        log_info("applying spec '%s' (%zu steps) on %s", run->subject, run->plan->n_steps,
                 run->plan->hostname ? run->plan->hostname : "this machine");
        return KILN_EXIT_OK;
}

/* One event of its own kind (boot-installed, boot-failed) to the spec's
 * webhook, its body also saved as RUN_DIR/NAME.json (for /init's report);
 * nothing in a dry run. A webhook that does not take it is a warning. */
static void boot_event(struct cmd_run *run, struct boot_run *b, const char *kind, json_object *o) {
        if (run->dry_run)
                return;
        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        _cleanup_free_ char *name = strdupf("%s.json", kind);
        int r = name ? run_file_write(name, text, strlen(text), NULL) : -ENOMEM;
        if (r < 0)
                log_warning_errno(r, "failed to save '%s/%s.json': %m", kiln_paths.run_dir, kind);
        _cleanup_(report_freep) struct report *report = NULL;
        r = report_new(&report);
        if (r < 0) {
                log_warning_errno(r, "failed to start the report of the %s event: %m", kind);
                return;
        }
        (void) report_set_node(report, b->inv, run->plan->hostname, NULL);
        struct register_options ro;
        register_options_default(&ro);
        ro.ca_file = run->run_ca;
        struct register_events ev;
        register_attach_events(report, &ev, b->spec, &ro);
        (void) report_event(report, kind, json_object_get(o));
        if (ev.failed)
                log_warning("the webhook did not take the %s event: %s", kind, ev.last_error ? ev.last_error : "?");
        register_events_done(&ev);
}

/* The installed system's boot counter (plan/bootcount.h), read from its
 * /boot as the look mounted it (read-only, no journal replay), and what
 * bootcount_verdict() makes of it: no failed boot boots as always; failed
 * boots below the spec's failed_boot_limit post boot-failed and boot; at
 * the limit boot-failed is posted and nothing is booted (KILN_EXIT_BOOT_FAILED,
 * after the one message). KILN_EXIT_OK to go on booting. */
static int boot_count_check(struct cmd_run *run, struct boot_run *b, const char *why) {
        _cleanup_free_ char *path = strdupf("%s%s", kiln_paths.target, kiln_paths.t_bootcount);
        if (!path)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        struct bootcount bc;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = bootcount_load(path, &bc, &err);
        if (r == -ENOENT)
                return KILN_EXIT_OK;    /* installed before boot counting, or never booted: as always */
        if (r < 0) {
                if (r != -EBADMSG)
                        (void) strbuf_errorf(&err, r, "%s", strerror(-r));
                log_warning("the installed system's boot counter '%s' is unreadable (%s): taken as 1 boot that did "
                            "not end well", kiln_paths.t_bootcount, strbuf_str(&err));
                bootcount_unreadable(&bc);
        }
        unsigned limit = b->spec->failed_boot_limit;
        enum bootcount_verdict v = bootcount_verdict(&bc, limit);
        if (v == BOOTCOUNT_BOOT)
                return KILN_EXIT_OK;
        json_object *o = json_object_new_object();
        if (!o)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        json_object_object_add(o, "fingerprint", json_object_new_string(run->plan->fingerprint));
        json_object_object_add(o, "why", json_object_new_string(why));
        json_object_object_add(o, "counter", json_object_new_string(kiln_paths.t_bootcount));
        json_object_object_add(o, "failed_boots", json_object_new_int64(bc.attempts));
        json_object_object_add(o, "failed_boot_limit", json_object_new_int64(limit));
        if (bc.last_attempt[0])
                json_object_object_add(o, "last_attempt", json_object_new_string(bc.last_attempt));
        json_object_object_add(o, "last_good", bc.last_good[0] ? json_object_new_string(bc.last_good) : NULL);
        if (r < 0)
                json_object_object_add(o, "counter_unreadable", json_object_new_string(strbuf_str(&err)));
        json_object_object_add(o, "action", json_object_new_string(v == BOOTCOUNT_STOP ? "stopped" : "boot"));
        boot_event(run, b, "boot-failed", o);
        json_object_put(o);
        char good[BOOTCOUNT_TIME_LEN + 8];
        snprintf(good, sizeof good, "%s", bc.last_good[0] ? bc.last_good : "never");
        if (v == BOOTCOUNT_STOP)
                return log_error("not booting the installed system of '%s': %u boot(s) in a row did not get far enough "
                                 "(failed_boot_limit %u; the last good boot: %s); nothing was written; an operator "
                                 "decides (docs/reinstall.md \"A boot that failed\")", run->subject, bc.attempts, limit,
                                 good), KILN_EXIT_BOOT_FAILED;
        log_warning("the installed system of '%s' failed to boot %u time(s) in a row (failed_boot_limit %u; the last "
                    "good boot: %s): booting it again", run->subject, bc.attempts, limit, good);
        return KILN_EXIT_OK;
}

/* The disks hold a finished run of this plan (docs/reinstall.md): the boot
 * counter looked at (boot_count_check), one webhook event,
 * "boot-installed", and the installed kernel loaded with the installed
 * command line, while its filesystems are still mounted read-only;
 * cmd_run_spec() then undoes the stack and cmd_boot() kexecs. */
static int boot_installed(struct cmd_run *run, struct apply_inspection *in, const char *why, void *userdata) {
        struct boot_run *b = userdata;
        int r = boot_count_check(run, b, why);
        if (r != KILN_EXIT_OK)
                return r;
        if (in->image_err < 0)
                return log_error_errno(in->image_err, "cannot boot the installed system of '%s': no kernel and initrd "
                                       "(/vmlinuz, /initrd.img or /boot/...) in its root: %m; nothing was written",
                                       run->subject), KILN_EXIT_FAILURE;
        _cleanup_free_ char *cmdline = NULL;
        r = plan_installed_cmdline(b->spec, in->root_uuid, &cmdline);
        if (r < 0)
                return log_error_errno(r, "cannot make the installed command line of '%s' (root filesystem UUID %s): %m; "
                                       "nothing was written", run->subject, in->root_uuid ? in->root_uuid : "unknown"),
                       KILN_EXIT_FAILURE;
        json_object *o = json_object_new_object();
        if (!o)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        json_object_object_add(o, "fingerprint", json_object_new_string(run->plan->fingerprint));
        json_object_object_add(o, "why", json_object_new_string(why));
        json_object_object_add(o, "kernel", json_object_new_string(in->image.kernel));
        json_object_object_add(o, "initrd", json_object_new_string(in->image.initrd));
        json_object_object_add(o, "cmdline", json_object_new_string(cmdline));
        json_object_object_add(o, "kexec", json_object_new_boolean(!b->no_kexec));
        if (in->rec.run_id)
                json_object_object_add(o, "installed_run_id", json_object_new_string(in->rec.run_id));
        boot_event(run, b, "boot-installed", o);
        json_object_put(o);
        if (b->no_kexec) {
                printf("boot-installed: would kexec %s with %s, command line '%s'%s\n", in->image.kernel, in->image.initrd,
                       cmdline, run->dry_run ? " (dry run)" : " (--no-kexec)");
                return KILN_EXIT_OK;
        }
        r = kexec_image_load(&in->image, cmdline);
        if (r < 0)
                return log_error_errno(r, "failed to load the installed kernel %s (kexec_file_load): %m; nothing was written",
                                       in->image.kernel), KILN_EXIT_FAILURE;
        b->loaded = true;
        log_info("loaded %s with %s, command line '%s'", in->image.kernel, in->image.initrd, cmdline);
        return KILN_EXIT_OK;
}

/* What kiln boot's options say. */
struct boot_args {
        const char *cmdline_file, *inv_path;
        bool dry_run, no_finish, skip_storage, no_kexec;
};

/* The options into a; -1 to go on, else the exit code (--help, a bad option). */
static int boot_parse_args(int argc, char **argv, struct boot_args *a) {
        static const struct option options[] = {
                { "cmdline", required_argument, NULL, 'c' },
                { "inventory", required_argument, NULL, 'i' },
                { "dry-run", no_argument, NULL, 'n' },
                { "no-finish", no_argument, NULL, 'F' },
                { "skip-storage", no_argument, NULL, 'S' },
                { "no-kexec", no_argument, NULL, 'K' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'c': a->cmdline_file = optarg; break;
                case 'i': a->inv_path = optarg; break;
                case 'n': a->dry_run = true; break;
                case 'F': a->no_finish = true; break;
                case 'S': a->skip_storage = true; break;
                case 'K': a->no_kexec = true; break;
                case 'h': boot_usage(stdout); return KILN_EXIT_OK;
                default: boot_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 0) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if (a->skip_storage && !a->inv_path) {
                log_error("--skip-storage is a test knob for a recorded machine: it needs --inventory");
                return KILN_EXIT_USAGE;
        }
        return -1;
}

/* The kernel command line (cmdline_file, or PROCFS/cmdline) into cl, its
 * unknown kiln.* options warned about; KILN_EXIT_OK, or KILN_EXIT_USAGE
 * (KILN_EXIT_FAILURE) after the one message. */
static int boot_read_cmdline(const char *cmdline_file, struct kiln_cmdline *cl) {
        int r;
        _cleanup_free_ char *bad = NULL, *cmdline_path = NULL;
        if (!cmdline_file && asprintf(&cmdline_path, "%s/cmdline", kiln_paths.procfs) < 0)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        const char *clp = cmdline_file ? cmdline_file : cmdline_path;
        {
                _cleanup_free_ char *text = NULL;
                r = read_full_file(clp, CMDLINE_MAX_BYTES, &text, NULL);
                if (r < 0)
                        return log_error_errno(r, "failed to read the kernel command line '%s': %m", clp), KILN_EXIT_USAGE;
                r = cmdline_parse(text, cl, &bad);
        }
        if (r == -EINVAL && bad) {
                _cleanup_strbuf_ struct strbuf shown_bad = STRBUF_INIT;
                (void) url_scrub(bad, strlen(bad), &shown_bad);
                return log_error("invalid kernel command line option '%s' in '%s'", strbuf_str(&shown_bad), clp),
                       KILN_EXIT_USAGE;
        }
        if (r < 0)
                return log_error_errno(r, "failed to parse the kernel command line '%s': %m", clp), KILN_EXIT_USAGE;
        for (char **u = cl->unknown; u && *u; u++) {
                _cleanup_strbuf_ struct strbuf shown_u = STRBUF_INIT;
                (void) url_scrub(*u, strlen(*u), &shown_u);
                log_warning("ignoring unknown kernel command line option '%s'", strbuf_str(&shown_u));
        }
        if (!cl->spec && !cl->enlist)
                return log_error("no kiln.spec= or kiln.enlist= on the kernel command line '%s'", clp), KILN_EXIT_USAGE;
        return KILN_EXIT_OK;
}

/* kiln.ca=: a file on the initramfs, or fetched (it is then trusted on the
 * strength of the system CAs alone and saved as RUN_DIR/ca.pem, *ret_path);
 * fo->ca_file names it. KILN_EXIT_OK, or the exit code after the message. */
static int boot_ca(const char *ca, struct fetch_options *fo, char **ret_path) {
        _cleanup_free_ char *pem = NULL;
        int r;
        char ca_shown[URL_DISPLAY_MAX];
        url_display(ca, ca_shown);
        if (is_url(ca)) {
                size_t len;
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                r = fetch_to_buffer(ca, fo, BOOT_CA_MAX_BYTES, NULL, &pem, &len, NULL, &err);
                if (r < 0 && err.len)
                        return log_error("failed to fetch the CA bundle '%s': %s", ca_shown, err.buf), KILN_EXIT_FETCH;
                if (r < 0)
                        return log_error_errno(r, "failed to fetch the CA bundle '%s': %m", ca_shown), KILN_EXIT_FETCH;
                /* One CA for everything after this: the spec, the keys, the
                 * image and the controller all take it as a file. */
                r = run_file_write(BOOT_CA_FILE, pem, len, ret_path);
                if (r < 0)
                        return log_error_errno(r, "failed to save the CA bundle '%s' to '%s/%s': %m", ca_shown,
                                               kiln_paths.run_dir, BOOT_CA_FILE), KILN_EXIT_FAILURE;
                fo->ca_file = *ret_path;
        } else {
                if (access(ca, R_OK) < 0)
                        return log_error_errno(-errno, "failed to read the CA bundle '%s': %m", ca), KILN_EXIT_FETCH;
                fo->ca_file = ca;
        }
        return KILN_EXIT_OK;
}

/* After a run that succeeded: a finished node of this plan boots its
 * installed system (kexec; with --no-finish the finish 'kexec' for /init),
 * else the spec's finish (the storage stack down first). An exit code. */
static int boot_finish(const struct boot_args *a, const struct spec *spec, const struct cmd_run *run, bool loaded,
                       bool finish, uint64_t t0) {
        int r;
        if (run->verdict == PLAN_VERDICT_BOOT_INSTALLED) {
                if (!loaded)
                        return KILN_EXIT_OK;    /* --no-kexec, --dry-run */
                if (a->no_finish) {             /* /init reports, then runs `kiln kexec` */
                        r = run_file_write("finish", "kexec\n", strlen("kexec\n"), NULL);
                        if (r < 0)
                                return log_error_errno(r, "failed to write '%s/finish': %m", kiln_paths.run_dir), KILN_EXIT_FAILURE;
                        log_info("the installed system is loaded; finish: kexec");
                        return KILN_EXIT_OK;
                }
                log_info("booting the installed system (kexec)");
                r = kexec_reboot();
                return log_error_errno(r, "failed to kexec the installed system: %m"), KILN_EXIT_FAILURE;
        }
        log_info("spec '%s' applied in %.1f s; finish: %s", run->subject, (now_usec() - t0) / 1e6,
                 a->dry_run ? "none (dry run)" : finish_name(spec->finish));
        if (!finish || spec->finish == SPEC_FINISH_NONE)
                return KILN_EXIT_OK;
        /* every stage has ended and the report is saved and delivered: the
         * storage stack goes down, so the disks the node boots next are clean */
        apply_stack_down(run->plan, finish_name(spec->finish));
        sync();
        if (reboot(spec->finish == SPEC_FINISH_REBOOT ? RB_AUTOBOOT : RB_POWER_OFF) < 0)
                return log_error_errno(-errno, "failed to %s: %m", finish_name(spec->finish)), KILN_EXIT_FAILURE;
        return KILN_EXIT_OK;
}

int cmd_boot(int argc, char **argv) {
        struct boot_args a = {};
        int r = boot_parse_args(argc, argv, &a);
        if (r >= 0)
                return r;
        const char *inv_path = a.inv_path;
        bool dry_run = a.dry_run, no_finish = a.no_finish, skip_storage = a.skip_storage;
        log_set_timestamps(true);

        /* 1. the kernel command line */
        _cleanup_cmdline_ struct kiln_cmdline cl = {};
        r = boot_read_cmdline(a.cmdline_file, &cl);
        if (r != KILN_EXIT_OK)
                return r;

        /* 2. this machine: the values ${mac} etc. expand to, and the disks to plan on */
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        r = cmd_load_inventory(inv_path, &inv);
        if (r != KILN_EXIT_OK)
                return r;
        struct spec_vars vars;
        plan_spec_vars(inv, &vars);

        /* 3. the extra CA (boot_ca) */
        struct fetch_options fo = { .max_retries = BOOT_FETCH_RETRIES, .pushback_sec = FETCH_PUSHBACK_SEC };
        _cleanup_free_ char *ca_path = NULL;
        if (cl.ca && (r = boot_ca(cl.ca, &fo, &ca_path)) != KILN_EXIT_OK)
                return r;

        /* no spec for this machine: enlist it (agent/report/enlist.h) */
        bool power_off = !dry_run && !no_finish && !inv_path;
        if (!cl.spec)
                return boot_enlist(inv, &cl, fo.ca_file, "kiln.enlist= and no kiln.spec=", NULL, dry_run, power_off, no_finish);

        /* 4. the spec */
        _cleanup_free_ char *url = NULL, *data = NULL;
        size_t len = 0;
        char shown[URL_DISPLAY_MAX];
        r = spec_expand(cl.spec, &vars, &url, NULL);
        if (r < 0)
                return log_error_errno(r, "failed to expand kiln.spec '%s' (known: ${mac} ${mac:hexhyp} ${mac:hexraw} ${uuid} ${serial} ${hostname}; a placeholder serial or uuid counts as missing): %m",
                                       url_display(cl.spec, shown)), KILN_EXIT_USAGE;
        url_display(url, shown);       /* the URL as logged and reported; url itself only goes to the fetch */
        log_info("fetching spec '%s'%s", shown, cl.spec_sha256 ? " (sha256 pinned)" : "");
        struct fetch_result res = {};
        _cleanup_strbuf_ struct strbuf fetch_err = STRBUF_INIT;
        uint64_t t0 = now_usec();
        r = fetch_to_buffer(url, &fo, SPEC_MAX_BYTES, cl.spec_sha256, &data, &len, &res, &fetch_err);
        if (r == -ENOENT && cl.enlist) {
                log_info("spec '%s' is not there (%s): enlisting", shown, fetch_err.len ? fetch_err.buf : "not found");
                return boot_enlist(inv, &cl, fo.ca_file, "the spec URL answers 404", NULL, dry_run, power_off, no_finish);
        }
        if (r == -EBADMSG)
                return log_error("spec '%s' does not match kiln.spec.sha256=%s (got %s)", shown, cl.spec_sha256,
                                 res.sha256[0] ? res.sha256 : "another digest"), KILN_EXIT_FETCH;
        if (r == -EFBIG)
                return log_error("spec '%s' is larger than %u bytes", shown, SPEC_MAX_BYTES), KILN_EXIT_FETCH;
        if (r < 0) {
                if (fetch_err.len)
                        return log_error("failed to fetch spec '%s' after %u attempt(s): %s", shown, res.attempts, fetch_err.buf),
                               KILN_EXIT_FETCH;
                return log_error_errno(r, "failed to fetch spec '%s': %m", shown), KILN_EXIT_FETCH;
        }
        log_info("fetched spec '%s': %zu bytes in %.1f s, sha256 %s", shown, len, (now_usec() - t0) / 1e6, res.sha256);

        /* 5. validate */
        _cleanup_spec_free_ struct spec *spec = NULL;
        r = cmd_parse_spec(shown, data, len, &spec);
        explicit_wipe(data, len);       /* it may hold passphrases; the spec keeps its own copy */
        if (r != KILN_EXIT_OK)
                return r;

        /* a rack spec none of whose layouts this machine fits: with kiln.enlist=,
         * enlist it with every layout's reason (the refusals said first, as
         * kiln plan says them), instead of the refusal's exit 3 */
        if (spec->n_layouts && cl.enlist && (r = boot_no_fit(spec, inv, &cl, fo.ca_file, shown, dry_run, power_off, no_finish)) >= 0)
                return r;

        /* 6. plan, check, run: every refusal is made before anything is written */
        /* a recorded inventory may enlist (nothing is planned) but not apply */
        if (inv_path && !dry_run && !skip_storage) {
                log_error("--inventory plans for another machine: it needs --dry-run");
                return KILN_EXIT_USAGE;
        }
        struct boot_run b = { .spec = spec, .inv = inv, .no_finish = no_finish, .no_kexec = a.no_kexec || dry_run };
        _cleanup_(cmd_run_done) struct cmd_run run = {
                .subject = shown, .dry_run = dry_run, .fresh = cl.fresh, .ca_file = fo.ca_file, .ca_in_dry_run = true,
                .inspect = !inv_path, .reinstall = cl.reinstall, .marks = true, .installed = boot_installed,
                .prepare = boot_prepare, .userdata = &b,
        };
        struct apply_options ao = {
                .finish = !dry_run && !no_finish && !skip_storage,
                .skip_storage = skip_storage,
                .hook = progress_apply_hook,
                .spec_url = url,                /* fetched again at first boot (register.cloudstack) */
                .spec_sha256 = res.sha256,
        };
        t0 = now_usec();
        r = cmd_run_spec(spec, inv, &run, &ao);  /* on failure it said which step, on what and why, reported it and saved the report */
        if (b.events)
                register_events_done(&b.ev);
        report_free(b.report);
        if (r != KILN_EXIT_OK) {
                if (b.loaded)
                        (void) kexec_unload();
                return r;
        }
        return boot_finish(&a, spec, &run, b.loaded, ao.finish, t0);
}
