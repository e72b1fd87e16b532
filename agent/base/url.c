#include "url.h"
#include "util.h"

#include <string.h>
#include <strings.h>

struct out {
        char *buf;
        size_t len;
        bool cut;
};

static void out_add(struct out *o, const char *s, size_t n) {
        for (size_t i = 0; i < n && !o->cut; i++) {
                if (o->len + 1 >= URL_DISPLAY_MAX) {
                        o->cut = true;
                        break;
                }
                unsigned char c = (unsigned char) s[i];
                o->buf[o->len++] = c < 0x20 || c == 0x7f ? '_' : (char) c;
        }
}

static bool is_scheme_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
               c == '.';
}

/* The length of the scheme at url if "://" follows it, else 0. */
static size_t scheme_len(const char *url) {
        size_t n = 0;
        while (is_scheme_char(url[n]))
                n++;
        return n > 0 && strncmp(url + n, "://", 3) == 0 ? n : 0;
}

const char *url_display(const char *url, char buf[static URL_DISPLAY_MAX]) {
        struct out o = { .buf = buf };

        if (!url) {
                buf[0] = 0;
                return buf;
        }
        const char *p = url;
        size_t sn = scheme_len(url);
        if (sn > 0) {
                out_add(&o, url, sn + 3);
                p += sn + 3;
        }
        /* The authority ends at the first '/', '?' or '#', its userinfo at
         * its last '@'. Without a scheme nothing can be told apart: all up
         * to the last '@' before a '?' or '#' goes. */
        size_t an = strcspn(p, sn > 0 ? "/?#" : "?#");
        const char *at = NULL;
        for (size_t i = 0; i < an; i++)
                if (p[i] == '@')
                        at = p + i;
        if (at)
                p = at + 1;
        if (sn > 0) {
                an = strcspn(p, "/?#");
                out_add(&o, p, an);
                p += an;
        }
        size_t pn = strcspn(p, "?#");
        out_add(&o, p, pn);
        p += pn;
        if (*p == '?')
                out_add(&o, "?...", 4);
        else if (*p == '#')
                out_add(&o, "#...", 4);
        if (o.cut) {
                o.len = URL_DISPLAY_MAX - 4;
                memcpy(buf + o.len, "...", 3);
                o.len += 3;
        }
        buf[o.len] = 0;
        return buf;
}

char *url_display_dup(const char *url) {
        char buf[URL_DISPLAY_MAX];
        return url ? strdup(url_display(url, buf)) : NULL;
}

static bool url_end(char c) {
        return c == 0 || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\'' || c == '"' || c == '>' || c == '<' ||
               c == '`';
}

int url_scrub(const char *text, size_t len, struct strbuf *out) {
        size_t i = 0, done = 0;
        int r;

        while (i + 3 <= len) {
                if (memcmp(text + i, "://", 3) != 0) {
                        i++;
                        continue;
                }
                size_t s = i;
                while (s > done && is_scheme_char(text[s - 1]))
                        s--;
                size_t e = i + 3;
                while (e < len && !url_end(text[e]))
                        e++;
                /* "://" with no scheme before it is rendered as if it had one */
                char buf[URL_DISPLAY_MAX];
                size_t pre = s == i ? 1 : 0, n = e - s;
                _cleanup_free_ char *tmp = malloc(pre + n + 1);
                if (!tmp)
                        return -ENOMEM;
                tmp[0] = 'x';
                memcpy(tmp + pre, text + s, n);
                tmp[pre + n] = 0;
                r = strbuf_add(out, text + done, s - done);
                if (r < 0)
                        return r;
                r = strbuf_adds(out, url_display(tmp, buf) + pre);
                if (r < 0)
                        return r;
                done = i = e;
        }
        return strbuf_add(out, text + done, len - done);
}

int url_scrub_debug_line(const char *line, size_t n, bool out, struct strbuf *ret) {
        static const char *const secret_headers[] = { "authorization:", "proxy-authorization:", "cookie:", "set-cookie:" };
        _cleanup_strbuf_ struct strbuf shown = STRBUF_INIT;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(secret_headers); i++) {
                size_t hn = strlen(secret_headers[i]);
                if (n >= hn && strncasecmp(line, secret_headers[i], hn) == 0) {
                        r = strbuf_add(ret, line, hn);
                        return r < 0 ? r : strbuf_adds(ret, " [redacted]");
                }
        }
        if (n >= 9 && strncasecmp(line, "location:", 9) == 0) {
                /* a relative Location has no "scheme://" for url_scrub() to find */
                char buf[URL_DISPLAY_MAX];
                _cleanup_free_ char *v = strndup(line + 9, n - 9);
                if (!v)
                        return -ENOMEM;
                r = strbuf_add(ret, line, 9);
                return r < 0 ? r : strbuf_addf(ret, " %s", url_display(v + strspn(v, " \t"), buf));
        }
        if (out) {
                /* "GET /path?query HTTP/1.1": the target's query string goes */
                const char *sp = memchr(line, ' ', n);
                const char *qm = sp ? memchr(sp, '?', n - (size_t) (sp - line)) : NULL;
                if (qm) {
                        const char *sp2 = memchr(qm, ' ', n - (size_t) (qm - line));
                        r = strbuf_add(ret, line, (size_t) (qm - line));
                        if (r >= 0)
                                r = strbuf_adds(ret, "?...");
                        return r < 0 || !sp2 ? r : strbuf_add(ret, sp2, n - (size_t) (sp2 - line));
                }
        }
        r = url_scrub(line, n, &shown);
        if (r < 0)
                return r;
        /* HTTP/2: curl describes the request as "[:path: /x?query]" */
        const char *s = strbuf_str(&shown), *ph = strstr(s, ":path: "), *qm = ph ? strchr(ph, '?') : NULL;
        if (qm) {
                const char *close = strchr(qm, ']');
                r = strbuf_add(ret, s, (size_t) (qm - s));
                if (r >= 0)
                        r = strbuf_adds(ret, "?...");
                return r < 0 || !close ? r : strbuf_adds(ret, close);
        }
        return strbuf_add(ret, s, shown.len);
}
