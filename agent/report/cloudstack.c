#include "cloudstack.h"
#include "json.h"
#include "backoff.h"
#include "url.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>

#define CS_MAX_PARAMS 32
#define CS_PAGE_SIZE 500        /* CloudStack's default.page.size: the most one page may hold */
#define CS_MAX_PAGES 1000       /* 500,000 hosts */
#define CS_MAX_ADD_SENDS 5      /* addHost sends without a verdict before kiln gives up */
#define CS_MAX_EXISTS_LOOKS 5   /* looks after "already in the database" that find nothing */


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

static json_object *parse_json(const struct strbuf *sb) {
        json_object *o = NULL;
        return json_parse(strbuf_str(sb), sb->len, &o) < 0 ? NULL : o;
}

/* What CloudStack said to one request, beyond the answer object. */
struct cs_answer {
        long status;            /* HTTP status, 0 if none arrived */
        bool verdict;           /* the body is CloudStack's own error object (errorcode), final */
        bool later;             /* CloudStack (or what is in front of it) said "later" (cs_answer_is_later) */
        long errorcode;
        char *errortext;
        unsigned retry_after_ms;
};

static void cs_answer_done(struct cs_answer *a) {
        free(a->errortext);
        *a = (struct cs_answer) { 0 };
}

static long body_errorcode(const struct http_response *resp) {
        json_object *root = parse_json(&resp->body);
        const char *code = json_get_text(response_object(root), "errorcode");
        long v = code ? strtol(code, NULL, 10) : 0;
        if (root)
                json_object_put(root);
        return code && v == 0 ? -1 : v;
}

/* CloudStack's errorcodes (ApiErrorCode; CloudStack answers with the HTTP
 * status equal to it) that mean "later", not a verdict:
 *   429 API_LIMIT_EXCEED: the API rate limit (api.throttling.*) refused the
 *       call before it ran; a rack sharing one account meets it at once;
 *   534 RESOURCE_UNAVAILABLE_ERROR: a ResourceUnavailableException, what
 *       the call needs is not there right now.
 * Verdicts (sending again changes nothing): 401 UNAUTHORIZED, 405
 * METHOD_NOT_ALLOWED, 430 MALFORMED_PARAMETER_ERROR, 431 PARAM_ERROR, 432
 * UNSUPPORTED_ACTION_ERROR, 511 UNAUTHORIZED2FA, 530 INTERNAL_ERROR (addHost's
 * own refusals, see cs_register_host), 531 ACCOUNT_ERROR, 532
 * ACCOUNT_RESOURCE_LIMIT_ERROR, 533 INSUFFICIENT_CAPACITY_ERROR, 535
 * RESOURCE_ALLOCATION_ERROR, 536 RESOURCE_IN_USE_ERROR, 537
 * NETWORK_RULE_CONFLICT_ERROR: each needs an operator. */
static bool cs_errorcode_is_later(long code) {
        return code == 429 || code == 534;
}

/* "Later": an HTTP 503 or 429 whatever its body says (503 is no ApiErrorCode:
 * a management server going down or a proxy in front says it, with or
 * without CloudStack's error JSON), or one of the errorcodes above. */
static bool cs_answer_is_later(const struct http_response *resp) {
        return backoff_status_is_pushback(resp->status) || cs_errorcode_is_later(body_errorcode(resp));
}

/* CloudStack's other error bodies are its verdict: a 530 from addHost ("Unable
 * to add the host ...") is not a fault on the way, and sending again changes
 * nothing. */
static bool cs_answer_is_final(const struct http_response *resp) {
        return body_errorcode(resp) != 0 && !cs_answer_is_later(resp);
}

