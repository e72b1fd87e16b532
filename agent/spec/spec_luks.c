/* luks and its unlock (docs/spec.md "luks"): cipher, PBKDF, the key source,
 * the Tang pins, and the checks of the dm names, of what each luks is on and
 * of where its pins can be bound. */
#include "spec_internal.h"

#include <arpa/inet.h>
#include <ctype.h>

const char *const spec_luks_keys[] = {
        "id", "on", "name", "cipher", "key_size", "sector_size", "label", "pbkdf", "perf", "discard", "key",
        "unlock", NULL,
};

static const char *const pbkdf_types[] = {
        [SPEC_PBKDF_DEFAULT] = "default", [SPEC_PBKDF_ARGON2ID] = "argon2id", [SPEC_PBKDF_ARGON2I] = "argon2i",
        [SPEC_PBKDF_PBKDF2] = "pbkdf2", NULL,
};

static void parse_luks_key(struct ctx *c, const struct ynode *m, const char *where, struct spec_luks *x) {
        static const char *const keys[] = { "passphrase", "url", "sha256", "generate", "escrow", NULL };
        char f[256];
        struct loc lk = { where, "key." };
        const struct ynode *k = spec_map_get(m, "key");
        if (!k) {
                emitn(c, m, "%s has no 'key' (give 'passphrase', 'url' with 'sha256', or 'generate: true')", where);
                return;
        }
        if (k->kind != YNODE_MAP) {
                /* never echo the value: it may well be a passphrase */
                emitn(c, k, "'key' of %s must be a mapping with 'passphrase', 'url' and 'sha256', or 'generate'", where);
                return;
        }
        x->key.mark = (struct spec_mark) { k->line, k->col };
        spec_check_keys(c, k, &lk, keys);
        const struct ynode *pass = spec_map_get(k, "passphrase"), *url = spec_map_get(k, "url"),
                           *sha = spec_map_get(k, "sha256"), *gen = spec_map_get(k, "generate");
        const char *given[3];
        size_t n = 0;
        if (pass)
                given[n++] = "passphrase";
        if (url)
                given[n++] = "url";
        if (gen)
                given[n++] = "generate";
        if (n == 0) {
                emitn(c, k, "'key' of %s gives no key source (give 'passphrase', 'url' with 'sha256', or 'generate: true')", where);
                return;
        }
        if (n > 1) {
                emitn(c, k, "'key' of %s is ambiguous: both '%s' and '%s' are given", where, given[0], given[1]);
                return;
        }
        if (pass) {
                if (spec_get_secret(c, &lk, "passphrase", pass, &x->key.passphrase) > 0) {
                        x->key.source = SPEC_KEY_PASSPHRASE;
                        x->key.passphrase_mark = (struct spec_mark) { pass->line, pass->col };
                }
                if (sha)
                        emitn(c, spec_map_key(k, "sha256"), "%s is only used with 'url'", spec_field(&lk, "sha256", f));
        } else if (url) {
                if (!sha)
                        emitn(c, k, "'key' of %s has 'url' but no 'sha256'", where);
                int r1 = spec_get_url(c, &lk, "url", url, true, &x->key.url);
                int r2 = spec_get_sha256(c, &lk, "sha256", sha, &x->key.sha256);
                if (r1 > 0 && r2 > 0)
                        x->key.source = SPEC_KEY_URL;
        } else {
                bool g = false;
                if (spec_get_bool(c, &lk, "generate", gen, &g) > 0) {
                        if (g)
                                x->key.source = SPEC_KEY_GENERATE;
                        else
                                emitn(c, gen, "%s must be true when given", spec_field(&lk, "generate", f));
                }
                if (sha)
                        emitn(c, spec_map_key(k, "sha256"), "%s is only used with 'url'", spec_field(&lk, "sha256", f));
        }
        const struct ynode *esc = spec_map_get(k, "escrow");
        if (!esc)
                return;
        if (!gen) {
                emitn(c, spec_map_key(k, "escrow"), "%s goes with 'generate: true' (a passphrase or a key at a url is "
                      "already kept by you)", spec_field(&lk, "escrow", f));
                return;
        }
        if (spec_get_str(c, &lk, "escrow", esc, &x->key.escrow) <= 0)
                return;
        char why[160];
        if (spec_escrow_cert(x->key.escrow, NULL, x->key.escrow_sha256, why, sizeof why) < 0)
                emitn(c, esc, "%s %s", spec_field(&lk, "escrow", f), why);
}

/* A Tang thumbprint as `jose jwk thp` prints it: base64url, no padding
 * (S1: 27 characters, S256: 43, S512: 86). */
