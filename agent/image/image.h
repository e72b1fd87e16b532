/* Streaming image install: HTTP(S)/file → sha256 → libarchive → target.
 *
 * A fetch thread (fetch.c: retries, Range resume; a server that ignores
 * Range is read again from 0 and the bytes already delivered are dropped, so
 * libarchive sees one continuous stream) feeds a bounded ring buffer; a
 * decompress thread (libarchive's filters) feeds a second one; the calling
 * thread reads the tar from that and writes the files, so download,
 * decompression and writing overlap like `curl | zstd -dc | tar -x`. Neither
 * a temporary file nor the whole image in memory is needed (memory is bounded
 * by the rings, 2 x IMAGE_RING_SIZE, plus the decompressor's window).
 *
 * tar: the compression (zstd, xz, gzip, bzip2 or none) is detected from the
 * data; entries are extracted into the target directory with numeric owners
 * (no name lookups: there is no passwd to ask), modes, mtimes, ACLs, xattrs,
 * file flags, hard links, symlinks, device nodes and sparse files. Entries
 * that would escape the target ("..", absolute paths, through a symlink) are
 * refused and fail the install. Symlinks are checked by libarchive per path
 * component only when the target already holds symlinks; into an empty
 * target kiln remembers the symlinks the archive makes and checks against
 * those (no syscalls per entry).
 * raw: the (optionally compressed) stream is written to a block device with
 * large aligned writes, then fsync'ed.
 *
 * The sha256 of the downloaded bytes is checked at the end. Until the install
 * is verified the target is marked incomplete: tar: <target>/.kiln-incomplete;
 * raw: <run_dir>/image-incomplete (naming the device). The marker is removed
 * only after a verified, fully written install; on any failure it stays. */
#pragma once
#include "fetch.h"
#include "spec.h"
#include "util.h"

#define IMAGE_INCOMPLETE_MARKER ".kiln-incomplete"
#define IMAGE_RAW_INCOMPLETE_MARKER "image-incomplete"
#define IMAGE_DEFAULT_MAX_SIZE (64ull << 30)    /* when the spec sets no max_size */
#define IMAGE_RING_SIZE (4u << 20)      /* each of the two rings (downloaded, decompressed) */

struct image_progress {
        uint64_t downloaded;    /* bytes received in the current stream */
        uint64_t total;         /* announced size; 0 = unknown */
        uint64_t written;       /* bytes extracted / written to the device */
        uint64_t elapsed_usec;
        double rate;            /* download rate, bytes per second */
        int64_t eta_sec;        /* -1 = unknown */
        bool done;              /* the last call, after verification */
};

typedef void (*image_progress_t)(const struct image_progress *p, void *userdata);

struct image_options {
        struct fetch_options fetch;     /* CA, timeouts, retries; max_size is taken from the image */
        image_progress_t progress;      /* may be NULL; called from the installing thread */
        void *progress_userdata;
        unsigned progress_interval_ms;  /* 0 = 1000 */
        bool no_sync;                   /* skip syncfs()/fsync() at the end (benchmarks only) */
};

struct image_result {
        uint64_t downloaded;    /* bytes of the verified stream */
        uint64_t written;       /* file content bytes extracted, or bytes written to the device */
        uint64_t entries;       /* tar entries */
        unsigned attempts;      /* HTTP requests made */
        unsigned restarts;      /* times a server ignored Range (the repeated bytes were dropped) */
        unsigned warnings;      /* non-fatal libarchive warnings (e.g. xattrs unsupported) */
        char *warning;          /* the first of them: "'PATH': MESSAGE"; NULL if none */
        uint64_t usec;
        char sha256[65];
};

/* Frees what a result holds and zeroes it; also a cleanup:
 * _cleanup_(image_result_done) struct image_result res = {}; */
void image_result_done(struct image_result *res);

/* The format an image for target has when none is named: raw for a block
 * device, else tar (a directory, or a path that does not exist yet). */
enum spec_image_format image_format_for_target(const char *target);

/* img->url and img->sha256 are required; img->format picks tar or raw;
 * target: the mounted root directory (tar) or the block device (raw).
 * opts may be NULL. ret may be NULL, or zeroed, or an earlier result (it is
 * done first); it is filled on success and zeroed on failure. err (may be
 * NULL; emptied first) says on failure what went wrong, for the caller's one
 * log line (e.g. "sha256 mismatch: expected …, got …"), and the same text
 * goes into the incomplete marker.
 * Errors: -EBADMSG sha256 mismatch or corrupt/truncated archive, -EPERM an
 * entry was refused (escapes the target), -EFBIG larger than max_size,
 * -ENOTDIR / -ENOTBLK wrong kind of target, fetch errors (see fetch.h),
 * -errno from writing. */
int image_install(const struct spec_image *img, const char *target, const struct image_options *opts,
                  struct image_result *ret, struct strbuf *err);

/* A progress callback for terminals and logs: a single updating line on a
 * TTY, otherwise a log line every 10 s (and one at the end).
 * userdata: a struct image_progress_printer, zero-initialised. */
struct image_progress_printer {
        const char *what;       /* label; NULL = "image" */
        uint64_t last_log_usec;
        int tty;                /* 0 = not decided yet, 1 = yes, -1 = no */
};
void image_progress_print(const struct image_progress *p, void *userdata);
