/* The parser's reading side, shared by every object family: diagnostics at a
 * node, "did you mean" hints, key checks, and one reader per value type
 * (string, bool, integer, size, enum, list, url, sha256, secret, id), each
 * of which reports what is wrong with the value and returns -1 then. */
#include "spec_internal.h"

#include "strbuf.h"
#include "url.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>

void spec_emit(struct ctx *c, unsigned line, unsigned col, const char *fmt, ...) {
        if (c->n_emitted >= SPEC_MAX_DIAGS) {
                if (c->n_emitted++ == SPEC_MAX_DIAGS && diags_add(c->d, c->file, 0, 0,
                                "more than %u problems; only the first %u are shown",
                                SPEC_MAX_DIAGS, SPEC_MAX_DIAGS) < 0 && c->error == 0)
                        c->error = -ENOMEM;
                return;
        }
        c->n_emitted++;
        va_list ap;
        va_start(ap, fmt);
        int r = diags_addv(c->d, c->file, line, col, fmt, ap);
        va_end(ap);
        if (r < 0 && c->error == 0)
                c->error = r;
}

static void warnv(struct ctx *c, unsigned line, unsigned col, const char *fmt, va_list ap) {
        if (c->n_emitted >= SPEC_MAX_DIAGS)
                return;
        c->n_emitted++;
        int r = diags_warnv(c->d, c->file, line, col, fmt, ap);
        if (r < 0 && c->error == 0)
                c->error = r;
}

void spec_warn(struct ctx *c, const struct ynode *n, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        warnv(c, n ? n->line : 0, n ? n->col : 0, fmt, ap);
        va_end(ap);
}

void spec_warn_at(struct ctx *c, struct spec_mark m, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        warnv(c, m.line, m.col, fmt, ap);
        va_end(ap);
}

/* Quote user text safely: printable ASCII only, bounded length. */
const char *spec_quote(const char *s, char buf[static QUOTE_MAX + 4]) {
        size_t i = 0;
        for (; s && s[i] && i < QUOTE_MAX; i++)
                buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
        if (s && s[i]) {
                memcpy(buf + i, "...", 3);
                i += 3;
        }
        buf[i] = 0;
        return buf;
}

/* "'key' of where" or "'key'" at top level */
const char *spec_field(const struct loc *l, const char *key, char buf[static 256]) {
        if (l->where)
                snprintf(buf, 256, "'%s%s' of %s", l->prefix, key, l->where);
        else
                snprintf(buf, 256, "'%s%s'", l->prefix, key);
        return buf;
}

const char *spec_describe(const struct ynode *n, char buf[static QUOTE_MAX + 8]) {
        if (n->kind == YNODE_SEQ)
                return "a list";
        if (n->kind == YNODE_MAP)
                return "a mapping";
        char t[QUOTE_MAX + 4];
        snprintf(buf, QUOTE_MAX + 8, "'%s'", spec_quote(n->value, t));
        return buf;
}

/* Optimal string alignment distance, for "did you mean". */
static unsigned edit_distance(const char *a, const char *b) {
        size_t la = strlen(a), lb = strlen(b);
        if (la > ID_MAX || lb > ID_MAX)
                return UINT32_MAX;
        unsigned d[ID_MAX + 1][ID_MAX + 1];
        for (size_t i = 0; i <= la; i++)
                d[i][0] = (unsigned) i;
        for (size_t j = 0; j <= lb; j++)
                d[0][j] = (unsigned) j;
        for (size_t i = 1; i <= la; i++)
                for (size_t j = 1; j <= lb; j++) {
                        unsigned cost = a[i - 1] != b[j - 1];
                        unsigned v = d[i - 1][j] + 1;
                        if (d[i][j - 1] + 1 < v)
                                v = d[i][j - 1] + 1;
                        if (d[i - 1][j - 1] + cost < v)
                                v = d[i - 1][j - 1] + cost;
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                                v = d[i - 2][j - 2] + 1;
                        d[i][j] = v;
                }
        return d[la][lb];
}

