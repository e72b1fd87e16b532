/* What the spec parser's files share (spec.c and spec_*.c, one per object
 * family): the parse context, the diagnostics, the typed readers of YAML
 * values and the object index the cross-checks resolve references with.
 * Not for the rest of agent/: they include spec.h. */
#pragma once
#include "spec.h"
#include "spec_yaml.h"
#include "strtable.h"

#define ID_MAX 64
#define SPEC_MAX_DIAGS 1000u    /* per file; a garbage file should not print a million lines */
#define QUOTE_MAX 48

/* Every object that has an id, for references, duplicates, consumers and cycles. */
struct obj {
        const char *id;
        enum spec_obj_kind kind;
        const void *ptr;
        unsigned line, col;
        unsigned mult;          /* how many block devices this id stands for */
        char *used_by;          /* first consumer, e.g. "raid 'md0'" */
        const void *user;       /* identity of the first consumer */
        enum spec_obj_kind user_kind;   /* its kind; SPEC_OBJ_NONE for filesystems and the image */
        unsigned used_line;     /* where the first consumer refers to it */
        bool used_shared;       /* the consumer is a partition (several may share a disk) */
        int color;              /* cycle search: 0 new, 1 on stack, 2 done */
};

struct ctx {
        const char *file;
        struct diags *d;
        int error;              /* first allocation failure */
        size_t n_emitted;
        struct spec *s;
        struct obj *objs;
        size_t n_objs;
        struct obj **index;     /* first object of each id, sorted by id */
        size_t n_index;
        bool shared_only;       /* a spec with layouts: what the layouts share, without storage checks */
};

/* Where a field lives, for messages: "'pbkdf.type' of luks 'c'". */
struct loc {
        const char *where;      /* NULL: top level */
        const char *prefix;     /* "" or "pbkdf." */
};

#define KIND_BIT(k) (1u << (k))
#define BLOCK_KINDS (KIND_BIT(SPEC_OBJ_DISK) | KIND_BIT(SPEC_OBJ_PARTITION) | KIND_BIT(SPEC_OBJ_RAID) | \
                     KIND_BIT(SPEC_OBJ_LUKS) | KIND_BIT(SPEC_OBJ_LV))

/* ---- messages (spec_fields.c) ------------------------------------------ */

void spec_emit(struct ctx *c, unsigned line, unsigned col, const char *fmt, ...) _printf_(4, 5);
/* A warning (docs/spec.md "Warnings"): shown, the spec stands unless --strict. */
void spec_warn(struct ctx *c, const struct ynode *n, const char *fmt, ...) _printf_(3, 4);
void spec_warn_at(struct ctx *c, struct spec_mark m, const char *fmt, ...) _printf_(3, 4);

/* At a node; nothing more is said about a refused alias (no cascades). */
#define emitn(c, n, ...)                                                                        \
        do {                                                                                    \
                const struct ynode *_n = (n);                                                   \
                if (!_n || !_n->alias)                                                          \
                        spec_emit((c), _n ? _n->line : 0, _n ? _n->col : 0, __VA_ARGS__);       \
        } while (0)

/* Quote user text safely: printable ASCII only, bounded length. */
const char *spec_quote(const char *s, char buf[static QUOTE_MAX + 4]);
/* "'key' of where" or "'key'" at top level */
const char *spec_field(const struct loc *l, const char *key, char buf[static 256]);
const char *spec_describe(const struct ynode *n, char buf[static QUOTE_MAX + 8]);
/* Is cand a near miss of word, nearer than *best (then updated)? For "did you mean". */
bool spec_close_enough(const char *word, const char *cand, unsigned *best);
/* A MAC as a spec writes it: "52:54:00:12:34:56", hex digits in any case. */
bool spec_valid_mac(const char *s);
const char *spec_suggest(const char *word, const char *const *cands);

/* ---- mapping access ---------------------------------------------------- */

const struct ynode *spec_map_get(const struct ynode *m, const char *key);
const struct ynode *spec_map_key(const struct ynode *m, const char *key);
/* Reports unknown and duplicate keys; only known keys are read later. */
void spec_check_keys(struct ctx *c, const struct ynode *m, const struct loc *l, const char *const *keys);

/* The keys of each object kind, for spec_check_keys' "a key of another
 * kind" hint; each defined beside its object's parser. */
