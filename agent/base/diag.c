#include "diag.h"
#include "strbuf.h"

int diags_addv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) {
        if (d->n == d->alloc) {
                size_t na = d->alloc ? d->alloc * 2 : 16;
                struct diag *ni = realloc(d->items, na * sizeof *ni);
                if (!ni)
                        return -ENOMEM;
                d->items = ni;
                d->alloc = na;
        }
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = strbuf_vaddf(&sb, fmt, ap);
        if (r < 0)
                return r;
        char *f = file ? strdup(file) : NULL;
        if (file && !f)
                return -ENOMEM;
        d->items[d->n++] = (struct diag) { .file = f, .line = line, .col = col, .message = strbuf_detach(&sb) };
        return 0;
}

int diags_add(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = diags_addv(d, file, line, col, fmt, ap);
        va_end(ap);
        return r;
}

void diags_sort(struct diags *d) {
        /* Insertion sort: stable, and diagnostic lists are short. */
        for (size_t i = 1; i < d->n; i++) {
                struct diag t = d->items[i];
                size_t j = i;
                while (j > 0) {
                        struct diag *p = &d->items[j - 1];
                        int c = strcmp(p->file ? p->file : "", t.file ? t.file : "");
                        if (c < 0 || (c == 0 && (p->line < t.line || (p->line == t.line && p->col <= t.col))))
                                break;
                        d->items[j] = *p;
                        j--;
                }
                d->items[j] = t;
        }
}

void diags_print(const struct diags *d, FILE *f) {
        for (size_t i = 0; i < d->n; i++) {
                const struct diag *x = &d->items[i];
                if (x->file && x->line)
                        fprintf(f, "%s:%u:%u: %s\n", x->file, x->line, x->col, x->message);
                else if (x->file)
                        fprintf(f, "%s: %s\n", x->file, x->message);
                else
                        fprintf(f, "%s\n", x->message);
        }
}

void diags_clear(struct diags *d) {
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
        }
        free(d->items);
        *d = (struct diags) {};
}
