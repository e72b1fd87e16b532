/* The escrowed recovery key (luks[].key.escrow, docs/spec.md "Escrowed
 * recovery key", docs/recovery.md): a generated key encrypted to the
 * operator's X.509 certificate as CMS EnvelopedData (OpenSSL's CMS, the
 * format `openssl cms -decrypt` opens; AES-256-CBC content encryption, RSA
 * key transport or EC key agreement as the certificate's key is), kept in
 * the volume's own LUKS2 header as a token of type "kiln-escrow":
 *
 *   {"type":"kiln-escrow","keyslots":[],"keyslot":"0","uuid":"<the volume's UUID>",
 *    "certificate_sha256":"<hex>","cms":"<base64 of the DER EnvelopedData>"}
 *
 * "keyslots" is empty: no unlock path (cryptsetup's token plugins,
 * systemd-cryptsetup) tries it; "keyslot" names the keyslot the key opens.
 * The blob is public: only the private key opens it. The plain key stays in
 * locked memory (luks.h) and is never written. */
#pragma once
#include "luks.h"
#include "strbuf.h"

#define ESCROW_TOKEN_TYPE "kiln-escrow"

struct escrow_blob {
        char *cms;                      /* base64 of the DER EnvelopedData */
        char cert_sha256[65];           /* the recipient certificate's SHA-256 fingerprint, hex */
};
void escrow_blob_done(struct escrow_blob *b);

/* key encrypted to the certificate cert_pem (spec_escrow_cert() checks it
 * again). Writes nothing. */
int escrow_seal(const char *cert_pem, const struct luks_key *key, struct escrow_blob *ret, struct strbuf *err);

/* The token of b on the LUKS2 header of dev, after checking that key opens
 * a keyslot of it (whose number the token records); the token is read back
 * and must equal what was written. *ret_uuid (may be NULL) gets the
 * volume's UUID. On failure nothing stays written. */
int escrow_store(const char *dev, const struct escrow_blob *b, const struct luks_key *key, char **ret_uuid,
                 int *ret_keyslot, struct strbuf *err);

/* Recovery (`kiln recover`): the kiln-escrow token of dev whose certificate
 * is cert_path's, its UUID checked against the header's, decrypted with the
 * private key at key_path (PEM), into locked memory; then the key must open
 * the keyslot the token names: with name NULL that is only checked (no
 * device-mapper needed), else the volume is opened as /dev/mapper/NAME.
 * Reads the header only: nothing on dev is written. Errors (err says what):
 * -ENOENT (no token, no file), -EKEYREJECTED (the key is not the
 * certificate's, the token is for another certificate), -EBADMSG (the token
 * is corrupt), -EXDEV (the token names another volume's UUID), -ENOKEY (the
 * private key does not decrypt it, or the result opens no keyslot). */
int escrow_recover(const char *dev, const char *key_path, const char *cert_path, const char *name,
                   struct luks_key **ret_key, struct strbuf *err);
