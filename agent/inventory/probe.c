/* Probing this machine: sysfs attributes, /proc, /dev/disk/by-id links and
 * libblkid's low-level probe (read-only open). The same code reads a
 * recorded tree (--sysroot DIR). The model it fills is inventory.h's; this
 * is the part of the inventory stage that touches the machine, so it
 * links libblkid and lives outside the pure library. */
#include "inventory.h"
#include "paths.h"
#include "probe.h"
#include "procfs.h"
#include "sigprobe.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <unistd.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>

/* ---------- probing helpers ---------- */

struct probe_ctx {
        const char *sysfs, *devfs, *procfs;
        const char *devname_prefix;     /* what paths in the result start with: /dev */
        bool live;
        const char *include_loop;       /* KILN_INVENTORY_INCLUDE_LOOP, see loop_included() */
        struct procfs_mount *mounts;
        size_t n_mounts;
        struct strbuf *err;             /* the subject of the first failure, for the caller's message */
};

static void probe_ctx_done(struct probe_ctx *c) {
        procfs_mounts_free(c->mounts, c->n_mounts);
}

static void set_err(struct probe_ctx *c, const char *subject) {
        if (c->err && !c->err->len)
                (void) strbuf_adds(c->err, subject);
}

/* Read an attribute; a missing one (or one the kernel refuses to show,
 * such as product_serial to non-root) is NULL, not an error. Empty text is NULL. */
static int read_attr(const char *dir, const char *name, char **ret) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        char *v = NULL;
        int r = read_one_line(p, &v);
        if (r == -ENOENT || r == -ENODEV || r == -EACCES || r == -EPERM || r == -ENXIO || r == -EINVAL || r == -EIO) {
                *ret = NULL;
                return 0;
        }
        if (r < 0)
                return r;
        /* sysfs pads model/vendor with spaces at both ends */
        size_t lead = strspn(v, " \t");
        if (lead)
                memmove(v, v + lead, strlen(v + lead) + 1);
        if (!*v) {
                free(v);
                v = NULL;
        }
        *ret = v;
        return 0;
}

static int read_attr_u64(const char *dir, const char *name, uint64_t *ret, bool *found) {
        _cleanup_free_ char *v = NULL;
        int r = read_attr(dir, name, &v);
        if (r < 0)
                return r;
        if (!v) {
                *found = false;
                return 0;
        }
        r = safe_atou64(v, ret);
        if (r < 0)
                return r;
        *found = true;
        return 0;
}

static int read_attr_bool(const char *dir, const char *name, bool *ret) {
        uint64_t v = 0;
        bool found = false;
        int r = read_attr_u64(dir, name, &v, &found);
        if (r < 0)
                return r;
        *ret = found && v != 0;
        return 0;
}

static int load_mounts(struct probe_ctx *c) {
        _cleanup_free_ char *p = NULL, *buf = NULL;
        if (asprintf(&p, "%s/self/mountinfo", c->procfs) < 0)
                return -ENOMEM;
        int r = read_full_file(p, 16u * 1024 * 1024, &buf, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                set_err(c, p);
                return r;
        }
        return procfs_parse_mountinfo(buf, &c->mounts, &c->n_mounts);
}

/* The first mount of the device whose sysfs directory is dir. */
static int find_mountpoint(struct probe_ctx *c, const char *dir, char **ret) {
        _cleanup_free_ char *dev = NULL;
        int r = read_attr(dir, "dev", &dev);
        if (r < 0)
                return r;
        *ret = NULL;
        unsigned ma, mi;
        if (!dev || procfs_parse_devnum(dev, &ma, &mi) < 0)
                return 0;
        for (size_t i = 0; i < c->n_mounts; i++)
                if (c->mounts[i].major == ma && c->mounts[i].minor == mi) {
                        *ret = strdup(c->mounts[i].where);
                        return *ret ? 0 : -ENOMEM;
                }
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Names in a directory, sorted; a missing directory is an empty list (NULL). */
static int list_dir(const char *path, bool (*want)(const struct dirent *de, void *u), void *u, char ***ret) {
        DIR *d = opendir(path);
        if (!d) {
                if (errno == ENOENT || errno == ENOTDIR) {
                        *ret = NULL;
                        return 0;
                }
                return -errno;
        }
        _cleanup_strv_free_ char **v = NULL;
        size_t n = 0;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (want && !want(de, u))
                        continue;
                if (++n > 65536) {
                        r = -E2BIG;
                        break;
                }
                char *s = strdup(de->d_name);
                if (!s || strv_push(&v, s) < 0) {
                        free(s);
                        r = -ENOMEM;
                        break;
                }
        }
        closedir(d);
        if (r < 0)
                return r;
        if (v)
                qsort(v, strv_length(v), sizeof(char *), cmp_str);
        *ret = TAKE_PTR(v);
        return 0;
}

