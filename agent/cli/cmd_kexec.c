/* kiln kexec
 *
 * Boots the installed system that `kiln boot --no-finish` loaded on a
 * finished node (docs/reinstall.md): /init, after its report, runs this for
 * its internal finish 'kexec' (what kiln boot --no-finish writes; a spec's
 * finish: cannot name it). It checks /sys/kernel/kexec_loaded first, so that it
 * never reboots into nothing. */
#include "commands.h"
#include "exitcode.h"
#include "kexec.h"
#include "log.h"
#include "paths.h"

#include <limits.h>

static void kexec_usage(FILE *f) {
        fprintf(f, "usage: kiln kexec\n"
                   "  boot the installed kernel that kiln boot loaded (kexec_file_load) on a finished node;\n"
                   "  /init runs it when kiln boot --no-finish left 'kexec' in RUN_DIR/finish: that is /init's\n"
                   "  internal finish, not a value of the spec's finish: (docs/reinstall.md)\n");
}

int cmd_kexec(int argc, char **argv) {
        static const struct option options[] = { { "help", no_argument, NULL, 'h' }, {} };
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 'h': kexec_usage(stdout); return KILN_EXIT_OK;
                default: kexec_usage(stderr); return KILN_EXIT_USAGE;
                }
        if (cmd_check_operands(argc, argv, 0) != KILN_EXIT_OK)
                return KILN_EXIT_USAGE;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/kernel/kexec_loaded", kiln_paths.sysfs);
        _cleanup_free_ char *text = NULL;
        int r = read_full_file(path, 64, &text, NULL);
        if (r < 0)
                return log_error_errno(r, "failed to read '%s': %m", path), KILN_EXIT_FAILURE;
        if (text[0] != '1')
                return log_error("no kernel is loaded for kexec ('%s' says %c): run kiln boot first", path, text[0]),
                       KILN_EXIT_FAILURE;
        r = kexec_reboot();
        return log_error_errno(r, "failed to kexec the loaded kernel: %m"), KILN_EXIT_FAILURE;
}
