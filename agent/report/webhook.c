#include "webhook.h"
#include "log.h"
#include "url.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

int webhook_sign(const char *key, const void *body, size_t len, char *hex) {
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned mac_len = 0;
        if (!key)
                return -EINVAL;
        if (!HMAC(EVP_sha256(), key, (int) strlen(key), body, len, mac, &mac_len) || mac_len != 32)
                return -EIO;
        hex_encode(mac, mac_len, hex);
        explicit_wipe(mac, sizeof mac);
        return 0;
}

/* Header values come from the report; keep them to one printable line. */
static void header_safe(char *s) {
        for (; *s; s++)
                if ((unsigned char) *s < 0x20 || *s == 0x7f)
                        *s = '_';
}

int webhook_post(const struct webhook_target *t, const char *event, const char *run_id, const char *node_id,
                 const char *delivery, const char *json_body, struct strbuf *err) {
        _cleanup_free_ char *body = strdup(json_body ? json_body : "{}");
        _cleanup_(http_response_done) struct http_response resp = { 0 };
        _cleanup_strbuf_ struct strbuf last = STRBUF_INIT;     /* delivery's word on the last attempt */
        char hdr[5][256], sig[WEBHOOK_SIG_HEX_LEN + 1];
        char *headers[6] = { 0 };
        size_t nh = 0;
        int r;

        if (!body)
                return -ENOMEM;
        log_redact(body);
        if (t->hmac_key) {
                r = webhook_sign(t->hmac_key, body, strlen(body), sig);
                if (r < 0)
                        return r;
                snprintf(hdr[nh], sizeof hdr[nh], "X-Kiln-Signature: sha256=%s", sig);
                headers[nh] = hdr[nh];
                nh++;
        }
        const struct { const char *name, *value; } h[] = {
                { "X-Kiln-Event", event }, { "X-Kiln-Run-Id", run_id },
                { "X-Kiln-Node-Id", node_id }, { "X-Kiln-Delivery", delivery },
        };
        for (size_t i = 0; i < ELEMENTSOF(h); i++) {
                if (!h[i].value)
                        continue;
                snprintf(hdr[nh], sizeof hdr[nh], "%s: %s", h[i].name, h[i].value);
                header_safe(hdr[nh]);
                headers[nh] = hdr[nh];
                nh++;
        }
        struct http_request req = {
                .method = "POST",
                .url = t->url,
                .content_type = "application/json",
                .body = body,
                .body_len = strlen(body),
                .headers = headers,
                .ca_file = t->ca_file,
        };
        r = delivery_send(&req, t->policy, &resp, &last);
        if (r < 0) {
                char shown[URL_DISPLAY_MAX];
                url_display(t->url, shown);
                if (r == -ETIMEDOUT)
                        return strbuf_errorf(err, r, "webhook '%s' did not take the %s event in time after %u attempt%s (last: %s)",
                                             shown, event, resp.attempts, resp.attempts == 1 ? "" : "s", last.len ? last.buf : "timeout");
                return strbuf_errorf(err, r, "webhook '%s' refused the %s event: %s", shown, event,
                                     strbuf_why(&last, r));
        }
        return r;
}