/* list_dir for the probe: at most max names (else -E2BIG); a failure names
 * the directory in c's error subject. *ret_n is the count. */
static int probe_list(struct probe_ctx *c, const char *path, bool (*want)(const struct dirent *de, void *u), void *u,
                      size_t max, char ***ret, size_t *ret_n) {
        _cleanup_strv_free_ char **v = NULL;
        int r = list_dir(path, want, u, &v);
        size_t n = strv_length(v);
        if (r >= 0 && n > max)
                r = -E2BIG;
        if (r < 0) {
                set_err(c, path);
                return r;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

/* probe_list of the directory ROOT/SUB (a sysfs or devfs one), whose path
 * *ret_dir gets for reading the entries. */
static int probe_list_sub(struct probe_ctx *c, const char *root, const char *sub, size_t max, char **ret_dir,
                          char ***ret, size_t *ret_n) {
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s/%s", root, sub) < 0)
                return -ENOMEM;
        int r = probe_list(c, dir, NULL, NULL, max, ret, ret_n);
        if (r < 0)
                return r;
        *ret_dir = TAKE_PTR(dir);
        return 0;
}

static int read_holders(const char *dir, char ***ret) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/holders", dir) < 0)
                return -ENOMEM;
        return list_dir(p, NULL, NULL, ret);
}

/* The link text of /sys/block/NAME (or its device link), which names the bus path. */
static char *sysfs_link(const char *path) {
        char buf[4096];
        ssize_t k = readlink(path, buf, sizeof buf - 1);
        if (k < 0)
                return NULL;
        buf[k] = 0;
        return strdup(buf);
}

/* What the bus path shows first, in this order: "/host" only with "/target". */
static const struct {
        const char *needle, *also;
        const char *transport;
} transports[] = {
        { "/nvme", NULL, "nvme" },
        { "/usb", NULL, "usb" },
        { "/ata", NULL, "sata" },
        { "/end_device-", NULL, "sas" },
        { "/sas_", NULL, "sas" },
        { "/host", "/target", "scsi" },
        { "/virtio", NULL, "virtio" },
        { "/mmc", NULL, "mmc" },
        { "/virtual/", NULL, "virtual" },
};

static const char *transport_from_path(const char *p) {
        for (size_t i = 0; p && i < ELEMENTSOF(transports); i++)
                if (strstr(p, transports[i].needle) && (!transports[i].also || strstr(p, transports[i].also)))
                        return transports[i].transport;
        return "unknown";
}

/* A USB disk's serial is its USB device's (the iSerial string), in the sysfs
 * directory above the SCSI device that has idVendor; *ret NULL if none. */
static int usb_serial(const char *devdir, char **ret) {
        _cleanup_free_ char *p = realpath(devdir, NULL);
        *ret = NULL;
        for (char *slash; p && (slash = strrchr(p, '/')) && slash != p; *slash = 0) {
                _cleanup_free_ char *id = NULL;
                if (asprintf(&id, "%s/idVendor", p) < 0)
                        return -ENOMEM;
                if (access(id, F_OK) == 0)
                        return read_attr(p, "serial", ret);
        }
        return 0;
}

/* SCSI unit serial number page (0x80): 4 byte header, then ASCII. */
static int serial_from_vpd80(const char *devdir, char **ret) {
        _cleanup_free_ char *p = NULL, *buf = NULL;
        size_t len = 0;
        *ret = NULL;
        if (asprintf(&p, "%s/vpd_pg80", devdir) < 0)
                return -ENOMEM;
        int r = read_full_file(p, 4096, &buf, &len);
        if (r < 0)
                return 0;
        if (len < 4 || (unsigned char) buf[1] != 0x80)
                return 0;
        size_t n = ((size_t) (unsigned char) buf[2] << 8) | (unsigned char) buf[3];
        if (n > len - 4)
                n = len - 4;
        const char *s = buf + 4;
        while (n > 0 && (*s == ' ' || *s == 0)) {
                s++;
                n--;
        }
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == 0))
                n--;
        if (n == 0)
                return 0;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] > 0x7e)
                        return 0;
        *ret = strndup(s, n);
        return *ret ? 0 : -ENOMEM;
}

