/* libFuzzer target: the first-boot config (/etc/kiln/firstboot.conf) is read
 * from the installed disk, which anyone with root on the node may have
 * edited. firstboot_conf_parse() must accept only a well-formed config, set
 * nothing on refusal, and what it accepts must survive
 * firstboot_conf_format() and back unchanged. */
#include "firstboot.h"
#include "util.h"

#include <errno.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > FIRSTBOOT_CONF_MAX)
                return 0;
        char *text = strndup((const char *) data, size);        /* as read_full_file() gives it: up to a NUL */
        if (!text)
                return 0;
        struct firstboot_conf c = {}, again = {};
        struct strbuf err = STRBUF_INIT, sb = STRBUF_INIT;
        int r = firstboot_conf_parse(text, &c, &err);
        if (r < 0) {
                if ((r != -EINVAL && r != -ENOMEM) || c.spec_url || c.spec_sha256 || c.report || c.marker || c.ca || c.ip)
                        __builtin_trap();
                if (r == -EINVAL && !err.len)
                        __builtin_trap();       /* every refusal says why */
        } else {
                if (!c.spec_url || !hex_valid(c.spec_sha256, 64) || !c.report || !c.marker)
                        __builtin_trap();
                if (firstboot_conf_format(&c, &sb) < 0 || firstboot_conf_parse(strbuf_str(&sb), &again, NULL) < 0)
                        __builtin_trap();
                if (!same(c.spec_url, again.spec_url) || !same(c.spec_sha256, again.spec_sha256) || !same(c.ca, again.ca) ||
                    !same(c.report, again.report) || !same(c.marker, again.marker) || !same(c.ip, again.ip))
                        __builtin_trap();
        }
        strbuf_release(&err);
        strbuf_release(&sb);
        firstboot_conf_done(&c);
        firstboot_conf_done(&again);
        free(text);
        return 0;
}