bool spec_close_enough(const char *word, const char *cand, unsigned *best) {
        unsigned dist = edit_distance(word, cand);
        size_t lw = strlen(word);
        if (dist > 2 || dist >= lw || dist >= strlen(cand) || dist >= *best)
                return false;
        *best = dist;
        return true;
}

const char *spec_suggest(const char *word, const char *const *cands) {
        const char *pick = NULL;
        unsigned best = UINT32_MAX;
        for (size_t i = 0; cands[i]; i++)
                if (spec_close_enough(word, cands[i], &best))
                        pick = cands[i];
        return pick;
}

/* ---- mapping access ---------------------------------------------------- */

/* The index in m->items of key's key node, or -1 (a key with a NUL in it
 * matches nothing). */
static ssize_t map_find(const struct ynode *m, const char *key) {
        if (!m || m->kind != YNODE_MAP)
                return -1;
        for (size_t i = 0; i + 1 < m->n; i += 2) {
                const struct ynode *k = m->items[i];
                if (k->kind == YNODE_SCALAR && k->len == strlen(k->value) && streq(k->value, key))
                        return (ssize_t) i;
        }
        return -1;
}

const struct ynode *spec_map_get(const struct ynode *m, const char *key) {
        ssize_t i = map_find(m, key);
        return i < 0 ? NULL : m->items[i + 1];
}

const struct ynode *spec_map_key(const struct ynode *m, const char *key) {
        ssize_t i = map_find(m, key);
        return i < 0 ? NULL : m->items[i];
}

/* The keys of each object kind: a key of one kind written under another
 * ("level" under a luks) is named as such instead of getting a near miss. */
static const struct {
        const char *kind;
        const char *const *keys;
} object_keys[] = {
        { "disk", spec_disk_keys }, { "partition", spec_partition_keys }, { "raid", spec_raid_keys }, { "luks", spec_luks_keys },
        { "volume group", spec_vg_keys }, { "volume", spec_lv_keys }, { "filesystem", spec_fs_keys },
};

/* Reports unknown and duplicate keys; only known keys are read later. */
void spec_check_keys(struct ctx *c, const struct ynode *m, const struct loc *l, const char *const *keys) {
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        for (size_t i = 0; i + 1 < m->n; i += 2) {
                const struct ynode *k = m->items[i];
                if (k->kind != YNODE_SCALAR || ynode_is_null(k) || k->len != strlen(k->value)) {
                        if (l->where)
                                emitn(c, k, "keys must be plain strings in %s", l->where);
                        else
                                emitn(c, k, "top-level keys must be plain strings");
                        continue;
                }
                bool dup = false;
                for (size_t j = 0; j < i; j += 2) {
                        const struct ynode *o = m->items[j];
                        if (o->kind == YNODE_SCALAR && streq(o->value, k->value)) {
                                if (l->where)
                                        emitn(c, k, "duplicate key '%s%s' in %s (first at line %u)",
                                              l->prefix, spec_quote(k->value, t), l->where, o->line);
                                else
                                        emitn(c, k, "duplicate top-level key '%s' (first at line %u)",
                                              spec_quote(k->value, t), o->line);
                                dup = true;
                                break;
                        }
                }
                if (dup)
                        continue;
                bool known = false;
                for (size_t j = 0; keys[j]; j++)
                        if (streq(keys[j], k->value))
                                known = true;
                if (known)
                        continue;
                const char *sug = spec_suggest(k->value, keys);
                char hint[160] = "";
                /* a key of another object kind: say whose it is, not a near miss */
                _cleanup_strbuf_ struct strbuf owners = STRBUF_INIT;
                const char *own_kind = NULL;
                size_t n_owners = 0, last = 0;
                for (size_t j = 0; j < ELEMENTSOF(object_keys); j++)
                        if (object_keys[j].keys == keys)
                                own_kind = object_keys[j].kind;
                for (size_t j = 0; own_kind && j < ELEMENTSOF(object_keys); j++)
                        if (object_keys[j].keys != keys && strv_contains((char **) object_keys[j].keys, k->value)) {
                                n_owners++;
                                last = j;
                        }
                for (size_t j = 0, seen = 0; n_owners && j < ELEMENTSOF(object_keys); j++)
                        if (object_keys[j].keys != keys && strv_contains((char **) object_keys[j].keys, k->value))
                                (void) strbuf_addf(&owners, "%s%s", seen++ == 0 ? "" : j == last ? " and " : ", ",
                                                   object_keys[j].kind);
                if (n_owners)
                        snprintf(hint, sizeof hint, " ('%s' is a key of %s, not of %s)", spec_quote(k->value, t2),
                                 strbuf_str(&owners), own_kind);
                else if (sug)
                        snprintf(hint, sizeof hint, " (did you mean '%s%s'?)", l->prefix, spec_quote(sug, t2));
                if (l->where)
                        emitn(c, k, "unknown key '%s%s' in %s%s", l->prefix, spec_quote(k->value, t), l->where, hint);
                else
                        emitn(c, k, "unknown top-level key '%s'%s", spec_quote(k->value, t), hint);
        }
}

