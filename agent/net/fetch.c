#include "fetch.h"
#include "log.h"
#include "strbuf.h"
#include "url.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <pthread.h>
#include <strings.h>

#define FETCH_PROTOCOLS "http,https,file"
#define FETCH_REDIR_PROTOCOLS "http,https"
#define FETCH_MAX_REDIRS 5
#define FETCH_ERROR_BODY_MAX (64u * 1024u)      /* an error page longer than this is not read to its end */

DEFINE_CLEANUP(curl_easy_cleanup, CURL *)
DEFINE_CLEANUP(curl_url_cleanup, CURLU *)
DEFINE_CLEANUP(curl_slist_free_all, struct curl_slist *)
DEFINE_CLEANUP(EVP_MD_CTX_free, EVP_MD_CTX *)
DEFINE_CLEANUP(BIO_free_all, BIO *)
static inline void curl_freep(char **p) { curl_free(*p); }

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result = CURLE_FAILED_INIT;
static CURLSH *curl_share;
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];

static void share_lock(CURL *c, curl_lock_data data, curl_lock_access access, void *userdata) {
        if ((unsigned) data < CURL_LOCK_DATA_LAST)
                pthread_mutex_lock(&share_locks[data]);
}

static void share_unlock(CURL *c, curl_lock_data data, void *userdata) {
        if ((unsigned) data < CURL_LOCK_DATA_LAST)
                pthread_mutex_unlock(&share_locks[data]);
}

static void curl_init_once(void) {
        curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (curl_init_result != CURLE_OK)
                return;
        for (size_t i = 0; i < ELEMENTSOF(share_locks); i++)
                pthread_mutex_init(&share_locks[i], NULL);
        CURLSH *sh = curl_share_init();
        if (!sh)
                return;         /* no sharing: every handle keeps its own cache */
        if (curl_share_setopt(sh, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
            curl_share_setopt(sh, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
            curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
            curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
            curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK) {
                curl_share_cleanup(sh);
                return;
        }
        curl_share = sh;        /* lives as long as the process */
}

int fetch_curl_share(void *curl) {
        pthread_once(&curl_once, curl_init_once);
        if (!curl_share)
                return 0;
        return curl_easy_setopt(curl, CURLOPT_SHARE, curl_share) == CURLE_OK ? 0 : -EINVAL;
}

struct transfer {
        const struct fetch_options *opts;
        const struct fetch_sink *sink;
        CURL *curl;
        EVP_MD_CTX *sha;
        bool is_file;
        uint64_t offset;        /* bytes delivered in the current stream */
        uint64_t total;         /* announced size of the whole stream; 0 = unknown */
        bool first_write;       /* per attempt */
        bool http_error;        /* this attempt's answer is 400 or more: its body is dropped */
        bool body_unchecked;    /* per attempt: transfer_begin_body not yet run */
        uint64_t error_bytes;   /* per attempt: bytes of an error page dropped */
        struct fetch_content_range range;       /* from Content-Range of the current response */
        bool have_range;                        /* false: none, not a valid one, or two */
        bool range_seen;
        int abort_err;          /* set by a callback that aborted the transfer */
        uint64_t skip;          /* bytes of this response to drop (restart without sink->restart) */
        unsigned restarts;
};

int fetch_check_url(const char *url) {
        _cleanup_(curl_url_cleanupp) CURLU *u = NULL;
        _cleanup_(curl_freep) char *scheme = NULL;

        if (strempty(url))
                return -EINVAL;
        u = curl_url();
        if (!u)
                return -ENOMEM;
        if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK)
                return -EINVAL;
        if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK)
                return -EINVAL;
        if (!streq(scheme, "http") && !streq(scheme, "https") && !streq(scheme, "file"))
                return -EPROTONOSUPPORT;
        return 0;
}

bool sha256_hex_valid(const char *s) {
        return hex_valid(s, 64);
}

bool sha256_hex_equal(const char *a, const char *b) {
        if (!sha256_hex_valid(a) || !sha256_hex_valid(b))
                return false;
        unsigned diff = 0;
        for (size_t i = 0; i < 64; i++)
                diff |= (unsigned) ((a[i] | 0x20) ^ (b[i] | 0x20));
        return diff == 0;
}

