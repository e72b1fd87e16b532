#include "health.h"

#include "configure.h"
#include "exec.h"
#include "json.h"
#include "paths.h"
#include "procfs.h"

#include <blkid/blkid.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

const char *health_kind_name(enum health_kind k) {
        return k == HEALTH_MOUNT ? "mount" : k == HEALTH_SWAP ? "swap" : "volume";
}

static void item_done(struct health_item *it) {
        free(it->what); free(it->source); free(it->device); free(it->timeout);
        free(it->why); free(it->unit); free(it->systemd); free(it->journal);
}

void health_done(struct health *h) {
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                item_done(&h->items[i]);
        free(h->items);
        *h = (struct health) {};
}

/* Whitespace-separated fields of one fstab or crypttab line, split in place. */
static size_t split_fields(char *line, char **f, size_t max) {
        size_t n = 0;
        for (char *p = line; *p && n < max;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                f[n++] = p;
                while (*p && *p != ' ' && *p != '\t')
                        p++;
                if (*p)
                        *p++ = 0;
        }
        return n;
}

/* The value of option name= in a comma list (a copy), or for a bare name
 * "" (a copy); NULL (and *ret NULL) when the list does not hold it. */
static int option(const char *opts, const char *name, char **ret) {
        size_t nl = strlen(name);
        *ret = NULL;
        for (const char *p = opts; p && *p;) {
                size_t l = strcspn(p, ",");
                if (l >= nl && strncmp(p, name, nl) == 0 && (l == nl || p[nl] == '=')) {
                        *ret = l == nl ? strdup("") : strndup(p + nl + 1, l - nl - 1);
                        return *ret ? 1 : -ENOMEM;
                }
                p += l + (p[l] == ',');
        }
        return 0;
}

static bool has_option(const char *opts, const char *name) {
        _cleanup_free_ char *v = NULL;
        return option(opts, name, &v) > 0;
}

static int add_item(struct health *h, enum health_kind kind, const char *what, const char *source,
                    const char *opts, bool required) {
        struct health_item *n = realloc(h->items, (h->n + 1) * sizeof *n);
        if (!n)
                return -ENOMEM;
        h->items = n;
        struct health_item *it = &h->items[h->n];
        *it = (struct health_item) { .kind = kind, .required = required };
        h->n++;
        if (!(it->what = strdup(what)) || !(it->source = strdup(source)))
                return -ENOMEM;
        return option(opts, "x-systemd.device-timeout", &it->timeout) < 0 ? -ENOMEM : 0;
}

static char *under(const char *root, const char *path) {
        return root ? strdupf("%s%s", root, streq(path, "/") ? "" : path) : strdup(path);
}

