/* The planner: spec + inventory -> ordered steps, or refusals. Pure: it
 * reads the two structures and writes nothing but the plan it returns.
 *
 * Phases: select disks (every rule against every inventory disk, count,
 * ambiguity, signatures, in use), lay out the partitions of each selected
 * disk, then walk the remaining objects (md, LUKS, VG, LV) depth first along
 * their references so that any stacking order works, then filesystems,
 * mounts (shallowest first), image, configure, register, finish. */
#include "plan.h"
#include "json.h"
#include "netconf.h"
#include "paths.h"
#include "url.h"
#include <fnmatch.h>
#include <openssl/evp.h>
#include <inttypes.h>
#include <strings.h>

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define ALIGN MiB
#define LUKS2_DEFAULT_HEADER (16 * MiB)
#define LVM_PV_METADATA MiB
#define LVM_DEFAULT_EXTENT (4 * MiB)
#define GPT_ENTRIES_BYTES 16384u        /* 128 entries of 128 bytes */

struct node {
        enum spec_obj_kind kind;
        const char *id;
        const void *obj;
        struct spec_mark mark;
        char **devs;            /* predicted device paths; NULL for a VG */
        size_t n_devs;
        uint64_t size;          /* estimated bytes per device (the smallest); 0 = unknown */
        uint64_t size_max;      /* certain upper bound */
        bool approx;
        int state;              /* 0 new, 1 being visited, 2 emitted */
        char *vg_path;          /* VG: /dev/NAME */
};

struct builder {
        const struct spec *spec;
        const struct inventory *inv;
        struct diags *diags;
        struct plan *plan;
        size_t steps_alloc;
        struct node *nodes;
        size_t n_nodes;
        const struct inv_disk **sorted;  /* inventory disks by path */
        size_t n_sorted;
        struct plan_findings f;
        bool allow_signatures;  /* PLAN_ALLOW_SIGNATURES */
        bool disk_rules_only;   /* PLAN_DISK_RULES_ONLY */
        size_t bench_step;      /* the number (1-based) of the last bench-raw step, 0 = none: it tunes */
        const struct spec_luks *bench_luks;     /* the LUKS volume of that step (all its copies) */
};

static const char *const kind_names[_PLAN_STEP_KIND_MAX] = {
        [PLAN_WIPE] = "wipe",
        [PLAN_PARTITION] = "partition",
        [PLAN_MD_CREATE] = "md-create",
        [PLAN_LUKS_FORMAT] = "luks-format",
        [PLAN_LUKS_OPEN] = "luks-open",
        [PLAN_PVCREATE] = "pvcreate",
        [PLAN_VGCREATE] = "vgcreate",
        [PLAN_LVCREATE] = "lvcreate",
        [PLAN_MKFS] = "mkfs",
        [PLAN_MOUNT] = "mount",
        [PLAN_BENCH_RAW] = "bench-raw",
        [PLAN_BENCH_CRYPT] = "bench-crypt",
        [PLAN_IMAGE] = "image",
        [PLAN_CONFIGURE] = "configure",
        [PLAN_NETWORK] = "network",
        [PLAN_LUKS_BIND] = "luks-bind",
        [PLAN_BOOTLOADER] = "boot-loader",
        [PLAN_REGISTER] = "register",
        [PLAN_FINISH] = "finish",
        [PLAN_MD_ASSEMBLE] = "assemble",
        [PLAN_VG_ACTIVATE] = "activate",
        [PLAN_SKIP_STAGE] = "skip-stage",
        [PLAN_RESUME_CHECK] = "resume-check",
};

const char *plan_step_kind_name(enum plan_step_kind k) {
        return (unsigned) k < _PLAN_STEP_KIND_MAX ? kind_names[k] : NULL;
}

/* Exact: the largest binary unit that divides the value ("2049 MiB", not "2.0 GiB"). */
bool plan_step_is_storage(enum plan_step_kind k) {
        switch (k) {
        case PLAN_PARTITION: case PLAN_MD_CREATE: case PLAN_LUKS_FORMAT: case PLAN_LUKS_OPEN:
        case PLAN_PVCREATE: case PLAN_VGCREATE: case PLAN_LVCREATE: case PLAN_MKFS: case PLAN_MOUNT:
        case PLAN_BENCH_RAW: case PLAN_BENCH_CRYPT:
                return true;
        default:
                return false;
        }
}

static const char *size_exact(uint64_t bytes, char *buf, size_t len) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        size_t u = 0;
        while (bytes && bytes % 1024 == 0 && u + 1 < ELEMENTSOF(units)) {
                bytes /= 1024;
                u++;
        }
        snprintf(buf, len, "%" PRIu64 " %s", bytes, units[u]);
        return buf;
}
#define SIZE(b) size_exact((b), (char[32]) {}, 32)
#define APPROX(b) format_size((b), (char[32]) {}, 32)

static uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }
static uint64_t align_up(uint64_t v, uint64_t a) { return v > UINT64_MAX - (a - 1) ? align_down(v, a) : (v + a - 1) / a * a; }

int plan_finding(struct plan_findings *f, bool refusal, struct spec_mark m, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = diags_addv(f->diags, f->file, m.line, m.col, fmt, ap);
        va_end(ap);
        if (r < 0)
                return r;
        if (refusal)
                f->refused++;
        else
                f->invalid++;
        return 0;
}
int plan_findings_result(const struct plan_findings *f) {
        return f->invalid ? -EINVAL : f->refused ? -EPERM : 0;
}

/* A finding at a spec position: refusal (-EPERM) or invalid input (-EINVAL). */
#define finding(b, refusal, m, ...) plan_finding(&(b)->f, (refusal), (m), __VA_ARGS__)
/* A warning at a spec position: the plan stands (kiln plan --strict refuses it). */
static int warning(struct builder *b, struct spec_mark m, const char *fmt, ...) _printf_(3, 4);
static int warning(struct builder *b, struct spec_mark m, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = diags_warnv(b->diags, b->spec->file, m.line, m.col, fmt, ap);
        va_end(ap);
        return r;
}
#define refuse(b, m, ...) finding((b), true, (m), __VA_ARGS__)
#define invalid(b, m, ...) finding((b), false, (m), __VA_ARGS__)
/* A refusal about a disk rule and (when it is one) a disk, named in the JSON refusal too. */
#define refuse_disk(b, m, rule, disk, ...) \
        (finding((b), true, (m), __VA_ARGS__) ?: diags_set_subject((b)->diags, (rule), (disk)))

static int add_list(struct strbuf *sb, char **v, size_t from, size_t to);

/* --- steps ---------------------------------------------------------------- */

static struct plan_step *step_add(struct builder *b, enum plan_step_kind kind, const char *id, const void *obj, unsigned index) {
        struct plan *p = b->plan;
        if (p->n_steps == b->steps_alloc) {
                size_t na = b->steps_alloc ? b->steps_alloc * 2 : 32;
                struct plan_step *ns = realloc(p->steps, na * sizeof *ns);
                if (!ns)
                        return NULL;
                p->steps = ns;
                b->steps_alloc = na;
        }
        struct plan_step *s = &p->steps[p->n_steps++];
        *s = (struct plan_step) { .kind = kind, .id = id, .obj = obj, .index = index };
        return s;
}

/* Sets device (copied), description and destroys (taken, may be NULL). */
static int step_text(struct plan_step *s, const char *device, char *description, char *destroys) {
        s->description = description;
        s->destroys = destroys;
        if (!description)
                return -ENOMEM;
        if (device && !(s->device = strdup(device)))
                return -ENOMEM;
        return 0;
}

/* The shape of most steps: one input device (or none), a size, a device and
 * the texts (taken, as by step_text, also on failure). */
static int step_emit(struct builder *b, enum plan_step_kind kind, const char *id, const void *obj, unsigned index,
                     const char *input, uint64_t size, bool approx, const char *device, char *description,
                     char *destroys) {
        struct plan_step *st = step_add(b, kind, id, obj, index);
        if (!st) {
                free(description);
                free(destroys);
                return -ENOMEM;
        }
        st->size = size;
        st->size_approx = approx;
        int r = step_text(st, device, description, destroys);
        if (r >= 0 && input)
                r = strv_pushdup(&st->inputs, input);
        return r;
}

enum plan_step_kind plan_step_made(const struct plan_step *s) {
        if (s->kind == PLAN_SKIP_STAGE)
                return s->skipped;
        return s->kind == PLAN_MD_ASSEMBLE ? PLAN_MD_CREATE : s->kind;
}

static void step_clear(struct plan_step *s) {
        free(s->device);
        strv_free(s->inputs);
        free(s->description);
        free(s->destroys);
        for (size_t i = 0; i < s->n_parts; i++)
                free(s->parts[i].device);
        free(s->parts);
        free(s->uuid);
        enum plan_step_kind made = plan_step_made(s);   /* a skipped step holds its payload */
        if (made == PLAN_LUKS_FORMAT || made == PLAN_LUKS_OPEN) {
                free(s->luks.name);
                free(s->luks.crypttab_options);
        }
        if (made == PLAN_MKFS)
                free(s->fs.swap_name);
        if (made == PLAN_MKFS || made == PLAN_MOUNT) {
                free(s->fs.fstab_options);
                free(s->fs.crypttab_options);
        }
        if (s->kind == PLAN_VG_ACTIVATE)
                strv_free(s->vg.lv_nodes);
}

static int dup_in_place(char **p) {
        if (*p && !(*p = strdup(*p)))
                return -ENOMEM;
        return 0;
}

int plan_luks_copy(struct plan_luks *dst, const struct plan_luks *src) {
        *dst = *src;
        dst->crypttab_options = NULL;
        if (dup_in_place(&dst->name) < 0)
                return -ENOMEM;
        dst->crypttab_options = src->crypttab_options;
        return dup_in_place(&dst->crypttab_options);
}

int plan_fs_copy(struct plan_fs *dst, const struct plan_fs *src) {
        *dst = *src;
        dst->fstab_options = dst->crypttab_options = NULL;
        if (dup_in_place(&dst->swap_name) < 0)
                return -ENOMEM;
        dst->fstab_options = src->fstab_options;
        if (dup_in_place(&dst->fstab_options) < 0)
                return -ENOMEM;
        dst->crypttab_options = src->crypttab_options;
        return dup_in_place(&dst->crypttab_options);
}

struct plan *plan_free(struct plan *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_steps; i++)
                step_clear(&p->steps[i]);
        free(p->steps);
        free(p->disks);
        free(p->hostname);
        free(p->mode_why);
        plan_misses_free(p->misses, p->n_misses);
        netconf_free(p->net);
        free(p);
        return NULL;
}

void plan_misses_free(struct plan_miss *m, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(m[i].reason);
                free(m[i].rule);
        }
        free(m);
}

int plan_copy_misses(struct plan *to, const struct plan *from) {
        if (from->n_misses == 0)
                return 0;
        struct plan_miss *m = calloc(from->n_misses, sizeof *m);
        if (!m)
                return -ENOMEM;
        for (size_t i = 0; i < from->n_misses; i++) {
                m[i].layout = from->misses[i].layout;
                if (!(m[i].reason = strdup(from->misses[i].reason)) ||
                    (from->misses[i].rule && !(m[i].rule = strdup(from->misses[i].rule)))) {
                        plan_misses_free(m, i + 1);
                        return -ENOMEM;
                }
        }
        plan_misses_free(to->misses, to->n_misses);
        to->misses = m;
        to->n_misses = from->n_misses;
        return 0;
}

int plan_choose_layout(const struct spec *spec, const struct inventory *inv, const struct spec **ret,
                       struct plan_miss **ret_misses, size_t *ret_n_misses, struct diags *diags) {
        struct plan_miss *m = NULL;
        size_t n = 0;
        int r = 0;
        if (spec->n_layouts == 0) {
                *ret = spec;
                *ret_misses = NULL;
                *ret_n_misses = 0;
                return 0;
        }
        for (size_t i = 0; i < spec->n_layouts; i++) {
                const struct spec *l = spec->layouts[i];
                _cleanup_(diags_clear) struct diags d = {};
                struct plan *none = NULL;
                r = plan_build_full(l, inv, PLAN_DISK_RULES_ONLY, &none, &d);
                plan_free(none);
                if (r == 0) {
                        *ret = l;
                        *ret_misses = m;
                        *ret_n_misses = n;
                        return 0;
                }
                if (r != -EPERM && r != -EINVAL)
                        break;
                for (size_t k = 0; k < d.n; k++) {
                        if (d.items[k].warning)
                                continue;
                        struct plan_miss *nm = realloc(m, (n + 1) * sizeof *nm);
                        if (!nm) {
                                r = -ENOMEM;
                                goto out_free;
                        }
                        m = nm;
                        m[n] = (struct plan_miss) { .layout = l->layout };
                        n++;
                        if (!(m[n - 1].reason = strdup(d.items[k].message)) ||
                            (d.items[k].rule && !(m[n - 1].rule = strdup(d.items[k].rule)))) {
                                r = -ENOMEM;
                                goto out_free;
                        }
                }
                r = -EPERM;
        }
        if (r == -EPERM)
                for (size_t i = 0; i < n && r == -EPERM; i++) {
                        const struct spec_disk *rule = NULL;
                        const struct spec *l = NULL;
                        for (size_t k = 0; k < spec->n_layouts; k++)
                                if (spec->layouts[k]->layout == m[i].layout)
                                        l = spec->layouts[k];
                        if (l && m[i].rule && spec_lookup(l, m[i].rule, (const void **) &rule) == SPEC_OBJ_DISK) {
                                struct spec_mark at = rule->match_mark.line ? rule->match_mark : rule->mark;
                                if (diags_add(diags, spec->file, at.line, at.col, "layout '%s' does not fit: %s",
                                              m[i].layout, m[i].reason) < 0 ||
                                    diags_set_subject(diags, m[i].rule, NULL) < 0)
                                        r = -ENOMEM;
                        } else if (diags_add(diags, spec->file, l ? l->layout_mark.line : 0, l ? l->layout_mark.col : 0,
                                             "layout '%s' does not fit: %s", m[i].layout, m[i].reason) < 0)
                                r = -ENOMEM;
                }
        if (r == -EPERM && diags_add(diags, spec->file, 0, 0, "this machine fits none of the spec's %zu layouts; nothing was written",
                                     spec->n_layouts) < 0)
                r = -ENOMEM;
        if (r == -EPERM) {      /* every layout's reasons, for the enlist post too */
                *ret = NULL;
                *ret_misses = m;
                *ret_n_misses = n;
                return r;
        }
out_free:
        plan_misses_free(m, n);
        return r;
}

/* --- disk selection ------------------------------------------------------- */

static const char *strip_by_id(const char *s) {
        static const char prefix[] = "/dev/disk/by-id/";
        return strncmp(s, prefix, sizeof prefix - 1) == 0 ? s + sizeof prefix - 1 : s;
}

static const char *strip_wwn(const char *s) {
        if (strncasecmp(s, "0x", 2) == 0 || strncasecmp(s, "naa.", 4) == 0 || strncasecmp(s, "eui.", 4) == 0)
                return s + (s[1] == 'x' || s[1] == 'X' ? 2 : 4);
        return s;
}

