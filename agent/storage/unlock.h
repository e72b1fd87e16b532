/* Unattended unlock (luks[].unlock): bind a LUKS2 volume to Tang with the
 * installed system's own clevis, in a chroot of the target, and prove the
 * binding before the run may finish.
 *
 * Why clevis and not a token written from C: the binding must be exactly
 * what Debian's clevis-initramfs (clevis 19) unlocks at boot; running that
 * clevis (`clevis luks bind`) makes it so by construction, verifies the
 * Tang advertisement against the pinned thumbprint itself, and keeps kiln
 * free of a JOSE/ECMR implementation. The spec's key reaches clevis only
 * through a pipe to its stdin (`-k -`). */
#pragma once
#include "luks.h"
#include "spec.h"
#include "strbuf.h"

/* The clevis pin and its JSON configuration for l->unlock: "tang" with
 * {"url","thp"} for one server and threshold 1, else "sss" with
 * {"t":threshold,"pins":{"tang":[...]}}. */
int unlock_clevis_config(const struct spec_luks *l, const char **ret_pin, char **ret_config);

/* The keyslots of the LUKS2 tokens of type "clevis" on dev, as a bit set
 * (slot N = bit N); 0 when there are none. */
int unlock_clevis_slots(const char *dev, uint64_t *ret);

/* clevis luks bind -d DEV -y -k - PIN CONFIG, run in root (NULL: this
 * system) with key on stdin; *ret_slot is the keyslot of the new token. */
int unlock_bind(const char *root, const char *dev, const struct spec_luks *l, const struct luks_key *key,
                struct strbuf *err, int *ret_slot);

/* The proof: clevis luks pass -d DEV -s SLOT (the pin decrypts the token,
 * Tang answers) into locked memory, and libcryptsetup opens keyslot slot of
 * dev with exactly that (no mapping is made: the volume may be in use). */
int unlock_prove(const char *root, const char *dev, int slot, struct strbuf *err);