/* naa.5000c500a1b2c3d4 → 0x5000c500a1b2c3d4 (the form udev and lsblk show) */
static int normalize_wwn(char **w) {
        if (*w && strncmp(*w, "naa.", 4) == 0) {
                char *n = NULL;
                if (asprintf(&n, "0x%s", *w + 4) < 0)
                        return -ENOMEM;
                free(*w);
                *w = n;
        }
        return 0;
}

static int dev_paths(struct probe_ctx *c, const char *name, char **ret_open, char **ret_shown) {
        /* cciss!c0d0 is /dev/cciss/c0d0 */
        _cleanup_free_ char *n = strdup(name);
        if (!n)
                return -ENOMEM;
        for (char *q = n; *q; q++)
                if (*q == '!')
                        *q = '/';
        _cleanup_free_ char *o = NULL, *s = NULL;
        if (asprintf(&o, "%s/%s", c->devfs, n) < 0 || asprintf(&s, "%s/%s", c->devname_prefix, n) < 0)
                return -ENOMEM;
        *ret_open = TAKE_PTR(o);
        *ret_shown = TAKE_PTR(s);
        return 0;
}

/* A device node that is not there (a recorded tree without images) has no
 * signatures; one that cannot be read marks the disk unreadable. */
static int probe_sigs_at(struct probe_ctx *c, const char *devpath, struct inv_signature **ret, size_t *ret_n,
                         bool *unreadable) {
        int r = sigprobe_device(devpath, ret, ret_n);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = NULL;
                *ret_n = 0;
                if (r != -ENOENT && r != -ENOMEDIUM && r != -ENXIO)
                        *unreadable = true;
        }
        return 0;
}

static bool want_part(const struct dirent *de, void *u) {
        const char *dir = u;
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s/partition", dir, de->d_name) < 0)
                return false;
        return access(p, F_OK) == 0;
}

static int cmp_part(const void *a, const void *b) {
        const struct inv_partition *x = a, *y = b;
        if (x->number != y->number)
                return x->number < y->number ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* A partition attribute that is missing or out of range. The kernel always
 * shows them, so on a live system the partition changed as it was read, its
 * disk's table being re-read (-ENODEV: the caller drops it and marks the disk
 * unreadable); in a recorded tree, the tree is broken (-EINVAL). */
static int partition_attr_bad(struct probe_ctx *c, const char *dir, int r) {
        if (r >= 0 && c->live)
                return -ENODEV;
        set_err(c, dir);
        return r < 0 ? r : -EINVAL;
}

static int probe_partition(struct probe_ctx *c, const char *diskdir, const char *name, struct inv_partition *p,
                           bool *unreadable) {
        _cleanup_free_ char *dir = NULL, *open_path = NULL;
        if (asprintf(&dir, "%s/%s", diskdir, name) < 0)
                return -ENOMEM;
        p->name = strdup(name);
        if (!p->name)
                return -ENOMEM;
        int r = dev_paths(c, name, &open_path, &p->path);
        if (r < 0)
                return r;
        uint64_t v;
        bool found;
        r = read_attr_u64(dir, "partition", &v, &found);
        if (r < 0 || !found || v > UINT32_MAX)
                return partition_attr_bad(c, dir, r);
        p->number = (unsigned) v;
        r = read_attr_u64(dir, "start", &v, &found);
        if (r < 0 || !found || v > UINT64_MAX / 512)
                return partition_attr_bad(c, dir, r);
        p->start = v * 512;
        r = read_attr_u64(dir, "size", &v, &found);
        if (r < 0 || !found || v > UINT64_MAX / 512)
                return partition_attr_bad(c, dir, r);
        p->size = v * 512;
        r = read_holders(dir, &p->holders);
        if (r < 0)
                return r;
        r = find_mountpoint(c, dir, &p->mountpoint);
        if (r < 0)
                return r;
        return probe_sigs_at(c, open_path, &p->sigs, &p->n_sigs, unreadable);
}

/* KILN_INVENTORY_INCLUDE_LOOP: unset, no loop device is a disk; "1", every
 * one is; otherwise a list of loop devices ("/dev/loop3 /dev/loop7", blanks,
 * ',' or ':' between; a path or a bare name) names the only ones that are,
 * so that tests in two checkouts on one machine never probe, or plan over,
 * each other's loop devices. */
