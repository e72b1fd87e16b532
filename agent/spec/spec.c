/* Host spec v1: YAML tree (spec_yaml.c) -> struct spec, with every problem
 * collected as "file:line:col: message". The reference is docs/spec.md.
 *
 * This is the core: it parses the top level and hands each section to its
 * object family (spec_disks.c, spec_raid.c, spec_luks.c, spec_lvm.c,
 * spec_fs.c, spec_image.c, spec_boot.c, spec_bench.c, spec_register.c,
 * spec_network.c), indexes the objects by id, resolves the references
 * between them and runs the families' cross-checks in order. The readers of
 * typed values the families share are in spec_fields.c. */
#include "spec_internal.h"

#include "log.h"
#include "strbuf.h"
#include "url.h"

#include <ctype.h>
#include <inttypes.h>

static const struct {
        enum spec_obj_kind kind;
        const char *name;
} kind_names[] = {
        { SPEC_OBJ_DISK, "disk" },
        { SPEC_OBJ_PARTITION, "partition" },
        { SPEC_OBJ_RAID, "raid" },
        { SPEC_OBJ_LUKS, "luks" },
        { SPEC_OBJ_VG, "volume group" },
        { SPEC_OBJ_LV, "volume" },
};

const char *spec_kind_name(enum spec_obj_kind k) {
        for (size_t i = 0; i < ELEMENTSOF(kind_names); i++)
                if (kind_names[i].kind == k)
                        return kind_names[i].name;
        return "object";
}

/* ${mac:hexhyp} and ${mac:hexraw} are iPXE's spellings of the MAC without
 * colons (b0-26-28-4f-8a-10, b026284f8a10): the forms a host name can hold. */
static const char *const spec_vars[] = { "mac", "mac:hexhyp", "mac:hexraw", "uuid", "serial", "hostname", NULL };
#define SPEC_VARS_TEXT "${mac}, ${mac:hexhyp}, ${mac:hexraw}, ${uuid}, ${serial}, ${hostname}"

/* ${mac} ${uuid} ${serial} ${hostname} (and the ${mac} forms) are the only variables. */
bool spec_check_vars(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *s) {
        char f[256], t[QUOTE_MAX + 4];
        for (const char *p = s; (p = strstr(p, "${")); ) {
                const char *e = strchr(p + 2, '}');
                if (!e) {
                        emitn(c, v, "%s has an unterminated '${'", spec_field(l, key, f));
                        return false;
                }
                char name[32];
                size_t n = (size_t) (e - p - 2);
                bool known = false;
                if (n < sizeof name) {
                        memcpy(name, p + 2, n);
                        name[n] = 0;
                        for (size_t i = 0; spec_vars[i]; i++)
                                if (streq(spec_vars[i], name))
                                        known = true;
                }
                if (!known) {
                        char raw[QUOTE_MAX + 1];
                        size_t rn = n < QUOTE_MAX ? n : QUOTE_MAX;
                        memcpy(raw, p + 2, rn);
                        raw[rn] = 0;
                        emitn(c, v, "%s uses unknown variable '${%s}' (known: " SPEC_VARS_TEXT ")",
                              spec_field(l, key, f), spec_quote(raw, t));
                        return false;
                }
                p = e + 1;
        }
        return true;
}

const char *spec_hostname_problem(const char *h) {
        size_t n = strlen(h);
        if (n == 0)
                return "is empty";
        if (n > 253)
                return "is longer than 253 characters";
        for (const char *p = h; *p; p++)
                if (!isalnum((unsigned char) *p) && *p != '-' && *p != '.')
                        return "may hold only letters, digits, '-' and '.'";
        for (const char *p = h; ; ) {
                size_t len = strcspn(p, ".");
                if (len == 0)
                        return "has an empty label (a leading, trailing or doubled '.')";
                if (len > 63)
                        return "has a label longer than 63 characters";
                if (p[0] == '-' || p[len - 1] == '-')
                        return "has a label that starts or ends with '-'";
                if (!p[len])
                        break;
                p += len + 1;
        }
        return NULL;
}

/* The template is checked with every variable standing for one letter: what
 * is wrong then is wrong whatever the machine reports (the plan checks the
 * expanded name again). */
const char *spec_reinstall_problem(const char *t) {
        size_t n = t ? strlen(t) : 0;
        if (n == 0)
                return "is empty";
        if (n > SPEC_REINSTALL_MAX)
                return "is longer than 64 characters";
        for (const char *p = t; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("._:-", *p))
                        return "holds a character other than A-Z a-z 0-9 . _ : -";
        return NULL;
}

void spec_check_hostname(struct ctx *c, const struct ynode *v, const char *field, const char *h) {
        char t[QUOTE_MAX + 4];
        if (strstr(h, "${mac}")) {
                emitn(c, v, "%s uses ${mac}, whose ':' cannot be in a host name; "
                      "write ${mac:hexhyp} (b0-26-28-4f-8a-10) or ${mac:hexraw} (b026284f8a10)", field);
                return;
        }
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = 0;
        for (const char *p = h; r >= 0 && *p; p++) {
                const char *e = p[0] == '$' && p[1] == '{' ? strchr(p, '}') : NULL;
                if (e) {
                        /* the MAC forms have a known length; other values stand for one letter */
                        r = strbuf_adds(&sb, strncmp(p, "${mac:hexhyp}", 13) == 0 ? "b0-26-28-4f-8a-10" :
                                             strncmp(p, "${mac:hexraw}", 13) == 0 ? "b026284f8a10" : "x");
                        p = e;
                } else
                        r = strbuf_add(&sb, p, 1);
        }
        if (r < 0) {
                c->error = r;
                return;
        }
        const char *why = spec_hostname_problem(strbuf_str(&sb));
        if (why)
                emitn(c, v, "%s must be a host name (RFC 1123), but '%s' %s", field, spec_quote(h, t), why);
}

