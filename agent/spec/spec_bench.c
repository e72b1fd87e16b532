/* bench: the dm-crypt benchmark gate (docs/spec.md "bench") and the one
 * place each luks gets its list of candidate ciphers. */
#include "spec_internal.h"

#include <ctype.h>

static const char *const on_fail_names[] = { [SPEC_ON_FAIL_ABORT] = "abort", [SPEC_ON_FAIL_WARN] = "warn", NULL };

/* The one place the benchmark's candidate list of each luks is decided:
 * bench.ciphers when the spec names some, else the luks's own cipher and key
 * size (the plan lists them, the benchmark measures them). */
void spec_set_bench_ciphers(struct ctx *c) {
        const struct spec_bench *b = &c->s->bench;
        for (size_t i = 0; c->error >= 0 && i < c->s->n_luks; i++) {
                struct spec_luks *x = &c->s->luks[i];
                if (b->ciphers && b->ciphers[0]) {
                        for (size_t k = 0; c->error >= 0 && b->ciphers[k]; k++)
                                if (strv_pushdup(&x->bench_ciphers, b->ciphers[k]) < 0)
                                        c->error = -ENOMEM;
                        continue;
                }
                char *own = strdupf("%s:%u", x->cipher, x->key_size);
                if (!own || strv_push(&x->bench_ciphers, own) < 0) {
                        free(own);
                        c->error = -ENOMEM;
                }
        }
}

void spec_parse_bench(struct ctx *c, const struct ynode *m, struct spec_bench *b) {
        static const char *const keys[] = { "ciphers", "tune", "require", "on_fail", NULL };
        static const char *const req_keys[] = { "cipher_mbps", "write_mbps", "read_mbps", "max_overhead", NULL };
        char f[256], t[QUOTE_MAX + 4];
        struct loc l = { "bench", "" }, lr = { "bench", "require." };
        b->present = true;
        b->mark = (struct spec_mark) { m->line, m->col };
        spec_check_keys(c, m, &l, keys);
        const struct ynode *v = spec_map_get(m, "ciphers");
        if (spec_get_strv(c, &l, "ciphers", v, false, &b->ciphers, NULL) > 0)
                for (size_t i = 0; b->ciphers[i]; i++) {
                        bool ok = strchr(b->ciphers[i], '-') != NULL;
                        for (const char *p = b->ciphers[i]; ok && *p; p++)
                                if (!islower((unsigned char) *p) && !isdigit((unsigned char) *p) && !strchr("-_,:", *p))
                                        ok = false;
                        if (!ok)
                                emitn(c, v->kind == YNODE_SEQ ? v->items[i] : v,
                                      "%s: '%s' does not look like 'aes-xts-plain64:512'", spec_field(&l, "ciphers", f),
                                      spec_quote(b->ciphers[i], t));
                }
        (void) spec_get_bool(c, &l, "tune", spec_map_get(m, "tune"), &b->tune);
        const struct ynode *r = spec_map_get(m, "require");
        if (spec_want_map(c, &l, "require", r) > 0) {
                spec_check_keys(c, r, &lr, req_keys);
                (void) spec_get_double(c, &lr, "cipher_mbps", spec_map_get(r, "cipher_mbps"), 0, 1e6, &b->cipher_mbps);
                (void) spec_get_double(c, &lr, "write_mbps", spec_map_get(r, "write_mbps"), 0, 1e6, &b->write_mbps);
                (void) spec_get_double(c, &lr, "read_mbps", spec_map_get(r, "read_mbps"), 0, 1e6, &b->read_mbps);
                (void) spec_get_double(c, &lr, "max_overhead", spec_map_get(r, "max_overhead"), 0, 1, &b->max_overhead);
        }
        int e;
        if (spec_get_enum(c, &l, "on_fail", spec_map_get(m, "on_fail"), on_fail_names, &e) > 0)
                b->on_fail = e;
}

void spec_free_bench(struct spec *s) {
        strv_free(s->bench.ciphers);
}
