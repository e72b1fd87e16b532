#include "cmdline.h"
#include "spec.h"

#include <ctype.h>

void cmdline_done(struct kiln_cmdline *c) {
        if (!c)
                return;
        free(c->spec);
        free(c->spec_sha256);
        free(c->ca);
        free(c->report);
        free(c->enlist);
        free(c->reinstall);
        strv_free(c->unknown);
        *c = (struct kiln_cmdline) {};
}

/* The next word of *p into a new string, quotes removed; NULL at the end. */
static int next_word(const char **p, char **ret) {
        const char *s = *p;
        while (*s && isspace((unsigned char) *s))
                s++;
        if (!*s) {
                *p = s;
                *ret = NULL;
                return 0;
        }
        size_t cap = strlen(s) + 1, n = 0;
        char *w = malloc(cap);
        if (!w)
                return -ENOMEM;
        bool quoted = false;
        for (; *s && (quoted || !isspace((unsigned char) *s)); s++) {
                if (*s == '"') {
                        quoted = !quoted;
                        continue;
                }
                w[n++] = *s;
        }
        w[n] = 0;
        *p = s;
        if (quoted) {
                free(w);
                return -EINVAL;
        }
        *ret = w;
        return 0;
}

static int parse_bool(const char *v) {
        static const char *const yes[] = { "1", "yes", "true", "on" }, *const no[] = { "0", "no", "false", "off" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(v, yes[i]) == 0)
                        return 1;
                if (strcasecmp(v, no[i]) == 0)
                        return 0;
        }
        return -EINVAL;
}

static int set_str(char **field, const char *v) {
        char *c = strdup(v);
        if (!c)
                return -ENOMEM;
        free(*field);
        *field = c;
        return 0;
}

int cmdline_parse(const char *text, struct kiln_cmdline *ret, char **ret_bad) {
        struct kiln_cmdline c = {};
        int r = 0;

        if (!text)
                return -EINVAL;
        if (strlen(text) > CMDLINE_MAX_BYTES)
                return -E2BIG;

        for (const char *p = text;;) {
                _cleanup_free_ char *w = NULL;
                const char *before = p;
                r = next_word(&p, &w);
                if (r < 0) {
                        if (ret_bad) {
                                while (*before && isspace((unsigned char) *before))
                                        before++;
                                *ret_bad = strdup(before);
                        }
                        goto fail;
                }
                if (!w)
                        break;
                if (strncmp(w, "kiln.", 5) != 0)
                        continue;

                char *eq = strchr(w, '=');
                const char *v = eq ? eq + 1 : NULL;
                if (eq)
                        *eq = 0;
                const char *key = w + 5;

                if (streq(key, "debug") || streq(key, "fresh")) {
                        int b = v ? parse_bool(v) : 1;
                        if (b < 0) {
                                r = -EINVAL;
                                goto bad;
                        }
                        *(streq(key, "debug") ? &c.debug : &c.fresh) = b;
                        continue;
                }
                if (streq(key, "enlist.timeout")) {
                        if (!v || safe_atou(v, &c.enlist_timeout_sec) < 0 || c.enlist_timeout_sec == 0 ||
                            c.enlist_timeout_sec > 86400) {
                                r = -EINVAL;
                                goto bad;
                        }
                        continue;
                }
                char **field = streq(key, "spec") ? &c.spec :
                               streq(key, "enlist") ? &c.enlist :
                               streq(key, "spec.sha256") ? &c.spec_sha256 :
                               streq(key, "ca") ? &c.ca :
                               streq(key, "report") ? &c.report :
                               streq(key, "reinstall") ? &c.reinstall : NULL;
                if (!field) {
                        if (!strv_contains(c.unknown, w)) {
                                char *k = strdup(w);
                                if (!k || strv_push(&c.unknown, k) < 0) {
                                        free(k);
                                        r = -ENOMEM;
                                        goto fail;
                                }
                        }
                        continue;
                }
                if (strempty(v) || (field == &c.spec_sha256 && !hex_valid(v, 64)) ||
                    (field == &c.reinstall && spec_reinstall_problem(v))) {
                        r = -EINVAL;
                        goto bad;
                }
                r = set_str(field, v);
                if (r < 0)
                        goto fail;
                if (field == &c.spec_sha256)
                        for (char *h = c.spec_sha256; *h; h++)
                                *h = (char) tolower((unsigned char) *h);
                continue;
        bad:
                if (eq)
                        *eq = '=';
                if (ret_bad)
                        *ret_bad = TAKE_PTR(w);
                goto fail;
        }
        *ret = c;
        return 0;
fail:
        cmdline_done(&c);
        return r;
}

int cmdline_read(const char *procfs, struct kiln_cmdline *ret, char **ret_bad) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len;
        if (asprintf(&path, "%s/cmdline", procfs) < 0)
                return -ENOMEM;
        int r = read_full_file(path, CMDLINE_MAX_BYTES, &text, &len);
        if (r < 0)
                return r;
        return cmdline_parse(text, ret, ret_bad);
}
