#include "configure.h"

#include "md.h"
#include "mount.h"
#include "paths.h"

#include <blkid/blkid.h>
#include <fcntl.h>
#include <limits.h>
#include <libcryptsetup.h>
#include <sys/stat.h>

static void blkid_free_probep(blkid_probe *p) { if (*p) blkid_free_probe(*p); }

int configure_probe_value(const char *dev, const char *key, char **ret) {
        _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe_from_filename(dev);
        if (!pr)
                return errno > 0 ? -errno : -EIO;
        blkid_probe_enable_superblocks(pr, 1);
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_UUID | BLKID_SUBLKS_TYPE);
        int r = blkid_do_safeprobe(pr);
        if (r != 0)
                return r < 0 ? -EIO : -ENODATA;
        const char *v = NULL;
        if (blkid_probe_lookup_value(pr, key, &v, NULL) != 0 || !v)
                return -ENODATA;
        char *s = strdup(v);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static const char *fs_name(enum spec_fs_type t) {
        switch (t) {
        case SPEC_FS_XFS: return "xfs";
        case SPEC_FS_EXT4: return "ext4";
        case SPEC_FS_SWAP: return "swap";
        case SPEC_FS_VFAT: return "vfat";
        default: return "auto";
        }
}

static const struct spec_filesystem *step_fs(const struct plan_step *s) {
        return s->obj;
}

int configure_fstab(const struct plan *p, struct strbuf *out) {
        int r = strbuf_adds(out, "# written by kiln\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                const struct spec_filesystem *fs = step_fs(s);
                bool swap = s->kind == PLAN_MKFS && fs && fs->type == SPEC_FS_SWAP;
                if (!(s->kind == PLAN_MOUNT && fs) && !swap)
                        continue;
                _cleanup_free_ char *uuid = NULL;
                r = configure_probe_value(s->device, "UUID", &uuid);
                if (r < 0)
                        return r;
                if (swap)
                        r = strbuf_addf(out, "UUID=%s none swap sw 0 0\n", uuid);
                else {
                        unsigned pass = fs->type == SPEC_FS_XFS ? 0 : streq(fs->mount, "/") ? 1 : 2;
                        r = strbuf_addf(out, "UUID=%s %s %s %s 0 %u\n", uuid, fs->mount,
                                        fs_name(fs->type),
                                        fs->mount_options ? fs->mount_options : "defaults", pass);
                }
        }
        return r;
}

int configure_crypttab(const struct plan *p, struct strbuf *out) {
        int r = strbuf_adds(out, "# written by kiln\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                if (s->kind != PLAN_LUKS_FORMAT || !s->obj)
                        continue;
                const struct spec_luks *l = s->obj;
                _cleanup_free_ char *uuid = NULL;
                r = configure_probe_value(s->device, "UUID", &uuid);
                if (r < 0)
                        return r;
                /* performance flags are persistent in the LUKS2 header; a Tang-bound volume
                 * is opened in the initramfs (clevis-initramfs answers cryptroot's prompt),
                 * and cryptroot opens volumes other than root's only with 'initramfs' */
                r = strbuf_addf(out, "%s UUID=%s none luks%s%s\n", l->name ? l->name : l->id, uuid,
                                l->unlock.n_tang ? ",initramfs" : "", l->discard ? ",discard" : "");
        }
        return r;
}

int configure_mdadm_conf(const struct plan *p, struct strbuf *out, struct strbuf *err) {
        int r = strbuf_adds(out, "# written by kiln\nHOMEHOST <system>\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                if (s->kind != PLAN_MD_CREATE)
                        continue;
                r = md_detail_brief(s->device, out, err);
        }
        return r;
}

static int write_file(const char *rel, const char *content) {
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof path, "%s%s", kiln_paths.target, rel) >= sizeof path)
                return -ENAMETOOLONG;
        return write_file_atomic(path, content, strlen(content));
}

int configure_target(const struct plan *p, const char *hostname, struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf fstab = STRBUF_INIT, crypttab = STRBUF_INIT, mdconf = STRBUF_INIT;
        bool has_luks = false, has_md = false;
        for (size_t i = 0; i < p->n_steps; i++) {
                has_luks |= p->steps[i].kind == PLAN_LUKS_FORMAT;
                has_md |= p->steps[i].kind == PLAN_MD_CREATE;
        }
        int r = configure_fstab(p, &fstab);
        if (r < 0)
                return strbuf_adds(err, "/etc/fstab"), r;
        r = write_file("/etc/fstab", strbuf_str(&fstab));
        if (r < 0)
                return strbuf_adds(err, "/etc/fstab"), r;
        if (has_luks) {
                r = configure_crypttab(p, &crypttab);
                if (r == 0)
                        r = write_file("/etc/crypttab", strbuf_str(&crypttab));
                if (r < 0)
                        return strbuf_adds(err, "/etc/crypttab"), r;
        }
        if (has_md) {
                r = configure_mdadm_conf(p, &mdconf, err);
                if (r == 0)
                        r = write_file("/etc/mdadm/mdadm.conf", strbuf_str(&mdconf));
                if (r < 0)
                        return strbuf_adds(err, " /etc/mdadm/mdadm.conf"), r;
        }
        if (!strempty(hostname)) {
                _cleanup_free_ char *line = NULL;
                if (asprintf(&line, "%s\n", hostname) < 0)
                        return -ENOMEM;
                r = write_file("/etc/hostname", line);
                if (r < 0)
                        return strbuf_adds(err, "/etc/hostname"), r;
        }
        return 0;
}
