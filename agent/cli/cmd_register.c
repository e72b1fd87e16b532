/* kiln register --report FILE --spec FILE: registration on its own, from a
 * saved run report (e.g. on the installed system's first boot, when
 * CloudStack's addHost can reach a running host). The report says who the
 * node is; the spec holds where to register and the credentials, which are
 * never written into a report. The report is updated with the outcome.
 *
 * kiln register --firstboot CONF [--root DIR]: what kiln-register.service
 * runs (report/firstboot.h): the spec is fetched again from the config's URL
 * and must hash to its sha256 (else nothing is sent), the report and CA are
 * the config's, and the marker is written once registration succeeded. */
#include "ca.h"
#include "commands.h"
#include "exitcode.h"
#include "fetch.h"
#include "firstboot.h"
#include "health.h"
#include "json.h"
#include "log.h"
#include "register.h"
#include "report.h"
#include "spec.h"

#include <limits.h>
#include <time.h>

static void help(void) {
        printf("usage: kiln register --report FILE --spec FILE [OPTIONS]\n"
               "       kiln register --firstboot CONF [--root DIR] [OPTIONS]\n\n"
               "Register the node a saved run report describes with the controller\n"
               "(CloudStack addHost, only if the host is not there yet) and post the\n"
               "report to the webhook, as the spec's register section says.\n\n"
               "  --report FILE          the run report (report.json of a run)\n"
               "  --spec FILE            the host spec with the register section\n"
               "  --save FILE            write the updated report here (default: --report)\n"
               "  --ip ADDR              the node's address, instead of the report's\n"
               "  --timeout SEC          give up after SEC seconds in all (default 300; the\n"
               "                         webhook report keeps a quarter, at most 60 s, of its own)\n"
               "  --request-timeout SEC  each request's limit (default 20)\n"
               "  --ca FILE              extra CA bundle for HTTPS (the spec's ca: is trusted too)\n"
               "  --firstboot CONF       what the installed system's " FIRSTBOOT_UNIT_NAME " runs\n"
               "                         (" FIRSTBOOT_CONF "): fetch the spec again from its URL, refuse it\n"
               "                         unless it has the pinned sha256, register from its report, and\n"
               "                         write its marker once registered\n"
               "  --root DIR             with --firstboot: the installed system is mounted at DIR (the\n"
               "                         config's report, CA and marker are read and written under it)\n");
}

/* Few: multi-user.target waits for the unit, which tries again a minute
 * after a failure (a network that is not up yet, a spec server down). */
#define FIRSTBOOT_FETCH_RETRIES FETCH_DEFAULT_RETRIES

static int under_root(const char *root, const char *path, char **ret) {
        *ret = root ? strdupf("%s%s", root, path) : strdup(path);
        return *ret ? 0 : -ENOMEM;
}

/* The firstboot config, and the spec it pins fetched again: KILN_EXIT_OK, or
 * the exit code after the one message. Nothing is sent before this is done. */
static int firstboot_load(const char *conf_path, const char *root, const char *ca_given, struct firstboot_conf *conf,
                          struct spec **ret_spec, char **ret_report, char **ret_ca) {
        _cleanup_free_ char *text = NULL, *data = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        size_t len = 0;
        int r = read_full_file(conf_path, FIRSTBOOT_CONF_MAX, &text, NULL);
        if (r < 0)
                return log_error_errno(r, "failed to read the first-boot config '%s': %m", conf_path), KILN_EXIT_USAGE;
        if ((r = firstboot_conf_parse(text, conf, &err)) < 0)
                return log_error("first-boot config '%s': %s", conf_path, strbuf_why(&err, r)), KILN_EXIT_USAGE;
        _cleanup_free_ char *ca = NULL;
        if (!ca_given && conf->ca && under_root(root, conf->ca, &ca) < 0)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        struct fetch_options fo = { .max_retries = FIRSTBOOT_FETCH_RETRIES, .ca_file = ca_given ? ca_given : ca };
        char shown[URL_DISPLAY_MAX];
        url_display(conf->spec_url, shown);
        struct fetch_result res = {};
        _cleanup_strbuf_ struct strbuf fetch_err = STRBUF_INIT;
        r = fetch_to_buffer(conf->spec_url, &fo, SPEC_MAX_BYTES, conf->spec_sha256, &data, &len, &res, &fetch_err);
        if (r == -EBADMSG)
                return log_error("spec '%s' fetched at first boot has sha256 %s, not %s, the spec this node was installed "
                                 "with (%s): refusing to register; nothing was sent", shown,
                                 res.sha256[0] ? res.sha256 : "another digest", conf->spec_sha256, conf_path), KILN_EXIT_FETCH;
        if (r < 0) {
                if (data)
                        explicit_wipe(data, len);
                if (fetch_err.len)
                        return log_error("failed to fetch spec '%s' after %u attempt(s): %s; nothing was sent", shown,
                                         res.attempts, fetch_err.buf), KILN_EXIT_FETCH;
                return log_error_errno(r, "failed to fetch spec '%s': %m; nothing was sent", shown), KILN_EXIT_FETCH;
        }
        struct diags diags = {};
        r = spec_parse(shown, data, len, ret_spec, &diags);
        explicit_wipe(data, len);
        diags_sort(&diags);
        diags_print(&diags, stderr);
        diags_clear(&diags);
        if (r < 0)
                return r == -EINVAL ? (log_error("spec '%s' is not valid", shown), KILN_EXIT_BAD_SPEC)
                                    : (log_error_errno(r, "failed to parse spec '%s': %m", shown), KILN_EXIT_BAD_SPEC);
        if ((r = spec_register_secrets(*ret_spec)) < 0)
                return log_error_errno(r, "failed to register the spec's secrets: %m"), KILN_EXIT_FAILURE;
        log_info("fetched spec '%s' again: sha256 %s as pinned by %s", shown, conf->spec_sha256, conf_path);
        if (under_root(root, conf->report, ret_report) < 0)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        *ret_ca = TAKE_PTR(ca);
        return KILN_EXIT_OK;
}

