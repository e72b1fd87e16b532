#include "targuard.h"

#include <limits.h>
#include <string.h>

#define TOMB ((char *) 1)

void tar_guard_done(struct tar_guard *g) {
        for (size_t i = 0; i < g->cap; i++)
                if (g->slot[i] != TOMB)
                        free(g->slot[i]);
        free(g->slot);
        *g = (struct tar_guard) { .off = true };
}

static uint64_t hash_bytes(const char *p, size_t n) {
        uint64_t h = 0xcbf29ce484222325ull;     /* FNV-1a */
        for (size_t i = 0; i < n; i++)
                h = (h ^ (uint8_t) p[i]) * 0x100000001b3ull;
        return h;
}

/* The slot holding p[0..n), or NULL. */
static char **find(const struct tar_guard *g, const char *p, size_t n) {
        if (g->cap == 0)
                return NULL;
        for (size_t i = hash_bytes(p, n) & (g->cap - 1);; i = (i + 1) & (g->cap - 1)) {
                char *x = g->slot[i];
                if (!x)
                        return NULL;
                if (x != TOMB && strncmp(x, p, n) == 0 && x[n] == 0)
                        return &g->slot[i];
        }
}

static int grow(struct tar_guard *g) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        char **slot = calloc(cap, sizeof(char *));
        if (!slot)
                return -ENOMEM;
        size_t used = 0;
        for (size_t i = 0; i < g->cap; i++) {
                char *x = g->slot[i];
                if (!x || x == TOMB)
                        continue;
                size_t j = hash_bytes(x, strlen(x)) & (cap - 1);
                while (slot[j])
                        j = (j + 1) & (cap - 1);
                slot[j] = x;
                used++;
        }
        free(g->slot);
        g->slot = slot;
        g->cap = cap;
        g->used = used;
        return 0;
}

int tar_guard_add(struct tar_guard *g, const char *path) {
        if (find(g, path, strlen(path)))
                return 0;
        size_t need = strlen(path) + 1 + 2 * sizeof(char *);
        if (g->bytes + need + (g->cap ? g->cap : 1024) * 2 * sizeof(char *) > TAR_GUARD_MAX_BYTES)
                return -E2BIG;
        if ((g->used + 1) * 10 > g->cap * 7) {
                int r = grow(g);
                if (r < 0)
                        return r;
        }
        char *x = strdup(path);
        if (!x)
                return -ENOMEM;
        size_t i = hash_bytes(x, strlen(x)) & (g->cap - 1);
        while (g->slot[i] && g->slot[i] != TOMB)
                i = (i + 1) & (g->cap - 1);
        if (!g->slot[i])
                g->used++;
        g->slot[i] = x;
        g->bytes += need;
        return 0;
}

bool tar_guard_has(const struct tar_guard *g, const char *path) {
        return find(g, path, strlen(path)) != NULL;
}

int tar_guard_forget(struct tar_guard *g, const char *path) {
        char **slot = find(g, path, strlen(path));
        if (!slot)
                return -ENOENT;
        g->bytes -= strlen(*slot) + 1 + 2 * sizeof(char *);
        free(*slot);
        *slot = TOMB;
        return 0;
}

int tar_guard_normalize(const char *in, char *buf, size_t size) {
        size_t n = 0;
        if (!in || in[0] == '/')
                return 0;
        for (const char *p = in; *p;) {
                const char *end = strchrnul(p, '/');
                size_t len = (size_t) (end - p);
                if (len == 2 && p[0] == '.' && p[1] == '.')
                        return 0;
                if (len > 0 && !(len == 1 && p[0] == '.')) {
                        if (n + (n > 0) + len + 1 > size)
                                return -ENAMETOOLONG;
                        if (n > 0)
                                buf[n++] = '/';
                        memcpy(buf + n, p, len);
                        n += len;
                }
                p = *end ? end + 1 : end;
        }
        buf[n] = 0;
        return n > 0;
}

/* The first proper prefix of path that is a remembered symlink, or NULL. */
static const char *parent_link(const struct tar_guard *g, const char *path) {
        for (const char *p = strchr(path, '/'); p; p = strchr(p + 1, '/')) {
                char **x = find(g, path, (size_t) (p - path));
                if (x)
                        return *x;
        }
        return NULL;
}

int tar_guard_check(const struct tar_guard *g, const char *path, const char *hardlink, bool symlink, char *path_buf,
                    size_t size, struct tar_guard_verdict *ret) {
        char link_buf[PATH_MAX];
        bool makes_link = symlink && !hardlink;
        int r;

        *ret = (struct tar_guard_verdict) {};
        r = tar_guard_normalize(path, path_buf, size);
        if (r == 0)
                return 0;       /* libarchive refuses it, or there is nothing to guard */
        if (r < 0) {
                ret->uncheckable = true;
                return 0;
        }
        if (hardlink) {
                int k = tar_guard_normalize(hardlink, link_buf, sizeof(link_buf));
                if (k < 0) {
                        ret->uncheckable = true;
                        return 0;
                }
                if (k > 0) {
                        ret->below = parent_link(g, link_buf);
                        if (ret->below) {
                                ret->via_hardlink = true;
                                return -EPERM;
                        }
                        makes_link = tar_guard_has(g, link_buf);
                }
        }
        ret->below = parent_link(g, path_buf);
        if (ret->below)
                return -EPERM;
        ret->replaces_link = tar_guard_has(g, path_buf);
        ret->makes_link = makes_link;
        return 0;
}
