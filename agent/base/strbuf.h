/* Growable string with a hard maximum, for anything input can make larger
 * (curl's dynbuf idea). Appending past max fails with -E2BIG. */
#pragma once
#include "util.h"
#include <stdarg.h>

struct strbuf {
        char *buf;      /* always NUL-terminated once anything was added */
        size_t len;
        size_t alloc;
        size_t max;     /* 0 = default (64 MiB) */
};

#define STRBUF_INIT { NULL, 0, 0, 0 }

int strbuf_add(struct strbuf *sb, const void *data, size_t n);
int strbuf_adds(struct strbuf *sb, const char *s);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) _printf_(2, 3);
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* Append s as a JSON string literal, quotes included. */
int strbuf_add_json_string(struct strbuf *sb, const char *s);
void strbuf_reset(struct strbuf *sb);
/* Wipes the contents (for buffers that may have held secrets) and frees. */
void strbuf_release(struct strbuf *sb);
char *strbuf_detach(struct strbuf *sb);
/* Error detail, kiln's one way: a function that can fail in more than one way
 * takes a `struct strbuf *err` (may be NULL: nothing is kept) and, when it
 * fails, says there what failed and on what. strbuf_errorf() replaces what
 * err holds with the formatted text (fmt may print err's old text) and
 * returns r, for `return strbuf_errorf(err, -EIO, "cannot read '%s'", p);`.
 * If the text cannot be stored, err is left empty. */
int strbuf_errorf(struct strbuf *err, int r, const char *fmt, ...) _printf_(3, 4);
/* What a caller prints after a failure r: err's text, or strerror(-r) when
 * the callee said nothing (out of memory, or a failure with no detail). */
const char *strbuf_why(const struct strbuf *err, int r);
static inline const char *strbuf_str(const struct strbuf *sb) { return sb->buf ? sb->buf : ""; }
static inline void strbuf_releasep(struct strbuf *sb) { strbuf_release(sb); }
#define _cleanup_strbuf_ _cleanup_(strbuf_releasep)