/* Values cheap boards and some hypervisors put in SMBIOS instead of a real
 * serial or UUID; a host name made from one would be the same on every such
 * machine, so they count as missing. */
bool spec_value_is_placeholder(const char *value) {
        static const char *const words[] = {
                "to be filled by o.e.m.", "default string", "system serial number", "chassis serial number",
                "base board serial number", "serial number", "serialnumber", "not specified", "not applicable",
                "not available", "none", "n/a", "na", "oem", "o.e.m.", "empty", "unknown", "invalid",
                "0123456789", "123456789", "1234567890", "123456789abc", "03000200-0400-0500-0006-000700080009",
                NULL,
        };
        if (!value)
                return true;
        while (*value == ' ')
                value++;
        size_t n = strlen(value);
        while (n > 0 && value[n - 1] == ' ')
                n--;
        if (n == 0)
                return true;
        for (size_t i = 0; words[i]; i++)
                if (strlen(words[i]) == n && strncasecmp(words[i], value, n) == 0)
                        return true;
        /* all one character once dashes and spaces are left out: 0000..., FFFF-..., XXXX */
        char first = 0;
        for (size_t i = 0; i < n; i++) {
                char ch = (char) toupper((unsigned char) value[i]);
                if (ch == '-' || ch == ' ')
                        continue;
                if (first && ch != first)
                        return false;
                first = ch;
        }
        return true;
}

/* ---- cross-object checks ----------------------------------------------- */

static void add_obj(struct ctx *c, const char *id, enum spec_obj_kind kind, const void *ptr, struct spec_mark mark) {
        if (!id)
                return;
        c->objs[c->n_objs++] = (struct obj) {
                .id = id, .kind = kind, .ptr = ptr, .line = mark.line, .col = mark.col, .mult = 1,
        };
}

static int obj_cmp(const void *a, const void *b) {
        const struct obj *x = *(const struct obj *const *) a, *y = *(const struct obj *const *) b;
        int r = strcmp(x->id, y->id);
        if (r != 0)
                return r;
        return x < y ? -1 : x > y;      /* same id: file order */
}

/* Sorts the ids for lookups; every id after the first of its name is a duplicate. */
static void index_objs(struct ctx *c) {
        char t[QUOTE_MAX + 4];
        _cleanup_free_ struct obj **all = calloc(c->n_objs + 1, sizeof *all);
        c->index = calloc(c->n_objs + 1, sizeof *c->index);
        if (!all || !c->index) {
                c->error = -ENOMEM;
                return;
        }
        for (size_t i = 0; i < c->n_objs; i++)
                all[i] = &c->objs[i];
        qsort(all, c->n_objs, sizeof *all, obj_cmp);
        for (size_t i = 0; i < c->n_objs; i++) {
                struct obj *first = c->n_index ? c->index[c->n_index - 1] : NULL;
                if (first && streq(first->id, all[i]->id)) {
                        spec_emit(c, all[i]->line, all[i]->col, "duplicate id '%s' (already used by the %s at line %u)",
                                  spec_quote(all[i]->id, t), spec_kind_name(first->kind), first->line);
                        continue;
                }
                c->index[c->n_index++] = all[i];
        }
}

static int obj_key_cmp(const void *key, const void *elem) {
        return strcmp(key, (*(const struct obj *const *) elem)->id);
}

struct obj *spec_find_obj(struct ctx *c, const char *id) {
        if (!id || !c->index)
                return NULL;
        struct obj **o = bsearch(id, c->index, c->n_index, sizeof *c->index, obj_key_cmp);
        return o ? *o : NULL;
}

static void kinds_text(unsigned mask, char buf[static 128]) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        size_t n = 0, total = 0;
        for (size_t i = 0; i < ELEMENTSOF(kind_names); i++)
                if (mask & KIND_BIT(kind_names[i].kind))
                        total++;
        for (size_t i = 0; i < ELEMENTSOF(kind_names); i++)
                if (mask & KIND_BIT(kind_names[i].kind)) {
                        n++;
                        (void) strbuf_addf(&sb, "%s%s%s", n == 1 ? "" : n == total ? " or " : ", ",
                                           strchr("aeiou", kind_names[i].name[0]) ? "an " : "a ", kind_names[i].name);
                }
        snprintf(buf, 128, "%s", strbuf_str(&sb));
}

/* Is o the object "where" describes ("luks 'c'")? It cannot refer to itself. */
static bool is_self(const struct obj *o, const char *where) {
        char t[QUOTE_MAX + 4], me[160];
        snprintf(me, sizeof me, "%s '%s'", spec_kind_name(o->kind), spec_quote(o->id, t));
        return streq(me, where);
}

