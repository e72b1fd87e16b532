#include "sss.h"

#include "tang.h"

#include "jwe_compact.h"
#include <openssl/bn.h>
#include <openssl/crypto.h>

#define SSS_KEY_BYTES 32u               /* clevis's: a 256-bit prime, A256GCM's key */
#define SSS_POINT_BYTES (2u * SSS_KEY_BYTES)
#define SSS_JWE_MAX (64u * 1024u)       /* one tang pin's JWE, its advertisement inside */

static void bn_clear_freep(BIGNUM **b) {
        BN_clear_free(*b);
}
#define _cleanup_bn_ _cleanup_(bn_clear_freep)
static void bn_ctx_freep(BN_CTX **c) {
        BN_CTX_free(*c);
}

/* bn as a fixed-width big-endian field of len bytes (clevis's bn_encode) */
static bool bn_put(const BIGNUM *bn, uint8_t *buf, size_t len) {
        return bn && BN_bn2binpad(bn, buf, (int) len) == (int) len;
}

static json_t *bn_b64(const BIGNUM *bn) {
        uint8_t buf[SSS_KEY_BYTES];
        json_t *j = bn_put(bn, buf, sizeof buf) ? jose_b64_enc(buf, sizeof buf) : NULL;
        OPENSSL_cleanse(buf, sizeof buf);
        return j;
}

static BIGNUM *bn_from_b64(const json_t *j) {
        uint8_t buf[SSS_KEY_BYTES];
        if (jose_b64_dec(j, NULL, 0) != sizeof buf || jose_b64_dec(j, buf, sizeof buf) != sizeof buf)
                return NULL;
        BIGNUM *bn = BN_bin2bn(buf, sizeof buf, NULL);
        OPENSSL_cleanse(buf, sizeof buf);
        return bn;
}

/* the polynomial's coefficients; e[0] is the key */
struct coeffs {
        BIGNUM *e[8];
};
static void coeffs_freep(struct coeffs *c) {
        for (size_t i = 0; i < ELEMENTSOF(c->e); i++)
                BN_clear_free(c->e[i]);
}

int sss_encrypt(const struct spec_tang *tang, size_t n, unsigned t, const void *pt, size_t ptl,
                struct strbuf *ret_jwe, struct strbuf *err) {
        _cleanup_(coeffs_freep) struct coeffs c = {};
        if (t < 1 || t > n || t > ELEMENTSOF(c.e))
                return strbuf_errorf(err, -EINVAL, "threshold %u is not within 1..%zu", t, n);
        _cleanup_(bn_ctx_freep) BN_CTX *ctx = BN_CTX_new();
        _cleanup_bn_ BIGNUM *p = BN_new(), *x = BN_new(), *y = BN_new(), *tmp = BN_new();
        _cleanup_jansson_ json_t *jwes = json_array();
        if (!ctx || !p || !x || !y || !tmp || !jwes)
                return -ENOMEM;
        /* clevis's sss_generate: a safe prime of the key's size, t coefficients below it */
        if (!BN_generate_prime_ex(p, SSS_KEY_BYTES * 8, 1, NULL, NULL, NULL))
                return strbuf_errorf(err, -EINVAL, "cannot generate the sss prime");
        for (unsigned i = 0; i < t; i++)
                if (!(c.e[i] = BN_new()) || BN_rand_range(c.e[i], p) <= 0)
                        return strbuf_errorf(err, -EINVAL, "cannot generate the sss polynomial");

        for (size_t k = 0; k < n; k++) {
                /* clevis's sss_point: x random, y = sum e[i] x^i mod p, through the pin */
                uint8_t point[SSS_POINT_BYTES];
                BN_zero(y);
                bool ok = BN_rand_range(x, p) > 0;
                for (unsigned i = 0; ok && i < t; i++)
                        ok = BN_set_word(tmp, i) && BN_mod_exp(tmp, x, tmp, p, ctx) &&
                             BN_mod_mul(tmp, c.e[i], tmp, p, ctx) && BN_mod_add(y, y, tmp, p, ctx);
                if (!ok || !bn_put(x, point, SSS_KEY_BYTES) || !bn_put(y, point + SSS_KEY_BYTES, SSS_KEY_BYTES))
                        return strbuf_errorf(err, -EINVAL, "cannot compute the sss point of pin %zu", k + 1);
                _cleanup_strbuf_ struct strbuf child = { .max = SSS_JWE_MAX };
                int r = tang_encrypt(tang[k].url, tang[k].thp, point, sizeof point, &child, err);
                OPENSSL_cleanse(point, sizeof point);
                if (r < 0)
                        return r;
                if (json_array_append_new(jwes, json_string(strbuf_str(&child))) < 0)
                        return -ENOMEM;
        }

        /* the outer JWE: "dir" with e[0] as an A256GCM key (clevis-encrypt-sss) */
        _cleanup_jansson_wipe_ json_t *cek = json_pack("{s:s,s:o,s:s}", "kty", "oct", "k", bn_b64(c.e[0]), "alg",
                                                       "A256GCM");
        _cleanup_jansson_ json_t *jwe = json_pack("{s:{s:s,s:{s:s,s:{s:I,s:o,s:O}}}}", "protected", "alg", "dir", "clevis",
                                                  "pin", "sss", "sss", "t", (json_int_t) t, "p", bn_b64(p), "jwe", jwes);
        if (!cek || !jwe || !jose_jwe_enc_cek(NULL, jwe, cek, pt, ptl) || jwe_compact_print(jwe, ret_jwe) < 0)
                return strbuf_errorf(err, -EINVAL, "cannot encrypt the sss JWE");
        return 0;
}

