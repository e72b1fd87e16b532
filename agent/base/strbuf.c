#include "strbuf.h"

#define STRBUF_DEFAULT_MAX (64u * 1024u * 1024u)

static int strbuf_grow(struct strbuf *sb, size_t extra) {
        size_t max = sb->max ? sb->max : STRBUF_DEFAULT_MAX;
        if (extra > max || sb->len > max - extra)
                return -E2BIG;
        size_t need = sb->len + extra + 1;
        if (need <= sb->alloc)
                return 0;
        size_t alloc = sb->alloc ? sb->alloc : 64;
        while (alloc < need)
                alloc *= 2;
        char *nb = realloc(sb->buf, alloc);
        if (!nb)
                return -ENOMEM;
        sb->buf = nb;
        sb->alloc = alloc;
        return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t n) {
        int r = strbuf_grow(sb, n);
        if (r < 0)
                return r;
        if (n)
                memcpy(sb->buf + sb->len, data, n);
        sb->len += n;
        sb->buf[sb->len] = 0;
        return 0;
}

int strbuf_adds(struct strbuf *sb, const char *s) {
        return strbuf_add(sb, s, strlen(s));
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap) {
        va_list ap2;
        va_copy(ap2, ap);
        int n = vsnprintf(NULL, 0, fmt, ap2);
        va_end(ap2);
        if (n < 0)
                return -EINVAL;
        int r = strbuf_grow(sb, (size_t) n);
        if (r < 0)
                return r;
        vsnprintf(sb->buf + sb->len, (size_t) n + 1, fmt, ap);
        sb->len += (size_t) n;
        return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = strbuf_vaddf(sb, fmt, ap);
        va_end(ap);
        return r;
}

int strbuf_add_json_string(struct strbuf *sb, const char *s) {
        int r = strbuf_add(sb, "\"", 1);
        for (const unsigned char *p = (const unsigned char *) (s ? s : ""); r >= 0 && *p; p++) {
                switch (*p) {
                case '"':  r = strbuf_add(sb, "\\\"", 2); break;
                case '\\': r = strbuf_add(sb, "\\\\", 2); break;
                case '\n': r = strbuf_add(sb, "\\n", 2); break;
                case '\r': r = strbuf_add(sb, "\\r", 2); break;
                case '\t': r = strbuf_add(sb, "\\t", 2); break;
                default:
                        if (*p < 0x20)
                                r = strbuf_addf(sb, "\\u%04x", *p);
                        else
                                r = strbuf_add(sb, p, 1);
                }
        }
        return r < 0 ? r : strbuf_add(sb, "\"", 1);
}

void strbuf_reset(struct strbuf *sb) {
        sb->len = 0;
        if (sb->buf)
                sb->buf[0] = 0;
}

void strbuf_release(struct strbuf *sb) {
        if (sb->buf)
                explicit_wipe(sb->buf, sb->alloc);
        free(sb->buf);
        sb->buf = NULL;
        sb->len = sb->alloc = 0;
}

char *strbuf_detach(struct strbuf *sb) {
        if (!sb->buf) {
                if (strbuf_grow(sb, 0) < 0)
                        return NULL;
                sb->buf[0] = 0;
        }
        char *s = sb->buf;
        sb->buf = NULL;
        sb->len = sb->alloc = 0;
        return s;
}

int strbuf_errorf(struct strbuf *err, int r, const char *fmt, ...) {
        if (!err)
                return r;
        _cleanup_strbuf_ struct strbuf m = { .max = err->max };
        va_list ap;
        va_start(ap, fmt);
        int q = strbuf_vaddf(&m, fmt, ap);
        va_end(ap);
        strbuf_release(err);
        if (q >= 0) {
                *err = m;
                m = (struct strbuf) STRBUF_INIT;
        }
        return r;
}

const char *strbuf_why(const struct strbuf *err, int r) {
        return err && err->len ? err->buf : strerror(-r);
}
