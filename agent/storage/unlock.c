#include "unlock.h"

#include "exec.h"
#include "paths.h"

#include "json.h"
#include <libcryptsetup.h>

#define UNLOCK_PASS_MAX 4096u           /* what clevis luks pass may print: its keys are ~54 bytes */
#define UNLOCK_TIMEOUT_USEC (180ull * 1000000ull)   /* luksAddKey benchmarks the PBKDF; TCG is slow */

static void crypt_freep(struct crypt_device **cd) { if (*cd) crypt_free(*cd); }
#define _cleanup_crypt_free_ _cleanup_(crypt_freep)

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

int unlock_clevis_slots(const char *dev, uint64_t *ret) {
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        int r = crypt_init(&cd, dev);
        if (r < 0)
                return r;
        if ((r = crypt_load(cd, CRYPT_LUKS2, NULL)) < 0)
                return r;
        uint64_t slots = 0;
        for (int id = 0; id < 32; id++) {
                const char *type = NULL, *json = NULL;
                if (crypt_token_status(cd, id, &type) == CRYPT_TOKEN_INACTIVE || !type || !streq(type, "clevis"))
                        continue;
                if (crypt_token_json_get(cd, id, &json) < 0 || !json)
                        continue;
                _cleanup_json_ json_object *o = json_tokener_parse(json);
                json_object *ks = NULL;
                if (!o || !json_object_object_get_ex(o, "keyslots", &ks) || !json_object_is_type(ks, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(ks); k++) {
                        unsigned n;
                        if (safe_atou(json_object_get_string(json_object_array_get_idx(ks, k)), &n) == 0 && n < 64)
                                slots |= 1ull << n;
                }
        }
        *ret = slots;
        return 0;
}

int unlock_bind(const char *root, const char *dev, const struct spec_luks *l, const struct luks_key *key,
                struct strbuf *err, int *ret_slot) {
        const char *pin = NULL;
        _cleanup_free_ char *config = NULL;
        uint64_t before = 0, after = 0;
        int r = unlock_clevis_config(l, &pin, &config);
        if (r < 0)
                return r;
        if ((r = unlock_clevis_slots(dev, &before)) < 0)
                return strbuf_addf(err, "cannot read the LUKS2 tokens of %s", dev), r;
        /* -y: no question (the thumbprint pins the advertisement); -k -: the existing key on stdin */
        const char *argv[] = { kiln_paths.t_clevis, "luks", "bind", "-y", "-d", dev, "-k", "-", pin, config, NULL };
        struct exec_options o = {
                .timeout_usec = UNLOCK_TIMEOUT_USEC, .err = err, .root = root, .in = key->data, .in_len = key->len,
        };
        if ((r = exec_argv(argv, &o, NULL)) < 0)
                return r;
        if ((r = unlock_clevis_slots(dev, &after)) < 0)
                return strbuf_addf(err, "cannot read the LUKS2 tokens of %s after clevis luks bind", dev), r;
        uint64_t added = after & ~before;
        if (!added) {
                (void) strbuf_addf(err, "clevis luks bind left no new clevis token on %s", dev);
                return -ENOKEY;
        }
        int slot = 0;
        while (!(added & (1ull << slot)))
                slot++;
        *ret_slot = slot;
        return 0;
}

int unlock_prove(const char *root, const char *dev, int slot, struct strbuf *err) {
        char slot_s[16];
        snprintf(slot_s, sizeof slot_s, "%d", slot);
        _cleanup_luks_key_free_ struct luks_key *pass = NULL;
        int r = luks_key_new(NULL, UNLOCK_PASS_MAX, &pass);
        if (r < 0)
                return r;
        size_t len = 0;
        const char *argv[] = { kiln_paths.t_clevis, "luks", "pass", "-d", dev, "-s", slot_s, NULL };
        struct exec_options o = {
                .timeout_usec = UNLOCK_TIMEOUT_USEC, .err = err, .root = root,
                .out_secret = pass->data, .out_secret_size = pass->mapped, .out_secret_len = &len,
        };
        if ((r = exec_argv(argv, &o, NULL)) < 0)
                return r;
        if (len == 0) {
                (void) strbuf_addf(err, "clevis luks pass printed nothing for keyslot %d of %s", slot, dev);
                return -ENOKEY;
        }
        _cleanup_crypt_free_ struct crypt_device *cd = NULL;
        if ((r = crypt_init(&cd, dev)) < 0 || (r = crypt_load(cd, CRYPT_LUKS2, NULL)) < 0)
                return strbuf_addf(err, "cannot load the LUKS2 header of %s", dev), r;
        /* name NULL: check the key against the keyslot, activate nothing */
        r = crypt_activate_by_passphrase(cd, NULL, slot, pass->data, len, 0);
        if (r < 0) {
                (void) strbuf_addf(err, "the key the clevis pin yields does not open keyslot %d of %s", slot, dev);
                return r == -EPERM ? -ENOKEY : r;
        }
        return 0;
}
