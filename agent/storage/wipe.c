#include "wipe.h"

#include "log.h"
#include "lvm.h"
#include "md.h"
#include "paths.h"

#include <blkid/blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <libcryptsetup.h>
#include <libgen.h>
#include <limits.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>

#define WIPE_MAX_DEPTH 16
/* BLKRRPART answers EBUSY while anything holds a partition open: udev's
 * blkid probe after the signatures went (each wipe closes a device it wrote,
 * which sends a change event) holds one for a moment. parted and partprobe
 * retry the same way. 40 tries 50 ms apart: 2 s. */
#define WIPE_RRPART_TRIES 40
#define WIPE_RRPART_PAUSE_NS (50 * 1000 * 1000L)

static void blkid_free_probep(blkid_probe *p) { if (*p) blkid_free_probe(*p); }

/* The kernel name (vda, md127, dm-3) of a device path, following symlinks. */
static int dev_kernel_name(const char *devpath, char **ret) {
        _cleanup_free_ char *real = realpath(devpath, NULL);
        if (!real)
                return -errno;
        const char *b = strrchr(real, '/');
        char *n = strdup(b ? b + 1 : real);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

static int sys_block_read(const char *name, const char *attr, char **ret) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/class/block/%s/%s", kiln_paths.sysfs, name, attr);
        return read_one_line(path, ret);
}

/* Names listed in /sys/class/block/NAME/SUB (holders, or the partitions). */
static int sys_block_list(const char *name, const char *sub, bool partitions, char ***ret) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/class/block/%s%s%s", kiln_paths.sysfs, name, sub ? "/" : "", sub ? sub : "");
        _cleanup_closedir_ DIR *d = opendir(path);
        _cleanup_strv_free_ char **v = NULL;
        if (!d) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (partitions) {
                        char p[PATH_MAX + 300];
                        snprintf(p, sizeof p, "%s/%s/partition", path, de->d_name);
                        if (access(p, F_OK) < 0)
                                continue;
                }
                char *s = strdup(de->d_name);
                if (!s)
                        return -ENOMEM;
                int r = strv_push(&v, s);
                if (r < 0) {
                        free(s);
                        return r;
                }
        }
        *ret = TAKE_PTR(v);
        return 0;
}

int wipe_lvm_vg_from_dm_name(const char *dm_name, char **ret) {
        size_t n = strlen(dm_name);
        _cleanup_free_ char *vg = malloc(n + 1);
        if (!vg)
                return -ENOMEM;
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
                if (dm_name[i] != '-') {
                        vg[j++] = dm_name[i];
                        continue;
                }
                if (dm_name[i + 1] == '-') {
                        vg[j++] = '-';
                        i++;
                        continue;
                }
                vg[j] = '\0';
                if (j == 0)
                        return -EINVAL;
                *ret = TAKE_PTR(vg);
                return 0;
        }
        return -EINVAL;
}

static int teardown_holders_of(const char *name, unsigned depth, struct strbuf *err);

static int teardown_one(const char *name, unsigned depth, struct strbuf *err);

/* Every dm device of a VG, with what sits on top of it, then the VG itself. */
static int teardown_vg(const char *vg, unsigned depth, struct strbuf *err) {
        _cleanup_strv_free_ char **all = NULL;
        int r = sys_block_list("", NULL, false, &all);
        if (r < 0)
                return r;
        for (size_t i = 0; all && all[i]; i++) {
                if (strncmp(all[i], "dm-", 3) != 0)
                        continue;
                _cleanup_free_ char *uuid = NULL, *dmname = NULL, *thisvg = NULL;
                if (sys_block_read(all[i], "dm/uuid", &uuid) < 0 || strncmp(uuid, "LVM-", 4) != 0)
                        continue;
                if (sys_block_read(all[i], "dm/name", &dmname) < 0 ||
                    wipe_lvm_vg_from_dm_name(dmname, &thisvg) < 0 || !streq(thisvg, vg))
                        continue;
                r = teardown_holders_of(all[i], depth + 1, err);
                if (r < 0)
                        return r;
        }
        return lvm_vg_deactivate(vg, err);
}

