#include "bootloader.h"

#include "configure.h"
#include "exec.h"
#include "initrd.h"
#include "log.h"
#include "paths.h"
#include "sigprobe.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOOTLOADER_TIMEOUT_USEC (900ull * 1000000ull)   /* update-initramfs under TCG takes minutes */
#define MBR_BOOT_CODE 440                               /* boot.img's bytes before the disk signature */
#define BIOS_BOOT_MAX (16u << 20)                       /* a bios_grub partition kiln copies whole */

static const struct {
        const char *rel;        /* under the target root */
        bool recursive;
} chroot_binds[] = {
        { "/dev", true },       /* /dev/pts, /dev/shm, the md and dm nodes */
        { "/proc", false },
        { "/sys", true },       /* efivarfs, if the firmware has it */
        { "/run", true },       /* /run/cryptsetup locks, /run/udev */
};

static const char *bind_source(size_t i) {
        switch (i) {
        case 0: return kiln_paths.devfs;
        case 1: return kiln_paths.procfs;
        case 2: return kiln_paths.sysfs;
        default: return "/run";
        }
}

static int bind_path(const char *root, size_t i, char buf[static PATH_MAX]) {
        if ((size_t) snprintf(buf, PATH_MAX, "%s%s", root, chroot_binds[i].rel) >= PATH_MAX)
                return -ENAMETOOLONG;
        return 0;
}

static void unbind_upto(const char *root, size_t n) {
        char p[PATH_MAX];
        while (n-- > 0)
                if (bind_path(root, n, p) == 0 && umount2(p, chroot_binds[n].recursive ? MNT_DETACH : 0) < 0 &&
                    errno == EBUSY)
                        (void) umount2(p, MNT_DETACH);
}

int chroot_enter(const char *root, struct strbuf *err) {
        char p[PATH_MAX];
        for (size_t i = 0; i < ELEMENTSOF(chroot_binds); i++) {
                int r = bind_path(root, i, p);
                if (r == 0 && (r = mkdir_p(p)) == 0 &&
                    mount(bind_source(i), p, NULL, MS_BIND | (chroot_binds[i].recursive ? MS_REC : 0), NULL) < 0)
                        r = -errno;
                if (r < 0) {
                        (void) strbuf_addf(err, "cannot bind %s to %s", bind_source(i), p);
                        unbind_upto(root, i);
                        return r;
                }
                /* A recursive bind copies shared submounts into their peer
                 * groups (iproute2 makes /run/netns shared): the detaching
                 * umount of chroot_leave would then propagate back and
                 * unmount the host's own (a host test's network namespaces
                 * went away under it). As a slave the copy still sees new
                 * mounts of the host, and its umounts stay its own. */
                if (chroot_binds[i].recursive && mount(NULL, p, NULL, MS_SLAVE | MS_REC, NULL) < 0) {
                        r = -errno;
                        (void) strbuf_addf(err, "cannot make the bind of %s at %s a slave", bind_source(i), p);
                        unbind_upto(root, i + 1);
                        return r;
                }
        }
        return 0;
}

int chroot_leave(const char *root) {
        char p[PATH_MAX];
        int ret = 0;
        for (size_t n = ELEMENTSOF(chroot_binds); n-- > 0;) {
                if (bind_path(root, n, p) < 0)
                        continue;
                if (umount2(p, chroot_binds[n].recursive ? MNT_DETACH : 0) < 0 && errno != EINVAL && errno != ENOENT) {
                        if (ret == 0)
                                ret = -errno;
                        (void) umount2(p, MNT_DETACH);
                }
        }
        return ret;
}

/* The first console=ttyS<N>[,<speed>] of cmdline: its unit and speed (115200
 * when none is given); false when there is none. */
static bool serial_console(const char *cmdline, unsigned *ret_unit, unsigned *ret_speed) {
        for (const char *p = cmdline; (p = strstr(p, "console=ttyS")); p++) {
                if (p != cmdline && p[-1] != ' ')
                        continue;
                const char *u = p + strlen("console=ttyS");
                unsigned unit = 0, speed = 115200;
                if (!isdigit((unsigned char) *u))
                        continue;
                for (; isdigit((unsigned char) *u) && unit < 100; u++)
                        unit = unit * 10 + (unsigned) (*u - '0');
                if (*u == ',') {
                        unsigned s = 0;
                        for (u++; isdigit((unsigned char) *u) && s < 10000000; u++)
                                s = s * 10 + (unsigned) (*u - '0');
                        if (s > 0)
                                speed = s;
                }
                *ret_unit = unit;
                *ret_speed = speed;
                return true;
        }
        return false;
}

