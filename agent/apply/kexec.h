/* Booting the installed system without a reboot through the firmware: the
 * kernel and initrd of the mounted target, loaded with kexec_file_load(2)
 * (Debian's kernel has CONFIG_KEXEC_FILE), then reboot(LINUX_REBOOT_CMD_KEXEC).
 * Silent module. */
#pragma once
#include "util.h"

struct kexec_image {
        int kernel_fd, initrd_fd;       /* -1 when closed */
        char *kernel, *initrd;          /* as found in the root ("/vmlinuz -> boot/vmlinuz-6.1.0-28-amd64") */
};
#define KEXEC_IMAGE_INIT { .kernel_fd = -1, .initrd_fd = -1 }

/* Open the installed kernel and initrd in root: /vmlinuz and /initrd.img
 * (Debian's symlinks), else /boot/vmlinuz and /boot/initrd.img, every
 * symlink resolved inside root (openat2 RESOLVE_IN_ROOT). -ENOENT when
 * either is missing. */
int kexec_image_open(const char *root, struct kexec_image *ret);
/* Closes the files (before their filesystem is unmounted); idempotent. */
void kexec_image_close(struct kexec_image *img);
void kexec_image_done(struct kexec_image *img);

/* kexec_file_load(kernel, initrd, cmdline): the kernel keeps a copy, so the
 * files may be closed and their filesystem unmounted afterwards. */
int kexec_image_load(const struct kexec_image *img, const char *cmdline);
/* Forget a loaded image (kexec_file_load with KEXEC_FILE_UNLOAD). */
int kexec_unload(void);
/* Boot the loaded image: does not return on success. */
int kexec_reboot(void);
