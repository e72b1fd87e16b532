#include "unlock.h"

#include "exec.h"
#include "log.h"
#include "paths.h"
#include "sss.h"
#include "tang.h"

#include "json.h"
#include <libcryptsetup.h>

#define UNLOCK_PASS_MAX 4096u           /* what clevis decrypt may print: kiln's keys are 64 bytes */
#define UNLOCK_JWE_MAX (256u * 1024u)   /* clevis encrypt's JWE: ~3 KiB per tang pin with its advertisement */
#define UNLOCK_TIMEOUT_USEC (180ull * 1000000ull)   /* one clevis run: ~20 jose processes a pin, slow under TCG */
#define UNLOCK_KEY_BYTES 32u            /* the new keyslot's key: 256 random bits, as hex text */
#define UNLOCK_PBKDF2_ITERATIONS 1000u  /* clevis's own choice for its keyslots (see unlock.h) */

int unlock_clevis_config(const struct spec_luks *l, const char **ret_pin, char **ret_config) {
        if (l->unlock.n_tang == 0)
                return -EINVAL;
        _cleanup_json_ json_object *servers = json_object_new_array();
        if (!servers)
                return -ENOMEM;
        for (size_t i = 0; i < l->unlock.n_tang; i++) {
                json_object *t = json_object_new_object();
                if (!t || json_object_array_add(servers, t) < 0) {
                        json_object_put(t);
                        return -ENOMEM;
                }
                json_object_object_add(t, "url", json_object_new_string(l->unlock.tang[i].url));
                json_object_object_add(t, "thp", json_object_new_string(l->unlock.tang[i].thp));
        }
        bool single = l->unlock.n_tang == 1 && l->unlock.threshold <= 1;
        _cleanup_json_ json_object *cfg = NULL;
        if (single)
                cfg = json_object_get(json_object_array_get_idx(servers, 0));
        else {
                cfg = json_object_new_object();
                json_object *pins = json_object_new_object();
                if (!cfg || !pins) {
                        json_object_put(pins);
                        return -ENOMEM;
                }
                json_object_object_add(cfg, "t", json_object_new_int((int) l->unlock.threshold));
                json_object_object_add(pins, "tang", json_object_get(servers));
                json_object_object_add(cfg, "pins", pins);
        }
        const char *text = json_object_to_json_string_ext(cfg, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *c = text ? strdup(text) : NULL;
        if (!c)
                return -ENOMEM;
        *ret_pin = single ? "tang" : "sss";
        *ret_config = c;
        return 0;
}

/* The five parts of a JWE in its compact serialization, in order. */
static const char *const jwe_parts[] = { "protected", "encrypted_key", "iv", "ciphertext", "tag" };

static bool base64url_valid(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
                      s[i] == '-' || s[i] == '_'))
                        return false;
        return true;
}

/* compact "P.K.I.C.T" -> {"ciphertext":C,"encrypted_key":K,"iv":I,"protected":P,"tag":T}: the flattened
 * JSON serialization that `jose jwe fmt` makes and clevis-luks-bind stores in the token. */
static int jwe_compact_to_json(const char *compact, json_object **ret) {
        const char *p[ELEMENTSOF(jwe_parts) + 1];
        size_t n = 0;
        p[n++] = compact;
        for (const char *c = compact; *c; c++)
                if (*c == '.') {
                        if (n == ELEMENTSOF(jwe_parts))
                                return -EBADMSG;
                        p[n++] = c + 1;
                }
        if (n != ELEMENTSOF(jwe_parts))
                return -EBADMSG;
        p[n] = compact + strlen(compact) + 1;
        json_object *parts[ELEMENTSOF(jwe_parts)] = {};
        for (size_t i = 0; i < n; i++) {
                size_t len = (size_t) (p[i + 1] - p[i]) - 1;
                if (!base64url_valid(p[i], len) || (len == 0 && i != 1))     /* only encrypted_key may be empty */
                        return -EBADMSG;
                parts[i] = json_object_new_string_len(p[i], (int) len);
                if (!parts[i]) {
                        for (size_t k = 0; k < i; k++)
                                json_object_put(parts[k]);
                        return -ENOMEM;
                }
        }
        json_object *o = json_object_new_object();
        if (!o) {
                for (size_t k = 0; k < n; k++)
                        json_object_put(parts[k]);
                return -ENOMEM;
        }
        static const size_t sorted[] = { 3, 1, 2, 0, 4 };       /* jose's order: ciphertext, encrypted_key, iv, ... */
        for (size_t k = 0; k < ELEMENTSOF(sorted); k++)
                json_object_object_add(o, jwe_parts[sorted[k]], parts[sorted[k]]);
        *ret = o;
        return 0;
}

