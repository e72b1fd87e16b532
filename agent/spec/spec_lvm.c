/* lvm and volumes (docs/spec.md "lvm", "volumes"): volume groups on their
 * pvs, logical volumes in them, and the checks that resolve both. */
#include "spec_internal.h"

const char *const spec_vg_keys[] = { "id", "name", "pvs", "extent_size", NULL };

const char *const spec_lv_keys[] = { "id", "vg", "name", "size", NULL };

void spec_parse_vg(struct ctx *c, const struct ynode *m, size_t idx, struct spec_vg *g) {
        char where[128], f[256], t[QUOTE_MAX + 8];
        g->mark = (struct spec_mark) { m->line, m->col };
        spec_get_id(c, m, "volume group", idx, &g->id, where);
        struct loc l = { where, "" };
        spec_check_keys(c, m, &l, spec_vg_keys);
        const struct ynode *v = spec_map_get(m, "pvs");
        if (!v)
                spec_missing(c, m, where, "pvs");
        else if (spec_get_strv(c, &l, "pvs", v, true, &g->pvs, &g->pv_marks) > 0)
                g->pvs_mark = (struct spec_mark) { v->line, v->col };
        v = spec_map_get(m, "extent_size");
        if (spec_get_bytes(c, &l, "extent_size", v, &g->extent_size) > 0 && (!spec_is_pow2(g->extent_size) || g->extent_size < 4096))
                emitn(c, v, "%s must be a power of two of at least 4K, not %s", spec_field(&l, "extent_size", f), spec_describe(v, t));
        v = spec_map_get(m, "name");
        if (spec_get_str(c, &l, "name", v, &g->name) > 0)
                spec_check_name(c, &l, "name", v, g->name, 127);
        if (!g->name && g->id && !(g->name = strdup(g->id)))
                c->error = -ENOMEM;
}

void spec_parse_lv(struct ctx *c, const struct ynode *m, size_t idx, struct spec_lv *lv) {
        char where[128];
        lv->mark = (struct spec_mark) { m->line, m->col };
        spec_get_id(c, m, "volume", idx, &lv->id, where);
        struct loc l = { where, "" };
        spec_check_keys(c, m, &l, spec_lv_keys);
        (void) spec_get_ref(c, m, &l, where, "vg", &lv->vg, &lv->vg_mark);
        const struct ynode *v;
        if (!(v = spec_map_get(m, "size")))
                spec_missing(c, m, where, "size");
        (void) spec_get_size(c, &l, "size", v, true, &lv->size);
        v = spec_map_get(m, "name");
        if (spec_get_str(c, &l, "name", v, &lv->name) > 0)
                spec_check_name(c, &l, "name", v, lv->name, 127);
        if (!lv->name && lv->id && !(lv->name = strdup(lv->id)))
                c->error = -ENOMEM;
}

/* volume groups on their pvs, volumes in their volume group; a volume
 * that takes all free space comes last */
int spec_check_lvm(struct ctx *c) {
        struct spec *s = c->s;
        char where[128], t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        for (size_t i = 0; i < s->n_vgs; i++) {
                struct spec_vg *g = &s->vgs[i];
                snprintf(where, sizeof where, "volume group '%s'", g->id ? spec_quote(g->id, t) : "?");
                if (g->pvs && !(g->pv_refs = calloc(strv_length(g->pvs), sizeof *g->pv_refs))) {
                        c->error = -ENOMEM;
                        return -ENOMEM;
                }
                for (size_t j = 0; g->pvs && g->pvs[j]; j++) {
                        struct obj *o = spec_resolve(c, "pvs", where, g->pvs[j], g->pv_marks[j], BLOCK_KINDS & ~KIND_BIT(SPEC_OBJ_LV));
                        if (o)
                                g->pv_refs[j] = (struct spec_ref) { o->kind, o->ptr };
                        spec_consume(c, o, g, SPEC_OBJ_VG, where, false, g->pv_marks[j]);
                }
        }
        for (size_t i = 0; i < s->n_lvs; i++) {
                struct spec_lv *lv = &s->lvs[i];
                snprintf(where, sizeof where, "volume '%s'", lv->id ? spec_quote(lv->id, t) : "?");
                struct obj *o = spec_resolve(c, "vg", where, lv->vg, lv->vg_mark, KIND_BIT(SPEC_OBJ_VG));
                lv->vg_obj = o ? o->ptr : NULL;
        }
        for (size_t i = 0; i < s->n_vgs; i++) {
                const char *all = NULL;
                for (size_t j = 0; j < s->n_lvs; j++) {
                        struct spec_lv *lv = &s->lvs[j];
                        if (lv->vg_obj != &s->vgs[i])
                                continue;
                        if (all)
                                spec_emit(c, lv->mark.line, lv->mark.col,
                                          "volume '%s' follows volume '%s', which takes all free space of volume group '%s'",
                                          spec_quote(lv->id ? lv->id : "?", t), spec_quote(all, t2), s->vgs[i].id);
                        if (lv->size.kind == SPEC_SIZE_REST)
                                all = lv->id ? lv->id : "?";
                }
        }
        return 0;
}

void spec_free_lvm(struct spec *s) {
        for (size_t i = 0; i < s->n_vgs; i++) {
                free(s->vgs[i].id); free(s->vgs[i].name); strv_free(s->vgs[i].pvs); free(s->vgs[i].pv_marks); free(s->vgs[i].pv_refs);
        }
        free(s->vgs);
        for (size_t i = 0; i < s->n_lvs; i++) {
                free(s->lvs[i].id); free(s->lvs[i].vg); free(s->lvs[i].name);
        }
        free(s->lvs);
}
