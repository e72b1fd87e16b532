/* The webhook: kiln POSTs JSON (stage events and the final report) to a URL
 * from the spec. Each body is signed with HMAC-SHA256 under the spec's
 * hmac_key, sent as
 *     X-Kiln-Signature: sha256=<lower-case hex>
 * and carries X-Kiln-Run-Id, X-Kiln-Node-Id, X-Kiln-Event (stage-begin,
 * stage-end, run-end, report) and X-Kiln-Delivery (run id and sequence
 * number, the same on every retry) so the receiver can drop duplicates.
 * Bodies are redacted (log_redact) before they are signed. Silent module. */
#pragma once
#include "delivery.h"
#include "strbuf.h"
#include "util.h"

#define WEBHOOK_SIG_HEX_LEN 64

struct webhook_target {
        const char *url;
        const char *hmac_key;           /* SECRET; NULL = unsigned */
        const char *ca_file;
        const struct delivery_policy *policy;
};

/* hex must hold WEBHOOK_SIG_HEX_LEN + 1 bytes. */
int webhook_sign(const char *key, const void *body, size_t len, char *hex);

/* delivery is the idempotency key ("<run id>/<seq>"). */
int webhook_post(const struct webhook_target *t, const char *event, const char *run_id, const char *node_id,
                 const char *delivery, const char *json_body, struct strbuf *err);