/* curl's text may quote a URL (a redirect's target): kept without its credentials. */
static void set_error_scrubbed(struct strbuf *err, const char *text) {
        _cleanup_strbuf_ struct strbuf shown = STRBUF_INIT;
        if (url_scrub(text, strlen(text), &shown) < 0)
                strbuf_errorf(err, 0, "(error text not shown)");
        else
                strbuf_errorf(err, 0, "%s", strbuf_str(&shown));
}

/* One line of curl's debug text, logged as url_scrub_debug_line() renders it. */
static void debug_line(const char *tag, bool out, const char *line, size_t len) {
        _cleanup_strbuf_ struct strbuf shown = STRBUF_INIT;
        shown.max = 4096;
        if (url_scrub_debug_line(line, len > 512 ? 512 : len, out, &shown) >= 0)
                log_debug("curl %s %s", tag, strbuf_str(&shown));
}

static int debug_cb(CURL *c, curl_infotype type, char *data, size_t size, void *userdata) {
        const char *tag;
        switch (type) {
        case CURLINFO_TEXT: tag = "*"; break;
        case CURLINFO_HEADER_IN: tag = "<"; break;
        case CURLINFO_HEADER_OUT: tag = ">"; break;
        default: return 0;
        }
        /* One log line per line of curl's text; header blocks hold several. */
        while (size > 0) {
                const char *nl = memchr(data, '\n', size);
                size_t n = nl ? (size_t) (nl - data) : size;
                size_t len = n;
                if (len > 0 && data[len - 1] == '\r')
                        len--;
                if (len > 0)
                        debug_line(tag, type == CURLINFO_HEADER_OUT, data, len);
                if (!nl)
                        break;
                size -= n + 1;
                data += n + 1;
        }
        return 0;
}

static int add_pem_certs(X509_STORE *store, BIO *bio) {
        int n = 0;
        for (;;) {
                X509 *x = PEM_read_bio_X509(bio, NULL, NULL, NULL);
                if (!x)
                        break;
                if (X509_STORE_add_cert(store, x) == 1)
                        n++;
                else {
                        /* the same certificate twice is not an error */
                        unsigned long e = ERR_peek_last_error();
                        if (ERR_GET_REASON(e) == X509_R_CERT_ALREADY_IN_HASH_TABLE)
                                n++;
                }
                X509_free(x);
        }
        ERR_clear_error();
        return n;
}

