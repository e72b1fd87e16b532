#include "tang.h"

#include "delivery.h"

#include "jwe_compact.h"

#define TANG_ADV_MAX (64u * 1024u)      /* tang's advertisement: ~1 KiB for two P-521 keys */

/* The thumbprint hashes: clevis's default and the alternative it accepts,
 * then S512, which tang looks keys up by too and the spec allows (kiln ran
 * clevis with -y, which checked no thumbprint itself: Tang's /adv/THP did). */
static const char *const thp_algs[] = { "S256", "S1", "S512" };

/* Tang answers at once or not at all; clevis's curl tries once. A few tries
 * cover a Tang that is just starting, a stopped one fails in seconds. */
static const struct delivery_policy tang_policy = {
        .connect_timeout_ms = 5000, .request_timeout_ms = 15000, .total_ms = 30000,
        .backoff_base_ms = 500, .backoff_cap_ms = 2000, .max_attempts = 3,
};

void jansson_decref_p(json_t **j) {
        if (*j)
                json_decref(*j);
}

/* For a JWK that holds key material (the CEK, the ephemeral private key, the
 * exchanged points): its members' bytes are zeroed before jansson frees
 * them, as luks_key_free does for kiln's own keys. */
void jansson_wipe_decref_p(json_t **j) {
        static const char *const secret[] = { "k", "d", "x", "y" };
        if (!*j)
                return;
        for (size_t i = 0; json_is_object(*j) && i < ELEMENTSOF(secret); i++) {
                json_t *m = json_object_getn(*j, secret[i], strlen(secret[i]));
                if (json_is_string(m))
                        explicit_bzero((char *) json_string_value(m), json_string_length(m));
        }
        json_decref(*j);
}

json_t *jwe_member(const json_t *o, const char *key) {
        return json_is_object(o) ? json_object_getn(o, key, strlen(key)) : NULL;
}

static const char *member_str(const json_t *o, const char *key) {
        return json_string_value(jwe_member(o, key));
}

/* Whether jwk's thumbprint in any of clevis's hashes is thp. */
static bool thp_matches(const json_t *jwk, const char *thp) {
        for (size_t i = 0; i < ELEMENTSOF(thp_algs); i++) {
                _cleanup_jansson_ json_t *t = jose_jwk_thp(NULL, jwk, thp_algs[i]);
                if (t && streq(json_string_value(t) ?: "", thp))
                        return true;
        }
        return false;
}

