#include "md.h"

#include "exec.h"
#include "paths.h"

#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <time.h>

static int push_fmt(char ***v, const char *fmt, ...) _printf_(2, 3);
static int push_fmt(char ***v, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        va_start(ap, fmt);
        int k = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        int r = strv_push(v, s);
        if (r < 0)
                free(s);
        return r;
}

int md_create_argv(const struct md_create_params *p, char ***ret) {
        _cleanup_strv_free_ char **v = NULL;
        size_t n = strv_length(p->members);
        if (strempty(p->name) || n == 0 || p->spares >= n)
                return -EINVAL;
        int r = 0;
        r = r ?: push_fmt(&v, "%s", kiln_paths.mdadm);
        r = r ?: push_fmt(&v, "--create");
        _cleanup_free_ char *node = NULL;
        r = r ?: paths_md(p->name, &node);
        r = r ?: push_fmt(&v, "%s", node);
        r = r ?: push_fmt(&v, "--run");
        r = r ?: push_fmt(&v, "--name=%s", p->name);
        r = r ?: push_fmt(&v, "--homehost=%s", p->homehost ? p->homehost : "any");
        r = r ?: push_fmt(&v, "--level=%u", p->level);
        r = r ?: push_fmt(&v, "--raid-devices=%zu", n - p->spares);
        if (p->spares)
                r = r ?: push_fmt(&v, "--spare-devices=%u", p->spares);
        if (p->layout)
                r = r ?: push_fmt(&v, "--layout=%s", p->layout);
        if (p->chunk)
                r = r ?: push_fmt(&v, "--chunk=%" PRIu64 "K", p->chunk / 1024);
        if (p->metadata)
                r = r ?: push_fmt(&v, "--metadata=%s", p->metadata);
        if (p->bitmap)
                r = r ?: push_fmt(&v, "--bitmap=%s", p->bitmap);
        if (p->assume_clean)
                r = r ?: push_fmt(&v, "--assume-clean");
        for (size_t i = 0; i < n && r == 0; i++)
                r = push_fmt(&v, "%s", p->members[i]);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        return 0;
}

int md_create(const struct md_create_params *p, struct strbuf *err) {
        _cleanup_strv_free_ char **argv = NULL;
        int r = md_create_argv(p, &argv);
        if (r < 0)
                return r;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/md", kiln_paths.devfs);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        struct exec_options o = { .err = err };
        return exec_argv((const char *const *) argv, &o, NULL);
}

int md_wait(const char *name, uint64_t timeout_usec, char **ret_path) {
        _cleanup_free_ char *path = NULL;
        int r = paths_md(name, &path);
        if (r < 0)
                return r;
        uint64_t deadline = now_usec() + timeout_usec;
        for (;;) {
                struct stat st;
                if (stat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
                        char *real = realpath(path, NULL);
                        if (!real)
                                return -errno;
                        if (ret_path)
                                *ret_path = real;
                        else
                                free(real);
                        return 0;
                }
                if (now_usec() >= deadline)
                        return -ETIMEDOUT;
                nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
}

int md_assemble(const char *name, const char *uuid, char *const *members, bool readonly, struct strbuf *err) {
        if (!name || !uuid || !members || !members[0])
                return -EINVAL;
        char dir[PATH_MAX], u[80];
        snprintf(dir, sizeof dir, "%s/md", kiln_paths.devfs);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *node = NULL;
        int r = paths_md(name, &node);
        if (r < 0)
                return r;
        snprintf(u, sizeof u, "--uuid=%s", uuid);
        _cleanup_strv_free_ char **argv = NULL;
        const char *head[] = { kiln_paths.mdadm, "--assemble", node, u, "--run" };
        for (size_t i = 0; i < ELEMENTSOF(head); i++)
                if (strv_pushdup(&argv, head[i]) < 0)
                        return -ENOMEM;
        if (readonly && strv_pushdup(&argv, "--readonly") < 0)
                return -ENOMEM;
        for (char *const *m = members; *m; m++)
                if (strv_pushdup(&argv, *m) < 0)
                        return -ENOMEM;
        struct exec_options o = { .err = err };
        return exec_argv((const char *const *) argv, &o, NULL);
}

int md_stop(const char *dev, struct strbuf *err) {
        const char *argv[] = { kiln_paths.mdadm, "--stop", dev, NULL };
        struct exec_options o = { .err = err };
        return exec_argv(argv, &o, NULL);
}

int md_detail_brief(const char *dev, struct strbuf *out, struct strbuf *err) {
        const char *argv[] = { kiln_paths.mdadm, "--detail", "--brief", dev, NULL };
        struct exec_options o = { .err = err, .out = out };
        return exec_argv(argv, &o, NULL);
}
