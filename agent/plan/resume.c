#include "resume.h"
#include "netconf.h"

#include "paths.h"

#include "json.h"
#include <limits.h>

#ifndef KILN_VERSION
#define KILN_VERSION "0.1.0"
#endif

static const char *const stage_names[_RESUME_STAGE_MAX] = {
        [RESUME_STAGE_STORAGE] = "storage",
        [RESUME_STAGE_IMAGE] = "image",
        [RESUME_STAGE_CONFIGURE] = "configure",
        [RESUME_STAGE_REGISTER] = "register",
        [RESUME_STAGE_BOOT] = "boot",
        [RESUME_STAGE_UNLOCK] = "unlock",
};

const char *resume_stage_name(enum resume_stage s) {
        return s >= 0 && s < _RESUME_STAGE_MAX ? stage_names[s] : NULL;
}

enum resume_stage resume_stage_of(enum plan_step_kind k) {
        if (plan_step_is_storage(k))
                return RESUME_STAGE_STORAGE;
        switch (k) {
        case PLAN_IMAGE: return RESUME_STAGE_IMAGE;
        case PLAN_CONFIGURE: case PLAN_NETWORK: return RESUME_STAGE_CONFIGURE;
        case PLAN_REGISTER: return RESUME_STAGE_REGISTER;
        case PLAN_LUKS_BIND: return RESUME_STAGE_UNLOCK;
        case PLAN_BOOTLOADER: return RESUME_STAGE_BOOT;
        default: return RESUME_STAGE_NONE;
        }
}

/* ---- the progress record ---- */

void resume_record_done(struct resume_record *rec) {
        if (!rec)
                return;
        free(rec->version);
        free(rec->run_id);
        free(rec->reinstall);
        *rec = (struct resume_record) {};
}

int resume_record_to_json(const struct resume_record *rec, struct strbuf *out) {
        int r = 0;
        json_object *o = json_object_new_object(), *done = json_object_new_array();
        if (!o || !done) {
                json_object_put(o);
                json_object_put(done);
                return -ENOMEM;
        }
        json_set(o, "kiln_progress", json_object_new_int(RESUME_RECORD_FORMAT), &r);
        json_set_str(o, "fingerprint", rec->fingerprint, &r);
        json_set_str(o, "version", rec->version ? rec->version : KILN_VERSION, &r);
        if (rec->run_id)
                json_set_str(o, "run_id", rec->run_id, &r);
        if (rec->reinstall)
                json_set_str(o, "reinstall", rec->reinstall, &r);
        for (int s = 0; s < _RESUME_STAGE_MAX; s++)
                if (rec->stages & (1u << s))
                        json_append(done, json_str(stage_names[s]), &r);
        json_set(o, "stages_done", done, &r);
        json_set(o, "complete", json_object_new_boolean(rec->complete), &r);
        _cleanup_json_ json_object *doc = json_done(o, r);
        if (!doc)
                return r < 0 ? r : -ENOMEM;
        return json_print(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED, true, out);
}

int resume_record_from_json(const char *text, size_t len, struct resume_record *ret) {
        if (len > RESUME_RECORD_MAX_BYTES || len > INT_MAX)
                return -EFBIG;
        json_tokener *tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        json_object *root = json_tokener_parse_ex(tok, text, (int) len);
        bool ok = json_tokener_get_error(tok) == json_tokener_success;
        size_t end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        struct resume_record rec = {};
        int r = -EBADMSG;
        /* one document: after it only white space (the tokener stops where the object closes) */
        while (ok && end < len && text[end] != 0 && strchr(" \t\r\n", text[end]))
                end++;
        if (ok && end < len) {
                r = -ENOTEMPTY;
                goto out;
        }
        json_object *fmt, *stages, *complete;
        const char *fp, *version, *run_id, *reinstall;
        if (!ok || !json_object_is_type(root, json_type_object) ||
            !json_object_object_get_ex(root, "kiln_progress", &fmt) || !json_object_is_type(fmt, json_type_int) ||
            json_object_get_int(fmt) != RESUME_RECORD_FORMAT ||
            !(fp = json_get_str(root, "fingerprint")) || strlen(fp) != 64 || !hex_valid(fp, 64) ||
            !json_object_object_get_ex(root, "stages_done", &stages) || !json_object_is_type(stages, json_type_array) ||
            !json_object_object_get_ex(root, "complete", &complete) || !json_object_is_type(complete, json_type_boolean))
                goto out;
        memcpy(rec.fingerprint, fp, 65);
        for (size_t i = 0; i < json_object_array_length(stages); i++) {
                json_object *e = json_object_array_get_idx(stages, i);
                if (!json_object_is_type(e, json_type_string))
                        goto out;
                int s = 0;
                while (s < _RESUME_STAGE_MAX && !streq(stage_names[s], json_object_get_string(e)))
                        s++;
                if (s == _RESUME_STAGE_MAX)
                        goto out;       /* a stage this kiln does not know: not its record */
                rec.stages |= 1u << s;
        }
        rec.complete = json_object_get_boolean(complete);
        r = -ENOMEM;
        version = json_get_str(root, "version");
        run_id = json_get_str(root, "run_id");
        reinstall = json_get_str(root, "reinstall");
        if ((version && !(rec.version = strdup(version))) || (run_id && !(rec.run_id = strdup(run_id))) ||
            (reinstall && !(rec.reinstall = strdup(reinstall))))
                goto out;
        *ret = rec;
        rec = (struct resume_record) {};
        r = 0;
out:
        resume_record_done(&rec);
        json_object_put(root);
        return r;
}