static int teardown_one(const char *name, unsigned depth, struct strbuf *err) {
        int r = teardown_holders_of(name, depth + 1, err);
        if (r < 0)
                return r;

        if (strncmp(name, "dm-", 3) == 0) {
                _cleanup_free_ char *uuid = NULL, *dmname = NULL;
                r = sys_block_read(name, "dm/name", &dmname);
                if (r == -ENOENT)
                        return 0;       /* already gone, e.g. with its VG */
                if (r < 0)
                        return r;
                (void) sys_block_read(name, "dm/uuid", &uuid);
                if (uuid && strncmp(uuid, "LVM-", 4) == 0) {
                        _cleanup_free_ char *vg = NULL;
                        r = wipe_lvm_vg_from_dm_name(dmname, &vg);
                        if (r < 0)
                                return r;
                        if (err)
                                strbuf_addf(err, "VG '%s': ", vg);
                        return teardown_vg(vg, depth, err);
                }
                /* LUKS (CRYPT-…) and any other mapping: remove the dm device. */
                r = crypt_deactivate_by_name(NULL, dmname, 0);
                if (r < 0 && err)
                        strbuf_addf(err, "cannot deactivate '%s'", dmname);
                return r < 0 ? r : 0;
        }
        if (strncmp(name, "md", 2) == 0) {
                char dev[PATH_MAX];
                snprintf(dev, sizeof dev, "%s/%s", kiln_paths.devfs, name);
                return md_stop(dev, err);
        }
        if (err)
                strbuf_addf(err, "held by '%s', which kiln does not know how to stop", name);
        return -EBUSY;
}

