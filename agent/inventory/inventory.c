/* The machine inventory's model: what disks (and the signatures on them),
 * NICs, CPU and memory a machine has, the queries the planner asks of it,
 * and its JSON and text forms. Pure: probe.c fills it from a machine, and
 * the JSON form written here is read back by inventory_load_json(). */
#include "inventory.h"

#include "json.h"

#define INVENTORY_JSON_MAX (16u * 1024 * 1024)

/* ---------- freeing ---------- */

static void sigs_free(struct inv_signature *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(s[i].type);
                free(s[i].usage);
                free(s[i].uuid);
                free(s[i].label);
        }
        free(s);
}

void inv_partition_done(struct inv_partition *p) {
        free(p->name);
        free(p->path);
        sigs_free(p->sigs, p->n_sigs);
        strv_free(p->holders);
        free(p->mountpoint);
}

void inv_disk_done(struct inv_disk *d) {
        free(d->name);
        free(d->path);
        strv_free(d->by_id);
        free(d->model);
        free(d->vendor);
        free(d->serial);
        free(d->wwn);
        free(d->transport);
        for (size_t i = 0; i < d->n_parts; i++)
                inv_partition_done(&d->parts[i]);
        free(d->parts);
        sigs_free(d->sigs, d->n_sigs);
        strv_free(d->holders);
        free(d->mountpoint);
}

void inv_nic_done(struct inv_nic *n) {
        free(n->name);
        free(n->mac);
        strv_free(n->ipv4);
}

struct inventory *inventory_free(struct inventory *inv) {
        if (!inv)
                return NULL;
        free(inv->hostname);
        free(inv->machine_uuid);
        free(inv->serial);
        free(inv->cpu_model);
        for (size_t i = 0; i < inv->n_disks; i++)
                inv_disk_done(&inv->disks[i]);
        free(inv->disks);
        for (size_t i = 0; i < inv->n_nics; i++)
                inv_nic_done(&inv->nics[i]);
        free(inv->nics);
        free(inv);
        return NULL;
}

/* ---------- small queries ---------- */

const char *inventory_primary_mac(const struct inventory *inv) {
        for (size_t i = 0; i < inv->n_nics; i++)
                if (inv->nics[i].up && !strempty(inv->nics[i].mac))
                        return inv->nics[i].mac;
        for (size_t i = 0; i < inv->n_nics; i++)
                if (!strempty(inv->nics[i].mac))
                        return inv->nics[i].mac;
        return NULL;
}

size_t inventory_count_serial(const struct inventory *inv, const char *serial) {
        size_t n = 0;
        for (size_t i = 0; !strempty(serial) && i < inv->n_disks; i++)
                if (inv->disks[i].serial && streq(inv->disks[i].serial, serial))
                        n++;
        return n;
}

int inventory_serial_warning(const struct inventory *inv, const char *serial, struct strbuf *sb) {
        size_t n = inventory_count_serial(inv, serial);
        if (n < 2)
                return 0;
        int r = strbuf_adds(sb, "disks ");
        for (size_t j = 0, k = 0; r >= 0 && j < inv->n_disks; j++)
                if (inv->disks[j].serial && streq(inv->disks[j].serial, serial))
                        r = strbuf_addf(sb, "%s%s", k++ == 0 ? "" : k == n ? " and " : ", ",
                                        inv->disks[j].path ? inv->disks[j].path : inv->disks[j].name);
        if (r >= 0)
                r = strbuf_addf(sb, " report the same serial '%s' (a USB bridge or virtual disks?): "
                                    "a spec cannot select them by serial; use path, by_id or wwn", serial);
        return r < 0 ? r : 1;
}

