#include "configure.h"

#include "md.h"
#include "mount.h"
#include "netconf.h"
#include "netheal.h"
#include "paths.h"
#include "sigprobe.h"

#include <blkid/blkid.h>
#include <dirent.h>
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

int configure_fstab(const struct plan *p, struct strbuf *out) {
        int r = strbuf_adds(out, "# written by kiln\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                const struct plan_fs *fs = &s->fs;
                bool swap = plan_step_made(s) == PLAN_MKFS && fs->type == SPEC_FS_SWAP;
                if (s->kind != PLAN_MOUNT && !swap)
                        continue;
                /* the options as the plan decided them (plan_fs.fstab_options: nofail, device timeout) */
                if (swap && fs->blank) {
                        r = strbuf_addf(out, "/dev/mapper/%s none swap %s 0 0\n", fs->swap_name, fs->fstab_options);
                        continue;
                }
                _cleanup_free_ char *uuid = NULL;
                r = configure_probe_value(s->device, "UUID", &uuid);
                if (r < 0)
                        return r;
                if (swap)
                        r = strbuf_addf(out, "UUID=%s none swap %s 0 0\n", uuid, fs->fstab_options);
                else
                        r = strbuf_addf(out, "UUID=%s %s %s %s 0 %u\n", uuid, fs->mountpoint, spec_fs_type_name(fs->type),
                                        fs->fstab_options, fs->fsck_pass);
        }
        return r;
}

/* The PARTUUID of a partition the plan makes (its GPT entry, read back
 * from the disk): -ENOENT when dev is no partition of the plan. */
int configure_partuuid(const struct plan *p, const char *dev, char **ret) {
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                for (size_t k = 0; plan_step_made(s) == PLAN_PARTITION && k < s->n_parts; k++) {
                        if (!streq(s->parts[k].device, dev))
                                continue;
                        struct sigprobe_part *parts = NULL;
                        size_t n = 0;
                        int r = sigprobe_partitions(s->device, &parts, &n);
                        if (r < 0)
                                return r;
                        r = -ENODATA;
                        for (size_t j = 0; j < n; j++)
                                if (parts[j].number == s->parts[k].number && parts[j].uuid) {
                                        char *u = strdup(parts[j].uuid);
                                        r = u ? 0 : -ENOMEM;
                                        if (u)
                                                *ret = u;
                                        break;
                                }
                        sigprobe_partitions_free(parts, n);
                        return r;
                }
        }
        return -ENOENT;
}

/* The crypttab line of a swap with encrypt: random. The source is named by
 * what cannot become another device at the next boot: the PARTUUID kiln's
 * GPT gave the partition, /dev/md/NAME, /dev/VG/LV; never /dev/sdX. */
static int crypttab_swap(const struct plan *p, const struct plan_step *s, struct strbuf *out) {
        _cleanup_free_ char *partuuid = NULL;
        int r;
        if (s->fs.swap_by_partuuid && (r = configure_partuuid(p, s->device, &partuuid)) < 0)
                return r;
        return strbuf_addf(out, "%s %s%s /dev/urandom %s\n", s->fs.swap_name,
                           partuuid ? "PARTUUID=" : "", partuuid ? partuuid : s->device, s->fs.crypttab_options);
}

/* initramfs: only what cryptroot's hook puts into /cryptroot/crypttab — the
 * LUKS volumes, in the same lines (their source is already UUID=, the key
 * 'none', the options as written) and no comment; a swap with a random key is
 * opened by systemd after the root is mounted. Checked against the hook of
 * Debian 12 (cryptsetup-initramfs 2.6.1): mkinitramfs with such a crypttab
 * writes exactly its 'initramfs' lines. */
static int crypttab(const struct plan *p, bool initramfs, struct strbuf *out) {
        int r = initramfs ? 0 : strbuf_adds(out, "# written by kiln\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                if (plan_step_made(s) == PLAN_MKFS && s->fs.blank) {
                        if (!initramfs)
                                r = crypttab_swap(p, s, out);
                        continue;
                }
                if (plan_step_made(s) != PLAN_LUKS_FORMAT)
                        continue;
                _cleanup_free_ char *uuid = NULL;
                r = configure_probe_value(s->device, "UUID", &uuid);
                if (r < 0)
                        return r;
                /* the options as the plan decided them (plan_luks.crypttab_options) */
                r = strbuf_addf(out, "%s UUID=%s none %s\n", s->luks.name, uuid, s->luks.crypttab_options);
        }
        return r;
}

int configure_crypttab(const struct plan *p, struct strbuf *out) {
        return crypttab(p, false, out);
}

int configure_crypttab_initramfs(const struct plan *p, struct strbuf *out) {
        return crypttab(p, true, out);
}

int configure_mdadm_conf(const struct plan *p, struct strbuf *out, struct strbuf *err) {
        int r = strbuf_adds(out, "# written by kiln\nHOMEHOST <system>\n");
        for (size_t i = 0; r == 0 && i < p->n_steps; i++) {
                const struct plan_step *s = &p->steps[i];
                if (plan_step_made(s) != PLAN_MD_CREATE)
                        continue;
                r = md_detail_brief(s->device, out, err);
        }
        return r;
}