/* ---- the resume plan (pure) ---- */

struct rbuild {
        const struct plan *fresh;
        struct plan *p;
        size_t alloc;
        struct strbuf why;
        bool no_fallback;       /* the spec may not wipe these disks: a mismatch stops the run */
};

static struct plan_step *push(struct rbuild *b, const struct plan_step *from, enum plan_step_kind kind) {
        struct plan *p = b->p;
        if (p->n_steps == b->alloc) {
                size_t na = b->alloc ? b->alloc * 2 : 32;
                struct plan_step *ns = realloc(p->steps, na * sizeof *ns);
                if (!ns)
                        return NULL;
                p->steps = ns;
                b->alloc = na;
        }
        struct plan_step *s = &p->steps[p->n_steps++];
        *s = (struct plan_step) { .kind = kind };
        if (from) {
                s->id = from->id;
                s->obj = from->obj;
                s->index = from->index;
                s->size = from->size;
                s->size_approx = from->size_approx;
        }
        return s;
}

/* The typed payload of the fresh step `from`, for the resume step s that
 * runs in its place (a skipped stage carries none). */
static int copy_payload(struct rbuild *b, struct plan_step *s, const struct plan_step *from) {
        switch (s->kind) {
        case PLAN_LUKS_OPEN:
                if (plan_luks_copy(&s->luks, &from->luks) < 0)
                        return -ENOMEM;
                s->luks.tuned_by = 0;   /* no benchmark runs: the header holds what it chose (its
                                         * workqueue flags are persistent) */
                return 0;
        case PLAN_MD_ASSEMBLE:
                s->md = from->md;
                return 0;
        case PLAN_VG_ACTIVATE:
                s->vg = (struct plan_vg) { .name = from->vg.name };
                for (size_t i = 0; i < b->fresh->n_steps; i++) {
                        const struct plan_step *lv = &b->fresh->steps[i];
                        if (lv->kind == PLAN_LVCREATE && lv->device && lv->lv.vg && streq(lv->lv.vg, from->vg.name) &&
                            strv_pushdup(&s->vg.lv_nodes, lv->device) < 0)
                                return -ENOMEM;
                }
                return 0;
        case PLAN_MOUNT:
                return plan_fs_copy(&s->fs, &from->fs);
        case PLAN_LUKS_BIND:
                s->bind = from->bind;
                return 0;
        case PLAN_BOOTLOADER:
                s->boot = from->boot;
                return 0;
        default:
                return 0;
        }
}

/* A skipped step keeps the payload of the step it skips (plan_step_made()):
 * configure writes crypttab from the LUKS headers and swaps, fstab's swap
 * lines from the mkfs steps, PARTUUIDs from the partitions, as in the run
 * that made them. */
static int keep_payload(struct plan_step *s, const struct plan_step *from) {
        switch (from->kind) {
        case PLAN_LUKS_FORMAT:
                return plan_luks_copy(&s->luks, &from->luks);
        case PLAN_MKFS:
                return plan_fs_copy(&s->fs, &from->fs);
        case PLAN_PARTITION:
                if (!from->n_parts)
                        return 0;
                if (!(s->parts = calloc(from->n_parts, sizeof *s->parts)))
                        return -ENOMEM;
                for (size_t k = 0; k < from->n_parts; k++, s->n_parts++) {
                        s->parts[k] = from->parts[k];
                        if (!(s->parts[k].device = strdup(from->parts[k].device)))
                                return -ENOMEM;
                }
                return 0;
        default:
                return 0;
        }
}

