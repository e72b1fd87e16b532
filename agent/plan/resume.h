/* Resume after a failure (docs/apply.md "Resume after a failure").
 *
 * A run records its progress in the target root as it goes
 * (<target>/var/lib/kiln/progress.json: the plan's fingerprint, the stages
 * done, the kiln version, whether the run finished). On the next run,
 * resume_decide() looks at the fresh plan and the inventory it was made
 * from (pure: nothing is opened) and, when the selected disks hold exactly
 * the layout this plan builds, makes a resume plan: assemble the md arrays,
 * open LUKS, activate the VGs, mount, check the record (resume-check), then
 * the stages the record does not list as done. What the inventory cannot
 * see (an md over per-disk LUKS: its superblocks are inside the closed
 * volumes) is judged by the run, after the luks-open steps that make it
 * visible, by the same rule (resume_md_member()). The executor falls back to
 * the fresh plan, after undoing what it assembled, opened and mounted, when
 * the record is missing, names another plan, or says the run finished. */
#pragma once
#include "mark.h"
#include "plan.h"
#include "strbuf.h"

#define RESUME_RECORD_PATH "/var/lib/kiln/progress.json"   /* under kiln_paths.target */
#define RESUME_RECORD_MAX_BYTES (64u * 1024u)
#define RESUME_RECORD_FORMAT 1

enum resume_stage {
        RESUME_STAGE_STORAGE,   /* partition .. mount, with the benchmark between */
        RESUME_STAGE_IMAGE,
        RESUME_STAGE_CONFIGURE,
        RESUME_STAGE_REGISTER,
        RESUME_STAGE_BOOT,      /* boot-loader (after configure and unlock, before register) */
        RESUME_STAGE_UNLOCK,    /* the luks-bind steps: a resumed run does not bind again */
        _RESUME_STAGE_MAX,
        RESUME_STAGE_NONE = -1, /* wipe, finish, and the resume steps themselves */
};

struct resume_record {
        char fingerprint[65];
        char *version;          /* kiln version that wrote it */
        char *run_id;           /* the run report's id, NULL if none */
        unsigned stages;        /* 1u << enum resume_stage, for each stage done */
        bool complete;          /* the run finished: the next boot boots the installed system */
        char *reinstall;        /* the reinstall token the run was made with (docs/reinstall.md), NULL if none */
};

const char *resume_stage_name(enum resume_stage s);
/* The stage a step of a fresh plan belongs to. */
enum resume_stage resume_stage_of(enum plan_step_kind k);

int resume_record_to_json(const struct resume_record *rec, struct strbuf *out);
/* -EBADMSG when the text is not a record of RESUME_RECORD_FORMAT,
 * -ENOTEMPTY when anything but white space follows the JSON document. */
int resume_record_from_json(const char *text, size_t len, struct resume_record *ret);
/* Reading and writing the file: agent/apply/record.h. */
void resume_record_done(struct resume_record *rec);

/* Pure. One member of md array md_id judged by its signatures (sigs, n: the
 * inventory's, or, for a mapping a luks-open of the plan makes, which no
 * inventory sees inside the closed LUKS, what the run probes once it is
 * open): 1 when it is a member of the array whose UUID *uuid holds (any
 * array while *uuid is NULL: then *uuid points to its UUID, inside sigs);
 * 0 with the reason appended to why. The one rule for both. */
int resume_md_member(const char *md_id, const char *member, const struct inv_signature *sigs, size_t n,
                     const char **uuid, struct strbuf *why);

/* Pure. Returns 1 and a resume plan in *ret when the disks the fresh plan
 * selected hold what it builds; 0 and the reason in *ret_why (free it) when
 * a resume is not possible and the fresh plan stands. */
int resume_plan_build(const struct plan *fresh, struct plan **ret, char **ret_why);

/* What `kiln plan`, `kiln apply` and `kiln boot` do: force_fresh (--fresh,
 * kiln.fresh) or resume_plan_build(). Records why in fresh->mode_why (and
 * the resume plan's); *ret is NULL when the fresh plan stands. */
int resume_decide(struct plan *fresh, bool force_fresh, struct plan **ret);

/* plan_build() refused: maybe only because disks without 'wipe: true' hold
 * signatures, which may be an interrupted run of this plan. Returns 1 with
 * the plan built with PLAN_ALLOW_SIGNATURES in *ret_fresh (never to be run,
 * not even as a fallback) and a resume plan in *ret; 0 when that is not so. */
int resume_decide_unwiped(const struct spec *spec, const struct inventory *inv, struct plan **ret_fresh, struct plan **ret);

/* What `kiln plan`, `kiln apply` and `kiln boot` do with a spec and an
 * inventory: plan_build(), then (unless force_fresh) resume_decide(), or
 * resume_decide_unwiped() when plan_build() refused disks that may hold an
 * interrupted run of this plan. On failure, plan_build()'s error with the
 * diagnostics in *diags. On success, *ret_fresh is the fresh plan, *ret_resume
 * the resume plan or NULL, and *ret_unwiped tells that the fresh plan must
 * never run (the spec does not allow wiping those disks). */
int plan_decide(const struct spec *spec, const struct inventory *inv, bool force_fresh, struct diags *diags,
                struct plan **ret_fresh, struct plan **ret_resume, bool *ret_unwiped);

/* ---- a finished node (docs/reinstall.md) ---- */

/* What a boot does once the progress record on the disks has been read
 * (read-only: nothing assembled, opened or mounted writable). */
enum plan_verdict {
        PLAN_VERDICT_RUN,               /* no finished run there: the plans as plan_decide() made them */
        PLAN_VERDICT_BOOT_INSTALLED,    /* a finished run of this plan: change nothing, boot it */
        PLAN_VERDICT_REINSTALL,         /* a finished run, and a reinstall token that is not its own: fresh install */
        PLAN_VERDICT_REFUSE,            /* a finished run of another plan and no new token: nothing written */
};
const char *plan_verdict_name(enum plan_verdict v);

/* The reinstall token a boot presents: kiln.reinstall= when given, else the
 * spec's `reinstall:`, else NULL. */
const char *plan_reinstall_token(const struct spec *spec, const char *cmdline_token);

/* A disk of the inventory whose GPT disk GUID is the finished-install mark
 * (mark.h): a finished kiln install, recognised without a key. */
struct plan_mark {
        const struct inv_disk *disk;
        struct mark mark;
};
/* Every disk of the inventory, not only the ones a plan selects (a spec that
 * takes only the data disks of a finished node must not wipe those either).
 * *ret (free it) is NULL when none is marked. */
int plan_marks(const struct inventory *inv, struct plan_mark **ret, size_t *ret_n);

/* Pure. rec: the record on the disks, NULL when there is none (or it could
 * not be read); token: plan_reinstall_token(). A finished node is installed
 * again only when token is set and differs from the one in its record.
 * *why (appended) says why, naming both fingerprints where they differ.
 * Without a finished record, and unless rec is this plan's interrupted run,
 * the marks of fresh->inv decide (plan_marks()): none, RUN; a marked disk,
 * REFUSE, unless token is set and is not the token of any mark: REINSTALL.
 * Then *why begins with the marked disks ("/dev/vda holds a finished kiln
 * install (...)"). */
int plan_verdict(const struct plan *fresh, const struct resume_record *rec, const char *token, enum plan_verdict *ret,
                 struct strbuf *why);