/* The way back, as the node's initramfs does it (jose jwe fmt -c). */
static int jwe_json_to_compact(json_object *jwe, struct strbuf *out) {
        for (size_t i = 0; i < ELEMENTSOF(jwe_parts); i++) {
                json_object *v = NULL;
                const char *s = "";
                if (json_object_object_get_ex(jwe, jwe_parts[i], &v)) {
                        if (!json_object_is_type(v, json_type_string))
                                return -EBADMSG;
                        s = json_object_get_string(v);
                } else if (i != 1)
                        return -EBADMSG;
                if (!base64url_valid(s, strlen(s)))
                        return -EBADMSG;
                int r = strbuf_addf(out, "%s%s", i ? "." : "", s);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The clevis token of keyslot slot on cd: its id, and its JWE in compact form. */
static int clevis_token_of_slot(struct crypt_device *cd, int slot, int *ret_token, struct strbuf *ret_jwe) {
        char want[16];
        snprintf(want, sizeof want, "%d", slot);
        for (int id = 0; id < 32; id++) {
                const char *type = NULL, *json = NULL;
                if (crypt_token_status(cd, id, &type) == CRYPT_TOKEN_INACTIVE || !type || !streq(type, "clevis"))
                        continue;
                if (crypt_token_json_get(cd, id, &json) < 0 || !json)
                        continue;
                _cleanup_json_ json_object *o = json_tokener_parse(json);
                json_object *ks = NULL, *jwe = NULL;
                if (!o || !json_object_object_get_ex(o, "keyslots", &ks) || !json_object_is_type(ks, json_type_array))
                        continue;
                bool match = false;
                for (size_t k = 0; k < json_object_array_length(ks); k++)
                        match |= streq(json_object_get_string(json_object_array_get_idx(ks, k)) ?: "", want);
                if (!match)
                        continue;
                if (!json_object_object_get_ex(o, "jwe", &jwe) || !json_object_is_type(jwe, json_type_object))
                        return -EBADMSG;
                int r = jwe_json_to_compact(jwe, ret_jwe);
                if (r < 0)
                        return r;
                *ret_token = id;
                return 0;
        }
        return -ENOENT;
}

/* `clevis decrypt` of jwe in root, into pass (locked memory): for a token of a pin kiln does
 * not make itself (kiln's tang and sss are decrypted in process). */
static int clevis_decrypt(const char *root, const struct strbuf *jwe, int slot, struct luks_key *pass, size_t *ret_len,
                          struct strbuf *err) {
        const char *argv[] = { kiln_paths.t_clevis, "decrypt", NULL };
        struct exec_options o = {
                .timeout_usec = UNLOCK_TIMEOUT_USEC, .err = err, .root = root, .in = jwe->buf, .in_len = jwe->len,
                .out_secret = pass->data, .out_secret_size = pass->mapped, .out_secret_len = ret_len,
        };
        int r = exec_argv(argv, &o, NULL);
        if (r < 0) {
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                (void) strbuf_addf(&why, "clevis decrypt of the token of keyslot %d: %s", slot, exec_last_line(err));
                strbuf_reset(err);
                return strbuf_adds(err, strbuf_str(&why)), r;
        }
        return 0;
}

/* A compact clevis JWE (the token of keyslot slot of dev) decrypted as the initramfs's clevis
 * decrypt does it: tang and sss in process (through Tang's /rec), any other pin with `clevis
 * decrypt` in root; the key into pass (locked memory, never logged), its length *ret_len. */
static int decrypt_jwe(const char *root, const char *dev, int slot, const struct strbuf *jwe, struct luks_key *pass,
                       size_t *ret_len, struct strbuf *err) {
        char pin[16] = "";
        (void) tang_jwe_pin(strbuf_str(jwe), pin, sizeof pin);
        int r;
        if (streq(pin, "tang") || streq(pin, "sss")) {
                /* in process, as clevis-decrypt-tang and clevis-decrypt-sss do it */
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                r = streq(pin, "tang") ? tang_decrypt(strbuf_str(jwe), pass->data, pass->mapped, ret_len, &why)
                                       : sss_decrypt(strbuf_str(jwe), pass->data, pass->mapped, ret_len, &why);
                if (r < 0)
                        return strbuf_addf(err, "%s decrypt of the token of keyslot %d of %s: %s", pin, slot, dev,
                                           strbuf_why(&why, r)), r;
        } else if ((r = clevis_decrypt(root, jwe, slot, pass, ret_len, err)) < 0)     /* a pin kiln does not make */
                return r;
        if (*ret_len == 0)
                return strbuf_addf(err, "the clevis pin yields no key for keyslot %d of %s", slot, dev), -ENOKEY;
        return 0;
}

/* The proof: the token of slot as stored, back in compact form, decrypted as the initramfs's
 * clevis decrypt does it (decrypt_jwe) opens keyslot slot. expect (may be
 * NULL): the JWE the pin made, which the stored one must equal. */
static int prove_slot(struct crypt_device *cd, const char *root, const char *dev, int slot, const char *expect,
                      struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf jwe = STRBUF_INIT;
        int token = -1;
        int r = clevis_token_of_slot(cd, slot, &token, &jwe);
        if (r == -ENOENT)
                return strbuf_addf(err, "no clevis token for keyslot %d of %s", slot, dev), -ENOKEY;
        if (r < 0)
                return strbuf_addf(err, "the clevis token of keyslot %d of %s holds no valid JWE", slot, dev), r;
        if (expect && !streq(strbuf_str(&jwe), expect))
                return strbuf_addf(err, "the clevis token of keyslot %d of %s does not read back as written", slot, dev),
                       -EBADMSG;
        _cleanup_luks_key_free_ struct luks_key *pass = NULL;
        if ((r = luks_key_new(NULL, UNLOCK_PASS_MAX, &pass)) < 0)
                return r;
        size_t len = 0;
        if ((r = decrypt_jwe(root, dev, slot, &jwe, pass, &len, err)) < 0)
                return r;
        /* name NULL: check the key against the keyslot, activate nothing */
        r = crypt_activate_by_passphrase(cd, NULL, slot, pass->data, len, 0);
        if (r < 0) {
                (void) strbuf_addf(err, "the key the clevis pin yields does not open keyslot %d of %s", slot, dev);
                return r == -EPERM ? -ENOKEY : r;
        }
        return 0;
}

int unlock_bind(const char *root, const char *dev, const struct spec_luks *l, const struct luks_key *key,
                struct strbuf *err, int *ret_slot) {
        const char *pin = NULL;
        _cleanup_free_ char *config = NULL;
        int r = unlock_clevis_config(l, &pin, &config);
        if (r < 0)
                return r;
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        if ((r = luks_load(dev, &cd, err)) < 0)
                return r;

        /* the new keyslot's key: random, as text (the initramfs hands it to cryptroot's prompt) */
        _cleanup_luks_key_free_ struct luks_key *newkey = NULL;
        if ((r = luks_key_generate_hex(UNLOCK_KEY_BYTES, &newkey)) < 0)
                return r;
        (void) log_register_secret(newkey->data);

        /* the pin encrypts it; nothing written yet */
        _cleanup_strbuf_ struct strbuf jwe = { .max = UNLOCK_JWE_MAX };
        if (streq(pin, "tang"))
                /* in process, as clevis-encrypt-tang does, with its trust check on the thumbprint */
                r = tang_encrypt(l->unlock.tang[0].url, l->unlock.tang[0].thp, newkey->data, newkey->len, &jwe, err);
        else
                /* in process, as clevis-encrypt-sss does, each share through the tang pin */
                r = sss_encrypt(l->unlock.tang, l->unlock.n_tang, l->unlock.threshold, newkey->data, newkey->len, &jwe,
                                err);
        if (r < 0)
                return r;
        while (jwe.len > 0 && (jwe.buf[jwe.len - 1] == '\n' || jwe.buf[jwe.len - 1] == ' '))
                jwe.buf[--jwe.len] = '\0';
        _cleanup_json_ json_object *token = json_object_new_object(), *flat = NULL;
        if (!token)
                return -ENOMEM;
        if ((r = jwe_compact_to_json(strbuf_str(&jwe), &flat)) < 0)
                return strbuf_addf(err, "clevis encrypt %s printed no compact JWE", pin), r;

        /* the keyslot: a random 256-bit key needs no slow PBKDF; the spec's key opens slot 0 once */
        struct crypt_pbkdf_type pbkdf = {
                .type = CRYPT_KDF_PBKDF2, .hash = "sha256", .iterations = UNLOCK_PBKDF2_ITERATIONS,
                .flags = CRYPT_PBKDF_NO_BENCHMARK,
        };
        if ((r = crypt_set_pbkdf_type(cd, &pbkdf)) < 0)
                return strbuf_addf(err, "cannot set the PBKDF for a new keyslot of %s", dev), r;
        int slot = crypt_keyslot_add_by_passphrase(cd, CRYPT_ANY_SLOT, key->data, key->len, newkey->data, newkey->len);
        if (slot < 0) {
                (void) strbuf_addf(err, slot == -EPERM ? "the spec's key opens no keyslot of %s"
                                                       : "cannot add a keyslot to %s", dev);
                return slot == -EPERM ? -ENOKEY : slot;
        }

        /* the token, as clevis-luks-bind stores it for LUKS2 */
        char slot_s[16];
        snprintf(slot_s, sizeof slot_s, "%d", slot);
        json_object *slots = json_object_new_array();
        if (!slots || json_object_array_add(slots, json_object_new_string(slot_s)) < 0)
                r = -ENOMEM;
        else {
                json_object_object_add(token, "type", json_object_new_string("clevis"));
                json_object_object_add(token, "keyslots", slots);
                slots = NULL;
                json_object_object_add(token, "jwe", TAKE_PTR(flat));
        }
        json_object_put(slots);
        const char *text = r < 0 ? NULL : json_object_to_json_string_ext(token, JSON_C_TO_STRING_PLAIN |
                                                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
        int id = text ? crypt_token_json_set(cd, CRYPT_ANY_TOKEN, text) : -ENOMEM;
        if (id < 0)
                (void) strbuf_addf(err, "cannot write the clevis token for keyslot %d of %s", slot, dev);
        else {
                strbuf_reset(err);
                r = prove_slot(cd, root, dev, slot, strbuf_str(&jwe), err);
                if (r == 0) {
                        *ret_slot = slot;
                        return 0;
                }
        }
        /* not proven: take back what was written */
        if (id >= 0)
                (void) crypt_token_json_set(cd, id, NULL);
        (void) crypt_keyslot_destroy(cd, slot);
        return id < 0 ? id : r;
}

int unlock_prove(const char *root, const char *dev, int slot, struct strbuf *err) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = luks_load(dev, &cd, err);
        if (r < 0)
                return r;
        return prove_slot(cd, root, dev, slot, NULL, err);
}

int unlock_recover(const char *root, const char *dev, struct luks_key **ret_key, int *ret_slot, struct strbuf *err) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = luks_load(dev, &cd, err);
        if (r < 0)
                return r;
        int first = 0, tried = 0;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        for (int slot = 0; slot < crypt_keyslot_max(CRYPT_LUKS2); slot++) {
                crypt_keyslot_info ki = crypt_keyslot_status(cd, slot);
                if (ki != CRYPT_SLOT_ACTIVE && ki != CRYPT_SLOT_ACTIVE_LAST)
                        continue;
                _cleanup_strbuf_ struct strbuf jwe = STRBUF_INIT, e = STRBUF_INIT;
                int token = -1;
                r = clevis_token_of_slot(cd, slot, &token, &jwe);
                if (r == -ENOENT)
                        continue;
                tried++;
                _cleanup_luks_key_free_ struct luks_key *pass = NULL;
                size_t len = 0;
                if (r < 0)
                        (void) strbuf_addf(&e, "the clevis token of keyslot %d of %s holds no valid JWE", slot, dev);
                else if ((r = luks_key_new(NULL, UNLOCK_PASS_MAX, &pass)) < 0)
                        return r;
                else if ((r = decrypt_jwe(root, dev, slot, &jwe, pass, &len, &e)) == 0) {
                        /* name NULL: the key checked against its keyslot, nothing activated */
                        r = crypt_activate_by_passphrase(cd, NULL, slot, pass->data, len, 0);
                        if (r >= 0) {
                                pass->len = len;
                                *ret_key = TAKE_PTR(pass);
                                if (ret_slot)
                                        *ret_slot = slot;
                                return 0;
                        }
                        (void) strbuf_addf(&e, "the key the clevis pin yields does not open keyslot %d of %s", slot, dev);
                        r = r == -EPERM ? -ENOKEY : r;
                }
                if (!first) {   /* the first token's reason is the one told */
                        first = r;
                        strbuf_reset(&why);
                        (void) strbuf_adds(&why, strbuf_str(&e));
                }
        }
        if (!tried)
                return strbuf_addf(err, "%s has no clevis token: no Tang pin opens it", dev), -ENOENT;
        (void) strbuf_adds(err, strbuf_str(&why));
        return first;
}
