/* Delivering one HTTP request to a controller, with kiln's retry policy:
 * a timeout on every attempt; 5xx and 429 answers, timeouts, refused or
 * reset connections retried as backoff.h's rule says (push-back, 503 and 429
 * or what is_later names, at its steady pace and never before Retry-After;
 * faults with a growing window) until a total time limit; other 4xx final. Used by cloudstack.c and
 * webhook.c. Silent: returns 0 / -errno and fills the response. */
#pragma once
#include "strbuf.h"
#include "util.h"

#define DELIVERY_MAX_RESPONSE (1024u * 1024u)   /* larger answers are refused */

struct http_response;

struct delivery_policy {
        unsigned connect_timeout_ms;    /* per attempt */
        unsigned request_timeout_ms;    /* per attempt, whole transfer */
        unsigned total_ms;              /* all attempts and waits together */
        unsigned backoff_base_ms;
        unsigned backoff_cap_ms;
        uint64_t deadline_usec;         /* now_usec() time no attempt may pass; 0 = none.
                                         * Lets several requests share one budget. */
        unsigned max_attempts;          /* 0 = retry until the time is up; 1 = one attempt,
                                         * the caller decides what follows (addHost) */
        /* A 5xx or 429 answer that this says is the server's verdict, not a
         * fault on the way (CloudStack's error bodies), is not retried. NULL = none. */
        bool (*is_final)(const struct http_response *resp);
        /* The answers that mean "later" (push-back: retried at backoff.h's
         * push-back pace, never final). NULL = backoff_status_is_pushback(). */
        bool (*is_later)(const struct http_response *resp);
};

/* 5 s connect, 20 s per request, 5 min in all, backoff 1 s doubling to 30 s. */
#define DELIVERY_POLICY_DEFAULT { 5000, 20000, 300000, 1000, 30000, 0, 0, NULL, NULL }

struct http_request {
        const char *method;             /* "GET" or "POST" */
        const char *url;
        const char *content_type;       /* for POST */
        const char *body;               /* for POST; may hold secrets: never logged */
        size_t body_len;
        char *const *headers;           /* NULL-terminated "Name: value", may be NULL */
        const char *ca_file;            /* extra CA bundle, trusted beside the system CAs; NULL = none */
};

struct http_response {
        long status;                    /* last HTTP status, 0 if none arrived */
        struct strbuf body;             /* last answer's body */
        unsigned attempts;
        unsigned retry_after_ms;        /* last answer's Retry-After (capped), 0 = none */
};

/* Returns 0 for a 2xx answer. Otherwise:
 *   -EACCES     401 or 403 (final)
 *   -EPROTO     any other 4xx but 429 (final)
 *   -EREMOTEIO  a 5xx or 429 that policy->is_final calls final
 *   -EAGAIN     max_attempts used up on a failure that would have been retried:
 *               no answer (resp->status 0: timeout, refused, reset), a 5xx or 429
 *   -ETIMEDOUT  the total limit or the deadline ran out (attempts may be
 *               0 if the deadline had passed)
 *   -EINVAL     bad URL or request
 * resp is always filled with what was seen last; release it with
 * http_response_done(). err (may be NULL; emptied first) says what went
 * wrong with the last attempt ("HTTP status 503", curl's text), empty after
 * a 2xx answer. */
int delivery_send(const struct http_request *req, const struct delivery_policy *policy,
                  struct http_response *resp, struct strbuf *err);
void http_response_done(struct http_response *resp);