/* The keys of set allowed op (`jose jwk use -r -u OP`: the use metadata required). */
static json_t *keys_for(const json_t *keys, const char *op) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < json_array_size(keys); i++) {
                json_t *k = json_array_get(keys, i);
                if (jose_jwk_prm(NULL, k, true, op) && json_array_append(a, k) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

static int http(const char *method, const char *url, const char *body, size_t max, struct strbuf *ret,
                struct strbuf *err) {
        struct http_request req = {
                .method = method, .url = url, .body = body, .body_len = body ? strlen(body) : 0,
                .content_type = body ? "application/jwk+json" : NULL,
        };
        struct http_response resp = { .body = { .max = max } };
        int r = delivery_send(&req, &tang_policy, &resp, err);
        if (r == 0 && (r = strbuf_add(ret, strbuf_str(&resp.body), resp.body.len)) < 0)
                strbuf_errorf(err, r, "answer too large");
        http_response_done(&resp);
        return r;
}

int tang_encrypt(const char *url, const char *thp, const void *pt, size_t ptl, struct strbuf *ret_jwe,
                 struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf adv_url = STRBUF_INIT, text = STRBUF_INIT, why = STRBUF_INIT;
        int r = strbuf_addf(&adv_url, "%s/adv/%s", url, thp);
        if (r < 0)
                return r;
        if ((r = http("GET", strbuf_str(&adv_url), NULL, TANG_ADV_MAX, &text, &why)) < 0)
                return strbuf_errorf(err, r, "cannot fetch the Tang advertisement '%s': %s", strbuf_str(&adv_url),
                                     strbuf_why(&why, r));

        /* the JWS, its payload's keys, the signing keys: all must have signed it */
        _cleanup_jansson_ json_t *jws = json_loadb(text.buf, text.len, 0, NULL);
        _cleanup_jansson_ json_t *payload = jws ? jose_b64_dec_load(jwe_member(jws, "payload")) : NULL;
        json_t *keys = jwe_member(payload, "keys");
        if (!json_is_array(keys))
                return strbuf_errorf(err, -EBADMSG, "the advertisement of Tang '%s' is malformed", url);
        _cleanup_jansson_ json_t *ver = keys_for(keys, "verify");
        if (!ver)
                return -ENOMEM;
        _cleanup_jansson_ json_t *verset = json_pack("{s:O}", "keys", ver);
        if (!verset)
                return -ENOMEM;
        if (json_array_size(ver) == 0 || !jose_jws_ver(NULL, jws, NULL, verset, true))
                return strbuf_errorf(err, -EBADMSG, "the advertisement of Tang '%s' is not signed by all its signing keys",
                                     url);
        bool trusted = false;
        for (size_t i = 0; !trusted && i < json_array_size(ver); i++)
                trusted = thp_matches(json_array_get(ver, i), thp);
        if (!trusted)
                return strbuf_errorf(err, -EKEYREJECTED, "the thumbprint '%s' is no signing key of Tang '%s'", thp, url);

        /* the exchange key and its thumbprint (the JWE's kid) */
        _cleanup_jansson_ json_t *exc = keys_for(keys, "deriveKey");
        if (!exc)
                return -ENOMEM;
        if (json_array_size(exc) == 0)
                return strbuf_errorf(err, -ENOKEY, "the advertisement of Tang '%s' has no exchange key", url);
        _cleanup_jansson_ json_t *jwk = json_deep_copy(json_array_get(exc, 0));
        if (!jwk)
                return -ENOMEM;
        (void) json_object_del(jwk, "key_ops");
        (void) json_object_del(jwk, "alg");
        _cleanup_jansson_ json_t *kid = jose_jwk_thp(NULL, jwk, thp_algs[0]);
        if (!json_is_string(kid))
                return strbuf_errorf(err, -EBADMSG, "the exchange key of Tang '%s' has no thumbprint", url);

        /* `jose jwe enc -c`: the recipient's header (epk) joins the protected one */
        _cleanup_jansson_ json_t *jwe = json_pack("{s:{s:s,s:s,s:O,s:{s:s,s:{s:s,s:O}}}}", "protected", "alg", "ECDH-ES",
                                                  "enc", "A256GCM", "kid", kid, "clevis", "pin", "tang", "tang", "url",
                                                  url, "adv", payload);
        _cleanup_jansson_wipe_ json_t *cek = json_object();
        if (!jwe || !cek)
                return -ENOMEM;
        json_t *hdr = NULL;
        if (!jose_jwe_enc_jwk(NULL, jwe, NULL, jwk, cek) || !(hdr = jose_jwe_hdr(jwe, jwe)) ||
            json_object_set_new(jwe, "protected", hdr) < 0)
                return strbuf_errorf(err, -EINVAL, "cannot encrypt for Tang '%s'", url);
        (void) json_object_del(jwe, "header");
        (void) json_object_del(jwe, "unprotected");
        if (!jose_jwe_enc_cek(NULL, jwe, cek, pt, ptl))
                return strbuf_errorf(err, -EINVAL, "cannot encrypt for Tang '%s'", url);
        if ((r = jwe_compact_print(jwe, ret_jwe)) < 0)
                return strbuf_errorf(err, r, "cannot encrypt for Tang '%s'", url);
        return 0;
}

static const char *const compact_parts[] = { "protected", "encrypted_key", "iv", "ciphertext", "tag" };

int jwe_compact_print(const json_t *jwe, struct strbuf *out) {
        for (size_t i = 0; i < ELEMENTSOF(compact_parts); i++) {
                const char *v = member_str(jwe, compact_parts[i]);
                if (!v && i != 1)
                        return -EINVAL;
                int r = strbuf_addf(out, "%s%s", i ? "." : "", v ?: "");
                if (r < 0)
                        return r;
        }
        return 0;
}

json_t *jwe_compact_parse(const char *s) {
        const char *const *parts = compact_parts;
        json_t *o = json_object();
        for (size_t i = 0; o && i < ELEMENTSOF(compact_parts); i++) {
                const char *e = i + 1 < ELEMENTSOF(compact_parts) ? strchr(s, '.') : s + strlen(s);
                if (!e || (i + 1 == ELEMENTSOF(compact_parts) && strchr(s, '.')) ||
                    json_object_set_new(o, parts[i], json_stringn(s, (size_t) (e - s))) < 0) {
                        json_decref(o);
                        return NULL;
                }
                s = *e ? e + 1 : e;
        }
        return o;
}

json_t *jwe_protected_header(const json_t *jwe) {
        json_t *h = jose_b64_dec_load(jwe_member(jwe, "protected"));
        if (h && !json_is_object(h)) {
                json_decref(h);
                return NULL;
        }
        return h;
}

int tang_jwe_pin(const char *jwe, char *pin, size_t size) {
        _cleanup_jansson_ json_t *o = jwe_compact_parse(jwe);
        _cleanup_jansson_ json_t *h = o ? jwe_protected_header(o) : NULL;
        const char *p = member_str(jwe_member(h, "clevis"), "pin");
        if (!p || strlen(p) >= size)
                return -EBADMSG;
        memcpy(pin, p, strlen(p) + 1);
        return 0;
}

/* `jose jwk exc`, with the template's members added ({"alg":"ECMR"} or none). */
static json_t *exchange(const json_t *lcl, const json_t *rem, const char *alg) {
        json_t *k = jose_jwk_exc(NULL, lcl, rem);
        if (k && alg && json_object_set_new(k, "alg", json_string(alg)) < 0) {
                json_decref(k);
                return NULL;
        }
        return k;
}

int tang_decrypt(const char *compact, void *buf, size_t size, size_t *ret_len, struct strbuf *err) {
        _cleanup_jansson_ json_t *jwe = jwe_compact_parse(compact);
        _cleanup_jansson_ json_t *hdr = jwe ? jwe_protected_header(jwe) : NULL;
        if (!hdr)
                return strbuf_errorf(err, -EBADMSG, "the JWE has no valid protected header");
        json_t *clevis = jwe_member(hdr, "clevis"), *tang = jwe_member(clevis, "tang"), *epk = jwe_member(hdr, "epk");
        const char *pin = member_str(clevis, "pin"), *kid = member_str(hdr, "kid"), *url = member_str(tang, "url");
        json_t *adv = jwe_member(jwe_member(tang, "adv"), "keys");
        const char *crv = member_str(epk, "crv");
        if (!pin || !streq(pin, "tang"))
                return strbuf_errorf(err, -EBADMSG, "the JWE's pin is '%s', not tang", pin ?: "");
        if (!json_is_object(epk) || !kid || !url || !json_is_array(adv) || !crv)
                return strbuf_errorf(err, -EBADMSG, "the JWE lacks one of epk, kid, clevis.tang.url, clevis.tang.adv");
        const json_t *srv = NULL;
        for (size_t i = 0; !srv && i < json_array_size(adv); i++)
                if (thp_matches(json_array_get(adv, i), kid))
                        srv = json_array_get(adv, i);
        if (!srv)
                return strbuf_errorf(err, -EKEYREJECTED, "the JWE's kid '%s' is no key of its Tang advertisement", kid);

        /* McCallum-Relyea: send epk + eph, take eph's share back off Tang's answer */
        _cleanup_jansson_wipe_ json_t *eph = json_pack("{s:s,s:s}", "alg", "ECMR", "crv", crv);
        if (!eph || !jose_jwk_gen(NULL, eph))
                return strbuf_errorf(err, -EINVAL, "cannot make an ephemeral key on curve '%s'", crv);
        _cleanup_jansson_ json_t *xfr = exchange(epk, eph, "ECMR");
        _cleanup_free_ char *body = xfr ? json_dumps(xfr, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        if (!body)
                return strbuf_errorf(err, -EINVAL, "cannot make the key exchange for Tang '%s'", url);
        _cleanup_strbuf_ struct strbuf rec_url = STRBUF_INIT, reply = STRBUF_INIT, why = STRBUF_INIT;
        int r = strbuf_addf(&rec_url, "%s/rec/%s", url, kid);
        if (r < 0)
                return r;
        if ((r = http("POST", strbuf_str(&rec_url), body, TANG_ADV_MAX, &reply, &why)) < 0)
                return strbuf_errorf(err, r, "Tang '%s' did not answer the key recovery: %s", url,
                                     strbuf_why(&why, r));
        _cleanup_jansson_wipe_ json_t *rep = json_loadb(reply.buf, reply.len, 0, NULL);
        if (!streq(member_str(rep, "kty") ?: "", "EC") || !streq(member_str(rep, "crv") ?: "", crv) ||
            !jose_jwk_pub(NULL, rep))
                return strbuf_errorf(err, -EBADMSG, "Tang '%s' sent an invalid recovery reply", url);
        _cleanup_jansson_wipe_ json_t *tmp = exchange(eph, srv, "ECMR");
        _cleanup_jansson_wipe_ json_t *jwk = tmp ? exchange(rep, tmp, NULL) : NULL;
        _cleanup_jansson_wipe_ json_t *cek = jwk ? jose_jwe_dec_jwk(NULL, jwe, NULL, jwk) : NULL;
        if (!cek)
                return strbuf_errorf(err, -ENOKEY, "the key Tang '%s' recovered does not unwrap the JWE", url);

        /* the ciphertext, base64url-decoded, decrypted into buf; the tag checked at done() */
        size_t len = size;
        jose_io_auto_t *out = jose_io_buffer(NULL, buf, &len);
        jose_io_auto_t *dec = out ? jose_jwe_dec_cek_io(NULL, jwe, cek, out) : NULL;
        jose_io_auto_t *b64 = dec ? jose_b64_dec_io(dec) : NULL;
        const char *ct = member_str(jwe, "ciphertext");
        if (!b64 || !ct)
                return -ENOMEM;
        bool ok = b64->feed(b64, ct, strlen(ct)) && b64->done(b64);
        if (!ok) {
                explicit_bzero(buf, size);
                return len >= size ? strbuf_errorf(err, -E2BIG, "the JWE's plaintext is larger than %zu bytes", size)
                                   : strbuf_errorf(err, -ENOKEY, "the key Tang '%s' recovered does not decrypt the JWE",
                                                   url);
        }
        *ret_len = len;
        return 0;
}