/* Debian 12's initramfs starts a degraded array only in its root wait
 * (local-block/mdadm, once its count of rounds reaches 2/3 of max(30,
 * rootdelay)), and that wait gives up at max(30, rootdelay) seconds after
 * /init loaded its modules, in the same round: cryptroot opens the LUKS on
 * the array only in the next round. Each round first catches that count up
 * with the seconds gone, one `mdadm --assemble --scan` per second; under
 * emulation each takes a second or more, so the round that started the
 * array was the last and the node dropped to the initramfs shell with the
 * array up and its LUKS closed (a CI run: a pulled disk, a disk plugged in
 * late). rootdelay= does not help: /init first sleeps that long, and the
 * first round then starts the array and gives up at once (tried: 60 and
 * 180). This script runs before local-top (init-premount), waits for the
 * members as long as Debian would (20 s, 2/3 of 30) by the clock, not by
 * rounds, and starts what is still incomplete as Debian's last resort does
 * (mdadm --run). An array none of whose members is there yet (md over
 * per-disk LUKS, whose members cryptroot opens later; an HBA that has shown
 * no disk yet) is not waited for: Debian's own start stays for those. */
const char *configure_md_start_script(void) {
        return "#!/bin/sh\n"
               "# written by kiln (agent/apply/configure.c): an md array that udev has\n"
               "# begun to assemble and that still misses members " CONFIGURE_MD_START_WAIT_S " s later is\n"
               "# started degraded, before cryptroot and the root wait look for it\n"
               "PREREQ=\"\"\n"
               "prereqs() { echo \"$PREREQ\"; }\n"
               "case \"$1\" in prereqs) prereqs; exit 0 ;; esac\n"
               ". /scripts/functions\n"
               "command -v mdadm >/dev/null 2>&1 || exit 0\n"
               "incomplete() { sed -n 's/^\\(md[^ ]*\\) : inactive .*/\\1/p' /proc/mdstat 2>/dev/null; }\n"
               "wait_for_udev 10\n"
               "[ -n \"$(incomplete)\" ] || exit 0\n"
               "start=$(_uptime)\n"
               "while [ -n \"$(incomplete)\" ] && [ $(($(_uptime) - start)) -lt " CONFIGURE_MD_START_WAIT_S " ]; do sleep 1; done\n"
               "left=$(echo $(incomplete))\n"
               "[ -n \"$left\" ] || exit 0\n"
               "log_warning_msg \"kiln: md $left still missing members after " CONFIGURE_MD_START_WAIT_S " s: starting degraded\"\n"
               "mdadm -q --run /dev/md?* || true\n"
               "exit 0\n";
}

/* Debian 12's initramfs brings a NIC up only when it runs ipconfig for the
 * network unlock (clevis, after cryptroot's prompt), and ipconfig sends its
 * first DHCPDISCOVER at once: on a link that came up a moment before, the
 * send fails, and klibc's ipconfig then waits 10 s before it tries again
 * (its retry after an error), past its own 2 s timeout, which it checks only
 * when that wait ends ("IP-Config: no response after 2 secs - giving up",
 * 10 s after it began, on every rig boot of an installed node, 2026-12-06).
 * This script sets every NIC's link up early (init-premount, seconds before
 * the prompt), through sysfs' flags (klibc has no ip(8)), when the kernel
 * command line asks for the network (ip=, kiln's default for a Tang-bound
 * volume); the links are then up when ipconfig sends. */
const char *configure_links_up_script(void) {
        return "#!/bin/sh\n"
               "# written by kiln (agent/apply/configure.c): with ip= on the kernel command\n"
               "# line, every NIC's link is set up now, so that it is up when ipconfig sends\n"
               "# its first DHCP request for the network unlock\n"
               "PREREQ=\"\"\n"
               "prereqs() { echo \"$PREREQ\"; }\n"
               "case \"$1\" in prereqs) prereqs; exit 0 ;; esac\n"
               ". /scripts/functions\n"
               "read -r cmdline </proc/cmdline\n"
               "case \" $cmdline \" in *\" ip=off \"*|*\" ip=none \"*) exit 0 ;; *\" ip=\"*) ;; *) exit 0 ;; esac\n"
               "wait_for_udev 10\n"
               "for f in /sys/class/net/*/flags; do\n"
               "\tread -r flags <\"$f\" 2>/dev/null || continue\n"
               "\t# not loopback (0x8), broadcast (0x2) or point-to-point (0x10), not up (0x1)\n"
               "\t[ $((flags & 0x8)) = 0 ] && [ $((flags & 0x12)) != 0 ] && [ $((flags & 0x1)) = 0 ] || continue\n"
               "\techo $((flags | 0x1)) >\"$f\" 2>/dev/null || true\n"
               "done\n"
               "exit 0\n";
}

/* mkdir -p of the directory path is in */
static int mkdir_parent_of(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
                *slash = 0;
        return mkdir_p(dir);
}

static int write_file(const char *rel, const char *content) {
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof path, "%s%s", kiln_paths.target, rel) >= sizeof path)
                return -ENAMETOOLONG;
        return write_file_atomic(path, content, strlen(content));
}

