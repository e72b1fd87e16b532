/* The storage stack taken down before the finish (finish.h). */
#include "finish.h"

#include "log.h"
#include "mount.h"
#include "paths.h"
#include "wipe.h"

void apply_stack_down(const struct plan *p, const char *why) {
        int r = mount_unmount_target();
        if (r < 0)
                log_warning_errno(r, "failed to unmount '%s' before %s: %m", kiln_paths.target, why);
        sync();
        for (size_t i = 0; i < p->n_disks; i++) {
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                const char *dev = p->disks[i].disk->path;
                r = wipe_teardown(dev, &err);
                if (r < 0)
                        log_warning_errno(r, "failed to stop the storage on '%s' before %s: %s%s%m", dev, why,
                                          strbuf_str(&err), err.len ? ": " : "");
        }
}