int bootloader_grub_cfg(const char *cmdline, unsigned timeout, struct strbuf *out) {
        /* cmdline holds no quote, backslash, '$' or '`' (the spec refuses them) */
        /* GRUB_RECORDFAIL_TIMEOUT too: Debian's update-grub writes a branch
         * that waits that long (30 s unless set) when GRUB's environment
         * holds recordfail=1. Debian 12 itself never sets it (00_header:
         * quick_boot=0), but a grub-editenv or another tool may: then too
         * the menu waits boot.timeout */
        int r = strbuf_addf(out, "# written by kiln: boot.cmdline and boot.timeout of the host spec\n"
                                 "GRUB_CMDLINE_LINUX=\"%s\"\nGRUB_TIMEOUT=%u\nGRUB_RECORDFAIL_TIMEOUT=%u\n",
                            cmdline, timeout, timeout);
        unsigned unit, speed;
        if (r == 0 && serial_console(cmdline, &unit, &speed))
                r = strbuf_addf(out, "GRUB_TERMINAL=\"console serial\"\nGRUB_SERIAL_COMMAND=\"serial --unit=%u --speed=%u\"\n",
                                unit, speed);
        return r;
}

static int version_cmp_desc(const void *a, const void *b) {
        return strverscmp(*(char *const *) b, *(char *const *) a);
}

int bootloader_grub_menu(const char *cmdline, unsigned timeout, const char *kdir, char *const *versions, size_t n,
                         struct strbuf *out) {
        _cleanup_free_ char **v = n ? calloc(n, sizeof *v) : NULL;
        if (n && !v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = versions[i];
        qsort(v, n, sizeof *v, version_cmp_desc);
        int r = strbuf_addf(out, "# written by kiln's boot-loader step for the image's generic initramfs; the installed\n"
                                 "# system's own update-grub writes Debian's in its place (/etc/default/grub.d/kiln.cfg)\n"
                                 "set default=0\nset timeout=%u\n", timeout);
        unsigned unit, speed;
        /* the line without "root=... ro " is what GRUB_CMDLINE_LINUX holds */
        if (r == 0 && serial_console(cmdline, &unit, &speed))
                r = strbuf_addf(out, "serial --unit=%u --speed=%u\nterminal_input console serial\n"
                                     "terminal_output console serial\n", unit, speed);
        /* $root is the device the core image's prefix names, where this file
         * was read from: /boot, as grub-install found it (md, LVM, partition) */
        for (size_t i = 0; r == 0 && i < n; i++)
                r = strbuf_addf(out, "menuentry 'Linux %s' --id 'kiln-%s' {\n\tinsmod gzio\n"
                                     "\tlinux %s/vmlinuz-%s %s\n\tinitrd %s/initrd.img-%s\n}\n",
                                v[i], v[i], kdir, v[i], cmdline, kdir, v[i]);
        return r;
}

static const struct inv_disk *plan_disk_by_path(const struct plan *p, const char *path) {
        for (size_t i = 0; i < p->n_disks; i++)
                if (p->disks[i].disk && p->disks[i].disk->path && streq(p->disks[i].disk->path, path))
                        return p->disks[i].disk;
        return NULL;
}

int bootloader_debconf(const struct plan *p, const struct plan_step *s, struct strbuf *out) {
        const struct spec_boot *b = s->boot;
        int r = 0;
        if (b->firmware != SPEC_FIRMWARE_UEFI) {
                r = strbuf_adds(out, "grub-pc grub-pc/install_devices multiselect ");
                for (size_t i = 0; r == 0 && s->inputs && s->inputs[i]; i++) {
                        const struct inv_disk *d = plan_disk_by_path(p, s->inputs[i]);
                        const char *name = d && d->by_id && d->by_id[0] ? d->by_id[0] : NULL;
                        if (name && strncmp(name, "/dev/", 5) != 0)
                                r = strbuf_addf(out, "%s/dev/disk/by-id/%s", i ? ", " : "", name);
                        else
                                r = strbuf_addf(out, "%s%s", i ? ", " : "", name ? name : s->inputs[i]);
                }
                if (r == 0)
                        r = strbuf_adds(out, "\ngrub-pc grub-pc/install_devices_empty boolean false\n");
        }
        if (r == 0 && b->firmware != SPEC_FIRMWARE_BIOS)
                r = strbuf_adds(out, "grub-efi-amd64 grub2/force_efi_extra_removable boolean true\n"
                                     "grub-efi-amd64 grub2/update_nvram boolean false\n");
        return r;
}

static int target_write(const char *rel, const char *text) {
        char path[PATH_MAX];
        if ((size_t) snprintf(path, sizeof path, "%s%s", kiln_paths.target, rel) >= sizeof path)
                return -ENAMETOOLONG;
        return write_file_atomic(path, text, strlen(text));
}

/* A helper in the target, its lines logged as it prints them, under name
 * (NULL: its program's name). */
static int run_in_target_as(const char *name, const char *const *argv, const char *in, struct strbuf *err) {
        struct exec_options o = {
                .timeout_usec = BOOTLOADER_TIMEOUT_USEC, .err = err, .root = kiln_paths.target,
                .in = in, .in_len = in ? strlen(in) : 0, .log_lines = true, .log_name = name,
        };
        strbuf_reset(err);
        int r = exec_argv(argv, &o, NULL);
        if (r < 0) {
                /* the helper's last stderr line says why; name the helper before it */
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                (void) strbuf_addf(&why, "%s: %s", name ? name : argv[0], exec_last_line(err));
                strbuf_reset(err);
                (void) strbuf_adds(err, strbuf_str(&why));
        }
        return r;
}

static int run_in_target(const char *const *argv, const char *in, struct strbuf *err) {
        return run_in_target_as(NULL, argv, in, err);
}

/* The device of the plan's mount at mountpoint (NULL: none). */
static const char *mount_device(const struct plan *p, const char *mountpoint) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == PLAN_MOUNT && p->steps[i].fs.mountpoint &&
                    streq(p->steps[i].fs.mountpoint, mountpoint))
                        return p->steps[i].device;
        return NULL;
}

