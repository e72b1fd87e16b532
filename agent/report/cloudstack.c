#include "cloudstack.h"
#include "url.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define CS_MAX_PARAMS 32

static void json_object_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

int cs_encode_value(const char *v, struct strbuf *out) {
        static const char hex[] = "0123456789ABCDEF";
        int r = 0;
        for (const unsigned char *p = (const unsigned char *) (v ? v : ""); r >= 0 && *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    *p == '.' || *p == '-' || *p == '*' || *p == '_')
                        r = strbuf_add(out, p, 1);
                else if (*p == ' ')
                        r = strbuf_adds(out, "%20");
                else {
                        char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
                        r = strbuf_add(out, e, 3);
                }
        }
        return r;
}

static int param_cmp(const void *a, const void *b) {
        return strcmp(((const struct cs_param *) a)->name, ((const struct cs_param *) b)->name);
}

int cs_signature(const struct cs_param *params, size_t n, const char *secret_key, char **ret) {
        _cleanup_strbuf_ struct strbuf s = STRBUF_INIT;
        struct cs_param sorted[CS_MAX_PARAMS];
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        int r = 0;

        if (n > CS_MAX_PARAMS || !secret_key)
                return -EINVAL;
        memcpy(sorted, params, n * sizeof *params);
        qsort(sorted, n, sizeof *sorted, param_cmp);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (i)
                        r = strbuf_add(&s, "&", 1);
                if (r >= 0)
                        r = strbuf_adds(&s, sorted[i].name);
                if (r >= 0)
                        r = strbuf_add(&s, "=", 1);
                if (r >= 0)
                        r = cs_encode_value(sorted[i].value, &s);
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < s.len; i++)
                if (s.buf[i] >= 'A' && s.buf[i] <= 'Z')
                        s.buf[i] = (char) (s.buf[i] - 'A' + 'a');
        if (!HMAC(EVP_sha1(), secret_key, (int) strlen(secret_key), (const unsigned char *) strbuf_str(&s),
                  s.len, mac, &mac_len))
                return -EIO;
        char *b64 = malloc(4 * ((mac_len + 2) / 3) + 1);
        if (!b64)
                return -ENOMEM;
        EVP_EncodeBlock((unsigned char *) b64, mac, (int) mac_len);
        *ret = b64;
        return 0;
}

int cs_format_expires(time_t t, char *buf, size_t len) {
        struct tm tm;
        if (!gmtime_r(&t, &tm))
                return -EINVAL;
        if (strftime(buf, len, "%Y-%m-%dT%H:%M:%S+0000", &tm) == 0)
                return -ENOBUFS;
        return 0;
}

int cs_build_query(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
                   time_t now, struct strbuf *out) {
        struct cs_param all[CS_MAX_PARAMS];
        char expires[40];
        _cleanup_free_ char *sig = NULL;
        size_t m = 0;
        int r;

        if (!c->api_key || !c->secret_key || n + 5 > CS_MAX_PARAMS)
                return -EINVAL;
        r = cs_format_expires(now + (c->expires_sec ? c->expires_sec : CS_EXPIRES_SEC), expires, sizeof expires);
        if (r < 0)
                return r;
        all[m++] = (struct cs_param) { "command", command };
        for (size_t i = 0; i < n; i++)
                all[m++] = params[i];
        all[m++] = (struct cs_param) { "response", "json" };
        all[m++] = (struct cs_param) { "apikey", c->api_key };
        all[m++] = (struct cs_param) { "signatureversion", "3" };
        all[m++] = (struct cs_param) { "expires", expires };
        r = cs_signature(all, m, c->secret_key, &sig);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < m; i++) {
                r = strbuf_addf(out, "%s%s=", i ? "&" : "", all[i].name);
                if (r >= 0)
                        r = cs_encode_value(all[i].value, out);
        }
        if (r >= 0)
                r = strbuf_adds(out, "&signature=");
        if (r >= 0)
                r = cs_encode_value(sig, out);
        return r;
}

/* CloudStack wraps every answer, errors included, in {"<command>response": {...}}. */
static json_object *response_object(json_object *root) {
        if (!json_object_is_type(root, json_type_object))
                return NULL;
        json_object_object_foreach(root, key, val) {
                (void) key;
                if (json_object_is_type(val, json_type_object))
                        return val;
        }
        return NULL;
}

