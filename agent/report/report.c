#include "report.h"
#include "json.h"
#include "log.h"
#include "url.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

static uint64_t realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

void report_format_time(uint64_t usec, char *buf, size_t len) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;
        char base[32] = "1970-01-01T00:00:00";
        if (gmtime_r(&t, &tm))
                strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, len, "%s.%03uZ", base, (unsigned) (usec / 1000 % 1000));
}

const char *report_result_name(enum report_result res) {
        switch (res) {
        case REPORT_SUCCESS: return "SUCCESS";
        case REPORT_WARN:    return "WARN";
        case REPORT_FAIL:    return "FAIL";
        default:             return NULL;
        }
}

/* Every string enters the document redacted. */
static json_object *jstr_new(const char *s) {
        if (!s)
                return NULL;
        _cleanup_free_ char *c = strdup(s);
        if (!c)
                return NULL;
        log_redact(c);
        return json_object_new_string(c);
}

static int jset_str(json_object *o, const char *key, const char *s) {
        json_object *v = jstr_new(s);
        if (s && !v)
                return -ENOMEM;
        return json_add(o, key, v);
}

static int jset_time(json_object *o, const char *key, uint64_t usec) {
        char buf[40];
        report_format_time(usec, buf, sizeof buf);
        return jset_str(o, key, buf);
}

static json_object *jget_or_add(json_object *o, const char *key, json_type t) {
        json_object *v = json_get(o, key);
        if (v && json_object_is_type(v, t))
                return v;
        v = t == json_type_array ? json_object_new_array() : json_object_new_object();
        if (!v || json_add(o, key, v) < 0)
                return NULL;
        return v;
}