/* Resolves a reference; reports unknown ids and wrong kinds. */
struct obj *spec_resolve(struct ctx *c, const char *field, const char *where, const char *id,
                           struct spec_mark mark, unsigned kinds) {
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4], kt[128];
        if (!id || !*id)
                return NULL;
        struct obj *o = spec_find_obj(c, id);
        if (!o) {
                const char *pick = NULL;
                unsigned best = UINT32_MAX;
                for (size_t i = 0; c->n_emitted < 100 && i < c->n_objs; i++)
                        if ((kinds & KIND_BIT(c->objs[i].kind)) && spec_close_enough(id, c->objs[i].id, &best))
                                pick = c->objs[i].id;
                _cleanup_strbuf_ struct strbuf hint = STRBUF_INIT;
                if (pick)
                        (void) strbuf_addf(&hint, " (did you mean '%s'?)", spec_quote(pick, t2));
                else {
                        /* no near miss: list what it could name, in file order */
                        size_t n = 0, shown = 0;
                        for (size_t i = 0; i < c->n_objs; i++)
                                if ((kinds & KIND_BIT(c->objs[i].kind)) && !is_self(&c->objs[i], where))
                                        n++;
                        kinds_text(kinds, kt);
                        for (size_t i = 0; i < c->n_objs && shown < 8; i++)
                                if ((kinds & KIND_BIT(c->objs[i].kind)) && !is_self(&c->objs[i], where))
                                        (void) strbuf_addf(&hint, "%s%s '%s'", shown++ ? ", " : "; it may name ",
                                                           spec_kind_name(c->objs[i].kind), spec_quote(c->objs[i].id, t2));
                        if (n > shown)
                                (void) strbuf_addf(&hint, " and %zu more", n - shown);
                        if (n == 0)
                                (void) strbuf_addf(&hint, "; the spec has no object it may name (%s)", kt);
                }
                spec_emit(c, mark.line, mark.col, "'%s' of %s refers to unknown id '%s'%s", field, where, spec_quote(id, t),
                          strbuf_str(&hint));
                return NULL;
        }
        if (!(kinds & KIND_BIT(o->kind))) {
                kinds_text(kinds, kt);
                spec_emit(c, mark.line, mark.col, "'%s' of %s refers to %s '%s', but must name %s", field, where,
                          spec_kind_name(o->kind), spec_quote(id, t), kt);
                return NULL;
        }
        return o;
}

/* Records that consumer (e.g. "raid 'md0'", identity who) uses o; each device
 * has one user, except that any number of partitions may share a disk. */
void spec_consume(struct ctx *c, struct obj *o, const void *who, enum spec_obj_kind who_kind,
                    const char *consumer, bool shared, struct spec_mark mark) {
        char t[QUOTE_MAX + 4];
        if (!o)
                return;
        if (o->used_by) {
                if (shared && o->used_shared)
                        return;
                if (o->user == who)
                        spec_emit(c, mark.line, mark.col, "%s uses '%s' twice", consumer, spec_quote(o->id, t));
                else
                        spec_emit(c, mark.line, mark.col, "%s '%s' is already used by %s (line %u)",
                                  spec_kind_name(o->kind), spec_quote(o->id, t), o->used_by, o->used_line);
                return;
        }
        if (!(o->used_by = strdup(consumer)))
                c->error = -ENOMEM;
        o->user = who;
        o->user_kind = who_kind;
        o->used_line = mark.line;
        o->used_shared = shared;
}

void spec_single_device(struct ctx *c, const struct obj *o, const char *field, const char *where, struct spec_mark mark) {
        char t[QUOTE_MAX + 4];
        if (o && o->mult > 1)
                spec_emit(c, mark.line, mark.col, "'%s' of %s refers to '%s', which stands for %u devices; name one device",
                          field, where, spec_quote(o->id, t), o->mult);
}

/* The i-th id an object is built on, or NULL past the last. */
const char *spec_obj_dep(const struct obj *o, size_t i) {
        switch (o->kind) {
        case SPEC_OBJ_PARTITION:
                return i == 0 ? ((const struct spec_partition *) o->ptr)->on : NULL;
        case SPEC_OBJ_RAID: {
                char **m = ((const struct spec_raid *) o->ptr)->members;
                return m ? m[i] : NULL;      /* callers stop at the first NULL */
        }
        case SPEC_OBJ_LUKS:
                return i == 0 ? ((const struct spec_luks *) o->ptr)->on : NULL;
        case SPEC_OBJ_VG: {
                char **p = ((const struct spec_vg *) o->ptr)->pvs;
                return p ? p[i] : NULL;
        }
        case SPEC_OBJ_LV:
                return i == 0 ? ((const struct spec_lv *) o->ptr)->vg : NULL;
        default:
                return NULL;
        }
}

/* Depth-first; frames are small because chains (luks on a volume of a volume
 * group on luks on ...) can be thousands of objects long. */
static bool find_cycle(struct ctx *c, struct obj *o, struct obj **path, size_t depth) {
        if (o->color == 2)
                return false;
        path[depth] = o;
        if (o->color == 1) {
                /* o is on the stack: the cycle is path[k..depth] */
                size_t k = 0;
                while (path[k] != o)
                        k++;
                _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
                char t[QUOTE_MAX + 4];
                for (size_t i = k; i <= depth; i++) {
                        if (i - k < 8 || i + 1 >= depth)
                                (void) strbuf_addf(&sb, "%s'%s'", i > k ? " -> " : "", spec_quote(path[i]->id, t));
                        else if (i - k == 8)
                                (void) strbuf_addf(&sb, " -> ... (%zu more)", depth - k - 9);
                }
                spec_emit(c, o->line, o->col, "reference cycle: %s", strbuf_str(&sb));
                return true;
        }
        if (depth >= c->n_objs)
                return false;
        o->color = 1;
        const char *dep;
        for (size_t i = 0; (dep = spec_obj_dep(o, i)); i++) {
                struct obj *d = spec_find_obj(c, dep);
                if (d && find_cycle(c, d, path, depth + 1))
                        return true;
        }
        o->color = 2;
        return false;
}