extern const char *const spec_disk_keys[], *const spec_partition_keys[], *const spec_raid_keys[],
        *const spec_luks_keys[], *const spec_vg_keys[], *const spec_lv_keys[], *const spec_fs_keys[];

/* ---- typed values: return 1 set, 0 absent, -1 invalid (reported) ------- */

int spec_want_scalar(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *expect);
int spec_want_map(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v);
int spec_get_str(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret);
int spec_get_bool(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, bool *ret);
int spec_get_uint(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                  uint64_t min, uint64_t max, uint64_t *ret);
int spec_get_unsigned(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                      unsigned min, unsigned max, unsigned *ret);
int spec_get_double(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                    double min, double max, double *ret);
int spec_get_bytes(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, uint64_t *ret);
/* A duration as systemd spells one: N followed by s, min or h ("300s",
 * "5min"); a bare number is refused (which unit?). *ret in seconds. */
int spec_get_duration(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                      unsigned min_s, unsigned max_s, unsigned *ret);
/* Partition sizes: bytes, "N%" of the disk, "rest". Volume sizes: bytes, "N%FREE", "100%FREE", "rest". */
int spec_get_size(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                  bool lv, struct spec_size *ret);
/* One of names (NULL-terminated, indexed by the enum): *ret is its index. */
int spec_get_enum(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                  const char *const *names, int *ret);
/* A list of strings; with allow_single, one plain string counts as a list of one. */
int spec_get_strv(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                  bool allow_single, char ***ret, struct spec_mark **ret_marks);
int spec_get_url(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                 bool allow_file, char **ret);
int spec_get_sha256(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret);
/* A secret: any string, long enough that the log filter can redact it. Never echoed. */
int spec_get_secret(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret);
/* A required reference ("on", "vg"): the string and its mark, or a
 * "missing" diagnostic when the key is absent. > 0 when it was read. */
int spec_get_ref(struct ctx *c, const struct ynode *m, const struct loc *l, const char *where, const char *key,
                 char **ret, struct spec_mark *ret_mark);
/* Reads "id" and sets where to "KIND 'ID'" (or "KIND #N" without a usable id). */
void spec_get_id(struct ctx *c, const struct ynode *m, const char *kind, size_t idx, char **ret,
                 char where[static 128]);
void spec_missing(struct ctx *c, const struct ynode *m, const char *where, const char *key);
const struct ynode *spec_entry_map(struct ctx *c, const struct ynode *it, const char *kind, size_t idx);

/* md, dm, VG and LV names: letters, digits, "_.+-", not starting with '-' or '.' */
void spec_check_name(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                     const char *name, size_t max);
/* ${mac} ${uuid} ${serial} ${hostname} (and the ${mac} forms) are the only variables. */
bool spec_check_vars(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *s);

static inline bool spec_is_pow2(uint64_t x) {
        return x && !(x & (x - 1));
}

/* A top-level list section: allocates n entries and parses each mapping. */
#define PARSE_SECTION(c, root, key, kname, arr, n_arr, fn)                                       \
        do {                                                                                    \
                const struct ynode *_v = spec_map_get((root), (key));                           \
                if (!_v)                                                                        \
                        break;                                                                  \
                if (_v->kind != YNODE_SEQ) {                                                    \
                        char _f[256], _t[QUOTE_MAX + 8];                                        \
                        struct loc _l = { NULL, "" };                                           \
                        if (ynode_is_null(_v))                                                  \
                                emitn((c), _v, "%s is empty", spec_field(&_l, (key), _f));      \
                        else                                                                    \
                                emitn((c), _v, "%s must be a list, not %s", spec_field(&_l, (key), _f), \
                                      spec_describe(_v, _t));                                   \
                        break;                                                                  \
                }                                                                               \
                if (_v->n == 0)                                                                 \
                        break;                                                                  \
                (arr) = calloc(_v->n, sizeof *(arr));                                           \
                if (!(arr)) {                                                                   \
                        (c)->error = -ENOMEM;                                                   \
                        break;                                                                  \
                }                                                                               \
                for (size_t _i = 0; _i < _v->n; _i++) {                                         \
                        const struct ynode *_m = spec_entry_map((c), _v->items[_i], (kname), _i); \
                        if (_m)                                                                 \
                                fn((c), _m, _i, &(arr)[(n_arr)++]);                             \
                }                                                                               \
        } while (0)

/* ---- the object index and references (spec.c) ------------------------- */

