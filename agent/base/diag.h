/* Diagnostics: a list of "file:line:col: message" findings. The validator and
 * the planner collect every problem instead of stopping at the first. */
#pragma once
#include "util.h"
#include <stdarg.h>

struct diag {
        char *file;         /* may be NULL (e.g. an inventory-only refusal) */
        unsigned line, col; /* 1-based; 0 = unknown */
        char *message;
        bool warning;       /* a warning: shown, but the spec or plan stands (unless --strict) */
        char *rule, *disk;  /* a plan refusal's disk rule id and disk path, when it has them */
};

struct diags {
        struct diag *items;
        size_t n, alloc;
};

int diags_add(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...) _printf_(5, 6);
int diags_addv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) _printf_(5, 0);
/* The same, as a warning: printed "file:line:col: warning: message". */
int diags_warn(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...) _printf_(5, 6);
int diags_warnv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) _printf_(5, 0);
/* Names the disk rule and the disk (either may be NULL) of the last item. */
int diags_set_subject(struct diags *d, const char *rule, const char *disk);
/* The items as a JSON array of {"file", "line", "col", "severity",
 * "message", "rule", "disk"} (line, col, rule, disk null when unknown). */
struct strbuf;
int diags_to_json(const struct diags *d, struct strbuf *out);
/* Appends every item of from to to; from is left empty. */
int diags_move(struct diags *to, struct diags *from);
/* How many of the items from index "from" on are errors, and warnings. */
size_t diags_errors(const struct diags *d, size_t from);
size_t diags_warnings(const struct diags *d, size_t from);
/* Sorted by file, line, col, in insertion order within one position. */
void diags_sort(struct diags *d);
void diags_print(const struct diags *d, FILE *f);
void diags_clear(struct diags *d);
