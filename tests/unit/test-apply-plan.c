/* The executor runs the plan it is given, not what it finds: a wipe step
 * whose disk has a holder the plan does not list (it appeared after the
 * plan was approved) stops the run before anything is written, names the
 * holder, and the run report (the one writer: <run_dir>/report.json) says
 * which step failed and why. The machine is a recorded sysfs tree
 * (KILN_SYSFS) and a plain file as the disk, so no root is needed. And an
 * md over per-disk LUKS is assembled with the UUID its opened members hold. */
#include "apply.h"
#include "paths.h"
#include "report.h"

#include "tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

static char tmp[] = "/tmp/kiln-test-apply-plan.XXXXXX";
static char reason[512];
static int failures_seen;

static void on_step(void *userdata, const struct plan_step *step, size_t index, size_t n_steps,
                    enum apply_event event, int error, uint64_t usec, const char *why) {
        (void) userdata; (void) step; (void) index; (void) n_steps; (void) error; (void) usec;
        if (event == APPLY_STEP_FAILED) {
                failures_seen++;
                snprintf(reason, sizeof reason, "%s", why ? why : "");
        }
}

static void touch(const char *rel) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", tmp, rel);
        for (char *s = strchr(p + strlen(tmp) + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                (void) mkdir(p, 0755);
                *s = '/';
        }
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        if (fd >= 0)
                close(fd);
}

static char *slurp(const char *path) {
        char *buf = NULL;
        size_t len = 0;
        if (read_full_file(path, 16u << 20, &buf, &len) < 0)
                return NULL;
        return buf;
}

/* One wipe step on DISK listing INPUTS; returns apply_run's result, and the
 * failing step's kind in failed_kind. */
static enum plan_step_kind failed_kind;
static int run_wipe(const char *disk, char **inputs) {
        struct spec spec = {};
        struct inventory inv = {};
        struct plan_step step = {
                .kind = PLAN_WIPE,
                .id = "d",
                .device = (char *) disk,
                .inputs = inputs,
                .description = (char *) "wipe the disk",
        };
        struct plan p = { .spec = &spec, .inv = &inv, .steps = &step, .n_steps = 1 };
        struct apply_options o = { .hook = on_step };
        reason[0] = 0;
        failures_seen = 0;
        return apply_run(&p, &o, &failed_kind);
}

static void test_wipe_refuses_unplanned_holder(void) {
        char disk[256], report[256], run_dir[200], sys[200], target[200];
        snprintf(disk, sizeof disk, "%s/vdz", tmp);
        snprintf(sys, sizeof sys, "%s/sys", tmp);
        snprintf(run_dir, sizeof run_dir, "%s/run", tmp);
        snprintf(target, sizeof target, "%s/target", tmp);
        snprintf(report, sizeof report, "%s/report.json", run_dir);
        kiln_paths.sysfs = sys;
        kiln_paths.run_dir = run_dir;
        kiln_paths.target = target;

        /* vdz with an md array on its partition and a dm device on the disk */
        touch("sys/class/block/vdz/vdz1/partition");
        touch("sys/class/block/vdz1/holders/md9");
        touch("sys/class/block/vdz/holders/dm-7");
        /* the "disk": an xfs-looking first sector that a wipe would erase */
        int fd = open(disk, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0);
        char block[4096];
        memset(block, 0xa5, sizeof block);
        memcpy(block, "XFSB", 4);
        for (int i = 0; fd >= 0 && i < 256; i++)
                CHECK_INT(write(fd, block, sizeof block), (long long) sizeof block);
        if (fd >= 0)
                close(fd);
        _cleanup_free_ char *before = slurp(disk);
        CHECK(before != NULL);

        /* the plan saw no holder at all */
        CHECK_INT(run_wipe(disk, NULL), -EBUSY);
        CHECK_INT(failed_kind, PLAN_WIPE);
        CHECK_INT(failures_seen, 1);
        char want[1024];
        snprintf(want, sizeof want, "%s is held by 'md9', which the plan does not stop (it appeared after planning); "
                 "plan again", disk);
        CHECK_STR(reason, want);
        _cleanup_free_ char *after = slurp(disk);
        CHECK(before && after && memcmp(before, after, 4096 * 256) == 0);

        /* the run report: saved once, in run_dir, with the failed step and why */
        _cleanup_(report_freep) struct report *r = NULL;
        CHECK_INT(report_load(report, &r), 0);
        if (r) {
                CHECK_INT(report_get_result(r), REPORT_FAIL);
                json_object *o = report_get(r, "failed_stage");
                CHECK_STR(o ? json_object_get_string(o) : NULL, "wipe d");
                o = report_get(r, "error");
                CHECK(o && strstr(json_object_get_string(o), "held by 'md9'"));
        }
        /* the target was never configured: no copy there */
        char copy[300];
        snprintf(copy, sizeof copy, "%s/var/lib/kiln/report.json", target);
        CHECK(access(copy, F_OK) < 0 && errno == ENOENT);

        /* the plan stops md9 but not dm-7, which sits on the disk itself */
        char *some[] = { (char *) "/dev/md9", NULL };
        CHECK_INT(run_wipe(disk, some), -EBUSY);
        CHECK_INT(failed_kind, PLAN_WIPE);
        snprintf(want, sizeof want, "%s is held by 'dm-7', which the plan does not stop (it appeared after planning); "
                 "plan again", disk);
        CHECK_STR(reason, want);
        _cleanup_free_ char *after2 = slurp(disk);
        CHECK(before && after2 && memcmp(before, after2, 4096 * 256) == 0);
}

