/* The sink of `kiln fetch`: standard output or a file renamed into place
 * (fetch_file.h). */
#include "fetch_file.h"

#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>

static int fd_write(const void *data, size_t len, void *userdata) {
        struct fetch_file *s = userdata;
        const char *p = data;
        while (len > 0) {
                ssize_t n = write(s->fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

static int fd_restart(void *userdata) {
        struct fetch_file *s = userdata;
        if (lseek(s->fd, 0, SEEK_SET) < 0 || ftruncate(s->fd, 0) < 0)
                return -errno;
        return 0;
}

/* "DIR/.BASE.XXXXXX" beside path, created 0600, O_CLOEXEC. */
static int tmpfile_beside(const char *path, char **ret_path, int *ret_fd) {
        _cleanup_free_ char *d = strdup(path), *b = strdup(path);
        if (!d || !b)
                return -ENOMEM;
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s/.%s.XXXXXX", dirname(d), basename(b)) < 0)
                return -ENOMEM;
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_path = TAKE_PTR(tmp);
        *ret_fd = fd;
        return 0;
}

int fetch_file_open(const char *path, struct fetch_file *ret) {
        *ret = (struct fetch_file) { .fd = STDOUT_FILENO, .path = path };
        if (path) {
                int r = tmpfile_beside(path, &ret->tmp, &ret->fd);
                if (r < 0) {
                        ret->fd = -1;
                        return r;
                }
        }
        ret->seekable = lseek(ret->fd, 0, SEEK_CUR) >= 0;
        /* A pipe cannot start over: then fetch drops the repeated bytes itself. */
        ret->sink = (struct fetch_sink) { .write = fd_write, .restart = ret->seekable ? fd_restart : NULL, .userdata = ret };
        return 0;
}

int fetch_file_commit(struct fetch_file *f, bool *ret_renaming) {
        *ret_renaming = false;
        if (!f->path)
                return 0;
        mode_t mask = umask(0);
        umask(mask);
        if (fchmod(f->fd, 0666 & ~mask) < 0 || fsync(f->fd) < 0)
                return -errno;
        if (rename(f->tmp, f->path) < 0) {
                *ret_renaming = true;
                return -errno;
        }
        free(TAKE_PTR(f->tmp));
        return 0;
}

void fetch_file_done(struct fetch_file *f) {
        if (f->path && f->fd >= 0)
                close(f->fd);
        f->fd = -1;
        if (f->tmp) {
                (void) unlink(f->tmp);
                free(TAKE_PTR(f->tmp));
        }
}
