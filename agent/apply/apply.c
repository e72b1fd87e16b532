#include "apply.h"

#include "bench.h"
#include "bootloader.h"
#include "initrd.h"
#include "image.h"
#include "register.h"
#include "report.h"
#include "configure.h"
#include "escrow.h"
#include "exec.h"
#include "firstboot.h"
#include "firstboot_install.h"
#include "bootcounter.h"
#include "fetch.h"
#include "inventory.h"
#include "json.h"
#include "log.h"
#include "luks.h"
#include "mark.h"
#include "lvm.h"
#include "md.h"
#include "mkfs.h"
#include "mount.h"
#include "netconf.h"
#include "partition.h"
#include "paths.h"
#include "record.h"
#include "sigprobe.h"
#include "unlock.h"
#include "url.h"
#include "wipe.h"

#include <inttypes.h>
#include <libcryptsetup.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#define MD_WAIT_USEC (30ull * 1000000ull)
#define NODE_WAIT_USEC (10ull * 1000000ull)
#define LUKS_GENERATED_KEY_BYTES 64
#define LUKS_ESCROWED_KEY_BYTES 32      /* as 64 hex characters: typeable at the boot prompt once recovered */
#define LUKS_MAX_KEY_FETCH (8u * 1024u)

/* Keys made or fetched at format time, kept (locked) until the open; and the
 * key of one existing volume with a generated key, recovered through its Tang
 * pin (device set: each header's clevis keyslot has a key of its own). */
struct apply_key {
        const struct spec_luks *luks;
        const char *device;     /* NULL: the luks's own key, for every device */
        struct luks_key *key;
};

struct apply_ctx {
        const struct plan *plan;
        const struct apply_options *opts;
        struct apply_key *keys;
        size_t n_keys;
        struct strbuf why;      /* the reason a step failed: helper stderr, library message */
        struct bench_result bench;
        /* the hand-over the plan names (plan_luks.tuned_by): what each bench-raw step chose */
        struct apply_choice {
                size_t step;                    /* the bench-raw step's number (1-based) */
                struct bench_luks_choice ch;
                char *cipher;                   /* owns ch.cipher */
        } *choices;
        size_t n_choices;
        struct report *report;  /* opts->report, or one apply_run made */
        bool registered;        /* register_run covers every target at once */
        bool target_ready;      /* configure ran: the target's /var/lib/kiln takes the report */
        /* resume after a failure (resume.h) */
        struct resume_record rec;       /* what this run has done (or, resuming, what the record said) */
        bool recording;                 /* the root is mounted: progress goes to its record */
        bool resumed;                   /* the resume check passed */
        unsigned skip_stages;           /* resumed: the stages the record listed as done (1u << enum resume_stage) */
        char *fallback_why;             /* resuming is off: why (then the fresh plan runs) */
        bool readonly;                  /* apply_inspect(): assemble, open, activate, mount without a write */
        bool unlock_failed;             /* a generated key's volume did not open through its Tang pin: stop,
                                         * no fresh fallback (Tang down is no reason to wipe) */
        char **md_uuids;                /* by step of the plan: an assemble's array UUID read from its members
                                         * once the luks-open steps made them (plan_step.uuid NULL), else NULL */
};

#define BENCH_DEFAULT_LEN (64ull * 1024 * 1024)

static void record_save(struct apply_ctx *c);


const char *apply_step_name(enum plan_step_kind kind) {
        const char *n = plan_step_kind_name(kind);   /* one table of names, in plan.c */
        return n ? n : "unknown";
}

const char *apply_stage_name(const struct plan_step *s, char *buf, size_t len) {
        const char *what = s->id ? s->id : s->device;
        if (!what && s->kind == PLAN_REGISTER)  /* one step per target, see plan.h */
                what = s->index ? "webhook" : "cloudstack";
        snprintf(buf, len, "%s%s%s", apply_step_name(s->kind), what ? " " : "", what ? what : "");
        return buf;
}

bool apply_step_is_storage(enum plan_step_kind kind) {
        return kind != PLAN_IMAGE && kind != PLAN_REGISTER && kind != PLAN_FINISH;
}

/* ---- spec lookups (by id, as the plan names them) ---- */


static int wait_node(const char *path) {
        char *const v[] = { (char *) path, NULL };
        return partition_wait(v, NODE_WAIT_USEC);
}

/* ---- the steps ---- */

/* Does the plan's wipe step list this holder (kernel name, e.g. md127)? */
static bool plan_stops(const struct plan_step *s, const char *name) {
        for (char **h = s->inputs; h && *h; h++) {
                const char *b = strrchr(*h, '/');
                if (streq(b ? b + 1 : *h, name))
                        return true;
        }
        return false;
}

/* Exactly the plan's wipe: a holder the plan does not list (it appeared
 * after planning, so nobody approved stopping it) stops the run before
 * anything is written; then the listed holders are stopped, each with what
 * is stacked on it, and the signatures are erased. */
static int step_wipe(struct apply_ctx *c, const struct plan_step *s) {
        _cleanup_strv_free_ char **held = NULL;
        int r = wipe_list_holders(s->device, &held);
        if (r < 0)
                return strbuf_addf(&c->why, "cannot list what holds %s", s->device), r;
        for (size_t i = 0; held && held[i]; i++)
                if (!plan_stops(s, held[i]))
                        return strbuf_addf(&c->why, "%s is held by '%s', which the plan does not stop "
                                           "(it appeared after planning); plan again", s->device, held[i]), -EBUSY;
        for (char **h = s->inputs; h && *h; h++) {
                r = wipe_stop_holder(*h, &c->why);
                if (r < 0) {
                        _cleanup_free_ char *detail = strdup(exec_last_line(&c->why));
                        strbuf_reset(&c->why);
                        return strbuf_addf(&c->why, "cannot stop '%s'%s%s", *h, detail && *detail ? ": " : "",
                                           detail ? detail : ""), r;
                }
                log_info("stopped %s and what was stacked on it", *h);
        }
        unsigned removed = 0;
        r = wipe_erase(s->device, &c->why, &removed);
        if (r < 0)
                return r;
        log_info("removed %u signature(s) from %s", removed, s->device);
        return 0;
}

static int step_partition(struct apply_ctx *c, const struct plan_step *s) {
        if (s->n_parts == 0)
                return strbuf_adds(&c->why, "the plan lists no partitions"), -EINVAL;
        _cleanup_free_ struct partition_request *req = calloc(s->n_parts, sizeof *req);
        if (!req)
                return -ENOMEM;
        size_t n = s->n_parts;
        for (size_t i = 0; i < n; i++) {
                const struct plan_part *pp = &s->parts[i];
                if (pp->number != i + 1)
                        return strbuf_addf(&c->why, "partition numbers are not 1..%zu", n), -EINVAL;
                req[i] = (struct partition_request) {
                        .name = pp->part->name,
                        .type = pp->part->type,
                        .start = pp->start,
                        .size = pp->size,
                };
        }
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = partition_disk(s->device, req, n, &paths, &err);
        if (r < 0) {
                strbuf_adds(&c->why, strbuf_str(&err));
                return r;
        }
        /* The nodes the later steps use are the plan's. */
        for (size_t i = 0; i < n; i++)
                if (!paths || !paths[i] || !streq(paths[i], s->parts[i].device))
                        return strbuf_addf(&c->why, "partition %zu is '%s', the plan says '%s'", i + 1,
                                           paths && paths[i] ? paths[i] : "missing", s->parts[i].device), -EINVAL;
        /* The new partitions may start where old ones did: clear stale signatures. */
        for (size_t i = 0; i < n; i++) {
                const char *dev = s->parts[i].device;
                unsigned removed = 0;
                r = wipe_signatures(dev, &removed);
                if (r < 0)
                        return strbuf_addf(&c->why, "clearing %s", dev), r;
                if (removed)
                        log_info("cleared %u stale signature(s) on new partition %s", removed, dev);
        }
        log_info("wrote GPT with %zu partition(s) to %s", n, s->device);
        return 0;
}

static int step_md_create(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_md *raid = &s->md;
        if (!raid->name)
                return -EINVAL;
        struct md_create_params p = {
                .name = raid->name,
                .homehost = c->opts->hostname,
                .level = raid->level,
                .layout = raid->layout,
                .chunk = raid->chunk,
                .metadata = raid->metadata,
                .bitmap = raid->bitmap,
                .members = s->inputs,
                .spares = raid->spares,
                .assume_clean = raid->assume_clean,
        };
        _cleanup_strv_free_ char **argv = NULL;
        int r = md_create_argv(&p, &argv);
        if (r < 0)
                return r;
        _cleanup_strbuf_ struct strbuf cmd = STRBUF_INIT;
        exec_argv_to_string((const char *const *) argv, &cmd);
        log_info("running %s", strbuf_str(&cmd));
        r = md_create(&p, &c->why);
        if (r < 0)
                return r;
        _cleanup_free_ char *node = NULL;
        r = md_wait(p.name, MD_WAIT_USEC, &node);
        if (r < 0)
                return strbuf_addf(&c->why, "/dev/md/%s did not appear", p.name), r;
        log_info("md array '%s' is %s", p.name, node);
        return 0;
}