static bool loop_included(const char *setting, const char *name) {
        static const char sep[] = " \t\n,:";
        if (!setting)
                return false;
        if (streq(setting, "1"))
                return true;
        size_t name_len = strlen(name);
        for (const char *p = setting + strspn(setting, sep); *p; p += strspn(p, sep)) {
                size_t n = strcspn(p, sep);
                const char *base = memrchr(p, '/', n);
                base = base ? base + 1 : p;
                if ((size_t) (p + n - base) == name_len && strncmp(base, name, name_len) == 0)
                        return true;
                p += n;
        }
        return false;
}

static bool is_candidate_name(const char *n, const char *include_loop) {
        static const char *skip[] = { "ram", "zram", "dm-", "md", "sr", "fd", "nbd", "zd", "mtdblock" };
        if (strncmp(n, "loop", 4) == 0)
                return loop_included(include_loop, n);
        for (size_t i = 0; i < ELEMENTSOF(skip); i++)
                if (strncmp(n, skip[i], strlen(skip[i])) == 0)
                        return false;
        return true;
}

static int probe_by_id(struct probe_ctx *c, struct inventory *inv) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_strv_free_ char **names = NULL;
        size_t n;
        int r = probe_list_sub(c, c->devfs, "disk/by-id", SIZE_MAX, &dir, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; names && names[i]; i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", dir, names[i]) < 0)
                        return -ENOMEM;
                _cleanup_free_ char *target = sysfs_link(p);
                if (!target)
                        continue;
                const char *base = strrchr(target, '/');
                base = base ? base + 1 : target;
                for (size_t d = 0; d < inv->n_disks; d++)
                        if (streq(inv->disks[d].name, base)) {
                                char *s = strdup(names[i]);
                                if (!s || strv_push(&inv->disks[d].by_id, s) < 0) {
                                        free(s);
                                        return -ENOMEM;
                                }
                        }
        }
        return 0;
}

/* A live disk can change while it is probed (a loop device detached or
 * emptied, its partition table re-read by another program). Read its size
 * and partitions again: gone or empty now, it is left out (*ret_skip); else
 * changed, its listing is not one state of the disk, so it is unreadable, which
 * plan_build refuses to select. The inventory fails on neither. */
static int probe_disk_recheck(struct probe_ctx *c, const char *dir, struct inv_disk *d, char **parts, bool *ret_skip) {
        uint64_t v;
        bool found;
        int r = read_attr_u64(dir, "size", &v, &found);
        if (r < 0)
                return r;
        if (!found || v == 0) {
                *ret_skip = true;
                return 0;
        }
        _cleanup_strv_free_ char **now = NULL;
        r = list_dir(dir, want_part, (void *) dir, &now);
        if (r < 0)
                return r;
        if (v * 512 != d->size || strv_length(now) != strv_length(parts))
                d->unreadable = true;
        for (size_t i = 0; !d->unreadable && now && now[i]; i++)
                if (!streq(now[i], parts[i]))
                        d->unreadable = true;
        return 0;
}

