/* kiln validate [--strict] [--json] FILE|-...: parse and check host specs,
 * report every problem (errors and warnings). */
#include "commands.h"
#include "diag.h"
#include "exitcode.h"
#include "log.h"
#include "spec.h"
#include "strbuf.h"
#include <unistd.h>

#define STDIN_NAME "<stdin>"

static void diags_clearp(struct diags *d) { diags_clear(d); }

static void usage(FILE *f) {
        fprintf(f, "usage: kiln validate [--strict] [--json] FILE...\n"
                   "checks host specs; prints every problem as file:line:col: message, warnings as\n"
                   "file:line:col: warning: message (docs/spec.md \"Diagnostics\", \"Warnings\")\n"
                   "  FILE      a spec; '-' reads one from standard input (shown as " STDIN_NAME ")\n"
                   "  --strict  warnings count as errors\n"
                   "  --json    one JSON document on stdout instead: {\"files\": [{\"file\", \"valid\",\n"
                   "            \"errors\", \"warnings\"}], \"diagnostics\": [{\"file\", \"line\", \"col\",\n"
                   "            \"severity\", \"message\", \"rule\", \"disk\"}]}; nothing on stderr\n"
                   "exit 0 when every file is valid, 2 otherwise\n");
}

/* Loads one spec (a path, or "-" for stdin); the diagnostics go into d. */
static int load_one(const char *arg, struct diags *d) {
        _cleanup_spec_free_ struct spec *s = NULL;
        if (!streq(arg, "-"))
                return spec_load(arg, &s, d);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_full_fd(STDIN_FILENO, SPEC_MAX_BYTES, &data, &len);
        if (r == -EFBIG)
                return diags_add(d, STDIN_NAME, 0, 0, "spec is larger than %u bytes", SPEC_MAX_BYTES) < 0 ? -ENOMEM : -EINVAL;
        if (r < 0)
                return r;
        r = spec_parse(STDIN_NAME, data, len, &s, d);
        explicit_wipe(data, len);
        return r;
}

int cmd_validate(int argc, char **argv) {
        static const struct option options[] = {
                { "strict", no_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        bool strict = false, json = false;
        int c;
        CMD_FOREACH_OPTION(c, argc, argv, "h", options)
                switch (c) {
                case 's': strict = true; break;
                case 'j': json = true; break;
                case 'h': usage(stdout); return KILN_EXIT_OK;
                default: usage(stderr); return KILN_EXIT_USAGE;
                }
        if (optind >= argc) {
                usage(stderr);
                return KILN_EXIT_USAGE;
        }
        int ret = KILN_EXIT_OK, r;
        _cleanup_strbuf_ struct strbuf files = STRBUF_INIT, diagsj = STRBUF_INIT;
        _cleanup_(diags_clearp) struct diags all = {};
        bool first_file = true;
        for (int i = optind; i < argc; i++) {
                const char *name = streq(argv[i], "-") ? STDIN_NAME : argv[i];
                _cleanup_(diags_clearp) struct diags d = {};
                r = load_one(argv[i], &d);
                if (r == -ENOMEM) {
                        log_error_errno(r, "failed to validate '%s': %m", name);
                        return KILN_EXIT_FAILURE;
                }
                if (r < 0 && diags_errors(&d, 0) == 0) {
                        /* the file itself could not be read */
                        errno = -r;
                        (void) diags_add(&d, name, 0, 0, "cannot read spec: %m");
                }
                size_t errors = diags_errors(&d, 0), warnings = diags_warnings(&d, 0);
                bool valid = r >= 0 && !(strict && warnings > 0);
                diags_sort(&d);
                if (!valid)
                        ret = KILN_EXIT_BAD_SPEC;
                if (!json) {
                        diags_print(&d, stderr);
                        if (r >= 0 && !valid)
                                fprintf(stderr, "%s: %zu warning%s, which --strict makes errors\n", name, warnings,
                                        warnings == 1 ? "" : "s");
                        else if (valid)
                                printf("%s: ok\n", name);
                        continue;
                }
                r = strbuf_adds(&files, first_file ? "{\"file\":" : ",{\"file\":");
                first_file = false;
                if (r >= 0)
                        r = strbuf_add_json_string(&files, name);
                if (r >= 0)
                        r = strbuf_addf(&files, ",\"valid\":%s,\"errors\":%zu,\"warnings\":%zu}", valid ? "true" : "false",
                                        errors, warnings);
                if (r >= 0)
                        r = diags_move(&all, &d);
                if (r < 0)
                        return log_error_errno(r, "failed to format the diagnostics: %m"), KILN_EXIT_FAILURE;
        }
        if (json && (r = diags_to_json(&all, &diagsj)) < 0)
                return log_error_errno(r, "failed to format the diagnostics: %m"), KILN_EXIT_FAILURE;
        if (json && printf("{\"files\":[%s],\"diagnostics\":%s}\n", strbuf_str(&files), strbuf_str(&diagsj)) < 0)
                return log_error_errno(-EIO, "failed to write the diagnostics: %m"), KILN_EXIT_FAILURE;
        return ret;
}