static struct apply_key *key_slot_of(struct apply_ctx *c, const struct spec_luks *l, const char *dev) {
        for (size_t i = 0; i < c->n_keys; i++)
                if (c->keys[i].luks == l &&
                    (dev ? c->keys[i].device && streq(c->keys[i].device, dev) : !c->keys[i].device))
                        return &c->keys[i];
        return NULL;
}

static struct apply_key *key_slot(struct apply_ctx *c, const struct spec_luks *l) {
        return key_slot_of(c, l, NULL);
}

static int key_keep(struct apply_ctx *c, const struct spec_luks *l, const char *dev, struct luks_key **key,
                    const struct luks_key **ret) {
        struct apply_key *nk = realloc(c->keys, (c->n_keys + 1) * sizeof *nk);
        if (!nk)
                return -ENOMEM;
        c->keys = nk;
        c->keys[c->n_keys] = (struct apply_key) { .luks = l, .device = dev, .key = TAKE_PTR(*key) };
        *ret = c->keys[c->n_keys++].key;
        return 0;
}

/* A generated key is in no spec: an existing volume (a resume, the look at a
 * finished node) opens only through the Tang pin its run bound (unlock.h
 * unlock_recover(): the clevis token decrypted through Tang's /rec, the key
 * checked against its keyslot; the header is only read). Without a clevis
 * token (the run stopped before luks-bind) -ENOENT: a resume installs fresh,
 * as for any stack it cannot bring up; any other failure (Tang down, another
 * Tang's keys) sets unlock_failed: the run stops with nothing written. */
static int key_recover(struct apply_ctx *c, const struct plan_step *s, const struct luks_key **ret) {
        const struct spec_luks *l = s->luks.key;
        const char *dev = s->luks.backing;
        struct apply_key *k = key_slot_of(c, l, dev);
        if (k) {
                *ret = k->key;
                return 0;
        }
        _cleanup_luks_key_free_ struct luks_key *key = NULL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int slot = -1;
        int r = unlock_recover(NULL, dev, &key, &slot, &err);
        if (r == -ENOENT)
                return strbuf_addf(&c->why, "luks '%s' has a generated key, which only its Tang pin gives back: %s",
                                   l->id, strbuf_str(&err)), r;
        if (r < 0) {
                c->unlock_failed = true;
                return strbuf_addf(&c->why, "luks '%s' has a generated key, which only its Tang pin gives back, and "
                                   "that failed: %s", l->id, strbuf_str(&err)), r;
        }
        (void) log_register_secret(key->data);
        log_info("luks '%s' on %s: its generated key recovered through its Tang pin (keyslot %d)", l->id, dev, slot);
        return key_keep(c, l, dev, &key, ret);
}

/* The key file as served (like cryptsetup --key-file: every byte counts),
 * pinned by its sha256, copied into locked memory; the transfer buffer is wiped. */
/* What a URL's ${...} stand for on this machine: the inventory's values, the
 * host name as planned. */
static void url_vars(const struct apply_ctx *c, struct spec_vars *ret) {
        *ret = (struct spec_vars) {};
        if (c->plan->inv)
                plan_spec_vars(c->plan->inv, ret);
        if (c->opts->hostname)
                ret->hostname = c->opts->hostname;
}

static int key_fetch(struct apply_ctx *c, const struct spec_luks *l, struct luks_key **ret) {
        struct spec_vars vars;
        url_vars(c, &vars);
        _cleanup_free_ char *url = NULL;
        char shown[URL_DISPLAY_MAX];
        int r = spec_expand(l->key.url, &vars, &url, NULL);
        if (r < 0)
                return strbuf_addf(&c->why, "cannot expand the key URL '%s'", url_display(l->key.url, shown)), r;
        url_display(url, shown);
        struct fetch_options fo = { .ca_file = c->opts->ca_file,        /* kiln.ca and the spec's ca: (ca.h) */
                                    .pushback_sec = FETCH_PUSHBACK_SEC };
        char *buf = NULL;
        size_t len = 0;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        r = fetch_to_buffer(url, &fo, LUKS_MAX_KEY_FETCH, l->key.sha256, &buf, &len, NULL, &err);
        if (r < 0)
                return strbuf_addf(&c->why, "key from '%s': %s", shown, strbuf_why(&err, r)), r;
        (void) log_register_secret(buf);
        r = len ? luks_key_new(buf, len, ret) : -EINVAL;
        explicit_wipe(buf, len);
        free(buf);
        if (r < 0)
                return strbuf_addf(&c->why, "key from '%s' is empty or cannot be locked in memory", shown), r;
        return 0;
}

static int key_get(struct apply_ctx *c, const struct spec_luks *l, const struct luks_key **ret) {
        struct apply_key *k = key_slot(c, l);
        if (k) {
                *ret = k->key;
                return 0;
        }
        _cleanup_luks_key_free_ struct luks_key *key = NULL;
        int r;
        switch (l->key.source) {
        case SPEC_KEY_PASSPHRASE:
                if (strempty(l->key.passphrase))
                        return strbuf_adds(&c->why, "empty passphrase"), -EINVAL;
                r = luks_key_new(l->key.passphrase, strlen(l->key.passphrase), &key);
                break;
        case SPEC_KEY_GENERATE:
                if (l->key.escrow) {
                        r = luks_key_generate_hex(LUKS_ESCROWED_KEY_BYTES, &key);
                        if (r == 0)
                                (void) log_register_secret(key->data);
                } else
                        r = luks_key_generate(LUKS_GENERATED_KEY_BYTES, &key);
                break;
        case SPEC_KEY_URL:
                r = key_fetch(c, l, &key);
                if (r < 0)
                        return r;
                break;
        default:
                strbuf_adds(&c->why, "no key given");
                return -EINVAL;
        }
        if (r < 0)
                return strbuf_adds(&c->why, "cannot make a locked key buffer"), r;
        return key_keep(c, l, NULL, &key, ret);
}

static struct bench_luks_choice crypt_choice(const struct plan_crypt *p) {
        return (struct bench_luks_choice) { .cipher = p->cipher, .key_size = p->key_size, .sector_size = p->sector_size,
                                            .flags = luks_flags(p->no_read_workqueue, p->no_write_workqueue, p->discard),
                                            .candidate = -1 };
}

/* What a LUKS_FORMAT or LUKS_OPEN step runs with: its key, and its dm-crypt
 * parameters: the plan's, or, when the plan names the bench-raw step that
 * tunes them, that step's choice (it ran before: the plan orders it so). */
static int luks_inputs(struct apply_ctx *c, const struct plan_step *s, struct bench_luks_choice *ret,
                       const struct luks_key **ret_key) {
        *ret = crypt_choice(&s->luks.crypt);
        bool found = !s->luks.tuned_by;
        for (size_t i = 0; !found && i < c->n_choices; i++)
                if (c->choices[i].step == s->luks.tuned_by) {
                        *ret = c->choices[i].ch;
                        found = true;
                }
        if (!found)
                return strbuf_addf(&c->why, "step %zu, which chooses the cipher, has not run", s->luks.tuned_by),
                       -EINVAL;
        /* an open of a volume this run did not format, whose key was generated: through its Tang pin */
        if (s->kind == PLAN_LUKS_OPEN && s->luks.key->key.source == SPEC_KEY_GENERATE && !key_slot(c, s->luks.key))
                return key_recover(c, s, ret_key);
        return key_get(c, s->luks.key, ret_key);
}

/* The escrow blob of a freshly formatted header: its token, then the report's
 * "escrow" member (the report goes to the webhook too): for each luks, one
 * entry per device {device, index, uuid, keyslot, certificate_sha256, cms}.
 * The blob is public; the key is in none of it. */