/* Every object with an id, indexed; duplicates reported. */
static int collect_objs(struct ctx *c) {
        struct spec *s = c->s;
        size_t total = s->n_disks + s->n_partitions + s->n_raids + s->n_luks + s->n_vgs + s->n_lvs;
        c->objs = calloc(total ? total : 1, sizeof *c->objs);
        if (!c->objs) {
                c->error = -ENOMEM;
                return c->error;
        }
        for (size_t i = 0; i < s->n_disks; i++)
                add_obj(c, s->disks[i].id, SPEC_OBJ_DISK, &s->disks[i], s->disks[i].mark);
        for (size_t i = 0; i < s->n_partitions; i++)
                add_obj(c, s->partitions[i].id, SPEC_OBJ_PARTITION, &s->partitions[i], s->partitions[i].mark);
        for (size_t i = 0; i < s->n_raids; i++)
                add_obj(c, s->raids[i].id, SPEC_OBJ_RAID, &s->raids[i], s->raids[i].mark);
        for (size_t i = 0; i < s->n_luks; i++)
                add_obj(c, s->luks[i].id, SPEC_OBJ_LUKS, &s->luks[i], s->luks[i].mark);
        for (size_t i = 0; i < s->n_vgs; i++)
                add_obj(c, s->vgs[i].id, SPEC_OBJ_VG, &s->vgs[i], s->vgs[i].mark);
        for (size_t i = 0; i < s->n_lvs; i++)
                add_obj(c, s->lvs[i].id, SPEC_OBJ_LV, &s->lvs[i], s->lvs[i].mark);
        index_objs(c);
        return c->error;
}

/* cycles (e.g. luks on a volume of a volume group on that luks): true when
 * one was found (reported) or memory ran out */
static bool check_cycles(struct ctx *c) {
        _cleanup_free_ struct obj **path = calloc(c->n_objs + 1, sizeof *path);
        if (!path) {
                c->error = -ENOMEM;
                return true;
        }
        bool cycle = false;
        for (size_t i = 0; i < c->n_objs; i++)
                if (c->objs[i].color == 0 && find_cycle(c, &c->objs[i], path, 0))
                        cycle = true;
        return cycle;
}

/* The checks that look across objects, in this order: what each one reports
 * relies on the counts and references the ones before it resolved. */
static void cross_check(struct ctx *c) {
        if (collect_objs(c) < 0)
                return;
        spec_check_partitions(c);
        spec_check_luks_names(c);
        if (spec_check_raids(c) < 0)
                return;
        spec_check_luks_on(c);
        if (spec_check_lvm(c) < 0)
                return;
        bool root = spec_check_filesystems(c);
        spec_check_image(c, root);
        spec_check_partition_types(c);
        if (check_cycles(c))
                return;
        spec_check_generated_keys(c);
        spec_check_unlock(c);
        spec_check_boot(c);
}

/* ---- entry points ------------------------------------------------------ */

static const char *const finish_names[] = {
        [SPEC_FINISH_NONE] = "none", [SPEC_FINISH_REBOOT] = "reboot", [SPEC_FINISH_POWEROFF] = "poweroff", NULL,
};