/* clevis's sss_recover: the polynomial at 0 from t points, mod p */
static BIGNUM *recover(const BIGNUM *p, unsigned t, uint8_t (*pts)[SSS_POINT_BYTES]) {
        _cleanup_(bn_ctx_freep) BN_CTX *ctx = BN_CTX_new();
        _cleanup_bn_ BIGNUM *acc = BN_new(), *tmp = BN_new(), *k = BN_new(), *xo = BN_new(), *yo = BN_new(),
                            *xi = BN_new();
        if (!ctx || !acc || !tmp || !k || !xo || !yo || !xi)
                return NULL;
        BN_zero(k);
        for (unsigned i = 0; i < t; i++) {
                if (!BN_bin2bn(pts[i], SSS_KEY_BYTES, xo) || !BN_bin2bn(pts[i] + SSS_KEY_BYTES, SSS_KEY_BYTES, yo) ||
                    !BN_one(acc))
                        return NULL;
                for (unsigned j = 0; j < t; j++) {
                        if (i == j)
                                continue;
                        /* acc *= (0 - xi) / (xo - xi) */
                        BN_zero(tmp);
                        if (!BN_bin2bn(pts[j], SSS_KEY_BYTES, xi) || !BN_mod_sub(tmp, tmp, xi, p, ctx) ||
                            !BN_mod_mul(acc, acc, tmp, p, ctx) || !BN_mod_sub(tmp, xo, xi, p, ctx) ||
                            BN_mod_inverse(tmp, tmp, p, ctx) != tmp || !BN_mod_mul(acc, acc, tmp, p, ctx))
                                return NULL;
                }
                if (!BN_mod_mul(acc, acc, yo, p, ctx) || !BN_mod_add(k, k, acc, p, ctx))
                        return NULL;
        }
        return TAKE_PTR(k);
}

int sss_decrypt(const char *compact, void *buf, size_t size, size_t *ret_len, struct strbuf *err) {
        _cleanup_jansson_ json_t *jwe = jwe_compact_parse(compact);
        _cleanup_jansson_ json_t *hdr = jwe ? jwe_protected_header(jwe) : NULL;
        json_t *clevis = jwe_member(hdr, "clevis"), *sss = jwe_member(clevis, "sss");
        json_t *jwes = jwe_member(sss, "jwe");
        const char *pin = json_string_value(jwe_member(clevis, "pin"));
        json_int_t t = json_integer_value(jwe_member(sss, "t"));
        if (!pin || !streq(pin, "sss"))
                return strbuf_errorf(err, -EBADMSG, "the JWE's pin is '%s', not sss", pin ?: "");
        _cleanup_bn_ BIGNUM *p = bn_from_b64(jwe_member(sss, "p"));
        if (!p || !json_is_array(jwes) || t < 1 || t > 8 || (size_t) t > json_array_size(jwes))
                return strbuf_errorf(err, -EBADMSG, "the JWE's clevis.sss lacks a valid t, p or jwe");

        /* the pins in order until t of them answered */
        uint8_t pts[8][SSS_POINT_BYTES];
        unsigned got = 0;
        int r = -ENOKEY;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        for (size_t i = 0; i < json_array_size(jwes) && got < t; i++) {
                const char *child = json_string_value(json_array_get(jwes, i));
                size_t len = 0;
                strbuf_reset(&why);
                r = child ? tang_decrypt(child, pts[got], sizeof pts[got], &len, &why) : -EBADMSG;
                if (r == 0 && len == SSS_POINT_BYTES)
                        got++;
                else if (r == 0)
                        r = strbuf_errorf(&why, -EBADMSG, "pin %zu yields %zu bytes, not a point", i + 1, len);
        }
        if (got < t) {
                OPENSSL_cleanse(pts, sizeof pts);
                return strbuf_errorf(err, -ENOKEY, "%u of %lld sss pins answered: %s", got, (long long) t,
                                     strbuf_why(&why, r));
        }
        _cleanup_bn_ BIGNUM *k = recover(p, (unsigned) t, pts);
        OPENSSL_cleanse(pts, sizeof pts);
        _cleanup_jansson_wipe_ json_t *cek = k ? json_pack("{s:s,s:o}", "kty", "oct", "k", bn_b64(k)) : NULL;
        if (!cek)
                return strbuf_errorf(err, -EINVAL, "cannot recover the sss key");

        size_t len = size;
        jose_io_auto_t *out = jose_io_buffer(NULL, buf, &len);
        jose_io_auto_t *dec = out ? jose_jwe_dec_cek_io(NULL, jwe, cek, out) : NULL;
        jose_io_auto_t *b64 = dec ? jose_b64_dec_io(dec) : NULL;
        const char *ct = json_string_value(jwe_member(jwe, "ciphertext"));
        if (!b64 || !ct)
                return -ENOMEM;
        if (!(b64->feed(b64, ct, strlen(ct)) && b64->done(b64))) {
                explicit_bzero(buf, size);
                return len >= size ? strbuf_errorf(err, -E2BIG, "the JWE's plaintext is larger than %zu bytes", size)
                                   : strbuf_errorf(err, -ENOKEY, "the recovered sss key does not decrypt the JWE");
        }
        *ret_len = len;
        return 0;
}