/* An md over per-disk LUKS (the resume plan's assemble step without a UUID:
 * plan.h): the run reads the array UUID from the members the luks-open
 * steps before it opened (here plain files with md v1.2 superblocks, made
 * by tests/lib/md-superblock.py) and passes it to mdadm (a stand-in that
 * logs its arguments and fails: this host has no md); members of two
 * arrays, or one without a superblock, stop it before mdadm runs, the
 * reason exact and the members unchanged. The look (apply_inspect) runs the
 * same step with --readonly. */
static char mdlog[256], look_why[1024];
static int look_err;

static void md_member(const char *name, const char *uuid) {
        char path[300], cmd[1200];
        snprintf(path, sizeof path, "%s/%s", tmp, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(fd >= 0 && ftruncate(fd, 8 << 20) == 0);
        if (fd >= 0)
                close(fd);
        if (!uuid)
                return;
        const char *src = getenv("SRC");
        snprintf(cmd, sizeof cmd, "python3 '%s/tests/lib/md-superblock.py' '%s' kvm:md0 %s", src ? src : "..", path, uuid);
        CHECK_INT(system(cmd), 0);
}

static int run_assemble(bool look, char **members, struct apply_inspection *in) {
        struct spec spec = {};
        struct inventory inv = {};
        struct plan_step step = {
                .kind = PLAN_MD_ASSEMBLE, .id = "md0", .device = (char *) "/dev/md/md0", .inputs = members,
                .description = (char *) "assemble md 'md0' once the luks-open steps above opened its members",
                .md = { .name = "md0" },
        };
        struct plan p = { .spec = &spec, .inv = &inv, .steps = &step, .n_steps = 1, .resume = true };
        struct apply_options o = { .hook = on_step };
        reason[0] = 0;
        failures_seen = 0;
        (void) unlink(mdlog);
        if (!look)
                return apply_run(&p, &o, &failed_kind);
        int r = apply_inspect(&p, &o, in);
        look_err = in->record_err;
        snprintf(look_why, sizeof look_why, "%s", in->why ? in->why : "");
        (void) apply_inspect_end(in);   /* before the plan on this stack goes */
        return r;
}

static void test_assemble_reads_opened_members(void) {
        static const char U[] = "3d1c7e52-8a0b-4f6e-9d21-c4b5a6978e10", V[] = "9e0f1a2b-3c4d-4e5f-8a6b-7c8d9e0f1a2b";
        char dev[256], stand_in[256];
        snprintf(dev, sizeof dev, "%s/dev", tmp);
        snprintf(mdlog, sizeof mdlog, "%s/mdadm.log", tmp);
        snprintf(stand_in, sizeof stand_in, "%s/mdadm", tmp);
        (void) mkdir(dev, 0755);
        FILE *f = fopen(stand_in, "we");
        CHECK(f);
        if (!f)
                return;
        fprintf(f, "#!/bin/sh\necho \"$*\" >>'%s'\necho 'mdadm: no md in this kernel (stand-in)' >&2\nexit 1\n", mdlog);
        fclose(f);
        CHECK_INT(chmod(stand_in, 0755), 0);
        kiln_paths.devfs = dev;
        kiln_paths.mdadm = stand_in;
        char m[4][300];
        char *members[5] = {};
        for (int i = 0; i < 4; i++) {
                char n[16];
                snprintf(n, sizeof n, "crypt-%d", i);
                md_member(n, U);
                snprintf(m[i], sizeof m[i], "%s/%s", tmp, n);
                members[i] = m[i];
        }
        /* one array on the four: its UUID to mdadm, read from them */
        CHECK(run_assemble(false, members, NULL) < 0);
        CHECK_INT(failed_kind, PLAN_MD_ASSEMBLE);
        CHECK_STR(reason, "mdadm: no md in this kernel (stand-in)");
        _cleanup_free_ char *log = slurp(mdlog);
        char want[2048];
        snprintf(want, sizeof want, "--assemble %s/md/md0 --uuid=%s --run %s %s %s %s\n", dev, U, m[0], m[1], m[2], m[3]);
        CHECK(log && strncmp(log, want, strlen(want)) == 0);
        /* the look: the same step, read-only */
        struct apply_inspection in;
        CHECK_INT(run_assemble(true, members, &in), 0);
        CHECK_INT(look_err, -ESTALE);
        CHECK_STR(look_why, "assemble /dev/md/md0: mdadm: no md in this kernel (stand-in): Input/output error");
        free(log);
        log = slurp(mdlog);
        snprintf(want, sizeof want, "--assemble %s/md/md0 --uuid=%s --run --readonly %s %s %s %s\n", dev, U, m[0], m[1], m[2],
                 m[3]);
        CHECK(log && strncmp(log, want, strlen(want)) == 0);

        /* crypt-2 of another array: not this plan's run (a resume installs fresh); mdadm never ran */
        md_member("crypt-2", V);
        _cleanup_free_ char *before = slurp(m[2]);
        CHECK_INT(run_assemble(false, members, NULL), -ESTALE);
        CHECK_STR(reason, "the members of md array 'md0' belong to different arrays");
        CHECK(access(mdlog, F_OK) < 0);
        _cleanup_free_ char *after = slurp(m[2]);
        CHECK(before && after && memcmp(before, after, 8 << 20) == 0);

        /* crypt-3 without a superblock (the run stopped before md-create) */
        md_member("crypt-2", U);
        md_member("crypt-3", NULL);
        CHECK_INT(run_assemble(false, members, NULL), -ESTALE);
        snprintf(want, sizeof want, "%s is not a member of md array 'md0'", m[3]);
        CHECK_STR(reason, want);
        CHECK(access(mdlog, F_OK) < 0);
        CHECK_INT(run_assemble(true, members, &in), 0);
        CHECK_INT(look_err, -ESTALE);   /* no record read: the marks decide (cmd_run.c) */
        snprintf(want, sizeof want, "assemble /dev/md/md0: %s is not a member of md array 'md0': Stale file handle", m[3]);
        CHECK_STR(look_why, want);
        free(log);
        log = slurp(mdlog);     /* the look's undo stops what the failed step may have begun */
        snprintf(want, sizeof want, "--stop /dev/md/md0\n");
        CHECK(!log || streq(log, want));
}

int main(void) {
        paths_init();
        CHECK(mkdtemp(tmp) != NULL);
        test_wipe_refuses_unplanned_holder();
        test_assemble_reads_opened_members();
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        CHECK_INT(system(cmd), 0);
        return TEST_DONE();
}
