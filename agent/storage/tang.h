/* clevis's tang pin, in process: what `clevis encrypt tang CONFIG -y` and
 * `clevis decrypt` (with a tang JWE) do, with libjose (the library clevis's
 * own jose tool is built on) for the JOSE work and kiln's HTTP client for
 * Tang's /adv and /rec. Under emulation each clevis run was ~20 jose
 * processes (~6 s); this is a few milliseconds of JOSE and two requests.
 *
 * Encrypt, as clevis-encrypt-tang 19 does: GET URL/adv/THP; the payload's
 * keys; every key whose use is "verify" must have signed the advertisement
 * (`jose jws ver -a`); THP must be the thumbprint of one of those signing
 * keys, SHA-256 (clevis's default) or SHA-1 (its alternative) — clevis's
 * own trust rule, which its -y skips and kiln keeps — or SHA-512 (which the
 * spec allows and Tang's /adv/THP finds); the first "deriveKey"
 * key (key_ops and alg removed) is the exchange key; the JWE is ECDH-ES +
 * A256GCM with the protected header {"alg","enc","kid": the exchange key's
 * SHA-256 thumbprint, "clevis":{"pin":"tang","tang":{"url","adv": the
 * payload}},"epk"}, in compact serialization.
 *
 * Decrypt, as clevis-decrypt-tang does: the header's pin must be "tang";
 * the key of clevis.tang.adv whose thumbprint is kid (SHA-256 or SHA-1);
 * an ephemeral ECMR key on epk's curve; the McCallum-Relyea exchange through
 * POST URL/rec/KID (application/jwk+json); the JWE decrypted with the
 * result. The plaintext goes straight into the caller's buffer (locked
 * memory), nothing else keeps it.
 *
 * Both are silent: 0 or -errno, and err says what failed and on what. */
#pragma once
#include "strbuf.h"
#include "util.h"

/* The compact JWE of pt (ptl bytes) for the Tang at url whose signing key
 * has thumbprint thp, appended to ret_jwe. Errors: -ENOENT, -EPROTO, -EIO,
 * -ETIMEDOUT, -ECONNREFUSED... (the advertisement could not be fetched),
 * -EBADMSG (it is malformed, or not signed by all its signing keys),
 * -EKEYREJECTED (thp is no signing key of it), -ENOKEY (it has no exchange
 * key), -EINVAL (libjose could not encrypt). */
int tang_encrypt(const char *url, const char *thp, const void *pt, size_t ptl, struct strbuf *ret_jwe,
                 struct strbuf *err);

/* The clevis pin a compact JWE names in its protected header ("tang",
 * "sss", ...), into pin (size bytes). -EBADMSG if there is none. */
int tang_jwe_pin(const char *jwe, char *pin, size_t size);

/* Decrypts a compact tang JWE into buf (size bytes; *ret_len the length).
 * Errors: -EBADMSG (not a tang JWE, or malformed), -EKEYREJECTED (kid is no
 * key of its advertisement), -EPROTO, -EIO... (Tang did not answer the
 * recovery), -ENOKEY (the recovered key does not decrypt it), -E2BIG (the
 * plaintext is larger than size). */
int tang_decrypt(const char *jwe, void *buf, size_t size, size_t *ret_len, struct strbuf *err);