static int escrow_record(struct apply_ctx *c, const struct plan_step *s, const struct escrow_blob *b,
                         const struct luks_key *key) {
        const struct spec_luks *x = s->luks.key;
        _cleanup_free_ char *uuid = NULL;
        int slot = -1;
        int r = escrow_store(s->luks.backing, b, key, &uuid, &slot, &c->why);
        if (r < 0)
                return r;
        log_info("luks '%s' on %s: key escrowed to the certificate with SHA-256 %s (LUKS2 token '%s', UUID %s)", x->id,
                 s->luks.backing, b->cert_sha256, ESCROW_TOKEN_TYPE, uuid);
        json_object *all = report_get(c->report, "escrow");
        if (!all && report_set_member(c->report, "escrow", json_object_new_object()) == 0)
                all = report_get(c->report, "escrow");
        json_object *list = all ? json_get(all, x->id) : NULL;
        if (all && !list) {
                list = json_object_new_array();
                if (list && json_add(all, x->id, list) < 0)
                        list = NULL;
        }
        json_object *e = json_object_new_object();
        int q = e ? 0 : -ENOMEM;
        json_set_str(e, "device", s->luks.backing, &q);
        json_set(e, "index", json_object_new_int((int) s->index), &q);
        json_set_str(e, "uuid", uuid, &q);
        json_set(e, "keyslot", json_object_new_int(slot), &q);
        json_set_str(e, "certificate_sha256", b->cert_sha256, &q);
        json_set_str(e, "cms", b->cms, &q);
        e = json_done(e, q);
        if (!list || !e || json_object_array_add(list, e) < 0) {
                json_object_put(e);
                log_warning("luks '%s' on %s: the run report lacks its escrow blob (the header has it)", x->id,
                            s->luks.backing);
        }
        return 0;
}

static int step_luks_format(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_luks *l = &s->luks;
        if (!l->key || !l->backing)
                return -EINVAL;
        struct bench_luks_choice ch;
        const struct luks_key *key;
        int r = luks_inputs(c, s, &ch, &key);
        if (r < 0)
                return r;
        struct luks_format_params p = {
                .cipher = ch.cipher,
                .key_size = ch.key_size,
                .sector_size = ch.sector_size,
                .label = l->label,
                .pbkdf = l->pbkdf,
                .time_ms = l->pbkdf_time_ms,
                .iterations = l->pbkdf_iterations,
                .max_memory = l->pbkdf_max_memory,
                .parallel = l->pbkdf_parallel,
                .flags = ch.flags,
        };
        /* escrow: sealed before the format (a certificate OpenSSL refuses leaves the disk
         * as it was), stored in the header right after it, before the run goes on */
        _cleanup_(escrow_blob_done) struct escrow_blob blob = {};
        const struct spec_luks *x = l->key;
        if (x->key.escrow && (r = escrow_seal(x->key.escrow, key, &blob, &c->why)) < 0)
                return r;
        uint32_t mem_kb = 0;
        r = luks_format(l->backing, &p, key, &mem_kb);
        if (r < 0)
                return r;
        if (mem_kb)
                log_info("LUKS2 on %s: %s, %u-bit key, PBKDF memory %u KiB%s", l->backing, ch.cipher, ch.key_size, mem_kb,
                         ch.candidate >= 0 ? " (tuned by the benchmark)" : "");
        else
                log_info("LUKS2 on %s: %s, %u-bit key, pbkdf2%s", l->backing, ch.cipher, ch.key_size,
                         ch.candidate >= 0 ? " (tuned by the benchmark)" : "");
        if (x->key.escrow && (r = escrow_record(c, s, &blob, key)) < 0)
                return r;
        return 0;
}

static int step_luks_open(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_luks *l = &s->luks;
        if (!l->key || !l->backing || !l->name)
                return strbuf_adds(&c->why, "no LUKS device for this mapping"), -EINVAL;
        const char *dev = l->backing;
        struct bench_luks_choice ch;
        const struct luks_key *key;
        int r = luks_inputs(c, s, &ch, &key);
        if (r < 0)
                return r;
        r = luks_open(dev, l->name, key, ch.flags | (c->readonly ? CRYPT_ACTIVATE_READONLY : 0));
        if (r < 0)
                return r;
        _cleanup_free_ char *node = NULL;
        if ((r = paths_mapper(l->name, &node)) < 0)
                return r;
        r = wait_node(node);
        if (r < 0)
                return strbuf_addf(&c->why, "%s did not appear", node), r;
        /* The key is not needed again in this run (a luks on N disks: after the last one's open). */
        struct apply_key *k = key_slot(c, l->key);
        if (k && l->key_done)
                k->key = luks_key_free(k->key), k->luks = NULL;
        log_info("opened %s as %s%s", dev, node, !k && key_slot_of(c, l->key, dev) ? " through its Tang pin" : "");
        return 0;
}

static int step_pvcreate(struct apply_ctx *c, const struct plan_step *s) {
        return lvm_pvcreate(s->device, &c->why);
}

static int step_vgcreate(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_vg *vg = &s->vg;
        if (!vg->name)
                return -EINVAL;
        if (!s->inputs || !s->inputs[0])
                return strbuf_adds(&c->why, "the plan lists no PVs"), -EINVAL;
        return lvm_vgcreate(vg->name, s->inputs, vg->extent_size, &c->why);
}

static int step_lvcreate(struct apply_ctx *c, const struct plan_step *s) {
        const char *vgname = s->lv.vg, *lvname = s->lv.name;
        uint64_t bytes = s->lv.bytes;
        unsigned pct = s->lv.percent_free;
        if (!vgname || !lvname || (!bytes) == (!pct))
                return strbuf_addf(&c->why, "the plan's lvcreate step names no VG, LV or size"), -EINVAL;
        int r = lvm_lvcreate(vgname, lvname, bytes, pct, &c->why);
        if (r < 0)
                return r;
        r = lvm_vgmknodes(vgname, &c->why);
        if (r < 0)
                return r;
        _cleanup_free_ char *node = NULL;
        if ((r = paths_lv(vgname, lvname, &node)) < 0)
                return r;
        r = wait_node(node);
        if (r < 0)
                return strbuf_addf(&c->why, "%s did not appear", node), r;
        return 0;
}

static int step_mkfs(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_fs *fs = &s->fs;
        if (fs->blank) {
                /* crypttab maps it with a fresh key and mkswaps it at every boot; Debian's
                 * cryptdisks refuses a plain-mode source that holds a filesystem signature,
                 * and an old one must not be found on it either: leave it without any */
                unsigned removed = 0;
                int r = wipe_signatures(s->device, &removed);
                if (r < 0)
                        return strbuf_addf(&c->why, "clearing the signatures on %s", s->device), r;
                return 0;
        }
        return mkfs_make(fs->type, s->device, fs->label, fs->mkfs_options, &c->why);
}

static int step_mount(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_fs *fs = &s->fs;
        if (!fs->mountpoint)
                return -EINVAL;
        int r = mount_under_target(s->device, fs->mountpoint, fs->type, c->readonly ? fs->inspect_options : fs->options);
        if (r < 0)
                return strbuf_addf(&c->why, "on %s%s", kiln_paths.target, fs->mountpoint), r;
        return 0;
}

static int step_configure(struct apply_ctx *c, const struct plan_step *s) {
        const char *hostname = c->opts->hostname;
        const char *h = c->plan->hostname_template;
        if (!hostname && h && !strstr(h, "${"))
                hostname = h;
        int r = configure_target(c->plan, hostname, &c->why);
        if (r < 0)
                return r;
        /* the boot counter's units: a boot of the installed system that never
         * gets far enough is counted, and kiln's look at the netbooted node
         * sees it (bootcounter.h) */
        _cleanup_strbuf_ struct strbuf warnings = STRBUF_INIT;
        r = bootcount_install(c->plan, &warnings, &c->why);
        for (char *line = warnings.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                if ((nl = strchr(line, '\n')))
                        *nl = 0;
                log_warning("boot counter: %s", line);
        }
        if (r < 0)
                return r;
        c->target_ready = true;
        return 0;
}

/* network: the systemd-networkd files of the resolved network (plan->net). */
static int step_network(struct apply_ctx *c, const struct plan_step *s) {
        (void) s;
        if (!c->plan->net)
                return -EINVAL;
        return configure_network(c->plan->net, &c->why);
}

/* luks[].unlock: a new keyslot whose key the target's clevis encrypts to the
 * pins, its clevis token, then the proof: the pin alone must yield a key that
 * opens the new keyslot (unlock.h). The report names the pins, never a key. */
