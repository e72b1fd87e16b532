/* libFuzzer target: URLs and text holding URLs as kiln shows them (a spec's
 * URLs, kiln.* words, curl's debug lines with a server's Location header).
 * url_display() must render any text within URL_DISPLAY_MAX, without control
 * characters, with nothing after a '?' or '#' but "...", and with no '@' in
 * what it shows as the authority (no '@' at all when it shows no scheme);
 * url_scrub() and url_scrub_debug_line() must render any text (ASan watches
 * that all read exactly what they are given). */
#include "url.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *text = malloc(size + 1);
        if (!text)
                return 0;
        memcpy(text, data, size);
        text[size] = 0;

        char buf[URL_DISPLAY_MAX];
        const char *d = url_display(text, buf);
        size_t n = strlen(d);
        if (d != buf || n >= URL_DISPLAY_MAX)
                __builtin_trap();
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) d[i] < 0x20 || d[i] == 0x7f)
                        __builtin_trap();
        const char *q = strpbrk(d, "?#");
        if (q && (n < 4 || q != d + n - 4 || strcmp(q + 1, "...") != 0))
                __builtin_trap();
        const char *sep = strstr(d, "://");
        bool scheme = sep && sep > d && strcspn(d, ":/?#@ ") == (size_t) (sep - d);
        const char *auth = scheme ? sep + 3 : d;
        size_t an = scheme ? strcspn(auth, "/?#") : (q ? (size_t) (q - d) : n);
        if (memchr(auth, '@', an))
                __builtin_trap();

        struct strbuf sb = STRBUF_INIT;
        if (url_scrub(text, size, &sb) < 0)
                __builtin_trap();
        strbuf_release(&sb);
        if (url_scrub_debug_line(text, size, size > 0 && (data[0] & 1), &sb) < 0)
                __builtin_trap();
        strbuf_release(&sb);
        free(text);
        return 0;
}
