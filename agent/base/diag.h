/* Diagnostics: a list of "file:line:col: message" findings. The validator and
 * the planner collect every problem instead of stopping at the first. */
#pragma once
#include "util.h"
#include <stdarg.h>

struct diag {
        char *file;         /* may be NULL (e.g. an inventory-only refusal) */
        unsigned line, col; /* 1-based; 0 = unknown */
        char *message;
};

struct diags {
        struct diag *items;
        size_t n, alloc;
};

int diags_add(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...) _printf_(5, 6);
int diags_addv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) _printf_(5, 0);
/* Sorted by file, line, col, in insertion order within one position. */
void diags_sort(struct diags *d);
void diags_print(const struct diags *d, FILE *f);
void diags_clear(struct diags *d);
