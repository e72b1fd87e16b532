/* What several subcommands do alike at their boundary: load the spec and the
 * inventory, and turn a failed plan into its message and exit code. Front-end code: it logs,
 * once, and returns an exit code from exitcode.h. */
#include "commands.h"
#include "exitcode.h"
#include "log.h"
#include "probe.h"

int cmd_check_operands(int argc, char **argv, int max) {
        if (argc - optind <= max)
                return KILN_EXIT_OK;
        log_error("unexpected argument '%s' (see 'kiln %s --help')", argv[optind + max], argv[0]);
        return KILN_EXIT_USAGE;
}

/* What loading a spec ends with, from a file or from memory: its problems
 * printed sorted, the strict check, its secrets registered. */
static int spec_loaded(int r, const char *name, bool strict, struct spec **spec, struct diags *diags, struct spec **ret,
                       struct diags *ret_diags) {
        diags_sort(diags);
        diags_print(diags, stderr);     /* errors, or warnings only (docs/spec.md "Warnings") */
        size_t warnings = diags_warnings(diags, 0);
        if (ret_diags && diags_move(ret_diags, diags) < 0)
                return log_error_errno(-ENOMEM, "failed to load spec '%s': %m", name), KILN_EXIT_FAILURE;
        if (r < 0) {
                if (r == -EINVAL)
                        return KILN_EXIT_BAD_SPEC;
                log_error_errno(r, "failed to load spec '%s': %m", name);
                return r == -ENOMEM ? KILN_EXIT_FAILURE : KILN_EXIT_BAD_SPEC;
        }
        if (strict && warnings > 0)
                return log_error("spec '%s' has %zu warning%s, which --strict makes errors", name, warnings,
                                 warnings == 1 ? "" : "s"), KILN_EXIT_BAD_SPEC;
        r = spec_register_secrets(*spec);
        if (r < 0)
                return log_error_errno(r, "failed to register the secrets of spec '%s': %m", name), KILN_EXIT_FAILURE;
        *ret = TAKE_PTR(*spec);
        return KILN_EXIT_OK;
}

int cmd_load_spec(const char *path, bool strict, struct spec **ret, struct diags *ret_diags) {
        _cleanup_(diags_clear) struct diags diags = {};
        _cleanup_spec_free_ struct spec *spec = NULL;
        int r = spec_load(path, &spec, &diags);
        return spec_loaded(r, path, strict, &spec, &diags, ret, ret_diags);
}

int cmd_parse_spec(const char *name, const char *data, size_t len, struct spec **ret) {
        _cleanup_(diags_clear) struct diags diags = {};
        _cleanup_spec_free_ struct spec *spec = NULL;
        int r = spec_parse(name, data, len, &spec, &diags);
        int code = spec_loaded(r, name, false, &spec, &diags, ret, NULL);
        if (r == -EINVAL)
                log_error("spec '%s' is not valid", name);
        return code;
}

int cmd_load_inventory(const char *path, struct inventory **ret) {
        int r = path ? inventory_load(path, ret, NULL) : inventory_probe(NULL, ret, NULL);
        if (r < 0)
                return log_error_errno(r, "failed to read the inventory of '%s': %m", path ? path : "this machine"),
                       KILN_EXIT_FAILURE;
        return KILN_EXIT_OK;
}

int cmd_plan_warnings(struct diags *diags, bool strict, const char *verb, const char *subject) {
        size_t n = diags_warnings(diags, 0);
        if (n == 0)
                return KILN_EXIT_OK;
        diags_sort(diags);
        diags_print(diags, stderr);
        diags_clear(diags);
        if (!strict)
                return KILN_EXIT_OK;
        log_error("refusing to %s '%s': %zu warning%s above, which --strict makes errors; nothing was changed", verb,
                  subject, n, n == 1 ? "" : "s");
        return KILN_EXIT_REFUSED;
}

int cmd_plan_failed(int r, struct diags *diags, const char *verb, const char *subject) {
        size_t n = diags_errors(diags, 0);
        diags_sort(diags);
        diags_print(diags, stderr);
        diags_clear(diags);
        switch (r) {
        case -EPERM:
                log_error("refusing to %s '%s': %zu problem%s above, nothing was changed", verb, subject, n, n == 1 ? "" : "s");
                return KILN_EXIT_REFUSED;
        case -EINVAL:
                log_error("spec '%s' cannot be planned on this machine: %zu problem%s above", subject, n, n == 1 ? "" : "s");
                return KILN_EXIT_BAD_SPEC;
        default:
                log_error_errno(r, "failed to plan '%s': %m", subject);
                return KILN_EXIT_FAILURE;
        }
}

int cmd_apply_exit_code(int r, enum plan_step_kind failed) {
        if (r >= 0)
                return KILN_EXIT_OK;
        switch (failed) {
        case PLAN_WIPE: case PLAN_PARTITION: case PLAN_MD_CREATE: case PLAN_LUKS_FORMAT:
        case PLAN_LUKS_OPEN: case PLAN_PVCREATE: case PLAN_VGCREATE: case PLAN_LVCREATE:
        case PLAN_MKFS: case PLAN_MOUNT: case PLAN_CONFIGURE: case PLAN_NETWORK: case PLAN_LUKS_BIND: case PLAN_BOOTLOADER:
        case PLAN_MD_ASSEMBLE: case PLAN_VG_ACTIVATE: case PLAN_SKIP_STAGE: case PLAN_RESUME_CHECK:
                return KILN_EXIT_STORAGE;
        case PLAN_BENCH_RAW: case PLAN_BENCH_CRYPT:
                return KILN_EXIT_BENCH;
        case PLAN_IMAGE:
                return KILN_EXIT_IMAGE;
        case PLAN_REGISTER:
                return KILN_EXIT_REGISTER;
        default:
                return KILN_EXIT_FAILURE;
        }
}