/* device and inputs copied from `from`, description taken (also on failure) */
static int fill(struct plan_step *s, const struct plan_step *from, char *description, const char *destroys) {
        s->description = description;
        if (!description)
                return -ENOMEM;
        if (from && from->device && !(s->device = strdup(from->device)))
                return -ENOMEM;
        for (char **i = from ? from->inputs : NULL; i && *i; i++)
                if (strv_pushdup(&s->inputs, *i) < 0)
                        return -ENOMEM;
        if (destroys && !(s->destroys = strdup(destroys)))
                return -ENOMEM;
        return 0;
}

/* The signatures the inventory saw on a device path (a partition or a whole disk). */
static const struct inv_signature *sigs_of(const struct inventory *inv, const char *dev, size_t *ret_n) {
        for (size_t i = 0; dev && i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                if (d->path && streq(d->path, dev)) {
                        *ret_n = d->n_sigs;
                        return d->sigs;
                }
                for (size_t k = 0; k < d->n_parts; k++)
                        if (d->parts[k].path && streq(d->parts[k].path, dev)) {
                                *ret_n = d->parts[k].n_sigs;
                                return d->parts[k].sigs;
                        }
        }
        *ret_n = 0;
        return NULL;
}

static bool known_device(const struct inventory *inv, const char *dev) {
        for (size_t i = 0; dev && i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                if (d->path && streq(d->path, dev))
                        return true;
                for (size_t k = 0; k < d->n_parts; k++)
                        if (d->parts[k].path && streq(d->parts[k].path, dev))
                                return true;
        }
        return false;
}

/* The one signature of this type on dev; NULL if none (or the device is
 * not one the inventory probes: md, dm, LV, checked later by the run). */
static const struct inv_signature *sig_typed(const struct inventory *inv, const char *dev, const char *type) {
        size_t n;
        const struct inv_signature *s = sigs_of(inv, dev, &n);
        for (size_t i = 0; i < n; i++)
                if (s[i].type && streq(s[i].type, type))
                        return &s[i];
        return NULL;
}

static bool device_has_signature(const struct inventory *inv, const char *dev) {
        size_t n;
        (void) sigs_of(inv, dev, &n);
        return n > 0;
}

static int not_resumable(struct rbuild *b, const char *f, ...) _printf_(2, 3);
static int not_resumable(struct rbuild *b, const char *f, ...) {
        va_list ap;
        va_start(ap, f);
        int r = strbuf_vaddf(&b->why, f, ap);
        va_end(ap);
        return r < 0 ? r : 0;
}

static const struct inv_disk *disk_of(const struct plan *p, const struct plan_step *st) {
        for (size_t i = 0; i < p->n_disks; i++)
                if (p->disks[i].rule == st->obj && p->disks[i].index == st->index)
                        return p->disks[i].disk;
        return NULL;
}

/* Does a storage step of the plan use this whole disk (an md member, or a
 * LUKS header, PV or filesystem straight on it)? */
static bool used_whole(const struct plan *p, const char *disk) {
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct plan_step *st = &p->steps[i];
                if (st->kind == PLAN_PARTITION && st->device && streq(st->device, disk))
                        return false;
                if ((st->kind == PLAN_LUKS_FORMAT || st->kind == PLAN_PVCREATE || st->kind == PLAN_MKFS) &&
                    st->device && streq(st->device, disk))
                        return true;
                if (st->kind == PLAN_MD_CREATE && strv_contains(st->inputs, disk))
                        return true;
        }
        return false;
}

/* Is dev the mapping a luks-open step before step i of plan p makes? */
static bool opened_before(const struct plan *p, size_t i, const char *dev) {
        for (size_t k = 0; dev && k < i && k < p->n_steps; k++)
                if (p->steps[k].kind == PLAN_LUKS_OPEN && p->steps[k].device && streq(p->steps[k].device, dev))
                        return true;
        return false;
}

int resume_md_member(const char *md_id, const char *member, const struct inv_signature *sigs, size_t n,
                     const char **uuid, struct strbuf *why) {
        const struct inv_signature *s = NULL;
        for (size_t i = 0; i < n && !s; i++)
                if (sigs[i].type && streq(sigs[i].type, "linux_raid_member"))
                        s = &sigs[i];
        int r;
        if (!s || !s->uuid)
                r = strbuf_addf(why, "%s is not a member of md array '%s'", member, md_id);
        else if (*uuid && !streq(*uuid, s->uuid))
                r = strbuf_addf(why, "the members of md array '%s' belong to different arrays", md_id);
        else {
                *uuid = s->uuid;
                return 1;
        }
        return r < 0 ? r : 0;
}