static int probe_disk(struct probe_ctx *c, const char *blockdir, const char *name, struct inv_disk *d, bool *ret_skip) {
        _cleanup_free_ char *dir = NULL, *open_path = NULL, *link = NULL, *devdir = NULL;
        if (asprintf(&dir, "%s/%s", blockdir, name) < 0 || asprintf(&devdir, "%s/%s/device", blockdir, name) < 0)
                return -ENOMEM;
        uint64_t v;
        bool found;
        int r = read_attr_u64(dir, "size", &v, &found);
        if (r < 0 || v > UINT64_MAX / 512) {
                set_err(c, dir);
                return r < 0 ? r : -EINVAL;
        }
        if (!found || v == 0) {  /* empty loop, card reader without a card */
                *ret_skip = true;
                return 0;
        }
        *ret_skip = false;
        d->size = v * 512;
        d->name = strdup(name);
        if (!d->name)
                return -ENOMEM;
        r = dev_paths(c, name, &open_path, &d->path);
        if (r < 0)
                return r;

        d->logical_sector = d->physical_sector = 512;
        r = read_attr_u64(dir, "queue/logical_block_size", &v, &found);
        if (r < 0)
                return r;
        if (found && v > 0 && v <= UINT32_MAX)
                d->logical_sector = (unsigned) v;
        r = read_attr_u64(dir, "queue/physical_block_size", &v, &found);
        if (r < 0)
                return r;
        if (found && v > 0 && v <= UINT32_MAX)
                d->physical_sector = (unsigned) v;
        if ((r = read_attr_bool(dir, "queue/rotational", &d->rotational)) < 0 ||
            (r = read_attr_bool(dir, "removable", &d->removable)) < 0 ||
            (r = read_attr_bool(dir, "ro", &d->readonly)) < 0)
                return r;

        link = sysfs_link(dir);
        if (!link || !strstr(link, "/devices/")) {
                free(link);
                link = sysfs_link(devdir);
        }
        d->transport = strdup(transport_from_path(link));
        if (!d->transport)
                return -ENOMEM;

        if ((r = read_attr(devdir, "model", &d->model)) < 0)
                return r;
        if (!streq(d->transport, "virtio") && !streq(d->transport, "nvme"))
                if ((r = read_attr(devdir, "vendor", &d->vendor)) < 0)
                        return r;
        if ((r = read_attr(dir, "serial", &d->serial)) < 0)
                return r;
        if (!d->serial && (r = read_attr(devdir, "serial", &d->serial)) < 0)
                return r;
        if (!d->serial && streq(d->transport, "usb") && (r = usb_serial(devdir, &d->serial)) < 0)
                return r;
        if (!d->serial && (r = serial_from_vpd80(devdir, &d->serial)) < 0)
                return r;
        if ((r = read_attr(dir, "wwid", &d->wwn)) < 0)
                return r;
        if (!d->wwn && (r = read_attr(devdir, "wwid", &d->wwn)) < 0)
                return r;
        if ((r = normalize_wwn(&d->wwn)) < 0)
                return r;

        if ((r = read_holders(dir, &d->holders)) < 0)
                return r;
        if ((r = find_mountpoint(c, dir, &d->mountpoint)) < 0)
                return r;

        _cleanup_strv_free_ char **parts = NULL;
        size_t np;
        if ((r = probe_list(c, dir, want_part, dir, INVENTORY_MAX_PARTS, &parts, &np)) < 0)
                return r;
        if (np > 0) {
                d->parts = calloc(np, sizeof *d->parts);
                if (!d->parts)
                        return -ENOMEM;
                for (size_t i = 0; i < np; i++) {
                        struct inv_partition *p = &d->parts[d->n_parts++];
                        r = probe_partition(c, dir, parts[i], p, &d->unreadable);
                        if (r == -ENODEV) {
                                inv_partition_done(p);
                                *p = (struct inv_partition) {};
                                d->n_parts--;
                                d->unreadable = true;
                                continue;
                        }
                        if (r < 0)
                                return r;
                }
                qsort(d->parts, d->n_parts, sizeof *d->parts, cmp_part);
        }
        r = probe_sigs_at(c, open_path, &d->sigs, &d->n_sigs, &d->unreadable);
        if (r < 0 || !c->live)
                return r;
        return probe_disk_recheck(c, dir, d, parts, ret_skip);
}

/* ---------- by-id names without udev ---------- */

/* udev's ID_SERIAL text: leading and trailing whitespace dropped, each run
 * of whitespace one '_', and any byte but [A-Za-z0-9#+-.:=@_] a '_'
 * (udev_replace_whitespace, then udev_replace_chars; ASCII only). */
static char *udev_text(const char *s, size_t n) {
        while (n && isspace((unsigned char) *s))
                s++, n--;
        while (n && (isspace((unsigned char) s[n - 1]) || !s[n - 1]))
                n--;
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) s[i];
                if (isspace(ch)) {
                        while (i + 1 < n && isspace((unsigned char) s[i + 1]))
                                i++;
                        *o++ = '_';
                } else
                        *o++ = isalnum(ch) || strchr("#+-.:=@_", ch) ? (char) ch : '_';
        }
        *o = 0;
        return out;
}

static int add_by_id(struct inv_disk *d, const char *fmt, ...) _printf_(2, 3);
static int add_by_id(struct inv_disk *d, const char *fmt, ...) {
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        if (strv_push(&d->by_id, s) < 0) {
                free(s);
                return -ENOMEM;
        }
        return 0;
}

/* An ATA string of IDENTIFY DEVICE (words FIRST..FIRST+N/2-1, each word's
 * two bytes swapped) as udev's ata_id makes it. */
static char *ata_string(const unsigned char *id, size_t first, size_t n) {
        char buf[64];
        for (size_t i = 0; i < n && i + 1 < sizeof buf; i += 2) {
                buf[i] = (char) id[2 * first + i + 1];
                buf[i + 1] = (char) id[2 * first + i];
        }
        return udev_text(buf, n);
}

