#include "image.h"
#include "log.h"
#include "paths.h"
#include "ring.h"
#include "targuard.h"
#include "url.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <ftw.h>
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

/* ---- three threads, two rings ----
 *
 * fetch thread:      fetch_url (curl, sha256, retries) → ring `in` (as downloaded)
 * decompress thread: libarchive, filters only (detected from the data) → ring `out`
 * installing thread: libarchive tar reader + write_disk (or raw writes) from `out`
 *
 * like `curl | zstd -dc | tar -x`: decompression overlaps the file writes.
 * A failure anywhere cancels both rings, so every thread ends. */

struct stream {
        struct ring in, out;
        uint64_t total;         /* announced size (atomic) */

        /* fetch thread */
        const char *url;
        struct fetch_options fopts;
        struct fetch_result fres;
        int fetch_err;          /* read after the join */
        struct strbuf fetch_why; /* what fetch_url said of fetch_err */

        /* decompress thread */
        int in_err;             /* why reading `in` failed (the fetch error, or cancelled) */
        char decomp_error[256]; /* set when the data itself is bad; read after `out` ends */

        /* installing thread */
        int read_err;           /* why the last read of `out` failed, if it did */
        uint64_t written;
        const struct image_options *opts;
        uint64_t start_usec, last_progress_usec;
};

static void stream_done(struct stream *s) {
        ring_done(&s->in);
        ring_done(&s->out);
        strbuf_release(&s->fetch_why);
}

static int stream_write(const void *data, size_t n, void *userdata) {
        struct stream *s = userdata;
        return ring_put(&s->in, data, n);
}

static void stream_length(uint64_t total, void *userdata) {
        struct stream *s = userdata;
        __atomic_store_n(&s->total, total, __ATOMIC_RELAXED);
}

static void *fetch_thread(void *userdata) {
        struct stream *s = userdata;
        struct fetch_sink sink = {
                .write = stream_write,
                .restart = NULL,        /* a server ignoring Range: fetch drops the repeated bytes */
                .length = stream_length,
                .userdata = s,
        };
        s->fetch_err = fetch_url(s->url, &s->fopts, &sink, &s->fres, &s->fetch_why);
        ring_finish(&s->in, s->fetch_err);
        return NULL;
}

static const char *archive_err(struct archive *a) {
        const char *e = archive_error_string(a);
        return e ? e : "unknown error";
}

/* What a libarchive read callback returns for a ring's answer n: the
 * count, or -1 with why set as the archive's error. */
static la_ssize_t read_cb_result(struct archive *a, ssize_t n, const char *why) {
        if (n >= 0)
                return n;
        archive_set_error(a, EIO, "%s", why);
        return -1;
}

static la_ssize_t in_read_cb(struct archive *a, void *userdata, const void **ret_buf) {
        struct stream *s = userdata;
        ring_release(&s->in);
        ssize_t n = ring_peek(&s->in, ret_buf, IMAGE_BLOCK_SIZE);
        if (n < 0)
                s->in_err = (int) n;
        return read_cb_result(a, n, "download interrupted");
}

static int in_close_cb(struct archive *a, void *userdata) {
        struct stream *s = userdata;
        ring_release(&s->in);
        return ARCHIVE_OK;
}

/* The data's own fault: remembered for the installing thread's message. */
static int decompress_failed(struct stream *s, struct archive *a) {
        if (s->in_err < 0)
                return s->in_err;
        snprintf(s->decomp_error, sizeof(s->decomp_error), "%s", archive_err(a));
        return -EBADMSG;
}

/* The current entry's next data block: 1 (buf, size and off set), 0 at its
 * end, -1 when reading failed (archive_error_string() says why). */
static int next_block(struct archive *a, const void **buf, size_t *size, la_int64_t *off) {
        int r = archive_read_data_block(a, buf, size, off);
        return r == ARCHIVE_EOF ? 0 : r < ARCHIVE_WARN ? -1 : 1;
}