static bool disk_has_by_id(const struct inv_disk *d, const char *name) {
        name = strip_by_id(name);
        for (size_t i = 0; d->by_id && d->by_id[i]; i++)
                if (streq(strip_by_id(d->by_id[i]), name))
                        return true;
        return false;
}

/* 1 if the rule selects the disk; 0 with the first reason why not in *why.
 * A USB disk (a stick left in a port, a backup drive) is never taken by a
 * rule that does not say `transport: usb`, whatever else matches: its name
 * (/dev/sda on a box whose SATA disks come later) and size say nothing. */
static int disk_match(const struct spec_disk *r, const struct inv_disk *d, struct strbuf *why) {
        if (d->transport && strcasecmp(d->transport, "usb") == 0 && !(r->transport && strcasecmp(r->transport, "usb") == 0))
                return strbuf_addf(why, "is a USB disk, which a rule takes only with 'transport: usb'") < 0 ? -ENOMEM : 0;
        if (r->path && !(d->path && streq(r->path, d->path)) && !disk_has_by_id(d, r->path))
                return strbuf_addf(why, "path is not %s", r->path) < 0 ? -ENOMEM : 0;
        if (r->by_id && !disk_has_by_id(d, r->by_id))
                return strbuf_addf(why, "has no /dev/disk/by-id/%s", strip_by_id(r->by_id)) < 0 ? -ENOMEM : 0;
        if (r->vendor && !(d->vendor && fnmatch(r->vendor, d->vendor, 0) == 0))
                return strbuf_addf(why, "vendor '%s' does not match '%s'", strempty(d->vendor) ? "" : d->vendor, r->vendor) < 0 ? -ENOMEM : 0;
        if (r->serial && spec_is_glob(r->serial) && !(d->serial && fnmatch(r->serial, d->serial, 0) == 0))
                return strbuf_addf(why, "serial '%s' does not match '%s'", strempty(d->serial) ? "" : d->serial, r->serial) < 0 ? -ENOMEM : 0;
        if (r->serial && !spec_is_glob(r->serial) && !(d->serial && streq(r->serial, d->serial)))
                return strbuf_addf(why, "serial is '%s', not '%s'", strempty(d->serial) ? "" : d->serial, r->serial) < 0 ? -ENOMEM : 0;
        if (r->wwn && !(d->wwn && strcasecmp(strip_wwn(r->wwn), strip_wwn(d->wwn)) == 0))
                return strbuf_addf(why, "wwn is '%s', not '%s'", strempty(d->wwn) ? "" : d->wwn, r->wwn) < 0 ? -ENOMEM : 0;
        if (r->model && !(d->model && fnmatch(r->model, d->model, 0) == 0))
                return strbuf_addf(why, "model '%s' does not match '%s'", strempty(d->model) ? "" : d->model, r->model) < 0 ? -ENOMEM : 0;
        if (r->transport && !(d->transport && strcasecmp(r->transport, d->transport) == 0))
                return strbuf_addf(why, "transport is '%s', not '%s'", strempty(d->transport) ? "" : d->transport, r->transport) < 0 ? -ENOMEM : 0;
        if (r->min_size && d->size < r->min_size)
                return strbuf_addf(why, "size %s is below min_size %s", APPROX(d->size), SIZE(r->min_size)) < 0 ? -ENOMEM : 0;
        if (r->max_size && d->size > r->max_size)
                return strbuf_addf(why, "size %s is above max_size %s", APPROX(d->size), SIZE(r->max_size)) < 0 ? -ENOMEM : 0;
        if (r->rotational >= 0 && (int) d->rotational != r->rotational)
                return strbuf_addf(why, "is %s, rule wants %s", d->rotational ? "rotational" : "not rotational",
                                   r->rotational ? "rotational" : "not rotational") < 0 ? -ENOMEM : 0;
        return 1;
}

static const char *disk_path(const struct inv_disk *d) {
        return d->path ? d->path : d->name ? d->name : "?";
}

static int cmp_disk_path(const void *a, const void *b) {
        return strcmp(disk_path(*(const struct inv_disk *const *) a), disk_path(*(const struct inv_disk *const *) b));
}

static int add_sig(struct strbuf *sb, const struct inv_signature *s, const char *on) {
        int r = strbuf_addf(sb, "%s%s", sb->len ? ", " : "", s->type ? s->type : "unknown");
        if (r >= 0 && !strempty(s->label))
                r = strbuf_addf(sb, " '%s'", s->label);
        if (r >= 0 && on)
                r = strbuf_addf(sb, " on %s", on);
        if (r >= 0)
                r = strbuf_addf(sb, " at offset %" PRIu64, s->offset);
        return r;
}

/* "gpt at offset 512, linux_raid_member on /dev/vda2 at offset 4096"; empty if none. */
static int describe_signatures(const struct inv_disk *d, struct strbuf *sb) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < d->n_sigs; i++)
                r = add_sig(sb, &d->sigs[i], NULL);
        for (size_t p = 0; r >= 0 && p < d->n_parts; p++)
                for (size_t i = 0; r >= 0 && i < d->parts[p].n_sigs; i++)
                        r = add_sig(sb, &d->parts[p].sigs[i], d->parts[p].path ? d->parts[p].path : d->parts[p].name);
        return r;
}

/* "/dev/vda1 on /boot" for every mounted piece; empty if none. */
static int describe_mounts(const struct inv_disk *d, struct strbuf *sb) {
        int r = 0;
        if (d->mountpoint)
                r = strbuf_addf(sb, "%s on %s", disk_path(d), d->mountpoint);
        for (size_t p = 0; r >= 0 && p < d->n_parts; p++)
                if (d->parts[p].mountpoint)
                        r = strbuf_addf(sb, "%s%s on %s", sb->len ? ", " : "",
                                        d->parts[p].path ? d->parts[p].path : d->parts[p].name, d->parts[p].mountpoint);
        return r;
}

static int check_selected_disk(struct builder *b, const struct spec_disk *rule, const struct inv_disk *d) {
        if (!inv_disk_in_use(d) && !d->readonly)
                return 0;
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = describe_mounts(d, &sb);
        if (r < 0)
                return r;
        if (sb.len)
                return refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk rule '%s' selects %s, which is mounted (%s); kiln never touches a mounted disk",
                              rule->id, disk_path(d), strbuf_str(&sb));
        if (d->unreadable)
                return refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk rule '%s' selects %s, which could not be read: its signatures are unknown, so kiln will not touch it",
                              rule->id, disk_path(d));
        if (d->readonly)
                return refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk rule '%s' selects %s, which is read-only", rule->id, disk_path(d));

        _cleanup_strv_free_ char **holders = NULL;
        r = inv_disk_holders(d, &holders);
        if (r < 0)
                return r;
        if (holders && !rule->wipe) {
                strbuf_reset(&sb);
                for (size_t i = 0; holders[i]; i++)
                        if ((r = strbuf_addf(&sb, "%s%s", i ? ", " : "", holders[i])) < 0)
                                return r;
                return refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk rule '%s' selects %s, which is in use by %s; set 'wipe: true' to stop %s and wipe the disk",
                              rule->id, disk_path(d), strbuf_str(&sb), holders[1] ? "them" : "it");
        }
        if (inv_disk_has_signatures(d) && !rule->wipe && !b->allow_signatures) {
                strbuf_reset(&sb);
                if ((r = describe_signatures(d, &sb)) < 0)
                        return r;
                return refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk rule '%s' selects %s, which holds signatures (%s); set 'wipe: true' to destroy them",
                              rule->id, disk_path(d), strbuf_str(&sb));
        }
        return 0;
}

/* Disks that repeat a serial cannot be told apart by it: naming one by serial
 * would pick whichever the kernel lists first. */
static int refuse_serial_twins(struct builder *b, const struct spec_disk *rule) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        size_t n = inventory_count_serial(b->inv, rule->serial), k = 0;
        int r = 0;
        for (size_t j = 0; r >= 0 && j < b->n_sorted; j++)
                if (b->sorted[j]->serial && streq(b->sorted[j]->serial, rule->serial))
                        r = strbuf_addf(&sb, "%s%s", k++ == 0 ? "" : k == n ? " and " : ", ", disk_path(b->sorted[j]));
        if (r < 0)
                return r;
        return refuse_disk(b, rule->match_mark.line ? rule->match_mark : rule->mark, rule->id, NULL,
                      "disk rule '%s' selects serial '%s', which %zu disks report (%s); a serial that is not unique "
                      "cannot select a disk: use path, by_id or wwn", rule->id, rule->serial, n, strbuf_str(&sb));
}

/* size: largest | smallest: of the disks the other criteria match, the
 * rule keeps its count of the largest (smallest); the rest are reasons. A
 * tie across the boundary is refused: which of two equal disks would be
 * taken is not the operator's choice then. 1 when refused. */
