/* HTTP(S) fetching for every stage (spec, keys, image, registration).
 *
 * One libcurl easy handle per transfer; every handle of the process (fetch
 * and delivery.c's controller requests) shares one connection cache, DNS
 * cache and TLS session cache (fetch_curl_share), so a run's requests to
 * one host reuse one kept-alive connection and one TLS handshake. HTTP
 * error answers are read and dropped by kiln, not failed by curl
 * (CURLOPT_FAILONERROR closes the connection), so a 503 costs no new
 * connection either. Only http, https and file URLs are
 * accepted (redirects: http and https only). TLS is always verified, against
 * the system CAs plus an optional extra CA (kiln.ca= or the spec's ca:);
 * there is deliberately no option to turn verification off.
 *
 * Faults: refused connections, timeouts, dropped connections, 5xx and 429
 * are retried as backoff.h's rule says (backoff_spread_ms: faults with a
 * growing window, 503 and 429 at push-back's steady pace, never before the
 * server's Retry-After, seconds or HTTP-date, capped at
 * BACKOFF_RETRY_AFTER_MAX_MS) up to max_retries; a server pushing back
 * (503, 429) does not use up a retry while pushback_sec lasts; 4xx, TLS verification failures, bad URLs and size-limit
 * violations are final. A retry after bytes were delivered resumes with an
 * HTTP Range request from the last byte delivered; a server that answers the
 * Range request with the whole body (200) restarts cleanly (see fetch_sink).
 * sha256 is computed over the delivered bytes while streaming. */
#pragma once
#include "backoff.h"
#include "strbuf.h"
#include "util.h"

#define FETCH_DEFAULT_CONNECT_TIMEOUT_SEC 15
#define FETCH_DEFAULT_LOW_SPEED_TIME_SEC 30     /* abort (and retry) when slower than 1 byte/s that long */
#define FETCH_DEFAULT_RETRIES 5

struct fetch_options {
        const char *ca_file;            /* extra CA bundle (PEM file); NULL = none */
        const char *ca_pem;             /* extra CA bundle as PEM text; NULL = none */
        unsigned connect_timeout_sec;   /* 0 = default */
        unsigned low_speed_time_sec;    /* 0 = default */
        unsigned max_retries;           /* retries after the first try; 0 = default, use no_retry for none */
        bool no_retry;
        unsigned backoff_initial_ms;    /* 0 = 500 */
        unsigned backoff_max_ms;        /* 0 = 30000 */
        uint64_t max_size;              /* refuse more bytes than this (-EFBIG); 0 = no limit */
        unsigned pushback_sec;          /* for this long from the first try, 503 and 429 answers are
                                         * retried without using up max_retries; 0 = they count */
};

/* What a node waits on a busy boot server (nginx limit_conn/limit_req) for
 * its spec, keys and image before the 503s count as failures. */
#define FETCH_PUSHBACK_SEC 900u

/* Where the bytes go. write() returns 0 or -errno (aborts the transfer,
 * final). When a server ignores Range and sends the whole body again:
 * with restart() set, it is called and bytes are delivered again from 0
 * (the hash starts over); with restart() NULL, the bytes already delivered
 * are read again and dropped, so the sink sees one continuous stream (the
 * hash continues, so a changed file still fails verification).
 * length() (may be NULL) is told the total size as soon as it is known. */
struct fetch_sink {
        int (*write)(const void *data, size_t len, void *userdata);
        int (*restart)(void *userdata);
        void (*length)(uint64_t total, void *userdata);
        void *userdata;
};

struct fetch_result {
        uint64_t bytes;                 /* bytes delivered in the final stream */
        unsigned attempts;              /* requests made */
        unsigned restarts;              /* times the stream restarted at 0 */
        unsigned pushbacks;             /* 503 and 429 answers among the attempts */
        long http_code;                 /* last status (0 for file://) */
        char sha256[65];                /* lower-case hex over the delivered bytes */
};

