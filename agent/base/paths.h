/* Every helper program and system path kiln touches, in one table that tests
 * can point elsewhere (KILN_<NAME> environment variables override each entry,
 * e.g. KILN_SYSFS=/tmp/rec/sys). Ignition keeps the same in distro.go. */
#pragma once

#include <stddef.h>

struct kiln_paths {
        const char *sysfs;          /* /sys */
        const char *devfs;          /* /dev */
        const char *procfs;         /* /proc */
        const char *mdadm;
        const char *lvm;
        const char *mkfs_xfs;
        const char *mkfs_ext4;
        const char *mkswap;
        const char *mkfs_vfat;
        /* run inside the target (paths in its root, through a chroot) */
        const char *t_clevis;               /* /usr/bin/clevis */
        const char *t_update_initramfs;     /* /usr/sbin/update-initramfs */
        const char *t_grub_install;         /* /usr/sbin/grub-install */
        const char *t_grub_bios_setup;      /* /usr/lib/grub/i386-pc/grub-bios-setup (Debian) */
        const char *t_update_grub;          /* /usr/sbin/update-grub */
        const char *t_grub_editenv;         /* /usr/bin/grub-editenv */
        const char *t_debconf_set;          /* /usr/bin/debconf-set-selections */
        const char *t_useradd;              /* /usr/sbin/useradd: the CloudStack login, when the image lacks it */
        const char *t_sshd;                 /* /usr/sbin/sshd (only looked for: addHost logs in over SSH) */
        const char *t_boot;                 /* /boot: the kernels and their initrd.img-VERSION */
        const char *generic_initramfs;      /* /usr/lib/kiln/generic-initramfs, in the target: the image's
                                             * initramfs boots any layout (apply/initrd.h); read by
                                             * initramfs/base-image/generic-initramfs.sh too */
        const char *t_bootcount;            /* /boot/kiln/bootcount: the installed system's boot counter
                                             * (plan/bootcount.h), written by its `kiln bootcount`, read by
                                             * kiln's look at a finished node (under target) */
        const char *t_sudo;                 /* /usr/bin/sudo (only looked for: CloudStack's setup runs it) */
        const char *self_exe;       /* kiln itself, copied to the installed system for its first boot:
                                     * /proc/self/exe */
        const char *target;         /* where the new root is mounted: /target */
        const char *run_dir;        /* state, resume markers, report: /run/kiln */
        const char *enlist_key;     /* the enlist HMAC key, put into the initramfs by the boot server:
                                     * /etc/kiln/enlist.key */
        /* the installed system's own, for its storage check at first boot (apply/health.h) */
        const char *systemd_booted; /* /run/systemd/system: systemd runs (sd_booted(3)'s test) */
        const char *systemctl;      /* /usr/bin/systemctl */
        const char *journalctl;     /* /usr/bin/journalctl */
        const char *systemd_escape; /* /usr/bin/systemd-escape: unit names from paths */
        const char *netif_links;    /* /run/systemd/netif/links: systemd-networkd's state of each link,
                                     * a file per ifindex (apply/netheal.h) */
};

extern struct kiln_paths kiln_paths;

/* The names of the device nodes kiln makes, under kiln_paths.devfs: the one
 * rule for each (-ENOMEM, or 0 and *ret to free). */
int paths_md(const char *name, char **ret);                     /* /dev/md/NAME */
int paths_mapper(const char *name, char **ret);                 /* /dev/mapper/NAME */
int paths_lv(const char *vg, const char *lv, char **ret);       /* /dev/VG/LV */
/* A partition of a disk, named from the disk's path (any directory):
 * /dev/vda + 1 → /dev/vda1; /dev/nvme0n1 + 1 → /dev/nvme0n1p1. -EINVAL for "". */
int paths_partition(const char *disk, unsigned number, char **ret);

/* Apply KILN_* environment overrides; called once from main(). */
void paths_init(void);

/* name in run_dir (made 0700 if missing) replaced atomically with buf; its
 * path in *ret_path when ret_path is not NULL. For kiln's own state files:
 * the CA bundles (public), the finish for /init. */
int run_file_write(const char *name, const char *buf, size_t len, char **ret_path);