static int pick_by_size(struct builder *b, const struct spec_disk *rule, unsigned want, bool *hit, struct strbuf *reasons) {
        size_t n = 0;
        for (size_t j = 0; j < b->n_sorted; j++)
                n += hit[j];
        if (n <= want)
                return 0;       /* too few or just enough: the count rule speaks */
        bool largest = rule->pick == SPEC_PICK_LARGEST;
        /* the size of the want-th disk in that order */
        _cleanup_free_ uint64_t *sizes = calloc(n, sizeof *sizes);
        if (!sizes)
                return -ENOMEM;
        size_t k = 0;
        for (size_t j = 0; j < b->n_sorted; j++)
                if (hit[j])
                        sizes[k++] = b->sorted[j]->size;
        for (size_t x = 1; x < n; x++)  /* insertion sort, in the rule's order */
                for (size_t y = x; y > 0 && (largest ? sizes[y] > sizes[y - 1] : sizes[y] < sizes[y - 1]); y--) {
                        uint64_t t = sizes[y];
                        sizes[y] = sizes[y - 1];
                        sizes[y - 1] = t;
                }
        uint64_t edge = sizes[want - 1];
        if (sizes[want] == edge) {
                _cleanup_strbuf_ struct strbuf tied = STRBUF_INIT;
                for (size_t j = 0; j < b->n_sorted; j++)
                        if (hit[j] && b->sorted[j]->size == edge &&
                            strbuf_addf(&tied, "%s%s", tied.len ? ", " : "", disk_path(b->sorted[j])) < 0)
                                return -ENOMEM;
                int r = refuse_disk(b, rule->match_mark.line ? rule->match_mark : rule->mark, rule->id, NULL,
                                    "disk rule '%s' takes the %u %s of %zu disks, but %s are the same size (%s); "
                                    "add a criterion that tells them apart", rule->id, want,
                                    largest ? "largest" : "smallest", n, strbuf_str(&tied), APPROX(edge));
                return r < 0 ? r : 1;
        }
        for (size_t j = 0; j < b->n_sorted; j++) {
                const struct inv_disk *d = b->sorted[j];
                if (hit[j] && (largest ? d->size < edge : d->size > edge)) {
                        hit[j] = false;
                        if (strbuf_addf(reasons, "; %s is not among the %u %s", disk_path(d), want,
                                        largest ? "largest" : "smallest") < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* One set of criteria (the rule, or one of its match alternatives) against
 * every disk: hit[j] for the disks it selects, the reasons of the others
 * in reasons. 1 when refused (a serial that several disks report, a tie at
 * a size boundary): the refusal is reported. */
static int match_criteria(struct builder *b, const struct spec_disk *crit, unsigned want, bool *hit, struct strbuf *reasons) {
        int r;
        if (crit->serial && !spec_is_glob(crit->serial) && inventory_count_serial(b->inv, crit->serial) > 1) {
                r = refuse_serial_twins(b, crit);
                return r < 0 ? r : 1;
        }
        for (size_t j = 0; j < b->n_sorted; j++) {
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                r = disk_match(crit, b->sorted[j], &why);
                if (r < 0)
                        return r;
                if (r > 0)
                        hit[j] = true;
                else if ((r = strbuf_addf(reasons, "; %s %s", disk_path(b->sorted[j]), strbuf_str(&why))) < 0)
                        return r;
        }
        if (crit->pick != SPEC_PICK_NONE)
                return pick_by_size(b, crit, want, hit, reasons);
        return 0;
}

/* A disk the plan takes whose serial another disk repeats: the inventory's
 * warning again, at the rule that takes it, once per rule and serial (the
 * operator reads the plan, not the inventory). */
static int warn_serial_twins(struct builder *b) {
        for (size_t k = 0; k < b->plan->n_disks; k++) {
                const struct plan_disk *pd = &b->plan->disks[k];
                const char *serial = pd->disk->serial;
                bool first = !strempty(serial);
                for (size_t j = 0; first && j < k; j++)
                        first = !(b->plan->disks[j].rule == pd->rule && b->plan->disks[j].disk->serial &&
                                  streq(b->plan->disks[j].disk->serial, serial));
                if (!first)
                        continue;
                _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
                int r = inventory_serial_warning(b->inv, serial, &sb);
                if (r > 0)
                        r = warning(b, pd->rule->mark, "disk rule '%s' takes %s, and %s", pd->rule->id, disk_path(pd->disk),
                                    strbuf_str(&sb));
                if (r < 0)
                        return r;
        }
        return 0;
}

/* match: [...]: the first alternative that selects exactly want disks wins
 * (hit: its disks, *ret_alt: its number, 1-based). 1 when the rule is
 * refused (by an alternative's own refusal, or because none selects want
 * disks), 0 when one won, or -errno. */
static int match_alternatives(struct builder *b, const struct spec_disk *rule, unsigned want, bool *hit,
                              unsigned *ret_alt) {
        _cleanup_strbuf_ struct strbuf tried = STRBUF_INIT;
        int r;
        for (size_t k = 0; k < rule->n_alts; k++) {
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT, got = STRBUF_INIT;
                memset(hit, 0, (b->n_sorted ? b->n_sorted : 1) * sizeof *hit);
                if ((r = match_criteria(b, &rule->alts[k], want, hit, &why)) != 0)
                        return r < 0 ? r : 1;
                unsigned nk = 0;
                for (size_t j = 0; j < b->n_sorted; j++)
                        if (hit[j]) {
                                nk++;
                                if ((r = strbuf_addf(&got, "%s%s", got.len ? ", " : "", disk_path(b->sorted[j]))) < 0)
                                        return r;
                        }
                if (nk == want) {
                        *ret_alt = (unsigned) k + 1;
                        return 0;
                }
                if ((r = strbuf_addf(&tried, "%s#%zu matches %u (%s%s)", tried.len ? "; " : "", k + 1, nk,
                                     nk ? strbuf_str(&got) : "none", strbuf_str(&why))) < 0)
                        return r;
        }
        r = refuse_disk(b, rule->match_mark, rule->id, NULL,
                        "disk rule '%s' must match exactly %u disk%s but none of its %zu match alternatives does: %s",
                        rule->id, want, want == 1 ? "" : "s", rule->n_alts, strbuf_str(&tried));
        return r < 0 ? r : 1;
}

static int select_disks(struct builder *b) {
        const struct spec *s = b->spec;
        const struct inventory *inv = b->inv;
        int r;

        b->n_sorted = inv->n_disks;
        b->sorted = calloc(inv->n_disks ? inv->n_disks : 1, sizeof *b->sorted);
        if (!b->sorted)
                return -ENOMEM;
        for (size_t i = 0; i < inv->n_disks; i++)
                b->sorted[i] = &inv->disks[i];
        qsort(b->sorted, b->n_sorted, sizeof *b->sorted, cmp_disk_path);

        /* owner[j]: index+1 of the first rule matching sorted disk j */
        _cleanup_free_ size_t *owner = calloc(b->n_sorted ? b->n_sorted : 1, sizeof *owner);
        _cleanup_free_ bool *matches = calloc((s->n_disks ? s->n_disks : 1) * (b->n_sorted ? b->n_sorted : 1), sizeof *matches);
        _cleanup_free_ unsigned *alt_won = calloc(s->n_disks ? s->n_disks : 1, sizeof *alt_won);
        if (!owner || !matches || !alt_won)
                return -ENOMEM;

        size_t total = 0;
        for (size_t i = 0; i < s->n_disks; i++) {
                const struct spec_disk *rule = &s->disks[i];
                unsigned want = rule->count ? rule->count : 1;
                unsigned n = 0;
                _cleanup_strbuf_ struct strbuf matched = STRBUF_INIT, reasons = STRBUF_INIT;
                _cleanup_free_ bool *hit = calloc(b->n_sorted ? b->n_sorted : 1, sizeof *hit);
                if (!hit)
                        return -ENOMEM;
                if (rule->n_alts == 0) {
                        if ((r = match_criteria(b, rule, want, hit, &reasons)) < 0)
                                return r;
                        if (r > 0)
                                continue;       /* refused: a serial twin, a tie at a size boundary */
                } else if ((r = match_alternatives(b, rule, want, hit, &alt_won[i])) != 0) {
                        if (r < 0)
                                return r;
                        continue;       /* refused */
                }
                for (size_t j = 0; j < b->n_sorted; j++) {
                        const struct inv_disk *d = b->sorted[j];
                        if (hit[j]) {
                                matches[i * b->n_sorted + j] = true;
                                n++;
                                if ((r = strbuf_addf(&matched, "%s%s", matched.len ? ", " : "", disk_path(d))) < 0)
                                        return r;
                                if (owner[j]) {
                                        if ((r = refuse_disk(b, rule->mark, rule->id, disk_path(d), "disk %s is matched by both disk rules '%s' and '%s'; a disk may belong to one rule only",
                                                        disk_path(d), s->disks[owner[j] - 1].id, rule->id)) < 0)
                                                return r;
                                } else
                                        owner[j] = i + 1;
                        }
                }
                if (n != want) {
                        if (n < want)
                                r = refuse_disk(b, rule->match_mark.line ? rule->match_mark : rule->mark, rule->id, NULL,
                                           "disk rule '%s' must match exactly %u disk%s but matches %u (%s)%s",
                                           rule->id, want, want == 1 ? "" : "s", n, n ? strbuf_str(&matched) : "none",
                                           strbuf_str(&reasons));
                        else
                                r = refuse_disk(b, rule->match_mark.line ? rule->match_mark : rule->mark, rule->id, NULL,
                                           "disk rule '%s' must match exactly %u disk%s but matches %u (%s); narrow the rule or raise its count",
                                           rule->id, want, want == 1 ? "" : "s", n, strbuf_str(&matched));
                        if (r < 0)
                                return r;
                }
                total += n;
        }
        if (b->f.refused || b->disk_rules_only)
                return 0;

        b->plan->disks = calloc(total ? total : 1, sizeof *b->plan->disks);
        if (!b->plan->disks)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_disks; i++) {
                unsigned idx = 0;
                for (size_t j = 0; j < b->n_sorted; j++) {
                        if (!matches[i * b->n_sorted + j])
                                continue;
                        b->plan->disks[b->plan->n_disks++] = (struct plan_disk) {
                                .rule = &s->disks[i], .disk = b->sorted[j], .index = idx++, .alt = alt_won[i],
                        };
                        if ((r = check_selected_disk(b, &s->disks[i], b->sorted[j])) < 0)
                                return r;
                }
        }
        return 0;
}

/* --- nodes: every block-device object and its predicted paths -------------- */

/* The node of a spec object the parser resolved a reference to. */
static struct node *node_of(struct builder *b, const void *obj) {
        for (size_t i = 0; obj && i < b->n_nodes; i++)
                if (b->nodes[i].obj == obj)
                        return &b->nodes[i];
        return NULL;
}

static struct node *node_add(struct builder *b, enum spec_obj_kind kind, const char *id, const void *obj, struct spec_mark mark) {
        struct node *n = &b->nodes[b->n_nodes++];
        *n = (struct node) { .kind = kind, .id = id, .obj = obj, .mark = mark };
        return n;
}

static int node_push_dev(struct node *n, char *dev /* takes */) {
        if (!dev)
                return -ENOMEM;
        int r = strv_push(&n->devs, dev);
        if (r < 0) {
                free(dev);
                return r;
        }
        n->n_devs++;
        return 0;
}



static int make_nodes(struct builder *b) {
        const struct spec *s = b->spec;
        size_t n = s->n_disks + s->n_partitions + s->n_raids + s->n_luks + s->n_vgs + s->n_lvs;
        b->nodes = calloc(n ? n : 1, sizeof *b->nodes);
        if (!b->nodes)
                return -ENOMEM;
        int r;

        for (size_t i = 0; i < s->n_disks; i++) {
                struct node *nd = node_add(b, SPEC_OBJ_DISK, s->disks[i].id, &s->disks[i], s->disks[i].mark);
                for (size_t k = 0; k < b->plan->n_disks; k++) {
                        const struct plan_disk *pd = &b->plan->disks[k];
                        if (pd->rule != &s->disks[i])
                                continue;
                        if ((r = node_push_dev(nd, strdup(disk_path(pd->disk)))) < 0)
                                return r;
                        if (!nd->size || pd->disk->size < nd->size)
                                nd->size = nd->size_max = pd->disk->size;
                }
                nd->state = 2;
        }
        for (size_t i = 0; i < s->n_partitions; i++) {
                const struct spec_partition *x = &s->partitions[i];
                struct node *nd = node_add(b, SPEC_OBJ_PARTITION, x->id, x, x->mark);
                nd->state = 2;  /* devices and sizes are filled in by layout_partitions() */
        }
        for (size_t i = 0; i < s->n_raids; i++) {
                const struct spec_raid *x = &s->raids[i];
                struct node *nd = node_add(b, SPEC_OBJ_RAID, x->id, x, x->mark);
                char *dev;
                if ((r = paths_md(x->name, &dev)) < 0 || (r = node_push_dev(nd, dev)) < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_luks; i++) {
                const struct spec_luks *x = &s->luks[i];
                struct node *nd = node_add(b, SPEC_OBJ_LUKS, x->id, x, x->mark);
                char *dev;
                if ((r = paths_mapper(x->name, &dev)) < 0 || (r = node_push_dev(nd, dev)) < 0)
                        return r;
        }
        for (size_t i = 0; i < s->n_vgs; i++) {
                const struct spec_vg *x = &s->vgs[i];
                struct node *nd = node_add(b, SPEC_OBJ_VG, x->id, x, x->mark);
                if (!(nd->vg_path = strdupf("/dev/%s", x->name)))
                        return -ENOMEM;
        }
        for (size_t i = 0; i < s->n_lvs; i++) {
                const struct spec_lv *x = &s->lvs[i];
                struct node *nd = node_add(b, SPEC_OBJ_LV, x->id, x, x->mark);
                const struct spec_vg *vg = x->vg_obj;
                if (!vg)
                        return invalid(b, x->vg_mark, "logical volume '%s' refers to unknown volume group '%s'", x->id, x->vg ? x->vg : "");
                char *dev;
                if ((r = paths_lv(vg->name, x->name, &dev)) < 0 || (r = node_push_dev(nd, dev)) < 0)
                        return r;
        }
        return 0;
}

static void nodes_free(struct builder *b) {
        for (size_t i = 0; i < b->n_nodes; i++) {
                strv_free(b->nodes[i].devs);
                free(b->nodes[i].vg_path);
        }
        free(b->nodes);
}

/* --- wipe and partition ---------------------------------------------------- */

static int emit_wipes(struct builder *b) {
        int r;
        for (size_t k = 0; k < b->plan->n_disks; k++) {
                const struct plan_disk *pd = &b->plan->disks[k];
                const struct inv_disk *d = pd->disk;
                _cleanup_strv_free_ char **holders = NULL;
                if ((r = inv_disk_holders(d, &holders)) < 0)
                        return r;
                size_t nsig = inv_disk_count_signatures(d);
                if (!holders && nsig == 0)
                        continue;
                _cleanup_strbuf_ struct strbuf what = STRBUF_INIT, desc = STRBUF_INIT;
                if ((r = describe_signatures(d, &what)) < 0)
                        return r;
                if ((r = strbuf_addf(&desc, "wipe %s", disk_path(d))) < 0)
                        return r;
                if (holders) {
                        if ((r = strbuf_adds(&desc, ": stop")) < 0)
                                return r;
                        for (size_t i = 0; holders[i]; i++)
                                if ((r = strbuf_addf(&desc, " %s", holders[i])) < 0)
                                        return r;
                }
                if (nsig && (r = strbuf_addf(&desc, "%s remove %zu signature%s", holders ? ", then" : ":", nsig, nsig == 1 ? "" : "s")) < 0)
                        return r;
                struct plan_step *st = step_add(b, PLAN_WIPE, pd->rule->id, pd->rule, pd->index);
                if (!st)
                        return -ENOMEM;
                st->inputs = TAKE_PTR(holders);
                st->size = d->size;
                if (st->inputs) {
                        if ((r = strbuf_addf(&what, "%sall data on ", what.len ? "; " : "")) < 0 ||
                            (r = add_list(&what, st->inputs, 0, strv_length(st->inputs))) < 0)
                                return r;
                }
                if ((r = step_text(st, disk_path(d), strbuf_detach(&desc), strbuf_detach(&what))) < 0)
                        return r;
        }
        return 0;
}

static int layout_disk(struct builder *b, const struct spec_disk *rule, const struct inv_disk *d, unsigned index,
                       const struct spec_partition **parts, size_t n, struct plan_part *out) {
        uint64_t lsec = d->logical_sector ? d->logical_sector : 512;
        uint64_t tail = lsec + GPT_ENTRIES_BYTES;
        uint64_t end = d->size > tail ? align_down(d->size - tail, ALIGN) : 0;
        uint64_t first = ALIGN;
        uint64_t usable = end > first ? end - first : 0;
        uint64_t fixed = 0;
        size_t rest = SIZE_MAX, last_pct = SIZE_MAX;
        int r;

        for (size_t i = 0; i < n; i++) {
                const struct spec_size *sz = &parts[i]->size;
                uint64_t v = 0;
                switch (sz->kind) {
                case SPEC_SIZE_BYTES:
                        v = align_up(sz->bytes, ALIGN);
                        break;
                case SPEC_SIZE_PERCENT:
                        v = align_down(d->size / 100 * sz->percent + d->size % 100 * sz->percent / 100, ALIGN);
                        last_pct = i;
                        break;
                case SPEC_SIZE_REST:
                        if (rest != SIZE_MAX)
                                return invalid(b, sz->mark, "partitions '%s' and '%s' on disk rule '%s' both have size 'rest'",
                                               parts[rest]->id, parts[i]->id, rule->id);
                        rest = i;
                        continue;
                default:
                        return invalid(b, parts[i]->mark, "partition '%s' has no size", parts[i]->id);
                }
                if (v == 0)
                        return refuse_disk(b, sz->mark, rule->id, disk_path(d), "partition '%s' on %s would be smaller than 1 MiB", parts[i]->id, disk_path(d));
                out[i].size = v;
                fixed = fixed > UINT64_MAX - v ? UINT64_MAX : fixed + v;
        }
        /* Percentages are of the whole disk, but the GPT and the 1 MiB
         * alignment take some of it: the last percentage partition gives back
         * what would run past the usable end, so "100%" (or 50% + 50%) fits. */
        uint64_t overhead = d->size > usable ? d->size - usable : 0;
        if (fixed > usable && last_pct != SIZE_MAX && fixed - usable <= overhead &&
            out[last_pct].size > align_up(fixed - usable, ALIGN)) {
                uint64_t give = align_up(fixed - usable, ALIGN);
                out[last_pct].size -= give;
                fixed -= give;
        }
        if (fixed > usable || (rest != SIZE_MAX && usable - fixed < ALIGN)) {
                _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
                for (size_t i = 0; i < n; i++)
                        if ((r = strbuf_addf(&sb, "%s'%s' %s", i ? ", " : "", parts[i]->id,
                                             i == rest ? "rest" : SIZE(out[i].size))) < 0)
                                return r;
                if (fixed > usable)
                        return refuse_disk(b, rule->mark, rule->id, disk_path(d), "partitions on %s (disk rule '%s') need %s but only %s is usable: %s",
                                      disk_path(d), rule->id, SIZE(fixed), SIZE(usable), strbuf_str(&sb));
                return refuse_disk(b, parts[rest]->size.mark, rule->id, disk_path(d), "no space left on %s (disk rule '%s') for partition '%s' (size rest): %s",
                              disk_path(d), rule->id, parts[rest]->id, strbuf_str(&sb));
        }
        if (rest != SIZE_MAX)
                out[rest].size = usable - fixed;
        uint64_t at = first;
        for (size_t i = 0; i < n; i++) {
                out[i].part = parts[i];
                out[i].number = (unsigned) i + 1;
                out[i].start = at;
                at += out[i].size;
                r = paths_partition(disk_path(d), out[i].number, &out[i].device);
                if (r < 0)
                        return r;
        }
        (void) index;
        return 0;
}

static int emit_partitions(struct builder *b) {
        const struct spec *s = b->spec;
        int r;
        for (size_t k = 0; k < b->plan->n_disks; k++) {
                const struct plan_disk *pd = &b->plan->disks[k];
                _cleanup_free_ const struct spec_partition **parts = calloc(s->n_partitions ? s->n_partitions : 1, sizeof *parts);
                if (!parts)
                        return -ENOMEM;
                size_t n = 0;
                for (size_t i = 0; i < s->n_partitions; i++)
                        if (s->partitions[i].disk == pd->rule)
                                parts[n++] = &s->partitions[i];
                if (n == 0)
                        continue;
                struct plan_part *out = calloc(n, sizeof *out);
                if (!out)
                        return -ENOMEM;
                struct plan_step *st = step_add(b, PLAN_PARTITION, pd->rule->id, pd->rule, pd->index);
                if (!st) {
                        free(out);
                        return -ENOMEM;
                }
                st->parts = out;
                st->n_parts = n;
                st->size = pd->disk->size;
                r = layout_disk(b, pd->rule, pd->disk, pd->index, parts, n, out);
                if (r < 0)
                        return r;
                if (b->f.refused || b->f.invalid)
                        continue;
                if ((r = step_text(st, disk_path(pd->disk),
                                   strdupf("partition %s: new GPT with %zu partition%s", disk_path(pd->disk), n, n == 1 ? "" : "s"),
                                   strdupf("all data on %s (%s)", disk_path(pd->disk), APPROX(pd->disk->size)))) < 0)
                        return r;
                /* the partition nodes: one device per selected disk, in rule order */
                for (size_t i = 0; i < n; i++) {
                        struct node *nd = node_of(b, out[i].part);
                        if (!nd)
                                continue;
                        if ((r = node_push_dev(nd, strdup(out[i].device))) < 0)
                                return r;
                        if (!nd->size || out[i].size < nd->size)
                                nd->size = nd->size_max = out[i].size;
                }
        }
        return 0;
}

/* --- the object graph ------------------------------------------------------ */

static int visit(struct builder *b, struct node *n);

/* Resolves a reference that must stand for exactly one device. */
static int ref_one(struct builder *b, const char *what, const char *owner, const char *id, struct spec_ref ref,
                   struct spec_mark m, struct node **ret) {
        struct node *n = node_of(b, ref.obj);
        if (!n || n->kind == SPEC_OBJ_VG)
                return invalid(b, m, "%s '%s' refers to unknown device '%s'", what, owner, id ? id : "");
        int r = visit(b, n);
        if (r < 0)
                return r;
        if (n->n_devs != 1)
                return invalid(b, m, "%s '%s' is on '%s', which stands for %zu devices; it needs exactly one",
                               what, owner, id, n->n_devs);
        *ret = n;
        return 0;
}

static uint64_t raid_capacity(unsigned level, const char *layout, size_t n, uint64_t m) {
        switch (level) {
        case 0: return n * m;
        case 1: return m;
        case 5: return n >= 2 ? (n - 1) * m : 0;
        case 6: return n >= 3 ? (n - 2) * m : 0;
        case 10: return n * m / spec_raid10_copies(layout);
        default: return 0;
        }
}

static int add_list(struct strbuf *sb, char **v, size_t from, size_t to) {
        int r = 0;
        for (size_t i = from; r >= 0 && i < to; i++)
                r = strbuf_addf(sb, "%s%s", i > from ? " " : "", v[i]);
        return r;
}

/* The size of a device the plan has so far: a selected disk, or a partition
 * an earlier step makes; 0 when it is not known (md, LUKS, LV members). */
static uint64_t device_size(const struct builder *b, const char *dev) {
        for (size_t i = 0; i < b->plan->n_steps; i++) {
                const struct plan_step *st = &b->plan->steps[i];
                for (size_t k = 0; st->kind == PLAN_PARTITION && k < st->n_parts; k++)
                        if (st->parts[k].device && streq(st->parts[k].device, dev))
                                return st->parts[k].size;
        }
        for (size_t i = 0; i < b->plan->n_disks; i++)
                if (streq(disk_path(b->plan->disks[i].disk), dev))
                        return b->plan->disks[i].disk->size;
        return 0;
}

/* md uses every member only up to the smallest: over mixed disks the rest
 * stays idle (junk-box's raid10 over 1T/2T/2T/4T leaves about 4.5 TiB). Said
 * when it is at least 1 GiB and 5 % of the members. */
static int warn_unused_capacity(struct builder *b, const struct spec_raid *x, char **members) {
        uint64_t min = UINT64_MAX, sum = 0;
        const char *smallest = NULL;
        for (size_t i = 0; members[i]; i++) {
                uint64_t sz = device_size(b, members[i]);
                if (sz == 0)
                        return 0;
                if (sz < min) {
                        min = sz;
                        smallest = members[i];
                }
                sum += sz;
        }
        if (!smallest)
                return 0;
        uint64_t unused = sum - min * strv_length(members);
        if (unused < GiB || unused < sum / 20)
                return 0;
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = 0;
        for (size_t i = 0; r >= 0 && members[i]; i++) {
                uint64_t sz = device_size(b, members[i]);
                if (sz - min >= MiB)
                        r = strbuf_addf(&sb, "%s%s %s", sb.len ? ", " : "", members[i], APPROX(sz - min));
        }
        if (r < 0)
                return r;
        return warning(b, x->members_mark,
                       "raid '%s' uses each member only up to the size of the smallest (%s, %s): %s of its members "
                       "stays unused (%s)", x->id, smallest, APPROX(min), APPROX(unused), strbuf_str(&sb));
}

static int emit_raid(struct builder *b, struct node *n) {
        const struct spec_raid *x = n->obj;
        _cleanup_strv_free_ char **members = NULL;
        uint64_t m = 0, mmax = 0;
        bool approx = false;
        int r;
        for (size_t i = 0; x->members && x->members[i]; i++) {
                struct spec_mark mk = x->member_marks ? x->member_marks[i] : x->members_mark;
                struct node *c = x->member_refs ? node_of(b, x->member_refs[i].obj) : NULL;
                if (!c || (c->kind != SPEC_OBJ_DISK && c->kind != SPEC_OBJ_PARTITION && c->kind != SPEC_OBJ_LUKS && c->kind != SPEC_OBJ_LV))
                        return invalid(b, mk, "raid '%s' refers to unknown member '%s'", x->id, x->members[i]);
                if ((r = visit(b, c)) < 0)
                        return r;
                for (size_t k = 0; k < c->n_devs; k++)
                        if ((r = strv_pushdup(&members, c->devs[k])) < 0)
                                return r;
                if (c->size && (!m || c->size < m))
                        m = c->size;
                if (c->size_max && (!mmax || c->size_max < mmax))
                        mmax = c->size_max;
                approx |= c->approx;
        }
        size_t total = strv_length(members);
        if (total == 0)
                return invalid(b, x->members_mark, "raid '%s' has no members", x->id);
        if ((r = warn_unused_capacity(b, x, members)) < 0)
                return r;
        size_t active = x->spares < total ? total - x->spares : 0;
        /* mdadm keeps a superblock, bitmap and data offset on each member:
         * the estimate takes 1/1024 of a member (1..128 MiB) away. */
        uint64_t reserve = m / 1024;
        reserve = reserve < MiB ? MiB : reserve > 128 * MiB ? 128 * MiB : reserve;
        n->size = m > reserve ? raid_capacity(x->level, x->layout, active, m - reserve) : 0;
        n->size_max = raid_capacity(x->level, x->layout, active, mmax);
        n->approx = true;

        _cleanup_strbuf_ struct strbuf desc = STRBUF_INIT, destroys = STRBUF_INIT;
        r = strbuf_addf(&desc, "create raid%u %s", x->level, n->devs[0]);
        if (r >= 0 && x->layout)
                r = strbuf_addf(&desc, " layout %s", x->layout);
        if (r >= 0 && x->chunk)
                r = strbuf_addf(&desc, " chunk %s", SIZE(x->chunk));
        if (r >= 0)
                r = strbuf_addf(&desc, " metadata %s", x->metadata);
        if (r >= 0 && x->bitmap)
                r = strbuf_addf(&desc, " bitmap %s", x->bitmap);
        if (r >= 0 && x->assume_clean)
                r = strbuf_adds(&desc, " assume-clean");
        if (r >= 0)
                r = strbuf_addf(&desc, " from %zu device%s: ", active, active == 1 ? "" : "s");
        if (r >= 0)
                r = add_list(&desc, members, 0, active);
        if (r >= 0 && x->spares) {
                r = strbuf_adds(&desc, ", spares: ");
                if (r >= 0)
                        r = add_list(&desc, members, active, total);
        }
        if (r >= 0)
                r = strbuf_addf(&desc, " (~%s)", APPROX(n->size));
        if (r >= 0)
                r = strbuf_adds(&destroys, "contents of ");
        if (r >= 0)
                r = add_list(&destroys, members, 0, total);
        if (r < 0)
                return r;
        struct plan_step *st = step_add(b, PLAN_MD_CREATE, x->id, x, 0);
        if (!st)
                return -ENOMEM;
        st->md = (struct plan_md) { .name = x->name, .level = x->level, .layout = x->layout, .chunk = x->chunk,
                                    .metadata = x->metadata, .bitmap = x->bitmap, .spares = x->spares,
                                    .assume_clean = x->assume_clean };
        st->inputs = TAKE_PTR(members);
        st->size = n->size;
        st->size_approx = true;
        return step_text(st, n->devs[0], strbuf_detach(&desc), strbuf_detach(&destroys));
}

static struct plan_step *last_step(struct builder *b) {
        return &b->plan->steps[b->plan->n_steps - 1];
}

static struct plan_crypt crypt_of(const struct spec_luks *x) {
        return (struct plan_crypt) { .cipher = x->cipher, .key_size = x->key_size, .sector_size = x->sector_size,
                                     .no_read_workqueue = x->no_read_workqueue,
                                     .no_write_workqueue = x->no_write_workqueue, .discard = x->discard };
}

/* The boot-time part of an fstab or crypttab line (docs/spec.md "Device
 * waits"): nofail unless the node cannot run without it, and how long
 * systemd waits for its device (spec_fs_device_timeout(), luks_device_timeout():
 * the spec's device_timeout unless a filesystem says, for slow HBAs and
 * disks; systemd's own 90 s is too short for junk hardware). */
static char *with_waits(const char *base, bool required, unsigned timeout_s) {
        return strdupf("%s%s,x-systemd.device-timeout=%us", base, required ? "" : ",nofail", timeout_s);
}

/* Does a filesystem that the boot needs (spec_filesystem.required, mounted
 * or swap) sit on x? */
static bool luks_required(const struct spec *s, const struct spec_luks *x) {
        for (size_t i = 0; i < s->n_filesystems; i++) {
                const struct spec_filesystem *f = &s->filesystems[i];
                if (f->required && (f->mount || f->type == SPEC_FS_SWAP) && spec_is_below(s, f->on, x))
                        return true;
        }
        return false;
}

/* How long systemd waits for x's device: the longest wait of the
 * filesystems on it (a volume under the image store alone waits as long as
 * the image store), the spec's when none is. */
static unsigned luks_device_timeout(const struct spec *s, const struct spec_luks *x) {
        unsigned t = 0;
        for (size_t i = 0; i < s->n_filesystems; i++) {
                const struct spec_filesystem *f = &s->filesystems[i];
                if ((f->mount || f->type == SPEC_FS_SWAP) && spec_is_below(s, f->on, x))
                        t = spec_fs_device_timeout(s, f) > t ? spec_fs_device_timeout(s, f) : t;
        }
        return t ? t : s->device_timeout;
}

/* The options of x's crypttab line. Performance flags are persistent in the
 * LUKS2 header; a Tang-bound volume is opened in the initramfs
 * (clevis-initramfs answers cryptroot's prompt), and cryptroot opens volumes
 * other than root's only with 'initramfs'; a luks on N disks under an md
 * gets one line per disk, all opened by the initramfs before md assembles
 * (docs/spec.md "LUKS on each disk").
 *
 * A volume the initramfs opens (those, and the one under '/', which
 * cryptroot's hook always takes) gets 'noauto': systemd 252's
 * cryptsetup-generator then adds its unit to no target, so nothing at boot
 * waits for the by-uuid link of its source (the 90 s wait of issue 30,
 * for a mapping that was active already). The line stays, for cryptroot's
 * hook (update-initramfs reads /etc/crypttab) and for cryptdisks_start;
 * Debian's cryptroot ignores 'noauto' for the volumes it opens.
 * 'x-initrd.attach' does not do this: in systemd 252 it only drops the unit's
 * Conflicts=umount.target (the root's volume stays open at shutdown), the
 * wait stays. Such a line carries no nofail and no device timeout: systemd
 * starts nothing for it, and Debian's cryptroot, which reads the same line
 * at update-initramfs and at every boot, warns about options it does not
 * know ("ignoring unknown option"). Every other volume is opened by systemd
 * and gets the waits of with_waits(). */
static char *crypttab_options(const struct spec *s, const struct spec_luks *x) {
        const struct spec_filesystem *root = spec_root_filesystem(s);
        bool initramfs = x->unlock.n_tang || x->count > 1;
        if (initramfs || (root && spec_is_below(s, root->on, x)))
                return strdupf("luks%s%s,noauto", initramfs ? ",initramfs" : "", x->discard ? ",discard" : "");
        return with_waits(x->discard ? "luks,discard" : "luks", luks_required(s, x), luks_device_timeout(s, x));
}

/* The LUKS_FORMAT and LUKS_OPEN payload of copy k of x on dev. */
static int luks_payload(struct builder *b, const struct spec_luks *x, unsigned k, const char *dev, struct plan_luks *ret) {
        *ret = (struct plan_luks) {
                .key = x, .crypt = crypt_of(x), .label = x->label,
                .pbkdf = x->pbkdf.type, .pbkdf_time_ms = x->pbkdf.time_ms, .pbkdf_iterations = x->pbkdf.iterations,
                .pbkdf_parallel = x->pbkdf.parallel, .pbkdf_max_memory = x->pbkdf.max_memory,
                .key_done = x->key.source != SPEC_KEY_GENERATE && k + 1 >= x->count,
                .crypttab_options = crypttab_options(b->spec, x),
        };
        if (!ret->crypttab_options)
                return -ENOMEM;
        /* with tune, the bench-raw step of copy #0 chooses for every copy */
        if (b->spec->bench.present && b->spec->bench.tune && b->bench_luks == x)
                ret->tuned_by = b->bench_step;
        ret->backing = dev;
        return spec_luks_name(x, k, &ret->name);
}

/* The step just emitted takes the payload (its backing device is the step's own copy). */
static int luks_take(struct builder *b, const struct plan_luks *l) {
        struct plan_step *st = last_step(b);
        int r = plan_luks_copy(&st->luks, l);
        if (r < 0)
                return r;
        st->luks.backing = st->inputs && st->inputs[0] ? st->inputs[0] : NULL;
        return st->luks.backing ? 0 : -EINVAL;
}

/* The steps of device #k of a luks: on dev (the device under it), opened
 * as mapper (bench: only on #0, see docs/spec.md "LUKS on each disk"). */
static int emit_luks_one(struct builder *b, struct node *n, const struct node *under, unsigned k, const char *dev,
                         const char *mapper) {
        const struct spec_luks *x = n->obj;
        const struct spec *s = b->spec;
        int r;
        bool bench = s->bench.present && k == 0;
        if (bench &&
            (r = step_emit(b, PLAN_BENCH_RAW, x->id, x, k, dev, under->size, under->approx, dev,
                           strdupf("benchmark ciphers and raw I/O on %s before luksFormat", dev),
                           strdupf("data on %s (benchmark writes)", dev))) < 0)
                return r;
        if (bench) {
                last_step(b)->bench = (struct plan_bench) { .policy = &s->bench, .ciphers = x->bench_ciphers,
                                                            .want = crypt_of(x), .luks_id = x->id };
                b->bench_step = b->plan->n_steps;
                b->bench_luks = x;
        }
        struct plan_luks lp = {};
        _cleanup_free_ char *lp_name = NULL, *lp_options = NULL;
        r = luks_payload(b, x, k, dev, &lp);
        lp_name = lp.name;
        lp_options = lp.crypttab_options;
        if (r < 0)
                return r;

        _cleanup_strbuf_ struct strbuf desc = STRBUF_INIT;
        if (lp.tuned_by) {
                /* bench_choose_for_luks() picks among the candidates at run time */
                char *const *c = x->bench_ciphers;
                r = strbuf_addf(&desc, "luksFormat %s as LUKS2: cipher and key size%s chosen at run time by the "
                                "benchmark among", dev, x->sector_size ? "" : " (and sector size)");
                for (size_t i = 0; r >= 0 && c[i]; i++)
                        r = strbuf_addf(&desc, "%s '%s'", i ? "," : "", c[i]);
                if (r >= 0)
                        r = strbuf_adds(&desc, " (tuning may turn the workqueues off)");
        } else
                r = strbuf_addf(&desc, "luksFormat %s as LUKS2: cipher %s, key %u bits", dev, x->cipher, x->key_size);
        if (r >= 0 && x->sector_size)
                r = strbuf_addf(&desc, ", sector %u", x->sector_size);
        if (r >= 0)
                r = strbuf_addf(&desc, ", pbkdf %s", spec_pbkdf_type_name(spec_pbkdf_effective(x->pbkdf.type)));
        if (r >= 0 && x->pbkdf.max_memory)
                r = strbuf_addf(&desc, " (max memory %s)", SIZE(x->pbkdf.max_memory));
        if (r >= 0 && x->label)
                r = strbuf_addf(&desc, ", label '%s'", x->label);
        if (r >= 0)
                r = strbuf_addf(&desc, ", %s", spec_luks_key_name(x));
        if (r < 0 || (r = step_emit(b, PLAN_LUKS_FORMAT, x->id, x, k, dev, n->size, n->approx, dev, strbuf_detach(&desc),
                                    strdupf("contents of %s", dev))) < 0 || (r = luks_take(b, &lp)) < 0)
                return r;

        r = strbuf_addf(&desc, "open %s as %s", dev, mapper);
        if (r >= 0 && (x->no_read_workqueue || x->no_write_workqueue || x->discard))
                r = strbuf_addf(&desc, " with%s%s%s", x->no_read_workqueue ? " no_read_workqueue" : "",
                                x->no_write_workqueue ? " no_write_workqueue" : "", x->discard ? " discard" : "");
        if (r < 0 || (r = step_emit(b, PLAN_LUKS_OPEN, x->id, x, k, dev, n->size, n->approx, mapper,
                                    strbuf_detach(&desc), NULL)) < 0 || (r = luks_take(b, &lp)) < 0)
                return r;

        if (bench) {
                r = step_emit(b, PLAN_BENCH_CRYPT, x->id, x, k, dev, n->size, n->approx, mapper,
                              strdupf("benchmark I/O through %s against %s, then the gate (%s on failure)%s", mapper,
                                      dev, s->bench.on_fail == SPEC_ON_FAIL_WARN ? "warn" : "abort",
                                      n->n_devs > 1 ? "; the other disks' LUKS are the same stack on the same kind of disk" : ""),
                              strdupf("data on %s (benchmark writes)", mapper));
                if (r < 0)
                        return r;
                last_step(b)->bench = (struct plan_bench) { .policy = &s->bench, .luks_id = x->id };
        }
        return 0;
}

static int emit_luks(struct builder *b, struct node *n) {
        const struct spec_luks *x = n->obj;
        struct node *under = node_of(b, x->on_ref.obj);
        if (!under || under->kind == SPEC_OBJ_VG)
                return invalid(b, x->on_mark, "luks '%s' refers to unknown device '%s'", x->id, x->on ? x->on : "");
        int r = visit(b, under);
        if (r < 0 || b->f.invalid)
                return r;
        if (under->n_devs == 0 || (under->n_devs > 1 && under->n_devs != x->count))
                return invalid(b, x->on_mark, "luks '%s' is on '%s', which stands for %zu devices", x->id, x->on,
                               under->n_devs);
        n->size = under->size > LUKS2_DEFAULT_HEADER ? under->size - LUKS2_DEFAULT_HEADER : 0;
        n->size_max = under->size_max > LUKS2_DEFAULT_HEADER ? under->size_max - LUKS2_DEFAULT_HEADER : 0;
        n->approx = under->approx;
        if (under->n_devs > 1) {
                /* one LUKS2 per device under it: crypt0-0 .. crypt0-N */
                strv_free(n->devs);
                n->devs = NULL;
                n->n_devs = 0;
                for (unsigned k = 0; k < under->n_devs; k++) {
                        _cleanup_free_ char *name = NULL;
                        char *dev;
                        if ((r = spec_luks_name(x, k, &name)) < 0 || (r = paths_mapper(name, &dev)) < 0 ||
                            (r = node_push_dev(n, dev)) < 0)
                                return r;
                }
        }
        for (unsigned k = 0; k < under->n_devs; k++)
                if ((r = emit_luks_one(b, n, under, k, under->devs[k], n->devs[k])) < 0)
                        return r;
        return 0;
}

static int emit_lvs(struct builder *b, struct node *vgn, uint64_t extent) {
        const struct spec *s = b->spec;
        const struct spec_vg *vg = vgn->obj;
        uint64_t free_est = vgn->size, free_max = vgn->size_max;
        const char *took_all = NULL;
        int r;
        for (size_t i = 0; i < s->n_lvs; i++) {
                const struct spec_lv *x = &s->lvs[i];
                if (x->vg_obj != vg)
                        continue;
                struct node *n = node_of(b, x);
                if (!n || n->n_devs != 1)
                        return -EINVAL;
                uint64_t sz = 0;
                bool approx = vgn->approx;
                _cleanup_strbuf_ struct strbuf what = STRBUF_INIT;
                switch (x->size.kind) {
                case SPEC_SIZE_BYTES:
                        sz = align_up(x->size.bytes, extent);
                        approx = false;
                        if (sz > free_max) {
                                if (took_all)
                                        return refuse(b, x->size.mark, "logical volume '%s' (%s) does not fit: '%s' before it takes all free space of volume group '%s'",
                                                      x->id, SIZE(sz), took_all, vg->name);
                                return refuse(b, x->size.mark, "logical volume '%s' (%s) does not fit in volume group '%s': at most %s %s free",
                                              x->id, SIZE(sz), vg->name, APPROX(free_max), free_max == vgn->size_max ? "is" : "is left");
                        }
                        free_max -= sz;
                        free_est = free_est > sz ? free_est - sz : 0;
                        r = strbuf_addf(&what, "%s", SIZE(sz));
                        break;
                case SPEC_SIZE_PERCENT:
                case SPEC_SIZE_REST: {
                        unsigned pct = x->size.kind == SPEC_SIZE_REST ? 100 : x->size.percent;
                        if (free_max < extent)
                                return refuse(b, x->size.mark, "logical volume '%s' (%u%%FREE) gets no space: '%s' before it takes all free space of volume group '%s'",
                                              x->id, pct, took_all ? took_all : "?", vg->name);
                        sz = align_down(free_est / 100 * pct + free_est % 100 * pct / 100, extent);
                        uint64_t smax = free_max / 100 * pct + free_max % 100 * pct / 100;
                        free_est -= sz;
                        free_max = pct >= 100 ? 0 : free_max - smax + extent;
                        if (pct >= 100)
                                took_all = x->id;
                        r = strbuf_addf(&what, "%u%%FREE (%s%s)", pct, approx ? "~" : "", approx ? APPROX(sz) : SIZE(sz));
                        break;
                }
                default:
                        return invalid(b, x->mark, "logical volume '%s' has no size", x->id);
                }
                if (r < 0)
                        return r;
                n->size = sz;
                n->size_max = x->size.kind == SPEC_SIZE_BYTES ? sz : vgn->size_max;
                n->approx = approx;
                n->state = 2;
                if ((r = step_emit(b, PLAN_LVCREATE, x->id, x, 0, vgn->vg_path, sz, approx, n->devs[0],
                                   strdupf("lvcreate %s in %s: %s", n->devs[0], vg->name, strbuf_str(&what)), NULL)) < 0)
                        return r;
                b->plan->steps[b->plan->n_steps - 1].lv = (struct plan_lv) {
                        .vg = vg->name, .name = x->name,
                        .bytes = x->size.kind == SPEC_SIZE_BYTES ? x->size.bytes : 0,
                        .percent_free = x->size.kind == SPEC_SIZE_BYTES ? 0 : x->size.kind == SPEC_SIZE_REST ? 100 : x->size.percent,
                };
        }
        return 0;
}

static int emit_vg(struct builder *b, struct node *n) {
        const struct spec_vg *x = n->obj;
        uint64_t extent = x->extent_size ? x->extent_size : LVM_DEFAULT_EXTENT;
        _cleanup_strv_free_ char **pvs = NULL;
        int r;
        n->size = n->size_max = 0;
        for (size_t i = 0; x->pvs && x->pvs[i]; i++) {
                struct spec_mark mk = x->pv_marks ? x->pv_marks[i] : x->pvs_mark;
                struct node *c = x->pv_refs ? node_of(b, x->pv_refs[i].obj) : NULL;
                if (!c || c->kind == SPEC_OBJ_VG)
                        return invalid(b, mk, "volume group '%s' refers to unknown physical volume '%s'", x->id, x->pvs[i]);
                if ((r = visit(b, c)) < 0)
                        return r;
                if (b->f.invalid)
                        return 0;
                for (size_t k = 0; k < c->n_devs; k++) {
                        if ((r = strv_pushdup(&pvs, c->devs[k])) < 0)
                                return r;
                        n->size += c->size > LVM_PV_METADATA ? align_down(c->size - LVM_PV_METADATA, extent) : 0;
                        n->size_max += c->size_max;
                }
                n->approx |= c->approx;
        }
        size_t npv = strv_length(pvs);
        if (npv == 0)
                return invalid(b, x->pvs_mark, "volume group '%s' has no physical volumes", x->id);
        for (size_t i = 0; i < npv; i++) {
                if ((r = step_emit(b, PLAN_PVCREATE, x->id, x, (unsigned) i, NULL, 0, false, pvs[i],
                                   strdupf("pvcreate %s", pvs[i]), strdupf("contents of %s", pvs[i]))) < 0)
                        return r;
        }
        _cleanup_strbuf_ struct strbuf desc = STRBUF_INIT;
        r = strbuf_addf(&desc, "vgcreate %s from ", x->name);
        if (r >= 0)
                r = add_list(&desc, pvs, 0, npv);
        if (r >= 0 && x->extent_size)
                r = strbuf_addf(&desc, ", extent %s", SIZE(x->extent_size));
        if (r >= 0)
                r = strbuf_addf(&desc, " (%s%s)", n->approx ? "~" : "", n->approx ? APPROX(n->size) : SIZE(n->size));
        if (r < 0)
                return r;
        struct plan_step *st = step_add(b, PLAN_VGCREATE, x->id, x, 0);
        if (!st)
                return -ENOMEM;
        st->vg = (struct plan_vg) { .name = x->name, .extent_size = x->extent_size };
        st->inputs = TAKE_PTR(pvs);
        st->size = n->size;
        st->size_approx = n->approx;
        if ((r = step_text(st, n->vg_path, strbuf_detach(&desc), NULL)) < 0)
                return r;
        n->state = 2;
        return emit_lvs(b, n, extent);
}

static int visit(struct builder *b, struct node *n) {
        if (n->state == 2 || b->f.invalid || b->f.refused)
                return 0;
        if (n->state == 1)
                return -ELOOP;  /* spec_parse reports every cycle ("reference cycle"); a plan takes valid specs */
        n->state = 1;
        int r;
        switch (n->kind) {
        case SPEC_OBJ_RAID:
                r = emit_raid(b, n);
                break;
        case SPEC_OBJ_LUKS:
                r = emit_luks(b, n);
                break;
        case SPEC_OBJ_VG:
                r = emit_vg(b, n);
                break;
        case SPEC_OBJ_LV: {
                const struct spec_lv *x = n->obj;
                struct node *vg = node_of(b, x->vg_obj);
                if (!vg || vg->kind != SPEC_OBJ_VG)
                        return invalid(b, x->vg_mark, "logical volume '%s' refers to unknown volume group '%s'", x->id, x->vg ? x->vg : "");
                r = visit(b, vg);   /* creates every LV of the VG, this one included */
                break;
        }
        default:
                r = 0;
        }
        if (r >= 0)
                n->state = 2;
        return r;
}

static int emit_graph(struct builder *b) {
        for (size_t i = 0; i < b->n_nodes && !b->f.invalid && !b->f.refused; i++) {
                int r = visit(b, &b->nodes[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* --- filesystems, mounts and the rest ---------------------------------------- */

static int emit_mkfs(struct builder *b, const char **devs) {
        const struct spec *s = b->spec;
        int r;
        for (size_t i = 0; i < s->n_filesystems; i++) {
                const struct spec_filesystem *f = &s->filesystems[i];
                struct node *n;
                if ((r = ref_one(b, "filesystem on", f->on ? f->on : "", f->on, f->on_ref, f->on_mark, &n)) < 0)
                        return r;
                if (b->f.invalid)
                        return 0;
                devs[i] = n->devs[0];
                if (f->encrypt_random) {
                        /* nothing is formatted: crypttab maps it with a fresh key and mkswaps it at every boot */
                        _cleanup_free_ char *name = NULL;
                        if ((r = spec_swap_crypt_name(f, &name)) < 0)
                                return r;
                        if ((r = step_emit(b, PLAN_MKFS, f->on, f, 0, NULL, n->size, n->approx, devs[i],
                                           strdupf("clear the signatures on %s: swap encrypted with a fresh random key at "
                                                   "every boot (crypttab '%s' from /dev/urandom: plain dm-crypt %s, %u-bit key)",
                                                   devs[i], name, SPEC_SWAP_CIPHER, SPEC_SWAP_KEY_SIZE),
                                           strdupf("contents of %s", devs[i]))) < 0)
                                return r;
                        _cleanup_free_ char *base = strdupf("plain,swap,cipher=%s,size=%u", SPEC_SWAP_CIPHER,
                                                            SPEC_SWAP_KEY_SIZE);
                        last_step(b)->fs = (struct plan_fs) { .type = f->type, .blank = true,
                                                              .swap_name = TAKE_PTR(name),
                                                              .swap_by_partuuid = f->on_ref.kind == SPEC_OBJ_PARTITION,
                                                              .fstab_options = with_waits("sw", f->required, spec_fs_device_timeout(s, f)),
                                                              .crypttab_options = base ? with_waits(base, f->required,
                                                                                                    spec_fs_device_timeout(s, f)) : NULL };
                        if (!last_step(b)->fs.fstab_options || !last_step(b)->fs.crypttab_options)
                                return -ENOMEM;
                        continue;
                }
                _cleanup_strbuf_ struct strbuf desc = STRBUF_INIT;
                r = strbuf_addf(&desc, "%s %s", f->type == SPEC_FS_SWAP ? "mkswap" : "mkfs", spec_fs_type_name(f->type));
                if (r >= 0)
                        r = strbuf_addf(&desc, " on %s", devs[i]);
                if (r >= 0 && f->label)
                        r = strbuf_addf(&desc, ", label '%s'", f->label);
                for (size_t k = 0; r >= 0 && f->mkfs_options && f->mkfs_options[k]; k++)
                        r = strbuf_addf(&desc, "%s%s", k ? " " : ", options: ", f->mkfs_options[k]);
                if (r < 0)
                        return r;
                if ((r = step_emit(b, PLAN_MKFS, f->on, f, 0, NULL, n->size, n->approx, devs[i], strbuf_detach(&desc),
                                   strdupf("contents of %s", devs[i]))) < 0)
                        return r;
                last_step(b)->fs = (struct plan_fs) { .type = f->type, .label = f->label, .mkfs_options = f->mkfs_options };
                if (f->type == SPEC_FS_SWAP && !(last_step(b)->fs.fstab_options = with_waits("sw", f->required, spec_fs_device_timeout(s, f))))
                        return -ENOMEM;
        }
        return 0;
}

unsigned plan_mount_depth(const char *mountpoint) {
        unsigned d = 0;
        for (const char *p = mountpoint; p && *p; p++)
                if (*p != '/' && (p == mountpoint || p[-1] == '/'))
                        d++;
        return d;
}

static int emit_mounts(struct builder *b, const char **devs) {
        const struct spec *s = b->spec;
        const char *target = kiln_paths.target;
        int r;
        /* shallowest first; equal depth keeps spec order */
        for (unsigned depth = 0;; depth++) {
                bool deeper = false;
                for (size_t i = 0; i < s->n_filesystems; i++) {
                        const struct spec_filesystem *f = &s->filesystems[i];
                        if (!f->mount || f->type == SPEC_FS_SWAP)
                                continue;
                        unsigned dd = plan_mount_depth(f->mount);
                        if (dd > depth)
                                deeper = true;
                        if (dd != depth)
                                continue;
                        const char *options = spec_fs_mount_options(f);
                        if ((r = step_emit(b, PLAN_MOUNT, f->on, f, 0, NULL, 0, false, devs[i],
                                           strdupf("mount %s on %s%s (%s)", devs[i], target, streq(f->mount, "/") ? "" : f->mount,
                                                   options),
                                           NULL)) < 0)
                                return r;
                        /* a finished node is looked at read-only, without journal replay */
                        last_step(b)->fs = (struct plan_fs) {
                                .type = f->type, .mountpoint = f->mount, .options = options,
                                .fsck_pass = f->type == SPEC_FS_XFS ? 0 : streq(f->mount, "/") ? 1 : 2,
                                .inspect_options = f->type == SPEC_FS_XFS ? "ro,norecovery" :
                                                   f->type == SPEC_FS_EXT4 ? "ro,noload" : "ro",
                                /* Debian's initramfs mounts a separate /usr itself, from /etc/fstab, with
                                 * busybox's mount, which hands x-systemd.* to the kernel (ext4: "Unknown
                                 * parameter"): its line gets no systemd option (it is required anyway) */
                                .fstab_options = streq(f->mount, "/usr") ? strdup(options) :
                                                 with_waits(options, f->required, spec_fs_device_timeout(s, f)) };
                        if (!last_step(b)->fs.fstab_options)
                                return -ENOMEM;
                }
                if (!deeper)
                        return 0;
        }
}

int plan_kernel_cmdline(const struct spec *s, char **ret) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        bool ip = false;
        int r = 0;
        for (size_t i = 0; r == 0 && s->boot.cmdline && s->boot.cmdline[i]; i++) {
                ip |= strncmp(s->boot.cmdline[i], "ip=", 3) == 0;
                r = strbuf_addf(&sb, "%s%s", i ? " " : "", s->boot.cmdline[i]);
        }
        /* The long form: Debian 12's clevis-initramfs (19) reads the sixth
         * field of ip= as the interface, so the short "ip=dhcp" makes it
         * wait for an interface named "dhcp" and skip the network (seen in
         * rig/test-boot-disks: the node sat at the passphrase prompt with
         * Tang up). Empty fields, autoconf dhcp: DHCP on every NIC. */
        if (r == 0 && !ip && spec_has_unlock(s))
                r = strbuf_addf(&sb, "%s" PLAN_UNLOCK_IP, sb.len ? " " : "");
        if (r < 0)
                return r;
        char *t = strdup(strbuf_str(&sb));
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

/* name with every '-' doubled, as device-mapper names LVs */
static int add_dm_escaped(struct strbuf *sb, const char *name) {
        int r = 0;
        for (const char *p = name; r >= 0 && *p; p++)
                r = strbuf_addf(sb, *p == '-' ? "--" : "%c", *p);
        return r;
}

int plan_installed_cmdline(const struct spec *s, const char *root_uuid, char **ret) {
        const struct spec_filesystem *root = spec_root_filesystem(s);
        if (!root || !root->on)
                return -ENOENT;
        const struct spec_lv *lv = root->on_ref.kind == SPEC_OBJ_LV ? root->on_ref.obj : NULL;
        const struct spec_vg *vg = lv ? lv->vg_obj : NULL;
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        _cleanup_free_ char *rest = NULL;
        int r;
        if (lv && vg) {
                r = strbuf_adds(&sb, "root=/dev/mapper/");
                if (r >= 0)
                        r = add_dm_escaped(&sb, vg->name);
                if (r >= 0)
                        r = strbuf_adds(&sb, "-");
                if (r >= 0)
                        r = add_dm_escaped(&sb, lv->name);
        } else if (root_uuid)
                r = strbuf_addf(&sb, "root=UUID=%s", root_uuid);
        else
                return -ENODATA;
        if (r >= 0)
                r = plan_kernel_cmdline(s, &rest);
        if (r >= 0)
                r = strbuf_addf(&sb, " ro%s%s", *rest ? " " : "", rest);
        if (r < 0)
                return r;
        char *t = strbuf_detach(&sb);
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

static const struct plan_step *find_step(const struct plan *p, enum plan_step_kind kind, const void *obj) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == kind && p->steps[i].obj == obj)
                        return &p->steps[i];
        return NULL;
}

/* luks-bind per volume with unlock pins, then the boot loader */
static int emit_boot(struct builder *b) {
        const struct spec *s = b->spec;
        const char *target = kiln_paths.target;
        char shown[URL_DISPLAY_MAX];
        int r;
        for (size_t i = 0; i < s->n_luks; i++) {
                const struct spec_luks *x = &s->luks[i];
                if (!x->unlock.n_tang)
                        continue;
                _cleanup_strbuf_ struct strbuf pins = STRBUF_INIT;
                for (size_t k = 0; k < x->unlock.n_tang; k++)
                        if ((r = strbuf_addf(&pins, "%stang %s (thp %.12s)", k ? ", " : "",
                                             url_display(x->unlock.tang[k].url, shown), x->unlock.tang[k].thp)) < 0)
                                return r;
                _cleanup_free_ char *how = x->unlock.n_tang == 1
                        ? strdup(strbuf_str(&pins))
                        : strdupf("sss, %u of: %s", x->unlock.threshold, strbuf_str(&pins));
                if (!how)
                        return -ENOMEM;
                /* one bind per LUKS header: a luks on N disks is N headers, each bound */
                size_t n0 = b->plan->n_steps;
                for (size_t j = 0; j < n0; j++) {
                        const struct plan_step *f = &b->plan->steps[j];
                        if (f->kind != PLAN_LUKS_FORMAT || f->obj != x || !f->device)
                                continue;
                        _cleanup_free_ char *dev = strdup(f->device);
                        unsigned index = f->index;
                        if (!dev)
                                return -ENOMEM;
                        if ((r = step_emit(b, PLAN_LUKS_BIND, x->id, x, index, NULL, 0, false, dev,
                                           strdupf("bind %s (luks '%s') to %s with clevis's %s pin in process "
                                                   "(a new keyslot with a random key, LUKS2 token 'clevis'; the spec's key stays "
                                                   "as the recovery keyslot), then prove it: the pin alone must open the new keyslot",
                                                   dev, x->id, how, x->unlock.n_tang == 1 ? "tang" : "sss"), NULL)) < 0)
                                return r;
                        last_step(b)->bind = x;
                }
        }
        if (!s->boot.present)
                return 0;
        _cleanup_strv_free_ char **rules = NULL, **disks = NULL;
        if ((r = spec_boot_disks(s, &rules)) < 0)
                return r;
        for (size_t i = 0; i < b->plan->n_disks; i++) {
                const struct plan_disk *d = &b->plan->disks[i];
                if (d->rule && d->rule->id && strv_contains(rules, d->rule->id) && d->disk && d->disk->path &&
                    (r = strv_pushdup(&disks, d->disk->path)) < 0)
                        return r;
        }
        /* BIOS boot from a disk with 4096-byte logical sectors: GRUB's i386-pc
         * core and the BIOS disk services read 512-byte sectors (SeaBIOS in
         * tests/rig/test-hw-4kn.sh never started GRUB); 4Kn disks boot by UEFI */
        for (size_t i = 0; s->boot.firmware != SPEC_FIRMWARE_UEFI && i < b->plan->n_disks; i++) {
                const struct plan_disk *d = &b->plan->disks[i];
                if (!d->disk || !d->disk->path || !strv_contains(disks, d->disk->path) ||
                    !d->disk->logical_sector || d->disk->logical_sector == 512)
                        continue;
                if ((r = refuse_disk(b, s->boot.firmware_mark, d->rule->id,
                                     d->disk->path, "boot firmware '%s' needs BIOS boot from %s, which has %u-byte logical "
                                     "sectors: GRUB's BIOS boot reads 512-byte sectors, so a 4Kn disk boots only by UEFI "
                                     "(firmware: uefi)", s->boot.firmware == SPEC_FIRMWARE_BOTH ? "both" : "bios",
                                     d->disk->path, d->disk->logical_sector)) < 0)
                        return r;
        }
        _cleanup_free_ char *cmdline = NULL;
        if ((r = plan_kernel_cmdline(s, &cmdline)) < 0)
                return r;
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT, list = STRBUF_INIT;
        for (size_t i = 0; disks && disks[i]; i++)
                if ((r = strbuf_addf(&list, "%s%s", i ? " " : "", disks[i])) < 0)
                        return r;
        enum spec_firmware fw = s->boot.firmware;
        r = strbuf_addf(&t, "this node's crypttab and mdadm.conf appended to the image's generic initramfs "
                        "(an image without one: update-initramfs -u -k all); in a chroot of %s (/dev /proc /sys /run bound):",
                        target);
        if (r == 0 && fw != SPEC_FIRMWARE_UEFI) {
                r = strbuf_addf(&t, " grub-install i386-pc on %s", disks && disks[0] ? disks[0] : "the first boot disk");
                for (size_t i = 1; r == 0 && disks && disks[i]; i++)
                        r = strbuf_addf(&t, "%s%s", i == 1 ? ", its boot code on " : " ", disks[i]);
                if (r == 0)
                        r = strbuf_addf(&t, " (%sdebconf grub-pc/install_devices: %s);",
                                        disks && disks[0] && disks[1] ?
                                        "copied where the BIOS boot partition lies alike, else grub-bios-setup; " : "",
                                        strbuf_str(&list));
        }
        if (r == 0 && fw != SPEC_FIRMWARE_BIOS) {
                const struct spec_filesystem *esp = spec_esp_filesystem(s);
                const struct plan_step *m = esp ? find_step(b->plan, PLAN_MOUNT, esp) : NULL;
                r = strbuf_addf(&t, " grub-install x86_64-efi into /boot/efi (%s, on %s) at EFI/BOOT/BOOTX64.EFI, "
                                "no NVRAM entry;", m && m->device ? m->device : "the ESP", strbuf_str(&list));
        }
        if (r == 0)
                r = strbuf_addf(&t, " GRUB_CMDLINE_LINUX '%s', GRUB_TIMEOUT %u; grub.cfg for the generic initramfs's "
                                "kernels (an image without one: update-grub)", cmdline, s->boot.timeout);
        if (r < 0)
                return r;
        struct plan_step *st = step_add(b, PLAN_BOOTLOADER, NULL, &s->boot, 0);
        if (st)
                st->boot = &s->boot;
        if (!st)
                return -ENOMEM;
        st->inputs = TAKE_PTR(disks);
        return step_text(st, NULL, strdupf("boot loader: %s", strbuf_str(&t)), NULL);
}

static int emit_tail(struct builder *b) {
        const struct spec *s = b->spec;
        const char *target = kiln_paths.target;
        char shown[URL_DISPLAY_MAX];   /* URLs in the plan: no userinfo, no query string */
        int r;
        if (s->image.present) {
                const struct spec_image *im = &s->image;
                const char *dev = NULL;
                if (im->format == SPEC_IMAGE_RAW) {
                        struct node *n;
                        if ((r = ref_one(b, "image", "raw", im->target, im->target_ref, im->mark, &n)) < 0)
                                return r;
                        if (b->f.invalid)
                                return 0;
                        dev = n->devs[0];
                }
                if (dev)
                        r = step_emit(b, PLAN_IMAGE, NULL, im, 0, NULL, 0, false, dev,
                                      strdupf("write raw image %s (sha256 %.12s) to %s", url_display(im->url, shown),
                                              im->sha256 ? im->sha256 : "none", dev),
                                      strdupf("contents of %s", dev));
                else
                        r = step_emit(b, PLAN_IMAGE, NULL, im, 0, NULL, 0, false, NULL,
                                      strdupf("unpack tar image %s (sha256 %.12s) into %s", url_display(im->url, shown),
                                              im->sha256 ? im->sha256 : "none", target), NULL);
                if (r < 0)
                        return r;
        }
        bool swap_crypt = false;
        for (size_t i = 0; i < s->n_filesystems; i++)
                swap_crypt |= s->filesystems[i].encrypt_random;
        if ((r = step_emit(b, PLAN_CONFIGURE, NULL, s, 0, NULL, 0, false, NULL,
                           strdupf("configure %s: fstab%s%s, hostname '%s', boot counter", target, s->n_luks || swap_crypt ? ", crypttab" : "",
                                   s->n_raids ? ", mdadm.conf and the initramfs' degraded start" : "",
                                   b->plan->hostname ? b->plan->hostname : b->plan->hostname_template ? b->plan->hostname_template : ""), NULL)) < 0)
                return r;
        if (b->plan->net) {
                _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
                if ((r = netconf_describe(b->plan->net, &t)) < 0 ||
                    (r = step_emit(b, PLAN_NETWORK, NULL, &s->network, 0, NULL, 0, false, NULL,
                                   strdupf("write systemd-networkd files to %s" NETCONF_DIR ": %s", target,
                                           strbuf_str(&t)), NULL)) < 0)
                        return r;
        }
        if ((r = emit_boot(b)) < 0)
                return r;
        const struct spec_cloudstack *c = &s->cloudstack;
        if (c->present &&
            (r = step_emit(b, PLAN_REGISTER, NULL, c, 0, NULL, 0, false, NULL,
                           strdupf("install kiln-register.service: addHost with CloudStack at %s (zone %s, pod %s, cluster %s) "
                                   "from the installed system's first boot", url_display(c->endpoint, shown),
                                   c->zone ? c->zone : "-", c->pod ? c->pod : "-", c->cluster ? c->cluster : "-"), NULL)) < 0)
                return r;
        if (s->webhook.present &&
            (r = step_emit(b, PLAN_REGISTER, NULL, &s->webhook, 1, NULL, 0, false, NULL,
                           strdupf("report to webhook %s%s", url_display(s->webhook.url, shown),
                                   s->webhook.hmac_key ? " (HMAC signed)" : ""), NULL)) < 0)
                return r;
        /* the finished-install mark (mark.h) on every disk this plan partitions: its inputs */
        _cleanup_strv_free_ char **marked = NULL;
        _cleanup_strbuf_ struct strbuf disks = STRBUF_INIT;
        for (size_t i = 0; i < b->plan->n_steps; i++) {
                const struct plan_step *st = &b->plan->steps[i];
                if (st->kind == PLAN_PARTITION && st->device &&
                    ((r = strv_pushdup(&marked, st->device)) < 0 ||
                     (r = strbuf_addf(&disks, "%s%s", disks.len ? " " : "", st->device)) < 0))
                        return r;
        }
        const char *fin = s->finish == SPEC_FINISH_REBOOT ? "reboot" :
                          s->finish == SPEC_FINISH_POWEROFF ? "power off" : "stay up (finish: none)";
        if ((r = step_emit(b, PLAN_FINISH, NULL, s, 0, NULL, 0, false, NULL,
                           marked ? strdupf("mark %s as a finished kiln install (GPT disk GUID), then %s",
                                            strbuf_str(&disks), fin) : strdup(fin), NULL)) < 0)
                return r;
        b->plan->steps[b->plan->n_steps - 1].inputs = TAKE_PTR(marked);
        return 0;
}

/* --- fingerprint ------------------------------------------------------------ */

static const char *nz(const char *s) {
        return s ? s : "-";
}

/* A disk is known by its serial or WWN; a disk without either (a loop
 * device, some virtual disks) by its path. */
static int fp_disk(struct strbuf *t, const struct plan_disk *pd) {
        const struct inv_disk *d = pd->disk;
        bool named = !strempty(d->serial) || !strempty(d->wwn);
        return strbuf_addf(t, "disk %s %u size=%" PRIu64 " serial=%s wwn=%s model=%s path=%s\n", pd->rule->id, pd->index,
                           d->size, nz(d->serial), nz(d->wwn), nz(d->model), named ? "-" : disk_path(d));
}

static int fp_step(struct strbuf *t, const struct plan_step *st) {
        int r = strbuf_addf(t, "%s %s %u size=%" PRIu64, plan_step_kind_name(st->kind), nz(st->id), st->index, st->size);
        for (size_t k = 0; r >= 0 && k < st->n_parts; k++) {
                const struct plan_part *pp = &st->parts[k];
                r = strbuf_addf(t, " part=%u:%s:%s:%s:%" PRIu64 ":%" PRIu64, pp->number, pp->part->id,
                                spec_part_type_name(pp->part->type), nz(pp->part->name), pp->start, pp->size);
        }
        if (r < 0)
                return r;
        switch (st->kind) {
        case PLAN_MD_CREATE: {
                const struct spec_raid *x = st->obj;
                r = strbuf_addf(t, " name=%s level=%u layout=%s chunk=%" PRIu64 " metadata=%s bitmap=%s spares=%u members=%zu",
                                x->name, x->level, nz(x->layout), x->chunk, nz(x->metadata), nz(x->bitmap), x->spares,
                                strv_length(st->inputs));
                break;
        }
        case PLAN_LUKS_FORMAT: {
                const struct spec_luks *x = st->obj;
                r = strbuf_addf(t, " name=%s on=%s cipher=%s key_size=%u sector=%u label=%s key=%s", x->name, nz(x->on),
                                nz(x->cipher), x->key_size, x->sector_size, nz(x->label), spec_luks_key_name(x));
                break;
        }
        case PLAN_VGCREATE: {
                const struct spec_vg *x = st->obj;
                r = strbuf_addf(t, " name=%s extent=%" PRIu64 " pvs=%zu", x->name, x->extent_size, strv_length(st->inputs));
                break;
        }
        case PLAN_LVCREATE: {
                const struct spec_lv *x = st->obj;
                r = strbuf_addf(t, " name=%s vg=%s kind=%d bytes=%" PRIu64 " pct=%u", x->name, nz(x->vg), (int) x->size.kind,
                                x->size.bytes, x->size.percent);
                break;
        }
        case PLAN_MKFS: case PLAN_MOUNT: {
                const struct spec_filesystem *f = st->obj;
                r = strbuf_addf(t, " type=%s label=%s mount=%s options=%s", spec_fs_type_name(f->type), nz(f->label),
                                nz(f->mount), nz(f->mount_options));
                for (size_t k = 0; r >= 0 && f->mkfs_options && f->mkfs_options[k]; k++)
                        r = strbuf_addf(t, " mkfs=%s", f->mkfs_options[k]);
                break;
        }
        default:
                break;
        }
        return r < 0 ? r : strbuf_adds(t, "\n");
}

/* The text the fingerprint hashes (kept so a test can show what differs). */
static int plan_fingerprint_text(const struct plan *p, struct strbuf *t) {
        int r = strbuf_adds(t, "kiln-plan-fingerprint 1\n");
        if (r >= 0 && p->spec->layout)
                r = strbuf_addf(t, "layout %s\n", p->spec->layout);
        for (size_t i = 0; r >= 0 && i < p->n_disks; i++)
                r = fp_disk(t, &p->disks[i]);
        for (size_t i = 0; r >= 0 && i < p->n_steps; i++) {
                const struct plan_step *st = &p->steps[i];
                if (plan_step_is_storage(st->kind) && st->kind != PLAN_BENCH_RAW && st->kind != PLAN_BENCH_CRYPT)
                        r = fp_step(t, st);
        }
        return r;
}

static int plan_fingerprint(struct plan *p) {
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        int r = plan_fingerprint_text(p, &t);
        if (r < 0)
                return r;
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned len = 0;
        if (!EVP_Digest(t.buf ? t.buf : "", t.len, md, &len, EVP_sha256(), NULL) || len != 32)
                return -EIO;
        for (unsigned i = 0; i < len; i++)
                snprintf(p->fingerprint + 2 * i, 3, "%02x", md[i]);
        return 0;
}

int plan_build(const struct spec *spec, const struct inventory *inv, struct plan **ret, struct diags *diags) {
        return plan_build_full(spec, inv, 0, ret, diags);
}

void plan_spec_vars(const struct inventory *inv, struct spec_vars *ret) {
        *ret = (struct spec_vars) {
                .mac = inventory_primary_mac(inv),
                .uuid = spec_value_is_placeholder(inv->machine_uuid) ? NULL : inv->machine_uuid,
                .serial = spec_value_is_placeholder(inv->serial) ? NULL : inv->serial,
                .hostname = inv->hostname,
        };
}

const struct spec_node *plan_node_row(const struct spec *spec, const struct inventory *inv) {
        const char *mac = inventory_primary_mac(inv);
        const char *serial = spec_value_is_placeholder(inv->serial) ? NULL : inv->serial;
        const struct spec_node *by_serial = NULL, *def = NULL;
        for (size_t i = 0; i < spec->n_nodes; i++) {
                const struct spec_node *x = &spec->nodes[i];
                if (x->by == SPEC_NODE_MAC && mac && strcasecmp(x->key, mac) == 0)
                        return x;
                if (x->by == SPEC_NODE_SERIAL && serial && !by_serial && streq(x->key, serial))
                        by_serial = x;
                if (x->by == SPEC_NODE_DEFAULT && !def)
                        def = x;
        }
        return by_serial ? by_serial : def;
}

int plan_build_full(const struct spec *spec, const struct inventory *inv, unsigned flags, struct plan **ret,
                    struct diags *diags) {
        _cleanup_plan_free_ struct plan *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->spec = spec;
        p->inv = inv;
        struct builder b = { .spec = spec, .inv = inv, .diags = diags, .plan = p, .f = { diags, spec->file },
                             .allow_signatures = flags & PLAN_ALLOW_SIGNATURES,
                             .disk_rules_only = flags & PLAN_DISK_RULES_ONLY };
        _cleanup_free_ const char **fsdevs = calloc(spec->n_filesystems ? spec->n_filesystems : 1, sizeof *fsdevs);
        int r = fsdevs ? 0 : -ENOMEM;

        p->node = plan_node_row(spec, inv);
        p->hostname_template = p->node && p->node->hostname ? p->node->hostname : spec->hostname;
        struct spec_mark hostname_mark = p->node && p->node->hostname ? p->node->hostname_mark : spec->hostname_mark;
        if (r >= 0 && p->hostname_template && !b.disk_rules_only) {
                struct spec_vars vars;
                plan_spec_vars(inv, &vars);
                r = spec_expand(p->hostname_template, &vars, &p->hostname, &p->hostname_missing);
                if (r == -ENODATA || r == -EINVAL) {
                        r = 0;  /* a value the inventory lacks: shown unexpanded */
                        if (p->hostname_missing && streq(p->hostname_missing, "serial") && inv->serial)
                                p->hostname_placeholder = inv->serial;
                        else if (p->hostname_missing && streq(p->hostname_missing, "uuid") && inv->machine_uuid)
                                p->hostname_placeholder = inv->machine_uuid;
                }
                const char *why = p->hostname ? spec_hostname_problem(p->hostname) : NULL;
                if (r >= 0 && why)
                        r = invalid(&b, hostname_mark, "hostname '%s' becomes '%s' on this machine, which is not a host name (RFC 1123): it %s",
                                    p->hostname_template, p->hostname, why);
        }

        if (r >= 0 && spec->network.present && !b.disk_rules_only) {
                r = netconf_build(spec, inv, &p->net, diags);
                if (r == -EPERM || r == -EINVAL) {
                        if (r == -EPERM)
                                b.f.refused++;
                        else
                                b.f.invalid++;
                        r = 0;
                }
        }
        if (r >= 0)
                r = select_disks(&b);
        if (r >= 0 && b.disk_rules_only) {
                free(b.sorted);
                return b.f.refused ? -EPERM : 0;
        }
        if (r >= 0 && !b.f.refused)
                r = warn_serial_twins(&b);
        if (r >= 0 && !b.f.refused)
                r = make_nodes(&b);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_wipes(&b);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_partitions(&b);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_graph(&b);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_mkfs(&b, fsdevs);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_mounts(&b, fsdevs);
        if (r >= 0 && !b.f.refused && !b.f.invalid)
                r = emit_tail(&b);

        nodes_free(&b);
        free(b.sorted);
        if (r < 0 || (r = plan_findings_result(&b.f)) < 0)
                return r;
        r = plan_fingerprint(p);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* --- output ---------------------------------------------------------------- */

static const struct plan_disk *plan_disk_of(const struct plan *p, const struct inv_disk *d) {
        for (size_t i = 0; i < p->n_disks; i++)
                if (p->disks[i].disk == d)
                        return &p->disks[i];
        return NULL;
}

static int cmp_const_disk(const void *a, const void *b) {
        return cmp_disk_path(a, b);
}

static const struct inv_disk **sorted_disks(const struct inventory *inv) {
        const struct inv_disk **v = calloc(inv->n_disks ? inv->n_disks : 1, sizeof *v);
        if (!v)
                return NULL;
        for (size_t i = 0; i < inv->n_disks; i++)
                v[i] = &inv->disks[i];
        qsort(v, inv->n_disks, sizeof *v, cmp_const_disk);
        return v;
}

int plan_losses_text(const struct plan *p, struct strbuf *out) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->n_disks; i++) {
                const struct inv_disk *d = p->disks[i].disk;
                const struct plan_step *wipe = NULL;
                for (size_t j = 0; j < p->n_steps; j++)
                        if (p->steps[j].kind == PLAN_WIPE && p->steps[j].device && streq(p->steps[j].device, disk_path(d)))
                                wipe = &p->steps[j];
                r = strbuf_addf(out, "  %s (%s", disk_path(d), APPROX(d->size));
                if (r >= 0 && !strempty(d->model))
                        r = strbuf_addf(out, ", model '%s'", d->model);
                if (r >= 0 && !strempty(d->serial))
                        r = strbuf_addf(out, ", serial '%s'", d->serial);
                if (r >= 0)
                        r = strbuf_addf(out, "; disk rule '%s'): everything on it", p->disks[i].rule->id);
                if (r >= 0 && wipe && wipe->destroys)
                        r = strbuf_addf(out, ", which now holds %s", wipe->destroys);
                if (r >= 0)
                        r = strbuf_adds(out, wipe ? "\n" : " (no signatures found)\n");
        }
        return r;
}

/* ", by match alternative #2 of 3" for a disk whose rule has alternatives, else "". */
static const char *alt_text(const struct plan_disk *pd, char *buf, size_t len) {
        if (!pd->alt)
                return "";
        (void) snprintf(buf, len, ", by match alternative #%u of %zu", pd->alt, pd->rule->n_alts);
        return buf;
}

int plan_to_text(const struct plan *p, struct strbuf *out) {
        const struct spec *s = p->spec;
        char alt[64];
        _cleanup_free_ const struct inv_disk **disks = sorted_disks(p->inv);
        if (!disks)
                return -ENOMEM;
        int r = strbuf_addf(out, "fingerprint: %s\nmode: %s%s%s%s\n", p->fingerprint, p->resume ? "resume" : "fresh install",
                            p->mode_why ? " (" : "", p->mode_why ? p->mode_why : "", p->mode_why ? ")" : "");
        if (r >= 0 && s->layout)
                r = strbuf_addf(out, "layout: %s\n", s->layout);
        for (size_t i = 0; r >= 0 && i < p->n_misses; i++)
                r = strbuf_addf(out, "  layout '%s' does not fit: %s\n", p->misses[i].layout, p->misses[i].reason);
        if (r < 0)
                return r;
        const char *ht = p->hostname_template;
        if (s->n_nodes && p->node)
                r = strbuf_addf(out, "node: row '%s' of nodes (line %u%s)\n", p->node->key, p->node->mark.line,
                                p->node->by == SPEC_NODE_MAC ? ", by the boot MAC" :
                                p->node->by == SPEC_NODE_SERIAL ? ", by the serial" : ": no row for this machine's MAC or serial");
        else if (s->n_nodes)
                r = strbuf_adds(out, "node: no row of nodes for this machine's MAC or serial, and no default row: the spec's values\n");
        if (r < 0)
                return r;
        if (p->hostname && ht && !streq(p->hostname, ht))
                r = strbuf_addf(out, "hostname: %s (from '%s')\ndisks:\n", p->hostname, ht);
        else if (p->hostname || !ht)
                r = strbuf_addf(out, "hostname: %s\ndisks:\n", p->hostname ? p->hostname : "");
        else if (p->hostname_placeholder)
                r = strbuf_addf(out, "hostname: '%s' (not expanded: the inventory's %s '%s' is a placeholder)\ndisks:\n",
                                ht, p->hostname_missing, p->hostname_placeholder);
        else
                r = strbuf_addf(out, "hostname: '%s' (not expanded: the inventory has no %s)\ndisks:\n", ht,
                                p->hostname_missing ? p->hostname_missing : "value for it");
        for (size_t i = 0; r >= 0 && i < p->inv->n_disks; i++) {
                const struct inv_disk *d = disks[i];
                const struct plan_disk *pd = plan_disk_of(p, d);
                r = strbuf_addf(out, "  %s  %s", disk_path(d), APPROX(d->size));
                if (r >= 0 && !strempty(d->transport))
                        r = strbuf_addf(out, "  %s", d->transport);
                if (r >= 0)
                        r = strbuf_adds(out, d->rotational ? "  hdd" : "  ssd");
                if (r >= 0 && !strempty(d->model))
                        r = strbuf_addf(out, "  model '%s'", d->model);
                if (r >= 0 && !strempty(d->serial))
                        r = strbuf_addf(out, "  serial '%s'", d->serial);
                if (r >= 0 && pd)
                        r = strbuf_addf(out, ": disk rule '%s' #%u%s%s\n", pd->rule->id, pd->index,
                                        alt_text(pd, alt, sizeof alt), pd->rule->wipe ? " (wipe allowed)" : "");
                else if (r >= 0)
                        r = strbuf_adds(out, ": untouched\n");
        }
        if (r >= 0)
                r = strbuf_addf(out, "steps:\n");
        for (size_t i = 0; r >= 0 && i < p->n_steps; i++) {
                const struct plan_step *st = &p->steps[i];
                r = strbuf_addf(out, "%3zu  %-11s  %s\n", i + 1, plan_step_kind_name(st->kind), st->description ? st->description : "");
                int wname = 0;
                for (size_t k = 0; k < st->n_parts; k++) {
                        const struct spec_partition *sp = st->parts[k].part;
                        int l = (int) strlen(sp->name) + 2;
                        wname = l > wname ? l : wname;
                }
                for (size_t k = 0; r >= 0 && k < st->n_parts; k++) {
                        const struct plan_part *pp = &st->parts[k];
                        _cleanup_free_ char *q = strdupf("'%s'", pp->part->name);
                        if (!q)
                                return -ENOMEM;
                        r = strbuf_addf(out, "                   %s  %-9s  %-*s  start %s  size %s\n", pp->device,
                                        spec_part_type_name(pp->part->type), wname, q, SIZE(pp->start), SIZE(pp->size));
                }
                if (r >= 0 && st->destroys)
                        r = strbuf_addf(out, "                 destroys: %s\n", st->destroys);
        }
        return r;
}

static json_object *json_destroyed_item(const char *what, const char *device, int *r) {
        json_object *o = json_object_new_object();
        json_set_str(o, "what", what, r);
        json_set_str(o, "device", device, r);
        return o;
}

static void json_signature(json_object *a, const struct inv_signature *sig, const char *device, int *r) {
        json_object *o = json_destroyed_item("signature", device, r);
        json_set_str(o, "type", sig->type, r);
        json_set_str(o, "usage", sig->usage, r);
        json_set(o, "offset", json_object_new_uint64(sig->offset), r);
        json_append(a, json_done(o, *r), r);
}

/* What a step destroys, as data (docs/plan.md "JSON"): the signatures a
 * wipe removes (device, type, usage, offset) and the holders it stops, all
 * data on a disk a new GPT replaces, the contents of the devices other steps
 * overwrite. */
static json_object *json_destroyed(const struct plan *p, const struct plan_step *st, int *r) {
        json_object *a = json_object_new_array();
        if (!st->destroys)
                return a;
        const struct inv_disk *d = NULL;
        for (size_t i = 0; i < p->n_disks; i++)
                if (st->device && streq(disk_path(p->disks[i].disk), st->device))
                        d = p->disks[i].disk;
        switch (st->kind) {
        case PLAN_WIPE:
                for (size_t i = 0; d && i < d->n_sigs; i++)
                        json_signature(a, &d->sigs[i], disk_path(d), r);
                for (size_t k = 0; d && k < d->n_parts; k++)
                        for (size_t i = 0; i < d->parts[k].n_sigs; i++)
                                json_signature(a, &d->parts[k].sigs[i], d->parts[k].path ? d->parts[k].path : d->parts[k].name, r);
                for (size_t i = 0; st->inputs && st->inputs[i]; i++)
                        json_append(a, json_done(json_destroyed_item("holder", st->inputs[i], r), *r), r);
                break;
        case PLAN_PARTITION: {
                json_object *o = json_destroyed_item("all-data", st->device, r);
                json_set(o, "size", json_object_new_uint64(d ? d->size : st->size), r);
                json_append(a, json_done(o, *r), r);
                break;
        }
        case PLAN_MD_CREATE:
                for (size_t i = 0; st->inputs && st->inputs[i]; i++)
                        json_append(a, json_done(json_destroyed_item("contents", st->inputs[i], r), *r), r);
                break;
        default:
                json_append(a, json_done(json_destroyed_item("contents", st->device, r), *r), r);
                break;
        }
        return a;
}

static json_object *json_disk(const struct plan *p, const struct inv_disk *d, int *r) {
        const struct plan_disk *pd = plan_disk_of(p, d);
        json_object *o = json_object_new_object();
        json_set_str(o, "path", disk_path(d), r);
        json_set(o, "size", json_object_new_uint64(d->size), r);
        json_set(o, "selected", json_object_new_boolean(pd != NULL), r);
        /* its identity, untouched or not: which physical disk this is */
        json_set_str(o, "model", strempty(d->model) ? NULL : d->model, r);
        json_set_str(o, "serial", strempty(d->serial) ? NULL : d->serial, r);
        json_set_str(o, "wwn", strempty(d->wwn) ? NULL : d->wwn, r);
        json_set_str(o, "transport", strempty(d->transport) ? NULL : d->transport, r);
        json_set(o, "rotational", json_object_new_boolean(d->rotational), r);
        if (pd) {
                json_set_str(o, "rule", pd->rule->id, r);
                json_set(o, "index", json_object_new_uint64(pd->index), r);
                json_set(o, "wipe", json_object_new_boolean(pd->rule->wipe), r);
                if (pd->alt)    /* only for a rule with match alternatives: the one that won */
                        json_set(o, "match", json_object_new_uint64(pd->alt), r);
        }
        return json_done(o, *r);
}

static json_object *json_crypt(const struct plan_crypt *c, int *r) {
        json_object *o = json_object_new_object();
        json_set_str(o, "cipher", c->cipher, r);
        json_set(o, "key_size", json_object_new_uint64(c->key_size), r);
        json_set(o, "sector_size", json_object_new_uint64(c->sector_size), r);
        json_set(o, "no_read_workqueue", json_object_new_boolean(c->no_read_workqueue), r);
        json_set(o, "no_write_workqueue", json_object_new_boolean(c->no_write_workqueue), r);
        json_set(o, "discard", json_object_new_boolean(c->discard), r);
        return json_done(o, *r);
}

static json_object *json_strv(char *const *v, int *r) {
        json_object *a = json_object_new_array();
        for (size_t k = 0; v && v[k]; k++)
                json_append(a, json_object_new_string(v[k]), r);
        return json_done(a, *r);
}

/* What the step's executor runs, as plan_build decided it (plan.h, by kind). */
static void json_payload(json_object *o, const struct plan_step *st, int *r) {
        json_object *x = NULL;
        const char *key = NULL;
        switch (st->kind) {
        case PLAN_LUKS_FORMAT: case PLAN_LUKS_OPEN: {
                const struct plan_luks *l = &st->luks;
                key = "luks";
                x = json_object_new_object();
                json_set_str(x, "backing", l->backing, r);
                json_set_str(x, "name", l->name, r);
                /* tuned_by: the bench-raw step (its "n") whose choice replaces these at run time */
                json_set(x, "crypt", json_crypt(&l->crypt, r), r);
                if (l->tuned_by)
                        json_set(x, "tuned_by", json_object_new_uint64(l->tuned_by), r);
                if (st->kind == PLAN_LUKS_FORMAT) {
                        json_set_str(x, "label", l->label, r);
                        json_set_str(x, "pbkdf", spec_pbkdf_type_name(l->pbkdf), r);
                        json_set(x, "pbkdf_time_ms", json_object_new_uint64(l->pbkdf_time_ms), r);
                        json_set(x, "pbkdf_iterations", json_object_new_uint64(l->pbkdf_iterations), r);
                        json_set(x, "pbkdf_max_memory", json_object_new_uint64(l->pbkdf_max_memory), r);
                        json_set(x, "pbkdf_parallel", json_object_new_uint64(l->pbkdf_parallel), r);
                        json_set_str(x, "crypttab_options", l->crypttab_options, r);
                }
                break;
        }
        case PLAN_BENCH_RAW:
                key = "bench";
                x = json_object_new_object();
                json_set(x, "tune", json_object_new_boolean(st->bench.policy && st->bench.policy->tune), r);
                json_set(x, "candidates", json_strv(st->bench.ciphers, r), r);
                json_set(x, "spec", json_crypt(&st->bench.want, r), r);
                break;
        case PLAN_MKFS:
                key = "mkfs";
                x = json_object_new_object();
                json_set_str(x, "type", spec_fs_type_name(st->fs.type), r);
                json_set_str(x, "label", st->fs.label, r);
                json_set(x, "options", json_strv(st->fs.mkfs_options, r), r);
                json_set(x, "blank", json_object_new_boolean(st->fs.blank), r);
                if (st->fs.blank) {
                        json_set_str(x, "swap_name", st->fs.swap_name, r);
                        json_set(x, "swap_by_partuuid", json_object_new_boolean(st->fs.swap_by_partuuid), r);
                        json_set_str(x, "crypttab_options", st->fs.crypttab_options, r);
                }
                if (st->fs.fstab_options)
                        json_set_str(x, "fstab_options", st->fs.fstab_options, r);
                break;
        case PLAN_MOUNT:
                key = "mount";
                x = json_object_new_object();
                json_set_str(x, "path", st->fs.mountpoint, r);
                json_set_str(x, "type", spec_fs_type_name(st->fs.type), r);
                json_set_str(x, "options", st->fs.options, r);
                json_set_str(x, "inspect_options", st->fs.inspect_options, r);
                json_set_str(x, "fstab_options", st->fs.fstab_options, r);
                json_set(x, "fsck_pass", json_object_new_uint64(st->fs.fsck_pass), r);
                break;
        case PLAN_MD_CREATE: case PLAN_MD_ASSEMBLE:
                key = "md";
                x = json_object_new_object();
                json_set_str(x, "name", st->md.name, r);
                if (st->kind == PLAN_MD_CREATE) {
                        json_set(x, "level", json_object_new_uint64(st->md.level), r);
                        json_set_str(x, "layout", st->md.layout, r);
                        json_set(x, "chunk", json_object_new_uint64(st->md.chunk), r);
                        json_set_str(x, "metadata", st->md.metadata, r);
                        json_set_str(x, "bitmap", st->md.bitmap, r);
                        json_set(x, "spares", json_object_new_uint64(st->md.spares), r);
                        json_set(x, "assume_clean", json_object_new_boolean(st->md.assume_clean), r);
                }
                break;
        case PLAN_VGCREATE: case PLAN_VG_ACTIVATE:
                key = "vg";
                x = json_object_new_object();
                json_set_str(x, "name", st->vg.name, r);
                if (st->kind == PLAN_VGCREATE)
                        json_set(x, "extent_size", json_object_new_uint64(st->vg.extent_size), r);
                else
                        json_set(x, "lv_nodes", json_strv(st->vg.lv_nodes, r), r);
                break;
        default:
                return;
        }
        json_set(o, key, json_done(x, *r), r);
}

static json_object *json_step(const struct plan *p, const struct plan_step *st, size_t n, int *r) {
        json_object *o = json_object_new_object();
        json_set(o, "n", json_object_new_uint64(n), r);
        json_set_str(o, "kind", plan_step_kind_name(st->kind), r);
        json_set_str(o, "id", st->id, r);
        json_set(o, "index", json_object_new_uint64(st->index), r);
        json_set_str(o, "device", st->device, r);
        json_object *inputs = json_object_new_array();
        for (size_t k = 0; st->inputs && st->inputs[k]; k++)
                json_append(inputs, json_object_new_string(st->inputs[k]), r);
        json_set(o, "inputs", inputs, r);
        if (st->size) {
                json_set(o, "size", json_object_new_uint64(st->size), r);
                json_set(o, "size_approx", json_object_new_boolean(st->size_approx), r);
        }
        if (st->parts) {
                json_object *parts = json_object_new_array();
                for (size_t k = 0; k < st->n_parts; k++) {
                        const struct plan_part *pp = &st->parts[k];
                        json_object *x = json_object_new_object();
                        json_set(x, "number", json_object_new_uint64(pp->number), r);
                        json_set_str(x, "id", pp->part->id, r);
                        json_set_str(x, "device", pp->device, r);
                        json_set_str(x, "type", spec_part_type_name(pp->part->type), r);
                        json_set_str(x, "name", pp->part->name, r);
                        json_set(x, "start", json_object_new_uint64(pp->start), r);
                        json_set(x, "size", json_object_new_uint64(pp->size), r);
                        json_append(parts, json_done(x, *r), r);
                }
                json_set(o, "partitions", parts, r);
        }
        if (st->kind == PLAN_SKIP_STAGE)
                json_set_str(o, "skips", plan_step_kind_name(st->skipped), r);
        if (st->uuid)
                json_set_str(o, "uuid", st->uuid, r);
        if (st->kind == PLAN_LVCREATE) {
                json_object *lv = json_object_new_object();
                json_set_str(lv, "vg", st->lv.vg, r);
                json_set_str(lv, "name", st->lv.name, r);
                json_set(lv, "bytes", json_object_new_uint64(st->lv.bytes), r);
                json_set(lv, "percent_free", json_object_new_uint64(st->lv.percent_free), r);
                json_set(o, "lv", lv, r);
        }
        json_payload(o, st, r);
        json_set_str(o, "description", st->description, r);
        json_set_str(o, "destroys", st->destroys, r);
        json_set(o, "destroyed", json_destroyed(p, st, r), r);
        return json_done(o, *r);
}

int plan_to_json(const struct plan *p, struct strbuf *out) {
        const struct spec *s = p->spec;
        _cleanup_free_ const struct inv_disk **disks = sorted_disks(p->inv);
        if (!disks)
                return -ENOMEM;
        _cleanup_json_ json_object *root = json_object_new_object();
        int r = 0;
        json_set_str(root, "hostname", p->hostname, &r);
        json_set_str(root, "hostname_template", p->hostname_template, &r);
        json_set_str(root, "fingerprint", p->fingerprint, &r);
        json_set_str(root, "mode", p->resume ? "resume" : "fresh", &r);
        json_set_str(root, "mode_why", p->mode_why, &r);
        if (s->n_nodes) {
                /* which row of nodes applied: by the boot MAC, the serial, the default row, or none */
                json_object *nj = json_object_new_object();
                json_set_str(nj, "row", p->node ? p->node->key : NULL, &r);
                json_set_str(nj, "by", !p->node ? "none" : p->node->by == SPEC_NODE_MAC ? "mac" :
                                       p->node->by == SPEC_NODE_SERIAL ? "serial" : "default", &r);
                if (p->node)
                        json_set(nj, "line", json_object_new_uint64(p->node->mark.line), &r);
                else
                        json_set_null(nj, "line", &r);
                json_set(root, "node", nj, &r);
        }
        if (s->layout) {
                json_set_str(root, "layout", s->layout, &r);
                json_object *mj = json_object_new_array();
                for (size_t i = 0; i < p->n_misses; i++) {
                        json_object *e = json_object_new_object();
                        json_set_str(e, "layout", p->misses[i].layout, &r);
                        json_set_str(e, "rule", p->misses[i].rule, &r);
                        json_set_str(e, "reason", p->misses[i].reason, &r);
                        json_append(mj, json_done(e, r), &r);
                }
                json_set(root, "layouts_not_fitting", mj, &r);
        }
        json_object *dj = json_object_new_array();
        for (size_t i = 0; i < p->inv->n_disks; i++)
                json_append(dj, json_disk(p, disks[i], &r), &r);
        json_set(root, "disks", dj, &r);
        json_object *sj = json_object_new_array();
        for (size_t i = 0; i < p->n_steps; i++)
                json_append(sj, json_step(p, &p->steps[i], i + 1, &r), &r);
        json_set(root, "steps", sj, &r);
        return r < 0 ? r : json_print(root, JSON_C_TO_STRING_PLAIN, true, out);
}