static int decompress(struct stream *s) {
        _cleanup_(archive_read_freep) struct archive *a = archive_read_new();
        struct archive_entry *e;
        int r;

        if (!a)
                return -ENOMEM;
        /* Compression is detected from the data. Only filters built into
         * libarchive: no fallback to external programs. Format "raw": the
         * (decompressed) bytes as they are, the tar is read downstream. */
        if (archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
            archive_read_support_filter_xz(a) != ARCHIVE_OK ||
            archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
            archive_read_support_filter_bzip2(a) != ARCHIVE_OK ||
            archive_read_support_format_raw(a) != ARCHIVE_OK)
                return -EOPNOTSUPP;
        if (archive_read_open(a, s, NULL, in_read_cb, in_close_cb) != ARCHIVE_OK)
                return decompress_failed(s, a);
        r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF)
                return 0;
        if (r < ARCHIVE_WARN)
                return decompress_failed(s, a);
        const void *buf;
        size_t size;
        la_int64_t off;
        while ((r = next_block(a, &buf, &size, &off)) > 0)
                if ((r = ring_put(&s->out, buf, size)) < 0)
                        return r;
        return r < 0 ? decompress_failed(s, a) : 0;
}

static void *decompress_thread(void *userdata) {
        struct stream *s = userdata;
        int r = decompress(s);
        /* the hash covers trailing bytes too (e.g. padding after the last frame) */
        if (r == 0)
                r = ring_drain(&s->in);
        if (r < 0)
                ring_cancel(&s->in, r);         /* ends the download */
        ring_finish(&s->out, r);
        return NULL;
}

static void stream_cancel(struct stream *s, int err) {
        ring_cancel(&s->out, err);
        ring_cancel(&s->in, err);
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
        p.downloaded = ring_total_in(&s->in);
        p.total = __atomic_load_n(&s->total, __ATOMIC_RELAXED);
        if (p.elapsed_usec > 0)
                p.rate = (double) p.downloaded * 1e6 / (double) p.elapsed_usec;
        if (p.total > 0 && p.rate > 0 && p.total >= p.downloaded)
                p.eta_sec = (int64_t) ((double) (p.total - p.downloaded) / p.rate);
        o->progress(&p, o->progress_userdata);
}

/* Borrows up to max decompressed bytes: the count, 0 at the end, or an error
 * (read_err says which). The previous borrow is given back first. */
static ssize_t out_peek(struct stream *s, const void **ret, size_t max) {
        ring_release(&s->out);
        ssize_t n = ring_peek(&s->out, ret, max);
        if (n < 0) {
                s->read_err = (int) n;
                return n;
        }
        stream_progress(s, false);
        return n;
}

static la_ssize_t out_read_cb(struct archive *a, void *userdata, const void **ret_buf) {
        struct stream *s = userdata;
        ssize_t n = out_peek(s, ret_buf, IMAGE_BLOCK_SIZE);
        return read_cb_result(a, n, s->decomp_error[0] ? s->decomp_error : "download interrupted");
}

static int out_close_cb(struct archive *a, void *userdata) {
        struct stream *s = userdata;
        ring_release(&s->out);
        return ARCHIVE_OK;
}

/* ---- formatting errors ---- */

enum spec_image_format image_format_for_target(const char *target) {
        struct stat st;
        return stat(target, &st) >= 0 && S_ISBLK(st.st_mode) ? SPEC_IMAGE_RAW : SPEC_IMAGE_TAR;
}

void image_result_done(struct image_result *res) {
        free(res->warning);
        *res = (struct image_result) {};
}

/* A non-fatal libarchive warning: counted, the first one kept. In the C
 * locale kiln runs in (the initramfs has no other), a UTF-8 name in a pax
 * header warns "Pathname can't be converted from UTF-8 to current locale"
 * and is still written byte for byte (tests/host/test-image.sh). */
static void note_warning(struct image_result *res, const char *path, struct archive *a) {
        res->warnings++;
        if (!res->warning)
                res->warning = strdupf("'%s': %s", path ? path : "", archive_err(a));
}

/* A failed read of the decompressed stream: bad data is explained here, a
 * download error is returned for the caller to report. */
static int read_failed(struct stream *s, struct archive *a, struct strbuf *err, const char *what) {
        if (s->read_err < 0 && !s->decomp_error[0])
                return s->read_err;
        return strbuf_errorf(err, -EBADMSG, "%s: %s", what, s->read_err < 0 ? s->decomp_error : archive_err(a));
}

