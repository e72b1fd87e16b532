/* The symlink guard of tar extraction (image.c), without the extraction:
 * which archive entries to refuse because they, or their hard link
 * targets, lie below a symlink the archive made; which replace such a
 * symlink. Pure (no file system access), so tests/fuzz/fuzz-targuard.c can
 * drive it with any sequence of entries.
 *
 * libarchive's ARCHIVE_EXTRACT_SECURE_SYMLINKS lstat()s every component of
 * every path (six syscalls per entry, most of kiln's extraction time on a
 * root filesystem). When the target holds no symlink at the start, the only
 * symlinks are those this archive creates, so kiln remembers their paths
 * instead and refuses an entry (or a hard link target) below one of them, as
 * libarchive would; an entry replacing such a symlink removes it first, as
 * libarchive does. When the target already holds symlinks, or the set would
 * outgrow TAR_GUARD_MAX_BYTES, or a path is too long to check here,
 * libarchive's own check is switched on instead. Absolute paths and ".."
 * are libarchive's to refuse (ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS,
 * _NODOTDOT), and owners are numeric (no name lookup): neither is decided
 * here. */
#pragma once
#include "util.h"

#define TAR_GUARD_MAX_BYTES (2u << 20)

struct tar_guard {
        char **slot;            /* open addressing; (char *) 1 is a tombstone */
        size_t cap, used;       /* used: live + tombstones */
        size_t bytes;
        bool off;               /* not (or no longer) in use: libarchive checks */
};

/* Frees what the guard holds and switches it off (a cleanup). */
void tar_guard_done(struct tar_guard *g);

/* libarchive's reading of an entry path: "./a//b/./c/" is "a/b/c".
 * 1: normalised into buf; 0: nothing to check (an absolute path or "..",
 * which libarchive refuses, or the root itself); -ENAMETOOLONG. */
int tar_guard_normalize(const char *in, char *buf, size_t size);

/* Remember a normalised path as a symlink the archive made. 0, -E2BIG when
 * the set would outgrow TAR_GUARD_MAX_BYTES (the caller switches the guard
 * off), -ENOMEM. */
int tar_guard_add(struct tar_guard *g, const char *path);
/* Whether a normalised path is a remembered symlink. */
bool tar_guard_has(const struct tar_guard *g, const char *path);
/* Forget it (it was removed). 0 or -ENOENT. */
int tar_guard_forget(struct tar_guard *g, const char *path);

struct tar_guard_verdict {
        bool uncheckable;       /* a path too long to check: switch to libarchive's check */
        bool makes_link;        /* remember path_buf after the entry was written */
        bool replaces_link;     /* path_buf is a remembered symlink: remove it, then forget it */
        const char *below;      /* -EPERM: the remembered symlink (valid until the guard changes) */
        bool via_hardlink;      /* -EPERM: it is the hard link target that lies below it */
};

/* Decides on one entry (its path, its hard link target or NULL, whether it
 * is a symlink) without touching anything; the normalised path is left in
 * path_buf. ret is filled in every case. 0, or -EPERM (refused: see
 * ret->below and ret->via_hardlink). */
int tar_guard_check(const struct tar_guard *g, const char *path, const char *hardlink, bool symlink, char *path_buf,
                    size_t size, struct tar_guard_verdict *ret);