static void parse_root(struct ctx *c, const struct ynode *root) {
        static const char *const keys[] = {
                "version", "hostname", "ca", "disks", "partitions", "raid", "luks", "lvm", "volumes",
                "filesystems", "image", "boot", "bench", "register", "network", "finish", "reinstall",
                "device_timeout", "failed_boot_limit", "layouts", "nodes", NULL,
        };
        struct spec *s = c->s;
        struct loc l = { NULL, "" };
        char t[QUOTE_MAX + 8];
        spec_check_keys(c, root, &l, keys);

        const struct ynode *v = spec_map_get(root, "version");
        if (!v)
                emitn(c, root, "spec has no 'version' (this is version 1 of the format)");
        else if (spec_want_scalar(c, &l, "version", v, "1") > 0) {
                if (!v->plain)
                        emitn(c, v, "'version' must be the number 1, not a quoted string");
                else if (!streq(v->value, "1"))
                        emitn(c, v, "'version' must be 1, not %s", spec_describe(v, t));
                else
                        s->version = 1;
        }
        v = spec_map_get(root, "hostname");
        if (spec_get_str(c, &l, "hostname", v, &s->hostname) > 0) {
                s->hostname_mark = (struct spec_mark) { v->line, v->col };
                if (spec_check_vars(c, &l, "hostname", v, s->hostname))
                        spec_check_hostname(c, v, "'hostname'", s->hostname);
        }
        (void) spec_get_str(c, &l, "ca", spec_map_get(root, "ca"), &s->ca);
        v = spec_map_get(root, "reinstall");
        if (spec_get_str(c, &l, "reinstall", v, &s->reinstall) > 0 && spec_reinstall_problem(s->reinstall))
                emitn(c, v, "'reinstall' must be a token of A-Z a-z 0-9 . _ : - (at most 64), but '%s' %s",
                      spec_quote(s->reinstall, t), spec_reinstall_problem(s->reinstall));

        s->device_timeout = SPEC_DEVICE_TIMEOUT_S;
        v = spec_map_get(root, "device_timeout");
        if (spec_get_duration(c, &l, "device_timeout", v, 1, SPEC_DEVICE_TIMEOUT_MAX_S, &s->device_timeout) > 0)
                s->device_timeout_mark = (struct spec_mark) { v->line, v->col };
        s->failed_boot_limit = SPEC_FAILED_BOOT_LIMIT;
        (void) spec_get_unsigned(c, &l, "failed_boot_limit", spec_map_get(root, "failed_boot_limit"), 1,
                                 SPEC_FAILED_BOOT_LIMIT_MAX, &s->failed_boot_limit);

        PARSE_SECTION(c, root, "disks", "disk", s->disks, s->n_disks, spec_parse_disk);
        PARSE_SECTION(c, root, "partitions", "partition", s->partitions, s->n_partitions, spec_parse_partition);
        PARSE_SECTION(c, root, "raid", "raid", s->raids, s->n_raids, spec_parse_raid);
        PARSE_SECTION(c, root, "luks", "luks", s->luks, s->n_luks, spec_parse_luks);
        PARSE_SECTION(c, root, "lvm", "volume group", s->vgs, s->n_vgs, spec_parse_vg);
        PARSE_SECTION(c, root, "volumes", "volume", s->lvs, s->n_lvs, spec_parse_lv);
        PARSE_SECTION(c, root, "filesystems", "filesystem", s->filesystems, s->n_filesystems, spec_parse_fs);
        if (!spec_map_get(root, "disks") && !c->shared_only)
                emitn(c, root, "spec has no 'disks'");

        v = spec_map_get(root, "image");
        if (spec_want_map(c, &l, "image", v) > 0)
                spec_parse_image(c, v, &s->image);
        v = spec_map_get(root, "boot");
        if (spec_want_map(c, &l, "boot", v) > 0)
                spec_parse_boot(c, v, &s->boot);
        v = spec_map_get(root, "bench");
        if (spec_want_map(c, &l, "bench", v) > 0)
                spec_parse_bench(c, v, &s->bench);
        v = spec_map_get(root, "register");
        if (spec_want_map(c, &l, "register", v) > 0)
                spec_parse_register(c, v, s);
        v = spec_map_get(root, "network");
        if (spec_want_map(c, &l, "network", v) > 0)
                spec_parse_network(c, v);
        v = spec_map_get(root, "nodes");
        if (v)
                spec_parse_nodes(c, v);
        v = spec_map_get(root, "finish");
        int e;
        if (spec_get_enum(c, &l, "finish", v, finish_names, &e) > 0) {
                s->finish = e;
                s->finish_mark = (struct spec_mark) { v->line, v->col };
        }

        spec_set_bench_ciphers(c);
        if (!c->shared_only)
                cross_check(c);
}

/* One spec from one tree (the file's, or a layout's view of it). */
static int parse_tree(const char *file, const struct ynode *root, bool shared_only, struct spec **ret, struct diags *diags) {
        size_t before = diags->n;
        struct ctx c = { .file = file, .d = diags, .shared_only = shared_only };
        _cleanup_spec_free_ struct spec *s = calloc(1, sizeof *s);
        if (!s || !(s->file = strdup(file ? file : "")))
                return -ENOMEM;
        c.s = s;
        parse_root(&c, root);
        for (size_t i = 0; i < c.n_objs; i++)
                free(c.objs[i].used_by);
        free(c.objs);
        free(c.index);
        if (c.error < 0)
                return c.error;
        if (diags_errors(diags, before) > 0)
                return -EINVAL;
        *ret = TAKE_PTR(s);
        return 0;
}

/* The sections a layout holds; everything else is shared by the layouts. */
static const char *const layout_keys[] = {
        "name", "disks", "partitions", "raid", "luks", "lvm", "volumes", "filesystems", NULL,
};

/* A mapping of borrowed nodes: root's entries but layouts: (and, for a
 * layout, root's storage sections, which beside layouts: are an error
 * already), then the layout's own sections. Freed with free_view(). */
static struct ynode *make_view(const struct ynode *root, const struct ynode *layout) {
        struct ynode *v = calloc(1, sizeof *v);
        if (!v || !(v->items = calloc(root->n + (layout ? layout->n : 0) + 1, sizeof *v->items))) {
                free(v);
                return NULL;
        }
        v->kind = YNODE_MAP;
        v->line = root->line;
        v->col = root->col;
        for (size_t i = 0; i + 1 < root->n; i += 2) {
                const char *k = root->items[i]->value;
                if (k && (streq(k, "layouts") || (layout && strv_contains((char **) layout_keys, k))))
                        continue;
                v->items[v->n++] = root->items[i];
                v->items[v->n++] = root->items[i + 1];
        }
        for (size_t i = 0; layout && i + 1 < layout->n; i += 2) {
                const char *k = layout->items[i]->value;
                if (!k || streq(k, "name") || !strv_contains((char **) layout_keys, k))
                        continue;
                v->items[v->n++] = layout->items[i];
                v->items[v->n++] = layout->items[i + 1];
        }
        return v;
}