/* Adds the extra CA to the store curl has already filled with the system CAs. */
static CURLcode ssl_ctx_cb(CURL *c, void *sslctx, void *userdata) {
        const struct fetch_options *o = userdata;
        X509_STORE *store = SSL_CTX_get_cert_store(sslctx);

        if (o->ca_file) {
                _cleanup_(BIO_free_allp) BIO *bio = BIO_new_file(o->ca_file, "r");
                if (!bio || add_pem_certs(store, bio) == 0) {
                        ERR_clear_error();
                        return CURLE_SSL_CACERT_BADFILE;
                }
        }
        if (o->ca_pem) {
                _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(o->ca_pem, -1);
                if (!bio || add_pem_certs(store, bio) == 0) {
                        ERR_clear_error();
                        return CURLE_SSL_CACERT_BADFILE;
                }
        }
        return CURLE_OK;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Decimal digits at *p (before end) up to INT64_MAX; advances *p. */
static int parse_range_number(const char **p, const char *end, uint64_t *ret) {
        const char *q = *p;
        uint64_t v = 0;
        if (q >= end || *q < '0' || *q > '9')
                return -EINVAL;
        for (; q < end && *q >= '0' && *q <= '9'; q++) {
                unsigned d = (unsigned) (*q - '0');
                if (v > ((uint64_t) INT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *p = q;
        *ret = v;
        return 0;
}

int fetch_parse_content_range(const char *v, size_t len, struct fetch_content_range *ret) {
        struct fetch_content_range cr = {};
        int r;

        if (!v)
                return -EINVAL;
        const char *p = v, *end = v + len;
        while (end > p && (is_blank(end[-1]) || end[-1] == '\r' || end[-1] == '\n'))
                end--;
        while (p < end && is_blank(*p))
                p++;
        if (end - p < 5 || strncasecmp(p, "bytes", 5) != 0)
                return -EINVAL;
        p += 5;
        if (p >= end || !is_blank(*p))
                return -EINVAL;
        while (p < end && is_blank(*p))
                p++;
        r = parse_range_number(&p, end, &cr.first);
        if (r < 0)
                return r;
        if (p >= end || *p++ != '-')
                return -EINVAL;
        r = parse_range_number(&p, end, &cr.last);
        if (r < 0)
                return r;
        if (p >= end || *p++ != '/')
                return -EINVAL;
        if (p < end && *p == '*')
                p++;
        else {
                r = parse_range_number(&p, end, &cr.complete);
                if (r < 0)
                        return r;
                cr.complete_known = true;
        }
        if (p != end)
                return -EINVAL;
        if (cr.first > cr.last || (cr.complete_known && cr.last >= cr.complete))
                return -ERANGE;
        *ret = cr;
        return 0;
}

static size_t header_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        struct transfer *t = userdata;
        size_t n = size * nmemb;
        static const char cr[] = "content-range:";

        if (n >= 5 && memcmp(data, "HTTP/", 5) == 0)
                t->have_range = t->range_seen = false;  /* a new response (redirect, 100-continue) */
        else if (n > strlen(cr) && strncasecmp(data, cr, strlen(cr)) == 0) {
                /* a second Content-Range, or an invalid one, leaves none */
                t->have_range = !t->range_seen &&
                        fetch_parse_content_range(data + strlen(cr), n - strlen(cr), &t->range) >= 0;
                t->range_seen = true;
        }
        return n;
}

static int transfer_reset_hash(struct transfer *t) {
        if (EVP_DigestInit_ex(t->sha, EVP_sha256(), NULL) != 1)
                return -ENOMEM;
        return 0;
}

/* A 206 answer must be the range kiln asked for ("OFFSET-", to the end):
 * it starts at the offset, its length is the Content-Length, it reaches
 * the end, and the whole is as long as an earlier answer said. */
static int transfer_check_range(const struct transfer *t, curl_off_t cl) {
        const struct fetch_content_range *cr = &t->range;

        if (!t->have_range || cr->first != t->offset)
                return -EPROTO;
        if (cl >= 0 && (uint64_t) cl != cr->last - cr->first + 1)
                return -EPROTO;
        if (cr->complete_known && (cr->last + 1 != cr->complete || (t->total > 0 && cr->complete != t->total)))
                return -EPROTO;
        return 0;
}

/* First body bytes of an attempt: decide between continue, resume and restart. */
static int transfer_begin_body(struct transfer *t) {
        long code = 0;
        curl_off_t cl = -1;
        int r;

        (void) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
        (void) curl_easy_getinfo(t->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);

        if (!t->is_file) {
                if (code == 206) {
                        r = transfer_check_range(t, cl);
                        if (r < 0)
                                return r;
                } else if (t->offset > 0) {
                        if (code == 200) {
                                /* The server ignored Range: the body starts at 0 again. */
                                t->restarts++;
                                if (t->sink->restart) {
                                        r = t->sink->restart(t->sink->userdata);
                                        if (r < 0)
                                                return r;
                                        r = transfer_reset_hash(t);
                                        if (r < 0)
                                                return r;
                                        t->offset = 0;
                                } else
                                        t->skip = t->offset;    /* drop what was delivered already */
                        } else
                                return -EPROTO;
                }
        }

        if (cl >= 0) {
                t->total = t->offset - t->skip + (uint64_t) cl;
                if (t->opts->max_size && t->total > t->opts->max_size)
                        return -EFBIG;
                if (t->sink->length)
                        t->sink->length(t->total, t->sink->userdata);
        }
        return 0;
}

static size_t write_cb_deliver(struct transfer *t, char *data, size_t n);

static size_t write_cb(char *data, size_t size, size_t nmemb, void *userdata) {
        struct transfer *t = userdata;
        size_t n = size * nmemb;
        int r;

        if (t->first_write) {
                long code = 0;
                t->first_write = false;
                (void) curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
                t->http_error = !t->is_file && code >= 400;
        }
        if (t->http_error) {
                /* an error page: read (the connection stays usable) and dropped;
                 * one longer than FETCH_ERROR_BODY_MAX ends the transfer */
                t->error_bytes += n;
                return t->error_bytes > FETCH_ERROR_BODY_MAX ? 0 : n;
        }
        if (t->body_unchecked) {
                t->body_unchecked = false;
                r = transfer_begin_body(t);
                if (r < 0)
                        goto abort;
        }
        if (n == 0)
                return 0;
        if (t->skip > 0) {
                size_t k = t->skip < n ? (size_t) t->skip : n;
                t->skip -= k;
                data += k;
                if (k == n)
                        return n;
                n -= k;
                /* what curl handed us counts as consumed, skipped or not */
                size_t w = write_cb_deliver(t, data, n);
                return w == n ? w + k : w;
        }
        return write_cb_deliver(t, data, n);
abort:
        t->abort_err = r;
        return CURL_WRITEFUNC_ERROR;
}

static size_t write_cb_deliver(struct transfer *t, char *data, size_t n) {
        int r;

        if (t->opts->max_size && t->offset + n > t->opts->max_size) {
                r = -EFBIG;
                goto abort;
        }
        if (EVP_DigestUpdate(t->sha, data, n) != 1) {
                r = -ENOMEM;
                goto abort;
        }
        r = t->sink->write(data, n, t->sink->userdata);
        if (r < 0)
                goto abort;
        t->offset += n;
        return n;
abort:
        t->abort_err = r;
        return CURL_WRITEFUNC_ERROR;
}

/* Map a failed attempt to -errno and whether it is worth retrying. */
static int classify(CURLcode c, long http_code, bool *ret_retry) {
        *ret_retry = false;
        switch (c) {
        case CURLE_HTTP_RETURNED_ERROR:
                if (http_code >= 500 || http_code == 429) {
                        *ret_retry = true;
                        return -EIO;
                }
                if (http_code == 404 || http_code == 410)
                        return -ENOENT;
                if (http_code == 401 || http_code == 403)
                        return -EACCES;
                return -EPROTO;
        case CURLE_UNSUPPORTED_PROTOCOL:
                return -EPROTONOSUPPORT;
        case CURLE_URL_MALFORMAT:
                return -EINVAL;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                *ret_retry = true;
                return -EHOSTUNREACH;
        case CURLE_COULDNT_CONNECT:
                *ret_retry = true;
                return -ECONNREFUSED;
        case CURLE_OPERATION_TIMEDOUT:
                *ret_retry = true;
                return -ETIMEDOUT;
        case CURLE_PARTIAL_FILE:
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_SSL_CONNECT_ERROR:
                *ret_retry = true;
                return -ECONNRESET;
        case CURLE_PEER_FAILED_VERIFICATION:
                return -EKEYREJECTED;
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
                return -ENOKEY;
        case CURLE_FILE_COULDNT_READ_FILE:
        case CURLE_REMOTE_FILE_NOT_FOUND:
                return -ENOENT;
        case CURLE_FILESIZE_EXCEEDED:
                return -EFBIG;
        case CURLE_TOO_MANY_REDIRECTS:
                return -ELOOP;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

int fetch_curl_setup_tls(void *curl, const struct fetch_options *o) {
        CURL *c = curl;
        const char *cainfo = NULL;

#define SET(opt, val) do { if (curl_easy_setopt(c, opt, val) != CURLE_OK) return -EINVAL; } while (0)
        /* Always verified; there is no switch to turn that off. */
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
        /* Without a system bundle (a minimal initramfs) curl would fail to
         * load its default; then only the extra CA is trusted. */
        if (curl_easy_getinfo(c, CURLINFO_CAINFO, &cainfo) == CURLE_OK && cainfo && access(cainfo, R_OK) < 0) {
                SET(CURLOPT_CAINFO, NULL);
                SET(CURLOPT_CAPATH, NULL);
        }
        if (o && (o->ca_file || o->ca_pem)) {
                SET(CURLOPT_SSL_CTX_FUNCTION, ssl_ctx_cb);
                SET(CURLOPT_SSL_CTX_DATA, (void *) o);
        }
#undef SET
        return 0;
}

static int transfer_setup(struct transfer *t, const char *url, char *errbuf) {
        const struct fetch_options *o = t->opts;
        CURL *c = t->curl;

#define SET(opt, val) do { if (curl_easy_setopt(c, opt, val) != CURLE_OK) return -EINVAL; } while (0)
        SET(CURLOPT_URL, url);
        SET(CURLOPT_PROTOCOLS_STR, FETCH_PROTOCOLS);
        SET(CURLOPT_REDIR_PROTOCOLS_STR, FETCH_REDIR_PROTOCOLS);
        SET(CURLOPT_FOLLOWLOCATION, 1L);
        SET(CURLOPT_MAXREDIRS, (long) FETCH_MAX_REDIRS);
        /* no CURLOPT_FAILONERROR: it closes the connection on every 503 */
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_ERRORBUFFER, errbuf);
        SET(CURLOPT_USERAGENT, "kiln");
        SET(CURLOPT_CONNECTTIMEOUT, (long) (o->connect_timeout_sec ? o->connect_timeout_sec : FETCH_DEFAULT_CONNECT_TIMEOUT_SEC));
        SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
        SET(CURLOPT_LOW_SPEED_TIME, (long) (o->low_speed_time_sec ? o->low_speed_time_sec : FETCH_DEFAULT_LOW_SPEED_TIME_SEC));
        SET(CURLOPT_BUFFERSIZE, 256L * 1024L);
        if (fetch_curl_setup_tls(c, o) < 0 || fetch_curl_share(c) < 0)
                return -EINVAL;
        SET(CURLOPT_HEADERFUNCTION, header_cb);
        SET(CURLOPT_HEADERDATA, t);
        SET(CURLOPT_WRITEFUNCTION, write_cb);
        SET(CURLOPT_WRITEDATA, t);
        if (log_get_max_level() >= LOG_LEVEL_DEBUG) {
                SET(CURLOPT_DEBUGFUNCTION, debug_cb);
                SET(CURLOPT_VERBOSE, 1L);
        }
#undef SET
        return 0;
}

/* Before an attempt: resume at what arrived (a Range from t->offset, none
 * from 0), and the per-attempt state as new. */
static void transfer_rearm(struct transfer *t) {
        char range[32];
        if (t->offset > 0) {
                snprintf(range, sizeof(range), "%" PRIu64 "-", t->offset);
                (void) curl_easy_setopt(t->curl, CURLOPT_RANGE, range);
        } else
                (void) curl_easy_setopt(t->curl, CURLOPT_RANGE, NULL);
        t->first_write = t->body_unchecked = true;
        t->http_error = false;
        t->error_bytes = 0;
        t->have_range = t->range_seen = false;
        t->skip = 0;
        t->abort_err = 0;
}

unsigned fetch_curl_retry_after_ms(void *curl) {
        curl_off_t ra = 0;
        if (curl_easy_getinfo(curl, CURLINFO_RETRY_AFTER, &ra) != CURLE_OK || ra <= 0)
                return 0;
        return ra >= BACKOFF_RETRY_AFTER_MAX_MS / 1000 ? BACKOFF_RETRY_AFTER_MAX_MS : (unsigned) ra * 1000u;
}

int fetch_url(const char *url, const struct fetch_options *opts, const struct fetch_sink *sink,
              struct fetch_result *res, struct strbuf *err) {
        static const struct fetch_options defaults = {};
        _cleanup_(curl_easy_cleanupp) CURL *curl = NULL;
        _cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *sha = NULL;
        struct fetch_result scratch;
        struct fetch_result *rr = res ? res : &scratch;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;       /* the last attempt's failure */
        char errbuf[CURL_ERROR_SIZE] = "";
        int r;

        if (!opts)
                opts = &defaults;
        *rr = (struct fetch_result) {};
        if (err)
                strbuf_reset(err);

        r = fetch_check_url(url);
        if (r == -EPROTONOSUPPORT)
                return strbuf_errorf(err, r, "unsupported URL scheme (only http, https and file)");
        if (r < 0)
                return strbuf_errorf(err, r, "not a valid URL");
        pthread_once(&curl_once, curl_init_once);
        if (curl_init_result != CURLE_OK)
                return strbuf_errorf(err, -ENOMEM, "libcurl initialisation failed");

        curl = curl_easy_init();
        sha = EVP_MD_CTX_new();
        if (!curl || !sha)
                return -ENOMEM;

        struct transfer t = { .opts = opts, .sink = sink, .curl = curl, .sha = sha,
                              .is_file = strncasecmp(url, "file:", 5) == 0 };
        r = transfer_reset_hash(&t);
        if (r < 0)
                return r;
        r = transfer_setup(&t, url, errbuf);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot configure libcurl");

        struct backoff b = BACKOFF_INIT(opts->backoff_initial_ms, opts->backoff_max_ms, 0);
        unsigned max_faults = opts->no_retry ? 0 : opts->max_retries ? opts->max_retries : FETCH_DEFAULT_RETRIES;
        unsigned faults = 0, n = 0;
        uint64_t started = now_usec();
        for (;;) {
                bool retry;

                if (t.total > 0 && t.offset == t.total)
                        break;          /* everything arrived before the connection dropped */
                transfer_rearm(&t);
                errbuf[0] = 0;
                rr->attempts++;

                CURLcode c = curl_easy_perform(curl);
                rr->http_code = 0;
                (void) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &rr->http_code);
                if ((c == CURLE_OK || (c == CURLE_WRITE_ERROR && t.http_error)) && !t.is_file && rr->http_code >= 400)
                        c = CURLE_HTTP_RETURNED_ERROR;

                if (c == CURLE_OK && t.body_unchecked) {
                        /* empty body: still check what we were told */
                        r = transfer_begin_body(&t);
                        if (r < 0) {
                                t.abort_err = r;
                                c = CURLE_WRITE_ERROR;
                        }
                }
                if (c == CURLE_OK) {
                        if (t.total > 0 && t.offset != t.total) {
                                r = -ECONNRESET;
                                retry = true;
                                strbuf_errorf(&why, 0, "transfer ended after %" PRIu64 " of %" PRIu64 " bytes", t.offset, t.total);
                        } else
                                break;
                } else if (t.abort_err < 0) {
                        r = t.abort_err;
                        retry = false;
                        if (r == -EFBIG)
                                strbuf_errorf(&why, 0, "larger than the limit of %" PRIu64 " bytes", opts->max_size);
                        else if (r == -EPROTO)
                                strbuf_errorf(&why, 0, "the server answered a Range request with HTTP %ld and a wrong range", rr->http_code);
                        else
                                strbuf_errorf(&why, 0, "transfer aborted by the receiver: %s", strerror(-r));
                } else {
                        r = classify(c, rr->http_code, &retry);
                        if (c == CURLE_HTTP_RETURNED_ERROR)
                                strbuf_errorf(&why, 0, "HTTP %ld", rr->http_code);
                        else
                                set_error_scrubbed(&why, errbuf[0] ? errbuf : curl_easy_strerror(c));
                }
                if (!retry)
                        return strbuf_errorf(err, r, "%s", strbuf_str(&why));
                /* A server pushing back says when to come again: never before
                 * its Retry-After, and spread out from the other nodes. */
                unsigned not_before_ms = 0;
                bool pushback = c == CURLE_HTTP_RETURNED_ERROR && backoff_status_is_pushback(rr->http_code);
                if (pushback) {
                        rr->pushbacks++;
                        not_before_ms = fetch_curl_retry_after_ms(curl);
                }
                bool free_retry = pushback && !opts->no_retry && opts->pushback_sec &&
                                  now_usec() - started < (uint64_t) opts->pushback_sec * 1000000u;
                if (!free_retry && faults++ >= max_faults)
                        return strbuf_errorf(err, r, "%s (gave up after %u attempt%s)", strbuf_why(&why, r), rr->attempts,
                                             rr->attempts == 1 ? "" : "s");
                backoff_sleep_ms(backoff_spread_ms(&b, n++, pushback, not_before_ms));
        }

        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        if (EVP_DigestFinal_ex(sha, md, &mdlen) != 1 || mdlen != 32)
                return -ENOMEM;
        hex_encode(md, 32, rr->sha256);
        rr->bytes = t.offset;
        rr->restarts = t.restarts;
        return 0;
}

static int buffer_write(const void *data, size_t len, void *userdata) {
        int r = strbuf_add(userdata, data, len);
        return r == -E2BIG ? -EFBIG : r;
}

static int buffer_restart(void *userdata) {
        strbuf_reset(userdata);
        return 0;
}

int fetch_to_buffer(const char *url, const struct fetch_options *opts, size_t max, const char *want_sha256,
                    char **ret_buf, size_t *ret_len, struct fetch_result *res, struct strbuf *err) {
        struct fetch_options o = opts ? *opts : (struct fetch_options) {};
        struct fetch_result scratch = {};
        struct fetch_result *rr = res ? res : &scratch;
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r;

        if (max == 0 || max > SIZE_MAX - 1)
                return -EINVAL;
        sb.max = max;
        if (!o.max_size || o.max_size > max)
                o.max_size = max;

        struct fetch_sink sink = { .write = buffer_write, .restart = buffer_restart, .userdata = &sb };
        r = fetch_url(url, &o, &sink, rr, err);
        if (r < 0)
                return r;
        if (want_sha256 && !sha256_hex_equal(want_sha256, rr->sha256))
                return strbuf_errorf(err, -EBADMSG, "sha256 mismatch: expected %s, got %s", want_sha256, rr->sha256);
        size_t len = sb.len;
        char *buf = strbuf_detach(&sb);
        if (!buf) {
                buf = strdup("");
                if (!buf)
                        return -ENOMEM;
        }
        *ret_buf = buf;
        if (ret_len)
                *ret_len = len;
        return 0;
}
