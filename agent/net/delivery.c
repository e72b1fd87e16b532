#include "delivery.h"
#include "backoff.h"
#include "fetch.h"
#include "url.h"

#include <curl/curl.h>
#include <time.h>

DEFINE_CLEANUP(curl_easy_cleanup, CURL *)
DEFINE_CLEANUP(curl_slist_free_all, struct curl_slist *)

static size_t write_cb(char *data, size_t size, size_t n, void *userdata) {
        struct strbuf *sb = userdata;
        if (strbuf_add(sb, data, size * n) < 0)
                return 0;       /* too large: curl aborts with CURLE_WRITE_ERROR */
        return size * n;
}

static void sleep_usec(uint64_t usec) {
        struct timespec ts = { .tv_sec = usec / 1000000, .tv_nsec = (usec % 1000000) * 1000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static bool curl_code_retryable(CURLcode c) {
        switch (c) {
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_GOT_NOTHING:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_SSL_CONNECT_ERROR:
                return true;
        default:
                return false;
        }
}

static int curl_once(const struct http_request *req, unsigned connect_ms, unsigned timeout_ms,
                     struct http_response *resp, struct strbuf *err, CURLcode *ret_code) {
        _cleanup_(curl_easy_cleanupp) CURL *c = curl_easy_init();
        _cleanup_(curl_slist_free_allp) struct curl_slist *hdrs = NULL;
        char errbuf[CURL_ERROR_SIZE] = "";
        if (!c)
                return -ENOMEM;
        for (char *const *h = req->headers; h && *h; h++) {
                struct curl_slist *n = curl_slist_append(hdrs, *h);
                if (!n)
                        return -ENOMEM;
                hdrs = n;
        }
        bool post = req->method && streq(req->method, "POST");
        if (post && req->content_type) {
                char ct[128];
                snprintf(ct, sizeof ct, "Content-Type: %s", req->content_type);
                struct curl_slist *n = curl_slist_append(hdrs, ct);
                if (!n)
                        return -ENOMEM;
                hdrs = n;
        }
        /* No "Expect: 100-continue" round trip. */
        struct curl_slist *n = curl_slist_append(hdrs, "Expect:");
        if (!n)
                return -ENOMEM;
        hdrs = n;

        strbuf_reset(&resp->body);
        resp->body.max = DELIVERY_MAX_RESPONSE;
        curl_easy_setopt(c, CURLOPT_URL, req->url);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long) connect_ms);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long) timeout_ms);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp->body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "kiln");
        /* the system CAs plus the extra one, as for every fetch (not instead of them) */
        struct fetch_options tls = { .ca_file = req->ca_file };
        if (fetch_curl_setup_tls(c, &tls) < 0 || fetch_curl_share(c) < 0)     /* one kept-alive connection per host */
                return -EINVAL;
        if (post) {
                curl_easy_setopt(c, CURLOPT_POST, 1L);
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->body ? req->body : "");
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body_len);
        }
        CURLcode cc = curl_easy_perform(c);
        *ret_code = cc;
        resp->status = 0;
        resp->retry_after_ms = 0;
        if (cc != CURLE_OK) {
                /* curl's text may quote the URL (a redirect's target): shown without its credentials */
                const char *e = errbuf[0] ? errbuf : curl_easy_strerror(cc);
                _cleanup_strbuf_ struct strbuf shown = STRBUF_INIT;
                strbuf_errorf(err, 0, "%s", url_scrub(e, strlen(e), &shown) >= 0 ? strbuf_str(&shown) : "(error text not shown)");
                if (cc == CURLE_URL_MALFORMAT || cc == CURLE_UNSUPPORTED_PROTOCOL)
                        return -EINVAL;
                if (cc == CURLE_WRITE_ERROR)
                        return -E2BIG;
                return curl_code_retryable(cc) ? -EAGAIN : -EIO;
        }
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
        resp->retry_after_ms = fetch_curl_retry_after_ms(c);
        if (resp->status >= 200 && resp->status < 300) {
                if (err)
                        strbuf_reset(err);
                return 0;
        }
        strbuf_errorf(err, 0, "HTTP status %ld", resp->status);
        if (resp->status >= 500 || backoff_status_is_pushback(resp->status))
                return -EAGAIN;
        if (resp->status == 401 || resp->status == 403)
                return -EACCES;
        return -EPROTO;
}

int delivery_send(const struct http_request *req, const struct delivery_policy *policy,
                  struct http_response *resp, struct strbuf *err) {
        static const struct delivery_policy def = DELIVERY_POLICY_DEFAULT;
        const struct delivery_policy *p = policy ? policy : &def;
        struct backoff b = BACKOFF_INIT(p->backoff_base_ms, p->backoff_cap_ms, 0);
        uint64_t start = now_usec(), limit = (uint64_t) p->total_ms * 1000;

        if (!req || !req->url)
                return -EINVAL;
        if (p->deadline_usec)
                limit = p->deadline_usec <= start ? 0 : (p->deadline_usec - start < limit ? p->deadline_usec - start : limit);
        if (err)
                strbuf_reset(err);
        resp->attempts = 0;
        for (;;) {
                uint64_t used = now_usec() - start;
                if (used >= limit)
                        return -ETIMEDOUT;
                /* rounded up: an attempt the limit cuts short ends at the
                 * limit, never a fraction of a millisecond before it (the
                 * caller tells "the time ran out" by the clock) */
                uint64_t left_ms = (limit - used + 999) / 1000;
                unsigned timeout = p->request_timeout_ms;
                if (left_ms < timeout)
                        timeout = (unsigned) left_ms;
                unsigned connect = p->connect_timeout_ms < timeout ? p->connect_timeout_ms : timeout;
                CURLcode cc;
                resp->attempts++;
                int r = curl_once(req, connect, timeout, resp, err, &cc);
                if (r != -EAGAIN)
                        return r;
                bool later = p->is_later ? p->is_later(resp) : backoff_status_is_pushback(resp->status);
                if (resp->status && !later && p->is_final && p->is_final(resp))
                        return -EREMOTEIO;
                if (p->max_attempts && resp->attempts >= p->max_attempts)
                        return -EAGAIN;
                /* The total limit, not an attempt count, ends the retries:
                 * backoff.h only supplies the delay. */
                uint64_t wait = (uint64_t) backoff_spread_ms(&b, b.attempt++, later, resp->retry_after_ms) * 1000;
                used = now_usec() - start;
                if (used >= limit)
                        return -ETIMEDOUT;
                if (wait > limit - used)
                        wait = limit - used;
                sleep_usec(wait);
        }
}

void http_response_done(struct http_response *resp) {
        if (resp)
                strbuf_release(&resp->body);
}
