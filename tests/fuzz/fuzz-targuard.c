/* libFuzzer target: the symlink guard of tar extraction (targuard.h), fed a
 * sequence of archive entries the way image.c's extract_tar() feeds it,
 * against a naive model (a plain list of the symlinks made, searched
 * linearly; paths normalised by splitting on '/'). The guard must refuse an
 * entry exactly when the model finds a symlink above its path or its hard
 * link target, name that symlink, report a replaced symlink and a new one
 * as the model does, and never touch the file system.
 * Input: entries one a line; the first byte is the kind ('l' symlink, 'h'
 * hard link "PATH|TARGET", anything else a file or directory). */
#include "targuard.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODEL_MAX 4096

struct model {
        char *link[MODEL_MAX];
        size_t n;
};

/* 1: normalised into out; 0: absolute, "..", or empty; -1: too long */
static int model_normalize(const char *in, char *out, size_t size) {
        if (in[0] == '/')
                return 0;
        size_t n = 0;
        const char *p = in;
        while (*p) {
                size_t len = strcspn(p, "/");
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return 0;
                if (len > 0 && !(len == 1 && p[0] == '.')) {
                        /* the '/' before it (none before the first), itself, the NUL */
                        size_t need = n + (n > 0) + len + 1;
                        if (need > size)
                                return -1;
                        if (n)
                                out[n++] = '/';
                        memcpy(out + n, p, len);
                        n += len;
                }
                p += len;
                if (*p == '/')
                        p++;
        }
        out[n] = 0;
        return n > 0;
}

static ssize_t model_find(const struct model *m, const char *p, size_t n) {
        for (size_t i = 0; i < m->n; i++)
                if (strlen(m->link[i]) == n && memcmp(m->link[i], p, n) == 0)
                        return (ssize_t) i;
        return -1;
}

/* The first proper prefix (at a '/') of path that is a symlink. */
static const char *model_above(const struct model *m, const char *path) {
        for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
                ssize_t i = model_find(m, path, (size_t) (p - path));
                if (i >= 0)
                        return m->link[i];
        }
        return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = strndup((const char *) data, size);
        if (!text)
                return 0;

        struct tar_guard g = {};
        struct model m = {};
        /* the entry's path in a 256-byte buffer (both sides find a longer one
         * too long); the hard link target in PATH_MAX, as tar_guard_check()
         * normalises it: a 256-byte model buffer called a longer target
         * uncheckable where the guard checks it, and trapped (CI, 2026-12-07) */
        char norm[256], want[256], want_link[PATH_MAX];
        char *save = text;
        for (char *line = text; line && !g.off; line = save) {
                char *nl = strchr(line, '\n');
                save = nl ? nl + 1 : NULL;
                if (nl)
                        *nl = 0;
                if (!*line)
                        continue;
                char kind = line[0], *path = line + 1, *hardlink = NULL;
                if (kind == 'h') {
                        char *bar = strchr(path, '|');
                        if (!bar)
                                continue;
                        *bar = 0;
                        hardlink = bar + 1;
                }

                struct tar_guard_verdict v;
                int r = tar_guard_check(&g, path, hardlink, kind == 'l', norm, sizeof(norm), &v);
                int k = model_normalize(path, want, sizeof(want));
                int kl = hardlink ? model_normalize(hardlink, want_link, sizeof(want_link)) : 0;
                if (k < 0 || (k > 0 && kl < 0)) {
                        if (r != 0 || !v.uncheckable)
                                __builtin_trap();
                        break;          /* extract_tar switches to libarchive's check */
                }
                if (v.uncheckable)
                        __builtin_trap();
                if (k == 0) {
                        if (r != 0 || v.makes_link || v.replaces_link)
                                __builtin_trap();
                        continue;       /* libarchive refuses it, or nothing to guard */
                }
                if (strcmp(norm, want) != 0)
                        __builtin_trap();
                const char *above_link = kl > 0 ? model_above(&m, want_link) : NULL;
                const char *above = above_link ? above_link : model_above(&m, want);
                if (above) {
                        if (r != -EPERM || !v.below || strcmp(v.below, above) != 0 || v.via_hardlink != !!above_link)
                                __builtin_trap();
                        continue;       /* the extraction stops; go on to test more */
                }
                if (r != 0)
                        __builtin_trap();
                /* both decided on the state before the entry */
                bool makes = kl > 0 ? model_find(&m, want_link, strlen(want_link)) >= 0 : kind == 'l' && !hardlink;
                if (v.makes_link != makes)
                        __builtin_trap();
                ssize_t self = model_find(&m, want, strlen(want));
                if (v.replaces_link != (self >= 0))
                        __builtin_trap();
                if (self >= 0) {
                        if (tar_guard_forget(&g, norm) != 0)
                                __builtin_trap();
                        free(m.link[self]);
                        m.link[self] = m.link[--m.n];
                }
                if (makes && model_find(&m, want, strlen(want)) < 0) {
                        if (m.n == MODEL_MAX)
                                break;
                        r = tar_guard_add(&g, norm);
                        if (r == -E2BIG)
                                break;
                        if (r < 0 || !(m.link[m.n++] = strdup(want)))
                                __builtin_trap();
                }
                for (size_t i = 0; i < m.n; i++)
                        if (!tar_guard_has(&g, m.link[i]))
                                __builtin_trap();
        }
        tar_guard_done(&g);
        for (size_t i = 0; i < m.n; i++)
                free(m.link[i]);
        free(text);
        return 0;
}