/* ata-MODEL_SERIAL and wwn-0x... from the IDENTIFY data libata exposes as
 * VPD page 0x89 (bytes 60-571): sysfs' own model is SCSI's 16 characters,
 * the ATA model 40. */
static int ata_by_id(const char *devdir, struct inv_disk *d) {
        _cleanup_free_ char *p = NULL, *buf = NULL;
        size_t len = 0;
        if (asprintf(&p, "%s/vpd_pg89", devdir) < 0)
                return -ENOMEM;
        if (read_full_file(p, 4096, &buf, &len) < 0 || len < 60 + 512 || (unsigned char) buf[1] != 0x89)
                return 0;
        const unsigned char *id = (const unsigned char *) buf + 60;
        _cleanup_free_ char *model = ata_string(id, 27, 40), *serial = ata_string(id, 10, 20);
        if (!model || !serial)
                return -ENOMEM;
        int r = 0;
        if (*model && *serial)
                r = add_by_id(d, "ata-%s_%s", model, serial);
        /* words 108-111: the WWN, valid when word 87 says so (bits 15:14 = 01, bit 8) */
        unsigned w87 = id[174] | (unsigned) id[175] << 8;
        if (r >= 0 && (w87 & 0xc100) == 0x4100) {
                uint64_t wwn = 0;
                for (size_t w = 108; w <= 111; w++)
                        wwn = wwn << 16 | id[2 * w] | (uint64_t) id[2 * w + 1] << 8;
                if (wwn)
                        r = add_by_id(d, "wwn-0x%016" PRIx64, wwn);
        }
        return r;
}

/* usb-VENDOR_MODEL_SERIAL-TARGET:LUN, as udev's usb_id makes it for a USB
 * mass-storage disk: the SCSI vendor and model, the USB serial, the SCSI
 * device's target and LUN. */
static int usb_by_id(const char *devdir, struct inv_disk *d) {
        _cleanup_free_ char *p = realpath(devdir, NULL);
        const char *base = p ? strrchr(p, '/') : NULL;
        unsigned host, bus, target, lun;
        if (!base || sscanf(base + 1, "%u:%u:%u:%u", &host, &bus, &target, &lun) != 4)
                return 0;
        _cleanup_free_ char *vendor = udev_text(d->vendor, strlen(d->vendor)),
                            *model = udev_text(d->model, strlen(d->model)),
                            *serial = udev_text(d->serial, strlen(d->serial));
        if (!vendor || !model || !serial)
                return -ENOMEM;
        return add_by_id(d, "usb-%s_%s_%s-%u:%u", vendor, model, serial, target, lun);
}

/* The by-id names udev's 60-persistent-storage.rules gives the disks,
 * made from sysfs where no udev made /dev/disk/by-id (the kiln netboot
 * initramfs): virtio-SERIAL; nvme-WWID, nvme-MODEL_SERIAL and
 * nvme-MODEL_SERIAL_NSID; the ata- and wwn- names of ata_by_id; a USB
 * disk's usb- name (usb_by_id). SCSI's (scsi_id's VPD 0x83 designators)
 * are not made: such a disk has no by-id name here. Checked against the installed system's own
 * udev in tests/rig/test-hw-matrix.sh. */
static int synth_by_id(const char *blockdir, struct inv_disk *d) {
        _cleanup_free_ char *dir = NULL, *devdir = NULL;
        int r = 0;
        if (asprintf(&dir, "%s/%s", blockdir, d->name) < 0 || asprintf(&devdir, "%s/device", dir) < 0)
                return -ENOMEM;
        if (d->transport && streq(d->transport, "virtio") && d->serial) {
                _cleanup_free_ char *s = udev_text(d->serial, strlen(d->serial));
                return s ? add_by_id(d, "virtio-%s", s) : -ENOMEM;
        }
        if (d->transport && streq(d->transport, "nvme")) {
                _cleanup_free_ char *wwid = NULL, *nsid = NULL, *model = NULL, *serial = NULL;
                if ((r = read_attr(dir, "wwid", &wwid)) < 0 || (r = read_attr(dir, "nsid", &nsid)) < 0)
                        return r;
                if (wwid && (r = add_by_id(d, "nvme-%s", wwid)) < 0)
                        return r;
                if (!d->model || !d->serial)
                        return 0;
                model = udev_text(d->model, strlen(d->model));
                serial = udev_text(d->serial, strlen(d->serial));
                if (!model || !serial)
                        return -ENOMEM;
                if ((r = add_by_id(d, "nvme-%s_%s", model, serial)) < 0)
                        return r;
                return nsid ? add_by_id(d, "nvme-%s_%s_%s", model, serial, nsid) : 0;
        }
        if (d->vendor && streq(d->vendor, "ATA"))
                return ata_by_id(devdir, d);
        if (d->transport && streq(d->transport, "usb") && d->vendor && d->model && d->serial)
                return usb_by_id(devdir, d);
        return 0;
}