static int step_luks_bind(struct apply_ctx *c, const struct plan_step *s) {
        const struct spec_luks *l = s->bind;
        const struct luks_key *key = NULL;
        if (!l || !s->device)
                return -EINVAL;
        /* a resumed run that opened this volume through its Tang pin: that key adds the keyslot */
        struct apply_key *rk = l->key.source == SPEC_KEY_GENERATE && !key_slot(c, l) ? key_slot_of(c, l, s->device)
                                                                                     : NULL;
        int r = rk ? (key = rk->key, 0) : key_get(c, l, &key);
        if (r < 0)
                return r;
        const char *root = kiln_paths.target;
        if ((r = chroot_enter(root, &c->why)) < 0)
                return r;
        int slot = -1;
        r = unlock_bind(root, s->device, l, key, &c->why, &slot);      /* with its proof */
        int q = chroot_leave(root);
        if (r < 0)
                return r;
        if (q < 0)
                return strbuf_addf(&c->why, "cannot unbind /dev /proc /sys /run from %s", root), q;
        log_info("luks '%s' on %s: bound to %zu tang server(s) in keyslot %d; the pin alone opened it",
                 l->id, s->device, l->unlock.n_tang, slot);
        json_object *u = report_get(c->report, "unlock");
        if (!u && report_set_member(c->report, "unlock", json_object_new_object()) == 0)
                u = report_get(c->report, "unlock");
        json_object *e = json_object_new_object(), *pins = json_object_new_array(), *urls = json_object_new_array();
        if (!u || !e || !pins || !urls) {
                json_object_put(e);
                json_object_put(pins);
                json_object_put(urls);
                return 0;       /* the binding stands; only the report lacks it */
        }
        char shown[URL_DISPLAY_MAX];
        json_object_array_add(pins, json_object_new_string("tang"));
        for (size_t i = 0; i < l->unlock.n_tang; i++)
                json_object_array_add(urls, json_object_new_string(url_display(l->unlock.tang[i].url, shown)));
        json_object_object_add(e, "device", json_object_new_string(s->device));
        json_object_object_add(e, "pins", pins);
        json_object_object_add(e, "tang", urls);
        json_object_object_add(e, "threshold", json_object_new_int((int) l->unlock.threshold));
        json_object_object_add(e, "keyslot", json_object_new_int(slot));
        json_object_object_add(e, "proven", json_object_new_boolean(true));
        json_object_object_add(u, l->id, e);
        return 0;
}

/* The one writer of the run report: the same JSON goes to
 * <run_dir>/report.json and, once the target is mounted and configured, to
 * <target>/var/lib/kiln/report.json (for `kiln register` at first boot). */
static void save_report(const struct apply_ctx *c) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/report.json", kiln_paths.run_dir);
        int r = report_save(c->report, path);
        if (r < 0)
                log_warning_errno(r, "failed to save the run report to '%s': %m", path);
        if (!c->target_ready)
                return;
        snprintf(path, sizeof path, "%s" FIRSTBOOT_REPORT, kiln_paths.target);
        r = report_save(c->report, path);
        if (r < 0)
                log_warning_errno(r, "failed to save the run report to '%s': %m", path);
}

/* The finish step only makes the disks consistent: the reboot or power-off
 * is the caller's (cmd_boot, after apply_run has ended this stage, finished
 * and saved the report and delivered every event), so that every
 * stage-begin gets its stage-end. */
static int step_finish(struct apply_ctx *c, const struct plan_step *s) {
        enum spec_finish f = c->plan->spec->finish;
        /* the finished-install mark on every disk the plan partitioned (its
         * inputs; docs/reinstall.md), with the token this install answers */
        for (char **d = s->inputs; d && *d && !c->opts->skip_storage; d++) {
                uint8_t rnd[MARK_RANDOM_LEN];
                char uuid[MARK_UUID_LEN + 1], what[64];
                struct mark m;
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                if (getrandom(rnd, sizeof rnd, 0) != (ssize_t) sizeof rnd)
                        return strbuf_adds(&c->why, "no random bytes for the finished-install mark"), -errno;
                int r = mark_encode(c->rec.reinstall, rnd, uuid);
                if (r < 0)
                        return r;
                r = partition_set_disk_guid(*d, uuid, &err);
                if (r < 0)
                        return strbuf_addf(&c->why, "cannot mark %s as a finished install: %s", *d, strbuf_str(&err)), r;
                (void) mark_decode(uuid, &m);
                log_info("marked %s as a finished kiln install: GPT disk GUID %s (%s)", *d, uuid,
                         mark_describe(&m, what, sizeof what));
        }
        sync();
        if (f != SPEC_FINISH_NONE && !c->opts->finish)
                log_info("finish: '%s' is left to boot mode", f == SPEC_FINISH_REBOOT ? "reboot" : "poweroff");
        return 0;
}

static uint64_t bench_len(const struct apply_ctx *c) {
        return c->opts->bench_len ? c->opts->bench_len : BENCH_DEFAULT_LEN;
}

static void bench_log_table(const struct bench_result *res) {
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        if (bench_to_text(res, &t) < 0)
                return;
        for (char *line = t.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl = 0;
                log_info("bench: %s", line);
        }
}

/* Before luksFormat: cipher speed on a zero-backed mapping and raw I/O on
 * the device LUKS goes on, in the region luksFormat and mkfs overwrite. */
static int step_bench_raw(struct apply_ctx *c, const struct plan_step *s) {
        const struct plan_bench *b = &s->bench;
        if (!b->policy || !b->ciphers)
                return -EINVAL;
        /* the candidates the plan lists for this LUKS volume */
        struct spec_bench own = *b->policy;
        own.ciphers = (char **) b->ciphers;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = bench_raw(&own, s->device, 0, bench_len(c), NULL, &c->bench, &err);
        if (r < 0)
                return strbuf_adds(&c->why, err.len ? err.buf : "benchmark failed"), r;

        struct bench_luks_choice ch, want = crypt_choice(&b->want);
        bool tuned = bench_choose_for_luks(b->policy, &want, &c->bench, &ch) > 0;
        struct apply_choice *nc = realloc(c->choices, (c->n_choices + 1) * sizeof *nc);
        if (!nc)
                return -ENOMEM;
        c->choices = nc;
        struct apply_choice *slot = &c->choices[c->n_choices];
        *slot = (struct apply_choice) { .step = (size_t) (s - c->plan->steps) + 1, .ch = ch, .cipher = strdup(ch.cipher) };
        if (!slot->cipher)
                return -ENOMEM;
        slot->ch.cipher = slot->cipher;
        c->n_choices++;
        bool nowq = ch.flags & (CRYPT_ACTIVATE_NO_READ_WORKQUEUE | CRYPT_ACTIVATE_NO_WRITE_WORKQUEUE);
        char sector[32] = "default";
        if (ch.sector_size)
                snprintf(sector, sizeof sector, "%u-byte", ch.sector_size);
        _cleanup_free_ char *text = NULL;
        if (asprintf(&text, "%s: %s, %u-bit key, %s sectors, workqueues %s; luksFormat uses this",
                     tuned ? "tuned" : b->policy->tune ? "the spec's (tuning measured nothing the spec allows)" : "the spec's",
                     ch.cipher, ch.key_size, sector, nowq ? "off" : "on") < 0) {
                text = NULL;
                return -ENOMEM;
        }
        (void) report_set_bench_text(c->report, "luks_choice", text);
        (void) report_set_bench_text(c->report, "luks_cipher", ch.cipher);
        (void) report_set_bench(c->report, "luks_key_size", ch.key_size);
        (void) report_set_bench(c->report, "luks_sector_size", ch.sector_size);
        (void) report_set_bench_text(c->report, "luks_workqueues", nowq ? "off" : "on");
        log_info("benchmark: LUKS '%s' gets %s", b->luks_id, text);
        return 0;
}

/* After luksOpen: the same I/O through dm-crypt, then the gate. */
static int step_bench_crypt(struct apply_ctx *c, const struct plan_step *s) {
        const struct spec_bench *policy = s->bench.policy;
        if (!policy)
                return -EINVAL;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = bench_crypt(policy, s->device, 0, bench_len(c), NULL, &c->bench, &err);
        if (r < 0)
                return strbuf_adds(&c->why, err.len ? err.buf : "benchmark failed"), r;
        bench_log_table(&c->bench);
        /* the figures a floor judged (an unsettled window's lower half) */
        const struct bench_cipher *ch = bench_chosen(&c->bench);
        if (ch) {
                (void) report_set_bench(c->report, "cipher_write_mbps", bench_floor_mbps(&ch->write));
                (void) report_set_bench(c->report, "cipher_read_mbps", bench_floor_mbps(&ch->read));
        }
        (void) report_set_bench(c->report, "raw_write_mbps", bench_floor_mbps(&c->bench.raw_write));
        (void) report_set_bench(c->report, "raw_read_mbps", bench_floor_mbps(&c->bench.raw_read));
        (void) report_set_bench(c->report, "crypt_write_mbps", bench_floor_mbps(&c->bench.crypt_write));
        (void) report_set_bench(c->report, "crypt_read_mbps", bench_floor_mbps(&c->bench.crypt_read));
        (void) report_set_bench(c->report, "overhead_write", c->bench.overhead_write);
        (void) report_set_bench(c->report, "overhead_read", c->bench.overhead_read);
        (void) report_set_bench(c->report, "seconds", c->bench.seconds);

        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        r = bench_gate(policy, &c->bench, &why);
        if (r == -ERANGE) {
                (void) report_set_bench_verdict(c->report, policy->on_fail == SPEC_ON_FAIL_WARN ? REPORT_WARN : REPORT_FAIL,
                                                strbuf_str(&why));
                if (policy->on_fail == SPEC_ON_FAIL_WARN) {
                        log_warning("benchmark gate missed (on_fail: warn): %s", strbuf_str(&why));
                        return 0;
                }
                return strbuf_addf(&c->why, "benchmark gate: %s", strbuf_str(&why)), r;
        }
        if (r < 0)
                return r;
        (void) report_set_bench_verdict(c->report, REPORT_SUCCESS, "every floor met");
        log_info("benchmark gate passed in %.1fs", c->bench.seconds);
        return 0;
}

