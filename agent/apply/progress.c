#include "progress.h"

static const char *storage_kind(enum plan_step_kind k) {
        switch (k) {
        case PLAN_PARTITION:   return "partitions";
        case PLAN_MD_CREATE:   return "raid";
        case PLAN_LUKS_FORMAT: return "luks";
        case PLAN_LUKS_OPEN:   return "luks-open";
        case PLAN_PVCREATE:    return "pv";
        case PLAN_VGCREATE:    return "vg";
        case PLAN_LVCREATE:    return "lv";
        case PLAN_MKFS:        return "filesystem";
        case PLAN_MOUNT:       return "mount";
        default:               return NULL;
        }
}

void progress_apply_hook(void *userdata, const struct plan_step *s, size_t index, size_t n_steps,
                         enum apply_event event, int error, uint64_t usec, const char *reason) {
        struct report *r = userdata;
        char name[160];

        if (!r)
                return;
        apply_stage_name(s, name, sizeof name);
        switch (event) {
        case APPLY_STEP_START:
                (void) report_stage_begin(r, name);
                break;
        case APPLY_STEP_DONE:
                (void) report_stage_end(r, name, REPORT_SUCCESS, NULL);
                if (storage_kind(s->kind))
                        (void) report_add_storage(r, storage_kind(s->kind), s->id, s->device, s->description);
                break;
        case APPLY_STEP_FAILED:
                (void) report_stage_end(r, name, REPORT_FAIL, reason ? reason : strerror(-error));
                break;
        }
}
