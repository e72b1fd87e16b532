/* disks and partitions (docs/spec.md "disks", "partitions"): the disk rules
 * with their fallback criteria, the GPT partitions on them, and the checks
 * that look at both. */
#include "spec_internal.h"

#include "strbuf.h"

#include <ctype.h>

const char *const spec_disk_keys[] = {
        "id", "match", "count", "wipe",
        "path", "by_id", "serial", "wwn", "model", "transport", "min_size", "max_size", "rotational", "vendor", "size", NULL,
};

const char *const spec_partition_keys[] = { "id", "on", "size", "type", "name", NULL };

static const char *const disk_match_keys[] = {
        "path", "by_id", "serial", "wwn", "model", "transport", "min_size", "max_size", "rotational", "vendor", "size", NULL,
};

/* The criteria of a disk rule, from the keys written directly in its entry
 * (m, at l) and those under one 'match' mapping (match, at lm); either may
 * be NULL. A key given in both is an error. */
static void parse_disk_criteria(struct ctx *c, const struct ynode *m, const struct loc *l,
                                const struct ynode *match, const struct loc *lm, struct spec_disk *d) {
        char f[256], t[QUOTE_MAX + 4];
        const struct ynode *vals[ELEMENTSOF(disk_match_keys)] = {};
        const struct loc *locs[ELEMENTSOF(disk_match_keys)] = {};
        for (size_t i = 0; disk_match_keys[i]; i++) {
                const struct ynode *a = spec_map_get(m, disk_match_keys[i]), *b = spec_map_get(match, disk_match_keys[i]);
                if (a && b)
                        emitn(c, spec_map_key(m, disk_match_keys[i]), "%s is given both directly and under 'match'",
                              spec_field(l, disk_match_keys[i], f));
                vals[i] = b ?: a;
                locs[i] = b ? lm : l;
        }
        if (spec_get_str(c, locs[0], "path", vals[0], &d->path) > 0 && strncmp(d->path, "/dev/", 5) != 0)
                emitn(c, vals[0], "%s must start with '/dev/', not '%s'", spec_field(locs[0], "path", f), spec_quote(d->path, t));
        (void) spec_get_str(c, locs[1], "by_id", vals[1], &d->by_id);
        if (d->by_id && strchr(d->by_id, '/') && strncmp(d->by_id, "/dev/disk/by-id/", 16) != 0)
                emitn(c, vals[1], "%s must be a name under /dev/disk/by-id, not '%s'", spec_field(locs[1], "by_id", f), spec_quote(d->by_id, t));
        (void) spec_get_str(c, locs[2], "serial", vals[2], &d->serial);
        (void) spec_get_str(c, locs[3], "wwn", vals[3], &d->wwn);
        (void) spec_get_str(c, locs[4], "model", vals[4], &d->model);
        if (spec_get_str(c, locs[5], "transport", vals[5], &d->transport) > 0)
                for (char *p = d->transport; *p; p++)
                        *p = (char) tolower((unsigned char) *p);
        (void) spec_get_bytes(c, locs[6], "min_size", vals[6], &d->min_size);
        (void) spec_get_bytes(c, locs[7], "max_size", vals[7], &d->max_size);
        bool rot;
        if (spec_get_bool(c, locs[8], "rotational", vals[8], &rot) > 0)
                d->rotational = rot;
        (void) spec_get_str(c, locs[9], "vendor", vals[9], &d->vendor);
        static const char *const picks[] = { [SPEC_PICK_NONE] = "-", [SPEC_PICK_LARGEST] = "largest",
                                             [SPEC_PICK_SMALLEST] = "smallest", NULL };
        int pk;
        if (vals[10] && spec_want_scalar(c, locs[10], "size", vals[10], "largest or smallest") > 0) {
                if (streq(vals[10]->value, "largest") || streq(vals[10]->value, "smallest")) {
                        (void) spec_get_enum(c, locs[10], "size", vals[10], picks, &pk);
                        d->pick = pk;
                } else
                        emitn(c, vals[10], "%s must be 'largest' or 'smallest' (for a size bound use "
                              "'min_size' and 'max_size'), not '%s'", spec_field(locs[10], "size", f), spec_quote(vals[10]->value, t));
        }
        if (d->min_size && d->max_size && d->min_size > d->max_size && vals[7])
                emitn(c, vals[7], "%s is smaller than 'min_size'", spec_field(locs[7], "max_size", f));
}

