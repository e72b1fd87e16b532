/* The installed system boots by itself: a chroot of the mounted target
 * (with /dev, /proc, /sys and /run bound into it) in which the target's own
 * tools install GRUB on every boot disk.
 * Every helper runs as argv through exec.c (exec_options.root), never a shell. */
#pragma once
#include "plan.h"
#include "strbuf.h"

#include <stdbool.h>

/* Bind /dev, /proc, /sys (recursively) and /run into root; on failure what
 * was bound is undone. chroot_leave() undoes it (latest first, lazily for
 * the recursive ones) and accepts a root never entered. */
int chroot_enter(const char *root, struct strbuf *err);
int chroot_leave(const char *root);

/* The text of /etc/default/grub.d/kiln.cfg: GRUB_CMDLINE_LINUX, GRUB_TIMEOUT
 * and GRUB_RECORDFAIL_TIMEOUT (both boot.timeout) and, when a
 * console=ttyS<N>[,<speed>] argument is given, GRUB's own serial terminal. */
int bootloader_grub_cfg(const char *cmdline, unsigned timeout, struct strbuf *out);

/* debconf selections for the target's grub packages: grub-pc/install_devices
 * (every boot disk, by its /dev/disk/by-id name where it has one) so upgrades
 * reinstall GRUB on each; for UEFI the extra removable path and no NVRAM. */
int bootloader_debconf(const struct plan *p, const struct plan_step *s, struct strbuf *out);

/* /boot/grub/grub.cfg for the kernels of a generic initramfs: one entry per
 * version, newest first (strverscmp), "linux KDIR/vmlinuz-V CMDLINE" and
 * "initrd KDIR/initrd.img-V"; KDIR "" for a /boot of its own, "/boot" when /
 * holds it; cmdline the whole line (plan_installed_cmdline); GRUB's serial
 * terminal as bootloader_grub_cfg() sets it; the menu waits timeout seconds
 * (boot.timeout), as GRUB_TIMEOUT has Debian's update-grub write it. */
int bootloader_grub_menu(const char *cmdline, unsigned timeout, const char *kdir, char *const *versions, size_t n,
                         struct strbuf *out);

/* Run the boot-loader step s of plan p in the target (kiln_paths.target),
 * already entered with chroot_enter(): grub-install on the first boot disk
 * and its boot code on the others (BIOS: copied where the BIOS boot
 * partition lies as on the first disk, else grub-bios-setup), grub-install at the removable
 * path (UEFI), then grub.cfg. generic: the image's generic initramfs marker
 * (initrd.h), whose kernels kiln writes grub.cfg for; NULL (an image without
 * one) runs the target's update-initramfs first and update-grub last. */
struct initrd_marker;
int bootloader_install(const struct plan *p, const struct plan_step *s, const struct initrd_marker *generic,
                       struct strbuf *err);

/* The whole step, as apply runs it: the node's files into the image's
 * generic initramfs (initrd.h; or, for an image without one, the target's
 * update-initramfs, and the log says so), then chroot_enter(),
 * bootloader_install() and chroot_leave(), also on failure. */
int bootloader_step(const struct plan *p, const struct plan_step *s, struct strbuf *err);