/* /boot/grub/grub.cfg in the target: the menu of the marker's kernels with
 * the command line kiln boot kexecs (plan_installed_cmdline) */
static int write_grub_menu(const struct plan *p, const struct initrd_marker *m, struct strbuf *err) {
        const struct spec *spec = p->spec;
        const struct spec_filesystem *bfs = spec_boot_filesystem(spec);
        const char *root_dev = mount_device(p, "/");
        _cleanup_free_ char *root_uuid = NULL, *cmdline = NULL;
        /* a root on an LV goes by its mapper name and needs no UUID */
        if (root_dev)
                (void) configure_probe_value(root_dev, "UUID", &root_uuid);
        int r = plan_installed_cmdline(spec, root_uuid, &cmdline);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot tell the installed system's root= for grub.cfg");
        _cleanup_strbuf_ struct strbuf menu = STRBUF_INIT;
        /* kernels on a /boot of its own sit at its top; else under /boot of / */
        const char *kdir = bfs && bfs->mount && streq(bfs->mount, "/boot") ? "" : "/boot";
        if ((r = bootloader_grub_menu(cmdline, spec->boot.timeout, kdir, m->versions, m->n, &menu)) < 0)
                return r;
        char rel[PATH_MAX], path[PATH_MAX];
        if ((size_t) snprintf(rel, sizeof rel, "%s/grub/grub.cfg", kiln_paths.t_boot) >= sizeof rel ||
            (r = configure_target_path(rel, path)) < 0)
                return -ENAMETOOLONG;
        if ((r = write_file_atomic(path, menu.buf, menu.len)) < 0)
                return strbuf_errorf(err, r, "cannot write %s in the target", rel);
        log_info("wrote %s: %zu kernel(s), newest first, root and command line as kiln boot kexecs them", rel, m->n);
        return 0;
}