/* The value of an HTTP "Content-Range: bytes FIRST-LAST/COMPLETE" header
 * (RFC 9110 14.4), as a 206 answer to kiln's resume request carries it. */
struct fetch_content_range {
        uint64_t first;
        uint64_t last;                  /* inclusive */
        uint64_t complete;              /* the whole length; 0 when unknown */
        bool complete_known;            /* false for a "*" total */
};

/* Parses what follows "Content-Range:" (len bytes, need not be
 * NUL-terminated; blanks around it and a trailing CR LF are allowed).
 * The unit "bytes" (any case), one or more blanks, FIRST-LAST, '/', then
 * COMPLETE or '*'; numbers are decimal digits only, at most INT64_MAX.
 * Silent. 0 (ret filled), -EINVAL (syntax: another unit, a missing part,
 * a sign, junk after, the unsatisfied-range form "bytes * /N"), -ERANGE (a
 * number beyond INT64_MAX, FIRST > LAST, LAST >= COMPLETE). */
int fetch_parse_content_range(const char *v, size_t len, struct fetch_content_range *ret);

/* Checks the URL's scheme: 0, -EINVAL (no valid URL), -EPROTONOSUPPORT. */
int fetch_check_url(const char *url);

/* Stream url into sink. res may be NULL; it is zeroed first and filled on
 * success; on failure only res->attempts and res->http_code are meaningful,
 * and err (may be NULL; emptied first) says what went wrong, for the
 * caller's one log line (strbuf.h).
 * Errors: -EPROTONOSUPPORT (scheme), -EINVAL (URL), -ENOENT (404/410 or
 * missing file), -EACCES (401/403), -EPROTO (other 4xx, bad Range reply),
 * -EIO (5xx after retries), -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH,
 * -EKEYREJECTED (TLS peer verification failed), -EFBIG (max_size),
 * -ECONNRESET (dropped after retries), or what sink->write returned. */
int fetch_url(const char *url, const struct fetch_options *opts, const struct fetch_sink *sink,
              struct fetch_result *res, struct strbuf *err);

/* Fetch a small document (spec, key) into a NUL-terminated buffer of at most
 * max bytes (-EFBIG beyond). opts may be NULL (defaults). If want_sha256 is
 * non-NULL the content must hash to it (-EBADMSG otherwise). res and err as
 * for fetch_url (either may be NULL). */
int fetch_to_buffer(const char *url, const struct fetch_options *opts, size_t max, const char *want_sha256,
                    char **ret_buf, size_t *ret_len, struct fetch_result *res, struct strbuf *err);

/* TLS on a libcurl easy handle, the same for every kiln transfer (fetch
 * and the controller requests in delivery.c): peer and host verified, the
 * system CAs when the bundle exists, plus the extra CA of opts (ca_file
 * and/or ca_pem; opts must stay valid until the transfer ends). 0 or -EINVAL. */
int fetch_curl_setup_tls(void *curl, const struct fetch_options *opts);

/* Puts a libcurl easy handle on the process' shared connection, DNS and
 * TLS session caches (thread-safe). Connections are reused only for the
 * same host, port and TLS settings; kiln's trust only grows during a run
 * (kiln.ca, then the spec's ca: beside it), so a reused connection was
 * verified against no more than the request trusts. 0 or -EINVAL. */
int fetch_curl_share(void *curl);

/* The Retry-After (seconds or HTTP-date, RFC 9110 10.2.3) of the answer a
 * libcurl easy handle got last, in ms, capped at BACKOFF_RETRY_AFTER_MAX_MS;
 * 0 when it sent none. */
unsigned fetch_curl_retry_after_ms(void *curl);

/* Constant-time-ish comparison of two hex digests, case-insensitive. */
bool sha256_hex_equal(const char *a, const char *b);
/* Whether s is 64 hex digits. */
bool sha256_hex_valid(const char *s);
