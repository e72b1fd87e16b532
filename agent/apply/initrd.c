#include "initrd.h"

#include "configure.h"
#include "paths.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#define MARKER_MAX 4096         /* a few kernels, one short line each */
#define CPIO_MTIME 1700000000   /* fixed: the same plan gives the same bytes */

void initrd_marker_free(struct initrd_marker *m) {
        for (size_t i = 0; i < m->n; i++)
                free(m->versions[i]);
        free(m->versions);
        free(m->sizes);
        *m = (struct initrd_marker) { 0 };
}

static bool version_ok(const char *v, size_t n) {
        if (n == 0 || n > 64 || v[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((v[i] >= '0' && v[i] <= '9') || (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
                      v[i] == '.' || v[i] == '-' || v[i] == '_' || v[i] == '+'))
                        return false;
        return true;
}

int initrd_marker_parse(const char *text, struct initrd_marker *m, struct strbuf *err) {
        *m = (struct initrd_marker) { 0 };
        unsigned line = 0;
        for (const char *p = text; *p;) {
                const char *eol = strchrnul(p, '\n');
                line++;
                const char *sp = memchr(p, ' ', (size_t) (eol - p));
                if (eol == p || *p == '#') {
                        p = *eol ? eol + 1 : eol;
                        continue;
                }
                char *end = NULL;
                errno = 0;
                unsigned long long size = sp && sp[1] >= '0' && sp[1] <= '9' ? strtoull(sp + 1, &end, 10) : 0;
                if (!sp || !version_ok(p, (size_t) (sp - p)) || !end || end != eol || errno != 0 || size == 0) {
                        initrd_marker_free(m);
                        return strbuf_errorf(err, -EINVAL, "%s line %u: not 'KERNEL-VERSION SIZE'",
                                             kiln_paths.generic_initramfs, line);
                }
                char **v = reallocarray(m->versions, m->n + 1, sizeof *v);
                if (v)
                        m->versions = v;
                unsigned long long *s = v ? reallocarray(m->sizes, m->n + 1, sizeof *s) : NULL;
                if (s)
                        m->sizes = s;
                char *name = s ? strndup(p, (size_t) (sp - p)) : NULL;
                if (!name) {
                        initrd_marker_free(m);
                        return -ENOMEM;
                }
                m->versions[m->n] = name;
                m->sizes[m->n++] = size;
                p = *eol ? eol + 1 : eol;
        }
        if (m->n == 0)
                return strbuf_errorf(err, -EINVAL, "%s names no kernel", kiln_paths.generic_initramfs);
        return 0;
}

static void archive_write_freep(struct archive **a) { if (*a) archive_write_free(*a); }
static void archive_entry_freep(struct archive_entry **e) { if (*e) archive_entry_free(*e); }

static la_ssize_t cpio_write(struct archive *a, void *data, const void *buf, size_t n) {
        (void) a;
        return strbuf_add(data, buf, n) < 0 ? -1 : (la_ssize_t) n;
}

static int cpio_add(struct archive *a, const char *name, mode_t mode, const char *text) {
        _cleanup_(archive_entry_freep) struct archive_entry *e = archive_entry_new();
        if (!e)
                return -ENOMEM;
        size_t n = text ? strlen(text) : 0;
        archive_entry_set_pathname(e, name);
        archive_entry_set_mode(e, mode);
        archive_entry_set_uid(e, 0);
        archive_entry_set_gid(e, 0);
        archive_entry_set_mtime(e, CPIO_MTIME, 0);
        archive_entry_set_nlink(e, S_ISDIR(mode) ? 2 : 1);
        archive_entry_set_size(e, (la_int64_t) n);
        if (archive_write_header(a, e) != ARCHIVE_OK)
                return -EIO;
        if (n && archive_write_data(a, text, n) != (la_ssize_t) n)
                return -EIO;
        return 0;
}

int initrd_node_cpio(const char *crypttab, const char *mdadm_conf, struct strbuf *out) {
        _cleanup_(archive_write_freep) struct archive *a = archive_write_new();
        if (!a)
                return -ENOMEM;
        /* newc, the only format the kernel unpacks; no block padding: the kernel
         * needs none after the trailer */
        if (archive_write_set_format_cpio_newc(a) != ARCHIVE_OK || archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK ||
            archive_write_open(a, out, NULL, cpio_write, NULL) != ARCHIVE_OK)
                return -EIO;
        int r = 0;
        if (crypttab && (r = cpio_add(a, "cryptroot", S_IFDIR | 0755, NULL)) == 0)
                r = cpio_add(a, "cryptroot/crypttab", S_IFREG | 0644, crypttab);
        if (r == 0 && mdadm_conf && (r = cpio_add(a, "etc", S_IFDIR | 0755, NULL)) == 0 &&
            (r = cpio_add(a, "etc/mdadm", S_IFDIR | 0755, NULL)) == 0)
                r = cpio_add(a, "etc/mdadm/mdadm.conf", S_IFREG | 0644, mdadm_conf);
        /* with LUKS the link-up, with md the degraded start (configure.h),
         * and the ORDER file that runs them: Debian 12's /init sources
         * scripts/<dir>/ORDER of every script directory there is
         * (run_scripts; without it /init dies and the kernel panics: seen in
         * the rig), in the form mkinitramfs writes. The generic initramfs of
         * kiln's images has no init-premount scripts, so this ORDER drops
         * none. The link-up first: the degraded start may wait 20 s. */
        const char *scripts[2][2] = {};
        size_t n_scripts = 0;
        if (crypttab)
                scripts[n_scripts][0] = CONFIGURE_LINKS_UP_INITRD, scripts[n_scripts++][1] = configure_links_up_script();
        if (mdadm_conf)
                scripts[n_scripts][0] = CONFIGURE_MD_START_INITRD, scripts[n_scripts++][1] = configure_md_start_script();
        _cleanup_strbuf_ struct strbuf order = STRBUF_INIT;
        if (r == 0 && n_scripts > 0 && (r = cpio_add(a, "scripts", S_IFDIR | 0755, NULL)) == 0)
                r = cpio_add(a, "scripts/init-premount", S_IFDIR | 0755, NULL);
        for (size_t i = 0; r == 0 && i < n_scripts; i++)
                if ((r = cpio_add(a, scripts[i][0], S_IFREG | 0755, scripts[i][1])) == 0)
                        r = strbuf_addf(&order, "/%s \"$@\"\n[ -e /conf/param.conf ] && . /conf/param.conf\n", scripts[i][0]);
        if (r == 0 && n_scripts > 0)
                r = cpio_add(a, "scripts/init-premount/ORDER", S_IFREG | 0644, strbuf_str(&order));
        if (r == 0 && archive_write_close(a) != ARCHIVE_OK)
                r = -EIO;
        return r;
}

static int write_all(int fd, const void *buf, size_t n) {
        for (const char *b = buf; n > 0;) {
                ssize_t w = write(fd, b, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? -errno : -EIO;
                b += w;
                n -= (size_t) w;
        }
        return 0;
}

static int append_to(const char *path, unsigned long long size, const struct strbuf *cpio, struct strbuf *err) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return strbuf_errorf(err, -errno, "cannot open %s", path);
        if (!S_ISREG(st.st_mode) || (unsigned long long) st.st_size < size)
                return strbuf_errorf(err, -EINVAL, "%s is %lld bytes, %s says the image made %llu",
                                     path, (long long) st.st_size, kiln_paths.generic_initramfs, size);
        static const char zeros[4];
        size_t pad = (size_t) ((4 - size % 4) % 4);
        if (ftruncate(fd, (off_t) size) < 0 || lseek(fd, 0, SEEK_END) < 0)
                return strbuf_errorf(err, -errno, "cannot cut %s back to %llu bytes", path, size);
        int r = write_all(fd, zeros, pad);
        if (r == 0)
                r = write_all(fd, cpio->buf, cpio->len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r < 0)
                return strbuf_errorf(err, r, "cannot append the node's files to %s", path);
        return 0;
}

int initrd_generic_install(const struct plan *p, struct initrd_marker *ret, struct strbuf *err) {
        char path[PATH_MAX];
        _cleanup_free_ char *text = NULL;
        int r = configure_target_path(kiln_paths.generic_initramfs, path);
        if (r < 0)
                return r;
        if ((r = read_full_file(path, MARKER_MAX, &text, NULL)) < 0)
                return r == -ENOENT ? r : strbuf_errorf(err, r, "cannot read %s", path);
        struct initrd_marker m;
        if ((r = initrd_marker_parse(text, &m, err)) < 0)
                return r;
        bool has_luks = false, has_md = false;
        for (size_t i = 0; i < p->n_steps; i++) {
                has_luks |= plan_step_made(&p->steps[i]) == PLAN_LUKS_FORMAT;
                has_md |= plan_step_made(&p->steps[i]) == PLAN_MD_CREATE;
        }
        _cleanup_strbuf_ struct strbuf crypttab = STRBUF_INIT, mdconf = STRBUF_INIT, cpio = STRBUF_INIT;
        if (has_luks && (r = configure_crypttab_initramfs(p, &crypttab)) < 0)
                (void) strbuf_errorf(err, r, "the initramfs crypttab");
        if (r == 0 && has_md && (r = configure_mdadm_conf(p, &mdconf, err)) < 0)
                (void) strbuf_errorf(err, r, "the initramfs mdadm.conf: %s", strbuf_str(err));
        if (r == 0 && (r = initrd_node_cpio(has_luks ? strbuf_str(&crypttab) : NULL, has_md ? strbuf_str(&mdconf) : NULL,
                                            &cpio)) < 0)
                (void) strbuf_errorf(err, r, "cannot make the node's initramfs archive");
        for (size_t i = 0; r == 0 && i < m.n; i++) {
                char rel[PATH_MAX];
                if ((size_t) snprintf(rel, sizeof rel, "%s/initrd.img-%s", kiln_paths.t_boot, m.versions[i]) >= sizeof rel ||
                    (r = configure_target_path(rel, path)) < 0)
                        r = -ENAMETOOLONG;
                else
                        r = append_to(path, m.sizes[i], &cpio, err);
        }
        if (r == 0 && ret) {
                *ret = m;
                return 0;
        }
        initrd_marker_free(&m);
        return r;
}
