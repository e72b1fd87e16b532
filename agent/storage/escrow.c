#include "escrow.h"

#include "json.h"

#include <fcntl.h>
#include <libcryptsetup.h>
#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#define ESCROW_CMS_MAX (32u * 1024u)            /* the DER blob: ~0.6 KiB for RSA-3072, less for EC */
#define ESCROW_PEM_MAX (1024u * 1024u)          /* a key or certificate file */
#define ESCROW_TOKENS 32                        /* LUKS2 has 32 token slots */

DEFINE_CLEANUP(BIO_free_all, BIO *)
DEFINE_CLEANUP(X509_free, X509 *)
DEFINE_CLEANUP(EVP_PKEY_free, EVP_PKEY *)
DEFINE_CLEANUP(CMS_ContentInfo_free, CMS_ContentInfo *)
DEFINE_CLEANUP(sk_X509_free, STACK_OF(X509) *)

/* OpenSSL's reason for the last failure, once (the queue is emptied). */
static const char *ossl_why(char *buf, size_t size) {
        unsigned long e = ERR_peek_last_error();
        if (!e)
                snprintf(buf, size, "no reason given");
        else
                ERR_error_string_n(e, buf, size);
        ERR_clear_error();
        return buf;
}

void escrow_blob_done(struct escrow_blob *b) {
        if (b)
                free(b->cms), b->cms = NULL;
}

int escrow_seal(const char *cert_pem, const struct luks_key *key, struct escrow_blob *ret, struct strbuf *err) {
        char why[256];
        _cleanup_(X509_freep) X509 *cert = NULL;
        int r = spec_escrow_cert(cert_pem, &cert, ret->cert_sha256, why, sizeof why);
        if (r < 0)
                return strbuf_errorf(err, r, "the escrow certificate %s", why);
        _cleanup_(sk_X509_freep) STACK_OF(X509) *certs = sk_X509_new_null();
        if (!certs || !sk_X509_push(certs, cert))
                return -ENOMEM;
        /* a view of the locked key, not a copy */
        _cleanup_(BIO_free_allp) BIO *in = BIO_new_mem_buf(key->data, (int) key->len);
        _cleanup_(BIO_free_allp) BIO *out = BIO_new(BIO_s_mem());
        if (!in || !out)
                return -ENOMEM;
        _cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = CMS_encrypt(certs, in, EVP_aes_256_cbc(), CMS_BINARY);
        if (!cms)
                return strbuf_errorf(err, -EIO, "cannot encrypt to the escrow certificate: %s", ossl_why(why, sizeof why));
        if (i2d_CMS_bio(out, cms) != 1)
                return strbuf_errorf(err, -EIO, "cannot encode the escrow blob: %s", ossl_why(why, sizeof why));
        char *der = NULL;
        long n = BIO_get_mem_data(out, &der);
        if (n <= 0 || (size_t) n > ESCROW_CMS_MAX)
                return strbuf_errorf(err, -EIO, "the escrow blob is %ld bytes", n);
        char *b64 = malloc(((size_t) n + 2) / 3 * 4 + 1);
        if (!b64)
                return -ENOMEM;
        EVP_EncodeBlock((unsigned char *) b64, (const unsigned char *) der, (int) n);
        ret->cms = b64;
        return 0;
}

static json_object *token_json(const struct escrow_blob *b, int keyslot, const char *uuid) {
        char slot[16];
        snprintf(slot, sizeof slot, "%d", keyslot);
        json_object *t = json_object_new_object();
        int r = t ? 0 : -ENOMEM;
        json_set_str(t, "type", ESCROW_TOKEN_TYPE, &r);
        json_set(t, "keyslots", json_object_new_array(), &r);
        json_set_str(t, "keyslot", slot, &r);
        json_set_str(t, "uuid", uuid, &r);
        json_set_str(t, "certificate_sha256", b->cert_sha256, &r);
        json_set_str(t, "cms", b->cms, &r);
        return json_done(t, r);
}

