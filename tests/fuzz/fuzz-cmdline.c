/* libFuzzer target: the kernel command line (/proc/cmdline, set by whoever
 * controls the PXE server). cmdline_parse() must return a parsed command line
 * or -EINVAL with the offending word, and what it returns must be well formed. */
#include "cmdline.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* /proc/cmdline is text, handed over NUL-terminated (read_full_file()):
         * a NUL inside the input ends it there, as it would the parser */
        char *text = strndup((const char *) data, size);
        if (!text)
                return 0;

        struct kiln_cmdline c = {};
        char *bad = NULL;
        int r = cmdline_parse(text, &c, &bad);
        if (r == 0) {
                if (bad)
                        __builtin_trap();
                if (c.spec_sha256) {
                        if (strlen(c.spec_sha256) != 64 || !hex_valid(c.spec_sha256, 64))
                                __builtin_trap();
                        for (const char *h = c.spec_sha256; *h; h++)
                                if (isupper((unsigned char) *h))
                                        __builtin_trap();
                }
                const char *vals[] = { c.spec, c.ca, c.report };
                for (size_t i = 0; i < ELEMENTSOF(vals); i++)
                        if (vals[i] && (!*vals[i] || strchr(vals[i], '"')))
                                __builtin_trap();       /* values are never empty, quotes are removed */
                for (char **u = c.unknown; u && *u; u++)
                        if (strncmp(*u, "kiln.", 5) != 0)
                                __builtin_trap();
                cmdline_done(&c);
        } else {
                if (r != -EINVAL && r != -E2BIG && r != -ENOMEM)
                        __builtin_trap();
                /* the offending word is quoted from the text (without a
                 * value's quotes, which the message need not keep) */
                if (r == -EINVAL && (!bad || (!strchr(text, '"') && !strstr(text, bad))))
                        __builtin_trap();
                if (c.spec || c.unknown)
                        __builtin_trap();
        }
        free(bad);
        free(text);
        return 0;
}
