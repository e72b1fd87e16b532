/* The run report: stages with times and results, events through the hook,
 * the failure's log tail, save/load round trip, and no secret in any of it. */
#include "log.h"
#include "progress.h"
#include "report.h"
#include "tap.h"

#include <stdlib.h>

#define SECRET "s3cr3t-cloudstack-key-XYZ"

static struct strbuf events = STRBUF_INIT;

static void hook(struct report *r, const char *kind, json_object *ev, void *userdata) {
        (void) r;
        (*(int *) userdata)++;
        strbuf_addf(&events, "%s %s\n", kind, json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN));
}

/* "stage-begin register cloudstack" lines, one per stage event, and "run-end" */
static void trace_hook(struct report *r, const char *kind, json_object *ev, void *userdata) {
        json_object *stage = NULL;
        (void) r;
        (void) json_object_object_get_ex(ev, "stage", &stage);
        strbuf_addf(userdata, "%s%s%s\n", kind, stage ? " " : "", stage ? json_object_get_string(stage) : "");
}

/* The hooks apply_run calls around each step (progress_apply_hook), with the
 * run finished inside the first register step (the report is what it sends):
 * every stage-begin gets exactly one stage-end, in order, the two register
 * steps under their own names. A failed run ends its open stage once too. */
static void test_stage_pairs(void) {
        static const struct plan_step steps[] = {
                { .kind = PLAN_MKFS, .id = "root", .device = (char *) "/dev/vg0/root" },
                { .kind = PLAN_REGISTER, .index = 0 },
                { .kind = PLAN_REGISTER, .index = 1 },
                { .kind = PLAN_FINISH },
        };
        struct report *r = NULL;
        _cleanup_strbuf_ struct strbuf trace = STRBUF_INIT;
        CHECK_INT(report_new(&r), 0);
        if (!r)
                return;
        report_set_event_hook(r, trace_hook, &trace);
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                progress_apply_hook(r, &steps[i], i, ELEMENTSOF(steps), APPLY_STEP_START, 0, 0, NULL);
                if (steps[i].kind == PLAN_REGISTER && steps[i].index == 0)
                        CHECK_INT(report_finish(r, REPORT_SUCCESS, NULL, NULL), 0);     /* as step_register does */
                progress_apply_hook(r, &steps[i], i, ELEMENTSOF(steps), APPLY_STEP_DONE, 0, 1000, NULL);
        }
        CHECK_STR(strbuf_str(&trace),
                  "stage-begin mkfs root\nstage-end mkfs root\n"
                  "stage-begin register cloudstack\nrun-end\nstage-end register cloudstack\n"
                  "stage-begin register webhook\nstage-end register webhook\n"
                  "stage-begin finish\nstage-end finish\n");
        _cleanup_strbuf_ struct strbuf js = STRBUF_INIT;
        CHECK_INT(report_to_json(r, &js), 0);
        CHECK(strstr(strbuf_str(&js), "not finished") == NULL);
        CHECK(strstr(strbuf_str(&js), "\"result\":\"WARN\"") == NULL);
        report_free(r);

        /* failed: the step's own end, then report_finish ends nothing twice */
        r = NULL;
        strbuf_reset(&trace);
        CHECK_INT(report_new(&r), 0);
        if (!r)
                return;
        report_set_event_hook(r, trace_hook, &trace);
        progress_apply_hook(r, &steps[0], 0, 1, APPLY_STEP_START, 0, 0, NULL);
        progress_apply_hook(r, &steps[0], 0, 1, APPLY_STEP_FAILED, -EIO, 1000, "mkfs.xfs exited 1");
        CHECK_INT(report_finish(r, REPORT_FAIL, "mkfs root", "mkfs.xfs exited 1"), 0);
        CHECK_STR(strbuf_str(&trace), "stage-begin mkfs root\nstage-end mkfs root\nrun-end\n");
        report_free(r);
}

/* A saved report whose "stages" is not a list of objects (found by
 * tests/fuzz/fuzz-report.c): json-c asserted in json_object_array_length() and
 * json_object_object_add(). It is not a kiln report; one that is loads and
 * goes through kiln register's steps. */