int escrow_store(const char *dev, const struct escrow_blob *b, const struct luks_key *key, char **ret_uuid,
                 int *ret_keyslot, struct strbuf *err) {
        if (!b->cms)
                return -EINVAL;
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = luks_load(dev, &cd, err);
        if (r < 0)
                return r;
        /* name NULL: the key is checked against the keyslots, nothing is activated */
        int slot = crypt_activate_by_passphrase(cd, NULL, CRYPT_ANY_SLOT, key->data, key->len, 0);
        if (slot < 0)
                return strbuf_errorf(err, slot == -EPERM ? -ENOKEY : slot, "the key to escrow opens no keyslot of %s", dev);
        const char *uuid = crypt_get_uuid(cd);
        if (!uuid)
                return strbuf_errorf(err, -EBADMSG, "the LUKS2 header of %s has no UUID", dev);
        _cleanup_json_ json_object *t = token_json(b, slot, uuid);
        const char *text = t ? json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE) : NULL;
        if (!text)
                return -ENOMEM;
        int id = crypt_token_json_set(cd, CRYPT_ANY_TOKEN, text);
        if (id < 0)
                return strbuf_errorf(err, id, "cannot write the escrow token to the LUKS2 header of %s", dev);
        /* read back: what the disk carries is what was sealed */
        const char *back = NULL;
        _cleanup_json_ json_object *o = NULL;
        if (crypt_token_json_get(cd, id, &back) < 0 || !back || json_parse(back, strlen(back), &o) < 0 ||
            !streq(json_get_str(o, "cms") ?: "", b->cms) || !streq(json_get_str(o, "uuid") ?: "", uuid)) {
                (void) crypt_token_json_set(cd, id, NULL);
                return strbuf_errorf(err, -EIO, "the escrow token of %s does not read back as written", dev);
        }
        char *u = NULL;
        if (ret_uuid && !(u = strdup(uuid))) {
                (void) crypt_token_json_set(cd, id, NULL);
                return -ENOMEM;
        }
        if (ret_uuid)
                *ret_uuid = u;
        if (ret_keyslot)
                *ret_keyslot = slot;
        return 0;
}

/* A PEM file (a certificate or a private key), whole, at most ESCROW_PEM_MAX. */
static int read_pem(const char *path, BIO **ret, struct strbuf *err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return strbuf_errorf(err, -errno, "cannot open '%s'", path);
        _cleanup_(BIO_free_allp) BIO *bio = BIO_new(BIO_s_secmem());   /* wiped when freed: it may be a key */
        if (!bio)
                return -ENOMEM;
        char buf[4096];
        size_t total = 0;
        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = -errno;
                        explicit_wipe(buf, sizeof buf);
                        return strbuf_errorf(err, e, "cannot read '%s'", path);
                }
                if (n == 0)
                        break;
                total += (size_t) n;
                if (total > ESCROW_PEM_MAX || BIO_write(bio, buf, (int) n) != n) {
                        explicit_wipe(buf, sizeof buf);
                        return strbuf_errorf(err, -E2BIG, "'%s' is larger than %u bytes", path, ESCROW_PEM_MAX);
                }
        }
        explicit_wipe(buf, sizeof buf);
        *ret = TAKE_PTR(bio);
        return 0;
}

/* The kiln-escrow token of cd for the certificate whose fingerprint is sha256. */
static int find_token(struct crypt_device *cd, const char *dev, const char *sha256, json_object **ret, struct strbuf *err) {
        bool any = false;
        _cleanup_free_ char *other = NULL;
        for (int id = 0; id < ESCROW_TOKENS; id++) {
                const char *type = NULL, *text = NULL;
                if (crypt_token_status(cd, id, &type) == CRYPT_TOKEN_INACTIVE || !type || !streq(type, ESCROW_TOKEN_TYPE))
                        continue;
                any = true;
                _cleanup_json_ json_object *o = NULL;
                if (crypt_token_json_get(cd, id, &text) < 0 || !text || json_parse(text, strlen(text), &o) < 0)
                        return strbuf_errorf(err, -EBADMSG, "the escrow token %d of %s is not JSON", id, dev);
                const char *fp = json_get_str(o, "certificate_sha256");
                if (!fp || !hex_valid(fp, 64))
                        return strbuf_errorf(err, -EBADMSG, "the escrow token %d of %s names no certificate fingerprint", id, dev);
                if (strcasecmp(fp, sha256) != 0) {
                        if (!other)
                                other = strdup(fp);
                        continue;
                }
                *ret = TAKE_PTR(o);
                return id;
        }
        if (!any)
                return strbuf_errorf(err, -ENOENT, "%s has no escrow token (it was not formatted with an escrowed key)", dev);
        return strbuf_errorf(err, -EKEYREJECTED, "the escrow token of %s is for the certificate with SHA-256 %s, not for "
                             "this one (%s)", dev, other ? other : "?", sha256);
}

/* base64 text into a new buffer; -EBADMSG unless it is base64 of at most max bytes. */
static int b64_decode(const char *s, size_t max, unsigned char **ret, size_t *ret_len) {
        size_t n = strlen(s);
        if (n == 0 || n % 4 || n / 4 * 3 > max)
                return -EBADMSG;
        _cleanup_free_ unsigned char *out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        int k = EVP_DecodeBlock(out, (const unsigned char *) s, (int) n);
        if (k < 0)
                return -EBADMSG;
        size_t pad = (s[n - 1] == '=') + (s[n - 2] == '=');
        *ret_len = (size_t) k - pad;
        *ret = TAKE_PTR(out);
        return 0;
}

