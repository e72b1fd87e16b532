/* Reading and writing the progress record, emptying the root for a new
 * image (record.h). */
#include "record.h"

#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

int resume_record_save(const struct resume_record *rec, const char *path) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = resume_record_to_json(rec, &sb);
        return r < 0 ? r : write_file_atomic(path, sb.buf, sb.len);
}

int resume_record_load(const char *path, struct resume_record *ret) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_full_file(path, RESUME_RECORD_MAX_BYTES, &data, &len);
        if (r < 0)
                return r;
        return resume_record_from_json(data, len, ret);
}

/* ---- emptying the root for a new image ---- */

static int clean_dir(int dfd, dev_t dev, bool top, unsigned *removed) {
        _cleanup_closedir_ DIR *d = fdopendir(dfd);
        if (!d) {
                int r = -errno;
                close(dfd);
                return r;
        }
        int r = 0;
        for (struct dirent *e; (errno = 0, e = readdir(d));) {
                if (streq(e->d_name, ".") || streq(e->d_name, "..") || (top && streq(e->d_name, "lost+found")))
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
                if (st.st_dev != dev)
                        continue;       /* another filesystem's mount point: kept */
                if (S_ISDIR(st.st_mode)) {
                        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return -errno;
                        if ((r = clean_dir(sub, dev, false, removed)) < 0)
                                return r;
                        if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) < 0) {
                                if (errno != ENOTEMPTY && errno != EBUSY)
                                        return -errno;
                                continue;       /* it leads to a mount point */
                        }
                } else if (unlinkat(dirfd(d), e->d_name, 0) < 0)
                        return -errno;
                (*removed)++;
        }
        return errno ? -errno : 0;
}

int resume_clean_root(const char *target, unsigned *ret_removed) {
        struct stat st;
        int fd = fd_stat(open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC), &st);
        if (fd < 0)
                return fd;
        unsigned n = 0;
        int r = clean_dir(fd, st.st_dev, true, &n);
        if (r < 0)
                return r;
        if (ret_removed)
                *ret_removed = n;
        return 0;
}