/* ---- typed values: return 1 set, 0 absent, -1 invalid (reported) ------- */

int spec_want_scalar(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *expect) {
        char f[256], t[QUOTE_MAX + 8];
        if (v->kind != YNODE_SCALAR) {
                emitn(c, v, "%s must be %s, not %s", spec_field(l, key, f), expect, spec_describe(v, t));
                return -1;
        }
        if (ynode_is_null(v)) {
                emitn(c, v, "%s is empty", spec_field(l, key, f));
                return -1;
        }
        if (v->len != strlen(v->value)) {
                emitn(c, v, "%s contains a NUL character", spec_field(l, key, f));
                return -1;
        }
        return 1;
}

int spec_get_str(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret) {
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a string") < 0)
                return -1;
        char *s = strdup(v->value);
        if (!s) {
                c->error = -ENOMEM;
                return -1;
        }
        free(*ret);
        *ret = s;
        return 1;
}

int spec_get_bool(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, bool *ret) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "true or false") < 0)
                return -1;
        if (v->plain && (streq(v->value, "true") || streq(v->value, "True") || streq(v->value, "TRUE"))) {
                *ret = true;
                return 1;
        }
        if (v->plain && (streq(v->value, "false") || streq(v->value, "False") || streq(v->value, "FALSE"))) {
                *ret = false;
                return 1;
        }
        if (!v->plain && (strcasecmp(v->value, "true") == 0 || strcasecmp(v->value, "false") == 0))
                emitn(c, v, "%s must be true or false, not the quoted string %s (write it without quotes)",
                      spec_field(l, key, f), spec_describe(v, t));
        else
                emitn(c, v, "%s must be true or false, not %s", spec_field(l, key, f), spec_describe(v, t));
        return -1;
}

