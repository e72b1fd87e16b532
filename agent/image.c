#include "image.h"
#include "log.h"
#include "paths.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fs.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#define IMAGE_BLOCK_SIZE (256u << 10)   /* what one libarchive read gets */
#define IMAGE_RAW_WRITE_SIZE (4u << 20) /* raw: writes of this size, aligned */

DEFINE_CLEANUP(archive_read_free, struct archive *)
DEFINE_CLEANUP(archive_write_free, struct archive *)

/* ---- the ring between the fetch thread (producer) and libarchive (consumer) ---- */

struct stream {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint8_t *ring;
        size_t cap, head, len;
        bool eof;               /* the producer finished */
        int fetch_err;          /* its result */
        bool cancel;            /* the consumer gave up */
        uint64_t downloaded, total;

        /* producer side */
        const char *url;
        struct fetch_options fopts;
        struct fetch_result fres;

        /* consumer side (installing thread only) */
        uint8_t *block;
        int read_err;           /* why the last read failed, if it did */
        uint64_t written;
        const struct image_options *opts;
        uint64_t start_usec, last_progress_usec;
};

static int stream_write(const void *data, size_t n, void *userdata) {
        struct stream *s = userdata;
        const uint8_t *p = data;

        pthread_mutex_lock(&s->lock);
        while (n > 0) {
                while (s->len == s->cap && !s->cancel)
                        pthread_cond_wait(&s->cond, &s->lock);
                if (s->cancel) {
                        pthread_mutex_unlock(&s->lock);
                        return -ECANCELED;
                }
                size_t tail = (s->head + s->len) % s->cap;
                size_t chunk = s->cap - s->len;
                if (chunk > s->cap - tail)
                        chunk = s->cap - tail;
                if (chunk > n)
                        chunk = n;
                memcpy(s->ring + tail, p, chunk);
                s->len += chunk;
                s->downloaded += chunk;
                p += chunk;
                n -= chunk;
                pthread_cond_broadcast(&s->cond);
        }
        pthread_mutex_unlock(&s->lock);
        return 0;
}

static void stream_length(uint64_t total, void *userdata) {
        struct stream *s = userdata;
        pthread_mutex_lock(&s->lock);
        s->total = total;
        pthread_mutex_unlock(&s->lock);
}

