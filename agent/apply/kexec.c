#include "kexec.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/kexec.h>
#include <linux/openat2.h>
#include <linux/reboot.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef KEXEC_FILE_UNLOAD
#define KEXEC_FILE_UNLOAD 0x00000001
#endif

/* name inside root, resolved there; *ret_shown: "name -> target" for a symlink */
static int open_in_root(int rootfd, const char *name, int *ret_fd, char **ret_shown) {
        struct open_how how = { .flags = O_RDONLY | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
        struct stat st;
        int fd = fd_stat((int) syscall(SYS_openat2, rootfd, name, &how, sizeof how), &st);
        if (fd < 0)
                return fd;
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return -EISDIR;
        }
        char link[PATH_MAX];
        ssize_t n = readlinkat(rootfd, name, link, sizeof link - 1);
        char *shown = n > 0 ? strdupf("/%s -> %.*s", name, (int) n, link) : strdupf("/%s", name);
        if (!shown) {
                close(fd);
                return -ENOMEM;
        }
        *ret_fd = fd;
        *ret_shown = shown;
        return 0;
}

static int open_first(int rootfd, const char *const *names, int *ret_fd, char **ret_shown) {
        int r = -ENOENT;
        for (const char *const *n = names; *n; n++)
                if ((r = open_in_root(rootfd, *n, ret_fd, ret_shown)) == 0)
                        return 0;
        return r;
}

int kexec_image_open(const char *root, struct kexec_image *ret) {
        static const char *const kernels[] = { "vmlinuz", "boot/vmlinuz", NULL };
        static const char *const initrds[] = { "initrd.img", "boot/initrd.img", NULL };
        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return -errno;
        struct kexec_image img = KEXEC_IMAGE_INIT;
        int r = open_first(rootfd, kernels, &img.kernel_fd, &img.kernel);
        if (r == 0)
                r = open_first(rootfd, initrds, &img.initrd_fd, &img.initrd);
        close(rootfd);
        if (r < 0) {
                kexec_image_done(&img);
                return r;
        }
        *ret = img;
        return 0;
}

void kexec_image_close(struct kexec_image *img) {
        if (img->kernel_fd >= 0)
                close(img->kernel_fd);
        if (img->initrd_fd >= 0)
                close(img->initrd_fd);
        img->kernel_fd = img->initrd_fd = -1;
}

void kexec_image_done(struct kexec_image *img) {
        if (!img)
                return;
        kexec_image_close(img);
        free(img->kernel);
        free(img->initrd);
        *img = (struct kexec_image) KEXEC_IMAGE_INIT;
}

int kexec_image_load(const struct kexec_image *img, const char *cmdline) {
        if (img->kernel_fd < 0 || img->initrd_fd < 0 || !cmdline)
                return -EBADF;
        /* the length counts the terminating NUL */
        if (syscall(SYS_kexec_file_load, img->kernel_fd, img->initrd_fd, strlen(cmdline) + 1, cmdline, 0UL) < 0)
                return -errno;
        return 0;
}

int kexec_unload(void) {
        if (syscall(SYS_kexec_file_load, -1, -1, 0UL, NULL, (unsigned long) KEXEC_FILE_UNLOAD) < 0)
                return -errno;
        return 0;
}

int kexec_reboot(void) {
        sync();
        if (reboot(LINUX_REBOOT_CMD_KEXEC) < 0)
                return -errno;
        return 0;
}