static void free_view(struct ynode **v) {
        if (*v) {
                free((*v)->items);
                free(*v);
        }
}

static bool diag_in(const struct diags *d, const struct diag *x) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].line == x->line && d->items[i].col == x->col && d->items[i].warning == x->warning &&
                    streq(d->items[i].message, x->message))
                        return true;
        return false;
}

/* layouts: each entry is checked as a spec of its own: the shared sections
 * once (their problems said once), then each layout's view, whose other
 * problems name the layout. */
static int parse_layouts(const char *file, const struct ynode *root, const struct ynode *list, struct spec **ret,
                         struct diags *diags) {
        char t[QUOTE_MAX + 8];
        struct ctx c = { .file = file, .d = diags };
        size_t before = diags->n;
        int r;
        if (list->kind == YNODE_SEQ && list->n == 0) {
                emitn(&c, list, "'layouts' is empty: give at least one layout ({name, disks, ...}), or no 'layouts'");
                return c.error < 0 ? c.error : -EINVAL;
        }
        if (list->kind != YNODE_SEQ) {
                emitn(&c, list, "'layouts' must be a list of layouts (each {name, disks, ...}), not %s", spec_describe(list, t));
                return c.error < 0 ? c.error : -EINVAL;
        }
        if (list->n > SPEC_LAYOUTS_MAX) {
                emitn(&c, list, "'layouts' holds %zu layouts; at most %u", list->n, SPEC_LAYOUTS_MAX);
                return c.error < 0 ? c.error : -EINVAL;
        }
        for (size_t i = 0; layout_keys[i]; i++) {
                const struct ynode *k = spec_map_key(root, layout_keys[i]);
                if (k && !streq(layout_keys[i], "name"))
                        emitn(&c, k, "'%s' cannot be beside 'layouts': with layouts, every storage section "
                              "(disks, partitions, raid, luks, lvm, volumes, filesystems) is in each layout", layout_keys[i]);
        }
        _cleanup_free_ char **names = calloc(list->n + 1, sizeof *names);
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < list->n; i++) {
                const struct ynode *m = list->items[i];
                if (m->kind != YNODE_MAP) {
                        emitn(&c, m, "layout #%zu must be a mapping ({name, disks, ...}), not %s", i + 1, spec_describe(m, t));
                        continue;
                }
                for (size_t k = 0; k + 1 < m->n; k += 2) {
                        const char *key = m->items[k]->value;
                        if (key && !strv_contains((char **) layout_keys, key))
                                emitn(&c, m->items[k], "'%s' cannot be in a layout: a layout holds name, disks, partitions, "
                                      "raid, luks, lvm, volumes and filesystems; everything else is shared, outside 'layouts'",
                                      spec_quote(key, t));
                }
                const struct ynode *n = spec_map_get(m, "name");
                if (!n || n->kind != YNODE_SCALAR || ynode_is_null(n)) {
                        emitn(&c, n ? n : m, "layout #%zu has no 'name'", i + 1);
                        continue;
                }
                if (spec_reinstall_problem(n->value)) {
                        emitn(&c, n, "'name' of layout #%zu must be a token of A-Z a-z 0-9 . _ : - (at most 64), but '%s' %s",
                              i + 1, spec_quote(n->value, t), spec_reinstall_problem(n->value));
                        continue;
                }
                for (size_t j = 0; j < i; j++)
                        if (names[j] && streq(names[j], n->value))
                                emitn(&c, n, "duplicate layout name '%s' (already used by layout #%zu)", spec_quote(n->value, t), j + 1);
                names[i] = n->value;
        }
        if (c.error < 0)
                return c.error;

        /* the shared sections, once */
        _cleanup_(diags_clear) struct diags shared = {};
        _cleanup_(free_view) struct ynode *sv = make_view(root, NULL);
        if (!sv)
                return -ENOMEM;
        _cleanup_spec_free_ struct spec *ss = NULL;
        r = parse_tree(file, sv, true, &ss, &shared);
        if (r < 0 && r != -EINVAL)
                return r;
        for (size_t i = 0; i < shared.n; i++) {
                const struct diag *x = &shared.items[i];
                if ((r = x->warning ? diags_warn(diags, x->file, x->line, x->col, "%s", x->message)
                                    : diags_add(diags, x->file, x->line, x->col, "%s", x->message)) < 0)
                        return r;
        }

        struct spec **all = calloc(list->n, sizeof *all);
        if (!all)
                return -ENOMEM;
        int result = 0;
        for (size_t i = 0; i < list->n; i++) {
                if (!names[i])
                        continue;
                _cleanup_(diags_clear) struct diags d = {};
                _cleanup_(free_view) struct ynode *lv = make_view(root, list->items[i]);
                if (!lv) {
                        result = -ENOMEM;
                        break;
                }
                r = parse_tree(file, lv, false, &all[i], &d);
                if (r < 0 && r != -EINVAL) {
                        result = r;
                        break;
                }
                for (size_t k = 0; r >= -EINVAL && k < d.n; k++) {
                        const struct diag *x = &d.items[k];
                        if (diag_in(&shared, x))
                                continue;
                        int q = x->warning ? diags_warn(diags, x->file, x->line, x->col, "layout '%s': %s", names[i], x->message)
                                           : diags_add(diags, x->file, x->line, x->col, "layout '%s': %s", names[i], x->message);
                        if (q < 0) {
                                result = q;
                                break;
                        }
                }
                if (all[i]) {
                        const struct ynode *n = spec_map_get(list->items[i], "name");
                        all[i]->layout_mark = (struct spec_mark) { n->line, n->col };
                        if (!(all[i]->layout = strdup(names[i])))
                                result = -ENOMEM;
                }
                if (result < 0)
                        break;
        }
        if (result == 0 && diags_errors(diags, before) > 0)
                result = -EINVAL;
        if (result < 0) {
                for (size_t i = 0; i < list->n; i++)
                        spec_free(all[i]);
                free(all);
                return result;
        }
        all[0]->layouts = all;
        all[0]->n_layouts = list->n;
        *ret = all[0];
        return 0;
}