int inventory_warnings(const struct inventory *inv, char ***ret) {
        _cleanup_strv_free_ char **w = NULL;
        for (size_t i = 0; i < inv->n_disks; i++) {
                const char *serial = inv->disks[i].serial;
                if (strempty(serial) || inventory_count_serial(inv, serial) < 2)
                        continue;
                bool first = true;      /* one message per serial, at its first disk */
                for (size_t j = 0; first && j < i; j++)
                        first = !(inv->disks[j].serial && streq(inv->disks[j].serial, serial));
                if (!first)
                        continue;
                _cleanup_strbuf_ struct strbuf sb = { .max = 64 * 1024 };
                int r = inventory_serial_warning(inv, serial, &sb);
                if (r < 0)
                        return r;
                char *m = strbuf_detach(&sb);
                if (!m || strv_push(&w, m) < 0) {
                        free(m);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(w);
        return 0;
}

size_t inv_disk_count_signatures(const struct inv_disk *d) {
        size_t n = d->n_sigs;
        for (size_t i = 0; i < d->n_parts; i++)
                n += d->parts[i].n_sigs;
        return n;
}

bool inv_disk_has_signatures(const struct inv_disk *d) {
        return inv_disk_count_signatures(d) > 0;
}

int inv_disk_holders(const struct inv_disk *d, char ***ret) {
        _cleanup_strv_free_ char **v = NULL;
        for (size_t p = 0; p <= d->n_parts; p++) {
                char **h = p < d->n_parts ? d->parts[p].holders : d->holders;
                for (size_t i = 0; h && h[i]; i++) {
                        _cleanup_free_ char *path = strdupf("/dev/%s", h[i]);
                        if (!path)
                                return -ENOMEM;
                        if (strv_contains(v, path))
                                continue;
                        int r = strv_push(&v, path);
                        if (r < 0)
                                return r;
                        path = NULL;
                }
        }
        *ret = TAKE_PTR(v);
        return 0;
}

bool inv_disk_in_use(const struct inv_disk *d) {
        if (d->unreadable || inv_disk_has_signatures(d) || strv_length(d->holders) > 0 || d->mountpoint)
                return true;
        for (size_t i = 0; i < d->n_parts; i++)
                if (strv_length(d->parts[i].holders) > 0 || d->parts[i].mountpoint)
                        return true;
        return false;
}

/* ---------- JSON out ---------- */

/* The JSON writers below use json.h's builders: one sticky error r per document. */
static struct json_object *jstrv(char *const *v) {
        struct json_object *a = json_object_new_array();
        int r = 0;
        for (size_t i = 0; v && v[i] && r >= 0; i++)
                json_append(a, json_object_new_string(v[i]), &r);
        return json_done(a, r);
}

static struct json_object *jsigs(const struct inv_signature *s, size_t n) {
        struct json_object *a = json_object_new_array();
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct json_object *o = json_object_new_object();
                json_set_str(o, "type", s[i].type, &r);
                json_set_str(o, "usage", s[i].usage, &r);
                json_set_str(o, "uuid", s[i].uuid, &r);
                json_set_str(o, "label", s[i].label, &r);
                json_set(o, "offset", json_object_new_uint64(s[i].offset), &r);
                json_append(a, o, &r);
        }
        return json_done(a, r);
}

static struct json_object *jpart(const struct inv_partition *p) {
        struct json_object *o = json_object_new_object();
        int r = 0;
        json_set_str(o, "name", p->name, &r);
        json_set_str(o, "path", p->path, &r);
        json_set(o, "number", json_object_new_uint64(p->number), &r);
        json_set(o, "start", json_object_new_uint64(p->start), &r);
        json_set(o, "size", json_object_new_uint64(p->size), &r);
        json_set(o, "signatures", jsigs(p->sigs, p->n_sigs), &r);
        json_set(o, "holders", jstrv(p->holders), &r);
        json_set_str(o, "mountpoint", p->mountpoint, &r);
        return json_done(o, r);
}

static struct json_object *jdisk(const struct inv_disk *d) {
        struct json_object *o = json_object_new_object();
        int r = 0;
        json_set_str(o, "name", d->name, &r);
        json_set_str(o, "path", d->path, &r);
        json_set(o, "by_id", jstrv(d->by_id), &r);
        json_set(o, "size", json_object_new_uint64(d->size), &r);
        json_set(o, "logical_sector", json_object_new_uint64(d->logical_sector), &r);
        json_set(o, "physical_sector", json_object_new_uint64(d->physical_sector), &r);
        json_set(o, "rotational", json_object_new_boolean(d->rotational), &r);
        json_set(o, "removable", json_object_new_boolean(d->removable), &r);
        json_set(o, "readonly", json_object_new_boolean(d->readonly), &r);
        json_set_str(o, "model", d->model, &r);
        json_set_str(o, "vendor", d->vendor, &r);
        json_set_str(o, "serial", d->serial, &r);
        json_set_str(o, "wwn", d->wwn, &r);
        json_set_str(o, "transport", d->transport, &r);
        json_set(o, "signatures", jsigs(d->sigs, d->n_sigs), &r);
        json_set(o, "holders", jstrv(d->holders), &r);
        json_set_str(o, "mountpoint", d->mountpoint, &r);
        json_set(o, "unreadable", json_object_new_boolean(d->unreadable), &r);
        struct json_object *parts = json_object_new_array();
        for (size_t i = 0; i < d->n_parts && r >= 0; i++)
                json_append(parts, jpart(&d->parts[i]), &r);
        json_set(o, "partitions", parts, &r);
        return json_done(o, r);
}

static struct json_object *jnic(const struct inv_nic *n) {
        struct json_object *o = json_object_new_object();
        int r = 0;
        json_set_str(o, "name", n->name, &r);
        json_set_str(o, "mac", n->mac, &r);
        json_set(o, "up", json_object_new_boolean(n->up), &r);
        json_set(o, "ipv4", jstrv(n->ipv4), &r);
        return json_done(o, r);
}

int inventory_to_json(const struct inventory *inv, struct strbuf *out) {
        struct json_object *root = json_object_new_object();
        if (!root)
                return -ENOMEM;
        int r = 0;
        json_set(root, "version", json_object_new_int(1), &r);
        json_set_str(root, "hostname", inv->hostname, &r);
        json_set_str(root, "machine_uuid", inv->machine_uuid, &r);
        json_set_str(root, "serial", inv->serial, &r);
        struct json_object *cpu = json_object_new_object();
        json_set_str(cpu, "model", inv->cpu_model, &r);
        json_set(cpu, "count", json_object_new_uint64(inv->cpus), &r);
        json_set(cpu, "aes", json_object_new_boolean(inv->cpu_aes), &r);
        json_set(cpu, "vaes", json_object_new_boolean(inv->cpu_vaes), &r);
        json_set(cpu, "avx2", json_object_new_boolean(inv->cpu_avx2), &r);
        json_set(root, "cpu", cpu, &r);
        struct json_object *mem = json_object_new_object();
        json_set(mem, "total", json_object_new_uint64(inv->mem_total), &r);
        json_set(mem, "available", json_object_new_uint64(inv->mem_available), &r);
        json_set(root, "memory", mem, &r);
        struct json_object *disks = json_object_new_array();
        for (size_t i = 0; i < inv->n_disks && r >= 0; i++)
                json_append(disks, jdisk(&inv->disks[i]), &r);
        json_set(root, "disks", disks, &r);
        struct json_object *nics = json_object_new_array();
        for (size_t i = 0; i < inv->n_nics && r >= 0; i++)
                json_append(nics, jnic(&inv->nics[i]), &r);
        json_set(root, "nics", nics, &r);
        if (r >= 0)
                r = json_print(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, true, out);
        json_object_put(root);
        return r < 0 ? r : 0;
}

/* ---------- JSON in ---------- */

struct jload {
        struct strbuf where;    /* "disks[1].partitions[0].start" */
        struct strbuf *err;     /* the first failure is told */
};

static int jerr(struct jload *l, const char *key, const char *what) {
        if (l->err && !l->err->len)
                return strbuf_errorf(l->err, -EINVAL, "%s%s%s: %s", strbuf_str(&l->where), l->where.len && key ? "." : "",
                                     key ? key : "", what);
        return -EINVAL;
}

static int check_keys(struct jload *l, struct json_object *o, const char *const *allowed) {
        json_object_object_foreach(o, key, val) {
                (void) val;
                bool ok = false;
                for (size_t i = 0; allowed[i]; i++)
                        if (streq(allowed[i], key))
                                ok = true;
                if (!ok)
                        return jerr(l, key, "unknown key");
        }
        return 0;
}

static int get_str(struct jload *l, struct json_object *o, const char *key, char **ret) {
        struct json_object *v;
        *ret = NULL;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return jerr(l, key, "expected a string or null");
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_u64(struct jload *l, struct json_object *o, const char *key, uint64_t max, uint64_t *ret) {
        struct json_object *v;
        *ret = 0;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
                return jerr(l, key, "expected an unsigned integer");
        errno = 0;
        uint64_t u = json_object_get_uint64(v);
        if (u > max)
                return jerr(l, key, "number out of range");
        *ret = u;
        return 0;
}

static int get_unsigned(struct jload *l, struct json_object *o, const char *key, unsigned *ret) {
        uint64_t v;
        int r = get_u64(l, o, key, UINT32_MAX, &v);
        if (r < 0)
                return r;
        *ret = (unsigned) v;
        return 0;
}

static int get_bool(struct jload *l, struct json_object *o, const char *key, bool *ret) {
        struct json_object *v;
        *ret = false;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return jerr(l, key, "expected true or false");
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_array(struct jload *l, struct json_object *o, const char *key, size_t max, struct json_object **ret,
                     size_t *ret_n) {
        struct json_object *v;
        *ret = NULL;
        *ret_n = 0;
        if (!json_object_object_get_ex(o, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return jerr(l, key, "expected an array");
        size_t n = json_object_array_length(v);
        if (n > max)
                return jerr(l, key, "too many entries");
        *ret = v;
        *ret_n = n;
        return 0;
}

static int get_strv(struct jload *l, struct json_object *o, const char *key, char ***ret) {
        struct json_object *a;
        size_t n;
        int r = get_array(l, o, key, 4096, &a, &n);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **v = NULL;
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(a, i);
                if (!s || !json_object_is_type(s, json_type_string))
                        return jerr(l, key, "expected an array of strings");
                char *d = strdup(json_object_get_string(s));
                if (!d || strv_push(&v, d) < 0) {
                        free(d);
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(v);
        return 0;
}

/* Push "key[i]" onto the location path; returns the old length to pop back to. */
static size_t where_push(struct jload *l, const char *key, size_t i) {
        size_t old = l->where.len;
        (void) strbuf_addf(&l->where, "%s%s[%zu]", old ? "." : "", key, i);
        return old;
}

static void where_pop(struct jload *l, size_t old) {
        if (l->where.buf) {
                l->where.len = old;
                l->where.buf[old] = 0;
        }
}

static int load_object(struct jload *l, struct json_object *o) {
        if (!o || !json_object_is_type(o, json_type_object))
                return jerr(l, NULL, "expected an object");
        return 0;
}

static int load_sigs(struct jload *l, struct json_object *parent, struct inv_signature **ret, size_t *ret_n) {
        static const char *const keys[] = { "type", "usage", "uuid", "label", "offset", NULL };
        struct json_object *a;
        size_t n;
        int r = get_array(l, parent, "signatures", 1024, &a, &n);
        if (r < 0 || n == 0)
                return r;
        struct inv_signature *s = calloc(n, sizeof *s);
        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct json_object *o = json_object_array_get_idx(a, i);
                size_t old = where_push(l, "signatures", i);
                if ((r = load_object(l, o)) >= 0 && (r = check_keys(l, o, keys)) >= 0 &&
                    (r = get_str(l, o, "type", &s[i].type)) >= 0 && (r = get_str(l, o, "usage", &s[i].usage)) >= 0 &&
                    (r = get_str(l, o, "uuid", &s[i].uuid)) >= 0 && (r = get_str(l, o, "label", &s[i].label)) >= 0)
                        r = get_u64(l, o, "offset", UINT64_MAX, &s[i].offset);
                if (r >= 0 && !s[i].type)
                        r = jerr(l, "type", "missing");
                where_pop(l, old);
        }
        if (r < 0) {
                sigs_free(s, n);
                return r;
        }
        *ret = s;
        *ret_n = n;
        return 0;
}

static int load_part(struct jload *l, struct json_object *o, struct inv_partition *p) {
        static const char *const keys[] = { "name", "path", "number", "start", "size", "signatures", "holders",
                                            "mountpoint", NULL };
        int r;
        if ((r = load_object(l, o)) < 0 || (r = check_keys(l, o, keys)) < 0 || (r = get_str(l, o, "name", &p->name)) < 0 ||
            (r = get_str(l, o, "path", &p->path)) < 0 || (r = get_unsigned(l, o, "number", &p->number)) < 0 ||
            (r = get_u64(l, o, "start", UINT64_MAX, &p->start)) < 0 ||
            (r = get_u64(l, o, "size", UINT64_MAX, &p->size)) < 0 || (r = load_sigs(l, o, &p->sigs, &p->n_sigs)) < 0 ||
            (r = get_strv(l, o, "holders", &p->holders)) < 0 || (r = get_str(l, o, "mountpoint", &p->mountpoint)) < 0)
                return r;
        if (!p->name)
                return jerr(l, "name", "missing");
        return 0;
}

static int load_disk(struct jload *l, struct json_object *o, struct inv_disk *d) {
        static const char *const keys[] = { "name", "path", "by_id", "size", "logical_sector", "physical_sector",
                                            "rotational", "removable", "readonly", "model", "vendor", "serial", "wwn",
                                            "transport", "signatures", "holders", "mountpoint", "unreadable", "partitions",
                                            NULL };
        int r;
        if ((r = load_object(l, o)) < 0 || (r = check_keys(l, o, keys)) < 0 || (r = get_str(l, o, "name", &d->name)) < 0 ||
            (r = get_str(l, o, "path", &d->path)) < 0 || (r = get_strv(l, o, "by_id", &d->by_id)) < 0 ||
            (r = get_u64(l, o, "size", UINT64_MAX, &d->size)) < 0 ||
            (r = get_unsigned(l, o, "logical_sector", &d->logical_sector)) < 0 ||
            (r = get_unsigned(l, o, "physical_sector", &d->physical_sector)) < 0 ||
            (r = get_bool(l, o, "rotational", &d->rotational)) < 0 || (r = get_bool(l, o, "removable", &d->removable)) < 0 ||
            (r = get_bool(l, o, "readonly", &d->readonly)) < 0 || (r = get_str(l, o, "model", &d->model)) < 0 ||
            (r = get_str(l, o, "vendor", &d->vendor)) < 0 || (r = get_str(l, o, "serial", &d->serial)) < 0 ||
            (r = get_str(l, o, "wwn", &d->wwn)) < 0 || (r = get_str(l, o, "transport", &d->transport)) < 0 ||
            (r = load_sigs(l, o, &d->sigs, &d->n_sigs)) < 0 || (r = get_strv(l, o, "holders", &d->holders)) < 0 ||
            (r = get_str(l, o, "mountpoint", &d->mountpoint)) < 0 ||
            (r = get_bool(l, o, "unreadable", &d->unreadable)) < 0)
                return r;
        if (!d->name)
                return jerr(l, "name", "missing");
        /* the planner and resume name a disk by its path: a live inventory
         * always has one, a recorded one must too */
        if (!d->path)
                return jerr(l, "path", "missing");
        struct json_object *a;
        size_t n;
        if ((r = get_array(l, o, "partitions", INVENTORY_MAX_PARTS, &a, &n)) < 0 || n == 0)
                return r;
        if (!(d->parts = calloc(n, sizeof *d->parts)))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t old = where_push(l, "partitions", i);
                d->n_parts++;
                r = load_part(l, json_object_array_get_idx(a, i), &d->parts[i]);
                where_pop(l, old);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int load_root(struct jload *l, struct json_object *root, struct inventory *inv) {
        /* "enlist": what an enlisting machine adds (why it fit none of its
         * spec's layouts, enlist.h); not the machine's, skipped, so that the
         * enlisted file is what `kiln plan --inventory` reads */
        static const char *const keys[] = { "version", "hostname", "machine_uuid", "serial", "cpu", "memory", "disks",
                                            "nics", "enlist", NULL };
        static const char *const cpu_keys[] = { "model", "count", "aes", "vaes", "avx2", NULL };
        static const char *const mem_keys[] = { "total", "available", NULL };
        static const char *const nic_keys[] = { "name", "mac", "up", "ipv4", NULL };
        int r;
        if ((r = load_object(l, root)) < 0 || (r = check_keys(l, root, keys)) < 0)
                return r;
        uint64_t version;
        if ((r = get_u64(l, root, "version", UINT32_MAX, &version)) < 0)
                return r;
        if (version != 1)
                return jerr(l, "version", "unsupported inventory version (expected 1)");
        if ((r = get_str(l, root, "hostname", &inv->hostname)) < 0 ||
            (r = get_str(l, root, "machine_uuid", &inv->machine_uuid)) < 0 ||
            (r = get_str(l, root, "serial", &inv->serial)) < 0)
                return r;
        struct json_object *cpu, *mem;
        if (json_object_object_get_ex(root, "cpu", &cpu) && cpu) {
                strbuf_adds(&l->where, "cpu");
                if ((r = load_object(l, cpu)) < 0 || (r = check_keys(l, cpu, cpu_keys)) < 0 ||
                    (r = get_str(l, cpu, "model", &inv->cpu_model)) < 0 || (r = get_unsigned(l, cpu, "count", &inv->cpus)) < 0 ||
                    (r = get_bool(l, cpu, "aes", &inv->cpu_aes)) < 0 || (r = get_bool(l, cpu, "vaes", &inv->cpu_vaes)) < 0 ||
                    (r = get_bool(l, cpu, "avx2", &inv->cpu_avx2)) < 0)
                        return r;
                where_pop(l, 0);
        }
        if (json_object_object_get_ex(root, "memory", &mem) && mem) {
                strbuf_adds(&l->where, "memory");
                if ((r = load_object(l, mem)) < 0 || (r = check_keys(l, mem, mem_keys)) < 0 ||
                    (r = get_u64(l, mem, "total", UINT64_MAX, &inv->mem_total)) < 0 ||
                    (r = get_u64(l, mem, "available", UINT64_MAX, &inv->mem_available)) < 0)
                        return r;
                where_pop(l, 0);
        }
        struct json_object *a;
        size_t n;
        if ((r = get_array(l, root, "disks", INVENTORY_MAX_DISKS, &a, &n)) < 0)
                return r;
        if (n > 0 && !(inv->disks = calloc(n, sizeof *inv->disks)))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t old = where_push(l, "disks", i);
                inv->n_disks++;
                r = load_disk(l, json_object_array_get_idx(a, i), &inv->disks[i]);
                where_pop(l, old);
                if (r < 0)
                        return r;
        }
        if ((r = get_array(l, root, "nics", INVENTORY_MAX_NICS, &a, &n)) < 0)
                return r;
        if (n > 0 && !(inv->nics = calloc(n, sizeof *inv->nics)))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *o = json_object_array_get_idx(a, i);
                struct inv_nic *nic = &inv->nics[i];
                size_t old = where_push(l, "nics", i);
                inv->n_nics++;
                if ((r = load_object(l, o)) < 0 || (r = check_keys(l, o, nic_keys)) < 0 ||
                    (r = get_str(l, o, "name", &nic->name)) < 0 || (r = get_str(l, o, "mac", &nic->mac)) < 0 ||
                    (r = get_bool(l, o, "up", &nic->up)) < 0 || (r = get_strv(l, o, "ipv4", &nic->ipv4)) < 0)
                        return r;
                if (!nic->name)
                        return jerr(l, "name", "missing");
                where_pop(l, old);
        }
        return 0;
}

int inventory_from_json_string(const char *text, size_t len, struct inventory **ret, struct strbuf *err) {
        if (err)
                strbuf_reset(err);
        struct json_tokener *tok = json_tokener_new_ex(64);
        if (!tok)
                return -ENOMEM;
        if (len > INT32_MAX) {
                json_tokener_free(tok);
                return -EFBIG;
        }
        struct json_object *root = json_tokener_parse_ex(tok, text, (int) len);
        enum json_tokener_error jerr_code = json_tokener_get_error(tok);
        size_t off = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        const char *why = NULL;
        if (!root || jerr_code == json_tokener_continue)
                why = "unexpected end of data";
        else if (jerr_code != json_tokener_success)
                why = json_tokener_error_desc(jerr_code);
        else if (off < len && text[off + strspn(text + off, " \t\r\n")])
                why = "trailing data after the object";
        if (why) {
                json_object_put(root);
                return strbuf_errorf(err, -EBADMSG, "not valid JSON at byte %zu: %s", off, why);
        }
        struct jload l = { .where = STRBUF_INIT, .err = err };
        l.where.max = 4096;
        _cleanup_inventory_free_ struct inventory *inv = calloc(1, sizeof *inv);
        int r = inv ? load_root(&l, root, inv) : -ENOMEM;
        strbuf_release(&l.where);
        json_object_put(root);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(inv);
        return 0;
}

int inventory_load_json(const char *path, struct inventory **ret, struct strbuf *err) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (err)
                strbuf_reset(err);
        int r = read_full_file(path, INVENTORY_JSON_MAX, &buf, &len);
        if (r < 0)
                return r;
        return inventory_from_json_string(buf, len, ret, err);
}


/* ---------- text ---------- */

static int add_sigs(struct strbuf *out, const struct inv_signature *s, size_t n) {
        int r = 0;
        for (size_t i = 0; i < n && r >= 0; i++)
                r = strbuf_addf(out, "%s%s", i ? "," : "", s[i].type);
        if (n == 0)
                r = strbuf_adds(out, "-");
        return r;
}

static int add_use(struct strbuf *out, char *const *holders, const char *mountpoint) {
        int r = 0;
        bool any = false;
        for (size_t i = 0; holders && holders[i] && r >= 0; i++, any = true)
                r = strbuf_addf(out, "%s%s", any ? "," : "held by ", holders[i]);
        if (mountpoint && r >= 0) {
                r = strbuf_addf(out, "%smounted on %s", any ? ", " : "", mountpoint);
                any = true;
        }
        if (!any && r >= 0)
                r = strbuf_adds(out, "-");
        return r;
}

int inventory_to_text(const struct inventory *inv, struct strbuf *out) {
        char a[32], b[32];
        int r;
        if ((r = strbuf_addf(out, "host     %s  uuid %s  serial %s\n", inv->hostname ?: "-", inv->machine_uuid ?: "-",
                             inv->serial ?: "-")) < 0 ||
            (r = strbuf_addf(out, "cpu      %u x %s  [%s%s%s]\n", inv->cpus, inv->cpu_model ?: "-",
                             inv->cpu_aes ? "aes " : "-aes ", inv->cpu_vaes ? "vaes " : "-vaes ",
                             inv->cpu_avx2 ? "avx2" : "-avx2")) < 0 ||
            (r = strbuf_addf(out, "memory   %s total, %s available\n\n", format_size(inv->mem_total, a, sizeof a),
                             format_size(inv->mem_available, b, sizeof b))) < 0)
                return r;
        if ((r = strbuf_addf(out, "%-12s %10s %-5s %-9s %-4s %-20s %-24s %-18s %s\n", "DISK", "SIZE", "KIND", "TRANSPORT",
                             "SECT", "MODEL", "SERIAL", "SIGNATURES", "USE")) < 0)
                return r;
        for (size_t i = 0; i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                _cleanup_strbuf_ struct strbuf sg = STRBUF_INIT, use = STRBUF_INIT;
                char sect[16];
                snprintf(sect, sizeof sect, "%u%s", d->logical_sector, d->physical_sector != d->logical_sector ? "e" : "");
                if ((r = add_sigs(&sg, d->sigs, d->n_sigs)) < 0 || (r = add_use(&use, d->holders, d->mountpoint)) < 0)
                        return r;
                if ((r = strbuf_addf(out, "%-12s %10s %-5s %-9s %-4s %-20.20s %-24.24s %-18s %s%s%s\n", d->name,
                                     format_size(d->size, a, sizeof a),
                                     d->removable ? "rmv" : d->rotational ? "hdd" : "ssd", d->transport ?: "-", sect,
                                     d->model ?: "-", d->serial ?: "-", strbuf_str(&sg), strbuf_str(&use),
                                     d->readonly ? " (read-only)" : "", d->unreadable ? " (unreadable)" : "")) < 0)
                        return r;
                for (size_t j = 0; j < d->n_parts; j++) {
                        const struct inv_partition *p = &d->parts[j];
                        _cleanup_strbuf_ struct strbuf psg = STRBUF_INIT, puse = STRBUF_INIT;
                        char name[64];
                        snprintf(name, sizeof name, "%s%s", j + 1 == d->n_parts ? "└─" : "├─", p->name);
                        if ((r = add_sigs(&psg, p->sigs, p->n_sigs)) < 0 ||
                            (r = add_use(&puse, p->holders, p->mountpoint)) < 0)
                                return r;
                        /* the box-drawing prefix is 2 columns but 6 bytes */
                        if ((r = strbuf_addf(out, "%-16s %10s %-5s %-9s %-4s %-20s %-24s %-18s %s\n", name,
                                             format_size(p->size, a, sizeof a), "part", "", "", "", "", strbuf_str(&psg),
                                             strbuf_str(&puse))) < 0)
                                return r;
                }
        }
        if (inv->n_disks == 0 && (r = strbuf_adds(out, "(no disks)\n")) < 0)
                return r;
        if ((r = strbuf_addf(out, "\n%-12s %-17s %-5s %s\n", "NIC", "MAC", "STATE", "IPV4")) < 0)
                return r;
        for (size_t i = 0; i < inv->n_nics; i++) {
                const struct inv_nic *n = &inv->nics[i];
                _cleanup_strbuf_ struct strbuf ips = STRBUF_INIT;
                for (size_t j = 0; n->ipv4 && n->ipv4[j]; j++)
                        if ((r = strbuf_addf(&ips, "%s%s", j ? "," : "", n->ipv4[j])) < 0)
                                return r;
                if ((r = strbuf_addf(out, "%-12s %-17s %-5s %s\n", n->name, n->mac ?: "-", n->up ? "up" : "down",
                                     ips.len ? strbuf_str(&ips) : "-")) < 0)
                        return r;
        }
        if (inv->n_nics == 0 && (r = strbuf_adds(out, "(no NICs)\n")) < 0)
                return r;
        return 0;
}