/* The BIOS boot partition of disk's GPT: 1 found, 0 none (why says so). */
static int bios_boot_partition(const char *disk, struct sigprobe_part *ret, struct strbuf *why) {
        struct sigprobe_part *parts = NULL;
        size_t n = 0;
        int r = sigprobe_partitions(disk, &parts, &n);
        if (r < 0)
                return strbuf_addf(why, "cannot read the partition table of %s: %s", disk, strerror(-r)), 0;
        r = 0;
        for (size_t i = 0; i < n && r == 0; i++)
                if (parts[i].type && streq(parts[i].type, SIGPROBE_GPT_BIOS_BOOT)) {
                        *ret = parts[i];
                        ret->uuid = ret->type = NULL;   /* freed with parts */
                        r = 1;
                }
        sigprobe_partitions_free(parts, n);
        if (r == 0)
                (void) strbuf_addf(why, "%s has no BIOS boot partition", disk);
        return r;
}

/* pread or pwrite all of buf at offset at */
static int disk_io(int fd, bool write, void *buf, size_t len, off_t at) {
        for (size_t done = 0; done < len;) {
                char *p = (char *) buf + done;
                off_t o = at + (off_t) done;
                ssize_t k = write ? pwrite(fd, p, len - done, o) : pread(fd, p, len - done, o);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EIO;
                done += (size_t) k;
        }
        return 0;
}

/* What grub-bios-setup writes on a disk is boot.img in the MBR's first 440
 * bytes (the LBA of the core image patched in; the disk signature and the
 * partition table stay the disk's own) and the core image in the BIOS boot
 * partition, its block list naming that partition's LBAs. The core image
 * finds /boot by the device grub-install named (md, LVM, partition), not by
 * the disk. So on a disk whose BIOS boot partition starts at the same LBA,
 * with the same size and sector size, the first disk's bytes are exactly
 * what grub-bios-setup would write: kiln copies them (5 s of
 * grub-bios-setup's device probing a disk under emulation, for 1 MiB).
 * The first disk's code is read once, then written to each further disk. */
struct bios_boot_code {
        const char *disk;               /* where grub-install put it */
        struct sigprobe_part part;      /* its BIOS boot partition */
        char mbr[MBR_BOOT_CODE];
        char *core;                     /* the partition's part.size bytes */
};

static void bios_boot_code_done(struct bios_boot_code *c) {
        free(c->core);
}

