/* libFuzzer target: spec_parse on arbitrary bytes must never crash, leak or
 * read out of bounds, and must return either a spec or diagnostics. */
#include "diag.h"
#include "spec.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct diags d = {};
        struct spec *s = NULL;
        int r = spec_parse("fuzz.yaml", (const char *) data, size, &s, &d);
        if (r == 0) {
                if (!s || diags_errors(&d, 0) != 0)     /* warnings may stand */
                        __builtin_trap();
                for (size_t i = 0; i < s->n_raids; i++)
                        for (char **m = s->raids[i].members; m && *m; m++)
                                if (spec_lookup(s, *m, NULL) == SPEC_OBJ_NONE)
                                        __builtin_trap();
                for (size_t i = 0; i < s->n_filesystems; i++)
                        if (spec_lookup(s, s->filesystems[i].on, NULL) == SPEC_OBJ_NONE)
                                __builtin_trap();
                if (s->hostname) {
                        struct spec_vars v = { "52:54:00:12:34:56", "uuid", "serial", "host" };
                        char *out = NULL;
                        if (spec_expand(s->hostname, &v, &out, NULL) < 0)
                                __builtin_trap();
                        free(out);
                        out = NULL;
                        /* a template that validates expands to a host name when the values are one */
                        struct spec_vars safe = { "52:54:00:12:34:56", "u", "s", "h" };
                        if (!strstr(s->hostname, "${mac}") && spec_expand(s->hostname, &safe, &out, NULL) == 0) {
                                if (spec_hostname_problem(out))
                                        __builtin_trap();
                                free(out);
                        }
                }
        } else if (r == -EINVAL) {
                if (s || diags_errors(&d, 0) == 0)
                        __builtin_trap();
        }
        diags_sort(&d);
        diags_clear(&d);
        spec_free(s);
        return 0;
}