/* ---- the symlink guard (targuard.h) ---- */

static int has_symlink_cb(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        return type == FTW_SL || type == FTW_SLN;
}

/* Whether the working directory (the target) holds a symlink anywhere. */
static int target_has_symlinks(void) {
        int r = nftw(".", has_symlink_cb, 16, FTW_PHYS | FTW_MOUNT);
        if (r < 0)
                return -errno;
        return r > 0;
}

/* Before writing entry e: refuse it (-EPERM, explained in res) when it or its
 * hard link target lies below a symlink the archive made; remove a symlink
 * the entry replaces. *ret_is_link: the entry makes a symlink (a symlink
 * entry, or a hard link to one) to remember after it was written; the
 * normalised path is left in path_buf. 1: a path this guard cannot check,
 * the caller switches to libarchive's check. */
static int guard_entry(struct tar_guard *g, struct archive_entry *e, char *path_buf, size_t size,
                       bool *ret_is_link, struct strbuf *err) {
        const char *path = archive_entry_pathname(e), *hardlink = archive_entry_hardlink(e);
        struct tar_guard_verdict v;

        *ret_is_link = false;
        int r = tar_guard_check(g, path, hardlink, archive_entry_filetype(e) == AE_IFLNK, path_buf, size, &v);
        if (r == -EPERM && v.via_hardlink)
                return strbuf_errorf(err, r, "refused entry '%s': its hard link target '%s' is below the symlink '%s'",
                                     path, hardlink, v.below);
        if (r == -EPERM)
                return strbuf_errorf(err, r, "refused entry '%s': it would be written through the symlink '%s'",
                                     path, v.below);
        if (r < 0)
                return r;
        if (v.uncheckable)
                return 1;
        if (v.replaces_link) {
                if (unlink(path_buf) < 0 && errno != ENOENT)
                        return strbuf_errorf(err, -errno, "cannot remove the symlink '%s' that entry '%s' replaces: %s",
                                             path_buf, path, strerror(errno));
                (void) tar_guard_forget(g, path_buf);
        }
        *ret_is_link = v.makes_link;
        return 0;
}

/* ---- tar ---- */