/* The lines of root/rel (no file: none); each of fields_min or more fields to fn. */
static int read_table(const char *root, const char *rel, size_t fields_min, struct health *h, struct strbuf *err,
                      int (*fn)(struct health *h, char **f, size_t n)) {
        _cleanup_free_ char *path = under(root, rel), *text = NULL;
        if (!path)
                return -ENOMEM;
        int r = read_full_file(path, HEALTH_FILE_MAX, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return strbuf_errorf(err, r, "cannot read '%s'", path);
        unsigned line = 0;
        for (char *l = text, *nl; l && *l; l = nl ? nl + 1 : NULL) {
                if ((nl = strchr(l, '\n')))
                        *nl = 0;
                line++;
                char *f[6];
                size_t n = split_fields(l, f, ELEMENTSOF(f));
                if (n == 0 || f[0][0] == '#')
                        continue;
                if (n < fields_min)
                        return strbuf_errorf(err, -EBADMSG, "%s:%u: %zu field(s), expected at least %zu", path, line, n,
                                             fields_min);
                if ((r = fn(h, f, n)) < 0)
                        return r;
        }
        return 0;
}

static int fstab_line(struct health *h, char **f, size_t n) {
        /* source mountpoint type options [dump [pass]] */
        (void) n;
        if (has_option(f[3], "noauto"))
                return 0;
        bool swap = streq(f[2], "swap");
        return add_item(h, swap ? HEALTH_SWAP : HEALTH_MOUNT, swap ? f[0] : f[1], f[0], f[3], !has_option(f[3], "nofail"));
}

static int crypttab_line(struct health *h, char **f, size_t n) {
        /* name source key [options] */
        const char *opts = n > 3 ? f[3] : "";
        if (has_option(opts, "noauto"))
                return 0;       /* the initramfs opens it; the mount on it is checked */
        return add_item(h, HEALTH_VOLUME, f[0], f[1], opts, !has_option(opts, "nofail"));
}

/* ---- what the kernel says ---- */

static void blkid_put_cachep(blkid_cache *c) { if (*c) blkid_put_cache(*c); }

/* The device that carries source now (UUID=, PARTUUID=, LABEL= or a path), or NULL. */
static int find_device(const char *source, char **ret) {
        *ret = NULL;
        if (source[0] == '/') {
                struct stat st;
                if (stat(source, &st) == 0 && S_ISBLK(st.st_mode) && !(*ret = strdup(source)))
                        return -ENOMEM;
                return 0;
        }
        const char *eq = strchr(source, '=');
        if (!eq)
                return 0;
        _cleanup_free_ char *tag = strndup(source, (size_t) (eq - source));
        _cleanup_(blkid_put_cachep) blkid_cache c = NULL;
        if (!tag)
                return -ENOMEM;
        /* "/dev/null": a cache in memory only, as blkid -c /dev/null */
        if (blkid_get_cache(&c, "/dev/null") < 0)
                return -ENOMEM;
        *ret = blkid_get_devname(c, tag, eq + 1);
        return 0;
}

static int devnum(const char *dev, dev_t *ret) {
        struct stat st;
        if (stat(dev, &st) < 0)
                return -errno;
        if (!S_ISBLK(st.st_mode))
                return -ENOTBLK;
        *ret = st.st_rdev;
        return 0;
}

/* Does the block device at path carry source? By device number against
 * the device libblkid found for it, else (UUID= only) by probing path
 * itself: an md RAID1 member with metadata 1.0 holds the same file system
 * superblock as its array, and the lookup may name either. */
static bool carries(const char *path, const char *found, const char *source) {
        dev_t a = 0, b = 0;
        if (found && devnum(path, &a) == 0 && devnum(found, &b) == 0 && a == b)
                return true;
        if (strncmp(source, "UUID=", 5) != 0)
                return false;
        _cleanup_free_ char *uuid = NULL;
        return configure_probe_value(path, "UUID", &uuid) == 0 && streq(uuid, source + 5);
}

/* The device node of MAJOR:MINOR (sysfs' uevent DEVNAME under devfs), or NULL. */
static char *devnode(unsigned ma, unsigned mi) {
        char p[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        snprintf(p, sizeof p, "%s/dev/block/%u:%u/uevent", kiln_paths.sysfs, ma, mi);
        if (read_full_file(p, 64u * 1024u, &text, NULL) < 0)
                return NULL;
        const char *d = strstr(text, "DEVNAME=");
        if (!d || (d != text && d[-1] != '\n'))
                return NULL;
        d += 8;
        return strdupf("%s/%.*s", kiln_paths.devfs, (int) strcspn(d, "\n"), d);
}

struct kernel_view {
        struct procfs_mount *mounts;
        size_t n_mounts;
        char *swaps;            /* /proc/swaps, as read */
};

static void kernel_view_done(struct kernel_view *k) {
        procfs_mounts_free(k->mounts, k->n_mounts);
        free(k->swaps);
        *k = (struct kernel_view) {};
}

static int kernel_view_read(struct kernel_view *k, struct strbuf *err) {
        char p[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        snprintf(p, sizeof p, "%s/self/mountinfo", kiln_paths.procfs);
        int r = read_full_file(p, HEALTH_FILE_MAX, &text, NULL);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot read '%s'", p);
        if ((r = procfs_parse_mountinfo(text, &k->mounts, &k->n_mounts)) < 0)
                return strbuf_errorf(err, r, "cannot parse '%s'", p);
        snprintf(p, sizeof p, "%s/swaps", kiln_paths.procfs);
        r = read_full_file(p, HEALTH_FILE_MAX, &k->swaps, NULL);
        if (r < 0 && r != -ENOENT)
                return strbuf_errorf(err, r, "cannot read '%s'", p);
        return 0;
}

/* Does /proc/swaps list a device (its first field, a path) that carries source? */
static bool swap_listed(const char *swaps, const char *found, const char *source) {
        for (const char *l = swaps; l && *l;) {
                size_t n = strcspn(l, " \t\n");
                char path[PATH_MAX];
                if (n > 0 && n < sizeof path && l[0] == '/') {
                        memcpy(path, l, n);
                        path[n] = 0;
                        if (carries(path, found, source))
                                return true;
                }
                l = strchr(l, '\n');
                l = l ? l + 1 : NULL;
        }
        return false;
}

/* it->up, it->device and, when not up, the kernel's half of it->why. */
static int item_look(const char *root, const struct kernel_view *k, struct health_item *it) {
        free(it->device); free(it->why);
        it->device = it->why = NULL;
        it->up = false;
        int r = find_device(it->source, &it->device);
        if (r < 0)
                return r;
        dev_t d = 0;
        bool have = it->device && devnum(it->device, &d) == 0;
        switch (it->kind) {
        case HEALTH_MOUNT: {
                _cleanup_free_ char *where = under(root, it->what);
                if (!where)
                        return -ENOMEM;
                const struct procfs_mount *m = NULL;
                for (size_t i = 0; i < k->n_mounts; i++)
                        if (streq(k->mounts[i].where, where))
                                m = &k->mounts[i];      /* the last one is on top */
                _cleanup_free_ char *node = m ? devnode(m->major, m->minor) : NULL;
                if (m && ((have && makedev(m->major, m->minor) == d) || (node && carries(node, it->device, it->source)))) {
                        it->up = true;
                        return 0;
                }
                if (m)
                        it->why = have ? strdupf("mounted from device %u:%u, not from %s (%s, %u:%u)", m->major, m->minor,
                                                 it->source, it->device, major(d), minor(d))
                                       : strdupf("mounted from device %u:%u, and no device carries %s", m->major,
                                                 m->minor, it->source);
                else
                        it->why = have ? strdupf("not mounted, though its device %s (%s) is there", it->source, it->device)
                                       : strdupf("not mounted: its device %s is not there", it->source);
                break;
        }
        case HEALTH_SWAP:
                if (swap_listed(k->swaps, it->device, it->source)) {
                        it->up = true;
                        return 0;
                }
                it->why = have ? strdupf("not in use as swap, though its device %s (%s) is there", it->source, it->device)
                               : strdupf("not in use as swap: its device %s is not there", it->source);
                break;
        case HEALTH_VOLUME: {
                _cleanup_free_ char *mapper = NULL;
                dev_t x = 0;
                if (paths_mapper(it->what, &mapper) < 0)
                        return -ENOMEM;
                if (devnum(mapper, &x) == 0) {
                        it->up = true;
                        return 0;
                }
                it->why = have ? strdupf("not open (no %s), though its device %s (%s) is there", mapper, it->source, it->device)
                               : strdupf("not open (no %s): its device %s is not there", mapper, it->source);
                break;
        }
        }
        return it->why ? 0 : -ENOMEM;
}

/* ---- what systemd says ---- */

static int run_capture(const char *const *argv, struct strbuf *out) {
        _cleanup_strbuf_ struct strbuf e = STRBUF_INIT;
        struct exec_options o = { .out = out, .err = &e, .timeout_usec = 30ull * 1000000ull };
        return exec_argv(argv, &o, NULL);
}

static void chomp(struct strbuf *b) {
        while (b->len && (b->buf[b->len - 1] == '\n' || b->buf[b->len - 1] == ' '))
                b->buf[--b->len] = 0;
}

/* The unit systemd makes of an item's line (its generators' names), by
 * systemd-escape; the device unit of its source too. */
static int unit_names(const struct health_item *it, char **ret_unit, char **ret_device) {
        _cleanup_strbuf_ struct strbuf u = STRBUF_INIT, d = STRBUF_INIT;
        _cleanup_free_ char *node = NULL;
        const char *eq = strchr(it->source, '=');
        if (eq) {
                _cleanup_free_ char *tag = strndup(it->source, (size_t) (eq - it->source));
                if (!tag)
                        return -ENOMEM;
                for (char *c = tag; *c; c++)
                        *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
                node = strdupf("/dev/disk/by-%s/%s", tag, eq + 1);      /* fstab_node_to_udev_node() */
        } else
                node = strdup(it->source);
        if (!node)
                return -ENOMEM;
        const char *dev_argv[] = { kiln_paths.systemd_escape, "--path", "--suffix=device", "--", node, NULL };
        int r = run_capture(dev_argv, &d);
        if (r < 0)
                return r;
        if (it->kind == HEALTH_VOLUME) {
                const char *argv[] = { kiln_paths.systemd_escape, "--template=systemd-cryptsetup@.service", "--", it->what, NULL };
                r = run_capture(argv, &u);
        } else {
                const char *argv[] = { kiln_paths.systemd_escape, "--path",
                                       it->kind == HEALTH_SWAP ? "--suffix=swap" : "--suffix=mount", "--",
                                       it->kind == HEALTH_SWAP ? node : it->what, NULL };
                r = run_capture(argv, &u);
        }
        if (r < 0)
                return r;
        chomp(&u);
        chomp(&d);
        *ret_unit = strbuf_detach(&u);
        *ret_device = strbuf_detach(&d);
        return 0;
}

/* "ActiveState=failed SubState=failed Result=exit-code" of unit; *ret_job: a job is queued or running. */
static int unit_state(const char *unit, char **ret, bool *ret_job) {
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT, s = STRBUF_INIT;
        const char *argv[] = { kiln_paths.systemctl, "show", "--property=ActiveState,SubState,Result,Job", "--", unit, NULL };
        int r = run_capture(argv, &out);
        if (r < 0)
                return r;
        *ret_job = false;
        static const char *const keys[] = { "ActiveState=", "SubState=", "Result=" };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++)
                for (char *l = out.buf, *nl; l && *l; l = nl ? nl + 1 : NULL) {
                        nl = strchr(l, '\n');
                        size_t n = nl ? (size_t) (nl - l) : strlen(l), kl = strlen(keys[k]);
                        if (n > kl && strncmp(l, keys[k], kl) == 0 &&
                            (r = strbuf_addf(&s, "%s%.*s", s.len ? " " : "", (int) n, l)) < 0)
                                return r;
                }
        for (char *l = out.buf, *nl; l && *l; l = nl ? nl + 1 : NULL) {
                nl = strchr(l, '\n');
                if (strncmp(l, "Job=", 4) == 0 && l[4] && l[4] != '\n')
                        *ret_job = true;
        }
        *ret = strbuf_detach(&s);
        return *ret ? 0 : -ENOMEM;
}

static int item_systemd(struct health_item *it, bool *ret_pending) {
        _cleanup_free_ char *dev_unit = NULL, *ustate = NULL, *dstate = NULL;
        bool job_u = false, job_d = false;
        free(it->unit); free(it->systemd);
        it->unit = it->systemd = NULL;
        int r = unit_names(it, &it->unit, &dev_unit);
        if (r < 0)
                return r;
        if ((r = unit_state(it->unit, &ustate, &job_u)) < 0 || (r = unit_state(dev_unit, &dstate, &job_d)) < 0)
                return r;
        *ret_pending = job_u || job_d;
        it->systemd = strdupf("%s: %s; %s: %s", it->unit, ustate, dev_unit, dstate);
        if (!it->systemd)
                return -ENOMEM;
        if (*ret_pending)
                return 0;
        /* the device waited for and never came: systemd's own words are in the journal */
        if (!it->device && it->timeout) {
                char *w = strdupf("%s: it did not appear within %s (x-systemd.device-timeout)", it->why, it->timeout);
                if (!w)
                        return -ENOMEM;
                free(it->why);
                it->why = w;
        }
        _cleanup_strbuf_ struct strbuf j = STRBUF_INIT;
        char lines[16];
        snprintf(lines, sizeof lines, "%u", HEALTH_JOURNAL_LINES);
        const char *argv[] = { kiln_paths.journalctl, "--boot", "--no-pager", "--output=cat", "--lines", lines,
                               "--unit", it->unit, "--unit", dev_unit, NULL };
        if (run_capture(argv, &j) == 0) {
                chomp(&j);
                it->journal = strbuf_detach(&j);
        }
        return 0;
}

int health_check(const char *root, struct health *ret, struct strbuf *err) {
        struct health h = {};
        int r = read_table(root, "/etc/fstab", 4, &h, err, fstab_line);
        if (r == 0)
                r = read_table(root, "/etc/crypttab", 3, &h, err, crypttab_line);
        h.systemd = !root && access(kiln_paths.systemd_booted, F_OK) == 0;
        uint64_t until = now_usec() + HEALTH_SETTLE_MAX_USEC;
        for (bool again = true; r == 0 && again;) {
                struct kernel_view k = {};
                again = false;
                r = kernel_view_read(&k, err);
                for (size_t i = 0; r == 0 && i < h.n; i++) {
                        bool pending = false;
                        struct health_item *it = &h.items[i];
                        if ((r = item_look(root, &k, it)) < 0 || it->up || !h.systemd)
                                continue;
                        if ((r = item_systemd(it, &pending)) < 0)
                                r = strbuf_errorf(err, r, "cannot ask systemd about %s '%s'", health_kind_name(it->kind), it->what);
                        again |= pending;
                }
                kernel_view_done(&k);
                if (again && now_usec() > until)
                        again = false;  /* still waiting: reported as it is now (its systemd state shows the job) */
                if (again)
                        (void) nanosleep(&(struct timespec) { .tv_sec = 2 }, NULL);
        }
        if (r < 0) {
                health_done(&h);
                return r;
        }
        for (size_t i = 0; i < h.n; i++)
                if (!h.items[i].up) {
                        h.down++;
                        h.required_down += h.items[i].required;
                }
        *ret = h;
        return 0;
}

int health_item_describe(const struct health_item *it, struct strbuf *out) {
        return strbuf_addf(out, "%s %s (%s, %s): %s", health_kind_name(it->kind), it->what, it->source,
                           it->required ? "required" : "not required", it->up ? "up" : it->why);
}

json_object *health_to_json(const struct health *h, bool all) {
        json_object *a = json_object_new_array();
        int r = a ? 0 : -ENOMEM;
        for (size_t i = 0; r == 0 && i < h->n; i++) {
                const struct health_item *it = &h->items[i];
                if (!all && it->up)
                        continue;
                json_object *o = json_object_new_object();
                if (!o) {
                        r = -ENOMEM;
                        break;
                }
                json_set_str(o, "kind", health_kind_name(it->kind), &r);
                json_set_str(o, it->kind == HEALTH_MOUNT ? "mountpoint" : it->kind == HEALTH_VOLUME ? "volume" : "swap",
                             it->what, &r);
                json_set_str(o, "source", it->source, &r);
                if (it->device)
                        json_set_str(o, "device", it->device, &r);
                json_set(o, "required", json_object_new_boolean(it->required), &r);
                json_set(o, "up", json_object_new_boolean(it->up), &r);
                if (it->why)
                        json_set_str(o, "why", it->why, &r);
                if (it->timeout)
                        json_set_str(o, "device_timeout", it->timeout, &r);
                if (it->systemd)
                        json_set_str(o, "systemd", it->systemd, &r);
                if (it->journal)
                        json_set_str(o, "journal", it->journal, &r);
                json_append(a, json_done(o, r), &r);
        }
        return json_done(a, r);
}
