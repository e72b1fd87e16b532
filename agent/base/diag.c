#include "diag.h"
#include "strbuf.h"

static int diags_push(struct diags *d, bool warning, const char *file, unsigned line, unsigned col, const char *fmt,
                      va_list ap) _printf_(6, 0);
static int diags_push(struct diags *d, bool warning, const char *file, unsigned line, unsigned col, const char *fmt,
                      va_list ap) {
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
        d->items[d->n++] = (struct diag) { .file = f, .line = line, .col = col, .message = strbuf_detach(&sb),
                                           .warning = warning };
        return 0;
}

int diags_addv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) {
        return diags_push(d, false, file, line, col, fmt, ap);
}

int diags_warnv(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, va_list ap) {
        return diags_push(d, true, file, line, col, fmt, ap);
}

int diags_warn(struct diags *d, const char *file, unsigned line, unsigned col, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = diags_warnv(d, file, line, col, fmt, ap);
        va_end(ap);
        return r;
}

int diags_set_subject(struct diags *d, const char *rule, const char *disk) {
        if (d->n == 0)
                return -EINVAL;
        struct diag *x = &d->items[d->n - 1];
        if ((rule && !(x->rule = strdup(rule))) || (disk && !(x->disk = strdup(disk))))
                return -ENOMEM;
        return 0;
}

static int json_str_or_null(struct strbuf *out, const char *key, const char *v) {
        int r = strbuf_addf(out, ",\"%s\":", key);
        if (r >= 0)
                r = v ? strbuf_add_json_string(out, v) : strbuf_adds(out, "null");
        return r;
}

int diags_to_json(const struct diags *d, struct strbuf *out) {
        int r = strbuf_adds(out, "[");
        for (size_t i = 0; r >= 0 && i < d->n; i++) {
                const struct diag *x = &d->items[i];
                r = strbuf_adds(out, i ? ",{\"file\":" : "{\"file\":");
                if (r >= 0)
                        r = x->file ? strbuf_add_json_string(out, x->file) : strbuf_adds(out, "null");
                if (r >= 0 && x->line)
                        r = strbuf_addf(out, ",\"line\":%u,\"col\":%u", x->line, x->col);
                else if (r >= 0)
                        r = strbuf_adds(out, ",\"line\":null,\"col\":null");
                if (r >= 0)
                        r = strbuf_addf(out, ",\"severity\":\"%s\",\"message\":", x->warning ? "warning" : "error");
                if (r >= 0)
                        r = strbuf_add_json_string(out, x->message);
                if (r >= 0)
                        r = json_str_or_null(out, "rule", x->rule);
                if (r >= 0)
                        r = json_str_or_null(out, "disk", x->disk);
                if (r >= 0)
                        r = strbuf_adds(out, "}");
        }
        return r < 0 ? r : strbuf_adds(out, "]");
}

int diags_move(struct diags *to, struct diags *from) {
        if (from->n == 0)
                return 0;
        struct diag *ni = realloc(to->items, (to->n + from->n) * sizeof *ni);
        if (!ni)
                return -ENOMEM;
        memcpy(ni + to->n, from->items, from->n * sizeof *ni);
        to->items = ni;
        to->n += from->n;
        to->alloc = to->n;
        free(from->items);
        *from = (struct diags) {};
        return 0;
}

size_t diags_errors(const struct diags *d, size_t from) {
        size_t n = 0;
        for (size_t i = from; i < d->n; i++)
                n += !d->items[i].warning;
        return n;
}

size_t diags_warnings(const struct diags *d, size_t from) {
        return from < d->n ? d->n - from - diags_errors(d, from) : 0;
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
                const char *w = x->warning ? "warning: " : "";
                if (x->file && x->line)
                        fprintf(f, "%s:%u:%u: %s%s\n", x->file, x->line, x->col, w, x->message);
                else if (x->file)
                        fprintf(f, "%s: %s%s\n", x->file, w, x->message);
                else
                        fprintf(f, "%s%s\n", w, x->message);
        }
}

void diags_clear(struct diags *d) {
        for (size_t i = 0; i < d->n; i++) {
                free(d->items[i].file);
                free(d->items[i].message);
                free(d->items[i].rule);
                free(d->items[i].disk);
        }
        free(d->items);
        *d = (struct diags) {};
}
