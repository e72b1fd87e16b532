#include "mkfs.h"

#include "exec.h"
#include "paths.h"

int mkfs_argv(enum spec_fs_type type, const char *dev, const char *label, char *const *options, char ***ret) {
        _cleanup_strv_free_ char **v = NULL;
        const char *prog, *force, *label_opt;
        switch (type) {
        case SPEC_FS_XFS:  prog = kiln_paths.mkfs_xfs;  force = "-f"; label_opt = "-L"; break;
        case SPEC_FS_EXT4: prog = kiln_paths.mkfs_ext4; force = "-F"; label_opt = "-L"; break;
        case SPEC_FS_SWAP: prog = kiln_paths.mkswap;    force = "-f"; label_opt = "-L"; break;
        case SPEC_FS_VFAT: prog = kiln_paths.mkfs_vfat; force = NULL; label_opt = "-n"; break;
        default: return -EINVAL;
        }
        int r = strv_pushdup(&v, prog);
        if (r == 0 && force)
                r = strv_pushdup(&v, force);
        if (r == 0 && type == SPEC_FS_EXT4)
                r = strv_pushdup(&v, "-q");
        if (r == 0 && !strempty(label)) {
                r = strv_pushdup(&v, label_opt);
                if (r == 0)
                        r = strv_pushdup(&v, label);
        }
        for (size_t i = 0; r == 0 && options && options[i]; i++)
                r = strv_pushdup(&v, options[i]);
        if (r == 0)
                r = strv_pushdup(&v, dev);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        return 0;
}

int mkfs_make(enum spec_fs_type type, const char *dev, const char *label, char *const *options, struct strbuf *err) {
        _cleanup_strv_free_ char **argv = NULL;
        int r = mkfs_argv(type, dev, label, options, &argv);
        if (r < 0)
                return r;
        struct exec_options o = { .err = err };
        return exec_argv((const char *const *) argv, &o, NULL);
}
