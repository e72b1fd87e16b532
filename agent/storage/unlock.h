/* Unattended unlock (luks[].unlock): bind a LUKS2 volume to Tang the way
 * clevis 19's `clevis luks bind` does, and prove the binding before the run
 * may finish.
 *
 * What clevis-luks-bind does, and kiln the same way: a new random key; the
 * pin's encryption of it, in process: for one Tang pin "tang" (tang.h: what
 * `clevis encrypt tang CONFIG -y` does, with libjose, plus clevis's own check
 * of the pinned thumbprint), for several pin "sss" (sss.h: what `clevis
 * encrypt sss CONFIG -y` does); a keyslot with
 * that key, PBKDF2 (sha256) at 1000 iterations, not benchmarked
 * (clevis-luks-bind passes `--pbkdf pbkdf2 --pbkdf-force-iterations 1000`;
 * systemd-cryptenroll uses PBKDF2 at the minimum for its TPM2/FIDO2 keys for
 * the same reason: the key is 256 random bits, a slow PBKDF adds nothing); a
 * LUKS2 token {"type":"clevis","keyslots":["N"],"jwe":{flattened JWE}} as
 * clevis stores it (`jose jwe fmt` of the compact JWE), which Debian's
 * clevis-initramfs and `clevis luks list/unlock/pass` read. Done here with
 * libcryptsetup instead of clevis-luks-bind's ~70 processes (25 cryptsetup,
 * 20 jose), which took 25 s under emulation; the pins in process save the
 * ~20 jose processes of each clevis run (~6 s each under emulation). */
#pragma once
#include "luks.h"
#include "spec.h"
#include "strbuf.h"

/* The clevis pin and its JSON configuration for l->unlock: "tang" with
 * {"url","thp"} for one server and threshold 1, else "sss" with
 * {"t":threshold,"pins":{"tang":[...]}}. */
int unlock_clevis_config(const struct spec_luks *l, const char **ret_pin, char **ret_config);

/* Bind dev to l's pins, run in root (NULL: this system): the new keyslot is
 * added with key (the spec's, for an existing keyslot), its token written,
 * then the proof (unlock_prove's, on the token as stored, and that it reads
 * back as the JWE clevis made). If the proof fails the token and keyslot are
 * removed again; if the encryption fails (Tang unreachable, a wrong
 * thumbprint) nothing was written. *ret_slot is the new keyslot. */
int unlock_bind(const char *root, const char *dev, const struct spec_luks *l, const struct luks_key *key,
                struct strbuf *err, int *ret_slot);

/* The proof: the clevis token of keyslot slot, turned back into a compact JWE
 * as the node's initramfs does, decrypted as the initramfs's clevis does it
 * (in process: Tang's /rec answers; root is used only for a pin kiln does
 * not make, through `clevis decrypt` in root)
 * into locked memory, and
 * libcryptsetup opens keyslot slot of dev with exactly that (no mapping is
 * made: the volume may be in use). */
int unlock_prove(const char *root, const char *dev, int slot, struct strbuf *err);

/* kiln's own later openings of a volume whose key the spec does not carry
 * (key: generate, with or without escrow; docs/recovery.md "kiln's own
 * openings"): the look at a finished node, a resume, from the netboot
 * initramfs. Each clevis token of dev's header in keyslot order, decrypted as
 * unlock_prove() does (tang and sss in process, through Tang's /rec; another
 * pin with `clevis decrypt` in root, NULL: this system), until one yields a
 * key that opens its keyslot (checked with libcryptsetup, nothing activated).
 * *ret_key (locked memory, its length the key's) and *ret_slot (may be NULL).
 * Reads the header only: nothing on dev is written. Errors: -ENOENT (no
 * clevis token: err "DEV has no clevis token: no Tang pin opens it"), else the
 * first token's (err names the pin, the keyslot, dev, the Tang URL and the
 * reason: -ECONNREFUSED, -ETIMEDOUT, -EPROTO... Tang did not answer, -ENOKEY
 * the key it recovered does not unwrap the JWE or open the keyslot,
 * -EKEYREJECTED, -EBADMSG the token is malformed). */
int unlock_recover(const char *root, const char *dev, struct luks_key **ret_key, int *ret_slot, struct strbuf *err);
