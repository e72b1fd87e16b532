/* The tar symlink guard (targuard.h) on its own: normalisation as
 * libarchive reads paths, refusals below a symlink the archive made (for the
 * path and for a hard link target), a symlink replaced, the size limit. */
#include "tap.h"
#include "targuard.h"

#include <limits.h>

static int check(struct tar_guard *g, const char *path, const char *hardlink, bool symlink, struct tar_guard_verdict *v) {
        char buf[PATH_MAX];
        return tar_guard_check(g, path, hardlink, symlink, buf, sizeof(buf), v);
}

int main(void) {
        char buf[16];
        CHECK_INT(tar_guard_normalize("./a//b/./c/", buf, sizeof(buf)), 1);
        CHECK_STR(buf, "a/b/c");
        CHECK_INT(tar_guard_normalize("/etc/passwd", buf, sizeof(buf)), 0);
        CHECK_INT(tar_guard_normalize("a/../b", buf, sizeof(buf)), 0);
        CHECK_INT(tar_guard_normalize("./", buf, sizeof(buf)), 0);
        CHECK_INT(tar_guard_normalize(NULL, buf, sizeof(buf)), 0);
        CHECK_INT(tar_guard_normalize("0123456789/abcdef", buf, sizeof(buf)), -ENAMETOOLONG);
        CHECK_INT(tar_guard_normalize("0123456789/abcd", buf, sizeof(buf)), 1);

        struct tar_guard g = {};
        struct tar_guard_verdict v;
        /* a symlink entry: to be remembered */
        CHECK_INT(check(&g, "./evil", NULL, true, &v), 0);
        CHECK(v.makes_link && !v.replaces_link && !v.uncheckable);
        CHECK_INT(tar_guard_add(&g, "evil"), 0);
        CHECK(tar_guard_has(&g, "evil"));
        /* an entry below it, however written */
        CHECK_INT(check(&g, "d/../evil/x", NULL, false, &v), 0);    /* "..": libarchive's to refuse */
        CHECK_INT(check(&g, "evil//./victim", NULL, false, &v), -EPERM);
        CHECK_STR(v.below, "evil");
        CHECK(!v.via_hardlink);
        /* a hard link whose target is below it */
        CHECK_INT(check(&g, "hl", "evil/victim", false, &v), -EPERM);
        CHECK_STR(v.below, "evil");
        CHECK(v.via_hardlink);
        /* a hard link to the symlink itself makes another symlink */
        CHECK_INT(check(&g, "hl", "./evil", false, &v), 0);
        CHECK(v.makes_link);
        /* a directory entry replaces the symlink: remove it, forget it */
        CHECK_INT(check(&g, "evil/", NULL, false, &v), 0);
        CHECK(v.replaces_link && !v.makes_link);
        CHECK_INT(tar_guard_forget(&g, "evil"), 0);
        CHECK_INT(tar_guard_forget(&g, "evil"), -ENOENT);
        CHECK_INT(check(&g, "evil/victim", NULL, false, &v), 0);
        /* a path too long to check here */
        char longp[PATH_MAX + 10];
        memset(longp, 'a', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = 0;
        CHECK_INT(check(&g, longp, NULL, false, &v), 0);
        CHECK(v.uncheckable);
        CHECK_INT(check(&g, "x", longp, false, &v), 0);
        CHECK(v.uncheckable);
        /* many symlinks (the table grows, tombstones are reused), then the limit */
        char p[64];
        int r = 0;
        size_t n = 0;
        for (; n < 200000 && r == 0; n++) {
                snprintf(p, sizeof(p), "usr/lib/l%zu", n);
                r = tar_guard_add(&g, p);
                if (r == 0 && n % 3 == 0)
                        CHECK_INT(tar_guard_forget(&g, p), 0);
        }
        CHECK_INT(r, -E2BIG);
        CHECK(n > 1000);
        CHECK(tar_guard_has(&g, "usr/lib/l1") && !tar_guard_has(&g, "usr/lib/l0"));
        CHECK_INT(check(&g, "usr/lib/l1/x", NULL, false, &v), -EPERM);
        CHECK_STR(v.below, "usr/lib/l1");
        tar_guard_done(&g);
        CHECK(g.off && !g.slot);
        return TEST_DONE();
}
