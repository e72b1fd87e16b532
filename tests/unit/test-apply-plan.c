/* The executor runs the plan it is given, not what it finds: a wipe step
 * whose disk has a holder the plan does not list (it appeared after the
 * plan was approved) stops the run before anything is written, names the
 * holder, and the run report (the one writer: <run_dir>/report.json) says
 * which step failed and why. The machine is a recorded sysfs tree
 * (KILN_SYSFS) and a plain file as the disk, so no root is needed. */
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
        if (read_full_file(path, 1u << 20, &buf, &len) < 0)
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

int main(void) {
        paths_init();
        CHECK(mkdtemp(tmp) != NULL);
        test_wipe_refuses_unplanned_holder();
        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        CHECK_INT(system(cmd), 0);
        return TEST_DONE();
}
