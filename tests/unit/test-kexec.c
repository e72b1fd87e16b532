/* The installed kernel and initrd as kiln boot finds them in a mounted root
 * (agent/apply/kexec.h): Debian's /vmlinuz and /initrd.img links, resolved
 * inside the root (an absolute link points into the root, never out of
 * it), /boot/vmlinuz as the fallback, -ENOENT without either. No kexec. */
#include "kexec.h"
#include "tap.h"

#include <fcntl.h>
#include <sys/stat.h>

static char root[] = "/tmp/kiln-test-kexec.XXXXXX";

static void put(const char *rel, const char *text) {
        _cleanup_free_ char *p = strdupf("%s/%s", root, rel);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        CHECK_INT(write(fd, text, strlen(text)), (long) strlen(text));
        close(fd);
}

static void link_(const char *target, const char *rel) {
        _cleanup_free_ char *p = strdupf("%s/%s", root, rel);
        unlink(p);
        CHECK_INT(symlink(target, p), 0);
}

static void first_bytes(int fd, const char *want) {
        char buf[32] = {};
        CHECK(pread(fd, buf, sizeof buf - 1, 0) > 0);
        CHECK_STR(buf, want);
}

int main(void) {
        CHECK(mkdtemp(root));
        _cleanup_free_ char *boot = strdupf("%s/boot", root);
        CHECK_INT(mkdir(boot, 0755), 0);
        struct kexec_image img = KEXEC_IMAGE_INIT;
        CHECK_INT(kexec_image_open(root, &img), -ENOENT);

        /* the fallback: /boot/vmlinuz and /boot/initrd.img */
        put("boot/vmlinuz-6.1.0-t", "kernel\n");
        put("boot/initrd.img-6.1.0-t", "initrd\n");
        link_("vmlinuz-6.1.0-t", "boot/vmlinuz");
        link_("initrd.img-6.1.0-t", "boot/initrd.img");
        CHECK_INT(kexec_image_open(root, &img), 0);
        CHECK_STR(img.kernel, "/boot/vmlinuz -> vmlinuz-6.1.0-t");
        CHECK_STR(img.initrd, "/boot/initrd.img -> initrd.img-6.1.0-t");
        first_bytes(img.kernel_fd, "kernel\n");
        kexec_image_done(&img);
        CHECK_INT(img.kernel_fd, -1);

        /* Debian's links in /, one of them absolute: resolved inside the root */
        link_("boot/vmlinuz-6.1.0-t", "vmlinuz");
        link_("/boot/initrd.img-6.1.0-t", "initrd.img");
        CHECK_INT(kexec_image_open(root, &img), 0);
        CHECK_STR(img.kernel, "/vmlinuz -> boot/vmlinuz-6.1.0-t");
        CHECK_STR(img.initrd, "/initrd.img -> /boot/initrd.img-6.1.0-t");
        first_bytes(img.initrd_fd, "initrd\n");
        kexec_image_done(&img);

        /* a link out of the root (/etc/hostname of this machine) stays inside: not found there */
        link_("/etc/hostname", "vmlinuz");
        { _cleanup_free_ char *p = strdupf("%s/boot/vmlinuz", root); unlink(p); }
        CHECK_INT(kexec_image_open(root, &img), -ENOENT);
        link_("../../../../../../etc/hostname", "vmlinuz");
        CHECK_INT(kexec_image_open(root, &img), -ENOENT);
        CHECK(!img.kernel && img.kernel_fd < 0);

        _cleanup_free_ char *cmd = strdupf("rm -rf '%s'", root);
        CHECK_INT(system(cmd), 0);
        return TEST_DONE();
}
