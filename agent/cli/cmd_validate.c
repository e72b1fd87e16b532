/* kiln validate FILE...: parse and check host specs, report every problem. */
#include "commands.h"
#include "diag.h"
#include "exitcode.h"
#include "log.h"
#include "spec.h"

static void diags_clearp(struct diags *d) { diags_clear(d); }

int cmd_validate(int argc, char **argv) {
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                fprintf(argc < 2 ? stderr : stdout,
                        "usage: kiln validate FILE...\n"
                        "checks host specs; prints every problem as file:line:col: message\n"
                        "exit 0 when every file is valid, 2 otherwise\n");
                return argc < 2 ? KILN_EXIT_USAGE : KILN_EXIT_OK;
        }
        int ret = KILN_EXIT_OK;
        for (int i = 1; i < argc; i++) {
                _cleanup_(diags_clearp) struct diags d = {};
                _cleanup_spec_free_ struct spec *s = NULL;
                int r = spec_load(argv[i], &s, &d);
                if (r == -ENOMEM) {
                        log_error_errno(r, "failed to validate '%s': %m", argv[i]);
                        return KILN_EXIT_FAILURE;
                }
                if (r < 0 && d.n == 0) {
                        /* the file itself could not be read */
                        errno = -r;
                        (void) diags_add(&d, argv[i], 0, 0, "cannot read spec: %m");
                }
                diags_sort(&d);
                diags_print(&d, stderr);
                if (r < 0)
                        ret = KILN_EXIT_BAD_SPEC;
                else
                        printf("%s: ok\n", argv[i]);
        }
        return ret;
}