int escrow_recover(const char *dev, const char *key_path, const char *cert_path, const char *name,
                   struct luks_key **ret_key, struct strbuf *err) {
        char why[256], sha[65];
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        _cleanup_(BIO_free_allp) BIO *cb = NULL, *kb = NULL;
        int r = read_pem(cert_path, &cb, err);
        if (r < 0 || (r = read_pem(key_path, &kb, err)) < 0)
                return r;
        _cleanup_(X509_freep) X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
        if (!cert)
                return strbuf_errorf(err, -EBADMSG, "'%s' holds no PEM certificate: %s", cert_path, ossl_why(why, sizeof why));
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        if (!pkey)
                return strbuf_errorf(err, -EBADMSG, "'%s' holds no PEM private key: %s", key_path, ossl_why(why, sizeof why));
        if (X509_check_private_key(cert, pkey) != 1) {
                ERR_clear_error();
                return strbuf_errorf(err, -EKEYREJECTED, "'%s' is not the private key of the certificate '%s'", key_path,
                                     cert_path);
        }
        if (!X509_digest(cert, EVP_sha256(), md, &mdlen) || mdlen != 32)
                return -EIO;
        hex_encode(md, mdlen, sha);

        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        if ((r = luks_load(dev, &cd, err)) < 0)
                return r;
        _cleanup_json_ json_object *tok = NULL;
        int id = find_token(cd, dev, sha, &tok, err);
        if (id < 0)
                return id;
        const char *uuid = json_get_str(tok, "uuid"), *b64 = json_get_str(tok, "cms"), *slot_s = json_get_str(tok, "keyslot");
        const char *have = crypt_get_uuid(cd);
        uint64_t slot = 0;
        if (!uuid || !b64 || !slot_s || safe_atou64(slot_s, &slot) < 0 || slot >= 32)
                return strbuf_errorf(err, -EBADMSG, "the escrow token %d of %s is corrupt (it lacks 'uuid', 'cms' or a "
                                     "valid 'keyslot')", id, dev);
        if (!have || !streq(uuid, have))
                return strbuf_errorf(err, -EXDEV, "the escrow token %d of %s names the volume UUID %s, but %s is %s: the "
                                     "token was copied from another volume", id, dev, uuid, dev, have ? have : "?");
        _cleanup_free_ unsigned char *der = NULL;
        size_t der_len = 0;
        if ((r = b64_decode(b64, ESCROW_CMS_MAX, &der, &der_len)) < 0)
                return strbuf_errorf(err, r, "the escrow token %d of %s is corrupt (its 'cms' is not base64)", id, dev);
        const unsigned char *p = der;
        _cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = d2i_CMS_ContentInfo(NULL, &p, (long) der_len);
        if (!cms || p != der + der_len || OBJ_obj2nid(CMS_get0_type(cms)) != NID_pkcs7_enveloped) {
                ERR_clear_error();
                return strbuf_errorf(err, -EBADMSG, "the escrow token %d of %s is corrupt (its 'cms' is no CMS "
                                     "EnvelopedData)", id, dev);
        }
        /* the plaintext into a buffer OpenSSL wipes when it is freed, then into locked memory */
        _cleanup_(BIO_free_allp) BIO *out = BIO_new(BIO_s_secmem());
        if (!out)
                return -ENOMEM;
        if (CMS_decrypt(cms, pkey, cert, NULL, out, CMS_BINARY) != 1)
                return strbuf_errorf(err, -ENOKEY, "the private key '%s' does not decrypt the escrow blob of %s: %s",
                                     key_path, dev, ossl_why(why, sizeof why));
        char *pt = NULL;
        long n = BIO_get_mem_data(out, &pt);
        _cleanup_luks_key_free_ struct luks_key *key = NULL;
        if (n <= 0 || (r = luks_key_new(pt, (size_t) n, &key)) < 0)
                return strbuf_errorf(err, n <= 0 ? -ENOKEY : r, "the escrow blob of %s holds no key", dev);
        r = crypt_activate_by_passphrase(cd, name, (int) slot, key->data, key->len, 0);
        if (r < 0)
                return strbuf_errorf(err, r == -EPERM ? -ENOKEY : r, r == -EPERM ? "the escrowed key does not open keyslot %d of %s"
                                     : "cannot open keyslot %d of %s", (int) slot, dev);
        if (ret_key)
                *ret_key = TAKE_PTR(key);
        return 0;
}