static int parse_seconds(const char *s, unsigned *ret_ms) {
        unsigned v;
        if (safe_atou(s, &v) < 0 || v == 0 || v > 86400)
                return -EINVAL;
        *ret_ms = v * 1000;
        return 0;
}

/* What kiln register's options say. */
struct register_args {
        const char *report_path, *spec_path, *save, *ip, *firstboot, *root;
        struct register_options ro;
};

/* The options into a; -1 to go on, else the exit code (--help, a bad option). */
static int register_parse_args(int argc, char **argv, struct register_args *a) {
        static const struct option options[] = {
                { "report", required_argument, NULL, 'r' },
                { "spec", required_argument, NULL, 's' },
                { "save", required_argument, NULL, 'o' },
                { "ip", required_argument, NULL, 'i' },
                { "timeout", required_argument, NULL, 't' },
                { "request-timeout", required_argument, NULL, 'T' },
                { "ca", required_argument, NULL, 'c' },
                { "firstboot", required_argument, NULL, 'F' },
                { "root", required_argument, NULL, 'R' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        int c;
        register_options_default(&a->ro);
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'r': a->report_path = optarg; break;
                case 's': a->spec_path = optarg; break;
                case 'o': a->save = optarg; break;
                case 'i': a->ip = optarg; break;
                case 'c': a->ro.ca_file = optarg; break;
                case 'F': a->firstboot = optarg; break;
                case 'R': a->root = optarg; break;
                case 't':
                        if (parse_seconds(optarg, &a->ro.policy.total_ms) < 0) {
                                log_error("invalid --timeout '%s': expected seconds, 1 to 86400", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'T':
                        if (parse_seconds(optarg, &a->ro.policy.request_timeout_ms) < 0) {
                                log_error("invalid --request-timeout '%s': expected seconds, 1 to 86400", optarg);
                                return KILN_EXIT_USAGE;
                        }
                        break;
                case 'h': help(); return KILN_EXIT_OK;
                default: return KILN_EXIT_USAGE;
                }
        if (a->firstboot && (a->report_path || a->spec_path)) {
                log_error("kiln register --firstboot takes the report and the spec from its config: no --report or --spec");
                return KILN_EXIT_USAGE;
        }
        if (a->root && !a->firstboot) {
                log_error("kiln register --root DIR goes with --firstboot CONF");
                return KILN_EXIT_USAGE;
        }
        if (cmd_check_operands(argc, argv, 0) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        if ((!a->firstboot && (!a->report_path || !a->spec_path))) {
                log_error("kiln register needs --report FILE and --spec FILE, or --firstboot CONF (see 'kiln register --help')");
                return KILN_EXIT_USAGE;
        }
        return -1;
}

/* The saved run report at path; KILN_EXIT_OK, or KILN_EXIT_REGISTER after its message. */
static int register_load_report(const char *path, struct report **ret) {
        int r = report_load(path, ret);
        if (r == -EBADMSG) {
                log_error("'%s' is not a kiln run report", path);
                return KILN_EXIT_REGISTER;
        }
        if (r == -ENOTEMPTY) {
                log_error("run report '%s' has data after its JSON document: refusing it", path);
                return KILN_EXIT_REGISTER;
        }
        if (r < 0) {
                log_error_errno(r, "failed to read run report '%s': %m", path);
                return KILN_EXIT_REGISTER;
        }
        return KILN_EXIT_OK;
}

/* The installed system's storage at first boot (apply/health.h): the
 * check into the report ("storage_check"), each mount, swap or volume that
 * is not up logged with why, and then the webhook event "storage-degraded"
 * (docs/register.md "The storage check at first boot"). KILN_EXIT_OK to go
 * on and register; KILN_EXIT_STORAGE when required storage is not up, or
 * cannot be checked: then nothing goes to CloudStack. */
static int firstboot_storage(const char *root, const struct spec *spec, struct report *report,
                             const struct register_options *ro) {
        _cleanup_(health_done) struct health h = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT, line = STRBUF_INIT;
        const char *node = report_node_field(report, "id") ?: "?";
        int r = health_check(root, &h, &err);
        if (r < 0) {
                log_error("cannot check the storage of node '%s': %s; not registering it with CloudStack", node,
                          strbuf_why(&err, r));
                return KILN_EXIT_STORAGE;
        }
        const char *result = h.required_down ? "required-missing" : h.down ? "degraded" : "ok";
        char when[40];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        report_format_time((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u, when, sizeof when);
        json_object *rec = json_object_new_object();
        r = rec ? 0 : -ENOMEM;
        json_set_str(rec, "time", when, &r);
        json_set_str(rec, "result", result, &r);
        json_set(rec, "systemd", json_object_new_boolean(h.systemd), &r);
        json_set(rec, "checked", health_to_json(&h, true), &r);
        if (r < 0 || report_set_member(report, "storage_check", json_done(rec, r)) < 0)
                return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        for (size_t i = 0; i < h.n; i++) {
                if (h.items[i].up)
                        continue;
                strbuf_reset(&line);
                if (health_item_describe(&h.items[i], &line) < 0)
                        return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
                if (h.items[i].required)
                        log_error("storage not up: %s", strbuf_str(&line));
                else
                        log_warning("storage not up: %s", strbuf_str(&line));
        }
        if (!h.down) {
                log_info("storage check: the %zu mount(s), swap(s) and volume(s) of /etc/fstab and /etc/crypttab are up", h.n);
                return KILN_EXIT_OK;
        }
        _cleanup_free_ char *message = h.required_down
                ? strdupf("%u of %zu required mount(s), swap(s) or volume(s) not up: node not registered with CloudStack",
                          h.required_down, h.n)
                : strdupf("%u of %zu mount(s), swap(s) or volume(s) not up, none of them required: node registered",
                          h.down, h.n);
        json_object *ev = json_object_new_object();
        r = ev && message ? 0 : -ENOMEM;
        json_set_str(ev, "result", result, &r);
        json_set_str(ev, "message", message, &r);
        json_set(ev, "registers", json_object_new_boolean(!h.required_down), &r);
        json_set(ev, "failed", health_to_json(&h, false), &r);
        if (r < 0)
                return json_object_put(ev), log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
        strbuf_reset(&err);
        if ((r = register_post_event(spec, report, ro, "storage-degraded", ev, &err)) < 0)
                log_warning("the webhook did not take the storage-degraded event: %s", strbuf_why(&err, r));
        if (!h.required_down)
                return KILN_EXIT_OK;
        log_error("required storage of node '%s' is not up: not registering it with CloudStack; nothing was sent to "
                  "CloudStack", node);
        return KILN_EXIT_STORAGE;
}

/* What a registration did, said once: the CloudStack host (added, found,
 * already there), the webhook's report. */
static void register_said(const struct spec *spec, struct report *report) {
        json_object *reg = report_get(report, "registration"), *cs, *v;
        if (reg && json_object_object_get_ex(reg, "cloudstack", &cs) && json_object_object_get_ex(cs, "host_id", &v)) {
                json_object *added = NULL, *after = NULL;
                (void) json_object_object_get_ex(cs, "added", &added);
                (void) json_object_object_get_ex(cs, "found_after_addhost", &after);
                log_info("node '%s' (%s) %s CloudStack zone '%s', cluster '%s' as host %s%s",
                         report_node_field(report, "id") ?: "?", report_node_field(report, "ip") ?: "?",
                         json_object_get_boolean(added) ? "added to" :
                         json_object_get_boolean(after) ? "found in" : "was already in",
                         spec->cloudstack.zone, spec->cloudstack.cluster, json_object_get_string(v),
                         json_object_get_boolean(after) ? " after its addHost (added by another run, or by a request whose answer was lost)" : "");
        } else if (spec->cloudstack.present)
                log_warning("the run failed: node '%s' reported but not added to CloudStack",
                            report_node_field(report, "id") ?: "?");
        if (spec->webhook.present)
                log_info("run report %s delivered to the webhook", report_run_id(report));
}

int cmd_register(int argc, char **argv) {
        _cleanup_(firstboot_conf_done) struct firstboot_conf conf = {};
        _cleanup_free_ char *fb_report = NULL, *fb_ca = NULL, *fb_marker = NULL;
        _cleanup_report_free_ struct report *report = NULL;
        _cleanup_spec_free_ struct spec *spec = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        struct register_events ev;
        struct register_args a = {};
        int r = register_parse_args(argc, argv, &a);
        if (r >= 0)
                return r;
        const char *report_path = a.report_path, *spec_path = a.spec_path, *save = a.save, *ip = a.ip;
        const char *firstboot = a.firstboot, *root = a.root;
        struct register_options ro = a.ro;
        if (firstboot) {
                r = firstboot_load(firstboot, root, ro.ca_file, &conf, &spec, &fb_report, &fb_ca);
                if (r != KILN_EXIT_OK)
                        return r;
                if (under_root(root, conf.marker, &fb_marker) < 0)
                        return log_error_errno(-ENOMEM, "out of memory"), KILN_EXIT_FAILURE;
                report_path = fb_report;
                spec_path = firstboot;
                if (fb_ca)
                        ro.ca_file = fb_ca;
                if (!ip)
                        ip = conf.ip;
        } else {
                r = cmd_load_spec(spec_path, false, &spec, NULL);
                if (r != KILN_EXIT_OK)
                        return r;
        }
        _cleanup_free_ char *ca_file = NULL;
        _cleanup_strbuf_ struct strbuf ca_err = STRBUF_INIT;
        r = ca_for_spec(spec->ca, ro.ca_file, &ca_file, &ca_err);
        if (r < 0) {
                log_error_errno(r, "failed to load the CA of host spec '%s' (%s): %s", spec_path, ca_describe(spec->ca, (char[URL_DISPLAY_MAX]) {}),
                                strbuf_why(&ca_err, r));
                return KILN_EXIT_REGISTER;
        }
        if (ca_file)
                ro.ca_file = ca_file;   /* the spec's ca: beside --ca */
        if (!spec->cloudstack.present && !spec->webhook.present) {
                log_error("host spec '%s' has no register section (cloudstack or webhook): nothing to do", spec_path);
                return KILN_EXIT_REGISTER;
        }

        r = register_load_report(report_path, &report);
        if (r != KILN_EXIT_OK)
                return r;
        if (ip && (r = report_set_node_field(report, "ip", ip)) < 0) {
                log_error_errno(r, "failed to set the node's address: %m");
                return KILN_EXIT_FAILURE;
        }

        register_options_start(&ro);
        register_attach_events(report, &ev, spec, &ro);
        if (firstboot && (r = firstboot_storage(root, spec, report, &ro)) != KILN_EXIT_OK) {
                report_set_event_hook(report, NULL, NULL);
                register_events_done(&ev);
                int k = report_save(report, save ? save : report_path);
                if (k < 0)
                        log_warning_errno(k, "failed to save the updated run report '%s': %m", save ? save : report_path);
                return r;
        }
        (void) report_stage_begin(report, "register");
        r = register_run(spec, report, &ro, &err);
        (void) report_stage_end(report, "register", r < 0 ? REPORT_FAIL : REPORT_SUCCESS, r < 0 && err.len ? err.buf : NULL);
        report_set_event_hook(report, NULL, NULL);
        if (ev.failed)
                log_warning("%u stage event(s) could not be delivered: %s", ev.failed,
                            ev.last_error ? ev.last_error : "unknown error");
        register_events_done(&ev);

        int k = report_save(report, save ? save : report_path);
        if (k < 0)
                log_warning_errno(k, "failed to save the updated run report '%s': %m", save ? save : report_path);

        if (r < 0) {
                log_error("registration of node '%s' failed: %s", report_node_field(report, "id") ?: "?",
                          strbuf_why(&err, r));
                return KILN_EXIT_REGISTER;
        }
        register_said(spec, report);
        if (fb_marker) {
                k = firstboot_mark_write(fb_marker, report_run_id(report));
                if (k < 0)
                        return log_error_errno(k, "registered, but failed to write the marker '%s' (the unit runs again "
                                               "at the next boot, which adds no second host): %m", fb_marker), KILN_EXIT_FAILURE;
                log_info("first-boot registration done: %s written", fb_marker);
        }
        return KILN_EXIT_OK;
}
