/* Small helpers every module uses: cleanup attributes, ownership transfer,
 * checked number parsing. Written here rather than taken from systemd
 * because they are a few lines each and systemd's are LGPL. */
#pragma once
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_ __attribute__((warn_unused_result))

static inline void freep(void *p) { free(*(void **) p); }
static inline void closep(int *fd) { if (*fd >= 0) close(*fd); }
static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void closedirp(DIR **d) { if (*d) closedir(*d); }
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

/* Generates a cleanup helper for a foreign handle: DEFINE_CLEANUP(crypt_free, struct crypt_device *) */
#define DEFINE_CLEANUP(func, type) \
        static inline void func##p(type *p) { if (*p) func(*p); }

/* Hand ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p) ({ typeof(p) _tp = (p); (p) = NULL; _tp; })
#define TAKE_FD(fd) ({ int _tf = (fd); (fd) = -1; _tf; })

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))
#define streq(a, b) (strcmp((a), (b)) == 0)
#define strempty(s) (!(s) || !*(s))

/* Overwrite memory that held a secret; not optimised away. */
static inline void explicit_wipe(void *p, size_t n) { if (p && n) explicit_bzero(p, n); }

/* Free a NULL-terminated or counted string array. Accept NULL, return NULL. */
char **strv_free(char **v);
static inline void strv_freep(char ***v) { strv_free(*v); }
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(char *const *v);
int strv_push(char ***v, char *s);          /* takes ownership of s */
int strv_pushdup(char ***v, const char *s); /* pushes a copy of s */
bool strv_contains(char *const *v, const char *s);

char *strdup_or_null(const char *s);

/* A newly allocated printf-formatted string, NULL when out of memory. */
char *strdupf(const char *fmt, ...) _printf_(1, 2);

/* Lower-case hex of len bytes into out, which must hold 2 * len + 1 bytes. */
void hex_encode(const void *data, size_t len, char *out);
/* s is exactly n hex digits (either case): a sha256 is hex_valid(s, 64). */
bool hex_valid(const char *s, size_t n);

/* Checked unsigned parsing: whole string, base 10, no sign, no overflow. */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atou(const char *s, unsigned *ret);

/* Sizes: K M G T P and KiB .. PiB are powers of 1024 (the letter in either
 * case), KB MB GB TB PB powers of 1000; "512B" and "512" are bytes. No
 * fractions, no spaces. -EINVAL on garbage, -ERANGE on overflow.
 * parse_size() says in *ret_flags (may be NULL) how it was written. */
#define SIZE_BARE    1u         /* no unit at all: "512" */
#define SIZE_BYTES   2u         /* "512B" */
#define SIZE_DECIMAL 4u         /* KB MB GB TB PB */
int parse_size(const char *s, uint64_t *ret, unsigned *ret_flags);
/* "1.5 GiB"-style human text into buf (always terminated). */
const char *format_size(uint64_t bytes, char *buf, size_t len);

/* Monotonic clock in microseconds. */
uint64_t now_usec(void);

/* Read a whole small file (e.g. under /sys) into a newly allocated, trimmed string. */
int read_one_line(const char *path, char **ret);
/* Read a whole file up to max bytes; -EFBIG if larger. */
int read_full_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* The same from an open descriptor (a pipe, stdin), read to its end. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_len);
/* A descriptor as open() (or openat2()) returned it, checked with fstat():
 * fd with *ret_st filled, or -errno: open()'s own (fd < 0, errno still
 * set) or fstat()'s, fd then closed. */
struct stat;
int fd_stat(int fd, struct stat *ret_st);
/* mkdir -p: dir and its missing parents, mode 0755. */
int mkdir_p(const char *dir);
/* Replace path with buf atomically: parents made, a temporary file beside it
 * (O_NOFOLLOW), fsync, rename, fsync of the directory. */
int write_file_atomic(const char *path, const char *buf, size_t len);
/* The same with the file's mode (umask ignored); the file is never readable
 * by others than the owner before it has that mode. */
int write_file_atomic_mode(const char *path, const char *buf, size_t len, mode_t mode);