int report_new(struct report **ret) {
        _cleanup_report_free_ struct report *r = calloc(1, sizeof *r);
        uint8_t id[16];
        char run_id[40];
        int q = 0;

        if (!r)
                return -ENOMEM;
        if (getrandom(id, sizeof id, 0) != (ssize_t) sizeof id)
                return -errno;
        id[6] = (id[6] & 0x0f) | 0x40;      /* a version 4 UUID */
        id[8] = (id[8] & 0x3f) | 0x80;
        for (size_t i = 0; i < sizeof id; i++)
                q += snprintf(run_id + q, sizeof run_id - q, "%s%02x",
                              (i == 4 || i == 6 || i == 8 || i == 10) ? "-" : "", id[i]);
        r->root = json_object_new_object();
        if (!r->root)
                return -ENOMEM;
        r->start_mono = now_usec();
        uint64_t t = realtime_usec();
        if (json_add(r->root, "kiln_report", json_object_new_int(1)) < 0 ||
            jset_str(r->root, "run_id", run_id) < 0 ||
            json_add(r->root, "node", json_object_new_object()) < 0 ||
            jset_time(r->root, "started", t) < 0 ||
            json_add(r->root, "started_usec", json_object_new_int64((int64_t) t)) < 0 ||
            json_add(r->root, "result", NULL) < 0 ||
            json_add(r->root, "stages", json_object_new_array()) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(r);
        return 0;
}

struct report *report_free(struct report *r) {
        if (!r)
                return NULL;
        json_object_put(r->root);
        free(r);
        return NULL;
}

void report_set_event_hook(struct report *r, report_event_fn fn, void *userdata) {
        r->hook = fn;
        r->hook_userdata = userdata;
}

const char *report_run_id(const struct report *r) { return json_get_str(r->root, "run_id"); }

const char *report_node_field(const struct report *r, const char *field) {
        return json_get_str(json_get(r->root, "node"), field);
}

json_object *report_get(const struct report *r, const char *key) { return json_get(r->root, key); }

enum report_result report_get_result(const struct report *r) {
        const char *s = json_get_str(r->root, "result");
        if (!s)
                return REPORT_NONE;
        for (enum report_result i = REPORT_SUCCESS; i <= REPORT_FAIL; i++)
                if (streq(s, report_result_name(i)))
                        return i;
        return REPORT_NONE;
}

int report_set_node_field(struct report *r, const char *field, const char *value) {
        json_object *node = jget_or_add(r->root, "node", json_type_object);
        if (!node)
                return -ENOMEM;
        int k = jset_str(node, field, value);
        if (k < 0)
                return k;
        /* The id follows uuid, else mac. */
        if (!streq(field, "id")) {
                const char *id = json_get_str(node, "uuid");
                if (!id)
                        id = json_get_str(node, "mac");
                if (id) {
                        _cleanup_free_ char *c = strdup(id);
                        if (!c)
                                return -ENOMEM;
                        return jset_str(node, "id", c);
                }
        }
        return 0;
}

/* The boot NIC as inventory_primary_mac() picks it (first up NIC with a MAC,
 * else the first with a MAC), preferring one with an IPv4 address. */
static const struct inv_nic *primary_nic(const struct inventory *inv) {
        const struct inv_nic *best = NULL;
        int best_score = -1;
        for (size_t i = 0; i < inv->n_nics; i++) {
                const struct inv_nic *n = &inv->nics[i];
                if (!n->mac)
                        continue;
                int score = (n->up ? 2 : 0) + (n->ipv4 && n->ipv4[0] ? 1 : 0);
                if (score > best_score) {
                        best = n;
                        best_score = score;
                }
        }
        return best;
}

static json_object *strv_to_json(char *const *v) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; a && v && v[i]; i++)
                if (json_object_array_add(a, jstr_new(v[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
}

int report_set_node(struct report *r, const struct inventory *inv, const char *hostname, const char *ip) {
        const struct inv_nic *nic = primary_nic(inv);
        if (!ip && nic && nic->ipv4 && nic->ipv4[0])
                ip = nic->ipv4[0];
        struct { const char *k, *v; } f[] = {
                { "hostname", hostname ? hostname : inv->hostname },
                { "uuid", inv->machine_uuid },
                { "serial", inv->serial },
                { "mac", nic ? nic->mac : NULL },
                { "ip", ip },
        };
        for (size_t i = 0; i < ELEMENTSOF(f); i++)
                if (f[i].v) {
                        int k = report_set_node_field(r, f[i].k, f[i].v);
                        if (k < 0)
                                return k;
                }

        json_object *s = json_object_new_object();
        if (!s || json_add(r->root, "inventory", s) < 0)
                return -ENOMEM;
        if (jset_str(s, "cpu_model", inv->cpu_model) < 0 ||
            json_add(s, "cpus", json_object_new_int((int32_t) inv->cpus)) < 0 ||
            json_add(s, "cpu_aes", json_object_new_boolean(inv->cpu_aes)) < 0 ||
            json_add(s, "cpu_vaes", json_object_new_boolean(inv->cpu_vaes)) < 0 ||
            json_add(s, "memory_bytes", json_object_new_int64((int64_t) inv->mem_total)) < 0)
                return -ENOMEM;
        json_object *disks = jget_or_add(s, "disks", json_type_array);
        json_object *nics = jget_or_add(s, "nics", json_type_array);
        if (!disks || !nics)
                return -ENOMEM;
        for (size_t i = 0; i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                json_object *o = json_object_new_object();
                if (!o || json_object_array_add(disks, o) < 0)
                        return -ENOMEM;
                if (jset_str(o, "name", d->name) < 0 || jset_str(o, "path", d->path) < 0 ||
                    json_add(o, "size", json_object_new_int64((int64_t) d->size)) < 0 ||
                    jset_str(o, "model", d->model) < 0 || jset_str(o, "serial", d->serial) < 0 ||
                    jset_str(o, "transport", d->transport) < 0 ||
                    json_add(o, "rotational", json_object_new_boolean(d->rotational)) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < inv->n_nics; i++) {
                const struct inv_nic *n = &inv->nics[i];
                json_object *o = json_object_new_object();
                if (!o || json_object_array_add(nics, o) < 0)
                        return -ENOMEM;
                if (jset_str(o, "name", n->name) < 0 || jset_str(o, "mac", n->mac) < 0 ||
                    json_add(o, "up", json_object_new_boolean(n->up)) < 0 ||
                    json_add(o, "ipv4", strv_to_json(n->ipv4)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static json_object *find_open_stage(struct report *r, const char *stage) {
        json_object *stages = json_get(r->root, "stages");
        size_t n = stages ? json_object_array_length(stages) : 0;
        for (size_t i = n; i > 0; i--) {
                json_object *s = json_object_array_get_idx(stages, i - 1);
                const char *name = json_get_str(s, "name");
                if (name && streq(name, stage) && !json_get(s, "finished"))
                        return s;
        }
        return NULL;
}

static void emit(struct report *r, const char *kind, json_object *stage) {
        if (!r->hook)
                return;
        json_object *ev = json_object_new_object();
        if (!ev)
                return;
        const char *node = report_node_field(r, "id");
        r->seq++;
        /* Copy the stage's own fields, then who and when. */
        if (stage) {
                json_object_object_foreach(stage, k, v) {
                        if (!streq(k, "started_usec"))
                                json_add(ev, streq(k, "name") ? "stage" : k, json_object_get(v));
                }
        }
        jset_str(ev, "type", kind);
        jset_str(ev, "run_id", report_run_id(r));
        jset_str(ev, "node_id", node);
        jset_str(ev, "hostname", report_node_field(r, "hostname"));
        if (report_node_field(r, "layout"))     /* a spec with layouts: the one installed */
                jset_str(ev, "layout", report_node_field(r, "layout"));
        if (report_node_field(r, "nodes_row"))  /* a spec with nodes: the row that applied */
                jset_str(ev, "nodes_row", report_node_field(r, "nodes_row"));
        json_add(ev, "seq", json_object_new_int((int32_t) r->seq));
        jset_time(ev, "time", realtime_usec());
        r->hook(r, kind, ev, r->hook_userdata);
        json_object_put(ev);
}

int report_event(struct report *r, const char *kind, json_object *fields) {
        if (!r || !kind) {
                json_object_put(fields);
                return -EINVAL;
        }
        emit(r, kind, fields);
        json_object_put(fields);
        return 0;
}

int report_stage_begin(struct report *r, const char *stage) {
        json_object *stages = jget_or_add(r->root, "stages", json_type_array);
        json_object *s = json_object_new_object();
        uint64_t t = realtime_usec();
        if (!stages || !s)
                return -ENOMEM;
        if (json_object_array_add(stages, s) < 0) {
                json_object_put(s);
                return -ENOMEM;
        }
        if (jset_str(s, "name", stage) < 0 || jset_time(s, "started", t) < 0 ||
            json_add(s, "started_usec", json_object_new_int64((int64_t) t)) < 0)
                return -ENOMEM;
        emit(r, "stage-begin", s);
        return 0;
}

/* When O started, for its duration up to NOW. A loaded report is input: a
 * start missing, before the epoch or after now counts as now (a duration of
 * 0), so the subtraction cannot overflow. */
static int64_t started_usec(json_object *o, uint64_t now) {
        json_object *st = json_get(o, "started_usec");
        int64_t start = st ? json_object_get_int64(st) : -1;
        return start < 0 || (uint64_t) start > now ? (int64_t) now : start;
}

static int close_stage(json_object *s, enum report_result result, const char *message) {
        uint64_t t = realtime_usec();
        int64_t start = started_usec(s, t);
        if (jset_time(s, "finished", t) < 0 ||
            json_add(s, "duration_ms", json_object_new_int64(((int64_t) t - start) / 1000)) < 0 ||
            jset_str(s, "result", report_result_name(result) ? report_result_name(result) : "FAIL") < 0 ||
            (message && jset_str(s, "message", message) < 0))
                return -ENOMEM;
        return 0;
}

int report_stage_end(struct report *r, const char *stage, enum report_result result, const char *message) {
        json_object *s = find_open_stage(r, stage);
        if (!s) {
                /* An end without a begin still gets recorded (zero duration). */
                int k = report_stage_begin(r, stage);
                if (k < 0)
                        return k;
                s = find_open_stage(r, stage);
                if (!s)
                        return -ENOENT;
        }
        int k = close_stage(s, result, message);
        if (k < 0)
                return k;
        emit(r, "stage-end", s);
        return 0;
}

int report_add_storage(struct report *r, const char *kind, const char *id, const char *device, const char *description) {
        json_object *a = jget_or_add(r->root, "storage", json_type_array);
        json_object *o = json_object_new_object();
        if (!a || !o)
                return -ENOMEM;
        if (json_object_array_add(a, o) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        if (jset_str(o, "kind", kind) < 0 || jset_str(o, "id", id) < 0 || jset_str(o, "device", device) < 0 ||
            (description && jset_str(o, "description", description) < 0))
                return -ENOMEM;
        return 0;
}

int report_set_image(struct report *r, const char *url, const char *sha256, uint64_t bytes, double seconds) {
        char shown[URL_DISPLAY_MAX];
        json_object *o = json_object_new_object();
        if (!o || json_add(r->root, "image", o) < 0)
                return -ENOMEM;
        if (jset_str(o, "url", url ? url_display(url, shown) : NULL) < 0 || jset_str(o, "sha256", sha256) < 0 ||
            json_add(o, "bytes", json_object_new_int64((int64_t) bytes)) < 0 ||
            json_add(o, "seconds", json_object_new_double(seconds)) < 0)
                return -ENOMEM;
        return 0;
}

int report_set_bench(struct report *r, const char *name, double value) {
        json_object *b = jget_or_add(r->root, "bench", json_type_object);
        if (!b)
                return -ENOMEM;
        return json_add(b, name, json_object_new_double(value));
}

int report_set_bench_text(struct report *r, const char *name, const char *value) {
        json_object *b = jget_or_add(r->root, "bench", json_type_object);
        if (!b)
                return -ENOMEM;
        return jset_str(b, name, value);
}

int report_set_bench_verdict(struct report *r, enum report_result result, const char *text) {
        json_object *b = jget_or_add(r->root, "bench", json_type_object);
        if (!b)
                return -ENOMEM;
        if (jset_str(b, "result", report_result_name(result)) < 0 || jset_str(b, "verdict", text) < 0)
                return -ENOMEM;
        return 0;
}

int report_set_registration(struct report *r, const char *key, json_object *value) {
        json_object *g = jget_or_add(r->root, "registration", json_type_object);
        if (!g) {
                json_object_put(value);
                return -ENOMEM;
        }
        return json_add(g, key, value);
}

int report_set_member(struct report *r, const char *key, json_object *value) {
        return json_add(r->root, key, value);
}

int report_finish(struct report *r, enum report_result result, const char *failed_stage, const char *error) {
        uint64_t t = realtime_usec();
        int64_t start = started_usec(r->root, t);

        /* A stage still open when the run fails is where it failed: it ends
         * here, and its end goes out like any other. A run that succeeds
         * leaves open stages open: they are what finishes it (the
         * registration that delivers this report, the finish step) and end
         * on their own, so every stage-begin gets exactly one stage-end. */
        json_object *stages = json_get(r->root, "stages");
        size_t n = result == REPORT_FAIL && stages ? json_object_array_length(stages) : 0;
        for (size_t i = 0; i < n; i++) {
                json_object *s = json_object_array_get_idx(stages, i);
                if (!json_get(s, "finished")) {
                        int k = close_stage(s, REPORT_FAIL, error);
                        if (k < 0)
                                return k;
                        emit(r, "stage-end", s);
                }
        }
        if (jset_time(r->root, "finished", t) < 0 ||
            json_add(r->root, "duration_ms", json_object_new_int64(((int64_t) t - start) / 1000)) < 0 ||
            jset_str(r->root, "result", report_result_name(result)) < 0)
                return -ENOMEM;
        if (result == REPORT_FAIL) {
                _cleanup_free_ char *tail = log_tail(REPORT_LOG_TAIL_LINES);
                if (jset_str(r->root, "failed_stage", failed_stage) < 0 ||
                    jset_str(r->root, "error", error) < 0 ||
                    jset_str(r->root, "log_tail", tail) < 0)
                        return -ENOMEM;
        }
        json_object *ev = json_object_new_object();
        if (!ev)
                return -ENOMEM;
        jset_str(ev, "result", report_result_name(result));
        if (failed_stage)
                jset_str(ev, "failed_stage", failed_stage);
        if (error)
                jset_str(ev, "error", error);
        json_add(ev, "duration_ms", json_object_new_int64(((int64_t) t - start) / 1000));
        emit(r, "run-end", ev);
        json_object_put(ev);
        return 0;
}

int report_to_json(const struct report *r, struct strbuf *out) {
        const char *s = json_object_to_json_string_ext(r->root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!s)
                return -ENOMEM;
        _cleanup_free_ char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        log_redact(c);
        int k = strbuf_adds(out, c);
        return k < 0 ? k : strbuf_add(out, "\n", 1);
}

int report_save(const struct report *r, const char *path) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int k = report_to_json(r, &sb);
        return k < 0 ? k : write_file_atomic(path, sb.buf, sb.len);
}

int report_from_json(const char *text, size_t len, struct report **ret) {
        _cleanup_report_free_ struct report *r = NULL;
        if (len > REPORT_MAX_BYTES || len > INT_MAX)
                return -EFBIG;
        r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        r->root = json_tokener_parse_ex(tok, text, (int) len);
        bool ok = json_tokener_get_error(tok) == json_tokener_success;
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        /* one document: after it only white space (the tokener stops where the object closes) */
        while (ok && end < len && text[end] != 0 && strchr(" \t\r\n", text[end]))
                end++;
        if (ok && end < len)
                return -ENOTEMPTY;
        if (!ok || !json_object_is_type(r->root, json_type_object) || !json_get(r->root, "kiln_report") ||
            !report_run_id(r))
                return -EBADMSG;
        /* The stages are read and extended in place: a list of objects or none. */
        json_object *stages = json_get(r->root, "stages");
        if (stages && !json_object_is_type(stages, json_type_array))
                return -EBADMSG;
        size_t n = stages ? json_object_array_length(stages) : 0;
        for (size_t i = 0; i < n; i++)
                if (!json_object_is_type(json_object_array_get_idx(stages, i), json_type_object))
                        return -EBADMSG;
        r->start_mono = now_usec();
        r->seq = stages ? (unsigned) n * 2 + 1 : 0;
        *ret = TAKE_PTR(r);
        return 0;
}

int report_load(const char *path, struct report **ret) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int k = read_full_file(path, REPORT_MAX_BYTES, &data, &len);
        if (k < 0)
                return k;
        return report_from_json(data, len, ret);
}