static void test_load_hostile(void) {
        static const char *const bad[] = {
                "{\"kiln_report\":1,\"run_id\":\"x\",\"stages\":\"fetch\"}",
                "{\"kiln_report\":1,\"run_id\":\"x\",\"stages\":{\"name\":\"fetch\"}}",
                "{\"kiln_report\":1,\"run_id\":\"x\",\"stages\":[1]}",
                "{\"kiln_report\":1,\"run_id\":\"x\",\"stages\":[{\"name\":\"fetch\"},\"register\"]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct report *r = NULL;
                CHECK_INT(report_from_json(bad[i], strlen(bad[i]), &r), -EBADMSG);
                CHECK(r == NULL);
        }
        static const char ok[] = "{\"kiln_report\":1,\"run_id\":\"x\",\"node\":7,\"registration\":[],"
                                 "\"stages\":[{\"name\":\"register\",\"started_usec\":\"soon\"}]}";
        struct report *r = NULL;
        struct strbuf sb = STRBUF_INIT;
        CHECK_INT(report_from_json(ok, strlen(ok), &r), 0);
        if (!r)
                return;
        CHECK_INT(report_set_node_field(r, "ip", "10.0.2.15"), 0);
        CHECK_STR(report_node_field(r, "ip"), "10.0.2.15");
        CHECK_INT(report_stage_begin(r, "register"), 0);
        CHECK_INT(report_stage_end(r, "register", REPORT_FAIL, "refused"), 0);
        CHECK_INT(report_finish(r, REPORT_FAIL, "register", "refused"), 0);
        CHECK_INT(report_to_json(r, &sb), 0);
        report_free(r);

        /* starts before the epoch or in the future (found by test-fuzz as
         * a signed overflow under UBSan) finish with a duration of 0 */
        static const char *const starts[] = {
                "{\"kiln_report\":1,\"run_id\":\"x\",\"started_usec\":-9223372036854775808,"
                "\"stages\":[{\"name\":\"image\",\"started_usec\":-9223372036854775808}]}",
                "{\"kiln_report\":1,\"run_id\":\"x\",\"started_usec\":9223372036854775807,"
                "\"stages\":[{\"name\":\"image\",\"started_usec\":9223372036854775807}]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(starts); i++) {
                _cleanup_strbuf_ struct strbuf d = STRBUF_INIT;
                r = NULL;
                CHECK_INT(report_from_json(starts[i], strlen(starts[i]), &r), 0);
                if (!r)
                        continue;
                CHECK_INT(report_finish(r, REPORT_FAIL, "image", "refused"), 0);
                CHECK_INT(report_to_json(r, &d), 0);
                CHECK(d.buf && strstr(d.buf, "\"duration_ms\":0") != NULL);
                report_free(r);
        }

        /* one document and nothing after it but white space: what was
         * saved loads with a newline after it, not with anything else */
#define TAIL(s) s, sizeof(s) - 1
        static const struct { const char *tail; size_t len; int err; } tails[] = {
                { TAIL("\n"), 0 },
                { TAIL(" \t\r\n"), 0 },
                { TAIL("x"), -ENOTEMPTY },
                { TAIL("\n]"), -ENOTEMPTY },
                { TAIL("{\"kiln_report\":1,\"run_id\":\"y\"}"), -ENOTEMPTY },
                { TAIL("\0\n"), -ENOTEMPTY },
        };
        struct strbuf t = STRBUF_INIT;
        for (size_t i = 0; i < ELEMENTSOF(tails); i++) {
                strbuf_reset(&t);
                CHECK_INT(strbuf_add(&t, sb.buf, sb.len), 0);
                CHECK_INT(strbuf_add(&t, tails[i].tail, tails[i].len), 0);
                r = NULL;
                int k = report_from_json(t.buf, t.len, &r);
                if (k != tails[i].err)
                        fprintf(stderr, "report followed by '%s'\n", tails[i].tail);
                CHECK_INT(k, tails[i].err);
                CHECK(k == 0 ? r && streq(report_run_id(r), "x") : !r);
                report_free(r);
        }
        strbuf_release(&t);
        strbuf_release(&sb);
}