/* Fill what an alternative leaves open from the criteria written directly
 * in the entry (from), so each alternative is a whole rule. */
static int disk_criteria_merge(struct spec_disk *to, const struct spec_disk *from) {
        char **fields[] = { &to->path, &to->by_id, &to->serial, &to->wwn, &to->model, &to->vendor, &to->transport };
        char *const vals[] = { from->path, from->by_id, from->serial, from->wwn, from->model, from->vendor, from->transport };
        for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                if (!*fields[i] && vals[i] && !(*fields[i] = strdup(vals[i])))
                        return -ENOMEM;
        if (!to->min_size)
                to->min_size = from->min_size;
        if (!to->max_size)
                to->max_size = from->max_size;
        if (to->rotational < 0)
                to->rotational = from->rotational;
        if (to->pick == SPEC_PICK_NONE)
                to->pick = from->pick;
        return 0;
}

/* Does the rule name a single disk (path, by_id, a serial that is no glob, wwn)? Which key, or NULL. */
static const char *disk_names_one(const struct spec_disk *d) {
        return d->path ? "path" : d->by_id ? "by_id" : d->serial && !spec_is_glob(d->serial) ? "serial" :
               d->wwn ? "wwn" : NULL;
}

/* match: a list of mappings: the fallbacks, in order. */
static void parse_disk_alts(struct ctx *c, const struct ynode *m, const struct ynode *match, const struct loc *l,
                            struct spec_disk *d) {
        char f[256], t[QUOTE_MAX + 8];
        if (match->n == 0) {
                emitn(c, match, "%s is an empty list (give one mapping of criteria, or a list of them to try in order)",
                      spec_field(l, "match", f));
                return;
        }
        if (match->n > SPEC_DISK_MAX_ALTS) {
                emitn(c, match, "%s lists %zu alternatives; at most %u are allowed", spec_field(l, "match", f), match->n,
                      SPEC_DISK_MAX_ALTS);
                return;
        }
        for (size_t k = 0; k < match->n; k++)
                if (match->items[k]->kind != YNODE_MAP) {
                        emitn(c, match->items[k], "alternative #%zu of %s must be a mapping of criteria, not %s", k + 1,
                              spec_field(l, "match", f), spec_describe(match->items[k], t));
                        return;
                }
        parse_disk_criteria(c, m, l, NULL, NULL, d);    /* the criteria common to every alternative */
        if (!(d->alts = calloc(match->n, sizeof *d->alts))) {
                c->error = -ENOMEM;
                return;
        }
        d->n_alts = match->n;
        for (size_t k = 0; k < match->n; k++) {
                const struct ynode *am = match->items[k];
                struct spec_disk *a = &d->alts[k];
                char prefix[48];
                (void) snprintf(prefix, sizeof prefix, "match[%zu].", k + 1);
                struct loc la = { l->where, prefix };
                *a = (struct spec_disk) { .rotational = -1, .count = d->count, .wipe = d->wipe,
                                          .mark = { am->line, am->col }, .match_mark = { am->line, am->col } };
                if (d->id && !(a->id = strdup(d->id))) {
                        c->error = -ENOMEM;
                        return;
                }
                spec_check_keys(c, am, &la, disk_match_keys);
                for (size_t i = 0; disk_match_keys[i]; i++)
                        if (spec_map_get(m, disk_match_keys[i]) && spec_map_get(am, disk_match_keys[i]))
                                emitn(c, spec_map_key(m, disk_match_keys[i]), "%s is given both directly and under "
                                      "alternative #%zu of 'match'", spec_field(l, disk_match_keys[i], f), k + 1);
                parse_disk_criteria(c, NULL, &la, am, &la, a);
                if (disk_criteria_merge(a, d) < 0) {
                        c->error = -ENOMEM;
                        return;
                }
                if (a->min_size && a->max_size && a->min_size > a->max_size &&
                    !(spec_map_get(am, "max_size") && spec_map_get(am, "min_size")) && !(spec_map_get(m, "max_size") && spec_map_get(m, "min_size")))
                        emitn(c, am, "alternative #%zu of %s has 'max_size' below 'min_size' (one given directly, "
                              "one in the alternative)", k + 1, spec_field(l, "match", f));
        }
}