static bool has_partition_table(const struct inv_disk *d) {
        for (size_t i = 0; i < d->n_sigs; i++)
                if ((d->sigs[i].usage && streq(d->sigs[i].usage, "partition_table")) ||
                    (d->sigs[i].type && (streq(d->sigs[i].type, "gpt") || streq(d->sigs[i].type, "dos"))))
                        return true;
        return d->n_parts > 0;
}

/* Does the inventory show, without opening anything, what this plan builds?
 * 1 yes, 0 no (b->why says what differs). */
static int check_disks(struct rbuild *b) {
        const struct plan *f = b->fresh;
        const struct inventory *inv = f->inv;
        bool root = false;
        for (size_t i = 0; i < f->n_steps; i++) {
                const struct plan_step *st = &f->steps[i];
                const struct spec_filesystem *fs = st->kind == PLAN_MOUNT ? st->obj : NULL;
                if (fs && fs->mount && streq(fs->mount, "/"))
                        root = true;
                /* a generated key is in no spec: kiln opens the volume again only through its Tang pin
                 * (unlock.h unlock_recover(), from the clevis token the run bound) */
                const struct spec_luks *l = st->kind == PLAN_LUKS_FORMAT ? st->obj : NULL;
                if (l && l->key.source == SPEC_KEY_GENERATE && l->unlock.n_tang == 0)
                        return not_resumable(b, l->key.escrow
                                             ? "LUKS '%s' has a generated key and no 'unlock' (Tang): kiln cannot open it "
                                               "again (only the escrow's private key does)"
                                             : "LUKS '%s' has 'key: generate' and no 'unlock' (Tang): the key of the "
                                               "interrupted run is gone", st->id);
        }
        if (!root)
                return not_resumable(b, "the spec mounts no root filesystem, where the progress record is kept");
        for (size_t i = 0; i < f->n_disks; i++) {
                const struct inv_disk *d = f->disks[i].disk;
                if (d->mountpoint || d->holders)
                        return not_resumable(b, "%s is in use", d->path);
                for (size_t k = 0; k < d->n_parts; k++)
                        if (d->parts[k].mountpoint || d->parts[k].holders)
                                return not_resumable(b, "%s is in use", d->parts[k].path ? d->parts[k].path : d->parts[k].name);
        }
        /* a disk used whole never got a partition table from this plan: one
         * there now (and the md member or header the inventory may still see
         * beside it) is another layout's */
        for (size_t i = 0; i < f->n_disks; i++) {
                const struct inv_disk *d = f->disks[i].disk;
                if (used_whole(f, d->path) && has_partition_table(d))
                        return not_resumable(b, "%s holds a partition table, this plan uses the whole disk", d->path);
        }
        for (size_t i = 0; i < f->n_steps; i++) {
                const struct plan_step *st = &f->steps[i];
                const char *dev = st->device;
                switch (st->kind) {
                case PLAN_PARTITION: {
                        const struct inv_disk *d = disk_of(f, st);
                        if (!d || !sig_typed(inv, d->path, "gpt"))
                                return not_resumable(b, "%s holds no GPT", dev);
                        if (d->n_parts != st->n_parts)
                                return not_resumable(b, "%s has %zu partition%s, this plan makes %zu", dev, d->n_parts,
                                                     d->n_parts == 1 ? "" : "s", st->n_parts);
                        for (size_t k = 0; k < st->n_parts; k++) {
                                const struct plan_part *pp = &st->parts[k];
                                const struct inv_partition *ip = NULL;
                                for (size_t j = 0; j < d->n_parts; j++)
                                        if (d->parts[j].number == pp->number)
                                                ip = &d->parts[j];
                                if (!ip || ip->start != pp->start || ip->size != pp->size)
                                        return not_resumable(b, "partition %u of %s is not where this plan puts it", pp->number, dev);
                        }
                        break;
                }
                case PLAN_MD_CREATE: {
                        const char *uuid = NULL;
                        for (char **m = st->inputs; m && *m; m++) {
                                /* per-disk LUKS under the md: its superblock is inside the closed
                                 * volume; the run judges it once the luks-open above made the
                                 * mapping (the same rule, on what it probes there) */
                                if (opened_before(f, i, *m))
                                        continue;
                                if (!known_device(inv, *m))
                                        return not_resumable(b, "md array '%s' sits on %s, which the inventory does not "
                                                             "show: its superblock cannot be checked", st->id, *m);
                                size_t n;
                                const struct inv_signature *s = sigs_of(inv, *m, &n);
                                int k = resume_md_member(st->id, *m, s, n, &uuid, &b->why);
                                if (k <= 0)
                                        return k;
                        }
                        break;
                }
                case PLAN_LUKS_FORMAT:
                        if (known_device(inv, dev) && !sig_typed(inv, dev, "crypto_LUKS"))
                                return not_resumable(b, "%s holds no LUKS header", dev);
                        break;
                case PLAN_PVCREATE:
                        if (known_device(inv, dev) && !sig_typed(inv, dev, "LVM2_member"))
                                return not_resumable(b, "%s is not an LVM PV", dev);
                        break;
                case PLAN_MKFS: {
                        const struct spec_filesystem *fs = st->obj;
                        if (fs->encrypt_random) {       /* left blank: crypttab makes it at every boot */
                                if (known_device(inv, dev) && device_has_signature(inv, dev))
                                        return not_resumable(b, "%s, the swap encrypted at every boot, holds a signature", dev);
                                break;
                        }
                        if (known_device(inv, dev) && !sig_typed(inv, dev, spec_fs_type_name(fs->type)))
                                return not_resumable(b, "%s holds no %s filesystem", dev, spec_fs_type_name(fs->type));
                        break;
                }
                default:
                        break;
                }
        }
        return 1;
}