int spec_get_uint(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                    uint64_t min, uint64_t max, uint64_t *ret) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "an integer") < 0)
                return -1;
        uint64_t x;
        int r = v->plain ? safe_atou64(v->value, &x) : -EINVAL;
        if (r == -EINVAL && !v->plain && safe_atou64(v->value, &x) >= 0) {
                emitn(c, v, "%s must be an integer, not the quoted string %s (write it without quotes)",
                      spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        if (r == -EINVAL) {
                emitn(c, v, "%s must be an integer, not %s", spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        if (r < 0 || x < min || x > max) {
                emitn(c, v, "%s must be between %llu and %llu, not %s", spec_field(l, key, f),
                      (unsigned long long) min, (unsigned long long) max, spec_describe(v, t));
                return -1;
        }
        *ret = x;
        return 1;
}

int spec_get_unsigned(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                        unsigned min, unsigned max, unsigned *ret) {
        uint64_t x;
        int r = spec_get_uint(c, l, key, v, min, max, &x);
        if (r > 0)
                *ret = (unsigned) x;
        return r;
}

int spec_get_duration(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                      unsigned min_s, unsigned max_s, unsigned *ret) {
        static const struct { const char *unit; unsigned s; } units[] = { { "s", 1 }, { "min", 60 }, { "h", 3600 } };
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a duration") < 0)
                return -1;
        const char *p = v->value;
        size_t nd = strspn(p, "0123456789");
        char digits[24];
        uint64_t n = 0;
        unsigned mult = 0;
        for (size_t i = 0; i < ELEMENTSOF(units) && nd > 0; i++)
                if (streq(p + nd, units[i].unit))
                        mult = units[i].s;
        if (nd > 0 && nd < sizeof digits) {
                memcpy(digits, p, nd);
                digits[nd] = 0;
                if (safe_atou64(digits, &n) < 0)
                        mult = 0;
        }
        if (nd == 0 || nd >= sizeof digits || (!mult && p[nd])) {
                emitn(c, v, "%s must be a duration: a whole number and s, min or h ('300s', '5min'), not %s",
                      spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        if (!mult) {
                emitn(c, v, "%s has no unit: write '%ss' for seconds, or minutes as '5min'", spec_field(l, key, f), digits);
                return -1;
        }
        if (n > max_s / mult || n * mult < min_s) {
                emitn(c, v, "%s must be between %us and %us (%u min), not %s", spec_field(l, key, f), min_s, max_s,
                      max_s / 60, spec_describe(v, t));
                return -1;
        }
        *ret = (unsigned) (n * mult);
        return 1;
}

int spec_get_double(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                      double min, double max, double *ret) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a number") < 0)
                return -1;
        bool ok = v->plain && v->len > 0 && v->len < 32;
        for (size_t i = 0; ok && i < v->len; i++)
                if (!isdigit((unsigned char) v->value[i]) && !strchr(".eE+-", v->value[i]))
                        ok = false;
        double x = 0;
        if (ok) {
                char *end = NULL;
                errno = 0;
                x = strtod(v->value, &end);
                ok = end && *end == 0 && errno == 0 && isfinite(x);
        }
        if (!ok) {
                emitn(c, v, "%s must be a number, not %s", spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        if (x < min || x > max) {
                emitn(c, v, "%s must be between %g and %g, not %s", spec_field(l, key, f), min, max, spec_describe(v, t));
                return -1;
        }
        *ret = x;
        return 1;
}

/* A fraction ("1.5T", "0.5GB", "2.25GiB") as the same size in whole units of
 * the next smaller unit that holds it exactly ("1536G"), in buf; false when
 * s is no fraction or no smaller unit holds it (only bytes, or not even). */
static bool fraction_in_whole_units(const char *s, char *buf, size_t size) {
        static const char units[] = "KMGTP";
        size_t ni = strspn(s, "0123456789");
        if (ni == 0 || ni > 9 || s[ni] != '.')
                return false;
        const char *fr = s + ni + 1;
        size_t nf = strspn(fr, "0123456789");
        const char *u = fr + nf, *k = *u ? strchr(units, toupper((unsigned char) *u)) : NULL;
        if (nf == 0 || nf > 6 || !k)
                return false;
        const char *suffix = u + 1;             /* "", "B" or "iB" */
        if (*suffix && !streq(suffix, "B") && !streq(suffix, "iB"))
                return false;
        uint64_t base = streq(suffix, "B") ? 1000 : 1024, n = 0, div = 1;
        for (const char *p = s; p < u; p++)
                if (*p != '.')
                        n = n * 10 + (uint64_t) (*p - '0');
        for (size_t i = 0; i < nf; i++)
                div *= 10;
        /* n / div units of base^(k+1): try base^k, base^(k-1), ... bytes */
        for (size_t j = (size_t) (k - units); ; j--) {
                if (__builtin_mul_overflow(n, base, &n))
                        return false;
                if (n % div == 0) {
                        if (j == 0)
                                snprintf(buf, size, "%" PRIu64 "B", n / div);
                        else
                                snprintf(buf, size, "%" PRIu64 "%c%s", n / div, units[j - 1], suffix);
                        return true;
                }
                if (j == 0)
                        return false;
        }
}

/* A byte size (docs/spec.md "Sizes"): 512M, 20G, 30GB, 1TiB, 512B. A bare
 * number is refused: "size: 512" on an ESP meant MiB, not a 1 MiB partition. */
static int parse_bytes_value(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                             const char *expect, uint64_t *ret) {
        char f[256], t[QUOTE_MAX + 8], t2[QUOTE_MAX + 4];
        uint64_t x;
        unsigned flags = 0;
        int r = parse_size(v->value, &x, &flags);
        if (r == -ERANGE) {
                emitn(c, v, "%s is too large: %s", spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        if (r < 0) {
                /* a unit in the wrong case ("30gb", "1Tb", "20GIB"): say which spellings mean what */
                const char *u = v->value + strspn(v->value, "0123456789");
                char hint[160] = "";
                if (u != v->value && *u && strchr("KMGTPkmgtp", *u) &&
                    (!u[1] || strcasecmp(u + 1, "b") == 0 || strcasecmp(u + 1, "ib") == 0)) {
                        int n = (int) (u - v->value);
                        char L = (char) toupper((unsigned char) *u);
                        snprintf(hint, sizeof hint, " (write '%.*s%cB' for powers of 1000 or '%.*s%c' / '%.*s%ciB' for powers of 1024)",
                                 n, v->value, L, n, v->value, L, n, v->value, L);
                }
                /* a fraction: sizes are whole numbers of their unit, so the plan
                 * is exact to the byte and rounds nothing; say the whole one */
                char whole[48];
                if (fraction_in_whole_units(v->value, whole, sizeof whole))
                        snprintf(hint, sizeof hint, " (no fractions, so that a size is exact to the byte: write '%s')", whole);
                else if (u != v->value && *u == '.')
                        snprintf(hint, sizeof hint, " (no fractions, so that a size is exact to the byte: this one is no whole number of bytes)");
                emitn(c, v, "%s must be %s, not %s%s", spec_field(l, key, f), expect, spec_describe(v, t), hint);
                return -1;
        }
        if (x == 0) {
                emitn(c, v, "%s must not be 0", spec_field(l, key, f));
                return -1;
        }
        if (flags & SIZE_BARE) {
                static const char units[] = "KMGTP";
                unsigned u = 0;
                uint64_t y = x;
                while (u < 5 && y >= 1024 && y % 1024 == 0) {
                        y /= 1024;
                        u++;
                }
                spec_quote(v->value, t2);
                if (u > 0)
                        emitn(c, v, "%s has no unit: write '%" PRIu64 "%c' (%s bytes) or '%sB'", spec_field(l, key, f), y,
                              units[u - 1], t2, t2);
                else
                        emitn(c, v, "%s has no unit: write '%sM' (MiB), '%sMB' (10^6 bytes) or '%sB' (bytes)",
                              spec_field(l, key, f), t2, t2, t2);
                return -1;
        }
        *ret = x;
        return 1;
}

int spec_get_bytes(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, uint64_t *ret) {
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a size") < 0)
                return -1;
        return parse_bytes_value(c, l, key, v, "a size like 512M, 20G, 30GB or 1TiB", ret);
}

/* Partition sizes: bytes, "N%" of the disk, "rest". Volume sizes: bytes, "N%FREE", "100%FREE", "rest". */
int spec_get_size(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                         bool lv, struct spec_size *ret) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a size") < 0)
                return -1;
        struct spec_size sz = { .mark = { v->line, v->col } };
        const char *s = v->value;
        const char *pct = strchr(s, '%');
        if (streq(s, "rest"))
                sz.kind = SPEC_SIZE_REST;
        else if (pct) {
                char num[16];
                size_t n = (size_t) (pct - s);
                unsigned p = 0;
                bool ok = n > 0 && n < sizeof num;
                if (ok) {
                        memcpy(num, s, n);
                        num[n] = 0;
                        ok = safe_atou(num, &p) == 0;
                }
                ok = ok && (lv ? streq(pct, "%FREE") : streq(pct, "%"));
                if (!ok || p < 1 || p > 100) {
                        emitn(c, v, "%s must be %s, not %s", spec_field(l, key, f),
                              lv ? "a size like 20G, 'N%FREE' (1-100) or '100%FREE'"
                                 : "a size like 20G, a percentage of the disk (1%-100%) or 'rest'",
                              spec_describe(v, t));
                        return -1;
                }
                if (lv && p == 100)
                        sz.kind = SPEC_SIZE_REST;
                else {
                        sz.kind = SPEC_SIZE_PERCENT;
                        sz.percent = p;
                }
        } else {
                if (parse_bytes_value(c, l, key, v,
                                      lv ? "a size like 20G, 'N%FREE' (1-100) or '100%FREE'"
                                         : "a size like 20G, a percentage of the disk (1%-100%) or 'rest'",
                                      &sz.bytes) < 0)
                        return -1;
                sz.kind = SPEC_SIZE_BYTES;
        }
        *ret = sz;
        return 1;
}

int spec_get_enum(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                    const char *const *names, int *ret) {
        char f[256], t[QUOTE_MAX + 8], t2[QUOTE_MAX + 4];
        if (!v)
                return 0;
        if (spec_want_scalar(c, l, key, v, "a string") < 0)
                return -1;
        for (size_t i = 0; names[i]; i++)
                if (streq(names[i], v->value)) {
                        *ret = (int) i;
                        return 1;
                }
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        for (size_t i = 0; names[i]; i++)
                (void) strbuf_addf(&sb, "%s%s", i ? ", " : "", names[i]);
        const char *sug = spec_suggest(v->value, names);
        char hint[128] = "";
        if (sug)
                snprintf(hint, sizeof hint, " (did you mean '%s'?)", spec_quote(sug, t2));
        emitn(c, v, "%s must be one of %s, not %s%s", spec_field(l, key, f), strbuf_str(&sb), spec_describe(v, t), hint);
        return -1;
}

/* A list of strings; with allow_single, one plain string counts as a list of one. */
int spec_get_strv(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                    bool allow_single, char ***ret, struct spec_mark **ret_marks) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        const struct ynode *const *items;
        size_t n;
        if (v->kind == YNODE_SEQ) {
                items = (const struct ynode *const *) v->items;
                n = v->n;
        } else if (allow_single && v->kind == YNODE_SCALAR && !ynode_is_null(v)) {
                items = (const struct ynode *const *) &v;
                n = 1;
        } else {
                if (ynode_is_null(v))
                        emitn(c, v, "%s is empty", spec_field(l, key, f));
                else
                        emitn(c, v, "%s must be a list%s, not %s", spec_field(l, key, f),
                              allow_single ? " or a single id" : " of strings", spec_describe(v, t));
                return -1;
        }
        if (n == 0) {
                emitn(c, v, "%s is an empty list", spec_field(l, key, f));
                return -1;
        }
        _cleanup_strv_free_ char **sv = calloc(n + 1, sizeof *sv);
        _cleanup_free_ struct spec_mark *marks = calloc(n, sizeof *marks);
        if (!sv || !marks) {
                c->error = -ENOMEM;
                return -1;
        }
        bool bad = false;
        for (size_t i = 0; i < n; i++) {
                const struct ynode *it = items[i];
                if (it->kind != YNODE_SCALAR || ynode_is_null(it) || it->len != strlen(it->value)) {
                        emitn(c, it, "%s must list strings, not %s", spec_field(l, key, f),
                              it->kind == YNODE_SCALAR ? "an empty value" : spec_describe(it, t));
                        bad = true;
                        sv[i] = strdup("");
                } else
                        sv[i] = strdup(it->value);
                if (!sv[i]) {
                        c->error = -ENOMEM;
                        return -1;
                }
                marks[i] = (struct spec_mark) { it->line, it->col };
        }
        if (bad)
                return -1;
        strv_free(*ret);
        *ret = TAKE_PTR(sv);
        if (ret_marks) {
                free(*ret_marks);
                *ret_marks = TAKE_PTR(marks);
        }
        return 1;
}

int spec_want_map(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v) {
        char f[256], t[QUOTE_MAX + 8];
        if (!v)
                return 0;
        if (v->kind != YNODE_MAP) {
                if (ynode_is_null(v))
                        emitn(c, v, "%s is empty", spec_field(l, key, f));
                else
                        emitn(c, v, "%s must be a mapping, not %s", spec_field(l, key, f), spec_describe(v, t));
                return -1;
        }
        return 1;
}

/* ---- value checks ------------------------------------------------------ */

static bool valid_id(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > ID_MAX || !isalnum((unsigned char) s[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char) s[i]) && !strchr("_.-", s[i]))
                        return false;
        return true;
}

/* md, dm, VG and LV names: letters, digits, "_.+-", not starting with '-' or '.' */
void spec_check_name(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                       const char *name, size_t max) {
        char f[256], t[QUOTE_MAX + 4];
        bool ok = *name && *name != '-' && *name != '.' && strlen(name) <= max;
        for (const char *p = name; ok && *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.+-", *p))
                        ok = false;
        if (!ok)
                emitn(c, v, "%s must be a name of at most %zu letters, digits, '_', '.', '+', '-', not '%s'",
                      spec_field(l, key, f), max, spec_quote(name, t));
}

static void check_url(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                      const char *url, bool allow_file) {
        char f[256], t[QUOTE_MAX + 4], shown[URL_DISPLAY_MAX];
        const char *sep = strstr(url, "://");
        url_display(url, shown);        /* errors quote it without userinfo or query string */
        if (!sep) {
                emitn(c, v, "%s is not a url: '%s'", spec_field(l, key, f), spec_quote(shown, t));
                return;
        }
        size_t n = (size_t) (sep - url);
        bool http = (n == 4 && strncmp(url, "http", 4) == 0) || (n == 5 && strncmp(url, "https", 5) == 0);
        bool file = n == 4 && strncmp(url, "file", 4) == 0;
        if (!http && !(file && allow_file)) {
                char scheme[QUOTE_MAX + 1];
                size_t sn = n < QUOTE_MAX ? n : QUOTE_MAX;
                memcpy(scheme, url, sn);
                scheme[sn] = 0;
                emitn(c, v, "%s uses scheme '%s'; use %s", spec_field(l, key, f), spec_quote(scheme, t),
                      allow_file ? "http, https or file" : "http or https");
                return;
        }
        const char *rest = sep + 3;
        if (http && (!*rest || *rest == '/')) {
                emitn(c, v, "%s has no host: '%s'", spec_field(l, key, f), spec_quote(shown, t));
                return;
        }
        if (file && *rest != '/') {
                emitn(c, v, "%s must name an absolute path: '%s'", spec_field(l, key, f), spec_quote(shown, t));
                return;
        }
        for (const char *p = url; *p; p++)
                if ((unsigned char) *p <= 0x20 || *p == 0x7f) {
                        emitn(c, v, "%s contains a space or control character", spec_field(l, key, f));
                        return;
                }
        spec_check_vars(c, l, key, v, url);
}

int spec_get_url(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v,
                   bool allow_file, char **ret) {
        int r = spec_get_str(c, l, key, v, ret);
        if (r > 0)
                check_url(c, l, key, v, *ret, allow_file);
        return r;
}

int spec_get_sha256(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret) {
        char f[256];
        int r = spec_get_str(c, l, key, v, ret);
        if (r <= 0)
                return r;
        bool ok = hex_valid(*ret, 64);
        for (char *p = *ret; ok && *p; p++)
                *p = (char) tolower((unsigned char) *p);
        if (!ok) {
                emitn(c, v, "%s must be 64 hexadecimal digits", spec_field(l, key, f));
                return -1;
        }
        if (strspn(*ret, "0") == 64)
                spec_warn(c, v, "%s is all zeros, a placeholder: no download will match it", spec_field(l, key, f));
        return 1;
}

/* The fake values templates and examples carry; a node given one would use
 * it as its real secret. Matched without regard to case. */
static bool secret_is_placeholder(const char *s) {
        static const char *const words[] = {
                "fake", "changeme", "change-me", "change_me", "placeholder", "not-a-secret", "example",
                "replace-me", "replaceme", "your-", "todo", "xxxx", "12345678", "password", NULL,
        };
        for (size_t i = 0; words[i]; i++)
                if (strcasestr(s, words[i]))
                        return true;
        size_t n = strlen(s);
        return n > 0 && strspn(s, (char[]) { s[0], 0 }) == n;
}

/* A secret: any string, long enough that the log filter can redact it. Never echoed. */
int spec_get_secret(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, char **ret) {
        char f[256];
        int r = spec_get_str(c, l, key, v, ret);
        if (r > 0 && strlen(*ret) < 8) {
                emitn(c, v, "%s is too short (at least 8 characters)", spec_field(l, key, f));
                return -1;
        }
        /* never echo it, not even the word that matched */
        if (r > 0 && secret_is_placeholder(*ret))
                spec_warn(c, v, "%s looks like a placeholder: put the real secret in before a node uses this spec",
                     spec_field(l, key, f));
        return r;
}

void spec_missing(struct ctx *c, const struct ynode *m, const char *where, const char *key) {
        if (where)
                emitn(c, m, "%s has no '%s'", where, key);
        else
                emitn(c, m, "spec has no '%s'", key);
}

/* A required reference ("on", "vg"): the string and its mark, or a
 * "missing" diagnostic when the key is absent. > 0 when it was read. */
int spec_get_ref(struct ctx *c, const struct ynode *m, const struct loc *l, const char *where, const char *key,
                   char **ret, struct spec_mark *ret_mark) {
        const struct ynode *v = spec_map_get(m, key);
        int r = spec_get_str(c, l, key, v, ret);
        if (r > 0)
                *ret_mark = (struct spec_mark) { v->line, v->col };
        else if (!v)
                spec_missing(c, m, where, key);
        return r;
}

/* ---- objects ----------------------------------------------------------- */

/* Reads "id" and sets where to "KIND 'ID'" (or "KIND #N" without a usable id). */
void spec_get_id(struct ctx *c, const struct ynode *m, const char *kind, size_t idx, char **ret,
                   char where[static 128]) {
        char t[QUOTE_MAX + 4];
        const struct ynode *v = spec_map_get(m, "id");
        snprintf(where, 128, "%s #%zu", kind, idx + 1);
        struct loc l = { where, "" };
        if (!v) {
                spec_missing(c, m, where, "id");
                return;
        }
        if (spec_get_str(c, &l, "id", v, ret) <= 0)
                return;
        if (!valid_id(*ret)) {
                emitn(c, v, "invalid id '%s' in %s (letters, digits, '_', '.', '-'; starts with a letter or digit; at most %d)",
                      spec_quote(*ret, t), where, ID_MAX);
                free(*ret);
                *ret = NULL;
                return;
        }
        snprintf(where, 128, "%s '%s'", kind, *ret);
}

const struct ynode *spec_entry_map(struct ctx *c, const struct ynode *it, const char *kind, size_t idx) {
        char t[QUOTE_MAX + 8];
        if (it->kind == YNODE_MAP)
                return it;
        if (ynode_is_null(it))
                emitn(c, it, "%s #%zu is empty", kind, idx + 1);
        else
                emitn(c, it, "%s #%zu must be a mapping, not %s", kind, idx + 1, spec_describe(it, t));
        return NULL;
}