int spec_parse(const char *file, const char *data, size_t len, struct spec **ret, struct diags *diags) {
        char t[QUOTE_MAX + 8];
        size_t before = diags->n;
        if (len > SPEC_MAX_BYTES) {
                int r = diags_add(diags, file, 0, 0, "spec is larger than %u bytes", SPEC_MAX_BYTES);
                return r < 0 ? r : -EINVAL;
        }
        _cleanup_(ynode_freep) struct ynode *root = NULL;
        int r = ytree_parse(file, data, len, SPEC_MAX_DEPTH, &root, diags);
        if (r < 0)
                return r;
        if (!root || ynode_is_null(root)) {
                r = diags_add(diags, file, 1, 1, "spec is empty");
                return r < 0 ? r : -EINVAL;
        }
        if (root->kind != YNODE_MAP) {
                r = diags_add(diags, file, root->line, root->col, "spec must be a mapping, not %s", spec_describe(root, t));
                return r < 0 ? r : -EINVAL;
        }
        const struct ynode *layouts = spec_map_get(root, "layouts");
        _cleanup_spec_free_ struct spec *s = NULL;
        r = layouts ? parse_layouts(file, root, layouts, &s, diags) : parse_tree(file, root, false, &s, diags);
        if (r < 0)
                return r;
        if (diags_errors(diags, before) > 0)
                return -EINVAL;         /* the tree's own (anchors, aliases) */
        *ret = TAKE_PTR(s);
        return 0;
}

int spec_load(const char *path, struct spec **ret, struct diags *diags) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_full_file(path, SPEC_MAX_BYTES, &data, &len);
        if (r == -EFBIG) {
                r = diags_add(diags, path, 0, 0, "spec is larger than %u bytes", SPEC_MAX_BYTES);
                return r < 0 ? r : -EINVAL;
        }
        if (r < 0)
                return r;
        r = spec_parse(path, data, len, ret, diags);
        explicit_wipe(data, len);
        return r;
}

void spec_free_secret(char *s) {
        if (s) {
                explicit_wipe(s, strlen(s));
                free(s);
        }
}

struct spec *spec_free(struct spec *s) {
        if (!s)
                return NULL;
        spec_free_disks(s);
        spec_free_raids(s);
        spec_free_luks(s);
        spec_free_lvm(s);
        spec_free_filesystems(s);
        spec_free_image(s);
        spec_free_boot(s);
        spec_free_bench(s);
        spec_free_register(s);
        spec_free_network(&s->network);
        spec_free_nodes(s);
        free(s->file); free(s->hostname); free(s->ca); free(s->reinstall); free(s->layout);
        for (size_t i = 0; i < s->n_layouts; i++)
                if (s->layouts[i] != s)
                        spec_free(s->layouts[i]);
        free(s->layouts);
        free(s);
        return NULL;
}

int spec_register_secrets(const struct spec *s) {
        int r;
        for (size_t i = 0; i < s->n_luks; i++)
                if (s->luks[i].key.passphrase && (r = log_register_secret(s->luks[i].key.passphrase)) < 0)
                        return r;
        const char *other[] = { s->cloudstack.secret_key, s->cloudstack.host_password, s->webhook.hmac_key };
        for (size_t i = 0; i < ELEMENTSOF(other); i++)
                if (other[i] && (r = log_register_secret(other[i])) < 0)
                        return r;
        return 0;
}

enum spec_obj_kind spec_lookup(const struct spec *s, const char *id, const void **ret_obj) {
#define LOOK(arr, n, kind)                                              \
        for (size_t i = 0; i < s->n; i++)                               \
                if (s->arr[i].id && streq(s->arr[i].id, id)) {          \
                        if (ret_obj)                                    \
                                *ret_obj = &s->arr[i];                  \
                        return kind;                                    \
                }
        if (!s || !id)
                return SPEC_OBJ_NONE;
        LOOK(disks, n_disks, SPEC_OBJ_DISK);
        LOOK(partitions, n_partitions, SPEC_OBJ_PARTITION);
        LOOK(raids, n_raids, SPEC_OBJ_RAID);
        LOOK(luks, n_luks, SPEC_OBJ_LUKS);
        LOOK(vgs, n_vgs, SPEC_OBJ_VG);
        LOOK(lvs, n_lvs, SPEC_OBJ_LV);
#undef LOOK
        return SPEC_OBJ_NONE;
}

