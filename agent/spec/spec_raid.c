/* raid: md arrays (docs/spec.md "raid"): level, layout, metadata and members,
 * and the check that resolves and counts the members. */
#include "spec_internal.h"

#include <ctype.h>

const char *const spec_raid_keys[] = {
        "id", "name", "level", "layout", "chunk", "metadata", "bitmap", "members", "spares", "assume_clean", NULL,
};

static const char *const raid10_layouts[] = { "n2", "f2", "o2", "n3", "f3", "o3", NULL };

static const char *const raid5_layouts[] = {
        "left-symmetric", "right-symmetric", "left-asymmetric", "right-asymmetric", "parity-first", "parity-last", NULL,
};

static const char *const md_metadata[] = { "1.2", "1.1", "1.0", "0.90", NULL };

static const char *const md_bitmaps[] = { "internal", "none", NULL };

void spec_parse_raid(struct ctx *c, const struct ynode *m, size_t idx, struct spec_raid *a) {
        char where[128], f[256], t[QUOTE_MAX + 8];
        a->mark = (struct spec_mark) { m->line, m->col };
        spec_get_id(c, m, "raid", idx, &a->id, where);
        struct loc l = { where, "" };
        spec_check_keys(c, m, &l, spec_raid_keys);

        const struct ynode *v = spec_map_get(m, "level");
        bool level_ok = false;
        if (!v)
                spec_missing(c, m, where, "level");
        else if (spec_want_scalar(c, &l, "level", v, "a raid level") > 0) {
                a->level_mark = (struct spec_mark) { v->line, v->col };
                unsigned lv;
                if (v->plain && safe_atou(v->value, &lv) == 0 && (lv == 0 || lv == 1 || lv == 5 || lv == 6 || lv == 10)) {
                        a->level = lv;
                        level_ok = true;
                } else
                        emitn(c, v, "%s must be one of 0, 1, 5, 6, 10, not %s", spec_field(&l, "level", f), spec_describe(v, t));
        }

        v = spec_map_get(m, "layout");
        if (spec_get_str(c, &l, "layout", v, &a->layout) > 0) {
                a->layout_mark = (struct spec_mark) { v->line, v->col };
                bool r10 = strv_contains((char **) raid10_layouts, a->layout);
                bool r5 = strv_contains((char **) raid5_layouts, a->layout);
                if (!r10 && !r5) {
                        const char *sug = spec_suggest(a->layout, raid10_layouts) ?: spec_suggest(a->layout, raid5_layouts);
                        char hint[128] = "", t2[QUOTE_MAX + 4];
                        if (sug)
                                snprintf(hint, sizeof hint, " (did you mean '%s'?)", sug);
                        emitn(c, v, "%s must be one of n2, f2, o2, n3, f3, o3 (level 10) or left-symmetric, right-symmetric, left-asymmetric, right-asymmetric, parity-first, parity-last (level 5 and 6), not '%s'%s",
                              spec_field(&l, "layout", f), spec_quote(a->layout, t2), hint);
                } else if (level_ok && r10 && a->level != 10)
                        emitn(c, v, "layout '%s' of %s is only valid for level 10, not level %u", a->layout, where, a->level);
                else if (level_ok && r5 && a->level != 5 && a->level != 6)
                        emitn(c, v, "layout '%s' of %s is only valid for level 5 or 6, not level %u", a->layout, where, a->level);
        }

        v = spec_map_get(m, "chunk");
        if (spec_get_bytes(c, &l, "chunk", v, &a->chunk) > 0) {
                if (!spec_is_pow2(a->chunk) || a->chunk < 4096)
                        emitn(c, v, "%s must be a power of two of at least 4K, not %s", spec_field(&l, "chunk", f), spec_describe(v, t));
                else if (level_ok && a->level == 1)
                        emitn(c, v, "%s has no meaning for level 1", spec_field(&l, "chunk", f));
        }

        int e;
        if (spec_get_enum(c, &l, "metadata", spec_map_get(m, "metadata"), md_metadata, &e) > 0)
                a->metadata = strdup(md_metadata[e]);
        else
                a->metadata = strdup("1.2");
        if (!a->metadata)
                c->error = -ENOMEM;
        if (spec_get_enum(c, &l, "bitmap", spec_map_get(m, "bitmap"), md_bitmaps, &e) > 0 && !(a->bitmap = strdup(md_bitmaps[e])))
                c->error = -ENOMEM;

        v = spec_map_get(m, "members");
        if (!v)
                spec_missing(c, m, where, "members");
        else if (spec_get_strv(c, &l, "members", v, true, &a->members, &a->member_marks) > 0)
                a->members_mark = (struct spec_mark) { v->line, v->col };
        (void) spec_get_unsigned(c, &l, "spares", spec_map_get(m, "spares"), 0, 64, &a->spares);
        (void) spec_get_bool(c, &l, "assume_clean", spec_map_get(m, "assume_clean"), &a->assume_clean);
        if (level_ok && a->level == 0 && a->spares > 0)
                emitn(c, spec_map_get(m, "spares"), "%s of level 0 cannot have spares", where);

        v = spec_map_get(m, "name");
        if (spec_get_str(c, &l, "name", v, &a->name) > 0)
                spec_check_name(c, &l, "name", v, a->name, 32);
        if (!a->name && a->id && !(a->name = strdup(a->id)))
                c->error = -ENOMEM;
}