static int step_image(struct apply_ctx *c, const struct plan_step *s) {
        /* the image's url with its ${...} filled in (docs/spec.md "Variables": every url
         * may hold them), as the key's: the spec's image with that url */
        struct spec_vars vars;
        url_vars(c, &vars);
        _cleanup_free_ char *url = NULL;
        char shown_url[URL_DISPLAY_MAX];
        int e = spec_expand(c->plan->spec->image.url, &vars, &url, NULL);
        if (e < 0)
                return strbuf_addf(&c->why, "cannot expand the image URL '%s'", url_display(c->plan->spec->image.url, shown_url)), e;
        struct spec_image expanded = c->plan->spec->image;
        expanded.url = url;
        const struct spec_image *img = &expanded;
        const char *target = img->format == SPEC_IMAGE_RAW ? s->device : kiln_paths.target;
        if (!target)
                return strbuf_adds(&c->why, "the plan names no image target"), -EINVAL;
        struct image_progress_printer printer = { .what = "image" };
        struct image_options io = { .progress = image_progress_print, .progress_userdata = &printer };
        io.fetch.ca_file = c->opts->ca_file;
        io.fetch.pushback_sec = FETCH_PUSHBACK_SEC;       /* a busy boot server: wait for a download slot */
        if (c->resumed && img->format != SPEC_IMAGE_RAW) {
                unsigned removed = 0;
                int k = resume_clean_root(target, &removed);
                if (k < 0)
                        return strbuf_addf(&c->why, "cannot empty '%s' for the image", target), k;
                log_info("emptied %s for the image (%u entries of the interrupted run removed)", target, removed);
                record_save(c);         /* the record went with the rest */
        }
        _cleanup_(image_result_done) struct image_result res = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = image_install(img, target, &io, &res, &err);
        if (r < 0) {
                char shown[URL_DISPLAY_MAX];
                return strbuf_addf(&c->why, "image '%s': %s", url_display(img->url, shown),
                                   err.len ? err.buf : "install failed"), r;
        }
        log_info("image: %" PRIu64 " bytes verified (sha256 %s), %" PRIu64 " entries, %u request(s)",
                 res.downloaded, res.sha256, res.entries, res.attempts);
        if (res.warning)
                log_warning("image: %u libarchive warning(s), the first: %s", res.warnings, res.warning);
        (void) report_set_image(c->report, img->url, res.sha256, res.downloaded, res.usec / 1e6);
        return 0;
}

/* The installed system's address, when the spec's network gives it one:
 * the first bridge's static address, without its prefix length. */
static char *installed_ip(const struct plan *p) {
        for (size_t i = 0; p->net && i < p->net->n_bridges; i++) {
                const char *a = p->net->bridges[i].address;
                if (a)
                        return strndup(a, strcspn(a, "/"));
        }
        return NULL;
}

/* register cloudstack: addHost is the installed system's (firstboot.h);
 * this step installs what its first boot runs. */
static int step_firstboot(struct apply_ctx *c) {
        if (!c->target_ready && !c->opts->skip_storage)
                return strbuf_adds(&c->why, "no installed root for the first-boot registration (the configure step "
                                            "did not run)"), -ENOENT;
        _cleanup_free_ char *ip = installed_ip(c->plan);
        struct firstboot_source src = {
                .spec_url = c->opts->spec_url, .spec_sha256 = c->opts->spec_sha256, .ca_file = c->opts->ca_file, .ip = ip,
        };
        _cleanup_strbuf_ struct strbuf warnings = STRBUF_INIT;
        int r = firstboot_install(c->plan->spec, &src, &warnings, &c->why);
        for (char *line = warnings.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                if ((nl = strchr(line, '\n')))
                        *nl = 0;
                log_warning("first boot: %s", line);
        }
        if (r < 0)
                return r;
        c->target_ready = true;         /* a plain directory (--skip-storage) takes the report too */
        log_info("first boot: %s enabled in %s: it runs %s register --firstboot %s (addHost as '%s'%s%s)",
                 FIRSTBOOT_UNIT_NAME, kiln_paths.target, FIRSTBOOT_BINARY, FIRSTBOOT_CONF,
                 c->plan->spec->cloudstack.host_username, c->plan->spec->cloudstack.host_password ? ", password hashed in /etc/shadow" : "",
                 c->plan->spec->cloudstack.host_authorized_key ? ", the management server's key authorized" : "");
        return 0;
}

static int step_register(struct apply_ctx *c, const struct plan_step *s) {
        if (s->index == 0) {
                int k = step_firstboot(c);
                if (k < 0)
                        return k;
        }
        if (c->registered)
                return 0;       /* the plan lists one step per target; one run serves all */
        c->registered = true;
        struct register_options ro;
        register_options_default(&ro);
        ro.ca_file = c->opts->ca_file;
        ro.cloudstack_firstboot = true;
        (void) report_finish(c->report, REPORT_SUCCESS, NULL, NULL);
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = register_run(c->plan->spec, c->report, &ro, &err);
        if (r == -ENOMSG)
                return 0;
        if (r < 0)
                return strbuf_adds(&c->why, err.len ? err.buf : "registration failed"), r;
        log_info("%s", c->plan->spec->webhook.present ? "run report delivered to the webhook" : "registration left to the first boot");
        return 0;
}

/* ---- resume after a failure ---- */

static void record_path(char *buf, size_t len) {
        snprintf(buf, len, "%s%s", kiln_paths.target, RESUME_RECORD_PATH);
}

static void record_save(struct apply_ctx *c) {
        if (!c->recording)
                return;
        char path[PATH_MAX];
        record_path(path, sizeof path);
        int r = resume_record_save(&c->rec, path);
        if (r < 0)
                log_warning_errno(r, "failed to record progress in '%s' (a failure after this cannot resume): %m", path);
}

static void record_stage(struct apply_ctx *c, enum resume_stage st) {
        if (st == RESUME_STAGE_NONE || !c->recording)
                return;
        c->rec.stages |= 1u << st;
        record_save(c);
}

static bool plan_mounts_root(const struct plan *p) {
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct plan_fs *fs = p->steps[i].kind == PLAN_MOUNT ? &p->steps[i].fs : NULL;
                if (fs && fs->mountpoint && streq(fs->mountpoint, "/"))
                        return true;
        }
        return false;
}

/* The array UUID of an assemble step: the plan's (the inventory saw it on
 * the members), or the one read from them at run time. */
static const char *md_uuid_of(const struct apply_ctx *c, const struct plan_step *s) {
        size_t k = (size_t) (s - c->plan->steps);
        return s->uuid ? s->uuid : c->md_uuids && k < c->plan->n_steps ? c->md_uuids[k] : NULL;
}

/* Members inside per-disk LUKS, which no inventory sees closed: now that the
 * luks-open steps before this one made them, their superblocks judged by the
 * plan's own rule (resume_md_member()); -ESTALE when they are not one array
 * (not this plan's run: a resume installs fresh), the UUID kept in c. */
static int md_members_judge(struct apply_ctx *c, const struct plan_step *s) {
        size_t k = (size_t) (s - c->plan->steps);
        if (k >= c->plan->n_steps)
                return -EINVAL;
        if (!c->md_uuids && !(c->md_uuids = calloc(c->plan->n_steps, sizeof *c->md_uuids)))
                return -ENOMEM;
        _cleanup_free_ char *first = NULL;      /* the first member's array UUID, the others compared to it */
        int r = 0;
        for (char **m = s->inputs; m && *m && r >= 0; m++) {
                _cleanup_free_ struct inv_signature *sigs = NULL;
                size_t n = 0;
                r = sigprobe_device(*m, &sigs, &n);
                if (r < 0) {
                        (void) strbuf_addf(&c->why, "cannot read the md superblock on %s", *m);
                        break;
                }
                const char *uuid = first;
                r = resume_md_member(s->id, *m, sigs, n, &uuid, &c->why);
                if (r == 0)
                        r = -ESTALE;
                if (r > 0 && !first && !(first = strdup(uuid)))
                        r = -ENOMEM;
                for (size_t i = 0; i < n; i++) {
                        free(sigs[i].type);
                        free(sigs[i].usage);
                        free(sigs[i].uuid);
                        free(sigs[i].label);
                }
        }
        if (r < 0)
                return r;
        free(c->md_uuids[k]);
        c->md_uuids[k] = TAKE_PTR(first);
        return 0;
}