/* The array UUID the inventory shows on the md's members; NULL when a member
 * is a mapping a luks-open of the plan makes (the run reads it there, once
 * opened: apply.c step_md_assemble()). */
static const char *md_uuid(const struct plan *f, size_t i) {
        const struct plan_step *st = &f->steps[i];
        for (char **m = st->inputs; m && *m; m++)
                if (opened_before(f, i, *m))
                        return NULL;
        const struct inv_signature *s = st->inputs ? sig_typed(f->inv, st->inputs[0], "linux_raid_member") : NULL;
        return s ? s->uuid : NULL;
}

static int emit(struct rbuild *b) {
        const struct plan *f = b->fresh;
        int r = 0;
        size_t last_mount = SIZE_MAX;
        for (size_t i = 0; i < f->n_steps; i++)
                if (f->steps[i].kind == PLAN_MOUNT)
                        last_mount = i;
        for (size_t i = 0; r >= 0 && i < f->n_steps; i++) {
                const struct plan_step *st = &f->steps[i];
                const char *dev = st->device ? st->device : "";
                struct plan_step *s;
                switch (st->kind) {
                case PLAN_WIPE:
                        continue;       /* nothing is wiped: the next steps keep what is there */
                case PLAN_MD_CREATE: {
                        if (!(s = push(b, st, PLAN_MD_ASSEMBLE)) || copy_payload(b, s, st) < 0)
                                return -ENOMEM;
                        const char *uuid = md_uuid(f, i);
                        if (uuid && !(s->uuid = strdup(uuid)))
                                return -ENOMEM;
                        _cleanup_strbuf_ struct strbuf m = STRBUF_INIT;
                        for (char **in = st->inputs; in && *in; in++)
                                if ((r = strbuf_addf(&m, "%s%s", in == st->inputs ? "" : ", ", *in)) < 0)
                                        return r;
                        r = fill(s, st, uuid ? strdupf("assemble md '%s' (UUID %s) from %s; keeps the array and its data",
                                                       s->md.name, uuid, strbuf_str(&m))
                                             : strdupf("assemble md '%s' from %s, once the luks-open steps above opened "
                                                       "them (their superblocks are read then: one array, its UUID); "
                                                       "keeps the array and its data", s->md.name, strbuf_str(&m)),
                                 NULL);
                        break;
                }
                case PLAN_VGCREATE: {
                        if (!(s = push(b, st, PLAN_VG_ACTIVATE)) || copy_payload(b, s, st) < 0)
                                return -ENOMEM;
                        r = fill(s, st, strdupf("activate VG '%s' (vgchange -ay); keeps its PVs, UUID and LVs", s->vg.name), NULL);
                        break;
                }
                case PLAN_LUKS_OPEN: case PLAN_MOUNT: case PLAN_FINISH: {
                        if (!(s = push(b, st, st->kind)) || copy_payload(b, s, st) < 0)
                                return -ENOMEM;
                        /* a generated key is in no spec: its one way back in is the Tang pin (check_disks) */
                        bool pin = st->kind == PLAN_LUKS_OPEN && st->luks.key &&
                                   st->luks.key->key.source == SPEC_KEY_GENERATE;
                        r = fill(s, st, pin ? strdupf("%s, with the generated key its clevis token gives back through "
                                                      "Tang", st->description ? st->description : "")
                                            : strdup(st->description ? st->description : ""), st->destroys);
                        break;
                }
                case PLAN_IMAGE: case PLAN_CONFIGURE: case PLAN_NETWORK: case PLAN_REGISTER: case PLAN_LUKS_BIND: case PLAN_BOOTLOADER:
                        if (!(s = push(b, st, st->kind)) || copy_payload(b, s, st) < 0)
                                return -ENOMEM;
                        r = fill(s, st, strdupf("%s, unless the progress record says '%s' is done%s", st->description ? st->description : "",
                                            resume_stage_name(resume_stage_of(st->kind)),
                                            st->kind == PLAN_IMAGE && !st->device ? " (the root is emptied first)" : ""),
                                 st->destroys);
                        break;
                default: {
                        char *text;
                        switch (st->kind) {
                        case PLAN_PARTITION: text = strdupf("keep the GPT on %s (partitions and their UUIDs)", dev); break;
                        case PLAN_LUKS_FORMAT: text = strdupf("keep the LUKS header on %s (UUID, keyslots)", dev); break;
                        case PLAN_PVCREATE: text = strdupf("keep the PV %s", dev); break;
                        case PLAN_LVCREATE: text = strdupf("keep the LV %s", dev); break;
                        case PLAN_MKFS:
                                text = st->obj && ((const struct spec_filesystem *) st->obj)->encrypt_random ?
                                       strdupf("keep %s blank (the swap encrypted with a fresh key at every boot)", dev) :
                                       strdupf("keep the filesystem on %s (UUID, contents)", dev);
                                break;
                        case PLAN_BENCH_RAW: case PLAN_BENCH_CRYPT:
                                text = strdupf("no benchmark on %s: it ran before the filesystems in the interrupted run, "
                                           "and its writes would destroy them", dev);
                                break;
                        default:
                                return -EINVAL;
                        }
                        if (!(s = push(b, st, PLAN_SKIP_STAGE))) {
                                free(text);
                                return -ENOMEM;
                        }
                        s->skipped = st->kind;
                        if ((r = keep_payload(s, st)) < 0) {
                                free(text);
                                return r;
                        }
                        r = fill(s, st, text, NULL);
                        break;
                }
                }
                if (r >= 0 && i == last_mount) {
                        if (!(s = push(b, NULL, PLAN_RESUME_CHECK)))
                                return -ENOMEM;
                        if (!(s->device = strdupf("%s%s", kiln_paths.target, RESUME_RECORD_PATH)))
                                return -ENOMEM;
                        r = fill(s, NULL,
                                 b->no_fallback
                                 ? strdupf("read %s: go on only if it names this plan (%.12s) and the run did not finish; "
                                           "otherwise stop with nothing written (no fresh install: the spec does not allow "
                                           "wiping these disks)", s->device, f->fingerprint)
                                 : strdupf("read %s: go on only if it names this plan (%.12s) and the run did not finish; "
                                           "otherwise undo the steps above and install fresh", s->device, f->fingerprint),
                                 NULL);
                }
        }
        return r;
}