/* Holders of NAME and of NAME's partitions, each torn down top layer first. */
static int teardown_holders_of(const char *name, unsigned depth, struct strbuf *err) {
        if (depth > WIPE_MAX_DEPTH)
                return -ELOOP;
        _cleanup_strv_free_ char **parts = NULL;
        int r = sys_block_list(name, NULL, true, &parts);
        if (r < 0)
                return r;
        for (size_t i = 0; parts && parts[i]; i++) {
                r = teardown_holders_of(parts[i], depth + 1, err);
                if (r < 0)
                        return r;
        }
        _cleanup_strv_free_ char **holders = NULL;
        r = sys_block_list(name, "holders", false, &holders);
        if (r < 0)
                return r;
        for (size_t i = 0; holders && holders[i]; i++) {
                r = teardown_one(holders[i], depth, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int wipe_teardown(const char *devpath, struct strbuf *err) {
        _cleanup_free_ char *name = NULL;
        int r = dev_kernel_name(devpath, &name);
        if (r < 0)
                return r;
        return teardown_holders_of(name, 0, err);
}

int wipe_signatures(const char *devpath, unsigned *ret_removed) {
        _cleanup_close_ int fd = open(devpath, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe();
        if (!pr)
                return -ENOMEM;
        if (blkid_probe_set_device(pr, fd, 0, 0) != 0)
                return -EIO;
        blkid_probe_enable_superblocks(pr, 1);
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC | BLKID_SUBLKS_TYPE | BLKID_SUBLKS_BADCSUM);
        blkid_probe_enable_partitions(pr, 1);
        blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC | BLKID_PARTS_FORCE_GPT);

        unsigned n = 0;
        for (;;) {
                int r = blkid_do_probe(pr);
                if (r == 1)
                        break;
                if (r < 0)
                        return -EIO;
                if (blkid_do_wipe(pr, 0) != 0)
                        return errno > 0 ? -errno : -EIO;
                if (++n > 64)
                        return -ELOOP;   /* a signature that does not go away */
        }
        if (fsync(fd) < 0)
                return -errno;
        if (ret_removed)
                *ret_removed = n;
        return 0;
}

/* Pushes NAME unless it is in V already. */
static int push_unique(char ***v, const char *name) {
        return strv_contains(*v, name) ? 0 : strv_pushdup(v, name);
}

int wipe_list_holders(const char *devpath, char ***ret) {
        _cleanup_free_ char *name = NULL;
        int r = dev_kernel_name(devpath, &name);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **parts = NULL, **out = NULL;
        r = sys_block_list(name, NULL, true, &parts);
        if (r < 0)
                return r;
        /* the partitions' holders first, then the disk's (the inventory's order) */
        size_t n = strv_length(parts);
        for (size_t i = 0; i <= n; i++) {
                _cleanup_strv_free_ char **h = NULL;
                r = sys_block_list(i < n ? parts[i] : name, "holders", false, &h);
                if (r < 0)
                        return r;
                for (size_t k = 0; h && h[k]; k++)
                        if ((r = push_unique(&out, h[k])) < 0)
                                return r;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int wipe_stop_holder(const char *holder, struct strbuf *err) {
        const char *name = strrchr(holder, '/');
        name = name ? name + 1 : holder;
        if (!*name)
                return -EINVAL;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/class/block/%s", kiln_paths.sysfs, name);
        if (access(path, F_OK) < 0)
                return errno == ENOENT ? 0 : -errno;    /* gone already, e.g. stopped with another disk */
        return teardown_one(name, 1, err);
}

int wipe_erase(const char *devpath, struct strbuf *err, unsigned *ret_removed) {
        _cleanup_strv_free_ char **held = NULL;
        int r = wipe_list_holders(devpath, &held);
        if (r < 0)
                return r;
        if (held) {
                if (err)
                        strbuf_addf(err, "still held by '%s'", held[0]);
                return -EBUSY;
        }
        _cleanup_free_ char *name = NULL;
        r = dev_kernel_name(devpath, &name);
        if (r < 0)
                return r;
        unsigned total = 0, k;
        _cleanup_strv_free_ char **parts = NULL;
        r = sys_block_list(name, NULL, true, &parts);
        if (r < 0)
                return r;
        for (size_t i = 0; parts && parts[i]; i++) {
                char p[PATH_MAX];
                snprintf(p, sizeof p, "%s/%s", kiln_paths.devfs, parts[i]);
                r = wipe_signatures(p, &k);
                if (r < 0) {
                        if (err)
                                strbuf_addf(err, "partition %s", p);
                        return r;
                }
                total += k;
        }
        r = wipe_signatures(devpath, &k);
        if (r < 0)
                return r;
        total += k;

        /* Make the kernel drop the old partitions. */
        _cleanup_close_ int fd = open(devpath, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (unsigned t = 1;; t++) {
                if (ioctl(fd, BLKRRPART, 0) == 0 || errno == EINVAL) {
                        if (t > 1)
                                log_info("%s: the kernel dropped the old partitions after %u tries (one was open)", devpath, t);
                        break;
                }
                if (errno != EBUSY || t == WIPE_RRPART_TRIES) {
                        r = -errno;
                        if (err && r == -EBUSY)
                                strbuf_addf(err, "the kernel keeps %s's old partitions: one is still open after %u tries in %.1f s",
                                            devpath, t, t * WIPE_RRPART_PAUSE_NS / 1e9);
                        return r;
                }
                nanosleep(&(struct timespec){ .tv_nsec = WIPE_RRPART_PAUSE_NS }, NULL);
        }
        if (ret_removed)
                *ret_removed = total;
        return 0;
}

int wipe_disk(const char *devpath, struct strbuf *err, unsigned *ret_removed) {
        int r = wipe_teardown(devpath, err);
        if (r < 0)
                return r;
        return wipe_erase(devpath, err, ret_removed);
}