unsigned spec_raid10_copies(const char *layout) {
        size_t l = layout ? strlen(layout) : 0;
        if (l >= 2 && layout[l - 1] >= '2' && layout[l - 1] <= '9')
                return (unsigned) (layout[l - 1] - '0');
        return 2;
}

static unsigned raid_min_members(const struct spec_raid *a) {
        switch (a->level) {
        case 0: case 1: return 2;
        case 5: return 3;
        case 6: return 4;
        case 10: return spec_raid10_copies(a->layout);
        default: return 2;
        }
}

int spec_check_raids(struct ctx *c) {
        struct spec *s = c->s;
        char where[128], t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        /* raid members */
        for (size_t i = 0; i < s->n_raids; i++) {
                struct spec_raid *a = &s->raids[i];
                snprintf(where, sizeof where, "raid '%s'", a->id ? spec_quote(a->id, t) : "?");
                unsigned devices = 0;
                bool all = a->members != NULL;
                if (a->members && !(a->member_refs = calloc(strv_length(a->members), sizeof *a->member_refs))) {
                        c->error = -ENOMEM;
                        return -ENOMEM;
                }
                for (size_t j = 0; a->members && a->members[j]; j++) {
                        struct obj *o = spec_resolve(c, "members", where, a->members[j], a->member_marks[j],
                                                KIND_BIT(SPEC_OBJ_DISK) | KIND_BIT(SPEC_OBJ_PARTITION) |
                                                KIND_BIT(SPEC_OBJ_LUKS));
                        if (o)
                                a->member_refs[j] = (struct spec_ref) { o->kind, o->ptr };
                        if (!o) {
                                all = false;
                                continue;
                        }
                        spec_consume(c, o, a, SPEC_OBJ_RAID, where, false, a->member_marks[j]);
                        if (o->mult == 0)
                                all = false;    /* a disk rule whose count is wrong: reported there */
                        devices += o->mult;
                }
                if (all && a->level_mark.line && a->level <= 10) {
                        unsigned need = raid_min_members(a);
                        unsigned active = devices > a->spares ? devices - a->spares : 0;
                        if (active < need) {
                                char lay[64] = "";
                                if (a->level == 10)
                                        snprintf(lay, sizeof lay, " layout '%s'", a->layout ? spec_quote(a->layout, t2) : "n2");
                                char sp[64] = "";
                                if (a->spares)
                                        snprintf(sp, sizeof sp, " (%u devices, %u spares)", devices, a->spares);
                                spec_emit(c, a->members_mark.line, a->members_mark.col,
                                          "raid '%s' (level %u%s) needs at least %u active members, but has %u%s",
                                          a->id ? spec_quote(a->id, t) : "?", a->level, lay, need, active, sp);
                        }
                }
        }
        return 0;
}

void spec_free_raids(struct spec *s) {
        for (size_t i = 0; i < s->n_raids; i++) {
                struct spec_raid *a = &s->raids[i];
                free(a->id); free(a->name); free(a->layout); free(a->metadata); free(a->bitmap);
                strv_free(a->members); free(a->member_marks); free(a->member_refs);
        }
        free(s->raids);
}
