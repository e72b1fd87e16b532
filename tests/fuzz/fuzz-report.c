/* libFuzzer target: a saved run report (`kiln register --report FILE` reads
 * the one an earlier run left in the installed system). What
 * report_from_json() accepts must go through what kiln register does with
 * it: set the node's address, a register stage begin and end, finish, save. */
#include "report.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hook(struct report *r, const char *kind, json_object *event, void *userdata) {
        (void) json_object_to_json_string(event);
        ++*(unsigned *) userdata;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct report *r = NULL;
        struct strbuf sb = STRBUF_INIT;
        unsigned events = 0;
        int k = report_from_json((const char *) data, size, &r);
        if (k < 0) {
                if (r || (k != -EBADMSG && k != -ENOTEMPTY && k != -EFBIG && k != -ENOMEM))
                        __builtin_trap();
                return 0;
        }
        if (!report_run_id(r))
                __builtin_trap();
        report_set_event_hook(r, hook, &events);
        (void) report_node_field(r, "id");
        (void) report_get_result(r);
        (void) report_get(r, "registration");
        if (report_set_node_field(r, "ip", "192.0.2.10") < 0 || report_stage_begin(r, "register") < 0 ||
            report_stage_end(r, "register", REPORT_FAIL, "refused") < 0 ||
            report_finish(r, (data[0] & 1) ? REPORT_FAIL : REPORT_SUCCESS, "register", "refused") < 0 ||
            report_to_json(r, &sb) < 0)
                __builtin_trap();
        if (events < 3)
                __builtin_trap();       /* stage-begin, stage-end, run-end at least */
        report_free(r);
        /* what was saved loads again */
        if (report_from_json(sb.buf, sb.len, &r) < 0 && sb.len <= REPORT_MAX_BYTES)
                __builtin_trap();
        report_free(r);
        strbuf_release(&sb);
        return 0;
}
