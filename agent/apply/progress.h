/* Glue between the executor and the run report: an apply_hook_t that turns
 * every plan step into a report stage ("md-create md1", "mkfs root", ...)
 * with start, finish, duration and result, and records what each storage
 * step built. With a webhook attached to the report (register.h), each
 * stage start and end goes out as an event.
 *
 *     struct apply_options o = { .hook = progress_apply_hook, .userdata = report };
 */
#pragma once
#include "apply.h"
#include "report.h"

void progress_apply_hook(void *userdata, const struct plan_step *step, size_t index, size_t n_steps,
                         enum apply_event event, int error, uint64_t usec, const char *reason);