void spec_parse_disk(struct ctx *c, const struct ynode *m, size_t idx, struct spec_disk *d) {
        char where[128], f[256];
        d->mark = (struct spec_mark) { m->line, m->col };
        d->match_mark = d->mark;
        d->rotational = -1;
        d->count = 1;
        spec_get_id(c, m, "disk", idx, &d->id, where);
        struct loc l = { where, "" }, lm = { where, "match." };
        spec_check_keys(c, m, &l, spec_disk_keys);

        if (spec_get_unsigned(c, &l, "count", spec_map_get(m, "count"), 1, 256, &d->count) < 0)
                d->count = 0;   /* unknown: nothing downstream counts its devices (no cascades) */
        (void) spec_get_bool(c, &l, "wipe", spec_map_get(m, "wipe"), &d->wipe);

        const struct ynode *match = spec_map_get(m, "match");
        if (match && match->kind == YNODE_SEQ) {
                d->match_mark = (struct spec_mark) { match->line, match->col };
                parse_disk_alts(c, m, match, &l, d);
        } else {
                if (match && match->kind != YNODE_MAP && !ynode_is_null(match)) {
                        char t[QUOTE_MAX + 8];
                        emitn(c, match, "%s must be a mapping of criteria or a list of them, not %s",
                              spec_field(&l, "match", f), spec_describe(match, t));
                        match = NULL;
                } else if (spec_want_map(c, &l, "match", match) > 0) {
                        spec_check_keys(c, match, &lm, disk_match_keys);
                        d->match_mark = (struct spec_mark) { match->line, match->col };
                } else
                        match = NULL;
                parse_disk_criteria(c, m, &l, match, &lm, d);
        }

        if (d->count > 1) {
                const char *one = disk_names_one(d);
                for (size_t k = 0; !one && k < d->n_alts; k++)
                        one = disk_names_one(&d->alts[k]);
                if (one)
                        emitn(c, spec_map_get(m, "count"), "%s must be 1 when '%s' names a single disk", spec_field(&l, "count", f), one);
        }
}

static const char *const part_types[] = {
        [SPEC_PART_LINUX] = "linux", [SPEC_PART_RAID] = "raid", [SPEC_PART_LVM] = "lvm",
        [SPEC_PART_BIOS_GRUB] = "bios_grub", [SPEC_PART_ESP] = "esp", [SPEC_PART_SWAP] = "swap", NULL,
};

void spec_parse_partition(struct ctx *c, const struct ynode *m, size_t idx, struct spec_partition *p) {
        char where[128], f[256], t[QUOTE_MAX + 4];
        p->mark = (struct spec_mark) { m->line, m->col };
        spec_get_id(c, m, "partition", idx, &p->id, where);
        struct loc l = { where, "" };
        spec_check_keys(c, m, &l, spec_partition_keys);
        (void) spec_get_ref(c, m, &l, where, "on", &p->on, &p->on_mark);
        const struct ynode *v;
        if (!(v = spec_map_get(m, "size")))
                spec_missing(c, m, where, "size");
        if (spec_get_size(c, &l, "size", v, false, &p->size) > 0 && p->size.kind == SPEC_SIZE_BYTES &&
            p->size.bytes < (1u << 20)) {
                char sz[32];
                emitn(c, v, "%s is %s; a partition is at least 1M (partitions are aligned to 1 MiB)",
                      spec_field(&l, "size", f), format_size(p->size.bytes, sz, sizeof sz));
        }
        int e;
        if (spec_get_enum(c, &l, "type", spec_map_get(m, "type"), part_types, &e) > 0)
                p->type = e;
        v = spec_map_get(m, "name");
        if (spec_get_str(c, &l, "name", v, &p->name) > 0 && strlen(p->name) > 36)
                emitn(c, v, "%s '%s' is longer than 36 characters", spec_field(&l, "name", f), spec_quote(p->name, t));
        if (!p->name && p->id && !(p->name = strdup(p->id)))
                c->error = -ENOMEM;
}

