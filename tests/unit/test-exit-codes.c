/* docs/exit-codes.md against the one table (exitcode.h, KILN_EXIT_CODES):
 * the same codes with the same names, in the same order, and no row the
 * table lacks. `kiln help` prints the list from that table (main.c). */
#include "exitcode.h"

#include "tap.h"

#include <stdlib.h>

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/* "| 2 | bad spec | ..." -> 2, "bad spec"; 0 for a row that is not one (the header, the rule) */
static int parse_row(char *line, int *ret_code, char **ret_name) {
        if (line[0] != '|')
                return 0;
        char *code = line + 1, *bar = strchr(code, '|');
        if (!bar)
                return 0;
        *bar = 0;
        char *name = bar + 1, *bar2 = strchr(name, '|');
        if (!bar2)
                return 0;
        *bar2 = 0;
        while (*code == ' ')
                code++;
        char *end = NULL;
        long v = strtol(code, &end, 10);
        if (end == code || (*end && *end != ' '))
                return 0;       /* "code", "---" */
        while (*name == ' ')
                name++;
        for (size_t n = strlen(name); n > 0 && name[n - 1] == ' '; n--)
                name[n - 1] = 0;
        *ret_code = (int) v;
        *ret_name = name;
        return 1;
}

int main(void) {
        const char *src = getenv("SRC");
        char path[4096];
        snprintf(path, sizeof path, "%s/docs/exit-codes.md", src ? src : ".");
        FILE *f = fopen(path, "re");
        CHECK(f != NULL);
        if (!f)
                return TEST_DONE();
        char line[4096];
        size_t rows = 0;
        while (fgets(line, sizeof line, f)) {
                int code;
                char *name;
                if (!parse_row(line, &code, &name))
                        continue;
                CHECK(rows < ELEMENTSOF(kiln_exit_codes));
                if (rows < ELEMENTSOF(kiln_exit_codes)) {
                        CHECK_INT(code, kiln_exit_codes[rows].code);
                        CHECK_STR(name, kiln_exit_codes[rows].name);
                }
                rows++;
        }
        fclose(f);
        CHECK_INT(rows, ELEMENTSOF(kiln_exit_codes));
        CHECK_INT(KILN_EXIT_USAGE, 64);
        return TEST_DONE();
}
