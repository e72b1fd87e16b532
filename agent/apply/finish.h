/* What a finished run does before the node goes down (kiln boot's finish
 * reboot or poweroff). */
#pragma once
#include "plan.h"

/* The storage stack down, top first, before a reboot or power-off: every
 * filesystem under the target (latest mount first), then whatever holds the
 * plan's disks (LVs, LUKS mappings, md arrays; wipe_teardown() walks the
 * holders top layer first, whatever the stacking order). Failures are
 * logged as warnings (why: "reboot", "poweroff"): the node goes down anyway.
 * /init does the same in shell for the finish it does itself
 * (initramfs/init: stack_down). */
void apply_stack_down(const struct plan *p, const char *why);
