/* Registration and reporting to the controller: the last stage of a run, and
 * all of `kiln register`.
 *
 *   register_events_init(&ev, spec, opts); report_set_event_hook(...) via
 *   register_attach_events(report, &ev)   -> every stage-begin / stage-end /
 *                                            run-end is POSTed to the webhook
 *   report_finish(report, ...)
 *   register_run(spec, report, opts, &err) -> CloudStack addHost (unless the
 *                                            run failed), then the final report
 *                                            to the webhook
 *
 * Events are best effort: each gets a short delivery budget, and after one
 * could not be delivered the rest are skipped (the final report still goes
 * out under the full policy, with every stage in it).
 *
 * register_run() has one budget for all its requests: policy.total_ms from
 * its start (or up to policy.deadline_usec if set), so a dead controller costs
 * at most that long in all. The final report to the webhook has a share of
 * it of its own (register_report_share_ms(): a quarter, 1 s to 60 s), which
 * the CloudStack calls cannot use up: a FAIL report still goes out when
 * CloudStack never answers. Each call sends the report under a new delivery
 * id ("<run id>/report/<uuid>"), the same on its retries. Silent module. */
#pragma once
#include "delivery.h"
#include "report.h"
#include "spec.h"

struct register_options {
        struct delivery_policy policy;          /* CloudStack calls and the final report */
        struct delivery_policy event_policy;    /* each stage event */
        const char *ca_file;                    /* extra CA bundle for HTTPS, NULL = system */
        bool cloudstack_firstboot;              /* the install run: addHost is left to the installed system's
                                                 * first boot (firstboot.h); the report says so, nothing is sent */
};

#define REGISTER_REPORT_MIN_MS 1000
#define REGISTER_REPORT_MAX_MS 60000
/* The final report's own share of a registration budget of total_ms. */
unsigned register_report_share_ms(unsigned total_ms);

/* Full policy as DELIVERY_POLICY_DEFAULT; events 2 s connect, 5 s per request and in all. */
void register_options_default(struct register_options *o);

/* The start of one registration with these options: each event gets at
 * most a fifth of the whole budget (policy.total_ms), and both policies end
 * at the same deadline, total_ms from now. */
void register_options_start(struct register_options *o);

struct register_events {
        const struct spec *spec;
        const struct register_options *opts;
        unsigned sent, failed;
        bool disabled;                          /* an event failed: skip the rest */
        char *last_error;                       /* why the first failed event failed */
};

/* Attach the webhook event sender to the report; does nothing when the spec
 * has no webhook. ev, spec and opts must outlive the report's use. */
void register_attach_events(struct report *r, struct register_events *ev, const struct spec *spec,
                            const struct register_options *opts);
void register_events_done(struct register_events *ev);

/* Registers the node the report describes. The outcome is recorded in the
 * report under "registration". Returns 0 when every configured target took
 * it; otherwise the first error, with a message for the operator in
 * err (may be NULL). -ENOMSG when the spec configures no registration at all. */
int register_run(const struct spec *spec, struct report *r, const struct register_options *opts, struct strbuf *err);

/* One event outside the run's stages (e.g. "storage-degraded" of the first
 * boot's storage check): fields (taken) plus type, run_id, node_id,
 * hostname and time, signed and posted to the webhook under the event
 * policy, with the delivery id "<run id>/<kind>/<uuid>", a new uuid for
 * each call (the same on its retries). 0 when the spec has no webhook. */
int register_post_event(const struct spec *spec, const struct report *r, const struct register_options *o,
                        const char *kind, json_object *fields, struct strbuf *err);
