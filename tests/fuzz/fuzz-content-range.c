/* libFuzzer target: the value of an HTTP Content-Range header (any server,
 * or whoever sits between kiln and it, writes it; kiln resumes a download
 * on what it says). fetch_parse_content_range() reads exactly len bytes
 * (the input is copied to a buffer of exactly that size, so ASan sees any
 * read beyond), returns 0 or -EINVAL/-ERANGE, leaves ret alone on failure,
 * and what it accepts is a well-formed range that renders and parses back
 * to the same values. */
#include "fetch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const struct fetch_content_range *a, const struct fetch_content_range *b) {
        return a->first == b->first && a->last == b->last && a->complete == b->complete &&
               a->complete_known == b->complete_known;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const struct fetch_content_range sentinel = { .first = 3, .last = 2, .complete = 1, .complete_known = true };
        struct fetch_content_range c = sentinel, again = sentinel;
        char *v = malloc(size ? size : 1);
        if (!v)
                return 0;
        memcpy(v, data, size);

        int r = fetch_parse_content_range(v, size, &c);
        free(v);
        if (r < 0) {
                if (r != -EINVAL && r != -ERANGE)
                        __builtin_trap();
                if (!same(&c, &sentinel))
                        __builtin_trap();
                return 0;
        }
        if (r != 0 || c.first > c.last || c.last > INT64_MAX)
                __builtin_trap();
        if (c.complete_known ? c.last >= c.complete || c.complete > INT64_MAX : c.complete != 0)
                __builtin_trap();

        char text[96];
        int n;
        if (c.complete_known)
                n = snprintf(text, sizeof(text), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, c.first, c.last, c.complete);
        else
                n = snprintf(text, sizeof(text), "bytes %" PRIu64 "-%" PRIu64 "/*", c.first, c.last);
        if (n <= 0 || (size_t) n >= sizeof(text))
                __builtin_trap();
        if (fetch_parse_content_range(text, (size_t) n, &again) != 0 || !same(&c, &again))
                __builtin_trap();
        return 0;
}
