#include "bootcounter.h"
#include "configure.h"
#include "firstboot.h"
#include "firstboot_install.h"
#include "paths.h"
#include "util.h"

#include <fcntl.h>
#include <libgen.h>
#include <linux/fs.h>
#include <limits.h>
#include <sys/ioctl.h>

int bootcount_load(const char *path, struct bootcount *ret, struct strbuf *err) {
        _cleanup_free_ char *text = NULL;
        int r = read_full_file(path, BOOTCOUNT_MAX_BYTES, &text, NULL);
        if (r == -EFBIG)
                return strbuf_errorf(err, -EBADMSG, "larger than %u bytes", BOOTCOUNT_MAX_BYTES);
        if (r < 0)
                return r;
        if (memchr(text, 0, strlen(text) + 1) != text + strlen(text))
                return strbuf_errorf(err, -EBADMSG, "holds a NUL byte");
        return bootcount_parse(text, ret, err);
}

/* the directory of path, for the freeze (any fd of the filesystem will do) */
static int fs_freeze_thaw(const char *path) {
        char dir[PATH_MAX];
        if (snprintf(dir, sizeof dir, "%s", path) >= (int) sizeof dir)
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (ioctl(fd, FIFREEZE, 0) < 0)
                return -errno;
        /* thawed at once; a thaw that fails is tried again: a frozen /boot
         * (or root) would hang the boot */
        int r = 0;
        for (int i = 0; i < 10; i++) {
                if (ioctl(fd, FITHAW, 0) == 0)
                        return 0;
                r = -errno;
                if (r == -EINVAL)       /* not frozen (any more) */
                        return 0;
                usleep(100 * 1000);
        }
        return r;
}

int bootcount_store(const char *path, const struct bootcount *bc, bool freeze, int *ret_freeze_err) {
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        int r = bootcount_format(bc, &t);
        if (r < 0)
                return r;
        r = write_file_atomic(path, strbuf_str(&t), t.len);
        if (r < 0)
                return r;
        if (!freeze)
                return 0;
        r = fs_freeze_thaw(path);
        if (r < 0) {
                if (ret_freeze_err)
                        *ret_freeze_err = r;
                return 1;
        }
        return 0;
}

/* the counter's directory, which the attempt unit needs mounted */
static const char *counter_dir(char buf[static PATH_MAX]) {
        snprintf(buf, PATH_MAX, "%s", kiln_paths.t_bootcount);
        return dirname(buf);
}

int bootcount_attempt_unit_text(struct strbuf *out) {
        char dir[PATH_MAX];
        /* No default dependencies: it must not wait for local-fs.target,
         * which a boot that fails never reaches; it needs only the counter's
         * filesystem. Before sysinit.target, so it runs in every boot that
         * got as far as mounting /boot; wanted by emergency.target and
         * rescue.target too: a mount that fails before /boot is mounted
         * isolates emergency.target, which cancels sysinit's queued jobs (a
         * CI run's boot into emergency mode was not counted), and then
         * mounts /boot and counts there. Its line ("boot counter ...: N
         * boot(s) began since the last good one") goes to the console too:
         * whoever looks at a node in emergency mode sees that it was counted
         * (and the rig waits for that line, not for systemd's status line,
         * which an 80-column console shortens). */
        int r = strbuf_addf(out,
                            "# written by kiln: count this boot (docs/reinstall.md \"A boot that failed\")\n"
                            "[Unit]\n"
                            "Description=kiln: count this boot attempt\n"
                            "DefaultDependencies=no\n"
                            "RequiresMountsFor=%s\n"
                            "After=systemd-remount-fs.service\n"
                            "Before=sysinit.target shutdown.target\n"
                            "Conflicts=shutdown.target\n"
                            "\n"
                            "[Service]\n"
                            "Type=oneshot\n"
                            "RemainAfterExit=yes\n"
                            "ExecStart=%s bootcount attempt\n"
                            "StandardOutput=journal+console\n"
                            "StandardError=journal+console\n"
                            "\n"
                            "[Install]\n"
                            "WantedBy=sysinit.target emergency.target rescue.target\n",
                            counter_dir(dir), FIRSTBOOT_BINARY);
        return r < 0 ? r : 0;
}

int bootcount_good_unit_text(bool network, struct strbuf *out) {
        /* After multi-user.target: every unit the boot wanted has started
         * (or failed without stopping the boot); with a network, after
         * network-online.target too, and `--network` checks an address. */
        int r = strbuf_addf(out,
                            "# written by kiln: this boot got far enough (docs/reinstall.md \"A boot that failed\")\n"
                            "[Unit]\n"
                            "Description=kiln: mark this boot good (multi-user%s)\n"
                            "%s"
                            "After=multi-user.target%s\n"
                            "\n"
                            "[Service]\n"
                            "Type=oneshot\n"
                            "ExecStart=%s bootcount good%s\n"
                            "\n"
                            "[Install]\n"
                            "WantedBy=multi-user.target\n",
                            network ? ", the network up" : "", network ? "Wants=network-online.target\n" : "",
                            network ? " network-online.target" : "", FIRSTBOOT_BINARY, network ? " --network" : "");
        return r < 0 ? r : 0;
}

static int install_unit(const char *name, const char *text, const char *wanted_by, struct strbuf *err) {
        _cleanup_free_ char *rel = strdupf("%s/%s", BOOTCOUNT_UNIT_DIR, name);
        _cleanup_free_ char *link = strdupf("%s/%s.wants/%s", BOOTCOUNT_UNIT_DIR, wanted_by, name);
        char p[PATH_MAX];
        if (!rel || !link)
                return -ENOMEM;
        int r = configure_target_path(rel, p);
        if (r >= 0)
                r = write_file_atomic_mode(p, text, strlen(text), 0644);
        if (r < 0)
                return strbuf_adds(err, rel), r;
        if ((r = configure_symlink(rel, link)) < 0)
                return strbuf_adds(err, link), r;
        return 0;
}

int bootcount_install(const struct plan *p, struct strbuf *warnings, struct strbuf *err) {
        _cleanup_strbuf_ struct strbuf a = STRBUF_INIT, g = STRBUF_INIT;
        int r = firstboot_install_binary(warnings, err);
        if (r < 0)
                return r;
        if ((r = bootcount_attempt_unit_text(&a)) < 0 || (r = bootcount_good_unit_text(p->net != NULL, &g)) < 0)
                return r;
        static const char *const attempt_wanted_by[] = { "sysinit.target", "emergency.target", "rescue.target" };
        for (size_t i = 0; i < ELEMENTSOF(attempt_wanted_by); i++)
                if ((r = install_unit(BOOTCOUNT_ATTEMPT_UNIT, strbuf_str(&a), attempt_wanted_by[i], err)) < 0)
                        return r;
        return install_unit(BOOTCOUNT_GOOD_UNIT, strbuf_str(&g), "multi-user.target", err);
}