static const char *jstr(json_object *o, const char *key) {
        json_object *v;
        if (!o || !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        return json_object_get_string(v);
}

static json_object *parse_json(const struct strbuf *sb) {
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return NULL;
        json_object *o = json_tokener_parse_ex(tok, strbuf_str(sb), (int) sb->len);
        if (json_tokener_get_error(tok) != json_tokener_success && o) {
                json_object_put(o);
                o = NULL;
        }
        json_tokener_free(tok);
        return o;
}

int cs_call(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
            json_object **ret, char **ret_error) {
        _cleanup_strbuf_ struct strbuf body = STRBUF_INIT;
        _cleanup_(http_response_done) struct http_response resp = { 0 };
        _cleanup_json_ json_object *root = NULL;
        int r;

        r = cs_build_query(c, command, params, n, time(NULL), &body);
        if (r < 0)
                return set_errorf(ret_error, r, "failed to build the CloudStack request '%s'", command);
        struct http_request req = {
                .method = "POST",
                .url = c->endpoint,
                .content_type = "application/x-www-form-urlencoded",
                .body = strbuf_str(&body),
                .body_len = body.len,
                .ca_file = c->ca_file,
        };
        r = c->send ? c->send(&req, c->policy, &resp, c->send_userdata) : delivery_send(&req, c->policy, &resp);
        root = parse_json(&resp.body);
        json_object *o = response_object(root);
        const char *code = jstr(o, "errorcode"), *text = jstr(o, "errortext");
        if (r < 0) {
                char shown[URL_DISPLAY_MAX];
                url_display(c->endpoint, shown);
                if (text)
                        return set_errorf(ret_error, r, "CloudStack refused %s (HTTP %ld, errorcode %s): %s",
                                          command, resp.status, code ? code : "?", text);
                if (r == -ETIMEDOUT)
                        return set_errorf(ret_error, r, "CloudStack at '%s' did not answer %s in time after %u attempts (last: %s)",
                                          shown, command, resp.attempts, resp.error[0] ? resp.error : "timeout");
                return set_errorf(ret_error, r, "CloudStack request %s to '%s' failed: %s", command, shown,
                                  resp.error[0] ? resp.error : strerror(-r));
        }
        if (!o)
                return set_errorf(ret_error, -EBADMSG, "CloudStack answered %s with something that is not its JSON (HTTP %ld)",
                                  command, resp.status);
        if (code)
                return set_errorf(ret_error, -EPROTO, "CloudStack refused %s (errorcode %s): %s", command, code,
                                  text ? text : "no error text");
        *ret = json_object_get(o);
        return 0;
}

/* The list "key" inside a list*response; NULL when CloudStack sent {} (no items). */
static json_object *list_items(json_object *resp, const char *key) {
        json_object *a;
        if (!json_object_object_get_ex(resp, key, &a) || !json_object_is_type(a, json_type_array))
                return NULL;
        return a;
}

static json_object *find_by(json_object *items, const char *field, const char *value) {
        size_t n = items ? json_object_array_length(items) : 0;
        for (size_t i = 0; i < n; i++) {
                json_object *it = json_object_array_get_idx(items, i);
                const char *v = jstr(it, field);
                if (v && streq(v, value))
                        return it;
        }
        return NULL;
}

static int names_of(json_object *items, struct strbuf *out) {
        size_t n = items ? json_object_array_length(items) : 0;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *v = jstr(json_object_array_get_idx(items, i), "name");
                r = strbuf_addf(out, "%s'%s'", i ? ", " : "", v ? v : "?");
        }
        if (r >= 0 && n == 0)
                r = strbuf_adds(out, "none");
        return r;
}

/* Find the item called name in list command's answer; *ret_id gets its id. */
static int resolve(const struct cs_client *c, const char *command, const char *key, const char *what,
                   const char *name, const struct cs_param *params, size_t n, char **ret_id, char **ret_error) {
        _cleanup_json_ json_object *resp = NULL;
        int r = cs_call(c, command, params, n, &resp, ret_error);
        if (r < 0)
                return r;
        json_object *items = list_items(resp, key);
        json_object *it = find_by(items, "name", name);
        const char *id = jstr(it, "id");
        if (!id) {
                _cleanup_strbuf_ struct strbuf known = STRBUF_INIT;
                (void) names_of(items, &known);
                return set_errorf(ret_error, -ENOENT, "CloudStack has no %s '%s' (it has: %s)", what, name,
                                  strbuf_str(&known));
        }
        char *d = strdup(id);
        if (!d)
                return -ENOMEM;
        *ret_id = d;
        return 0;
}

