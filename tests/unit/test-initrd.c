/* The generic initramfs's node part (apply/initrd.h): the image's marker,
 * the newc archive kiln appends (read back with libarchive, as the kernel
 * would unpack it) and the append itself on a scratch target: cut back to
 * the image's size, padded to 4 bytes, the same bytes on a rerun, refused
 * without a write when the initrd is shorter than the marker says. */
#include "configure.h"
#include "initrd.h"
#include "paths.h"
#include "tap.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

static void test_marker(void) {
        struct initrd_marker m;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(initrd_marker_parse("# kiln\n6.1.0-57-amd64 1234\n6.1.0-58-amd64 99\n", &m, &err), 0);
        CHECK_INT(m.n, 2);
        CHECK_STR(m.versions[1], "6.1.0-58-amd64");
        CHECK_U64(m.sizes[0], 1234);
        initrd_marker_free(&m);
        const char *bad[] = { "", "# only a comment\n", "6.1.0 \n", "6.1.0 12x\n", "../x 12\n", "6.1.0 0\n", "a/b 12\n",
                              "6.1.0 -1\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                strbuf_reset(&err);
                CHECK_INT(initrd_marker_parse(bad[i], &m, &err), -EINVAL);
                CHECK(strstr(strbuf_str(&err), kiln_paths.generic_initramfs) != NULL);
                CHECK_INT(m.n, 0);
        }
}

static void test_cpio(void) {
        _cleanup_strbuf_ struct strbuf c = STRBUF_INIT;
        CHECK_INT(initrd_node_cpio("crypt0 UUID=x none luks,initramfs\n", "ARRAY /dev/md/a UUID=y\n", &c), 0);
        CHECK(c.len > 6 && memcmp(c.buf, "070701", 6) == 0);
        struct archive *a = archive_read_new();
        archive_read_support_format_cpio(a);
        CHECK_INT(archive_read_open_memory(a, c.buf, c.len), ARCHIVE_OK);
        struct archive_entry *e;
        /* with LUKS the link-up, with md the degraded start, and the ORDER
         * file /init sources to run them, the link-up first (the generic
         * initramfs has no init-premount scripts) */
        const char *want[] = { "cryptroot", "cryptroot/crypttab", "etc", "etc/mdadm", "etc/mdadm/mdadm.conf",
                               "scripts", "scripts/init-premount", CONFIGURE_LINKS_UP_INITRD,
                               CONFIGURE_MD_START_INITRD, "scripts/init-premount/ORDER" };
        const char *text[] = { [1] = "crypt0 UUID=x none luks,initramfs\n", [4] = "ARRAY /dev/md/a UUID=y\n",
                               [7] = configure_links_up_script(), [8] = configure_md_start_script(),
                               [9] = "/scripts/init-premount/kiln-links-up \"$@\"\n"
                                     "[ -e /conf/param.conf ] && . /conf/param.conf\n"
                                     "/scripts/init-premount/kiln-md-degraded \"$@\"\n"
                                     "[ -e /conf/param.conf ] && . /conf/param.conf\n" };
        size_t n = 0;
        char body[4096];
        while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
                CHECK(n < ELEMENTSOF(want) && streq(archive_entry_pathname(e), want[n]));
                if (n < ELEMENTSOF(text) && text[n]) {
                        la_ssize_t k = archive_read_data(a, body, sizeof body - 1);
                        CHECK(k > 0);
                        body[k > 0 ? k : 0] = 0;
                        CHECK_STR(body, text[n]);
                        CHECK_INT(archive_entry_perm(e), n == 7 || n == 8 ? 0755 : 0644);
                }
                n++;
        }
        CHECK_INT(n, ELEMENTSOF(want));
        archive_read_free(a);
        /* LUKS without md: the link-up alone */
        strbuf_reset(&c);
        CHECK_INT(initrd_node_cpio("crypt0 UUID=x none luks,initramfs\n", NULL, &c), 0);
        a = archive_read_new();
        archive_read_support_format_cpio(a);
        CHECK_INT(archive_read_open_memory(a, c.buf, c.len), ARCHIVE_OK);
        const char *want1[] = { "cryptroot", "cryptroot/crypttab", "scripts", "scripts/init-premount",
                                CONFIGURE_LINKS_UP_INITRD, "scripts/init-premount/ORDER" };
        n = 0;
        while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
                CHECK(n < ELEMENTSOF(want1) && streq(archive_entry_pathname(e), want1[n]));
                if (n == 5) {
                        la_ssize_t k = archive_read_data(a, body, sizeof body - 1);
                        body[k > 0 ? k : 0] = 0;
                        CHECK_STR(body, "/scripts/init-premount/kiln-links-up \"$@\"\n"
                                        "[ -e /conf/param.conf ] && . /conf/param.conf\n");
                }
                n++;
        }
        CHECK_INT(n, ELEMENTSOF(want1));
        archive_read_free(a);
        strbuf_reset(&c);
        CHECK_INT(initrd_node_cpio(NULL, NULL, &c), 0);      /* a plan with neither: only the trailer */
        CHECK(c.len > 0 && strstr(c.buf + 110, "TRAILER!!!") != NULL);
}

