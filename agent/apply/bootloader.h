/* The installed system boots by itself: a chroot of the mounted target
 * (with /dev, /proc, /sys and /run bound into it) in which the target's own
 * tools rebuild its initramfs and install GRUB on every boot disk.
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

/* The text of /etc/default/grub.d/kiln.cfg: GRUB_CMDLINE_LINUX and, when a
 * console=ttyS<N>[,<speed>] argument is given, GRUB's own serial terminal. */
int bootloader_grub_cfg(const char *cmdline, struct strbuf *out);

/* debconf selections for the target's grub packages: grub-pc/install_devices
 * (every boot disk, by its /dev/disk/by-id name where it has one) so upgrades
 * reinstall GRUB on each; for UEFI the extra removable path and no NVRAM. */
int bootloader_debconf(const struct plan *p, const struct plan_step *s, struct strbuf *out);

/* Run the boot-loader step s of plan p in the target (kiln_paths.target),
 * already entered with chroot_enter(): the target's update-initramfs when
 * initramfs is set (an image without a generic initramfs, initrd.h), then
 * GRUB. */
int bootloader_install(const struct plan *p, const struct plan_step *s, bool initramfs, struct strbuf *err);