static int extract_tar(struct stream *s, struct image_result *res, struct strbuf *err) {
        _cleanup_(archive_read_freep) struct archive *a = NULL;
        _cleanup_(archive_write_freep) struct archive *w = NULL;
        _cleanup_(tar_guard_done) struct tar_guard guard = {};
        /* Numeric owners only: no archive_write_disk_set_standard_lookup(). */
        int flags = ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME |
                ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_FFLAGS |
                ARCHIVE_EXTRACT_SPARSE | ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS;
        char norm[PATH_MAX];
        struct archive_entry *e;
        int r;

        s->read_err = 0;
        s->written = 0;
        res->entries = 0;
        r = target_has_symlinks();
        if (r < 0)
                return strbuf_errorf(err, r, "cannot look for symlinks in the target: %s", strerror(-r));
        if (r > 0) {
                guard.off = true;
                flags |= ARCHIVE_EXTRACT_SECURE_SYMLINKS;
        }

        a = archive_read_new();
        w = archive_write_disk_new();
        if (!a || !w)
                return -ENOMEM;
        if (archive_read_support_format_tar(a) != ARCHIVE_OK)
                return -EOPNOTSUPP;
        if (archive_read_open(a, s, NULL, out_read_cb, out_close_cb) != ARCHIVE_OK)
                return read_failed(s, a, err, "cannot read the archive");
        if (archive_write_disk_set_options(w, flags) != ARCHIVE_OK)
                return -EINVAL;

        for (;;) {
                bool is_link = false;

                r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return read_failed(s, a, err, res->entries == 0 ? "cannot read the archive" :
                                           "corrupt or truncated archive");
                const char *path = archive_entry_pathname(e);
                if (r == ARCHIVE_WARN)
                        note_warning(res, path, a);
                res->entries++;

                if (!guard.off) {
                        r = guard_entry(&guard, e, norm, sizeof(norm), &is_link, err);
                        if (r < 0)
                                return r;
                        if (r > 0) {
                                tar_guard_done(&guard);
                                flags |= ARCHIVE_EXTRACT_SECURE_SYMLINKS;
                                if (archive_write_disk_set_options(w, flags) != ARCHIVE_OK)
                                        return -EINVAL;
                        }
                }
                r = archive_write_header(w, e);
                if (r < ARCHIVE_WARN && archive_entry_hardlink(e))
                        /* libarchive's check is of the link target ("Path is absolute"): name it */
                        return strbuf_errorf(err, r == ARCHIVE_FATAL ? -EIO : -EPERM,
                                             "refused hard link '%s' to '%s': %s", path ? path : "",
                                             archive_entry_hardlink(e), archive_err(w));
                if (r < ARCHIVE_WARN)
                        return strbuf_errorf(err, r == ARCHIVE_FATAL ? -EIO : -EPERM, "refused entry '%s': %s",
                                             path ? path : "", archive_err(w));
                if (r == ARCHIVE_WARN)
                        note_warning(res, path, w);
                if (is_link && !guard.off) {
                        r = tar_guard_add(&guard, norm);
                        if (r == -E2BIG) {
                                tar_guard_done(&guard);
                                flags |= ARCHIVE_EXTRACT_SECURE_SYMLINKS;
                                if (archive_write_disk_set_options(w, flags) != ARCHIVE_OK)
                                        return -EINVAL;
                        } else if (r < 0)
                                return r;
                }
                if (archive_entry_size(e) > 0) {
                        const void *buf;
                        size_t size;
                        la_int64_t off;
                        while ((r = next_block(a, &buf, &size, &off)) > 0) {
                                la_ssize_t n = archive_write_data_block(w, buf, size, off);
                                if (n < ARCHIVE_WARN)
                                        return strbuf_errorf(err, -EIO, "cannot write '%s': %s", path ? path : "",
                                                             archive_err(w));
                                s->written += size;
                        }
                        if (r < 0)
                                return read_failed(s, a, err, "corrupt or truncated archive");
                }
                r = archive_write_finish_entry(w);
                if (r < ARCHIVE_WARN)
                        return strbuf_errorf(err, -EIO, "cannot finish '%s': %s", path ? path : "", archive_err(w));
                if (r == ARCHIVE_WARN)
                        note_warning(res, path, w);
        }
        /* Applies the deferred directory modes and times. */
        if (archive_write_close(w) != ARCHIVE_OK)
                return strbuf_errorf(err, -EIO, "cannot finish the extraction: %s", archive_err(w));
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
                       struct strbuf *err) {
        uint64_t off = 0;
        size_t fill = 0;
        int r;

        s->read_err = 0;
        s->written = 0;
        for (;;) {
                const void *p;
                ssize_t n = out_peek(s, &p, IMAGE_RAW_WRITE_SIZE - fill);
                if (n < 0) {
                        if (!s->decomp_error[0])
                                return (int) n;
                        return strbuf_errorf(err, -EBADMSG, "%s: %s", off + fill == 0 ? "cannot read the image" :
                                             "corrupt or truncated image", s->decomp_error);
                }
                memcpy(buf + fill, p, (size_t) n);
                fill += (size_t) n;
                if (fill == IMAGE_RAW_WRITE_SIZE || (n == 0 && fill > 0)) {
                        if (off + fill > dev_size)
                                return strbuf_errorf(err, -ENOSPC, "the image is larger than '%s' (%" PRIu64 " bytes)",
                                                     target, dev_size);
                        r = write_all_at(fd, buf, fill, off);
                        if (r < 0)
                                return strbuf_errorf(err, r, "cannot write to '%s' at offset %" PRIu64 ": %s",
                                                     target, off, strerror(-r));
                        off += fill;
                        s->written = off;
                        fill = 0;
                }
                if (n == 0)
                        break;
        }
        if (off == 0)
                return strbuf_errorf(err, -EBADMSG, "the image is empty");
        return 0;
}
static int drain(struct stream *s) {
        int r = ring_drain(&s->out);
        if (r < 0)
                s->read_err = r;
        return r;
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

/* After a failed install: the marker, where one was made, also says why
 * ("<what>\nfailed: <error>\n"), for whoever finds the half-written target. */
static void marker_note_failure(const struct spec_image *img, const char *target, const char *error) {
        char shown[URL_DISPLAY_MAX], path[PATH_MAX];
        bool raw = img->format == SPEC_IMAGE_RAW;
        if ((size_t) snprintf(path, sizeof path, "%s/%s", raw ? kiln_paths.run_dir : target,
                              raw ? IMAGE_RAW_INCOMPLETE_MARKER : IMAGE_INCOMPLETE_MARKER) >= sizeof path)
                return;
        _cleanup_close_ int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return;         /* none was made: the install failed before it */
        _cleanup_free_ char *text = strdupf("%s\nfailed: %s\n", raw ? target : url_display(img->url, shown),
                                            error ? error : "unknown error");
        if (text && write(fd, text, strlen(text)) == (ssize_t) strlen(text))
                (void) fsync(fd);
}

static int marker_remove(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        if (fsync(dirfd) < 0)
                return -errno;
        return 0;
}

static int install(struct stream *s, const struct spec_image *img, const char *target, struct image_result *res,
                   struct strbuf *err) {
        bool raw = img->format == SPEC_IMAGE_RAW;
        _cleanup_close_ int target_fd = -1, marker_dir = -1, old_cwd = -1;
        _cleanup_free_ uint8_t *rawbuf = NULL;
        uint64_t dev_size = 0;
        pthread_t fetcher, decompressor;
        struct stat st;
        char shown[URL_DISPLAY_MAX];
        int r;

        if (raw) {
                target_fd = open(target, O_WRONLY | O_CLOEXEC);
                if (target_fd < 0)
                        return strbuf_errorf(err, -errno, "cannot open '%s': %s", target, strerror(errno));
                if (fstat(target_fd, &st) < 0)
                        return strbuf_errorf(err, -errno, "cannot stat '%s': %s", target, strerror(errno));
                if (!S_ISBLK(st.st_mode))
                        return strbuf_errorf(err, -ENOTBLK, "'%s' is not a block device", target);
                if (ioctl(target_fd, BLKGETSIZE64, &dev_size) < 0)
                        return strbuf_errorf(err, -errno, "cannot get the size of '%s': %s", target, strerror(errno));
                if (posix_memalign((void **) &rawbuf, 4096, IMAGE_RAW_WRITE_SIZE) != 0)
                        return -ENOMEM;
                r = mkdir_p(kiln_paths.run_dir);
                if (r < 0)
                        return strbuf_errorf(err, r, "cannot create '%s': %s", kiln_paths.run_dir, strerror(-r));
                marker_dir = open(kiln_paths.run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (marker_dir < 0)
                        return strbuf_errorf(err, -errno, "cannot open '%s': %s", kiln_paths.run_dir, strerror(errno));
                r = marker_create(marker_dir, IMAGE_RAW_INCOMPLETE_MARKER, target);
        } else {
                target_fd = open(target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (target_fd < 0)
                        return strbuf_errorf(err, -errno, "cannot open target directory '%s': %s", target, strerror(errno));
                marker_dir = fcntl(target_fd, F_DUPFD_CLOEXEC, 3);
                if (marker_dir < 0)
                        return -errno;
                r = marker_create(marker_dir, IMAGE_INCOMPLETE_MARKER, url_display(img->url, shown));
        }
        if (r < 0)
                return strbuf_errorf(err, r, "cannot mark '%s' incomplete: %s", target, strerror(-r));

        /* libarchive extracts relative to the working directory. */
        if (!raw) {
                old_cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (old_cwd < 0)
                        return -errno;
                if (fchdir(target_fd) < 0)
                        return strbuf_errorf(err, -errno, "cannot enter '%s': %s", target, strerror(errno));
        }

        s->start_usec = s->last_progress_usec = now_usec();
        r = -pthread_create(&fetcher, NULL, fetch_thread, s);
        if (r < 0) {
                if (old_cwd >= 0)
                        (void) fchdir(old_cwd);
                return r;
        }
        r = -pthread_create(&decompressor, NULL, decompress_thread, s);
        if (r < 0) {
                stream_cancel(s, r);
                pthread_join(fetcher, NULL);
                if (old_cwd >= 0)
                        (void) fchdir(old_cwd);
                return r;
        }
        r = raw ? extract_raw(s, target_fd, dev_size, rawbuf, target, err) : extract_tar(s, res, err);
        if (r == 0)
                r = drain(s);   /* the hash covers trailing padding too */
        if (r < 0)
                stream_cancel(s, r);
        pthread_join(decompressor, NULL);
        pthread_join(fetcher, NULL);
        if (old_cwd >= 0 && fchdir(old_cwd) < 0 && r >= 0)
                r = -errno;

        if (s->fetch_err < 0 && s->fetch_err != -ECANCELED && (r >= 0 || r == s->fetch_err || s->read_err < 0))
                /* the caller names the image: the URL is not repeated here */
                return strbuf_errorf(err, s->fetch_err, "download failed: %s", strbuf_why(&s->fetch_why, s->fetch_err));
        if (r < 0) {
                if (!err->len)
                        strbuf_errorf(err, r, "%s", strerror(-r));
                return r;
        }

        res->downloaded = s->fres.bytes;
        res->attempts = s->fres.attempts;
        res->restarts = s->fres.restarts;
        res->written = s->written;
        memcpy(res->sha256, s->fres.sha256, sizeof(res->sha256));
        if (!sha256_hex_equal(img->sha256, s->fres.sha256))
                return strbuf_errorf(err, -EBADMSG, "sha256 mismatch: expected %s, got %s", img->sha256, s->fres.sha256);

        if (!s->opts->no_sync) {
                if (raw ? fsync(target_fd) < 0 : syncfs(target_fd) < 0)
                        return strbuf_errorf(err, -errno, "cannot sync '%s': %s", target, strerror(errno));
        }
        r = marker_remove(marker_dir, raw ? IMAGE_RAW_INCOMPLETE_MARKER : IMAGE_INCOMPLETE_MARKER);
        if (r < 0)
                return strbuf_errorf(err, r, "cannot remove the incomplete marker of '%s': %s", target, strerror(-r));
        return 0;
}

int image_install(const struct spec_image *img, const char *target, const struct image_options *opts,
                  struct image_result *ret, struct strbuf *err) {
        char shown[URL_DISPLAY_MAX];
        static const struct image_options defaults = {};
        _cleanup_(image_result_done) struct image_result scratch = {};
        struct image_result *res = ret ? ret : &scratch;
        _cleanup_strbuf_ struct strbuf scratch_err = STRBUF_INIT;      /* the marker says why even if the caller does not ask */
        _cleanup_free_ char *ca = NULL;
        int r;

        if (!opts)
                opts = &defaults;
        if (!err)
                err = &scratch_err;
        strbuf_reset(err);
        image_result_done(res);
        if (!img || strempty(img->url) || strempty(target))
                return strbuf_errorf(err, -EINVAL, "no image URL or target");
        if (!sha256_hex_valid(img->sha256))
                return strbuf_errorf(err, -EINVAL, "the image has no valid sha256 (64 hex digits)");
        r = fetch_check_url(img->url);
        if (r < 0)
                return strbuf_errorf(err, r, "%s '%s'", r == -EPROTONOSUPPORT ?
                                     "unsupported URL scheme (only http, https and file):" : "not a valid URL:", url_display(img->url, shown));

        _cleanup_(stream_done) struct stream s = {
                .url = img->url,
                .fopts = opts->fetch,
                .opts = opts,
        };
        s.fopts.max_size = img->max_size ? img->max_size : IMAGE_DEFAULT_MAX_SIZE;
        /* The tar install changes the working directory; pin a relative CA path first. */
        if (s.fopts.ca_file && s.fopts.ca_file[0] != '/') {
                ca = realpath(s.fopts.ca_file, NULL);
                if (!ca)
                        return strbuf_errorf(err, -errno, "cannot find CA file '%s': %s", s.fopts.ca_file, strerror(errno));
                s.fopts.ca_file = ca;
        }
        if (ring_init(&s.in, IMAGE_RING_SIZE) < 0 || ring_init(&s.out, IMAGE_RING_SIZE) < 0)
                return -ENOMEM;

        uint64_t start = now_usec();
        r = install(&s, img, target, res, err);
        res->usec = now_usec() - start;
        if (r < 0) {
                marker_note_failure(img, target, err->len ? err->buf : NULL);
                image_result_done(res);         /* a failure is told in err alone */
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
