/* The escrow certificate of luks[].key.escrow (docs/spec.md "Escrowed
 * recovery key"): the operator's X.509 certificate, PEM, whose public key
 * the generated key is encrypted to as CMS EnvelopedData (OpenSSL). One
 * check, here, used by validation and by the node before it seals (so a
 * certificate that validates is one the node can use, and the reverse). */
#include "spec.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define ESCROW_CERT_MAX (64u * 1024u)
#define ESCROW_RSA_MIN_BITS 2048

int spec_escrow_cert(const char *pem, X509 **ret_cert, char ret_sha256[static 65], char *why, size_t why_len) {
        if (!pem || !strstr(pem, "-----BEGIN CERTIFICATE-----"))
                return snprintf(why, why_len, "is not a PEM certificate (no '-----BEGIN CERTIFICATE-----')"), -EBADMSG;
        size_t n = strlen(pem);
        if (n > ESCROW_CERT_MAX)
                return snprintf(why, why_len, "is longer than %u bytes", ESCROW_CERT_MAX), -E2BIG;
        BIO *bio = BIO_new_mem_buf(pem, (int) n);
        if (!bio)
                return -ENOMEM;
        X509 *cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
        X509 *second = cert ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
        BIO_free(bio);
        int r = 0;
        if (!cert) {
                snprintf(why, why_len, "does not parse as an X.509 certificate");
                r = -EBADMSG;
        } else if (second) {
                snprintf(why, why_len, "holds more than one certificate (give the operator's certificate only)");
                r = -EBADMSG;
        }
        X509_free(second);
        EVP_PKEY *pk = cert && r == 0 ? X509_get0_pubkey(cert) : NULL;
        if (r == 0 && !pk) {
                snprintf(why, why_len, "has a public key OpenSSL cannot read");
                r = -EBADMSG;
        }
        uint32_t ku = r == 0 ? X509_get_key_usage(cert) : 0;   /* UINT32_MAX: no keyUsage extension */
        if (r == 0) {
                int type = EVP_PKEY_get_base_id(pk);
                if (type == EVP_PKEY_RSA) {
                        if (EVP_PKEY_get_bits(pk) < ESCROW_RSA_MIN_BITS) {
                                snprintf(why, why_len, "has a %d-bit RSA key; at least %d bits are needed", EVP_PKEY_get_bits(pk),
                                         ESCROW_RSA_MIN_BITS);
                                r = -EKEYREJECTED;
                        } else if (ku != UINT32_MAX && !(ku & KU_KEY_ENCIPHERMENT)) {
                                snprintf(why, why_len, "has an RSA key whose keyUsage does not allow keyEncipherment");
                                r = -EKEYREJECTED;
                        }
                } else if (type == EVP_PKEY_EC) {
                        if (ku != UINT32_MAX && !(ku & KU_KEY_AGREEMENT)) {
                                snprintf(why, why_len, "has an EC key whose keyUsage does not allow keyAgreement");
                                r = -EKEYREJECTED;
                        }
                } else {
                        snprintf(why, why_len, "has a %s key; escrow needs RSA (key transport) or EC (key agreement)",
                                 OBJ_nid2sn(type) ? OBJ_nid2sn(type) : "unknown");
                        r = -EKEYREJECTED;
                }
        }
        if (r == 0 && X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
                snprintf(why, why_len, "has expired");
                r = -EKEYEXPIRED;
        }
        if (r == 0 && X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
                snprintf(why, why_len, "is not valid yet");
                r = -EKEYEXPIRED;
        }
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned mdlen = 0;
        if (r == 0 && (!X509_digest(cert, EVP_sha256(), md, &mdlen) || mdlen != 32))
                r = -EIO;
        if (r < 0) {
                X509_free(cert);
                return r;
        }
        hex_encode(md, mdlen, ret_sha256);
        if (ret_cert)
                *ret_cert = cert;
        else
                X509_free(cert);
        return 0;
}
