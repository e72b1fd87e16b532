/* The one executor: runs a plan's steps in order on the real machine, or
 * only prints them (dry run). It is the stage that decides, so it logs each
 * step (what, on which device, how long) and the one failure that stops the
 * run (step, device, reason), and returns it with the kind of the failing
 * step; the command layer maps the two to an exit code.
 *
 * It relies on the step fields documented in plan.h; in addition, wipe finds
 * the holders to stop in sysfs itself (top layer first), so a holder the
 * inventory missed is still torn down.
 * Steps run in the plan's order, which is the contract (plan_build puts
 * mounts parents first).
 * Progress is recorded in <target>/var/lib/kiln/progress.json (resume.h)
 * once the root is mounted, after each stage and before finish. */
#pragma once
#include "kexec.h"
#include "plan.h"
#include "resume.h"

enum apply_event {
        APPLY_STEP_START,
        APPLY_STEP_DONE,
        APPLY_STEP_FAILED,
};

/* Called around every step (e.g. to send registration/progress events).
 * reason is NULL except for APPLY_STEP_FAILED; error is the -errno. */
typedef void (*apply_hook_t)(void *userdata, const struct plan_step *step, size_t index, size_t n_steps,
                             enum apply_event event, int error, uint64_t usec, const char *reason);

struct report;

struct apply_options {
        bool dry_run;           /* print the steps, change nothing */
        FILE *dry_run_out;      /* where dry run prints; NULL = stdout */
        bool finish;            /* the caller does the spec's finish after apply_run (boot mode only) */
        const char *hostname;   /* already expanded; NULL = spec's if it has no ${…} */
        apply_hook_t hook;
        void *userdata;
        struct report *report;  /* run report: bench, image and registration land here; NULL = apply makes one */
        const char *ca_file;    /* extra CA for the keys, the image and the controller: kiln.ca and the
                                 * spec's ca: in one file (ca_for_spec()) */
        uint64_t bench_len;     /* bytes the benchmark writes on the raw and the dm-crypt device; 0 = 64 MiB */
        const struct plan *fallback;    /* with a resume plan (resume.h): the fresh plan, run when the stack turns
                                         * out not to be this plan's unfinished run (after undoing the resume steps) */
        const char *reinstall;  /* the reinstall token this run presents (plan_reinstall_token()): recorded in
                                 * the progress record, so the next boot knows the act was done */
        bool skip_storage;      /* test knob (kiln boot --skip-storage, tests/fleet): only the network half runs
                                 * (image into KILN_TARGET as a plain directory, register, finish); every
                                 * storage step and configure is logged as skipped, no disk is touched */
        const char *spec_url;   /* where the installed system fetches the spec again at first boot (with
                                 * register.cloudstack: firstboot.h), and the sha256 it must have */
        const char *spec_sha256;
};

/* Returns 0, or the -errno that stopped the run; then *ret_failed (if not
 * NULL) is the kind of the step that failed, or _PLAN_STEP_KIND_MAX when
 * the run failed before its first step. */
int apply_run(const struct plan *p, const struct apply_options *opts, enum plan_step_kind *ret_failed);

const char *apply_step_name(enum plan_step_kind kind);
/* Whether a step of this kind touches a disk or its layout (everything but
 * image, register and finish): what apply_options.skip_storage leaves out. */
bool apply_step_is_storage(enum plan_step_kind kind);
/* A step's stage name in the run report and the controller's events
 * ("md-create md1", "register webhook"): one name for its begin, its end and
 * a failure's failed_stage (buf always terminated). Steps run one at a time,
 * so a name may repeat (a disk rule with count: 4 wipes four disks), each
 * stage ending before the next begins. */
const char *apply_stage_name(const struct plan_step *s, char *buf, size_t len);

/* Looking at a finished node without a write (docs/reinstall.md): the
 * resume plan's steps up to its resume-check, read-only (mdadm --assemble
 * --readonly, LUKS opened with CRYPT_ACTIVATE_READONLY, LVs activated
 * read-only with LVM's metadata read-only, filesystems mounted
 * ro,norecovery (xfs) or ro,noload (ext4); only / and /boot are mounted),
 * then the progress record is read and the installed kernel and initrd
 * are opened. Nothing is logged but what the steps log.
 * Returns 0 with *ret filled: record_err 0 and rec when a record was read,
 * else why not (-ENOENT: none; -ESTALE: the stack did not come up, why
 * says what failed and it was undone already; -ENOKEY: the same, because a
 * volume with a generated key did not open through its Tang pin, which is
 * the only way kiln has to open it: the caller stops, it must not decide
 * without the record); < 0 only for -ENOMEM.
 * apply_inspect_end() closes the files and undoes the steps (latest first). */
struct apply_inspection {
        int record_err;
        struct resume_record rec;
        char *why;                      /* what failed, when record_err != 0 */
        struct kexec_image image;       /* the installed kernel and initrd (fds -1 when not found) */
        int image_err;                  /* why not found */
        char *root_uuid;                /* the UUID of the root filesystem */
        void *ctx;                      /* what apply_inspect_end() undoes */
        size_t upto;
};
int apply_inspect(const struct plan *resume, const struct apply_options *opts, struct apply_inspection *ret);
/* 0, or the undo's error (logged, with the step that could not be undone). */
int apply_inspect_end(struct apply_inspection *in);
