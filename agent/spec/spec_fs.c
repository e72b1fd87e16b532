/* filesystems and swap (docs/spec.md "filesystems"): type, label, mount
 * point and options, swap with a random key, and the checks of what each is
 * on and of what must open again after a reboot. */
#include "spec_internal.h"

const char *const spec_fs_keys[] = { "on", "type", "label", "mkfs_options", "mount", "mount_options", "encrypt",
                                     "required", "device_timeout", NULL };

/* What the node cannot run without: the boot fails without them, whatever
 * the spec says. /usr too: Debian's initramfs mounts a separate /usr itself,
 * from /etc/fstab, before the switch to the root (docs/spec.md "Device waits"). */
static const char *const required_mounts[] = { "/", "/usr", "/boot", "/boot/efi", NULL };

/* Does the comma-separated option list opts hold option name (name, or name=...)? */
static bool has_option(const char *opts, const char *name) {
        size_t n = strlen(name);
        for (const char *p = opts; p && *p;) {
                size_t len = strcspn(p, ",");
                if (len >= n && strncmp(p, name, n) == 0 && (len == n || p[n] == '='))
                        return true;
                p += len;
                p += *p == ',';
        }
        return false;
}

static const char *const fs_types[] = {
        [SPEC_FS_XFS] = "xfs", [SPEC_FS_EXT4] = "ext4", [SPEC_FS_SWAP] = "swap", [SPEC_FS_VFAT] = "vfat", NULL,
};