static int step_md_assemble(struct apply_ctx *c, const struct plan_step *s) {
        const char *name = s->md.name;
        if (!name || !s->inputs || !s->inputs[0])
                return -EINVAL;
        int r;
        if (!s->uuid && (r = md_members_judge(c, s)) < 0)
                return r;
        const char *uuid = md_uuid_of(c, s);
        r = md_assemble(name, uuid, s->inputs, c->readonly, &c->why);
        if (r < 0)
                return r;
        _cleanup_free_ char *node = NULL;
        r = md_wait(name, MD_WAIT_USEC, &node);
        if (r < 0)
                return strbuf_addf(&c->why, "/dev/md/%s did not appear", name), r;
        log_info("assembled md array '%s' (UUID %s%s) as %s", name, uuid,
                 s->uuid ? "" : ", read from its members once opened", node);
        return 0;
}

static int step_vg_activate(struct apply_ctx *c, const struct plan_step *s) {
        const char *name = s->vg.name;
        if (!name)
                return -EINVAL;
        int r = c->readonly ? lvm_vg_activate_readonly(name, &c->why) : lvm_vg_activate(name, &c->why);
        if (r < 0) {
                /* lvm says "Cannot process volume group X: Input/output error"
                 * of a VG that is not there at all, which reads like a disk
                 * fault: say what it is when the VG does not exist */
                _cleanup_strbuf_ struct strbuf scratch = STRBUF_INIT;
                _cleanup_free_ char *uuid = NULL;
                if (lvm_vg_uuid(name, &uuid, &scratch) < 0) {
                        strbuf_reset(&c->why);
                        (void) strbuf_addf(&c->why, "volume group '%s' does not exist on these disks: the interrupted "
                                           "run stopped before it was created", name);
                        return -ESTALE;
                }
                return r;
        }
        r = lvm_vgmknodes(name, &c->why);
        if (r < 0)
                return r;
        for (char **node = s->vg.lv_nodes; node && *node; node++)
                if ((r = wait_node(*node)) < 0)
                        return strbuf_addf(&c->why, "%s did not appear", *node), r;
        log_info("activated VG '%s'", name);
        return 0;
}

