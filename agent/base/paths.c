#include "paths.h"
#include "util.h"

#include <stdarg.h>
#include <sys/stat.h>

struct kiln_paths kiln_paths = {
        .sysfs = "/sys",
        .devfs = "/dev",
        .procfs = "/proc",
        .mdadm = "/sbin/mdadm",
        .lvm = "/sbin/lvm",
        .mkfs_xfs = "/sbin/mkfs.xfs",
        .mkfs_ext4 = "/sbin/mkfs.ext4",
        .mkswap = "/sbin/mkswap",
        .mkfs_vfat = "/sbin/mkfs.vfat",
        .t_clevis = "/usr/bin/clevis",
        .t_update_initramfs = "/usr/sbin/update-initramfs",
        .t_grub_install = "/usr/sbin/grub-install",
        .t_grub_bios_setup = "/usr/lib/grub/i386-pc/grub-bios-setup",   /* Debian keeps it there, beside the platform files */
        .t_update_grub = "/usr/sbin/update-grub",
        .t_grub_editenv = "/usr/bin/grub-editenv",
        .t_debconf_set = "/usr/bin/debconf-set-selections",
        .t_useradd = "/usr/sbin/useradd",
        .t_sshd = "/usr/sbin/sshd",
        .t_sudo = "/usr/bin/sudo",
        .t_boot = "/boot",
        .t_bootcount = "/boot/kiln/bootcount",
        .generic_initramfs = "/usr/lib/kiln/generic-initramfs",
        .self_exe = "/proc/self/exe",
        .target = "/target",
        .run_dir = "/run/kiln",
        .enlist_key = "/etc/kiln/enlist.key",
        .systemd_booted = "/run/systemd/system",
        .systemctl = "/usr/bin/systemctl",
        .journalctl = "/usr/bin/journalctl",
        .systemd_escape = "/usr/bin/systemd-escape",
        .netif_links = "/run/systemd/netif/links",
};

static int dev_path(char **ret, const char *fmt, ...) _printf_(2, 3);
static int dev_path(char **ret, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(ret, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int paths_md(const char *name, char **ret) {
        return dev_path(ret, "%s/md/%s", kiln_paths.devfs, name);
}

int paths_mapper(const char *name, char **ret) {
        return dev_path(ret, "%s/mapper/%s", kiln_paths.devfs, name);
}

int paths_lv(const char *vg, const char *lv, char **ret) {
        return dev_path(ret, "%s/%s/%s", kiln_paths.devfs, vg, lv);
}

int paths_partition(const char *disk, unsigned number, char **ret) {
        size_t n = strlen(disk);
        if (n == 0)
                return -EINVAL;
        return dev_path(ret, "%s%s%u", disk, disk[n - 1] >= '0' && disk[n - 1] <= '9' ? "p" : "", number);
}

void paths_init(void) {
        static const struct { const char *env; const char **field; } map[] = {
                { "KILN_SYSFS", &kiln_paths.sysfs },
                { "KILN_DEVFS", &kiln_paths.devfs },
                { "KILN_PROCFS", &kiln_paths.procfs },
                { "KILN_MDADM", &kiln_paths.mdadm },
                { "KILN_LVM", &kiln_paths.lvm },
                { "KILN_MKFS_XFS", &kiln_paths.mkfs_xfs },
                { "KILN_MKFS_EXT4", &kiln_paths.mkfs_ext4 },
                { "KILN_MKSWAP", &kiln_paths.mkswap },
                { "KILN_MKFS_VFAT", &kiln_paths.mkfs_vfat },
                { "KILN_TARGET", &kiln_paths.target },
                { "KILN_T_CLEVIS", &kiln_paths.t_clevis },
                { "KILN_T_UPDATE_INITRAMFS", &kiln_paths.t_update_initramfs },
                { "KILN_T_GRUB_INSTALL", &kiln_paths.t_grub_install },
                { "KILN_T_GRUB_BIOS_SETUP", &kiln_paths.t_grub_bios_setup },
                { "KILN_T_UPDATE_GRUB", &kiln_paths.t_update_grub },
                { "KILN_T_GRUB_EDITENV", &kiln_paths.t_grub_editenv },
                { "KILN_T_DEBCONF_SET", &kiln_paths.t_debconf_set },
                { "KILN_T_USERADD", &kiln_paths.t_useradd },
                { "KILN_T_SSHD", &kiln_paths.t_sshd },
                { "KILN_T_SUDO", &kiln_paths.t_sudo },
                { "KILN_T_BOOT", &kiln_paths.t_boot },
                { "KILN_T_BOOTCOUNT", &kiln_paths.t_bootcount },
                { "KILN_GENERIC_INITRAMFS", &kiln_paths.generic_initramfs },
                { "KILN_SELF_EXE", &kiln_paths.self_exe },
                { "KILN_RUN_DIR", &kiln_paths.run_dir },
                { "KILN_ENLIST_KEY", &kiln_paths.enlist_key },
                { "KILN_SYSTEMD_BOOTED", &kiln_paths.systemd_booted },
                { "KILN_SYSTEMCTL", &kiln_paths.systemctl },
                { "KILN_JOURNALCTL", &kiln_paths.journalctl },
                { "KILN_SYSTEMD_ESCAPE", &kiln_paths.systemd_escape },
                { "KILN_NETIF_LINKS", &kiln_paths.netif_links },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++) {
                const char *v = getenv(map[i].env);
                if (!strempty(v))
                        *map[i].field = v;
        }
}

int run_file_write(const char *name, const char *buf, size_t len, char **ret_path) {
        _cleanup_free_ char *path = NULL;
        if (mkdir(kiln_paths.run_dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (asprintf(&path, "%s/%s", kiln_paths.run_dir, name) < 0)
                return -ENOMEM;
        int r = write_file_atomic(path, buf, len);
        if (r < 0)
                return r;
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}