static int cs_request(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
                      const struct delivery_policy *policy, json_object **ret, struct cs_answer *ans, struct strbuf *err) {
        static const struct delivery_policy def = DELIVERY_POLICY_DEFAULT;
        _cleanup_strbuf_ struct strbuf body = STRBUF_INIT;
        _cleanup_(http_response_done) struct http_response resp = { 0 };
        _cleanup_strbuf_ struct strbuf last = STRBUF_INIT;     /* the transport's word on the last attempt */
        _cleanup_json_ json_object *root = NULL;
        int r;

        r = cs_build_query(c, command, params, n, time(NULL), &body);
        if (r < 0)
                return strbuf_errorf(err, r, "failed to build the CloudStack request '%s'", command);
        struct http_request req = {
                .method = "POST",
                .url = c->endpoint,
                .content_type = "application/x-www-form-urlencoded",
                .body = strbuf_str(&body),
                .body_len = body.len,
                .ca_file = c->ca_file,
        };
        struct delivery_policy p = policy ? *policy : c->policy ? *c->policy : def;
        p.is_final = cs_answer_is_final;
        p.is_later = cs_answer_is_later;
        r = c->send ? c->send(&req, &p, &resp, &last, c->send_userdata) : delivery_send(&req, &p, &resp, &last);
        root = parse_json(&resp.body);
        json_object *o = response_object(root);
        const char *code = json_get_text(o, "errorcode"), *text = json_get_text(o, "errortext");
        bool later = r < 0 && resp.status && cs_answer_is_later(&resp);
        if (ans) {
                ans->status = resp.status;
                ans->later = later;
                ans->verdict = code != NULL && !later;
                ans->errorcode = code ? strtol(code, NULL, 10) : 0;
                ans->errortext = strdup_or_null(text);
                ans->retry_after_ms = resp.retry_after_ms;
        }
        if (r < 0) {
                char shown[URL_DISPLAY_MAX];
                url_display(c->endpoint, shown);
                if (later && text && r == -ETIMEDOUT)
                        return strbuf_errorf(err, r, "CloudStack still said later to %s when the time ran out, after %u attempt%s (HTTP %ld, errorcode %s): %s",
                                             command, resp.attempts, resp.attempts == 1 ? "" : "s", resp.status, code ? code : "?", text);
                if (later && text)
                        return strbuf_errorf(err, r, "CloudStack said later to %s (HTTP %ld, errorcode %s): %s",
                                             command, resp.status, code ? code : "?", text);
                if (text)
                        return strbuf_errorf(err, r, "CloudStack refused %s (HTTP %ld, errorcode %s): %s",
                                             command, resp.status, code ? code : "?", text);
                if (r == -ETIMEDOUT || r == -EAGAIN)
                        return strbuf_errorf(err, r, "CloudStack at '%s' did not answer %s in time after %u attempt%s (last: %s)",
                                             shown, command, resp.attempts, resp.attempts == 1 ? "" : "s", last.len ? last.buf : "timeout");
                return strbuf_errorf(err, r, "CloudStack request %s to '%s' failed: %s", command, shown,
                                     strbuf_why(&last, r));
        }
        if (!o)
                return strbuf_errorf(err, -EBADMSG, "CloudStack answered %s with something that is not its JSON (HTTP %ld)",
                                     command, resp.status);
        if (code)
                return strbuf_errorf(err, -EPROTO, "CloudStack refused %s (errorcode %s): %s", command, code,
                                     text ? text : "no error text");
        *ret = json_object_get(o);
        return 0;
}

int cs_call(const struct cs_client *c, const char *command, const struct cs_param *params, size_t n,
            json_object **ret, struct strbuf *err) {
        return cs_request(c, command, params, n, NULL, ret, NULL, err);
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
                const char *v = json_get_text(it, field);
                if (v && streq(v, value))
                        return it;
        }
        return NULL;
}

static int names_of(json_object *items, struct strbuf *out) {
        size_t n = items ? json_object_array_length(items) : 0;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                const char *v = json_get_text(json_object_array_get_idx(items, i), "name");
                r = strbuf_addf(out, "%s'%s'", i ? ", " : "", v ? v : "?");
        }
        if (r >= 0 && n == 0)
                r = strbuf_adds(out, "none");
        return r;
}

