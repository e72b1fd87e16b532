#include "ca.h"
#include "fetch.h"
#include "paths.h"
#include "strbuf.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <strings.h>

static bool is_pem(const char *s) {
        return strstr(s, "-----BEGIN") != NULL;
}

static bool is_url(const char *s) {
        return strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0 ||
               strncasecmp(s, "file://", 7) == 0;
}

const char *ca_describe(const char *spec_ca, char buf[static URL_DISPLAY_MAX]) {
        return !spec_ca ? "none" : is_pem(spec_ca) ? "PEM text" : url_display(spec_ca, buf);
}

DEFINE_CLEANUP(BIO_free_all, BIO *)

/* How many PEM certificates text holds. */
static int count_certs(const char *text, size_t len) {
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new_mem_buf(text, (int) len);
        if (!bio)
                return -ENOMEM;
        int n = 0;
        for (X509 *x; (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)); n++)
                X509_free(x);
        ERR_clear_error();
        return n;
}

int ca_for_spec(const char *spec_ca, const char *given_file, char **ret_file, struct strbuf *err) {
        _cleanup_free_ char *text = NULL, *given = NULL;
        size_t len = 0, given_len = 0;
        int r;

        if (!spec_ca) {
                *ret_file = NULL;
                return 0;
        }
        if (is_pem(spec_ca)) {
                len = strlen(spec_ca);
                if (len > CA_MAX_BYTES)
                        return strbuf_errorf(err, -EFBIG, "larger than %u bytes", CA_MAX_BYTES);
                if (!(text = strdup(spec_ca)))
                        return -ENOMEM;
        } else if (is_url(spec_ca)) {
                struct fetch_options fo = { .ca_file = given_file };
                r = fetch_to_buffer(spec_ca, &fo, CA_MAX_BYTES, NULL, &text, &len, NULL, err);
                if (r < 0)
                        return strbuf_errorf(err, r, "%s", strbuf_why(err, r));
        } else {
                r = read_full_file(spec_ca, CA_MAX_BYTES, &text, &len);
                if (r < 0)
                        return strbuf_errorf(err, r, "%s", r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
        }
        r = count_certs(text, len);
        if (r < 0)
                return r;
        if (r == 0)
                return strbuf_errorf(err, -EBADMSG, "it holds no PEM certificate");
        if (given_file && (r = read_full_file(given_file, CA_MAX_BYTES, &given, &given_len)) < 0)
                return strbuf_errorf(err, r, "cannot read the CA bundle '%s': %s", given_file, strerror(-r));

        /* the given bundle, then the spec's: one file for every later transfer */
        _cleanup_strbuf_ struct strbuf pem = STRBUF_INIT;
        pem.max = 2 * CA_MAX_BYTES + 2;
        if ((given && (strbuf_add(&pem, given, given_len) < 0 || strbuf_adds(&pem, "\n") < 0)) ||
            strbuf_add(&pem, text, len) < 0 || strbuf_adds(&pem, "\n") < 0)
                return -ENOMEM;
        r = run_file_write(CA_SPEC_FILE, pem.buf, pem.len, ret_file);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot write '%s/%s': %s", kiln_paths.run_dir, CA_SPEC_FILE, strerror(-r));
        return 0;
}