/* "partition /dev/vda1": PARTUUID, for each partition of the kept GPT on disk. */
static void add_partuuids(json_object *o, const char *disk) {
        struct sigprobe_part *parts = NULL;
        size_t n = 0;
        if (sigprobe_partitions(disk, &parts, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                char key[PATH_MAX + 16];
                if (!parts[i].uuid || paths_partition(disk, parts[i].number, &path) < 0)
                        continue;
                snprintf(key, sizeof key, "partition %s", path);
                json_object_object_add(o, key, json_object_new_string(parts[i].uuid));
        }
        sigprobe_partitions_free(parts, n);
}

/* What the interrupted run built and this one keeps, by UUID (PARTUUID for
 * a partition), for the report. */
static json_object *kept_uuids(const struct apply_ctx *c) {
        json_object *o = json_object_new_object();
        for (size_t i = 0; o && i < c->plan->n_steps; i++) {
                const struct plan_step *s = &c->plan->steps[i];
                char key[160];
                const char *uuid = NULL;
                _cleanup_free_ struct inv_signature *sigs = NULL;
                size_t n = 0;
                if (s->kind == PLAN_MD_ASSEMBLE) {
                        snprintf(key, sizeof key, "md %s", s->id);
                        uuid = md_uuid_of(c, s);
                } else if (s->kind == PLAN_SKIP_STAGE && s->device &&
                           (s->skipped == PLAN_LUKS_FORMAT || s->skipped == PLAN_MKFS || s->skipped == PLAN_PVCREATE)) {
                        snprintf(key, sizeof key, "%s %s", s->skipped == PLAN_LUKS_FORMAT ? "luks" : s->skipped == PLAN_MKFS ? "fs" : "pv",
                                 s->device);
                        if (sigprobe_device(s->device, &sigs, &n) >= 0 && n > 0)
                                uuid = sigs[0].uuid;
                }
                if (s->kind == PLAN_VG_ACTIVATE) {
                        const char *name = s->vg.name;
                        _cleanup_free_ char *vu = NULL;
                        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                        snprintf(key, sizeof key, "vg %s", name);
                        if (lvm_vg_uuid(name, &vu, &err) >= 0)
                                json_object_object_add(o, key, json_object_new_string(vu));
                } else if (s->kind == PLAN_SKIP_STAGE && s->skipped == PLAN_PARTITION && s->device)
                        add_partuuids(o, s->device);
                if (uuid)
                        json_object_object_add(o, key, json_object_new_string(uuid));
                for (size_t k = 0; k < n; k++) {
                        free(sigs[k].type);
                        free(sigs[k].usage);
                        free(sigs[k].uuid);
                        free(sigs[k].label);
                }
        }
        return o;
}

static void report_resume(struct apply_ctx *c) {
        json_object *o = json_object_new_object();
        if (!o)
                return;
        json_object_object_add(o, "fingerprint", json_object_new_string(c->plan->fingerprint));
        if (c->resumed) {
                json_object *st = json_object_new_array();
                for (int k = 0; st && k < _RESUME_STAGE_MAX; k++)
                        if (c->skip_stages & (1u << k))
                                json_object_array_add(st, json_object_new_string(resume_stage_name(k)));
                json_object_object_add(o, "stages_skipped", st);
                json_object_object_add(o, "kept", kept_uuids(c));
                if (c->rec.run_id)
                        json_object_object_add(o, "interrupted_run_id", json_object_new_string(c->rec.run_id));
        } else if (c->fallback_why)
                json_object_object_add(o, "fresh_because", json_object_new_string(c->fallback_why));
        (void) report_set_member(c->report, "resumed", json_object_new_boolean(c->resumed));
        (void) report_set_member(c->report, "resume", o);
}

static int step_resume_check(struct apply_ctx *c, const struct plan_step *s) {
        struct resume_record rec = {};
        int r = resume_record_load(s->device, &rec);
        if (r == -ENOENT)
                return strbuf_addf(&c->why, "no progress record '%s'", s->device), -ESTALE;
        if (r == -ENOTEMPTY)
                return strbuf_addf(&c->why, "progress record '%s' has data after its JSON document", s->device), -ESTALE;
        if (r < 0)
                return strbuf_addf(&c->why, "unreadable progress record '%s'", s->device), -ESTALE;
        if (!streq(rec.fingerprint, c->plan->fingerprint))
                r = strbuf_addf(&c->why, "the progress record names another plan (%.12s, this one is %.12s)", rec.fingerprint,
                                c->plan->fingerprint);
        else if (rec.complete)
                r = strbuf_adds(&c->why, "the progress record says that run finished");
        else if (!(rec.stages & (1u << RESUME_STAGE_STORAGE)))
                r = strbuf_adds(&c->why, "the progress record does not list the storage as done");
        else {
                resume_record_done(&c->rec);
                c->rec = rec;
                c->resumed = c->recording = true;
                c->skip_stages = rec.stages;
                /* mounted, and configured by the interrupted run: the report and the first boot's files go there */
                if (rec.stages & (1u << RESUME_STAGE_CONFIGURE))
                        c->target_ready = true;
                const char *rid = report_run_id(c->report);
                free(c->rec.run_id);
                c->rec.run_id = rid ? strdup(rid) : NULL;
                free(c->rec.version);
                c->rec.version = NULL;
                if (c->opts->reinstall) {
                        free(c->rec.reinstall);
                        c->rec.reinstall = strdup(c->opts->reinstall);
                }
                record_save(c);
                report_resume(c);
                log_info("resuming the interrupted run of plan %.12s: stages done %s%s%s", c->plan->fingerprint, "storage",
                         rec.stages & (1u << RESUME_STAGE_IMAGE) ? ", image" : "",
                         rec.stages & (1u << RESUME_STAGE_CONFIGURE) ? ", configure" : "");
                return 0;
        }
        resume_record_done(&rec);
        return r < 0 ? r : -ESTALE;
}

/* A resumed run skips what the record lists as done. */
static bool resume_skips(const struct apply_ctx *c, const struct plan_step *s) {
        enum resume_stage st = resume_stage_of(s->kind);
        return c->resumed && st != RESUME_STAGE_NONE && st != RESUME_STAGE_STORAGE && (c->skip_stages & (1u << st));
}

/* Undo the resume steps 0..upto (the failed one included: it may have
 * half-happened), latest first: the machine is then as it was planned for,
 * and the fresh plan's wipe finds no holder it did not list. */
static int resume_undo(struct apply_ctx *c, size_t upto) {
        bool unmounted = false;
        int r;
        for (size_t k = upto + 1; k-- > 0;) {
                const struct plan_step *s = &c->plan->steps[k];
                strbuf_reset(&c->why);
                switch (s->kind) {
                case PLAN_MOUNT:
                        if (unmounted)
                                continue;
                        unmounted = true;
                        r = mount_unmount_target();
                        break;
                case PLAN_LUKS_OPEN: {
                        r = s->luks.name ? luks_close(s->luks.name) : -EINVAL;
                        if (r == -ENODEV || r == -ENOENT || (r < 0 && k == upto))
                                r = 0;  /* not open */
                        break;
                }
                case PLAN_VG_ACTIVATE: {
                        r = lvm_vg_deactivate(s->vg.name, &c->why);
                        if (r < 0 && k == upto)
                                r = 0;  /* it did not get as far as activating */
                        break;
                }
                case PLAN_MD_ASSEMBLE:
                        r = md_stop(s->device, &c->why);
                        if (r < 0 && k == upto)
                                r = 0;
                        break;
                default:
                        continue;
                }
                if (r < 0)
                        return log_error_errno(r, "failed to undo %s '%s' before a fresh install: %s%s%m", apply_step_name(s->kind),
                                               s->device ? s->device : s->id ? s->id : "-", exec_last_line(&c->why),
                                               *exec_last_line(&c->why) ? ": " : "");
        }
        return 0;
}

static int run_step(struct apply_ctx *c, const struct plan_step *s) {
        switch (s->kind) {
        case PLAN_WIPE: return step_wipe(c, s);
        case PLAN_PARTITION: return step_partition(c, s);
        case PLAN_MD_CREATE: return step_md_create(c, s);
        case PLAN_LUKS_FORMAT: return step_luks_format(c, s);
        case PLAN_LUKS_OPEN: return step_luks_open(c, s);
        case PLAN_PVCREATE: return step_pvcreate(c, s);
        case PLAN_VGCREATE: return step_vgcreate(c, s);
        case PLAN_LVCREATE: return step_lvcreate(c, s);
        case PLAN_MKFS: return step_mkfs(c, s);
        case PLAN_MOUNT: return step_mount(c, s);
        case PLAN_CONFIGURE: return step_configure(c, s);
        case PLAN_NETWORK: return step_network(c, s);
        case PLAN_LUKS_BIND: return step_luks_bind(c, s);
        case PLAN_BOOTLOADER: return bootloader_step(c->plan, s, &c->why);
        case PLAN_FINISH: return step_finish(c, s);
        case PLAN_BENCH_RAW: return step_bench_raw(c, s);
        case PLAN_BENCH_CRYPT: return step_bench_crypt(c, s);
        case PLAN_IMAGE: return step_image(c, s);
        case PLAN_REGISTER: return step_register(c, s);
        case PLAN_MD_ASSEMBLE: return step_md_assemble(c, s);
        case PLAN_VG_ACTIVATE: return step_vg_activate(c, s);
        case PLAN_SKIP_STAGE: return 0;
        case PLAN_RESUME_CHECK: return step_resume_check(c, s);
        default:
                return -EINVAL;
        }
}

static void hook(const struct apply_ctx *c, const struct plan_step *s, size_t i, enum apply_event ev,
                 int err, uint64_t usec, const char *reason) {
        if (c->opts->hook)
                c->opts->hook(c->opts->userdata, s, i, c->plan->n_steps, ev, err, usec, reason);
}

static void dry_run_print(const struct plan *p, FILE *out) {
        fprintf(out, "dry run: %zu step(s), nothing will be changed\n", p->n_steps);
        fprintf(out, "fingerprint: %s\nmode: %s%s%s%s\n", p->fingerprint, p->resume ? "resume" : "fresh install",
                p->mode_why ? " (" : "", p->mode_why ? p->mode_why : "", p->mode_why ? ")" : "");
        for (size_t k = 0; k < p->n_steps; k++) {
                const struct plan_step *s = &p->steps[k];
                fprintf(out, "%3zu. %-11s %s\n", k + 1, apply_step_name(s->kind), s->description ? s->description : "");
                if (s->destroys)
                        fprintf(out, "     destroys: %s\n", s->destroys);
        }
}

/* What a context owns (not its report: apply_run's caller's, or its own). */
static void ctx_done(struct apply_ctx *c) {
        for (size_t i = 0; i < c->n_keys; i++)
                luks_key_free(c->keys[i].key);
        free(c->keys);
        strbuf_release(&c->why);
        bench_result_done(&c->bench);
        for (size_t i = 0; i < c->n_choices; i++)
                free(c->choices[i].cipher);
        free(c->choices);
        resume_record_done(&c->rec);
        free(c->fallback_why);
        for (size_t i = 0; c->md_uuids && i < c->plan->n_steps; i++)
                free(c->md_uuids[i]);
        free(c->md_uuids);
}

/* A failed run is reported too (the run report with the failed step and
 * why), to the webhook; CloudStack never gets a failed node. */
static void report_failure(struct apply_ctx *c, const struct plan_step *s, const char *why) {
        char stage[160];
        apply_stage_name(s, stage, sizeof stage);
        (void) report_finish(c->report, REPORT_FAIL, stage, why);
        struct register_options ro;
        register_options_default(&ro);
        ro.ca_file = c->opts->ca_file;
        ro.cloudstack_firstboot = true;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r = register_run(c->plan->spec, c->report, &ro, &err);
        if (r < 0 && r != -ENOMSG)
                log_warning("could not report the failure: %s", strbuf_why(&err, r));
}

/* The one executor loop (docs/apply.md): per step the dry-run print, the
 * stage begin/end events, the progress record and the report, and on a
 * failure the one error path that reports and tears down. It stays one
 * function of about 140 lines so that every step passes the same checks in
 * the same order and the context's cleanup has one owner. */
int apply_run(const struct plan *p, const struct apply_options *opts, enum plan_step_kind *ret_failed) {
        static const struct apply_options defaults = { 0 };
        if (!opts)
                opts = &defaults;
        enum plan_step_kind failed_dummy;
        if (!ret_failed)
                ret_failed = &failed_dummy;
        *ret_failed = _PLAN_STEP_KIND_MAX;
        int r;
        if (opts->dry_run) {
                dry_run_print(p, opts->dry_run_out ? opts->dry_run_out : stdout);
                return 0;
        }

        luks_setup_logging();
        struct apply_ctx c = { .plan = p, .opts = opts, .why = STRBUF_INIT, .report = opts->report, .bench = { .chosen = -1 } };
        c.why.max = 8192;
        struct report *own_report = NULL;
        if (!c.report) {
                r = report_new(&own_report);
                if (r < 0)
                        return log_error_errno(r, "failed to start the run report: %m");
                (void) report_set_node(own_report, p->inv, opts->hostname, NULL);
                c.report = own_report;
        }
        /* a spec with layouts: the report and every webhook event name the layout installed */
        /* a spec with nodes: the report and every webhook event name the row that applied
         * (its key, "default", or "none") */
        if (p->spec->n_nodes && report_set_node_field(c.report, "nodes_row", p->node ? p->node->key : "none") < 0) {
                report_free(own_report);
                return log_error_errno(-ENOMEM, "failed to start the run report: %m");
        }
        if (p->spec->layout && report_set_node_field(c.report, "layout", p->spec->layout) < 0) {
                report_free(own_report);
                return log_error_errno(-ENOMEM, "failed to start the run report: %m");
        }
        int code = 0;
        const struct plan_step *failed = NULL;
        _cleanup_free_ char *failed_why = NULL;
        bool root = plan_mounts_root(p), fall_back = false;
        memcpy(c.rec.fingerprint, p->fingerprint, sizeof c.rec.fingerprint);
        const char *rid = report_run_id(c.report);
        c.rec.run_id = rid ? strdup(rid) : NULL;
        c.rec.reinstall = opts->reinstall ? strdup(opts->reinstall) : NULL;     /* the act this install answers */
        uint64_t t0 = now_usec();
        for (size_t k = 0; k < p->n_steps; k++) {
                const struct plan_step *s = &p->steps[k];
                const char *dev = s->device ? s->device : "-";
                if (resume_skips(&c, s)) {
                        log_info("step %zu/%zu %s %s: skipped, the interrupted run did it", k + 1, p->n_steps,
                                 apply_step_name(s->kind), dev);
                        continue;
                }
                if (opts->skip_storage && apply_step_is_storage(s->kind)) {
                        log_info("step %zu/%zu %s %s: skipped (--skip-storage: '%s' is a plain directory)", k + 1,
                                 p->n_steps, apply_step_name(s->kind), dev, kiln_paths.target);
                        continue;
                }
                if (s->kind == PLAN_FINISH && c.recording) {
                        c.rec.complete = true;  /* the next run over these disks is a fresh install */
                        record_save(&c);
                }
                log_info("step %zu/%zu %s %s: %s", k + 1, p->n_steps, apply_step_name(s->kind), dev,
                         s->description ? s->description : "");
                hook(&c, s, k, APPLY_STEP_START, 0, 0, NULL);
                strbuf_reset(&c.why);
                uint64_t t = now_usec();
                r = run_step(&c, s);
                uint64_t usec = now_usec() - t;
                if (r < 0 && p->resume && opts->fallback && !c.resumed && !c.unlock_failed) {
                        /* the stack is not this plan's unfinished run, or it cannot be brought up:
                         * nothing was written; undo and install fresh */
                        const char *why = exec_last_line(&c.why);
                        if (asprintf(&c.fallback_why, "%s %s: %s%s%s", apply_step_name(s->kind), dev, why, *why ? ": " : "",
                                     r == -ESTALE ? "not resumable" : strerror(-r)) < 0)
                                c.fallback_why = NULL;
                        log_info("not resuming (%s); undoing the resume steps and installing fresh",
                                 c.fallback_why ? c.fallback_why : "?");
                        hook(&c, s, k, APPLY_STEP_DONE, 0, usec, NULL);
                        if ((r = resume_undo(&c, k)) < 0) {
                                code = r;
                                *ret_failed = s->kind;
                                failed = s;
                                failed_why = strdup("cannot undo the resume steps before a fresh install");
                                break;
                        }
                        fall_back = true;
                        break;
                }
                if (r < 0) {
                        const char *why = exec_last_line(&c.why);
                        if (c.unlock_failed && p->resume && !c.resumed)
                                /* the stack is this plan's, its key only behind Tang: no wipe for that */
                                log_error("step %zu/%zu %s failed on '%s': %s: %s; not resuming, and no fresh install "
                                          "either (a Tang that does not answer is no reason to wipe); nothing was written",
                                          k + 1, p->n_steps, apply_step_name(s->kind), dev, why, strerror(-r));
                        else if (r == -ESTALE)       /* a resume without a fresh fallback (the spec may not wipe) */
                                log_error("step %zu/%zu %s failed on '%s': %s; no fresh install either: the spec does not "
                                          "allow wiping these disks (wipe: true), and nothing was written",
                                          k + 1, p->n_steps, apply_step_name(s->kind), dev, why);
                        else
                                log_error_errno(r, "step %zu/%zu %s failed on '%s' after %.1fs: %s%s%m", k + 1, p->n_steps,
                                                apply_step_name(s->kind), dev, usec / 1e6, why, *why ? ": " : "");
                        hook(&c, s, k, APPLY_STEP_FAILED, r, usec, *why ? why : strerror(-r));
                        code = r;
                        *ret_failed = s->kind;
                        failed = s;
                        if (asprintf(&failed_why, "%s%s%s", why, *why ? ": " : "", strerror(-r)) < 0)
                                failed_why = NULL;
                        if (c.unlock_failed && p->resume && !c.resumed)
                                (void) resume_undo(&c, k);      /* close what the resume steps opened */
                        break;
                }
                log_info("step %zu/%zu %s %s done in %.1fs", k + 1, p->n_steps, apply_step_name(s->kind), dev, usec / 1e6);
                hook(&c, s, k, APPLY_STEP_DONE, 0, usec, NULL);
                if (!p->resume && root && s->kind == PLAN_MOUNT && (k + 1 == p->n_steps || p->steps[k + 1].kind != PLAN_MOUNT)) {
                        c.recording = true;     /* storage is done and the root is mounted */
                        record_stage(&c, RESUME_STAGE_STORAGE);
                } else if (s->kind != PLAN_MOUNT) {
                        enum resume_stage st = resume_stage_of(s->kind);
                        bool more = k + 1 < p->n_steps && resume_stage_of(p->steps[k + 1].kind) == st;
                        if ((st == RESUME_STAGE_UNLOCK || st == RESUME_STAGE_CONFIGURE) && more)
                                continue;       /* a stage is done when its last step is: unlock when its last volume
                                                 * is bound, configure when the network files follow fstab */
                        record_stage(&c, st == RESUME_STAGE_STORAGE ? RESUME_STAGE_NONE : st);
                }
        }
        if (fall_back) {
                json_object *o = json_object_new_object();
                if (o) {
                        json_object_object_add(o, "fingerprint", json_object_new_string(p->fingerprint));
                        json_object_object_add(o, "fresh_because", json_object_new_string(c.fallback_why ? c.fallback_why : "?"));
                }
                (void) report_set_member(c.report, "resumed", json_object_new_boolean(false));
                (void) report_set_member(c.report, "resume", o);
                struct apply_options fo = *opts;
                fo.fallback = NULL;
                fo.report = c.report;
                code = apply_run(opts->fallback, &fo, ret_failed);
        } else {
                if (code == 0)
                        log_info("applied %zu step(s) in %.1fs", p->n_steps, (now_usec() - t0) / 1e6);
                else
                        report_failure(&c, failed, failed_why);
                if (report_get_result(c.report) == REPORT_NONE)
                        (void) report_finish(c.report, REPORT_SUCCESS, NULL, NULL);
                if (!report_get(c.report, "resumed"))
                        report_resume(&c);
                save_report(&c);
        }
        ctx_done(&c);
        report_free(own_report);
        return code;
}

/* ---- looking at a finished node, read-only ---- */

static bool inspect_mounts(const struct plan_step *s) {
        const char *m = s->fs.mountpoint;
        return m && (streq(m, "/") || streq(m, "/boot"));
}

static void ctx_free(struct apply_ctx *c) {
        if (!c)
                return;
        ctx_done(c);
        free(c);
}

int apply_inspect(const struct plan *p, const struct apply_options *opts, struct apply_inspection *ret) {
        *ret = (struct apply_inspection) { .record_err = -ENOENT, .image = KEXEC_IMAGE_INIT, .image_err = -ENOENT };
        if (!p->resume)
                return -EINVAL;
        luks_setup_logging();
        struct apply_ctx *c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        *c = (struct apply_ctx) { .plan = p, .opts = opts, .why = STRBUF_INIT, .readonly = true, .bench = { .chosen = -1 } };
        c->why.max = 8192;
        const char *root_dev = NULL;
        for (size_t k = 0; k < p->n_steps; k++) {
                const struct plan_step *s = &p->steps[k];
                int r;
                switch (s->kind) {
                case PLAN_MD_ASSEMBLE: case PLAN_LUKS_OPEN: case PLAN_VG_ACTIVATE:
                        break;
                case PLAN_MOUNT:
                        if (!inspect_mounts(s))
                                continue;
                        if (streq(s->fs.mountpoint, "/"))
                                root_dev = s->device;
                        break;
                case PLAN_RESUME_CHECK: {
                        ret->ctx = c;
                        ret->upto = k;
                        r = resume_record_load(s->device, &ret->rec);
                        ret->record_err = r;
                        if (r < 0)
                                ret->why = strdupf("progress record '%s': %s", s->device,
                                                   r == -ENOENT ? "none" : r == -ENOTEMPTY ? "data after its JSON document" :
                                                   "unreadable");
                        ret->image_err = kexec_image_open(kiln_paths.target, &ret->image);
                        _cleanup_free_ struct inv_signature *sigs = NULL;
                        size_t n = 0;
                        if (root_dev && sigprobe_device(root_dev, &sigs, &n) >= 0)
                                for (size_t i = 0; i < n; i++) {
                                        if (!ret->root_uuid && sigs[i].uuid)
                                                ret->root_uuid = strdup(sigs[i].uuid);
                                        free(sigs[i].type);
                                        free(sigs[i].usage);
                                        free(sigs[i].uuid);
                                        free(sigs[i].label);
                                }
                        return 0;
                }
                default:
                        continue;
                }
                log_info("looking read-only: %s %s", apply_step_name(s->kind), s->device ? s->device : s->id ? s->id : "-");
                strbuf_reset(&c->why);
                r = run_step(c, s);
                if (r < 0) {
                        const char *why = exec_last_line(&c->why);
                        ret->record_err = c->unlock_failed ? -ENOKEY : -ESTALE;
                        ret->why = strdupf("%s %s: %s%s%s", apply_step_name(s->kind), s->device ? s->device : "-", why,
                                           *why ? ": " : "", strerror(-r));
                        int q = resume_undo(c, k);
                        ctx_free(c);
                        return q < 0 ? q : 0;
                }
        }
        ctx_free(c);    /* a resume plan without a resume-check: no record to read */
        return 0;
}

int apply_inspect_end(struct apply_inspection *in) {
        kexec_image_close(&in->image);
        struct apply_ctx *c = in->ctx;
        int r = c ? resume_undo(c, in->upto) : 0;
        ctx_free(c);
        in->ctx = NULL;
        kexec_image_done(&in->image);
        resume_record_done(&in->rec);
        free(in->why);
        free(in->root_uuid);
        in->why = in->root_uuid = NULL;
        return r;
}
