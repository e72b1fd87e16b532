/* The run's report: who the node is, what it has, what each stage did and
 * when, what was built, the image, the benchmark figures, the outcome and, on
 * failure, the tail of the log. Kept as a JSON document (json-c) because it
 * travels as JSON: saved to <run_dir>/report.json (and into the installed
 * system, for `kiln register` at first boot) and posted to the webhook.
 *
 * Secrets never get in: every string is passed through log_redact() when it
 * is written out, and nothing in the spec marked SECRET is ever added.
 *
 * Stage events: report_stage_begin()/report_stage_end() record start, finish,
 * duration and result, and call the event hook (register.c installs one that
 * posts each event to the webhook). Every stage-begin gets exactly one
 * stage-end: report_finish() ends the stages a failed run left open, and
 * leaves those of a successful run (still running) to end on their own. */
#pragma once
#include "inventory.h"
#include "strbuf.h"
#include "util.h"

#include <json-c/json.h>

#define REPORT_MAX_BYTES (4u * 1024u * 1024u)
#define REPORT_LOG_TAIL_LINES 40

enum report_result {
        REPORT_NONE = 0,        /* not finished */
        REPORT_SUCCESS,
        REPORT_WARN,
        REPORT_FAIL,
};

struct report;

/* Called for every event: kind "stage-begin", "stage-end" or "run-end";
 * event is the JSON object (already redacted) that would be sent. */
typedef void (*report_event_fn)(struct report *r, const char *kind, json_object *event, void *userdata);

struct report {
        json_object *root;
        uint64_t start_mono;            /* now_usec() at report_new */
        unsigned seq;                   /* events emitted so far */
        report_event_fn hook;
        void *hook_userdata;
};

/* A new report with a fresh random run id and the start time. */
int report_new(struct report **ret);
struct report *report_free(struct report *r);
DEFINE_CLEANUP(report_free, struct report *)
#define _cleanup_report_free_ _cleanup_(report_freep)

void report_set_event_hook(struct report *r, report_event_fn fn, void *userdata);

/* Node identity and an inventory summary (CPU, memory, disks, NICs). The node
 * id is the machine UUID, else the primary MAC. ip: the address the node is
 * known by (registration); NULL = first IPv4 address of the primary NIC. */
int report_set_node(struct report *r, const struct inventory *inv, const char *hostname, const char *ip);
/* Or set fields one by one (tests, recorded inventories): "hostname", "ip", "mac", "uuid", "id". */
int report_set_node_field(struct report *r, const char *field, const char *value);

/* One event of its own kind (e.g. "boot-installed"), outside any stage:
 * fields (taken; may be NULL) plus who and when, as the stage events carry
 * them, to the event hook (the webhook). */
int report_event(struct report *r, const char *kind, json_object *fields);

/* Stages: begin returns 0; end records result, message (NULL ok), duration. */
int report_stage_begin(struct report *r, const char *stage);
int report_stage_end(struct report *r, const char *stage, enum report_result result, const char *message);

/* What was built: one entry per object (kind "raid", "luks", "vg", "lv", "fs" ...). */
int report_add_storage(struct report *r, const char *kind, const char *id, const char *device, const char *description);
int report_set_image(struct report *r, const char *url, const char *sha256, uint64_t bytes, double seconds);
/* Benchmark figures: "cipher_mbps", "raw_write_mbps", "crypt_write_mbps", "overhead" ... */
int report_set_bench(struct report *r, const char *name, double value);
/* A text member of "bench" (e.g. what luksFormat uses after tuning). */
int report_set_bench_text(struct report *r, const char *name, const char *value);
/* The bench verdict text ("passed", "failed: write 80 MB/s < 150 MB/s"). */
int report_set_bench_verdict(struct report *r, enum report_result result, const char *text);
/* Registration outcome, an object under "registration": key "cloudstack" or "webhook". */
int report_set_registration(struct report *r, const char *key, json_object *value);

/* A top-level member (takes value), e.g. "resumed" and "resume" (resume after a failure). */
int report_set_member(struct report *r, const char *key, json_object *value);

/* The run's outcome; on REPORT_FAIL the failing stage, the error and the log
 * tail are recorded. Emits "run-end". */
int report_finish(struct report *r, enum report_result result, const char *failed_stage, const char *error);

/* Serialise (redacted, pretty). */
int report_to_json(const struct report *r, struct strbuf *out);
/* Atomic write (temp file + rename), mode 0644; missing parent dirs are made. */
int report_save(const struct report *r, const char *path);
/* Read a saved report (`kiln register --report`). */
int report_load(const char *path, struct report **ret);
/* The same from text (tests/fuzz/fuzz-report.c): -EBADMSG when it is not a
 * kiln run report, -ENOTEMPTY when anything but white space follows the
 * JSON document, -EFBIG over REPORT_MAX_BYTES. */
int report_from_json(const char *text, size_t len, struct report **ret);

/* Readers for what registration needs. NULL when absent. */
const char *report_run_id(const struct report *r);
const char *report_node_field(const struct report *r, const char *field);
enum report_result report_get_result(const struct report *r);
/* Any top-level member ("registration", "bench", ...), borrowed; NULL when absent. */
json_object *report_get(const struct report *r, const char *key);

const char *report_result_name(enum report_result res);
/* "2026-11-30T05:30:00.123Z" for a CLOCK_REALTIME time in microseconds. */
void report_format_time(uint64_t realtime_usec, char *buf, size_t len);