/* partitions: each on a disk, standing for as many devices as it; "rest" last;
 * percentages add up to at most 100 */
void spec_check_partitions(struct ctx *c) {
        struct spec *s = c->s;
        char where[128], t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        for (size_t i = 0; i < c->n_objs; i++)
                if (c->objs[i].kind == SPEC_OBJ_DISK)
                        c->objs[i].mult = ((const struct spec_disk *) c->objs[i].ptr)->count;
        for (size_t i = 0; i < s->n_partitions; i++) {
                struct spec_partition *p = &s->partitions[i];
                snprintf(where, sizeof where, "partition '%s'", p->id ? spec_quote(p->id, t) : "?");
                struct obj *d = spec_resolve(c, "on", where, p->on, p->on_mark, KIND_BIT(SPEC_OBJ_DISK));
                p->disk = d ? d->ptr : NULL;
                spec_consume(c, d, p, SPEC_OBJ_PARTITION, where, true, p->on_mark);
                struct obj *self = p->id ? spec_find_obj(c, p->id) : NULL;
                if (d && self && self->ptr == p)
                        self->mult = d->mult;
        }
        for (size_t i = 0; i < s->n_disks; i++) {
                const char *rest = NULL;
                unsigned pct = 0;
                bool over = false;
                for (size_t j = 0; j < s->n_partitions; j++) {
                        struct spec_partition *p = &s->partitions[j];
                        if (p->disk != &s->disks[i])
                                continue;
                        if (rest)
                                spec_emit(c, p->mark.line, p->mark.col, "partition '%s' follows 'rest' partition '%s' on disk '%s'",
                                          spec_quote(p->id ? p->id : "?", t), spec_quote(rest, t2), s->disks[i].id);
                        if (p->size.kind == SPEC_SIZE_REST)
                                rest = p->id ? p->id : "?";
                        if (p->size.kind == SPEC_SIZE_PERCENT) {
                                pct += p->size.percent;
                                if (pct > 100 && !over) {
                                        spec_emit(c, p->size.mark.line, p->size.mark.col,
                                                  "partitions on disk '%s' add up to more than 100%%", s->disks[i].id);
                                        over = true;
                                }
                        }
                }
        }
}

/* partition types say what a partition is for */
void spec_check_partition_types(struct ctx *c) {
        char t[QUOTE_MAX + 4];
        for (size_t i = 0; i < c->n_objs; i++) {
                const struct obj *o = &c->objs[i];
                if (o->kind != SPEC_OBJ_PARTITION || !o->used_by)
                        continue;
                const struct spec_partition *p = o->ptr;
                const char *want = NULL;
                if (p->type == SPEC_PART_RAID && o->user_kind != SPEC_OBJ_RAID)
                        want = "a raid";
                else if (p->type == SPEC_PART_LVM && o->user_kind != SPEC_OBJ_VG)
                        want = "a volume group";
                else if (p->type == SPEC_PART_BIOS_GRUB)
                        want = "the boot loader";
                if (want)
                        spec_emit(c, p->mark.line, p->mark.col, "partition '%s' of type '%s' cannot be used by %s (it is for %s)",
                                  spec_quote(o->id, t), part_types[p->type], o->used_by, want);
        }
}

void spec_free_disks(struct spec *s) {
        for (size_t i = 0; i < s->n_disks; i++) {
                struct spec_disk *d = &s->disks[i];
                free(d->id); free(d->path); free(d->by_id); free(d->serial);
                free(d->wwn); free(d->model); free(d->vendor); free(d->transport);
                for (size_t k = 0; k < d->n_alts; k++) {
                        struct spec_disk *a = &d->alts[k];
                        free(a->id); free(a->path); free(a->by_id); free(a->serial);
                        free(a->wwn); free(a->model); free(a->vendor); free(a->transport);
                }
                free(d->alts);
        }
        free(s->disks);
        for (size_t i = 0; i < s->n_partitions; i++) {
                free(s->partitions[i].id); free(s->partitions[i].on); free(s->partitions[i].name);
        }
        free(s->partitions);
}

bool spec_is_glob(const char *s) {
        return s && strpbrk(s, "*?[") != NULL;
}

DEFINE_STRING_TABLE_TO_STRING(spec_part_type_name, enum spec_part_type, part_types)