const char *spec_kind_name(enum spec_obj_kind k);
struct obj *spec_find_obj(struct ctx *c, const char *id);
/* Resolves a reference; reports unknown ids and wrong kinds. */
struct obj *spec_resolve(struct ctx *c, const char *field, const char *where, const char *id,
                         struct spec_mark mark, unsigned kinds);
/* Records that consumer (e.g. "raid 'md0'", identity who) uses o; each device
 * has one user, except that any number of partitions may share a disk. */
void spec_consume(struct ctx *c, struct obj *o, const void *who, enum spec_obj_kind who_kind,
                  const char *consumer, bool shared, struct spec_mark mark);
void spec_single_device(struct ctx *c, const struct obj *o, const char *field, const char *where, struct spec_mark mark);
/* The i-th id an object is built on, or NULL past the last. */
const char *spec_obj_dep(const struct obj *o, size_t i);
/* Wipes and frees a secret; accepts NULL. */
void spec_free_secret(char *s);

/* ---- one file per object family: parse, check across objects, free ------
 * The cross-checks run in the order spec.c's cross_check calls them; each
 * relies on the counts and references the ones before it resolved. */

/* spec_disks.c: disks and partitions */
void spec_parse_disk(struct ctx *c, const struct ynode *m, size_t idx, struct spec_disk *d);
void spec_parse_partition(struct ctx *c, const struct ynode *m, size_t idx, struct spec_partition *p);
void spec_check_partitions(struct ctx *c);
void spec_check_partition_types(struct ctx *c);
void spec_free_disks(struct spec *s);

/* spec_raid.c */
void spec_parse_raid(struct ctx *c, const struct ynode *m, size_t idx, struct spec_raid *a);
int spec_check_raids(struct ctx *c);
void spec_free_raids(struct spec *s);

/* spec_luks.c: luks and its unlock */
void spec_parse_luks(struct ctx *c, const struct ynode *m, size_t idx, struct spec_luks *x);
void spec_check_luks_names(struct ctx *c);
void spec_check_luks_on(struct ctx *c);
void spec_check_unlock(struct ctx *c);
void spec_free_luks(struct spec *s);

/* spec_bench.c */
void spec_parse_bench(struct ctx *c, const struct ynode *m, struct spec_bench *b);
void spec_set_bench_ciphers(struct ctx *c);
void spec_free_bench(struct spec *s);

/* spec_lvm.c: volume groups and volumes */
void spec_parse_vg(struct ctx *c, const struct ynode *m, size_t idx, struct spec_vg *g);
void spec_parse_lv(struct ctx *c, const struct ynode *m, size_t idx, struct spec_lv *lv);
int spec_check_lvm(struct ctx *c);
void spec_free_lvm(struct spec *s);

/* spec_fs.c: filesystems and swap */
void spec_parse_fs(struct ctx *c, const struct ynode *m, size_t idx, struct spec_filesystem *fs);
bool spec_check_filesystems(struct ctx *c);
void spec_check_generated_keys(struct ctx *c);
void spec_free_filesystems(struct spec *s);

/* spec_image.c */
void spec_parse_image(struct ctx *c, const struct ynode *m, struct spec_image *im);
void spec_check_image(struct ctx *c, bool root);
void spec_free_image(struct spec *s);

/* spec_boot.c */
void spec_parse_boot(struct ctx *c, const struct ynode *m, struct spec_boot *b);
void spec_check_boot(struct ctx *c);
void spec_free_boot(struct spec *s);

/* spec_register.c: cloudstack and webhook */
void spec_parse_register(struct ctx *c, const struct ynode *m, struct spec *s);
void spec_free_register(struct spec *s);

/* spec_network.c */
void spec_parse_network(struct ctx *c, const struct ynode *m);
void spec_free_network(struct spec_network *n);
/* An address field: its ${...} checked, its syntax too when it has none. */
void spec_check_ip(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *s,
                   bool with_prefix);
/* Do a and b ("ADDR" or "ADDR/PREFIX", without ${...}) name the same address, whatever the prefix? */
bool spec_ip_same(const char *a, const char *b);

/* spec_nodes.c: the per-node table (after network: a row names a bridge) */
void spec_parse_nodes(struct ctx *c, const struct ynode *m);
void spec_free_nodes(struct spec *s);

/* The hostname checks (RFC 1123 with every variable standing for one
 * letter, no ${mac}); field names it in messages ("'hostname'"). */
void spec_check_hostname(struct ctx *c, const struct ynode *v, const char *field, const char *h);
