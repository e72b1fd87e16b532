#include "mount.h"

#include "paths.h"
#include "strbuf.h"

#include <limits.h>
#include <mntent.h>
#include <sys/mount.h>
#include <sys/stat.h>

static const struct {
        const char *name;
        unsigned long set, clear;
} mount_flags[] = {
        { "defaults", 0, 0 },
        { "rw", 0, MS_RDONLY },
        { "ro", MS_RDONLY, 0 },
        { "noatime", MS_NOATIME, 0 },
        { "nodiratime", MS_NODIRATIME, 0 },
        { "relatime", MS_RELATIME, 0 },
        { "strictatime", MS_STRICTATIME, 0 },
        { "nodev", MS_NODEV, 0 },
        { "nosuid", MS_NOSUID, 0 },
        { "noexec", MS_NOEXEC, 0 },
        { "sync", MS_SYNCHRONOUS, 0 },
        { "dirsync", MS_DIRSYNC, 0 },
        { "lazytime", MS_LAZYTIME, 0 },
        { "auto", 0, 0 }, { "noauto", 0, 0 }, { "nofail", 0, 0 }, { "_netdev", 0, 0 },
};

static int parse_options(const char *options, unsigned long *ret_flags, char **ret_data) {
        unsigned long flags = 0;
        _cleanup_strbuf_ struct strbuf data = STRBUF_INIT;
        data.max = 4096;
        const char *p = options ? options : "";
        while (*p) {
                const char *comma = strchr(p, ',');
                size_t n = comma ? (size_t) (comma - p) : strlen(p);
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(mount_flags); i++)
                        if (strlen(mount_flags[i].name) == n && strncmp(mount_flags[i].name, p, n) == 0) {
                                flags = (flags | mount_flags[i].set) & ~mount_flags[i].clear;
                                known = true;
                        }
                if (!known && n > 0) {
                        int r = strbuf_addf(&data, "%s%.*s", data.len ? "," : "", (int) n, p);
                        if (r < 0)
                                return r;
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        *ret_flags = flags;
        *ret_data = data.len ? strbuf_detach(&data) : NULL;
        return 0;
}

int mount_under_target(const char *dev, const char *mountpoint, enum spec_fs_type type, const char *options) {
        if (!mountpoint || mountpoint[0] != '/')
                return -EINVAL;
        const char *fstype = type == SPEC_FS_SWAP ? NULL : spec_fs_type_name(type);
        if (!fstype)
                return -EINVAL;
        char where[PATH_MAX];
        if ((size_t) snprintf(where, sizeof where, "%s%s", kiln_paths.target, streq(mountpoint, "/") ? "" : mountpoint) >= sizeof where)
                return -ENAMETOOLONG;
        int r = mkdir_p(where);
        if (r < 0)
                return r;
        unsigned long flags;
        _cleanup_free_ char *data = NULL;
        r = parse_options(options, &flags, &data);
        if (r < 0)
                return r;
        if (mount(dev, where, fstype, flags, data) < 0)
                return -errno;
        return 0;
}

int mount_unmount_target(void) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/self/mounts", kiln_paths.procfs);
        _cleanup_strv_free_ char **under = NULL;
        {
                FILE *f = setmntent(path, "re");
                if (!f)
                        return -errno;
                size_t tl = strlen(kiln_paths.target);
                struct mntent *m;
                while ((m = getmntent(f)))
                        if (strncmp(m->mnt_dir, kiln_paths.target, tl) == 0 &&
                            (m->mnt_dir[tl] == '\0' || m->mnt_dir[tl] == '/')) {
                                char *d = strdup(m->mnt_dir);
                                if (!d || strv_push(&under, d) < 0) {
                                        free(d);
                                        endmntent(f);
                                        return -ENOMEM;
                                }
                        }
                endmntent(f);
        }
        /* later mounts are listed later: unmount in reverse order */
        for (size_t n = strv_length(under); n > 0; n--)
                if (umount2(under[n - 1], 0) < 0 && errno != EINVAL && errno != ENOENT)
                        return -errno;
        return 0;
}