int main(void) {
        test_stage_pairs();
        test_load_hostile();
        struct report *r = NULL;
        int n_events = 0;
        char dir[] = "/tmp/kiln-test-report-XXXXXX";

        log_set_max_level(LOG_LEVEL_ERR);
        CHECK_INT(log_register_secret(SECRET), 0);
        CHECK_INT(report_new(&r), 0);
        CHECK(r && report_run_id(r) && strlen(report_run_id(r)) == 36);
        report_set_event_hook(r, hook, &n_events);
        CHECK_INT(report_set_node_field(r, "mac", "52:54:00:12:34:56"), 0);
        CHECK_STR(report_node_field(r, "id"), "52:54:00:12:34:56");
        CHECK_INT(report_set_node_field(r, "uuid", "0b7e5b4e-1111-2222-3333-444455556666"), 0);
        CHECK_STR(report_node_field(r, "id"), "0b7e5b4e-1111-2222-3333-444455556666");
        CHECK_INT(report_set_node_field(r, "ip", "10.0.2.15"), 0);

        CHECK_INT(report_stage_begin(r, "storage"), 0);
        CHECK_INT(report_add_storage(r, "raid", "md1", "/dev/md/md1", "raid10 f2 over 4 disks"), 0);
        CHECK_INT(report_stage_end(r, "storage", REPORT_SUCCESS, NULL), 0);
        CHECK_INT(report_set_bench(r, "crypt_write_mbps", 123.5), 0);
        CHECK_INT(report_stage_begin(r, "image"), 0);
        /* A secret that reaches an error message is redacted on the way in. */
        log_error("failed to fetch image with key '%s': Connection refused", SECRET);
        CHECK_INT(report_finish(r, REPORT_FAIL, "image", "image failed for key " SECRET), 0);
        CHECK_INT(n_events, 5);         /* begin, end, begin, end (the open stage is closed as FAIL), run-end */
        CHECK_INT(report_get_result(r), REPORT_FAIL);

        struct strbuf js = STRBUF_INIT;
        CHECK_INT(report_to_json(r, &js), 0);
        CHECK(strstr(strbuf_str(&js), SECRET) == NULL);
        CHECK(strstr(strbuf_str(&js), "[redacted]") != NULL);
        CHECK(strstr(strbuf_str(&js), "\"failed_stage\":\"image\"") != NULL);
        CHECK(strstr(strbuf_str(&js), "failed to fetch image") != NULL);   /* log tail */
        CHECK(strstr(strbuf_str(&js), "\"crypt_write_mbps\":123.5") != NULL);
        CHECK(strstr(strbuf_str(&events), SECRET) == NULL);
        CHECK(strstr(strbuf_str(&events), "stage-end") != NULL);
        CHECK(strstr(strbuf_str(&events), "\"result\":\"SUCCESS\"") != NULL);

        CHECK(mkdtemp(dir) != NULL);
        char path[128];
        snprintf(path, sizeof path, "%s/sub/report.json", dir);
        CHECK_INT(report_save(r, path), 0);
        struct report *l = NULL;
        CHECK_INT(report_load(path, &l), 0);
        CHECK_STR(l ? report_run_id(l) : NULL, report_run_id(r));
        CHECK_STR(l ? report_node_field(l, "ip") : NULL, "10.0.2.15");
        CHECK_INT(l ? (int) report_get_result(l) : -1, REPORT_FAIL);
        _cleanup_free_ char *data = NULL;
        size_t len;
        CHECK_INT(read_full_file(path, 1 << 20, &data, &len), 0);
        CHECK(data && !strstr(data, SECRET));

        /* Not a report. */
        snprintf(path, sizeof path, "%s/bad.json", dir);
        FILE *f = fopen(path, "we");
        fputs("{\"hello\": 1}", f);
        fclose(f);
        struct report *bad = NULL;
        CHECK_INT(report_load(path, &bad), -EBADMSG);
        /* A report with something after it. */
        f = fopen(path, "we");
        fputs("{\"kiln_report\":1,\"run_id\":\"x\"}\n#", f);
        fclose(f);
        CHECK_INT(report_load(path, &bad), -ENOTEMPTY);
        CHECK(bad == NULL);

        char cmd[200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK_INT(system(cmd), 0);
        report_free(l);
        report_free(r);
        strbuf_release(&js);
        strbuf_release(&events);
        log_forget_secrets();
        return TEST_DONE();
}