static int plan_build_resume(const struct plan *fresh, bool no_fallback, struct plan **ret, char **ret_why) {
        struct rbuild b = { .fresh = fresh, .why = STRBUF_INIT, .no_fallback = no_fallback };
        int r = check_disks(&b);
        if (r == 0) {
                *ret_why = strbuf_detach(&b.why);
                return *ret_why ? 0 : -ENOMEM;
        }
        strbuf_release(&b.why);
        if (r < 0)
                return r;
        _cleanup_plan_free_ struct plan *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->spec = fresh->spec;
        p->inv = fresh->inv;
        p->hostname_missing = fresh->hostname_missing;
        p->hostname_placeholder = fresh->hostname_placeholder;
        p->hostname_template = fresh->hostname_template;
        p->node = fresh->node;
        p->resume = true;
        memcpy(p->fingerprint, fresh->fingerprint, sizeof p->fingerprint);
        if (fresh->hostname && !(p->hostname = strdup(fresh->hostname)))
                return -ENOMEM;
        if (fresh->net) {       /* the same resolution again: it succeeded for the fresh plan */
                struct diags d = { 0 };
                r = netconf_build(p->spec, p->inv, &p->net, &d);
                diags_clear(&d);
                if (r < 0)
                        return r;
        }
        if (!(p->disks = calloc(fresh->n_disks ? fresh->n_disks : 1, sizeof *p->disks)))
                return -ENOMEM;
        memcpy(p->disks, fresh->disks, fresh->n_disks * sizeof *p->disks);
        p->n_disks = fresh->n_disks;
        b.p = p;
        r = emit(&b);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 1;
}