static int cmp_disk(const void *a, const void *b) {
        const struct inv_disk *x = a, *y = b;
        /* natural order: sda sdb ... sdz sdaa */
        size_t lx = strlen(x->name), ly = strlen(y->name);
        if (strncmp(x->name, y->name, 2) == 0 && lx != ly)
                return lx < ly ? -1 : 1;
        return strcmp(x->name, y->name);
}

static int probe_disks(struct probe_ctx *c, struct inventory *inv) {
        _cleanup_free_ char *blockdir = NULL;
        _cleanup_strv_free_ char **names = NULL;
        size_t n;
        int r = probe_list_sub(c, c->sysfs, "block", INVENTORY_MAX_DISKS, &blockdir, &names, &n);
        if (r < 0 || n == 0)
                return r;
        inv->disks = calloc(n, sizeof *inv->disks);
        if (!inv->disks)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (!is_candidate_name(names[i], c->include_loop))
                        continue;
                bool skip = false;
                struct inv_disk *d = &inv->disks[inv->n_disks++];
                r = probe_disk(c, blockdir, names[i], d, &skip);
                if (r < 0)
                        return r;
                if (skip) {
                        inv_disk_done(d);
                        memset(d, 0, sizeof *d);
                        inv->n_disks--;
                }
        }
        qsort(inv->disks, inv->n_disks, sizeof *inv->disks, cmp_disk);
        _cleanup_free_ char *byid = NULL;
        if (asprintf(&byid, "%s/disk/by-id", c->devfs) < 0)
                return -ENOMEM;
        if (access(byid, F_OK) == 0)
                return probe_by_id(c, inv);
        for (size_t i = 0; i < inv->n_disks; i++)
                if ((r = synth_by_id(blockdir, &inv->disks[i])) < 0)
                        return r;
        return 0;
}

struct nic_sort { struct inv_nic nic; bool physical; };

static int cmp_nic(const void *a, const void *b) {
        const struct nic_sort *x = a, *y = b;
        if (x->physical != y->physical)
                return x->physical ? -1 : 1;
        return strcmp(x->nic.name, y->nic.name);
}

static int probe_nics(struct probe_ctx *c, struct inventory *inv) {
        _cleanup_free_ char *netdir = NULL;
        _cleanup_strv_free_ char **names = NULL;
        size_t n;
        int r = probe_list_sub(c, c->sysfs, "class/net", INVENTORY_MAX_NICS, &netdir, &names, &n);
        if (r < 0 || n == 0)
                return r;
        _cleanup_free_ struct nic_sort *tmp = calloc(n, sizeof *tmp);
        if (!tmp)
                return -ENOMEM;
        struct ifaddrs *ifa = NULL;
        if (c->live && getifaddrs(&ifa) < 0)
                ifa = NULL;
        size_t k = 0;
        r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *dir = NULL, *type = NULL, *link = NULL, *oper = NULL;
                if (asprintf(&dir, "%s/%s", netdir, names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                /* Ethernet only (ARPHRD_ETHER); that also leaves out lo. */
                if ((r = read_attr(dir, "type", &type)) < 0)
                        break;
                if (!type || !streq(type, "1"))
                        continue;
                struct nic_sort *ns = &tmp[k++];
                link = sysfs_link(dir);
                ns->physical = !(link && strstr(link, "/virtual/"));
                if (!(ns->nic.name = strdup(names[i]))) {
                        r = -ENOMEM;
                        break;
                }
                if ((r = read_attr(dir, "address", &ns->nic.mac)) < 0 || (r = read_attr(dir, "operstate", &oper)) < 0)
                        break;
                ns->nic.up = oper && streq(oper, "up");
                for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
                        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || !streq(a->ifa_name, names[i]))
                                continue;
                        char buf[INET_ADDRSTRLEN];
                        const struct sockaddr_in *sin = (const struct sockaddr_in *) (const void *) a->ifa_addr;
                        if (!inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf))
                                continue;
                        char *s = strdup(buf);
                        if (!s || strv_push(&ns->nic.ipv4, s) < 0) {
                                free(s);
                                r = -ENOMEM;
                                break;
                        }
                }
        }
        if (ifa)
                freeifaddrs(ifa);
        if (r >= 0)
                qsort(tmp, k, sizeof *tmp, cmp_nic);
        if (r >= 0 && k > 0) {
                inv->nics = calloc(k, sizeof *inv->nics);
                if (!inv->nics)
                        r = -ENOMEM;
        }
        for (size_t i = 0; i < k; i++) {
                if (r >= 0)
                        inv->nics[inv->n_nics++] = tmp[i].nic;
                else
                        inv_nic_done(&tmp[i].nic);
        }
        return r;
}