static bool valid_mount(const char *p) {
        if (p[0] != '/')
                return false;
        if (streq(p, "/"))
                return true;
        size_t n = strlen(p);
        if (p[n - 1] == '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../"))
                return false;
        if (n >= 2 && streq(p + n - 2, "/."))
                return false;
        if (n >= 3 && streq(p + n - 3, "/.."))
                return false;
        for (const char *s = p; *s; s++)
                if ((unsigned char) *s <= 0x20 || *s == 0x7f)
                        return false;
        return true;
}

void spec_parse_fs(struct ctx *c, const struct ynode *m, size_t idx, struct spec_filesystem *fs) {
        static const size_t label_max[] = { [SPEC_FS_XFS] = 12, [SPEC_FS_EXT4] = 16, [SPEC_FS_SWAP] = 15, [SPEC_FS_VFAT] = 11 };
        char where[128], f[256], t[QUOTE_MAX + 4];
        fs->mark = (struct spec_mark) { m->line, m->col };
        snprintf(where, sizeof where, "filesystem #%zu", idx + 1);
        struct loc l = { where, "" };
        if (spec_get_ref(c, m, &l, where, "on", &fs->on, &fs->on_mark) > 0)
                snprintf(where, sizeof where, "filesystem on '%s'", spec_quote(fs->on, t));
        spec_check_keys(c, m, &l, spec_fs_keys);
        const struct ynode *v;
        int e;
        bool typed = false;
        if (!(v = spec_map_get(m, "type")))
                spec_missing(c, m, where, "type");
        else if (spec_get_enum(c, &l, "type", v, fs_types, &e) > 0) {
                fs->type = e;
                typed = true;
        }
        v = spec_map_get(m, "label");
        if (spec_get_str(c, &l, "label", v, &fs->label) > 0 && typed && strlen(fs->label) > label_max[fs->type])
                emitn(c, v, "%s is longer than %zu characters (the limit of %s)", spec_field(&l, "label", f),
                      label_max[fs->type], fs_types[fs->type]);
        (void) spec_get_strv(c, &l, "mkfs_options", spec_map_get(m, "mkfs_options"), false, &fs->mkfs_options, NULL);
        v = spec_map_get(m, "mount");
        if (spec_get_str(c, &l, "mount", v, &fs->mount) > 0) {
                fs->mount_mark = (struct spec_mark) { v->line, v->col };
                if (typed && fs->type == SPEC_FS_SWAP)
                        emitn(c, v, "%s is not allowed for swap", spec_field(&l, "mount", f));
                else if (!valid_mount(fs->mount))
                        emitn(c, v, "%s must be an absolute path without '.', '..', '//' or a trailing '/', not '%s'",
                              spec_field(&l, "mount", f), spec_quote(fs->mount, t));
        }
        static const char *const encrypts[] = { "random", NULL };
        v = spec_map_get(m, "encrypt");
        if (spec_get_enum(c, &l, "encrypt", v, encrypts, &e) > 0) {
                fs->encrypt_random = true;
                fs->encrypt_mark = (struct spec_mark) { v->line, v->col };
                if (typed && fs->type != SPEC_FS_SWAP)
                        emitn(c, v, "%s is only for swap: a random key is made again at every boot, so a %s filesystem "
                              "on it would be lost at each one (to encrypt it, put it on a luks with a key)",
                              spec_field(&l, "encrypt", f), fs_types[fs->type]);
                if (fs->label)
                        emitn(c, spec_map_get(m, "label"), "%s is not kept with 'encrypt: random': the swap is made again "
                              "at every boot, without a label", spec_field(&l, "label", f));
                if (fs->mkfs_options)
                        emitn(c, spec_map_get(m, "mkfs_options"), "%s is not used with 'encrypt: random': kiln runs no "
                              "mkswap (the installed system's cryptsetup does, at every boot)", spec_field(&l, "mkfs_options", f));
        }
        v = spec_map_get(m, "mount_options");
        if (spec_get_str(c, &l, "mount_options", v, &fs->mount_options) > 0) {
                if (!fs->mount)
                        emitn(c, v, "%s is given without 'mount'", spec_field(&l, "mount_options", f));
                for (const char *p = fs->mount_options; *p; p++)
                        if ((unsigned char) *p <= 0x20 || *p == 0x7f) {
                                emitn(c, v, "%s must not contain spaces or control characters", spec_field(&l, "mount_options", f));
                                break;
                        }
                /* the plan writes these (one fact, one place) */
                if (has_option(fs->mount_options, "nofail") || has_option(fs->mount_options, "fail"))
                        emitn(c, v, "%s must not hold 'nofail': kiln writes it for every mount but '/', '/usr', '/boot' "
                              "and '/boot/efi' unless the filesystem has 'required: true'", spec_field(&l, "mount_options", f));
                if (has_option(fs->mount_options, "x-systemd.device-timeout"))
                        emitn(c, v, "%s must not hold 'x-systemd.device-timeout': kiln writes it from 'device_timeout' "
                              "(the filesystem's, else the top level's)", spec_field(&l, "mount_options", f));
        }
        bool fixed = fs->mount && strv_contains((char *const *) required_mounts, fs->mount);
        fs->required = fixed;
        v = spec_map_get(m, "required");
        bool req = false;
        if (spec_get_bool(c, &l, "required", v, &req) > 0) {
                fs->required_mark = (struct spec_mark) { v->line, v->col };
                if (!fs->mount && !(typed && fs->type == SPEC_FS_SWAP))
                        emitn(c, v, "%s is given without 'mount': only what fstab holds (a mount or swap) is waited for "
                              "at boot", spec_field(&l, "required", f));
                else if (fixed && !req)
                        emitn(c, v, "%s cannot be false for '%s': the node cannot run without it", spec_field(&l, "required", f),
                              spec_quote(fs->mount, t));
                else
                        fs->required = req;
        }
        v = spec_map_get(m, "device_timeout");
        if (spec_get_duration(c, &l, "device_timeout", v, 1, SPEC_DEVICE_TIMEOUT_MAX_S, &fs->device_timeout) > 0) {
                fs->device_timeout_mark = (struct spec_mark) { v->line, v->col };
                if (!fs->mount && !(typed && fs->type == SPEC_FS_SWAP))
                        emitn(c, v, "%s is given without 'mount': only what fstab holds (a mount or swap) is waited for "
                              "at boot", spec_field(&l, "device_timeout", f));
                else if (fs->mount && streq(fs->mount, "/usr"))
                        emitn(c, v, "%s cannot be set for '/usr': Debian's initramfs mounts it, before systemd "
                              "waits for anything", spec_field(&l, "device_timeout", f));
        }
}

unsigned spec_fs_device_timeout(const struct spec *s, const struct spec_filesystem *fs) {
        return fs->device_timeout ? fs->device_timeout : s->device_timeout;
}

/* The luks with a generated key that o is built on, if any (an escrowed one
 * is kept: the operator recovers it). The key is kept
 * nowhere (docs/spec.md), so whatever the node must find again after a
 * reboot cannot sit on it. Called only on a graph without cycles. */
static const struct obj *generated_key_below(struct ctx *c, const struct obj *o) {
        if (!o)
                return NULL;
        if (o->kind == SPEC_OBJ_LUKS && ((const struct spec_luks *) o->ptr)->key.source == SPEC_KEY_GENERATE &&
            !((const struct spec_luks *) o->ptr)->key.escrow)
                return o;
        const char *dep;
        for (size_t i = 0; (dep = spec_obj_dep(o, i)); i++) {
                const struct obj *g = generated_key_below(c, spec_find_obj(c, dep));
                if (g)
                        return g;
        }
        return NULL;
}

/* filesystems: one per device and per mount point; true when one is mounted at '/' */
bool spec_check_filesystems(struct ctx *c) {
        struct spec *s = c->s;
        char where[128], t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        bool root = false;
        for (size_t i = 0; i < s->n_filesystems; i++) {
                struct spec_filesystem *fs = &s->filesystems[i];
                if (fs->on)
                        snprintf(where, sizeof where, "filesystem on '%s'", spec_quote(fs->on, t));
                else
                        snprintf(where, sizeof where, "filesystem #%zu", i + 1);
                struct obj *o = spec_resolve(c, "on", where, fs->on, fs->on_mark, BLOCK_KINDS);
                fs->on_ref = o ? (struct spec_ref) { o->kind, o->ptr } : (struct spec_ref) {};
                spec_single_device(c, o, "on", where, fs->on_mark);
                spec_consume(c, o, fs, SPEC_OBJ_NONE, where, false, fs->on_mark);
                /* crypttab overwrites the device at every boot: it must be named by
                 * something that cannot turn into another disk's partition */
                if (o && fs->encrypt_random && (o->kind == SPEC_OBJ_DISK || o->kind == SPEC_OBJ_LUKS))
                        spec_emit(c, fs->on_mark.line, fs->on_mark.col,
                                  o->kind == SPEC_OBJ_DISK ?
                                  "swap with 'encrypt: random' on disk '%s': it must sit on a partition, raid or volume, "
                                  "which crypttab names by PARTUUID, /dev/md/NAME or /dev/VG/LV (a whole disk has only "
                                  "its /dev/sdX name, which may be another disk at the next boot, and crypttab "
                                  "overwrites it at every boot)" :
                                  "swap with 'encrypt: random' on luks '%s': it is its own plain dm-crypt with a fresh "
                                  "key, so put it on the device under the luks and drop the luks",
                                  spec_quote(fs->on, t));
                if (!fs->mount)
                        continue;
                if (streq(fs->mount, "/"))
                        root = true;
                for (size_t j = 0; j < i; j++)
                        if (s->filesystems[j].mount && streq(s->filesystems[j].mount, fs->mount)) {
                                spec_emit(c, fs->mount_mark.line, fs->mount_mark.col,
                                          "mount point '%s' is already used by the filesystem on '%s' (line %u)",
                                          spec_quote(fs->mount, t), spec_quote(s->filesystems[j].on ? s->filesystems[j].on : "?", t2),
                                          s->filesystems[j].mount_mark.line);
                                break;
                        }
        }
        return root;
}

/* a filesystem in fstab (mounted, or swap) on a generated key would
 * stop the node's next boot at a passphrase prompt nobody can answer */
void spec_check_generated_keys(struct ctx *c) {
        struct spec *s = c->s;
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        for (size_t i = 0; i < s->n_filesystems; i++) {
                const struct spec_filesystem *fs = &s->filesystems[i];
                if (!fs->on || (!fs->mount && fs->type != SPEC_FS_SWAP))
                        continue;
                const struct obj *g = generated_key_below(c, spec_find_obj(c, fs->on));
                if (!g)
                        continue;
                const struct spec_luks *x = g->ptr;
                char use[QUOTE_MAX + 32], t3[QUOTE_MAX + 4];
                if (fs->mount)
                        snprintf(use, sizeof use, "mounted at '%s'", spec_quote(fs->mount, t2));
                else
                        snprintf(use, sizeof use, "used as swap");
                spec_emit(c, x->key.mark.line, x->key.mark.col,
                          "luks '%s' has a generated key, which is kept nowhere, but the filesystem on '%s' (%s) "
                          "must be opened again after a reboot; give the luks a key 'url' or 'passphrase'%s",
                          spec_quote(g->id, t), spec_quote(fs->on, t3), use,
                          fs->mount ? "" : " (for swap with a fresh key at every boot, drop the luks and write "
                                      "'encrypt: random' on the swap)");
        }
}

void spec_free_filesystems(struct spec *s) {
        for (size_t i = 0; i < s->n_filesystems; i++) {
                struct spec_filesystem *fs = &s->filesystems[i];
                free(fs->on); free(fs->label); strv_free(fs->mkfs_options); free(fs->mount); free(fs->mount_options);
        }
        free(s->filesystems);
}

int spec_swap_crypt_name(const struct spec_filesystem *fs, char **ret) {
        if (!fs || !fs->on)
                return -EINVAL;
        char *n = strdupf("%s_crypt", fs->on);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

DEFINE_STRING_TABLE_TO_STRING(spec_fs_type_name, enum spec_fs_type, fs_types)

const char *spec_fs_mount_options(const struct spec_filesystem *fs) {
        return fs->mount_options ? fs->mount_options : "defaults";
}