static off_t size_of(const char *p) {
        struct stat st;
        return stat(p, &st) == 0 ? st.st_size : -1;
}

static void test_append(void) {
        char dir[] = "/tmp/kiln-test-initrd.XXXXXX", p[PATH_MAX];
        CHECK(mkdtemp(dir) != NULL);
        kiln_paths.target = dir;
        struct plan empty = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(initrd_generic_install(&empty, NULL, &err), -ENOENT);       /* no marker: nothing */
        snprintf(p, sizeof p, "%s/usr/lib/kiln", dir);
        CHECK_INT(mkdir_p(p), 0);
        snprintf(p, sizeof p, "%s/boot", dir);
        CHECK_INT(mkdir_p(p), 0);
        snprintf(p, sizeof p, "%s%s", dir, kiln_paths.generic_initramfs);
        CHECK_INT(write_file_atomic(p, "6.1.0-57-amd64 10\n", 18), 0);
        snprintf(p, sizeof p, "%s/boot/initrd.img-6.1.0-57-amd64", dir);
        CHECK_INT(write_file_atomic(p, "0123456", 7), 0);
        CHECK_INT(initrd_generic_install(&empty, NULL, &err), -EINVAL);       /* shorter than the image made it */
        CHECK(strstr(strbuf_str(&err), "is 7 bytes") != NULL);
        CHECK_INT(size_of(p), 7);
        CHECK_INT(write_file_atomic(p, "0123456789", 10), 0);
        strbuf_reset(&err);
        CHECK_INT(initrd_generic_install(&empty, NULL, &err), 0);
        _cleanup_strbuf_ struct strbuf c = STRBUF_INIT;
        CHECK_INT(initrd_node_cpio(NULL, NULL, &c), 0);
        CHECK_INT(size_of(p), 12 + (off_t) c.len);
        _cleanup_free_ char *got = NULL;
        size_t len = 0;
        CHECK_INT(read_full_file(p, 1 << 20, &got, &len), 0);
        CHECK(len == 12 + c.len && memcmp(got, "0123456789\0\0", 12) == 0 && memcmp(got + 12, c.buf, c.len) == 0);
        CHECK_INT(initrd_generic_install(&empty, NULL, &err), 0);             /* a rerun: the same file */
        CHECK_INT(size_of(p), 12 + (off_t) c.len);
        unlink(p);
        snprintf(p, sizeof p, "%s%s", dir, kiln_paths.generic_initramfs);
        unlink(p);
        snprintf(p, sizeof p, "rm -rf '%s'", dir);
        CHECK_INT(system(p), 0);
}

int main(void) {
        test_marker();
        test_cpio();
        test_append();
        return TEST_DONE();
}