void cs_result_done(struct cs_result *r) {
        if (!r)
                return;
        free(r->zone_id);
        free(r->pod_id);
        free(r->cluster_id);
        free(r->host_id);
        free(r->host_name);
        free(r->host_state);
        *r = (struct cs_result) { 0 };
}

static int take_host(json_object *host, struct cs_result *res) {
        const char *id = jstr(host, "id"), *name = jstr(host, "name"), *state = jstr(host, "state");
        if (!id)
                return -EBADMSG;
        res->host_id = strdup(id);
        res->host_name = strdup_or_null(name);
        res->host_state = strdup_or_null(state);
        if (!res->host_id || (name && !res->host_name) || (state && !res->host_state))
                return -ENOMEM;
        return 0;
}

int cs_register_host(const struct cs_client *c, const struct cs_host *h, struct cs_result *ret, char **ret_error) {
        _cleanup_(cs_result_done) struct cs_result res = { 0 };
        _cleanup_json_ json_object *hosts = NULL, *added = NULL;
        _cleanup_free_ char *url = NULL;
        int r;

        if (!h->zone || !h->pod || !h->cluster || !h->ip)
                return set_errorf(ret_error, -EINVAL, "CloudStack registration needs zone, pod, cluster and the node's IP address");

        r = resolve(c, "listZones", "zone", "zone", h->zone, NULL, 0, &res.zone_id, ret_error);
        if (r < 0)
                return r;
        struct cs_param pod_p[] = { { "zoneid", res.zone_id } };
        r = resolve(c, "listPods", "pod", "pod", h->pod, pod_p, ELEMENTSOF(pod_p), &res.pod_id, ret_error);
        if (r < 0)
                return r;
        struct cs_param cl_p[] = { { "zoneid", res.zone_id }, { "podid", res.pod_id } };
        r = resolve(c, "listClusters", "cluster", "cluster", h->cluster, cl_p, ELEMENTSOF(cl_p), &res.cluster_id, ret_error);
        if (r < 0)
                return r;

        /* Look first: a second run (or first boot after install) must not add the host again. */
        struct cs_param lh_p[] = { { "zoneid", res.zone_id }, { "type", "Routing" } };
        r = cs_call(c, "listHosts", lh_p, ELEMENTSOF(lh_p), &hosts, ret_error);
        if (r < 0)
                return r;
        json_object *found = find_by(list_items(hosts, "host"), "ipaddress", h->ip);
        if (found) {
                r = take_host(found, &res);
                if (r < 0)
                        return set_errorf(ret_error, r, "CloudStack's listHosts answer has a host without an id");
                res.added = false;
                *ret = res;
                res = (struct cs_result) { 0 };
                return 0;
        }

        if (!h->url && asprintf(&url, "http://%s", h->ip) < 0)
                return -ENOMEM;
        struct cs_param add_p[8];
        size_t n = 0;
        add_p[n++] = (struct cs_param) { "zoneid", res.zone_id };
        add_p[n++] = (struct cs_param) { "podid", res.pod_id };
        add_p[n++] = (struct cs_param) { "clusterid", res.cluster_id };
        add_p[n++] = (struct cs_param) { "hypervisor", "KVM" };
        add_p[n++] = (struct cs_param) { "url", h->url ? h->url : url };
        add_p[n++] = (struct cs_param) { "username", h->username ? h->username : "root" };
        if (h->password)
                add_p[n++] = (struct cs_param) { "password", h->password };
        r = cs_call(c, "addHost", add_p, n, &added, ret_error);
        if (r < 0)
                return r;
        json_object *items = list_items(added, "host");
        r = take_host(items ? json_object_array_get_idx(items, 0) : NULL, &res);
        if (r < 0)
                return set_errorf(ret_error, r, "CloudStack's addHost answer names no host");
        res.added = true;
        *ret = res;
        res = (struct cs_result) { 0 };
        return 0;
}