int spec_expand(const char *in, const struct spec_vars *vars, char **ret, const char **reterr_var) {
        _cleanup_strbuf_ struct strbuf sb = { .max = 64 * 1024 };
        int r;
        if (!in)
                return -EINVAL;
        for (const char *p = in; *p; ) {
                const char *d = strstr(p, "${");
                if (!d) {
                        r = strbuf_adds(&sb, p);
                        if (r < 0)
                                return r;
                        break;
                }
                r = strbuf_add(&sb, p, (size_t) (d - p));
                if (r < 0)
                        return r;
                const char *e = strchr(d + 2, '}');
                if (!e)
                        return -EINVAL;
                size_t n = (size_t) (e - d - 2);
                const char *val = NULL, *name = NULL;
                const char *vals[] = { vars ? vars->mac : NULL, vars ? vars->mac : NULL, vars ? vars->mac : NULL,
                                       vars ? vars->uuid : NULL, vars ? vars->serial : NULL,
                                       vars ? vars->hostname : NULL };
                size_t which = 0;
                _Static_assert(ELEMENTSOF(vals) == ELEMENTSOF(spec_vars) - 1, "a value for each variable");
                for (size_t i = 0; spec_vars[i]; i++)
                        if (strlen(spec_vars[i]) == n && strncmp(spec_vars[i], d + 2, n) == 0) {
                                name = spec_vars[i];
                                val = vals[i];
                                which = i;
                        }
                if (!name)
                        return -EINVAL;
                if (!val) {
                        if (reterr_var)
                                *reterr_var = which < 3 ? "mac" : name;
                        return -ENODATA;
                }
                if (which == 1 || which == 2) {
                        /* iPXE's :hexhyp and :hexraw: lower case, '-' or nothing between the bytes */
                        for (const char *m = val; *m; m++)
                                if (*m == ':' ? which == 1 && (r = strbuf_adds(&sb, "-")) < 0
                                              : (r = strbuf_addf(&sb, "%c", tolower((unsigned char) *m))) < 0)
                                        return r;
                } else if ((r = strbuf_adds(&sb, val)) < 0)
                        return r;
                p = e + 1;
        }
        char *out = strbuf_detach(&sb);
        if (!out && !(out = strdup("")))
                return -ENOMEM;
        *ret = out;
        return 0;
}

/* The ids object id is built on (partition: its disk; raid: members; luks: on;
 * vg: pvs; volume: vg), the i-th, or NULL past the last. */
static const char *spec_dep(enum spec_obj_kind k, const void *o, size_t i) {
        switch (k) {
        case SPEC_OBJ_PARTITION: return i == 0 ? ((const struct spec_partition *) o)->on : NULL;
        case SPEC_OBJ_RAID: {
                char **m = ((const struct spec_raid *) o)->members;
                return m && i < strv_length(m) ? m[i] : NULL;
        }
        case SPEC_OBJ_LUKS: return i == 0 ? ((const struct spec_luks *) o)->on : NULL;
        case SPEC_OBJ_VG: {
                char **p = ((const struct spec_vg *) o)->pvs;
                return p && i < strv_length(p) ? p[i] : NULL;
        }
        case SPEC_OBJ_LV: return i == 0 ? ((const struct spec_lv *) o)->vg : NULL;
        default: return NULL;
        }
}

static int disks_below(const struct spec *s, const char *id, size_t depth, char ***acc) {
        const void *o = NULL;
        enum spec_obj_kind k = spec_lookup(s, id, &o);
        if (k == SPEC_OBJ_NONE || depth > 4096)
                return 0;
        if (k == SPEC_OBJ_DISK)
                return strv_contains(*acc, id) ? 0 : strv_pushdup(acc, id);
        const char *dep;
        for (size_t i = 0; (dep = spec_dep(k, o, i)); i++) {
                int r = disks_below(s, dep, depth + 1, acc);
                if (r < 0)
                        return r;
        }
        return 0;
}

int spec_disks_below(const struct spec *s, const char *id, char ***ret) {
        _cleanup_strv_free_ char **acc = NULL;
        int r = disks_below(s, id, 0, &acc);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(acc);
        return 0;
}

static const struct spec_luks *luks_below(const struct spec *s, const char *id, size_t depth) {
        const void *o = NULL;
        enum spec_obj_kind k = spec_lookup(s, id, &o);
        if (k == SPEC_OBJ_NONE || depth > 4096)
                return NULL;
        if (k == SPEC_OBJ_LUKS)
                return o;
        const char *dep;
        for (size_t i = 0; (dep = spec_dep(k, o, i)); i++) {
                const struct spec_luks *l = luks_below(s, dep, depth + 1);
                if (l)
                        return l;
        }
        return NULL;
}

const struct spec_luks *spec_luks_below(const struct spec *s, const char *id) {
        return id ? luks_below(s, id, 0) : NULL;
}

static bool is_below(const struct spec *s, const char *id, const void *obj, size_t depth) {
        const void *o = NULL;
        enum spec_obj_kind k = spec_lookup(s, id, &o);
        if (k == SPEC_OBJ_NONE || depth > 4096)
                return false;
        if (o == obj)
                return true;
        const char *dep;
        for (size_t i = 0; (dep = spec_dep(k, o, i)); i++)
                if (is_below(s, dep, obj, depth + 1))
                        return true;
        return false;
}

bool spec_is_below(const struct spec *s, const char *id, const void *obj) {
        return id && obj && is_below(s, id, obj, 0);
}