/* an initramfs-tools script at rel under the target, mode 0755 */
static int write_script(const char *rel, const char *script) {
        char path[PATH_MAX];
        int r = configure_target_path(rel, path);
        if (r == 0)
                r = mkdir_parent_of(path);
        return r < 0 ? r : write_file_atomic_mode(path, script, strlen(script), 0755);
}

int configure_target(const struct plan *p, const char *hostname, struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf fstab = STRBUF_INIT, crypttab = STRBUF_INIT, mdconf = STRBUF_INIT;
        bool has_luks = false, has_md = false;
        for (size_t i = 0; i < p->n_steps; i++) {
                has_luks |= plan_step_made(&p->steps[i]) == PLAN_LUKS_FORMAT;
                has_luks |= plan_step_made(&p->steps[i]) == PLAN_MKFS && p->steps[i].fs.blank;
                has_md |= plan_step_made(&p->steps[i]) == PLAN_MD_CREATE;
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
                if ((r = write_script(CONFIGURE_LINKS_UP_ETC, configure_links_up_script())) < 0)
                        return strbuf_adds(err, CONFIGURE_LINKS_UP_ETC), r;
        }
        if (has_md) {
                r = configure_mdadm_conf(p, &mdconf, err);
                if (r == 0)
                        r = write_file("/etc/mdadm/mdadm.conf", strbuf_str(&mdconf));
                if (r < 0)
                        return strbuf_adds(err, " /etc/mdadm/mdadm.conf"), r;
                if ((r = write_script(CONFIGURE_MD_START_ETC, configure_md_start_script())) < 0)
                        return strbuf_adds(err, CONFIGURE_MD_START_ETC), r;
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

/* systemd-networkd, as Debian's systemd ships it, in the image; and the links
 * `systemctl enable systemd-networkd` makes (its [Install] section). */
#define NETWORKD_BINARY "/lib/systemd/systemd-networkd"
static const struct {
        const char *link, *unit;
} networkd_enable[] = {
        { "/etc/systemd/system/multi-user.target.wants/systemd-networkd.service", "/lib/systemd/system/systemd-networkd.service" },
        { "/etc/systemd/system/dbus-org.freedesktop.network1.service", "/lib/systemd/system/systemd-networkd.service" },
        { "/etc/systemd/system/sockets.target.wants/systemd-networkd.socket", "/lib/systemd/system/systemd-networkd.socket" },
        { "/etc/systemd/system/network-online.target.wants/systemd-networkd-wait-online.service",
          "/lib/systemd/system/systemd-networkd-wait-online.service" },
};

int configure_target_path(const char *rel, char buf[static PATH_MAX]) {
        if ((size_t) snprintf(buf, PATH_MAX, "%s%s", kiln_paths.target, rel) >= PATH_MAX)
                return -ENAMETOOLONG;
        return 0;
}

int configure_symlink(const char *to, const char *rel) {
        char path[PATH_MAX], tmp[PATH_MAX + 16];
        int r = configure_target_path(rel, path);
        if (r < 0)
                return r;
        if ((r = mkdir_parent_of(path)) < 0)
                return r;
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int) getpid());
        (void) unlink(tmp);
        if (symlink(to, tmp) < 0)
                return -errno;
        if (rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        return 0;
}

/* Files an earlier run wrote (another spec's bridges) would stay in force. */
static int remove_old_kiln_files(void) {
        char path[PATH_MAX];
        int r = configure_target_path(NETCONF_DIR, path);
        if (r < 0)
                return r;
        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        while ((de = readdir(d)))
                if ((strncmp(de->d_name, "10-kiln-", 8) == 0 || strncmp(de->d_name, "20-kiln-", 8) == 0) &&
                    unlinkat(dirfd(d), de->d_name, 0) < 0 && errno != ENOENT)
                        return -errno;
        return 0;
}

int configure_network(const struct netconf *n, struct strbuf *err) {
        char path[PATH_MAX];
        int r = configure_target_path(NETWORKD_BINARY, path);
        if (r < 0)
                return r;
        if (access(path, X_OK) < 0) {
                r = -errno;
                (void) strbuf_addf(err, "the image has no systemd-networkd (%s)", NETWORKD_BINARY);
                return r;
        }
        struct netconf_file *files = NULL;
        size_t n_files = 0;
        if ((r = netconf_files(n, &files, &n_files)) < 0)
                return r;
        r = remove_old_kiln_files();
        if (r < 0)
                (void) strbuf_adds(err, NETCONF_DIR);
        for (size_t i = 0; r >= 0 && i < n_files; i++)
                if ((r = write_file(files[i].path, files[i].content)) < 0)
                        (void) strbuf_adds(err, files[i].path);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(networkd_enable); i++)
                if ((r = configure_symlink(networkd_enable[i].unit, networkd_enable[i].link)) < 0)
                        (void) strbuf_adds(err, networkd_enable[i].link);
        if (r >= 0)
                r = netheal_install(n, err);
        netconf_files_free(files, n_files);
        return r;
}
