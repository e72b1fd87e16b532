#include "util.h"

#include <ctype.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

char **strv_free(char **v) {
        if (!v)
                return NULL;
        for (char **i = v; *i; i++)
                free(*i);
        free(v);
        return NULL;
}

size_t strv_length(char *const *v) {
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

int strv_push(char ***v, char *s) {
        size_t n = strv_length(*v);
        char **nv = realloc(*v, (n + 2) * sizeof(char *));
        if (!nv)
                return -ENOMEM;
        nv[n] = s;
        nv[n + 1] = NULL;
        *v = nv;
        return 0;
}

int strv_pushdup(char ***v, const char *s) {
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        int r = strv_push(v, c);
        if (r < 0)
                free(c);
        return r;
}

bool strv_contains(char *const *v, const char *s) {
        for (size_t i = 0; v && v[i]; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

static char *vstrdupf(const char *fmt, va_list ap) {
        char *s = NULL;
        return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *strdupf(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = vstrdupf(fmt, ap);
        va_end(ap);
        return s;
}

int safe_atou64(const char *s, uint64_t *ret) {
        if (strempty(s) || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        uint64_t v = 0;
        for (const char *p = s; *p; p++) {
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                unsigned d = (unsigned) (*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

/* One rule for every size kiln reads (spec and command line), as parted and
 * systemd spell them: K M G T P and KiB MiB GiB TiB PiB are powers of 1024,
 * KB MB GB TB PB powers of 1000 (a "1 TB" disk holds 10^12 bytes). */
int parse_size(const char *s, uint64_t *ret, unsigned *ret_flags) {
        static const char letters[] = "KMGTP";
        if (strempty(s))
                return -EINVAL;
        size_t n = strlen(s);
        if (n > 64)
                return -EINVAL;
        size_t digits = 0;
        while (digits < n && isdigit((unsigned char) s[digits]))
                digits++;
        if (digits == 0)
                return -EINVAL;
        const char *u = s + digits;
        unsigned power = 0, flags = 0;
        bool decimal = false;
        if (*u == 0)
                flags |= SIZE_BARE;
        else if (streq(u, "B"))
                flags |= SIZE_BYTES;
        else {
                const char *l = strchr(letters, toupper((unsigned char) u[0]));
                if (!l || u[0] == 0)
                        return -EINVAL;
                power = (unsigned) (l - letters) + 1;
                if (u[1] == 0 || streq(u + 1, "iB"))
                        ;
                else if (streq(u + 1, "B"))
                        decimal = true;
                else
                        return -EINVAL;
                flags |= decimal ? SIZE_DECIMAL : 0;
        }
        char num[65];
        memcpy(num, s, digits);
        num[digits] = 0;
        uint64_t v;
        int r = safe_atou64(num, &v);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < power; i++) {
                uint64_t m = decimal ? 1000 : 1024;
                if (v > UINT64_MAX / m)
                        return -ERANGE;
                v *= m;
        }
        *ret = v;
        if (ret_flags)
                *ret_flags = flags;
        return 0;
}

const char *format_size(uint64_t bytes, char *buf, size_t len) {
        static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        size_t u = 0;
        uint64_t whole = bytes, rem = 0;
        while (whole >= 1024 && u + 1 < ELEMENTSOF(units)) {
                rem = whole % 1024;
                whole /= 1024;
                u++;
        }
        if (u == 0 || rem == 0)
                snprintf(buf, len, "%" PRIu64 " %s", whole, units[u]);
        else
                snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", whole, rem * 10 / 1024, units[u]);
        return buf;
}

uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, max, ret, ret_len);
}

int fd_stat(int fd, struct stat *ret_st) {
        if (fd < 0)
                return -errno;
        if (fstat(fd, ret_st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        size_t alloc = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(alloc);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= alloc) {
                        if (alloc > max + 1)
                                return -EFBIG;
                        alloc *= 2;
                        char *nb = realloc(buf, alloc);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                ssize_t k = read(fd, buf + len, alloc - len - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > max)
                        return -EFBIG;
        }
        buf[len] = 0;
        if (ret_len)
                *ret_len = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_one_line(const char *path, char **ret) {
        char *s;
        int r = read_full_file(path, 64 * 1024, &s, NULL);
        if (r < 0)
                return r;
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char) s[n - 1]))
                s[--n] = 0;
        *ret = s;
        return 0;
}

void hex_encode(const void *data, size_t len, char *out) {
        static const char digits[] = "0123456789abcdef";
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[p[i] >> 4];
                out[2 * i + 1] = digits[p[i] & 15];
        }
        out[2 * len] = 0;
}

bool hex_valid(const char *s, size_t n) {
        if (!s || strlen(s) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isxdigit((unsigned char) s[i]))
                        return false;
        return true;
}

int mkdir_p(const char *dir) {
        char buf[PATH_MAX];
        if (snprintf(buf, sizeof buf, "%s", dir) >= (int) sizeof buf)
                return -ENAMETOOLONG;
        for (char *p = buf + 1;; p++) {
                if (*p != '/' && *p != '\0')
                        continue;
                char c = *p;
                *p = '\0';
                if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *p = c;
                if (c == '\0')
                        return 0;
        }
}

int write_file_atomic(const char *path, const char *buf, size_t len) {
        return write_file_atomic_mode(path, buf, len, 0644);
}

int write_file_atomic_mode(const char *path, const char *buf, size_t len, mode_t mode) {
        char dir[PATH_MAX], tmp[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s", path) >= (int) sizeof dir ||
            snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int) getpid()) >= (int) sizeof tmp)
                return -ENAMETOOLONG;
        char *slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = '\0';
        else if (slash)
                *slash = '\0';
        else
                snprintf(dir, sizeof dir, ".");
        int r = mkdir_p(dir);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode & 0600);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0) {     /* whatever the umask */
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        for (size_t off = 0; off < len;) {
                ssize_t w = write(fd, buf + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0) {
                        r = -errno;
                        (void) unlink(tmp);
                        return r;
                }
                off += (size_t) w;
        }
        if (fsync(fd) < 0 || rename(tmp, path) < 0) {
                r = -errno;
                (void) unlink(tmp);
                return r;
        }
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) < 0)
                return -errno;
        return 0;
}