static void *stream_producer(void *userdata) {
        struct stream *s = userdata;
        struct fetch_sink sink = {
                .write = stream_write,
                .restart = NULL,        /* a server ignoring Range: fetch drops the repeated bytes */
                .length = stream_length,
                .userdata = s,
        };
        int r = fetch_url(s->url, &s->fopts, &sink, &s->fres);
        pthread_mutex_lock(&s->lock);
        s->eof = true;
        s->fetch_err = r;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* Up to max bytes; 0 at the end of a complete stream; the fetch error when
 * the download failed. */
static ssize_t stream_read(struct stream *s, void *buf, size_t max) {
        ssize_t r;
        pthread_mutex_lock(&s->lock);
        for (;;) {
                if (s->len > 0) {
                        size_t chunk = s->len;
                        if (chunk > s->cap - s->head)
                                chunk = s->cap - s->head;
                        if (chunk > max)
                                chunk = max;
                        memcpy(buf, s->ring + s->head, chunk);
                        s->head = (s->head + chunk) % s->cap;
                        s->len -= chunk;
                        pthread_cond_broadcast(&s->cond);
                        r = (ssize_t) chunk;
                        break;
                }
                if (s->eof) {
                        r = s->fetch_err < 0 ? s->fetch_err : 0;
                        break;
                }
                pthread_cond_wait(&s->cond, &s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

static void stream_cancel(struct stream *s) {
        pthread_mutex_lock(&s->lock);
        s->cancel = true;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

static void stream_progress(struct stream *s, bool done) {
        const struct image_options *o = s->opts;
        if (!o || !o->progress)
                return;
        uint64_t now = now_usec();
        uint64_t interval = (o->progress_interval_ms ? o->progress_interval_ms : 1000) * 1000ull;
        if (!done && now - s->last_progress_usec < interval)
                return;
        s->last_progress_usec = now;

        struct image_progress p = { .written = s->written, .elapsed_usec = now - s->start_usec, .eta_sec = -1, .done = done };
        pthread_mutex_lock(&s->lock);
        p.downloaded = s->downloaded;
        p.total = s->total;
        pthread_mutex_unlock(&s->lock);
        if (p.elapsed_usec > 0)
                p.rate = (double) p.downloaded * 1e6 / (double) p.elapsed_usec;
        if (p.total > 0 && p.rate > 0 && p.total >= p.downloaded)
                p.eta_sec = (int64_t) ((double) (p.total - p.downloaded) / p.rate);
        o->progress(&p, o->progress_userdata);
}

static la_ssize_t archive_read_cb(struct archive *a, void *userdata, const void **ret_buf) {
        struct stream *s = userdata;
        ssize_t n = stream_read(s, s->block, IMAGE_BLOCK_SIZE);
        if (n < 0) {
                s->read_err = (int) n;
                archive_set_error(a, EIO, "download interrupted");
                return -1;
        }
        stream_progress(s, false);
        *ret_buf = s->block;
        return n;
}

/* ---- formatting errors ---- */

static int set_error(struct image_result *res, int r, const char *fmt, ...) _printf_(3, 4);
static int set_error(struct image_result *res, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(res->error, sizeof(res->error), fmt, ap);
        va_end(ap);
        return r;
}

static const char *archive_err(struct archive *a) {
        const char *e = archive_error_string(a);
        return e ? e : "unknown error";
}

/* ---- tar ---- */

/* *a is the caller's (freed by it), so a failed open can still be explained. */
static int open_reader(struct stream *s, bool raw, struct archive **a_out) {
        struct archive *a = *a_out = archive_read_new();
        if (!a)
                return -ENOMEM;
        /* Compression is detected from the data. Only filters built into
         * libarchive: no fallback to external programs. */
        if (archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
            archive_read_support_filter_xz(a) != ARCHIVE_OK ||
            archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
            archive_read_support_filter_bzip2(a) != ARCHIVE_OK)
                return -EOPNOTSUPP;
        if ((raw ? archive_read_support_format_raw(a) : archive_read_support_format_tar(a)) != ARCHIVE_OK)
                return -EOPNOTSUPP;
        if (archive_read_open(a, s, NULL, archive_read_cb, NULL) != ARCHIVE_OK)
                return -EBADMSG;
        return 0;
}

/* A failed libarchive call: the stream's own error (the download) wins. */
static int reader_failed(struct stream *s, struct archive *a, struct image_result *res, const char *what) {
        if (s->read_err < 0)
                return s->read_err;     /* the caller reports the fetch error */
        return set_error(res, -EBADMSG, "%s: %s", what, archive_err(a));
}

static int extract_tar(struct stream *s, struct image_result *res) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        _cleanup_(archive_write_freep) struct archive *w = NULL;
        struct archive_entry *e;
        int r;

        s->read_err = 0;
        r = open_reader(s, false, &a);
        if (r < 0)
                return r == -EBADMSG ? reader_failed(s, a, res, "cannot read the archive") : r;

        w = archive_write_disk_new();
        if (!w)
                return -ENOMEM;
        /* Numeric owners only: no archive_write_disk_set_standard_lookup(). */
        if (archive_write_disk_set_options(w,
                        ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                        ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_FFLAGS |
                        ARCHIVE_EXTRACT_SPARSE | ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                        ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS) != ARCHIVE_OK)
                return -EINVAL;

        res->entries = 0;
        s->written = 0;
        for (;;) {
                r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return reader_failed(s, a, res, "corrupt or truncated archive");
                if (r == ARCHIVE_WARN)
                        res->warnings++;
                res->entries++;

                const char *path = archive_entry_pathname(e);
                r = archive_write_header(w, e);
                if (r < ARCHIVE_WARN)
                        return set_error(res, r == ARCHIVE_FATAL ? -EIO : -EPERM, "refused entry '%s': %s",
                                         path ? path : "", archive_err(w));
                if (r == ARCHIVE_WARN)
                        res->warnings++;
                if (r >= ARCHIVE_WARN && archive_entry_size(e) > 0) {
                        for (;;) {
                                const void *buf;
                                size_t size;
                                la_int64_t off;
                                r = archive_read_data_block(a, &buf, &size, &off);
                                if (r == ARCHIVE_EOF)
                                        break;
                                if (r < ARCHIVE_WARN)
                                        return reader_failed(s, a, res, "corrupt or truncated archive");
                                la_ssize_t n = archive_write_data_block(w, buf, size, off);
                                if (n < ARCHIVE_WARN)
                                        return set_error(res, -EIO, "cannot write '%s': %s", path ? path : "",
                                                         archive_err(w));
                                s->written += size;
                        }
                }
                r = archive_write_finish_entry(w);
                if (r < ARCHIVE_WARN)
                        return set_error(res, -EIO, "cannot finish '%s': %s", path ? path : "", archive_err(w));
                if (r == ARCHIVE_WARN)
                        res->warnings++;
        }
        /* Applies the deferred directory modes and times. */
        if (archive_write_close(w) != ARCHIVE_OK)
                return set_error(res, -EIO, "cannot finish the extraction: %s", archive_err(w));
        return 0;
}

/* ---- raw ---- */

static int write_all_at(int fd, const uint8_t *p, size_t n, uint64_t off) {
        while (n > 0) {
                ssize_t k = pwrite(fd, p, n, (off_t) off);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ENOSPC;
                p += k;
                n -= (size_t) k;
                off += (uint64_t) k;
        }
        return 0;
}

static int extract_raw(struct stream *s, int fd, uint64_t dev_size, uint8_t *buf, const char *target,
                            struct image_result *res) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        struct archive_entry *e;
        uint64_t off = 0;
        size_t fill = 0;
        int r;

        s->read_err = 0;
        s->written = 0;
        r = open_reader(s, true, &a);
        if (r < 0)
                return r == -EBADMSG ? reader_failed(s, a, res, "cannot read the image") : r;
        r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
                return set_error(res, -EBADMSG, "the image is empty");
        if (r < ARCHIVE_WARN)
                return reader_failed(s, a, res, "cannot read the image");

        for (;;) {
                la_ssize_t n = archive_read_data(a, buf + fill, IMAGE_RAW_WRITE_SIZE - fill);
                if (n < 0)
                        return reader_failed(s, a, res, "corrupt or truncated image");
                fill += (size_t) n;
                if (fill == IMAGE_RAW_WRITE_SIZE || (n == 0 && fill > 0)) {
                        if (off + fill > dev_size)
                                return set_error(res, -ENOSPC, "the image is larger than '%s' (%" PRIu64 " bytes)",
                                                 target, dev_size);
                        r = write_all_at(fd, buf, fill, off);
                        if (r < 0)
                                return set_error(res, r, "cannot write to '%s' at offset %" PRIu64 ": %s",
                                                 target, off, strerror(-r));
                        off += fill;
                        s->written = off;
                        fill = 0;
                }
                if (n == 0)
                        break;
        }
        return 0;
}

/* ---- the install ---- */

static int drain(struct stream *s) {
        for (;;) {
                ssize_t n = stream_read(s, s->block, IMAGE_BLOCK_SIZE);
                if (n <= 0)
                        return (int) n;
        }
}

static int marker_create(int dirfd, const char *name, const char *content) {
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        size_t n = strlen(content);
        if (write(fd, content, n) != (ssize_t) n)
                return -EIO;
        if (fsync(fd) < 0 || fsync(dirfd) < 0)
                return -errno;
        return 0;
}

static int marker_remove(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        if (fsync(dirfd) < 0)
                return -errno;
        return 0;
}

static int mkdir_p(const char *path) {
        char buf[PATH_MAX];
        if (snprintf(buf, sizeof(buf), "%s", path) >= (int) sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int install(struct stream *s, const struct spec_image *img, const char *target, struct image_result *res) {
        bool raw = img->format == SPEC_IMAGE_RAW;
        _cleanup_close_ int target_fd = -1, marker_dir = -1, old_cwd = -1;
        _cleanup_free_ uint8_t *rawbuf = NULL;
        uint64_t dev_size = 0;
        pthread_t thread;
        struct stat st;
        int r;

        if (raw) {
                target_fd = open(target, O_WRONLY | O_CLOEXEC);
                if (target_fd < 0)
                        return set_error(res, -errno, "cannot open '%s': %s", target, strerror(errno));
                if (fstat(target_fd, &st) < 0)
                        return set_error(res, -errno, "cannot stat '%s': %s", target, strerror(errno));
                if (!S_ISBLK(st.st_mode))
                        return set_error(res, -ENOTBLK, "'%s' is not a block device", target);
                if (ioctl(target_fd, BLKGETSIZE64, &dev_size) < 0)
                        return set_error(res, -errno, "cannot get the size of '%s': %s", target, strerror(errno));
                if (posix_memalign((void **) &rawbuf, 4096, IMAGE_RAW_WRITE_SIZE) != 0)
                        return -ENOMEM;
                r = mkdir_p(kiln_paths.run_dir);
                if (r < 0)
                        return set_error(res, r, "cannot create '%s': %s", kiln_paths.run_dir, strerror(-r));
                marker_dir = open(kiln_paths.run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (marker_dir < 0)
                        return set_error(res, -errno, "cannot open '%s': %s", kiln_paths.run_dir, strerror(errno));
                r = marker_create(marker_dir, IMAGE_RAW_INCOMPLETE_MARKER, target);
        } else {
                target_fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (target_fd < 0)
                        return set_error(res, -errno, "cannot open target directory '%s': %s", target, strerror(errno));
                marker_dir = fcntl(target_fd, F_DUPFD_CLOEXEC, 3);
                if (marker_dir < 0)
                        return -errno;
                r = marker_create(marker_dir, IMAGE_INCOMPLETE_MARKER, img->url);
        }
        if (r < 0)
                return set_error(res, r, "cannot mark '%s' incomplete: %s", target, strerror(-r));

        /* libarchive extracts relative to the working directory. */
        if (!raw) {
                old_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (old_cwd < 0)
                        return -errno;
                if (fchdir(target_fd) < 0)
                        return set_error(res, -errno, "cannot enter '%s': %s", target, strerror(errno));
        }

        s->start_usec = s->last_progress_usec = now_usec();
        r = -pthread_create(&thread, NULL, stream_producer, s);
        if (r < 0) {
                if (old_cwd >= 0)
                        (void) fchdir(old_cwd);
                return r;
        }
        r = raw ? extract_raw(s, target_fd, dev_size, rawbuf, target, res) : extract_tar(s, res);
        if (r == 0)
                r = drain(s);   /* the hash covers trailing padding too */
        if (r < 0)
                stream_cancel(s);
        pthread_join(thread, NULL);
        if (old_cwd >= 0 && fchdir(old_cwd) < 0 && r >= 0)
                r = -errno;

        if (s->fetch_err < 0 && s->fetch_err != -ECANCELED && (r >= 0 || r == s->fetch_err || s->read_err < 0))
                return set_error(res, s->fetch_err, "download of '%s' failed: %s", img->url, s->fres.error);
        if (r < 0) {
                if (!res->error[0])
                        set_error(res, r, "%s", strerror(-r));
                return r;
        }

        res->downloaded = s->fres.bytes;
        res->attempts = s->fres.attempts;
        res->restarts = s->fres.restarts;
        res->written = s->written;
        memcpy(res->sha256, s->fres.sha256, sizeof(res->sha256));
        if (!sha256_hex_equal(img->sha256, s->fres.sha256))
                return set_error(res, -EBADMSG, "sha256 mismatch: expected %s, got %s", img->sha256, s->fres.sha256);

        if (!s->opts->no_sync) {
                if (raw ? fsync(target_fd) < 0 : syncfs(target_fd) < 0)
                        return set_error(res, -errno, "cannot sync '%s': %s", target, strerror(errno));
        }
        r = marker_remove(marker_dir, raw ? IMAGE_RAW_INCOMPLETE_MARKER : IMAGE_INCOMPLETE_MARKER);
        if (r < 0)
                return set_error(res, r, "cannot remove the incomplete marker of '%s': %s", target, strerror(-r));
        return 0;
}

int image_install(const struct spec_image *img, const char *target, const struct image_options *opts,
                  struct image_result *ret) {
        static const struct image_options defaults = {};
        struct image_result scratch, *res = ret ? ret : &scratch;
        _cleanup_free_ char *ca = NULL;
        _cleanup_free_ uint8_t *ring = NULL, *block = NULL;
        int r;

        if (!opts)
                opts = &defaults;
        memset(res, 0, sizeof(*res));
        if (!img || strempty(img->url) || strempty(target))
                return set_error(res, -EINVAL, "no image URL or target");
        if (!sha256_hex_valid(img->sha256))
                return set_error(res, -EINVAL, "the image has no valid sha256 (64 hex digits)");
        r = fetch_check_url(img->url);
        if (r < 0)
                return set_error(res, r, "%s '%s'", r == -EPROTONOSUPPORT ?
                                 "unsupported URL scheme (only http, https and file):" : "not a valid URL:", img->url);

        struct stream s = {
                .lock = PTHREAD_MUTEX_INITIALIZER,
                .cond = PTHREAD_COND_INITIALIZER,
                .cap = IMAGE_RING_SIZE,
                .url = img->url,
                .fopts = opts->fetch,
                .opts = opts,
        };
        s.fopts.max_size = img->max_size ? img->max_size : IMAGE_DEFAULT_MAX_SIZE;
        /* The tar install changes the working directory; pin a relative CA path first. */
        if (s.fopts.ca_file && s.fopts.ca_file[0] != '/') {
                ca = realpath(s.fopts.ca_file, NULL);
                if (!ca)
                        return set_error(res, -errno, "cannot find CA file '%s': %s", s.fopts.ca_file, strerror(errno));
                s.fopts.ca_file = ca;
        }
        ring = malloc(s.cap);
        block = malloc(IMAGE_BLOCK_SIZE);
        if (!ring || !block)
                return -ENOMEM;
        s.ring = ring;
        s.block = block;

        uint64_t start = now_usec();
        r = install(&s, img, target, res);
        res->usec = now_usec() - start;
        if (r < 0) {
                /* only error survives a failure */
                char err[sizeof(res->error)];
                memcpy(err, res->error, sizeof(err));
                memset(res, 0, sizeof(*res));
                memcpy(res->error, err, sizeof(err));
                return r;
        }
        stream_progress(&s, true);
        return 0;
}

/* ---- presentation ---- */

static void format_eta(int64_t sec, char *buf, size_t len) {
        if (sec < 0)
                snprintf(buf, len, "--:--");
        else if (sec >= 3600)
                snprintf(buf, len, "%" PRId64 ":%02" PRId64 ":%02" PRId64, sec / 3600, sec / 60 % 60, sec % 60);
        else
                snprintf(buf, len, "%" PRId64 ":%02" PRId64, sec / 60, sec % 60);
}

void image_progress_print(const struct image_progress *p, void *userdata) {
        struct image_progress_printer *pp = userdata;
        const char *what = pp && pp->what ? pp->what : "image";
        char done[32], total[32], rate[32], eta[32];

        if (pp && pp->tty == 0)
                pp->tty = isatty(STDERR_FILENO) ? 1 : -1;
        format_size(p->downloaded, done, sizeof(done));
        format_size(p->total, total, sizeof(total));
        format_size((uint64_t) p->rate, rate, sizeof(rate));
        format_eta(p->eta_sec, eta, sizeof(eta));

        if (pp && pp->tty > 0) {
                if (p->total)
                        fprintf(stderr, "\r%s: %s of %s, %s/s, ETA %s\033[K", what, done, total, rate, eta);
                else
                        fprintf(stderr, "\r%s: %s, %s/s\033[K", what, done, rate);
                if (p->done)
                        fputc('\n', stderr);
                fflush(stderr);
                return;
        }
        uint64_t now = now_usec();
        if (!p->done && pp && now - pp->last_log_usec < 10 * 1000000ull)
                return;
        if (pp)
                pp->last_log_usec = now;
        if (p->done)
                log_info("%s: %s in %.1f s, %s/s", what, done, (double) p->elapsed_usec / 1e6, rate);
        else if (p->total)
                log_info("%s: %s of %s, %s/s, ETA %s", what, done, total, rate, eta);
        else
                log_info("%s: %s, %s/s", what, done, rate);
}