int resume_plan_build(const struct plan *fresh, struct plan **ret, char **ret_why) {
        return plan_build_resume(fresh, false, ret, ret_why);
}

int resume_decide(struct plan *fresh, bool force_fresh, struct plan **ret) {
        *ret = NULL;
        free(fresh->mode_why);
        fresh->mode_why = NULL;
        if (force_fresh)
                return (fresh->mode_why = strdup("asked for: --fresh or kiln.fresh")) ? 0 : -ENOMEM;
        _cleanup_free_ char *why = NULL;
        _cleanup_plan_free_ struct plan *p = NULL;
        int r = resume_plan_build(fresh, &p, &why);
        if (r < 0)
                return r;
        if (r == 0)
                return (fresh->mode_why = strdupf("no interrupted run of this plan to resume: %s", why)) ? 0 : -ENOMEM;
        if (!(p->mode_why = strdup("the disks hold this plan's layout; the progress record decides")) ||
            !(fresh->mode_why = strdup("the fallback if the progress record does not name this plan's unfinished run")))
                return -ENOMEM;
        *ret = TAKE_PTR(p);
        return 0;
}

int resume_decide_unwiped(const struct spec *spec, const struct inventory *inv, struct plan **ret_fresh, struct plan **ret) {
        struct diags d = {};
        _cleanup_plan_free_ struct plan *f = NULL;
        int r = plan_build_full(spec, inv, PLAN_ALLOW_SIGNATURES, &f, &d);
        diags_clear(&d);
        if (r == -EPERM || r == -EINVAL)
                return 0;       /* refused for another reason too */
        if (r < 0)
                return r;
        _cleanup_free_ char *why = NULL;
        _cleanup_plan_free_ struct plan *p = NULL;
        r = plan_build_resume(f, true, &p, &why);
        if (r <= 0)
                return r;
        if (!(p->mode_why = strdup("the disks hold this plan's layout; the progress record decides; no fresh install "
                                   "if it does not match: the spec does not allow wiping them")))
                return -ENOMEM;
        *ret_fresh = TAKE_PTR(f);
        *ret = TAKE_PTR(p);
        return 1;
}

int plan_decide(const struct spec *spec, const struct inventory *inv, bool force_fresh, struct diags *diags,
                struct plan **ret_fresh, struct plan **ret_resume, bool *ret_unwiped) {
        _cleanup_plan_free_ struct plan *fresh = NULL, *resume = NULL;
        bool unwiped = false;
        struct plan_miss *misses = NULL;
        size_t n_misses = 0;
        /* a spec with layouts: the first that fits this machine is the spec from here on */
        int r = plan_choose_layout(spec, inv, &spec, &misses, &n_misses, diags);
        if (r == -EPERM)
                plan_misses_free(misses, n_misses);
        if (r < 0)
                return r;
        r = plan_build(spec, inv, &fresh, diags);
        if (r == -EPERM && !force_fresh) {
                int k = resume_decide_unwiped(spec, inv, &fresh, &resume);
                if (k < 0) {
                        plan_misses_free(misses, n_misses);
                        return k;
                }
                if (k > 0) {
                        diags_clear(diags);
                        unwiped = true;
                        r = 0;
                }
        }
        if (r < 0) {
                plan_misses_free(misses, n_misses);
                return r;
        }
        fresh->misses = misses;
        fresh->n_misses = n_misses;
        misses = NULL;
        if (!unwiped && (r = resume_decide(fresh, force_fresh, &resume)) < 0)
                return r;
        if (resume && (r = plan_copy_misses(resume, fresh)) < 0)
                return r;
        *ret_fresh = TAKE_PTR(fresh);
        *ret_resume = TAKE_PTR(resume);
        *ret_unwiped = unwiped;
        return 0;
}

/* ---- a finished node ---- */

const char *plan_verdict_name(enum plan_verdict v) {
        switch (v) {
        case PLAN_VERDICT_RUN: return "run";
        case PLAN_VERDICT_BOOT_INSTALLED: return "boot-installed";
        case PLAN_VERDICT_REINSTALL: return "reinstall";
        case PLAN_VERDICT_REFUSE: return "refuse";
        }
        return NULL;
}

