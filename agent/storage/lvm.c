#include "lvm.h"

#include "exec.h"
#include "paths.h"

#include <inttypes.h>

const char lvm_config[] =
        "activation{udev_sync=0 udev_rules=0 verify_udev_operations=1} "
        "devices{obtain_device_list_from_udev=0 use_devicesfile=0 hints=\"none\"}";

/* extra: more configuration after lvm_config (NULL: none) */
static int lvm_run_config(const char *const *args, const char *extra, struct strbuf *out, struct strbuf *err) {
        const char *argv[32];
        size_t n = 0;
        _cleanup_free_ char *config = NULL;
        if (extra && asprintf(&config, "%s %s", lvm_config, extra) < 0)
                return -ENOMEM;
        argv[n++] = kiln_paths.lvm;
        argv[n++] = args[0];
        argv[n++] = "--config";
        argv[n++] = config ? config : lvm_config;
        for (size_t i = 1; args[i]; i++) {
                if (n + 2 > ELEMENTSOF(argv))
                        return -E2BIG;
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        struct exec_options o = { .err = err, .out = out };
        return exec_argv(argv, &o, NULL);
}

static int lvm_run(const char *const *args, struct strbuf *out, struct strbuf *err) {
        return lvm_run_config(args, NULL, out, err);
}

int lvm_pvcreate(const char *dev, struct strbuf *err) {
        return lvm_run((const char *[]) { "pvcreate", "-y", "-Zy", dev, NULL }, NULL, err);
}

int lvm_vgcreate(const char *vg, char *const *pvs, uint64_t extent_size, struct strbuf *err) {
        const char *args[32];
        char ext[32];
        size_t n = 0;
        args[n++] = "vgcreate";
        args[n++] = "-y";
        if (extent_size) {
                snprintf(ext, sizeof ext, "%" PRIu64 "b", extent_size);
                args[n++] = "-s";
                args[n++] = ext;
        }
        args[n++] = vg;
        for (size_t i = 0; pvs && pvs[i]; i++) {
                if (n + 2 > ELEMENTSOF(args) - 4)
                        return -E2BIG;
                args[n++] = pvs[i];
        }
        args[n] = NULL;
        return lvm_run(args, NULL, err);
}

int lvm_lvcreate(const char *vg, const char *lv, uint64_t bytes, unsigned percent_free, struct strbuf *err) {
        char size[48];
        if ((bytes == 0) == (percent_free == 0) || percent_free > 100)
                return -EINVAL;
        if (bytes)
                snprintf(size, sizeof size, "%" PRIu64 "b", bytes);
        else
                snprintf(size, sizeof size, "%u%%FREE", percent_free);
        return lvm_run((const char *[]) { "lvcreate", "-y", "-Wy", "-Zy", "-n", lv,
                                          bytes ? "-L" : "-l", size, vg, NULL }, NULL, err);
}

int lvm_vgmknodes(const char *vg, struct strbuf *err) {
        return lvm_run((const char *[]) { "vgmknodes", vg, NULL }, NULL, err);
}

int lvm_vg_activate(const char *vg, struct strbuf *err) {
        return lvm_run((const char *[]) { "vgchange", "-ay", vg, NULL }, NULL, err);
}

int lvm_vg_activate_readonly(const char *vg, struct strbuf *err) {
        /* a VG name in read_only_volume_list selects all its LVs; a VG name
         * holds no quote (lvm allows A-Z a-z 0-9 + _ . -) */
        _cleanup_free_ char *extra = NULL;
        if (strpbrk(vg, "\"\\ ") || asprintf(&extra, "global{metadata_read_only=1} activation{read_only_volume_list=[\"%s\"]}", vg) < 0)
                return -EINVAL;
        return lvm_run_config((const char *[]) { "vgchange", "-ay", vg, NULL }, extra, NULL, err);
}

int lvm_vg_deactivate(const char *vg, struct strbuf *err) {
        return lvm_run((const char *[]) { "vgchange", "-an", vg, NULL }, NULL, err);
}

int lvm_vg_uuid(const char *vg, char **ret, struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf out = { .max = 4096 };
        int r = lvm_run((const char *[]) { "vgs", "--noheadings", "-o", "vg_uuid", vg, NULL }, &out, err);
        if (r < 0)
                return r;
        const char *s = strbuf_str(&out);
        s += strspn(s, " \t\n");
        size_t len = strcspn(s, " \t\n");
        if (len == 0)
                return -ENODATA;
        char *u = strndup(s, len);
        if (!u)
                return -ENOMEM;
        *ret = u;
        return 0;
}
