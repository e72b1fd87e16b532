#include "register.h"
#include "json.h"
#include "cloudstack.h"
#include "firstboot.h"
#include "webhook.h"
#include "url.h"

#include <sys/random.h>
#include <time.h>

void register_options_default(struct register_options *o) {
        *o = (struct register_options) {
                .policy = DELIVERY_POLICY_DEFAULT,
                .event_policy = { 2000, 5000, 5000, 500, 2000, 0, 0, NULL, NULL },
        };
}

void register_options_start(struct register_options *o) {
        /* One budget for the whole command; events get at most a fifth of it each. */
        if (o->event_policy.total_ms > o->policy.total_ms / 5)
                o->event_policy.total_ms = o->policy.total_ms / 5;
        if (o->event_policy.request_timeout_ms > o->event_policy.total_ms)
                o->event_policy.request_timeout_ms = o->event_policy.total_ms;
        o->policy.deadline_usec = o->event_policy.deadline_usec = now_usec() + (uint64_t) o->policy.total_ms * 1000;
}

static void on_event(struct report *r, const char *kind, json_object *event, void *userdata) {
        struct register_events *ev = userdata;
        const struct spec_webhook *w = &ev->spec->webhook;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        _cleanup_free_ char *delivery = NULL;
        json_object *seq;

        if (ev->disabled)
                return;
        if (asprintf(&delivery, "%s/%d", report_run_id(r) ? report_run_id(r) : "-",
                     json_object_object_get_ex(event, "seq", &seq) ? json_object_get_int(seq) : 0) < 0)
                return;
        struct webhook_target t = {
                .url = w->url, .hmac_key = w->hmac_key, .ca_file = ev->opts->ca_file,
                .policy = &ev->opts->event_policy,
        };
        int k = webhook_post(&t, kind, report_run_id(r), report_node_field(r, "id"), delivery,
                             json_object_to_json_string_ext(event, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                             &err);
        if (k >= 0) {
                ev->sent++;
                return;
        }
        ev->failed++;
        ev->disabled = true;
        if (!ev->last_error && err.len)
                ev->last_error = strbuf_detach(&err);
}

void register_attach_events(struct report *r, struct register_events *ev, const struct spec *spec,
                            const struct register_options *opts) {
        *ev = (struct register_events) { .spec = spec, .opts = opts };
        if (spec->webhook.present && spec->webhook.url)
                report_set_event_hook(r, on_event, ev);
}

void register_events_done(struct register_events *ev) {
        if (!ev)
                return;
        free(ev->last_error);
        ev->last_error = NULL;
}

/* A URL as the report and its events show it (url.h). */
static json_object *jurl(const char *s) {
        char shown[URL_DISPLAY_MAX];
        return s ? json_object_new_string(url_display(s, shown)) : NULL;
}

static int register_cloudstack(const struct spec *spec, struct report *r, const struct register_options *o,
                               struct strbuf *err) {
        const struct spec_cloudstack *c = &spec->cloudstack;
        _cleanup_(cs_result_done) struct cs_result res = { 0 };
        _cleanup_json_ json_object *rec = json_object_new_object();
        const char *ip = report_node_field(r, "ip");
        int k;

        if (!rec)
                return -ENOMEM;
        json_object_object_add(rec, "endpoint", jurl(c->endpoint));
        json_object_object_add(rec, "zone", json_str(c->zone));
        json_object_object_add(rec, "pod", json_str(c->pod));
        json_object_object_add(rec, "cluster", json_str(c->cluster));
        json_object_object_add(rec, "ip", json_str(ip));
        if (report_get_result(r) == REPORT_FAIL) {
                /* A node whose install failed is reported, never offered as a hypervisor. */
                json_object_object_add(rec, "result", json_str("SKIPPED"));
                json_object_object_add(rec, "message", json_str("the run failed; host not added"));
                return report_set_registration(r, "cloudstack", TAKE_PTR(rec));
        }
        if (o->cloudstack_firstboot) {
                /* addHost logs in to the host over SSH: only the running host can take it */
                json_object_object_add(rec, "result", json_str(FIRSTBOOT_RESULT));
                json_object_object_add(rec, "message", json_str("left to the installed system's first boot: " FIRSTBOOT_UNIT_NAME
                                                            " runs kiln register once the network and sshd are up"));
                json_object_object_add(rec, "unit", json_str(FIRSTBOOT_UNIT_NAME));
                return report_set_registration(r, "cloudstack", TAKE_PTR(rec));
        }
        struct cs_client cl = {
                .endpoint = c->endpoint, .api_key = c->api_key, .secret_key = c->secret_key,
                .ca_file = o->ca_file, .policy = &o->policy,
        };
        struct cs_host h = {
                .zone = c->zone, .pod = c->pod, .cluster = c->cluster, .ip = ip,
                .url = c->host_url, .username = c->host_username, .password = c->host_password,
        };
        if (!ip)
                k = -EADDRNOTAVAIL;
        else
                k = cs_register_host(&cl, &h, &res, err);
        if (k == -EADDRNOTAVAIL)
                strbuf_errorf(err, k, "the report names no IP address for this node; CloudStack finds hosts by IP");
        if (k < 0) {
                json_object_object_add(rec, "result", json_str("FAIL"));
                json_object_object_add(rec, "error", json_str(err->len ? err->buf : NULL));
        } else {
                json_object_object_add(rec, "result", json_str("SUCCESS"));
                json_object_object_add(rec, "zone_id", json_str(res.zone_id));
                json_object_object_add(rec, "pod_id", json_str(res.pod_id));
                json_object_object_add(rec, "cluster_id", json_str(res.cluster_id));
                json_object_object_add(rec, "host_id", json_str(res.host_id));
                json_object_object_add(rec, "host_name", json_str(res.host_name));
                json_object_object_add(rec, "host_state", json_str(res.host_state));
                json_object_object_add(rec, "added", json_object_new_boolean(res.added));
                if (res.found_after_add)
                        json_object_object_add(rec, "found_after_addhost", json_object_new_boolean(true));
                json_object_object_add(rec, "addhost_sent", json_object_new_int((int32_t) res.add_sends));
        }
        int s = report_set_registration(r, "cloudstack", TAKE_PTR(rec));
        return k < 0 ? k : s;
}

/* A random (version 4) UUID: the delivery id of one run's report. */
static int random_uuid(char buf[37]) {
        uint8_t id[16];
        int q = 0;
        if (getrandom(id, sizeof id, 0) != (ssize_t) sizeof id)
                return -errno;
        id[6] = (id[6] & 0x0f) | 0x40;
        id[8] = (id[8] & 0x3f) | 0x80;
        for (size_t i = 0; i < sizeof id; i++)
                q += snprintf(buf + q, 37 - (size_t) q, "%s%02x", (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", id[i]);
        return 0;
}

static int register_webhook(const struct spec *spec, struct report *r, const struct delivery_policy *policy,
                            const char *ca_file, struct strbuf *err) {
        const struct spec_webhook *w = &spec->webhook;
        _cleanup_strbuf_ struct strbuf body = STRBUF_INIT;
        _cleanup_free_ char *delivery = NULL;
        json_object *rec = json_object_new_object();
        char id[37];
        int k;

        if (!rec)
                return -ENOMEM;
        json_object_object_add(rec, "url", jurl(w->url));
        json_object_object_add(rec, "result", json_str("SUCCESS"));
        /* Recorded before sending, so the report the controller gets says where it went. */
        k = report_set_registration(r, "webhook", rec);
        if (k < 0)
                return k;
        k = report_to_json(r, &body);
        if (k < 0)
                return k;
        /* A new id for every run that sends the report (the first boot's kiln
         * register after the installer's), the same on each of its retries: a
         * receiver that drops duplicates keeps the later report. */
        k = random_uuid(id);
        if (k < 0)
                return k;
        if (asprintf(&delivery, "%s/report/%s", report_run_id(r), id) < 0)
                return -ENOMEM;
        struct webhook_target t = { .url = w->url, .hmac_key = w->hmac_key, .ca_file = ca_file, .policy = policy };
        k = webhook_post(&t, "report", report_run_id(r), report_node_field(r, "id"), delivery, strbuf_str(&body), err);
        if (k < 0) {
                json_object_object_add(rec, "result", json_str("FAIL"));
                json_object_object_add(rec, "error", json_str(err->len ? err->buf : NULL));
        }
        return k;
}

int register_post_event(const struct spec *spec, const struct report *r, const struct register_options *o,
                        const char *kind, json_object *fields, struct strbuf *err) {
        const struct spec_webhook *w = &spec->webhook;
        _cleanup_json_ json_object *ev = fields;
        _cleanup_free_ char *delivery = NULL;
        char id[37], when[40];
        struct timespec ts;
        int k = 0;
        if (!ev)
                return -ENOMEM;
        if (!w->present || !w->url)
                return 0;
        if ((k = random_uuid(id)) < 0)
                return k;
        clock_gettime(CLOCK_REALTIME, &ts);
        report_format_time((uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u, when, sizeof when);
        json_set_str(ev, "type", kind, &k);
        json_set_str(ev, "run_id", report_run_id(r), &k);
        json_set_str(ev, "node_id", report_node_field(r, "id"), &k);
        json_set_str(ev, "hostname", report_node_field(r, "hostname"), &k);
        json_set_str(ev, "time", when, &k);
        if (k < 0 || asprintf(&delivery, "%s/%s/%s", report_run_id(r) ?: "-", kind, id) < 0)
                return -ENOMEM;
        struct webhook_target t = { .url = w->url, .hmac_key = w->hmac_key, .ca_file = o->ca_file, .policy = &o->event_policy };
        return webhook_post(&t, kind, report_run_id(r), report_node_field(r, "id"), delivery,
                            json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), err);
}

unsigned register_report_share_ms(unsigned total_ms) {
        unsigned share = total_ms / 4;
        if (share < REGISTER_REPORT_MIN_MS)
                share = total_ms < REGISTER_REPORT_MIN_MS ? total_ms : REGISTER_REPORT_MIN_MS;
        if (share > REGISTER_REPORT_MAX_MS)
                share = REGISTER_REPORT_MAX_MS;
        return share;
}

int register_run(const struct spec *spec, struct report *r, const struct register_options *opts, struct strbuf *err) {
        struct register_options def;
        _cleanup_strbuf_ struct strbuf err_cs = STRBUF_INIT, err_wh = STRBUF_INIT;
        int k_cs = 0, k_wh = 0;

        if (opts)
                def = *opts;
        else
                register_options_default(&def);
        opts = &def;
        if (!spec->cloudstack.present && !(spec->webhook.present && spec->webhook.url))
                return -ENOMSG;
        bool webhook = spec->webhook.present && spec->webhook.url;
        uint64_t now = now_usec();
        uint64_t deadline = def.policy.deadline_usec ? def.policy.deadline_usec : now + (uint64_t) def.policy.total_ms * 1000;
        /* The report has a share of the budget of its own: a controller that
         * never answers costs CloudStack's part, and the report (FAIL
         * included) still goes out. */
        unsigned share = webhook ? register_report_share_ms(def.policy.total_ms) : 0;
        struct delivery_policy cs = def.policy, wh = def.policy;
        cs.deadline_usec = deadline - (uint64_t) share * 1000 > now ? deadline - (uint64_t) share * 1000 : now;
        if (spec->cloudstack.present) {
                def.policy = cs;
                k_cs = register_cloudstack(spec, r, opts, &err_cs);
        }
        if (webhook) {
                uint64_t t = now_usec();
                /* what CloudStack left over, and at least the report's own share */
                wh.deadline_usec = deadline > t + (uint64_t) share * 1000 ? deadline : t + (uint64_t) share * 1000;
                k_wh = register_webhook(spec, r, &wh, opts->ca_file, &err_wh);
        }
        if (k_cs < 0)
                return strbuf_errorf(err, k_cs, "%s", strbuf_str(&err_cs));
        if (k_wh < 0)
                return strbuf_errorf(err, k_wh, "%s", strbuf_str(&err_wh));
        return 0;
}