/* A /proc file that is not there (a recorded tree without it) leaves the fields empty. */
static int proc_err(struct probe_ctx *c, int r, const char *name) {
        if (r == -ENOENT)
                return 0;
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", c->procfs, name) >= 0)
                set_err(c, p);
        return r;
}

static int probe_cpu(struct probe_ctx *c, struct inventory *inv) {
        struct procfs_cpuinfo ci;
        int r = procfs_read_cpuinfo(c->procfs, &ci);
        if (r < 0)
                return proc_err(c, r, "cpuinfo");
        inv->cpus = ci.cpus;
        inv->cpu_model = ci.model;
        inv->cpu_aes = ci.aes;
        inv->cpu_vaes = ci.vaes;
        inv->cpu_avx2 = ci.avx2;
        return 0;
}

static int probe_memory(struct probe_ctx *c, struct inventory *inv) {
        struct procfs_meminfo m;
        int r = procfs_read_meminfo(c->procfs, &m);
        if (r < 0)
                return proc_err(c, r, "meminfo");
        inv->mem_total = m.total;
        inv->mem_available = m.available;
        return 0;
}

static int probe_host(struct probe_ctx *c, struct inventory *inv) {
        _cleanup_free_ char *dmi = NULL, *kdir = NULL;
        if (asprintf(&dmi, "%s/class/dmi/id", c->sysfs) < 0 || asprintf(&kdir, "%s/sys/kernel", c->procfs) < 0)
                return -ENOMEM;
        int r;
        if ((r = read_attr(dmi, "product_uuid", &inv->machine_uuid)) < 0 ||
            (r = read_attr(dmi, "product_serial", &inv->serial)) < 0 ||
            (r = read_attr(kdir, "hostname", &inv->hostname)) < 0)
                return r;
        if (!inv->hostname && c->live) {
                char buf[256];
                if (gethostname(buf, sizeof buf - 1) >= 0) {
                        buf[sizeof buf - 1] = 0;
                        if (!(inv->hostname = strdup(buf)))
                                return -ENOMEM;
                }
        }
        return 0;
}

int inventory_probe(const char *sysroot, struct inventory **ret, struct strbuf *err) {
        _cleanup_free_ char *sys = NULL, *dev = NULL, *proc = NULL;
        struct probe_ctx c = { .err = err };
        if (err)
                strbuf_reset(err);
        if (sysroot) {
                if (asprintf(&sys, "%s/sys", sysroot) < 0 || asprintf(&dev, "%s/dev", sysroot) < 0 ||
                    asprintf(&proc, "%s/proc", sysroot) < 0)
                        return -ENOMEM;
                c.sysfs = sys;
                c.devfs = dev;
                c.procfs = proc;
                c.devname_prefix = "/dev";
        } else {
                c.sysfs = kiln_paths.sysfs;
                c.devfs = kiln_paths.devfs;
                c.procfs = kiln_paths.procfs;
                c.devname_prefix = kiln_paths.devfs;
                c.live = true;
        }
        c.include_loop = getenv("KILN_INVENTORY_INCLUDE_LOOP");

        _cleanup_inventory_free_ struct inventory *inv = calloc(1, sizeof *inv);
        if (!inv)
                return -ENOMEM;
        int r;
        if ((r = load_mounts(&c)) >= 0 && (r = probe_host(&c, inv)) >= 0 && (r = probe_cpu(&c, inv)) >= 0 &&
            (r = probe_memory(&c, inv)) >= 0 && (r = probe_disks(&c, inv)) >= 0)
                r = probe_nics(&c, inv);
        probe_ctx_done(&c);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(inv);
        return 0;
}

int inventory_load(const char *sysroot_or_json, struct inventory **ret, struct strbuf *err) {
        struct stat st;
        if (err)
                strbuf_reset(err);
        if (stat(sysroot_or_json, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return inventory_probe(sysroot_or_json, ret, err);
        return inventory_load_json(sysroot_or_json, ret, err);
}