/* 1: read; 0: nothing to copy (why says why); <0: disk cannot be read. */
static int bios_boot_read(const char *disk, struct bios_boot_code *c, struct strbuf *why, struct strbuf *err) {
        c->disk = disk;
        if (bios_boot_partition(disk, &c->part, why) == 0)
                return 0;
        if (c->part.size == 0 || c->part.size > BIOS_BOOT_MAX)
                return strbuf_addf(why, "the BIOS boot partition of %s is %" PRIu64 " bytes", disk, c->part.size), 0;
        if (!(c->core = malloc(c->part.size)))
                return -ENOMEM;
        _cleanup_close_ int fd = open(disk, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return strbuf_errorf(err, -errno, "cannot open %s", disk);
        int r = disk_io(fd, false, c->mbr, sizeof c->mbr, 0);
        if (r == 0)
                r = disk_io(fd, false, c->core, c->part.size, (off_t) c->part.start);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot read GRUB's boot code from %s", disk);
        return 1;
}

/* 1: written; 0: disk's BIOS boot partition lies elsewhere (why says how),
 * nothing written; <0: a write failed. */
static int bios_boot_write(struct bios_boot_code *c, const char *disk, struct strbuf *why, struct strbuf *err) {
        struct sigprobe_part b;
        if (bios_boot_partition(disk, &b, why) == 0)
                return 0;
        if (c->part.start != b.start || c->part.size != b.size || c->part.sector_size != b.sector_size)
                return strbuf_addf(why, "its BIOS boot partition is not where %s has it", c->disk), 0;
        _cleanup_close_ int fd = open(disk, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return strbuf_errorf(err, -errno, "cannot open %s", disk);
        /* the core image first, boot.img (which points at it) last */
        int r = disk_io(fd, true, c->core, c->part.size, (off_t) b.start);
        if (r == 0)
                r = disk_io(fd, true, c->mbr, sizeof c->mbr, 0);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                return strbuf_errorf(err, r, "cannot write GRUB's boot code to %s", disk);
        return 1;
}

/* BIOS: grub-install once (the modules and the core image under
 * /boot/grub/i386-pc, set up on the first disk); every other disk gets the
 * same boot code: copied (bios_boot_write) or, where its GPT differs, from
 * grub-bios-setup, the part of grub-install that writes a disk. */
static int bios_install(const struct plan_step *s, struct strbuf *err) {
        char *const *disks = s->inputs;
        if (!disks || !disks[0])
                return 0;
        const char *install[] = { kiln_paths.t_grub_install, "--target=i386-pc", disks[0], NULL };
        int r = run_in_target(install, NULL, err);
        if (r < 0 || !disks[1])
                return r;
        _cleanup_(bios_boot_code_done) struct bios_boot_code code = { 0 };
        _cleanup_strbuf_ struct strbuf why_none = STRBUF_INIT;
        int have = bios_boot_read(disks[0], &code, &why_none, err);
        if (have < 0)
                return have;
        char dir_opt[PATH_MAX];
        if ((size_t) snprintf(dir_opt, sizeof dir_opt, "--directory=%s/grub/i386-pc", kiln_paths.t_boot) >= sizeof dir_opt)
                return -ENAMETOOLONG;
        for (size_t i = 1; disks[i]; i++) {
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                if ((r = have ? bios_boot_write(&code, disks[i], &why, err) : 0) < 0)
                        return r;
                if (r > 0) {
                        log_info("%s: GRUB's boot code copied from %s (the same BIOS boot partition)", disks[i], disks[0]);
                        continue;
                }
                log_info("%s: grub-bios-setup, not a copy: %s", disks[i], strbuf_str(have ? &why : &why_none));
                const char *setup[] = { kiln_paths.t_grub_bios_setup, dir_opt, disks[i], NULL };
                if ((r = run_in_target(setup, NULL, err)) < 0)
                        return r;
        }
        return 0;
}

/* UEFI: no NVRAM entry: the firmware's boot order stays as the lab set it
 * (network first, so kiln decides at every boot); the disk boots through the
 * fallback path EFI/BOOT/BOOTX64.EFI, which also survives an NVRAM reset.
 * Only that path: without an NVRAM entry nothing starts EFI/debian
 * (grub-efi's postinst writes it with the next upgrade, debconf). */
static int efi_install(const char *name, struct strbuf *err) {
        const char *removable[] = { kiln_paths.t_grub_install, "--target=x86_64-efi", "--efi-directory=/boot/efi",
                                    "--removable", "--no-nvram", NULL };
        return run_in_target_as(name, removable, NULL, err);
}

struct efi_job {
        struct strbuf err;
        int r;
};

static void *efi_job_run(void *arg) {
        struct efi_job *j = arg;
        j->r = efi_install("grub-install x86_64-efi", &j->err);
        return NULL;
}

/* Both firmwares: the two grub-installs at once (about 9 s and 12 s each
 * under emulation, mostly device probing). They write apart
 * (/boot/grub/i386-pc and the disks; /boot/grub/x86_64-efi and the ESP)
 * except for three things both do in /boot/grub:
 * - copy the same font and locale files: each writes a file whole from its
 *   start, so in any order the file ends whole;
 * - first delete the .mo files they find in locale/: two deleting one file
 *   fail, one of them with ENOENT. Hence at once only while locale/ does not
 *   exist (a new /boot), where every .mo file there was copied after its
 *   deleter's own sweep; otherwise one after the other;
 * - create grubenv by a rename when it is missing, which fails for the
 *   second of two at once: grub-editenv creates it before either starts. */
static int both_install(const struct plan_step *s, struct strbuf *err) {
        char grubdir[PATH_MAX], locale[PATH_MAX], env[PATH_MAX];
        if ((size_t) snprintf(grubdir, sizeof grubdir, "%s%s/grub", kiln_paths.target, kiln_paths.t_boot) >= sizeof grubdir ||
            (size_t) snprintf(locale, sizeof locale, "%s/locale", grubdir) >= sizeof locale ||
            (size_t) snprintf(env, sizeof env, "%s/grub/grubenv", kiln_paths.t_boot) >= sizeof env)
                return -ENAMETOOLONG;
        int r;
        if (access(locale, F_OK) == 0) {
                log_info("%s/grub/locale exists: the two grub-installs run one after the other", kiln_paths.t_boot);
                return (r = bios_install(s, err)) < 0 ? r : efi_install(NULL, err);
        }
        if (mkdir(grubdir, 0755) < 0 && errno != EEXIST)
                return strbuf_addf(err, "cannot create %s/grub in the target: %m", kiln_paths.t_boot), -errno;
        const char *editenv[] = { kiln_paths.t_grub_editenv, env, "create", NULL };
        if ((r = run_in_target(editenv, NULL, err)) < 0)
                return r;
        struct efi_job j = { .err = STRBUF_INIT };
        pthread_t t;
        if ((r = -pthread_create(&t, NULL, efi_job_run, &j)) < 0)
                return strbuf_adds(err, "cannot start a thread for grub-install x86_64-efi"), r;
        r = bios_install(s, err);
        (void) pthread_join(t, NULL);
        if (r >= 0 && j.r < 0) {
                strbuf_reset(err);
                (void) strbuf_adds(err, strbuf_str(&j.err));
                r = j.r;
        }
        strbuf_release(&j.err);
        return r;
}

int bootloader_install(const struct plan *p, const struct plan_step *s, const struct initrd_marker *generic,
                       struct strbuf *err) {
        const struct spec *spec = p->spec;
        const struct spec_boot *b = s->boot;
        _cleanup_free_ char *cmdline = NULL;
        _cleanup_strbuf_ struct strbuf cfg = STRBUF_INIT, sel = STRBUF_INIT;
        int r = plan_kernel_cmdline(spec, &cmdline);
        if (r < 0 || (r = bootloader_grub_cfg(cmdline, b->timeout, &cfg)) < 0 || (r = bootloader_debconf(p, s, &sel)) < 0)
                return r;
        if ((r = target_write("/etc/default/grub.d/kiln.cfg", strbuf_str(&cfg))) < 0)
                return strbuf_adds(err, "cannot write /etc/default/grub.d/kiln.cfg in the target"), r;

        const char *update_initramfs[] = { kiln_paths.t_update_initramfs, "-u", "-k", "all", NULL };
        if (!generic && (r = run_in_target(update_initramfs, NULL, err)) < 0)
                return r;
        const char *debconf[] = { kiln_paths.t_debconf_set, NULL };
        if ((r = run_in_target(debconf, strbuf_str(&sel), err)) < 0)
                return r;
        r = b->firmware == SPEC_FIRMWARE_BIOS ? bios_install(s, err)
          : b->firmware == SPEC_FIRMWARE_UEFI ? efi_install(NULL, err) : both_install(s, err);
        if (r < 0)
                return r;
        /* The image's generic initramfs: kiln knows the kernels (the marker),
         * the root and the command line; update-grub would find the same after
         * a minute of grub-probe over md, LUKS and LVM under emulation. */
        if (generic)
                return write_grub_menu(p, generic, err);
        const char *update[] = { kiln_paths.t_update_grub, NULL };
        return run_in_target(update, NULL, err);
}

int bootloader_step(const struct plan *p, const struct plan_step *s, struct strbuf *err) {
        const char *root = kiln_paths.target;
        _cleanup_(initrd_marker_free) struct initrd_marker m = { 0 };
        int r = initrd_generic_install(p, &m, err);
        bool generic = r == 0;
        if (r == -ENOENT)
                log_info("image has no generic initramfs marker at %s: running update-initramfs and update-grub in the target",
                         kiln_paths.generic_initramfs);
        else if (r < 0)
                return r;
        else
                log_info("appended this node's crypttab and mdadm.conf to the image's generic initramfs");
        if ((r = chroot_enter(root, err)) < 0)
                return r;
        r = bootloader_install(p, s, generic ? &m : NULL, err);
        int q = chroot_leave(root);
        if (r < 0)
                return r;
        if (q < 0)
                return strbuf_addf(err, "cannot unbind /dev /proc /sys /run from %s", root), q;
        return 0;
}
