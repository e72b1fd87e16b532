/* libFuzzer target: the /proc parsers (procfs.h) on arbitrary file text. A
 * recorded sysroot (kiln inventory --sysroot) hands them whatever its files
 * hold. The first byte picks the file; the rest is its text. */
#include "procfs.h"
#include "util.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        char *text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = 0;

        switch (data[0] % 5) {
        case 0: {
                struct procfs_meminfo m;
                if (procfs_parse_meminfo(text, &m) < 0)
                        __builtin_trap();
                break;
        }
        case 1: {
                struct procfs_cpuinfo ci;
                if (procfs_parse_cpuinfo(text, &ci) < 0)
                        break;
                if (ci.model && strchr(ci.model, '\n'))
                        __builtin_trap();
                free(ci.model);
                break;
        }
        case 2:
                (void) procfs_misc_lists(text, "device-mapper");
                (void) procfs_misc_lists(text, "");
                break;
        case 3: {
                struct procfs_mount *m = NULL;
                size_t n = 0;
                if (procfs_parse_mountinfo(text, &m, &n) < 0)
                        break;
                for (size_t i = 0; i < n; i++)
                        if (m[i].major == 0 || !m[i].where)
                                __builtin_trap();
                procfs_mounts_free(m, n);
                break;
        }
        default: {
                unsigned ma, mi;
                (void) procfs_parse_devnum(text, &ma, &mi);
                break;
        }
        }
        free(text);
        return 0;
}