static bool valid_thp(const char *s) {
        size_t n = strlen(s);
        if (n != 27 && n != 43 && n != 86)
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && *p != '-' && *p != '_')
                        return false;
        return true;
}

#define SPEC_TANG_MAX 8u

/* The host of an http(s) url (without userinfo, port and brackets) in buf;
 * NULL when url is none (check_url says so). */
static const char *url_host(const char *url, char *buf, size_t size) {
        const char *p = strstr(url, "://");
        if (!p || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
                return NULL;
        p += 3;
        size_t n = strcspn(p, "/?#");
        const char *at = memchr(p, '@', n);
        if (at) {
                n -= (size_t) (at + 1 - p);
                p = at + 1;
        }
        if (*p == '[') {
                const char *e = memchr(p, ']', n);
                if (!e)
                        return NULL;
                p++;
                n = (size_t) (e - p);
        } else {
                const char *colon = memchr(p, ':', n);
                if (colon)
                        n = (size_t) (colon - p);
        }
        if (n == 0 || n >= size)
                return NULL;
        memcpy(buf, p, n);
        buf[n] = 0;
        return buf;
}

/* unlock: {tang: [{url, thp}], threshold}; room is left for tpm2 (refused
 * by name until it is built, so a spec that asks for it is not silently
 * left without it). */
static void parse_luks_unlock(struct ctx *c, const struct ynode *u, const char *where, struct spec_luks *x) {
        static const char *const keys[] = { "tang", "threshold", "tpm2", NULL };
        static const char *const tang_keys[] = { "url", "thp", NULL };
        char f[256], t[QUOTE_MAX + 8], tw[192];
        struct loc l = { where, "" }, lu = { where, "unlock." };
        if (spec_want_map(c, &l, "unlock", u) <= 0)
                return;
        x->unlock.mark = (struct spec_mark) { u->line, u->col };
        spec_check_keys(c, u, &lu, keys);
        if (spec_map_get(u, "tpm2"))
                emitn(c, spec_map_key(u, "tpm2"), "%s is not supported yet (only 'tang' pins)", spec_field(&lu, "tpm2", f));
        const struct ynode *tv = spec_map_get(u, "tang");
        if (!tv) {
                emitn(c, u, "'unlock' of %s has no 'tang' (a list of {url, thp})", where);
                return;
        }
        if (tv->kind == YNODE_SEQ && tv->n == 0) {
                emitn(c, tv, "%s is an empty list (give at least one {url, thp})", spec_field(&lu, "tang", f));
                return;
        }
        if (tv->kind != YNODE_SEQ) {
                emitn(c, tv, "%s must be a list of {url, thp}, not %s", spec_field(&lu, "tang", f), spec_describe(tv, t));
                return;
        }
        if (tv->n > SPEC_TANG_MAX) {
                emitn(c, tv, "%s has %zu servers, at most %u are allowed", spec_field(&lu, "tang", f), tv->n, SPEC_TANG_MAX);
                return;
        }
        x->unlock.tang = calloc(tv->n, sizeof *x->unlock.tang);
        if (!x->unlock.tang) {
                c->error = -ENOMEM;
                return;
        }
        for (size_t i = 0; i < tv->n; i++) {
                const struct ynode *e = tv->items[i];
                snprintf(tw, sizeof tw, "tang server #%zu of %s", i + 1, where);
                struct loc lt = { tw, "" };
                if (e->kind != YNODE_MAP) {
                        emitn(c, e, "%s must be a mapping with 'url' and 'thp', not %s", tw, spec_describe(e, t));
                        continue;
                }
                struct spec_tang *tg = &x->unlock.tang[x->unlock.n_tang++];
                tg->mark = (struct spec_mark) { e->line, e->col };
                spec_check_keys(c, e, &lt, tang_keys);
                const struct ynode *v = spec_map_get(e, "url");
                if (!v)
                        spec_missing(c, e, tw, "url");
                else if (spec_get_url(c, &lt, "url", v, false, &tg->url) > 0 && strstr(tg->url, "${"))
                        emitn(c, v, "%s must not use variables (clevis keeps the url as written)", spec_field(&lt, "url", f));
                else if (tg->url) {
                        /* the installed initramfs brings the network up with
                         * ip= and resolves no name: clevis would never reach a
                         * Tang named by one, and the node waits at the prompt */
                        char host[256];
                        unsigned char bin[16];
                        const char *h = url_host(tg->url, host, sizeof host);
                        if (h && inet_pton(AF_INET, h, bin) != 1 && inet_pton(AF_INET6, h, bin) != 1)
                                emitn(c, v, "%s names host '%s'; give its IP address (http://10.0.2.100:7500): the initramfs "
                                      "that unlocks at boot resolves no names", spec_field(&lt, "url", f), spec_quote(h, t));
                }
                v = spec_map_get(e, "thp");
                if (!v)
                        spec_missing(c, e, tw, "thp");
                else if (spec_get_str(c, &lt, "thp", v, &tg->thp) > 0 && !valid_thp(tg->thp))
                        emitn(c, v, "%s must be a key thumbprint as 'jose jwk thp' prints it (43 characters of base64url), not %s",
                              spec_field(&lt, "thp", f), spec_describe(v, t));
        }
        x->unlock.threshold = 1;
        const struct ynode *th = spec_map_get(u, "threshold");
        if (spec_get_unsigned(c, &lu, "threshold", th, 1, SPEC_TANG_MAX, &x->unlock.threshold) > 0 &&
            x->unlock.threshold > tv->n)
                emitn(c, th, "%s is %u, but only %zu %s given", spec_field(&lu, "threshold", f), x->unlock.threshold, tv->n,
                      tv->n == 1 ? "pin is" : "pins are");
}

void spec_parse_luks(struct ctx *c, const struct ynode *m, size_t idx, struct spec_luks *x) {
        static const char *const pbkdf_keys[] = { "type", "time_ms", "max_memory", "iterations", "parallel", NULL };
        static const char *const perf_keys[] = { "no_read_workqueue", "no_write_workqueue", NULL };
        char where[128], f[256], t[QUOTE_MAX + 8];
        x->mark = (struct spec_mark) { m->line, m->col };
        x->count = 1;
        spec_get_id(c, m, "luks", idx, &x->id, where);
        struct loc l = { where, "" };
        spec_check_keys(c, m, &l, spec_luks_keys);

        (void) spec_get_ref(c, m, &l, where, "on", &x->on, &x->on_mark);

        const struct ynode *v = spec_map_get(m, "cipher");
        if (spec_get_str(c, &l, "cipher", v, &x->cipher) > 0) {
                bool ok = strchr(x->cipher, '-') && strlen(x->cipher) < 64;
                for (const char *p = x->cipher; ok && *p; p++)
                        if (!islower((unsigned char) *p) && !isdigit((unsigned char) *p) && !strchr("-_,", *p))
                                ok = false;
                if (!ok)
                        emitn(c, v, "%s must look like 'aes-xts-plain64', not %s", spec_field(&l, "cipher", f), spec_describe(v, t));
        }
        if (!x->cipher && !(x->cipher = strdup(SPEC_LUKS_CIPHER)))
                c->error = -ENOMEM;
        v = spec_map_get(m, "key_size");
        x->key_size = SPEC_LUKS_KEY_SIZE;
        if (spec_get_unsigned(c, &l, "key_size", v, 128, 1024, &x->key_size) > 0 && x->key_size % 8)
                emitn(c, v, "%s must be a multiple of 8 bits, not %s", spec_field(&l, "key_size", f), spec_describe(v, t));
        v = spec_map_get(m, "sector_size");
        uint64_t ss;
        if (spec_get_uint(c, &l, "sector_size", v, 0, UINT64_MAX, &ss) > 0) {
                if (ss == 512 || ss == 1024 || ss == 2048 || ss == 4096)
                        x->sector_size = (unsigned) ss;
                else
                        emitn(c, v, "%s must be 512, 1024, 2048 or 4096, not %s", spec_field(&l, "sector_size", f), spec_describe(v, t));
        }
        v = spec_map_get(m, "label");
        if (spec_get_str(c, &l, "label", v, &x->label) > 0 && strlen(x->label) > 47)
                emitn(c, v, "%s is longer than 47 characters", spec_field(&l, "label", f));

        const struct ynode *pb = spec_map_get(m, "pbkdf");
        if (spec_want_map(c, &l, "pbkdf", pb) > 0) {
                struct loc lp = { where, "pbkdf." };
                spec_check_keys(c, pb, &lp, pbkdf_keys);
                int e;
                if (spec_get_enum(c, &lp, "type", spec_map_get(pb, "type"), pbkdf_types, &e) > 0)
                        x->pbkdf.type = e;
                (void) spec_get_unsigned(c, &lp, "time_ms", spec_map_get(pb, "time_ms"), 1, 600000, &x->pbkdf.time_ms);
                v = spec_map_get(pb, "max_memory");
                if (spec_get_bytes(c, &lp, "max_memory", v, &x->pbkdf.max_memory) > 0 &&
                    (x->pbkdf.max_memory < 32 * 1024 || x->pbkdf.max_memory > 4ull << 30))
                        emitn(c, v, "%s must be between 32K and 4G, not %s", spec_field(&lp, "max_memory", f), spec_describe(v, t));
                v = spec_map_get(pb, "iterations");
                if (spec_get_unsigned(c, &lp, "iterations", v, 1000, UINT32_MAX, &x->pbkdf.iterations) > 0 &&
                    x->pbkdf.type != SPEC_PBKDF_PBKDF2)
                        emitn(c, v, "%s is only for type pbkdf2", spec_field(&lp, "iterations", f));
                bool argon = x->pbkdf.type != SPEC_PBKDF_PBKDF2;
                if (!argon && spec_map_get(pb, "max_memory"))
                        emitn(c, spec_map_get(pb, "max_memory"), "%s is only for argon2 types", spec_field(&lp, "max_memory", f));
                v = spec_map_get(pb, "parallel");
                if (spec_get_unsigned(c, &lp, "parallel", v, 1, 64, &x->pbkdf.parallel) > 0 && !argon)
                        emitn(c, v, "%s is only for argon2 types", spec_field(&lp, "parallel", f));
        }
        const struct ynode *pf = spec_map_get(m, "perf");
        if (spec_want_map(c, &l, "perf", pf) > 0) {
                struct loc lp = { where, "perf." };
                spec_check_keys(c, pf, &lp, perf_keys);
                (void) spec_get_bool(c, &lp, "no_read_workqueue", spec_map_get(pf, "no_read_workqueue"), &x->no_read_workqueue);
                (void) spec_get_bool(c, &lp, "no_write_workqueue", spec_map_get(pf, "no_write_workqueue"), &x->no_write_workqueue);
        }
        (void) spec_get_bool(c, &l, "discard", spec_map_get(m, "discard"), &x->discard);
        parse_luks_key(c, m, where, x);
        parse_luks_unlock(c, spec_map_get(m, "unlock"), where, x);

        v = spec_map_get(m, "name");
        if (spec_get_str(c, &l, "name", v, &x->name) > 0)
                spec_check_name(c, &l, "name", v, x->name, 127);
        if (!x->name && x->id && !(x->name = strdup(x->id)))
                c->error = -ENOMEM;
}

/* How many devices each luks stands for (before the raids count their
 * members), and the /dev/mapper names they make. */
void spec_check_luks_names(struct ctx *c) {
        struct spec *s = c->s;
        char t[QUOTE_MAX + 4];
        /* a luks stands for as many devices as what it is on (one LUKS per
         * disk of a count: N rule); known before the raids count their members.
         * Twice: a luks on a luks learns its count in the second pass. */
        for (int pass = 0; pass < 2; pass++)
                for (size_t i = 0; i < s->n_luks; i++) {
                        struct spec_luks *x = &s->luks[i];
                        struct obj *on = x->on ? spec_find_obj(c, x->on) : NULL, *self = x->id ? spec_find_obj(c, x->id) : NULL;
                        if (on && self && self->ptr == x && on != self && on->kind != SPEC_OBJ_VG) {
                                self->mult = on->mult;
                                x->count = on->mult;
                        }
                }

        /* every /dev/mapper name a luks makes (NAME, or NAME-0..NAME-N-1) once */
        for (size_t i = 0; i < s->n_luks; i++)
                for (unsigned k = 0; k < (s->luks[i].count ? s->luks[i].count : 1); k++) {
                        _cleanup_free_ char *a = NULL;
                        if (spec_luks_name(&s->luks[i], k, &a) < 0)
                                break;
                        bool clash = false;
                        for (size_t j = 0; !clash && j < i; j++)
                                for (unsigned m = 0; !clash && m < (s->luks[j].count ? s->luks[j].count : 1); m++) {
                                        _cleanup_free_ char *o = NULL;
                                        if (spec_luks_name(&s->luks[j], m, &o) == 0 && streq(a, o)) {
                                                spec_emit(c, s->luks[i].mark.line, s->luks[i].mark.col,
                                                          "luks '%s' would open /dev/mapper/%s, which luks '%s' (line %u) opens too",
                                                          spec_quote(s->luks[i].id ? s->luks[i].id : "?", t), a,
                                                          s->luks[j].id ? s->luks[j].id : "?", s->luks[j].mark.line);
                                                clash = true;
                                        }
                                }
                        if (clash)
                                break;
                }
}

void spec_check_luks_on(struct ctx *c) {
        struct spec *s = c->s;
        char where[128], t[QUOTE_MAX + 4];
        for (size_t i = 0; i < s->n_luks; i++) {
                struct spec_luks *x = &s->luks[i];
                snprintf(where, sizeof where, "luks '%s'", x->id ? spec_quote(x->id, t) : "?");
                struct obj *o = spec_resolve(c, "on", where, x->on, x->on_mark, BLOCK_KINDS);
                x->on_ref = o ? (struct spec_ref) { o->kind, o->ptr } : (struct spec_ref) {};
                /* on N devices (a disk rule with count N, a partition on one): one LUKS2 on each */
                spec_consume(c, o, x, SPEC_OBJ_LUKS, where, false, x->on_mark);
        }
}

/* unlock pins are bound inside the installed system (its clevis); an inline
 * passphrase in a spec that installs a node (it has an image) is served in
 * clear to whoever can fetch the spec, and opens that disk wherever it goes */
void spec_check_unlock(struct ctx *c) {
        struct spec *s = c->s;
        char t[QUOTE_MAX + 4];
        for (size_t i = 0; i < s->n_luks; i++) {
                const struct spec_luks *x = &s->luks[i];
                if (x->key.source == SPEC_KEY_PASSPHRASE && s->image.present)
                        spec_warn_at(c, x->key.passphrase_mark,
                                     "'key.passphrase' of luks '%s' is served in clear to whoever can fetch this spec, and "
                                     "opens the disk wherever it goes: use 'generate: true' with 'escrow' (the operator's "
                                     "certificate) and 'unlock' (Tang)", spec_quote(x->id ? x->id : "?", t));
                if (x->unlock.n_tang && (!s->image.present || s->image.format != SPEC_IMAGE_TAR))
                        spec_emit(c, x->unlock.mark.line, x->unlock.mark.col,
                                  "'unlock' of luks '%s' is bound with the installed system's clevis: the spec needs an image of format 'tar'",
                                  spec_quote(x->id ? x->id : "?", t));
        }
}

void spec_free_luks(struct spec *s) {
        for (size_t i = 0; i < s->n_luks; i++) {
                struct spec_luks *x = &s->luks[i];
                free(x->id); free(x->on); free(x->name); free(x->cipher); free(x->label);
                strv_free(x->bench_ciphers);
                spec_free_secret(x->key.passphrase); free(x->key.url); free(x->key.sha256); free(x->key.escrow);
                for (size_t j = 0; j < x->unlock.n_tang; j++) {
                        free(x->unlock.tang[j].url); free(x->unlock.tang[j].thp);
                }
                free(x->unlock.tang);
        }
        free(s->luks);
}

DEFINE_STRING_TABLE_TO_STRING(spec_pbkdf_type_name, enum spec_pbkdf_type, pbkdf_types)

enum spec_pbkdf_type spec_pbkdf_effective(enum spec_pbkdf_type t) {
        return t == SPEC_PBKDF_DEFAULT ? SPEC_PBKDF_ARGON2ID : t;
}

static const char *const key_sources[] = {
        [SPEC_KEY_NONE] = "no key",
        [SPEC_KEY_PASSPHRASE] = "passphrase from the spec",
        [SPEC_KEY_URL] = "key fetched from a URL (sha256 pinned)",
        [SPEC_KEY_GENERATE] = "key generated on the node and kept nowhere (cannot be opened after a reboot)",
        NULL,
};

DEFINE_STRING_TABLE_TO_STRING(spec_key_source_name, enum spec_key_source, key_sources)

const char *spec_luks_key_name(const struct spec_luks *x) {
        if (x->key.source == SPEC_KEY_GENERATE && x->key.escrow)
                return "key generated on the node, escrowed to the operator's certificate (its LUKS2 token and the report)";
        return spec_key_source_name(x->key.source);
}

unsigned spec_cipher_key_size(const char *cipher) {
        return cipher && strstr(cipher, "adiantum") ? 256 : SPEC_LUKS_KEY_SIZE;
}

int spec_luks_name(const struct spec_luks *x, unsigned index, char **ret) {
        if (!x)
                return -EINVAL;
        const char *name = x->name;
        if (!name)
                return -EINVAL;
        char *n = x->count > 1 ? strdupf("%s-%u", name, index) : strdup(name);
        if (!n)
                return -ENOMEM;
        *ret = n;
        return 0;
}

bool spec_has_unlock(const struct spec *s) {
        for (size_t i = 0; i < s->n_luks; i++)
                if (s->luks[i].unlock.n_tang > 0)
                        return true;
        return false;
}