/* Find the item called name in list command's answer; *ret_id gets its id. */
static int resolve(const struct cs_client *c, const char *command, const char *key, const char *what,
                   const char *name, const struct cs_param *params, size_t n, char **ret_id, struct strbuf *err) {
        _cleanup_json_ json_object *resp = NULL;
        int r = cs_call(c, command, params, n, &resp, err);
        if (r < 0)
                return r;
        json_object *items = list_items(resp, key);
        json_object *it = find_by(items, "name", name);
        const char *id = json_get_text(it, "id");
        if (!id) {
                _cleanup_strbuf_ struct strbuf known = STRBUF_INIT;
                (void) names_of(items, &known);
                return strbuf_errorf(err, -ENOENT, "CloudStack has no %s '%s' (it has: %s)", what, name,
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
        const char *id = json_get_text(host, "id"), *name = json_get_text(host, "name"), *state = json_get_text(host, "state");
        if (!id)
                return -EBADMSG;
        res->host_id = strdup(id);
        res->host_name = strdup_or_null(name);
        res->host_state = strdup_or_null(state);
        if (!res->host_id || (name && !res->host_name) || (state && !res->host_state))
                return -ENOMEM;
        return 0;
}

int cs_host_address(const char *text, struct cs_address *ret) {
        char buf[INET6_ADDRSTRLEN + 2];
        size_t n = text ? strlen(text) : 0;
        struct cs_address a = { 0 };

        if (n >= 2 && text[0] == '[' && text[n - 1] == ']') {
                text++;
                n -= 2;
        }
        if (n == 0 || n >= sizeof buf)
                return -EINVAL;
        memcpy(buf, text, n);
        buf[n] = 0;
        if (inet_pton(AF_INET, buf, a.bytes) == 1)
                a.family = AF_INET;
        else if (inet_pton(AF_INET6, buf, a.bytes) == 1)
                a.family = AF_INET6;
        else
                return -EINVAL;
        if (!inet_ntop(a.family, a.bytes, a.text, sizeof a.text))
                return -errno;
        *ret = a;
        return 0;
}

bool cs_address_equal(const struct cs_address *a, const struct cs_address *b) {
        return a->family == b->family && memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

int cs_url_address(const char *url, struct cs_address *ret) {
        const char *p = url ? strstr(url, "://") : NULL;
        char host[256];
        size_t n;

        if (!p)
                return -EINVAL;
        p += 3;
        const char *at = memrchr(p, '@', strcspn(p, "/?#"));   /* userinfo@ of the authority */
        if (at)
                p = at + 1;
        if (*p == '[') {
                const char *e = strchr(p, ']');
                if (!e)
                        return -EINVAL;
                n = (size_t) (e - p) + 1;
        } else
                n = strcspn(p, ":/?#");
        if (n == 0 || n >= sizeof host)
                return -EINVAL;
        memcpy(host, p, n);
        host[n] = 0;
        if (cs_host_address(host, ret) >= 0)
                return 0;
        /* A name: CloudStack resolves it (InetAddress.getByName) and knows the host by the address. */
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
        if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
                return -EADDRNOTAVAIL;
        char text[INET6_ADDRSTRLEN];
        const void *src = ai->ai_family == AF_INET ? (const void *) &((struct sockaddr_in *) ai->ai_addr)->sin_addr
                                                   : (const void *) &((struct sockaddr_in6 *) ai->ai_addr)->sin6_addr;
        const char *t = inet_ntop(ai->ai_family, src, text, sizeof text);
        freeaddrinfo(ai);
        return t ? cs_host_address(text, ret) : -EADDRNOTAVAIL;
}

/* Every Routing host CloudStack has, page by page (500 a page, as many pages
 * as "count" says), until one has this address: *ret gets it (a reference),
 * or NULL. All zones: a host CloudStack has elsewhere is still this node. */
static int find_host(const struct cs_client *c, const struct cs_address *addr, json_object **ret, struct strbuf *err) {
        char page[16], size[16];
        size_t seen = 0;

        *ret = NULL;
        snprintf(size, sizeof size, "%d", CS_PAGE_SIZE);
        for (unsigned pg = 1; pg <= CS_MAX_PAGES; pg++) {
                _cleanup_json_ json_object *resp = NULL;
                snprintf(page, sizeof page, "%u", pg);
                struct cs_param lh_p[] = { { "type", "Routing" }, { "page", page }, { "pagesize", size } };
                int r = cs_call(c, "listHosts", lh_p, ELEMENTSOF(lh_p), &resp, err);
                if (r < 0)
                        return r;
                json_object *items = list_items(resp, "host"), *count;
                size_t n = items ? json_object_array_length(items) : 0;
                for (size_t i = 0; i < n; i++) {
                        json_object *it = json_object_array_get_idx(items, i);
                        struct cs_address a;
                        if (cs_host_address(json_get_text(it, "ipaddress"), &a) >= 0 && cs_address_equal(&a, addr)) {
                                *ret = json_object_get(it);
                                return 1;
                        }
                }
                seen += n;
                size_t total = json_object_object_get_ex(resp, "count", &count) ? (size_t) json_object_get_int64(count) : 0;
                if (n < CS_PAGE_SIZE || seen >= total)
                        return 0;
        }
        return strbuf_errorf(err, -E2BIG, "CloudStack's listHosts has more than %d pages of %d hosts",
                             CS_MAX_PAGES, CS_PAGE_SIZE);
}

/* A host CloudStack is still setting up: its addHost has not finished. */
static bool state_transient(const char *s) {
        return s && (streq(s, "Creating") || streq(s, "Connecting"));
}

/* Sleep the next backoff delay (backoff.h's rule: push-back after a "later",
 * never before its Retry-After), never past the deadline; false when the
 * deadline has passed, or does during the delay (slept up to it). */
static bool wait_before_looking(struct backoff *b, const struct delivery_policy *p, bool pushback, unsigned retry_after_ms) {
        uint64_t now = now_usec();
        if (now >= p->deadline_usec)
                return false;
        uint64_t d = (uint64_t) backoff_spread_ms(b, b->attempt++, pushback, retry_after_ms) * 1000;
        bool in_time = d < p->deadline_usec - now;
        if (!in_time)
                d = p->deadline_usec - now;
        struct timespec ts = { .tv_sec = (time_t) (d / 1000000), .tv_nsec = (long) (d % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        return in_time;
}

/* A request after a "later" that failed only because the deadline cut it
 * short (a loaded CI left a look 32 ms, a resend 17 ms). */
static bool cut_short_after_later(int r, unsigned later_sends, const struct delivery_policy *p) {
        return r == -ETIMEDOUT && later_sends > 0 && now_usec() >= p->deadline_usec;
}

/* The time ran out after addHost: CloudStack's last word on it is the story
 * (not the look or the resend the time left a few milliseconds for). */
static int time_ran_out(struct strbuf *err, const struct strbuf *verdict) {
        return verdict->len ? strbuf_errorf(err, -ETIMEDOUT, "%s, and the time ran out", verdict->buf)
                            : strbuf_errorf(err, -ETIMEDOUT, "the time for the registration ran out");
}

/* Over 120 lines on purpose: after the set-up (one budget, the address,
 * the ids), the loop is one state machine (look, add, look again) whose
 * every exit shares the result, CloudStack's last verdict and the backoff;
 * split up, each piece would take and hand back all three. */
int cs_register_host(const struct cs_client *c, const struct cs_host *h, struct cs_result *ret, struct strbuf *err) {
        static const struct delivery_policy def = DELIVERY_POLICY_DEFAULT;
        _cleanup_(cs_result_done) struct cs_result res = { 0 };
        _cleanup_free_ char *url = NULL;
        _cleanup_strbuf_ struct strbuf verdict = STRBUF_INIT;  /* CloudStack's answer to the last addHost */
        struct cs_address addr;
        int r;

        if (err)
                strbuf_reset(err);
        if (!h->zone || !h->pod || !h->cluster || !h->ip)
                return strbuf_errorf(err, -EINVAL, "CloudStack registration needs zone, pod, cluster and the node's IP address");

        /* One budget for every request of this registration (the caller's deadline, if it set one). */
        struct delivery_policy p = c->policy ? *c->policy : def;
        if (!p.deadline_usec)
                p.deadline_usec = now_usec() + (uint64_t) p.total_ms * 1000;
        struct cs_client cl = *c;
        cl.policy = &p;
        /* addHost is sent once per attempt: what follows a lost answer is a look, not a resend. */
        struct delivery_policy once = p;
        once.max_attempts = 1;

        /* The address CloudStack knows the host by: host_url's, else the node's (IPv6 in brackets). */
        if (h->url) {
                r = cs_url_address(h->url, &addr);
                if (r < 0)
                        return strbuf_errorf(err, r, "host_url '%s' names no address CloudStack can reach the host at", h->url);
        } else {
                r = cs_host_address(h->ip, &addr);
                if (r < 0)
                        return strbuf_errorf(err, r, "the node's address '%s' is not an IP address", h->ip);
                if (asprintf(&url, addr.family == AF_INET6 ? "http://[%s]" : "http://%s", addr.text) < 0)
                        return -ENOMEM;
        }

        r = resolve(&cl, "listZones", "zone", "zone", h->zone, NULL, 0, &res.zone_id, err);
        if (r < 0)
                return r;
        struct cs_param pod_p[] = { { "zoneid", res.zone_id } };
        r = resolve(&cl, "listPods", "pod", "pod", h->pod, pod_p, ELEMENTSOF(pod_p), &res.pod_id, err);
        if (r < 0)
                return r;
        struct cs_param cl_p[] = { { "zoneid", res.zone_id }, { "podid", res.pod_id } };
        r = resolve(&cl, "listClusters", "cluster", "cluster", h->cluster, cl_p, ELEMENTSOF(cl_p), &res.cluster_id, err);
        if (r < 0)
                return r;

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

        /* Look, and add only what is not there. After any addHost that did not
         * name the new host, look again before anything else:
         *   - no verdict (timeout, reset, a proxy's 5xx): CloudStack may have
         *     taken it, so wait, look, and send again only if the host is not there;
         *   - "later" (cs_answer_is_later: 429, 503, errorcode 534): the same, at
         *     the push-back pace and never before its Retry-After; these sends
         *     do not count against CS_MAX_ADD_SENDS (CloudStack answered), the
         *     registration's budget ends them;
         *   - 530 "... is already in the database ...": another run (or our own
         *     lost request) added it; look until it shows;
         *   - any other 530: look once (a CloudStack whose discoverer only logs
         *     "already in the database" says "Cannot find the server resources"
         *     for a host it has), then it is final,
         *     with CloudStack's text; other errors are final at once.
         * Concurrent runs for one node converge: CloudStack refuses the second
         * addHost for an address with the 530, and that run then finds the host. */
        enum { AFTER_NOTHING, AFTER_NO_VERDICT, AFTER_EXISTS, AFTER_FAILED } after = AFTER_NOTHING;
        struct backoff b = BACKOFF_INIT(p.backoff_base_ms, p.backoff_cap_ms, 0);
        unsigned exists_looks = 0, later_sends = 0;
        for (;;) {
                _cleanup_json_ json_object *found = NULL, *added = NULL;
                _cleanup_(cs_answer_done) struct cs_answer ans = { 0 };
                _cleanup_strbuf_ struct strbuf add_err = STRBUF_INIT;

                r = find_host(&cl, &addr, &found, err);
                if (cut_short_after_later(r, later_sends, &p))
                        return time_ran_out(err, &verdict);
                if (r < 0)
                        return r;
                if (found) {
                        const char *zone = json_get_text(found, "zoneid"), *state = json_get_text(found, "state"), *id = json_get_text(found, "id");
                        if (zone && !streq(zone, res.zone_id))
                                return strbuf_errorf(err, -EEXIST, "CloudStack already has host %s (id %s) in another zone (id %s), not in zone '%s'",
                                                     addr.text, id ? id : "?", zone, h->zone);
                        if (state_transient(state)) {
                                /* Another addHost for this address is still at work: wait for its outcome. */
                                if (!wait_before_looking(&b, &p, false, 0))
                                        return strbuf_errorf(err, -ETIMEDOUT, "CloudStack's host %s (id %s) was still %s when the time ran out",
                                                             addr.text, id ? id : "?", state);
                                continue;
                        }
                        r = take_host(found, &res);
                        if (r < 0)
                                return strbuf_errorf(err, r, "CloudStack's listHosts answer has a host without an id");
                        res.added = false;
                        res.found_after_add = res.add_sends > 0;
                        *ret = res;
                        res = (struct cs_result) { 0 };
                        return 0;
                }
                if (after == AFTER_FAILED)
                        return strbuf_errorf(err, -EPROTO, "%s", strbuf_str(&verdict));
                if (after == AFTER_EXISTS) {
                        if (++exists_looks > CS_MAX_EXISTS_LOOKS)
                                return strbuf_errorf(err, -EPROTO, "%s (and listHosts did not show it after %u looks)",
                                                     strbuf_str(&verdict), exists_looks - 1);
                        if (!wait_before_looking(&b, &p, false, 0))
                                return strbuf_errorf(err, -ETIMEDOUT, "%s (and listHosts did not show it in time)", strbuf_str(&verdict));
                        continue;
                }
                if (res.add_sends - later_sends >= CS_MAX_ADD_SENDS)
                        return strbuf_errorf(err, -ETIMEDOUT, "%s (addHost sent %u times, the host never appeared)",
                                             verdict.len ? verdict.buf : "no answer", res.add_sends);
                if (now_usec() >= p.deadline_usec)
                        return time_ran_out(err, &verdict);

                res.add_sends++;
                r = cs_request(&cl, "addHost", add_p, n, &once, &added, &ans, &add_err);
                if (r >= 0) {
                        json_object *items = list_items(added, "host");
                        r = take_host(items ? json_object_array_get_idx(items, 0) : NULL, &res);
                        if (r < 0)
                                return strbuf_errorf(err, r, "CloudStack's addHost answer names no host");
                        res.added = true;
                        *ret = res;
                        res = (struct cs_result) { 0 };
                        return 0;
                }
                /* the resend got no answer at all: CloudStack's earlier word
                 * is the story, not the cut-off */
                if (!ans.later && !ans.verdict && cut_short_after_later(r, later_sends, &p))
                        return time_ran_out(err, &verdict);
                strbuf_release(&verdict);
                verdict = add_err;
                add_err = (struct strbuf) STRBUF_INIT;
                if (ans.verdict && ans.errorcode == 530 && ans.errortext && strstr(ans.errortext, "is already in the database"))
                        after = AFTER_EXISTS;
                else if (ans.verdict && ans.errorcode == 530)
                        after = AFTER_FAILED;
                else if (ans.later) {
                        after = AFTER_NO_VERDICT;
                        later_sends++;
                        if (!wait_before_looking(&b, &p, true, ans.retry_after_ms))
                                return time_ran_out(err, &verdict);
                } else if (ans.verdict || r == -EACCES || r == -EPROTO || r == -EINVAL || r == -EBADMSG)
                        return strbuf_errorf(err, r, "%s", strbuf_str(&verdict));
                else {
                        after = AFTER_NO_VERDICT;
                        if (!wait_before_looking(&b, &p, false, 0))
                                return strbuf_errorf(err, -ETIMEDOUT, "%s", strbuf_str(&verdict));
                }
        }
}
