/* clevis's sss pin (Shamir's secret sharing over several tang pins), in
 * process: what `clevis encrypt sss CONFIG -y` and `clevis decrypt` of an
 * sss JWE do (clevis 19's src/pins/sss), the tang children through tang.h.
 *
 * Encrypt: a 256-bit safe prime p; t random coefficients below p, the first
 * of them the key; for each pin a point (x random below p, y the
 * polynomial at x), 32 + 32 bytes, encrypted by its tang pin; the outer JWE
 * "dir" + A256GCM with the key, protected header {"alg":"dir","enc",
 * "clevis":{"pin":"sss","sss":{"t","p","jwe":[the pins' compact JWEs]}}},
 * compact. Decrypt: the pins' JWEs in order until t of them open, the key
 * by Lagrange interpolation at 0 mod p, the outer JWE with it.
 *
 * Silent: 0 or -errno, err says what failed. */
#pragma once
#include "spec.h"
#include "strbuf.h"

/* The compact sss JWE of pt for the n tang pins, t of which must answer,
 * appended to ret_jwe. Errors: tang_encrypt's (the first pin that fails),
 * -EINVAL (t not within 1..n, or OpenSSL/libjose failed). */
int sss_encrypt(const struct spec_tang *tang, size_t n, unsigned t, const void *pt, size_t ptl,
                struct strbuf *ret_jwe, struct strbuf *err);

/* Decrypts a compact sss JWE into buf (size bytes, *ret_len). Errors:
 * -EBADMSG (not an sss JWE of tang pins), -ENOKEY (fewer than t pins
 * opened: err says why the last failed, or the key does not decrypt it),
 * -E2BIG (the plaintext is larger than size). */
int sss_decrypt(const char *jwe, void *buf, size_t size, size_t *ret_len, struct strbuf *err);