const char *plan_reinstall_token(const struct spec *spec, const char *cmdline_token) {
        return cmdline_token ? cmdline_token : spec ? spec->reinstall : NULL;
}

int plan_marks(const struct inventory *inv, struct plan_mark **ret, size_t *ret_n) {
        struct plan_mark *m = NULL;
        size_t n = 0;
        for (size_t i = 0; inv && i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                struct mark mk;
                size_t k = 0;
                /* the PTUUID of its GPT (the primary and the backup header name the same) */
                while (k < d->n_sigs && !(d->sigs[k].type && streq(d->sigs[k].type, "gpt") && mark_decode(d->sigs[k].uuid, &mk) > 0))
                        k++;
                if (k == d->n_sigs)
                        continue;
                struct plan_mark *nm = realloc(m, (n + 1) * sizeof *nm);
                if (!nm) {
                        free(m);
                        return -ENOMEM;
                }
                m = nm;
                m[n++] = (struct plan_mark) { .disk = d, .mark = mk };
        }
        *ret = m;
        *ret_n = n;
        return 0;
}

/* No finished record of any plan was read: the marks decide. */
static int verdict_of_marks(const struct plan *fresh, const char *token, enum plan_verdict *ret, struct strbuf *why) {
        _cleanup_free_ struct plan_mark *m = NULL;
        size_t n = 0;
        int r = plan_marks(fresh->inv, &m, &n);
        if (r < 0)
                return r;
        if (n == 0) {
                *ret = PLAN_VERDICT_RUN;
                return 0;
        }
        /* the token is new only when no mark carries it: an older disk of the
         * node may still carry the token the operator now presents again */
        const struct plan_mark *same = NULL;
        for (size_t i = 0; i < n && !same; i++)
                if (mark_has_token(&m[i].mark, token))
                        same = &m[i];
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = strbuf_addf(why, "%s%s", i ? ", " : "", m[i].disk->path);
        char what[64];
        const struct plan_mark *shown = same ? same : &m[0];
        if (r >= 0)
                r = strbuf_addf(why, " %s a finished kiln install (%s", n == 1 ? "holds" : "hold",
                                mark_describe(&shown->mark, what, sizeof what));
        if (r < 0)
                return r;
        if (token && !same) {
                *ret = PLAN_VERDICT_REINSTALL;
                return strbuf_addf(why, "), and the reinstall token '%s' is not the one it was installed with", token);
        }
        *ret = PLAN_VERDICT_REFUSE;
        if (token)
                return strbuf_addf(why, "; the reinstall token '%s' is the one it was installed with)", token);
        return strbuf_adds(why, "; no reinstall token was given)");
}

int plan_verdict(const struct plan *fresh, const struct resume_record *rec, const char *token, enum plan_verdict *ret,
                 struct strbuf *why) {
        if (rec && !rec->complete && streq(rec->fingerprint, fresh->fingerprint)) {
                *ret = PLAN_VERDICT_RUN;        /* this plan's interrupted run: resume it */
                return 0;
        }
        if (!rec || !rec->complete)
                return verdict_of_marks(fresh, token, ret, why);
        bool same = streq(rec->fingerprint, fresh->fingerprint);
        bool new_token = token && (!rec->reinstall || !streq(token, rec->reinstall));
        if (new_token) {
                *ret = PLAN_VERDICT_REINSTALL;
                return strbuf_addf(why, "the disks hold a finished install of %s (%.12s), and the reinstall token '%s' "
                                   "is not the one it was installed with (%s%s%s)", same ? "this plan" : "another plan",
                                   rec->fingerprint, token, rec->reinstall ? "'" : "", rec->reinstall ? rec->reinstall : "none",
                                   rec->reinstall ? "'" : "");
        }
        if (same) {
                *ret = PLAN_VERDICT_BOOT_INSTALLED;
                return strbuf_addf(why, "the disks hold a finished install of this plan (%.12s)%s%s%s", rec->fingerprint,
                                   token ? ", installed with the reinstall token '" : "", token ? token : "", token ? "'" : "");
        }
        *ret = PLAN_VERDICT_REFUSE;
        return strbuf_addf(why, "the disks hold a finished install of another plan (%s), this spec makes plan %s, and no new "
                           "reinstall token was given (%s%s%s)", rec->fingerprint, fresh->fingerprint,
                           token ? "the token '" : "none", token ? token : "", token ? "' is the one on the disks" : "");
}
