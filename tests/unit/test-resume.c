/* Resume after a failure, the pure parts: the plan fingerprint (stable over
 * the inventories of a first and a second boot, changed by what defines
 * the storage), the progress record's form (round trip, refusals; its file:
 * test-record.c),
 * and the decision resume vs fresh install with its steps. */
#include "plan.h"
#include "resume.h"
#include "tap.h"


static char *src_path(const char *rel) {
        const char *src = getenv("SRC");
        char *p = NULL;
        if (asprintf(&p, "%s/%s", src ? src : "..", rel) < 0)
                abort();
        return p;
}

static struct spec *load_spec_text(const char *text) {
        struct diags d = {};
        struct spec *s = NULL;
        int r = spec_parse("test.yaml", text, strlen(text), &s, &d);
        if (r < 0)
                diags_print(&d, stderr);
        diags_clear(&d);
        return s;
}

static char *template_text(void) {
        _cleanup_free_ char *p = src_path("templates/kvm-raid10-luks-lvm.yaml");
        char *text = NULL;
        if (read_full_file(p, SPEC_MAX_BYTES, &text, NULL) < 0)
                abort();
        return text;
}

/* text with the first `from` replaced by `to` */
static char *replaced(const char *text, const char *from, const char *to) {
        const char *at = strstr(text, from);
        if (!at)
                return NULL;
        char *out = NULL;
        if (asprintf(&out, "%.*s%s%s", (int) (at - text), text, to, at + strlen(from)) < 0)
                abort();
        return out;
}

static struct inventory *load_inv(const char *name) {
        _cleanup_free_ char *rel = NULL;
        if (asprintf(&rel, "tests/inventories/%s.json", name) < 0)
                abort();
        _cleanup_free_ char *p = src_path(rel);
        struct inventory *inv = NULL;
        if (inventory_load_json(p, &inv, NULL) < 0)
                return NULL;
        return inv;
}

/* A second boot after a failed first: the stack is on the disks, nothing runs. */
static void rebooted(struct inventory *inv) {
        for (size_t i = 0; i < inv->n_disks; i++) {
                struct inv_disk *d = &inv->disks[i];
                d->holders = strv_free(d->holders);
                free(d->mountpoint);
                d->mountpoint = NULL;
                for (size_t k = 0; k < d->n_parts; k++) {
                        d->parts[k].holders = strv_free(d->parts[k].holders);
                        free(d->parts[k].mountpoint);
                        d->parts[k].mountpoint = NULL;
                }
        }
}

static struct plan *plan_of(const struct spec *s, const struct inventory *inv);

static struct inv_signature sig(const char *type, const char *uuid) {
        return (struct inv_signature) { .type = strdup(type), .uuid = uuid ? strdup(uuid) : NULL };
}

static void add_sig(struct inv_signature **v, size_t *n, struct inv_signature s) {
        *v = realloc(*v, (*n + 1) * sizeof **v);
        if (!*v)
                abort();
        (*v)[(*n)++] = s;
}

static struct inv_disk *disk_at(struct inventory *inv, const char *path) {
        for (size_t i = 0; i < inv->n_disks; i++)
                if (streq(inv->disks[i].path, path))
                        return &inv->disks[i];
        return NULL;
}

static struct inv_partition *part_at(struct inventory *inv, const char *path) {
        for (size_t i = 0; i < inv->n_disks; i++)
                for (size_t k = 0; k < inv->disks[i].n_parts; k++)
                        if (streq(inv->disks[i].parts[k].path, path))
                                return &inv->disks[i].parts[k];
        return NULL;
}

/* What a second boot's inventory shows after a first boot built this plan
 * (GPT, md members with one UUID per array, a LUKS header on each disk or
 * partition under LUKS) and stopped: nothing running. md members that are
 * LUKS mappings show nothing: their superblocks are inside the closed LUKS. */
static struct inventory *as_built(const struct spec *s, const char *name) {
        struct inventory *inv = load_inv(name);
        _cleanup_plan_free_ struct plan *p = inv ? plan_of(s, inv) : NULL;
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct plan_step *st = &p->steps[i];
                if (st->kind == PLAN_PARTITION) {
                        struct inv_disk *d = disk_at(inv, st->device);
                        add_sig(&d->sigs, &d->n_sigs, sig("gpt", NULL));
                        d->parts = calloc(st->n_parts, sizeof *d->parts);
                        d->n_parts = st->n_parts;
                        for (size_t k = 0; k < st->n_parts; k++)
                                d->parts[k] = (struct inv_partition) {
                                        .path = strdup(st->parts[k].device), .name = strdup(st->parts[k].device + 5),
                                        .number = st->parts[k].number, .start = st->parts[k].start, .size = st->parts[k].size,
                                };
                } else if (st->kind == PLAN_LUKS_FORMAT) {
                        struct inv_partition *ip = part_at(inv, st->device);
                        struct inv_disk *d = ip ? NULL : disk_at(inv, st->device);
                        if (ip)
                                add_sig(&ip->sigs, &ip->n_sigs, sig("crypto_LUKS", "0a0b0c0d-0000-4000-8000-000000000001"));
                        else if (d)
                                add_sig(&d->sigs, &d->n_sigs, sig("crypto_LUKS", "0a0b0c0d-0000-4000-8000-000000000002"));
                } else if (st->kind == PLAN_MD_CREATE) {
                        char uuid[37];
                        snprintf(uuid, sizeof uuid, "5a6b7c8d-9e0f-1a2b-3c4d-5e6f7a8b9c%02x", (unsigned) (i & 0xff));
                        for (char **m = st->inputs; m && *m; m++) {
                                struct inv_partition *ip = part_at(inv, *m);
                                struct inv_disk *d = ip ? NULL : disk_at(inv, *m);   /* a whole-disk member */
                                if (ip)
                                        add_sig(&ip->sigs, &ip->n_sigs, sig("linux_raid_member", uuid));
                                else if (d)
                                        add_sig(&d->sigs, &d->n_sigs, sig("linux_raid_member", uuid));
                        }
                }
        }
        return inv;
}

static struct plan *plan_of(const struct spec *s, const struct inventory *inv) {
        struct diags d = {};
        struct plan *p = NULL;
        int r = plan_build(s, inv, &p, &d);
        if (r < 0)
                diags_print(&d, stderr);
        diags_clear(&d);
        return p;
}

/* A second boot after a first one built spec_text's storage on qemu-4disk
 * and stopped (as_built): the spec, that inventory, the plan over it and the
 * resume plan resume_decide() makes of that. */
struct second_boot {
        struct spec *spec;
        struct inventory *inv;
        struct plan *fresh, *resume;
};

static void second_boot_done(struct second_boot *b) {
        plan_free(b->resume);
        plan_free(b->fresh);
        inventory_free(b->inv);
        spec_free(b->spec);
}

/* Checks each part; false when one is missing (the test stops there). */
static bool second_boot(const char *spec_text, struct second_boot *ret) {
        ret->spec = load_spec_text(spec_text);
        CHECK(ret->spec);
        if (!ret->spec)
                return false;
        ret->inv = as_built(ret->spec, "qemu-4disk");
        CHECK(ret->inv);
        if (!ret->inv)
                return false;
        ret->fresh = plan_of(ret->spec, ret->inv);
        CHECK(ret->fresh);
        if (!ret->fresh)
                return false;
        CHECK_INT(resume_decide(ret->fresh, false, &ret->resume), 0);
        CHECK(ret->resume);
        if (!ret->resume) {
                fprintf(stderr, "not resumed: %s\n", ret->fresh->mode_why);
                return false;
        }
        return true;
}

static void test_fingerprint(void) {
        _cleanup_free_ char *text = template_text();
        _cleanup_spec_free_ struct spec *s = load_spec_text(text);
        CHECK(s);
        _cleanup_inventory_free_ struct inventory *blank = load_inv("qemu-4disk");
        _cleanup_inventory_free_ struct inventory *dirty = load_inv("qemu-4disk-dirty");
        _cleanup_inventory_free_ struct inventory *prov = load_inv("qemu-4disk-provisioned");
        CHECK(blank && dirty && prov);
        if (!s || !blank || !dirty || !prov)
                return;
        _cleanup_plan_free_ struct plan *p1 = plan_of(s, blank);
        _cleanup_plan_free_ struct plan *p2 = plan_of(s, prov);
        _cleanup_plan_free_ struct plan *p3 = plan_of(s, dirty);
        CHECK(p1 && p2 && p3);
        if (!p1 || !p2 || !p3)
                return;
        CHECK_INT(strlen(p1->fingerprint), 64);
        CHECK(hex_valid(p1->fingerprint, 64));
        /* boot 1 sees blank disks, boot 2 the stack (with wipe steps): same fingerprint */
        CHECK_STR(p1->fingerprint, p2->fingerprint);
        CHECK_STR(p1->fingerprint, p3->fingerprint);

        /* what does not define the storage: image, hostname, registration */
        static const char *const same[][2] = {
                { "hostname: kvm-${serial}", "hostname: other-${serial}" },
                { "finish: reboot", "finish: poweroff" },
        };
        for (size_t i = 0; i < ELEMENTSOF(same); i++) {
                _cleanup_free_ char *t = replaced(text, same[i][0], same[i][1]);
                CHECK(t);
                if (!t)
                        continue;
                _cleanup_spec_free_ struct spec *s2 = load_spec_text(t);
                _cleanup_plan_free_ struct plan *q = s2 ? plan_of(s2, blank) : NULL;
                CHECK(q);
                if (q)
                        CHECK_STR(q->fingerprint, p1->fingerprint);
        }
        /* what does: cipher key size, a filesystem type, an LV size, the chunk */
        static const char *const differ[][2] = {
                { "key_size: 512", "key_size: 256" },
                { "type: xfs", "type: ext4" },
                { "size: 1G}", "size: 2G}" },
                { "chunk: 256K", "chunk: 512K" },
        };
        for (size_t i = 0; i < ELEMENTSOF(differ); i++) {
                _cleanup_free_ char *t = replaced(text, differ[i][0], differ[i][1]);
                CHECK(t);
                if (!t) {
                        fprintf(stderr, "template lacks '%s'\n", differ[i][0]);
                        continue;
                }
                _cleanup_spec_free_ struct spec *s2 = load_spec_text(t);
                _cleanup_plan_free_ struct plan *q = s2 ? plan_of(s2, blank) : NULL;
                CHECK(q);
                if (q)
                        CHECK(!streq(q->fingerprint, p1->fingerprint));
        }
}

static void test_record(void) {
        struct resume_record rec = { .stages = 1u << RESUME_STAGE_STORAGE | 1u << RESUME_STAGE_IMAGE };
        memset(rec.fingerprint, 'a', 64);
        rec.run_id = strdup("run-1");
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        CHECK_INT(resume_record_to_json(&rec, &sb), 0);
        struct resume_record back = {};
        CHECK_INT(resume_record_from_json(sb.buf, sb.len, &back), 0);
        CHECK_STR(back.fingerprint, rec.fingerprint);
        CHECK_INT(back.stages, rec.stages);
        CHECK(!back.complete);
        CHECK_STR(back.run_id, "run-1");
        CHECK(back.version && *back.version);
        resume_record_done(&back);

        /* not a record of this kiln: refused */
        static const char *const bad[] = {
                "",
                "[]",
                "{\"kiln_progress\": 2, \"fingerprint\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"stages_done\": [], \"complete\": false}",
                "{\"kiln_progress\": 1, \"fingerprint\": \"xyz\", \"stages_done\": [], \"complete\": false}",
                "{\"kiln_progress\": 1, \"fingerprint\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"stages_done\": [\"dance\"], \"complete\": false}",
                "{\"kiln_progress\": 1, \"fingerprint\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"stages_done\": []}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct resume_record x = {};
                int r = resume_record_from_json(bad[i], strlen(bad[i]), &x);
                CHECK_INT(r, -EBADMSG);
        }

        /* one document and nothing after it but white space */
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
#define TAIL(s) s, sizeof(s) - 1
        static const struct { const char *tail; size_t len; int err; } tails[] = {
                { TAIL(""), 0 },
                { TAIL("\n"), 0 },
                { TAIL(" \t\r\n  "), 0 },
                { TAIL("x"), -ENOTEMPTY },
                { TAIL("\n}"), -ENOTEMPTY },
                { TAIL(" {\"kiln_progress\": 1}"), -ENOTEMPTY },
                { TAIL("\n\0"), -ENOTEMPTY },
                { TAIL("\0garbage"), -ENOTEMPTY },
        };
        for (size_t i = 0; i < ELEMENTSOF(tails); i++) {
                strbuf_reset(&t);
                CHECK_INT(strbuf_add(&t, sb.buf, sb.len), 0);
                CHECK_INT(strbuf_add(&t, tails[i].tail, tails[i].len), 0);
                struct resume_record x = {};
                int r = resume_record_from_json(t.buf, t.len, &x);
                if (r != tails[i].err)
                        fprintf(stderr, "record followed by '%s'\n", tails[i].tail);
                CHECK_INT(r, tails[i].err);
                if (r == 0)
                        CHECK_STR(x.fingerprint, rec.fingerprint);
                else
                        CHECK(!x.run_id && !x.version && !x.stages);
                resume_record_done(&x);
        }
        resume_record_done(&rec);
}

static size_t count_kind(const struct plan *p, enum plan_step_kind k) {
        size_t n = 0;
        for (size_t i = 0; i < p->n_steps; i++)
                n += p->steps[i].kind == k;
        return n;
}

static void test_decide(void) {
        _cleanup_free_ char *text = template_text();
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(text, &b))
                return;
        const struct spec *s = b.spec;
        _cleanup_inventory_free_ struct inventory *blank = load_inv("qemu-4disk");
        _cleanup_inventory_free_ struct inventory *prov = load_inv("qemu-4disk-provisioned");
        CHECK(blank && prov);
        if (!blank || !prov)
                return;

        /* blank disks: fresh, and why */
        _cleanup_plan_free_ struct plan *p = plan_of(s, blank);
        struct plan *r = NULL;
        CHECK_INT(resume_decide(p, false, &r), 0);
        CHECK(!r);
        CHECK(!p->resume);
        CHECK(p->mode_why && strstr(p->mode_why, "/dev/vda holds no GPT"));

        /* the stack still running (holders): fresh */
        _cleanup_plan_free_ struct plan *q = plan_of(s, prov);
        CHECK_INT(resume_decide(q, false, &r), 0);
        CHECK(!r);
        CHECK(q->mode_why && strstr(q->mode_why, "in use"));

        /* another layout (the recorded one is of another spec), not running: fresh */
        rebooted(prov);
        _cleanup_plan_free_ struct plan *o = plan_of(s, prov);
        CHECK_INT(resume_decide(o, false, &r), 0);
        CHECK(!r);
        CHECK(o->mode_why && strstr(o->mode_why, "/dev/vda has 2 partitions, this plan makes 3"));

        /* a second boot: resume (second_boot()); the same with --fresh: fresh */
        const struct plan *f = b.fresh, *res = b.resume;
        CHECK(res->resume);
        CHECK_STR(res->fingerprint, f->fingerprint);
        CHECK_INT(count_kind(res, PLAN_WIPE) + count_kind(res, PLAN_PARTITION) + count_kind(res, PLAN_MD_CREATE) +
                  count_kind(res, PLAN_LUKS_FORMAT) + count_kind(res, PLAN_PVCREATE) + count_kind(res, PLAN_VGCREATE) +
                  count_kind(res, PLAN_LVCREATE) + count_kind(res, PLAN_MKFS) + count_kind(res, PLAN_BENCH_RAW) +
                  count_kind(res, PLAN_BENCH_CRYPT), 0);
        CHECK_INT(count_kind(res, PLAN_MD_ASSEMBLE), count_kind(f, PLAN_MD_CREATE));
        CHECK_INT(count_kind(res, PLAN_LUKS_OPEN), count_kind(f, PLAN_LUKS_OPEN));
        CHECK_INT(count_kind(res, PLAN_VG_ACTIVATE), count_kind(f, PLAN_VGCREATE));
        CHECK_INT(count_kind(res, PLAN_MOUNT), count_kind(f, PLAN_MOUNT));
        CHECK_INT(count_kind(res, PLAN_RESUME_CHECK), 1);
        CHECK_INT(count_kind(res, PLAN_IMAGE), count_kind(f, PLAN_IMAGE));
        CHECK_INT(count_kind(res, PLAN_REGISTER), count_kind(f, PLAN_REGISTER));
        for (size_t i = 0; i < res->n_steps; i++) {
                CHECK(!res->steps[i].destroys || res->steps[i].kind == PLAN_IMAGE);
                if (res->steps[i].kind == PLAN_MD_ASSEMBLE)
                        CHECK(res->steps[i].uuid && strlen(res->steps[i].uuid) == 36);
        }
        /* what configure and the initramfs archive read (plan_step_made()): the
         * resume plan stands for the same LUKS headers, arrays, partitions and
         * mkfs steps as the fresh one, with their payloads */
        enum plan_step_kind made[] = { PLAN_LUKS_FORMAT, PLAN_MD_CREATE, PLAN_PARTITION, PLAN_MKFS };
        for (size_t k = 0; k < ELEMENTSOF(made); k++) {
                size_t nf = 0, nr = 0;
                for (size_t i = 0; i < f->n_steps; i++)
                        nf += plan_step_made(&f->steps[i]) == made[k];
                for (size_t i = 0; i < res->n_steps; i++)
                        nr += plan_step_made(&res->steps[i]) == made[k];
                CHECK(nf > 0);
                CHECK_INT(nr, nf);
        }
        for (size_t i = 0, j = 0; i < f->n_steps; i++) {
                const struct plan_step *a = &f->steps[i];
                if (a->kind != PLAN_LUKS_FORMAT && a->kind != PLAN_PARTITION)
                        continue;
                while (j < res->n_steps && plan_step_made(&res->steps[j]) != a->kind)
                        j++;
                CHECK(j < res->n_steps);
                if (j >= res->n_steps)
                        break;
                const struct plan_step *c = &res->steps[j++];
                CHECK_STR(c->device, a->device);
                if (a->kind == PLAN_LUKS_FORMAT) {
                        CHECK_STR(c->luks.name, a->luks.name);
                        CHECK_STR(c->luks.crypttab_options, a->luks.crypttab_options);
                } else {
                        CHECK_INT(c->n_parts, a->n_parts);
                        for (size_t k = 0; k < a->n_parts && k < c->n_parts; k++) {
                                CHECK_STR(c->parts[k].device, a->parts[k].device);
                                CHECK_INT(c->parts[k].number, a->parts[k].number);
                        }
                }
        }
        /* the check comes right after the last mount, before the image */
        size_t chk = 0, last_mount = 0;
        for (size_t i = 0; i < res->n_steps; i++) {
                if (res->steps[i].kind == PLAN_RESUME_CHECK)
                        chk = i;
                if (res->steps[i].kind == PLAN_MOUNT)
                        last_mount = i;
        }
        CHECK_INT(chk, last_mount + 1);
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        CHECK_INT(plan_to_text(res, &t), 0);
        CHECK(strstr(strbuf_str(&t), "mode: resume ("));
        CHECK(strstr(strbuf_str(&t), "assemble"));
        CHECK(strstr(strbuf_str(&t), "skip-stage"));
        _cleanup_strbuf_ struct strbuf j = STRBUF_INIT;
        CHECK_INT(plan_to_json(res, &j), 0);
        CHECK(strstr(strbuf_str(&j), "\"mode\":\"resume\""));
        _cleanup_plan_free_ struct plan *g = plan_of(s, b.inv);
        struct plan *none = NULL;
        CHECK_INT(resume_decide(g, true, &none), 0);
        CHECK(!none);
        CHECK(g->mode_why && strstr(g->mode_why, "--fresh"));
}

static const struct plan_step *step_of(const struct plan *p, enum plan_step_kind k) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == k)
                        return &p->steps[i];
        return NULL;
}

/* plan_decide() over an inventory; the plans and unwiped out. */
static int decide(const struct spec *s, const struct inventory *inv, struct plan **ret_fresh, struct plan **ret_resume,
                  bool *ret_unwiped) {
        struct diags d = {};
        int r = plan_decide(s, inv, false, &d, ret_fresh, ret_resume, ret_unwiped);
        diags_clear(&d);
        return r;
}

/* A spec without 'wipe: true' over an interrupted run: the resume plan's
 * resume-check says the run stops on a mismatch, not that it installs fresh
 * (the mode line says so too); with 'wipe: true' it says fresh. */
static void test_unwiped_text(void) {
        _cleanup_free_ char *text = template_text();
        _cleanup_free_ char *nowipe = replaced(text, "wipe: true", "wipe: false");
        _cleanup_spec_free_ struct spec *s = load_spec_text(text);
        _cleanup_spec_free_ struct spec *sn = nowipe ? load_spec_text(nowipe) : NULL;
        CHECK(s && sn);
        if (!s || !sn)
                return;
        _cleanup_inventory_free_ struct inventory *again = as_built(s, "qemu-4disk");
        CHECK(again);
        if (!again)
                return;
        _cleanup_plan_free_ struct plan *f = NULL, *res = NULL, *fn = NULL, *resn = NULL;
        bool unwiped = true;
        CHECK_INT(decide(s, again, &f, &res, &unwiped), 0);
        CHECK(res && !unwiped);
        const struct plan_step *chk = res ? step_of(res, PLAN_RESUME_CHECK) : NULL;
        CHECK(chk && strstr(chk->description, "otherwise undo the steps above and install fresh"));

        CHECK_INT(decide(sn, again, &fn, &resn, &unwiped), 0);
        CHECK(resn && unwiped);
        if (!resn)
                return;
        CHECK_STR(resn->fingerprint, f->fingerprint);
        chk = step_of(resn, PLAN_RESUME_CHECK);
        CHECK(chk);
        if (!chk)
                return;
        CHECK(!strstr(chk->description, "fresh fallback") && !strstr(chk->description, "install fresh"));
        CHECK(strstr(chk->description, "otherwise stop with nothing written (no fresh install: the spec does not allow "
                                       "wiping these disks)"));
        CHECK(resn->mode_why && strstr(resn->mode_why, "no fresh install if it does not match"));
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        CHECK_INT(plan_to_text(resn, &t), 0);
        CHECK(!strstr(strbuf_str(&t), "install fresh"));
}

/* md members that are whole disks (no partitions) */
static const char whole_disk_spec[] =
        "version: 1\n"
        "hostname: h\n"
        "disks:\n"
        "  - {id: d, match: {min_size: 2G}, count: 4, wipe: true}\n"
        "raid:\n"
        "  - {id: md0, level: 10, layout: f2, members: d}\n"
        "luks:\n"
        "  - {id: c0, on: md0, key: {passphrase: \"not-a-secret-at-all\"}}\n"
        "lvm:\n"
        "  - {id: vg0, name: vg0, pvs: c0}\n"
        "volumes:\n"
        "  - {id: root, vg: vg0, size: 1G}\n"
        "filesystems:\n"
        "  - {on: root, type: xfs, mount: /}\n"
        "finish: none\n";

static void test_whole_disk_members(void) {
        /* the members' superblocks on the disks: resume, assembled from the disks */
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(whole_disk_spec, &b))
                return;
        const struct spec *s = b.spec;
        struct inventory *again = b.inv;
        const struct plan *res = b.resume;
        CHECK_INT(count_kind(b.fresh, PLAN_PARTITION), 0);
        const struct plan_step *as = step_of(res, PLAN_MD_ASSEMBLE);
        CHECK(as && as->inputs && strv_length(as->inputs) == 4);
        if (as && as->inputs) {
                CHECK_STR(as->inputs[0], "/dev/vda");
                CHECK_STR(as->inputs[3], "/dev/vdd");
                CHECK(as->uuid && strstr(as->description, as->uuid));
        }
        CHECK_INT(count_kind(res, PLAN_WIPE) + count_kind(res, PLAN_MD_CREATE) + count_kind(res, PLAN_LUKS_FORMAT), 0);
        CHECK_INT(count_kind(res, PLAN_SKIP_STAGE), 4);     /* luks-format, pvcreate, lvcreate, mkfs */

        /* one member disk lost its superblock (a disk swapped): fresh, and why */
        struct inv_disk *vdc = disk_at(again, "/dev/vdc");
        free(vdc->sigs[0].type);
        vdc->sigs[0].type = strdup("xfs");
        _cleanup_plan_free_ struct plan *g = plan_of(s, again), *none = NULL;
        CHECK(g);
        if (!g)
                return;
        CHECK_INT(resume_decide(g, false, &none), 0);
        CHECK(!none);
        CHECK(g->mode_why && strstr(g->mode_why, "/dev/vdc is not a member of md array 'md0'"));
        free(vdc->sigs[0].type);
        vdc->sigs[0].type = strdup("linux_raid_member");

        /* a disk used whole that holds a partition table now: another layout, fresh */
        struct inv_disk *vdb = disk_at(again, "/dev/vdb");
        add_sig(&vdb->sigs, &vdb->n_sigs, sig("gpt", NULL));
        _cleanup_plan_free_ struct plan *h = plan_of(s, again), *none2 = NULL;
        CHECK(h);
        if (!h)
                return;
        CHECK_INT(resume_decide(h, false, &none2), 0);
        CHECK(!none2);
        CHECK(h->mode_why && strstr(h->mode_why, "/dev/vdb holds a partition table, this plan uses the whole disk"));
}

/* image: {format: raw} onto a device */
static const char raw_root_spec[] =
        "version: 1\n"
        "hostname: h\n"
        "disks:\n"
        "  - {id: d, match: {min_size: 2G}, count: 4, wipe: true}\n"
        "partitions:\n"
        "  - {id: data, on: d, size: rest, type: raid}\n"
        "raid:\n"
        "  - {id: md0, level: 10, layout: f2, members: data}\n"
        "lvm:\n"
        "  - {id: vg0, name: vg0, pvs: md0}\n"
        "volumes:\n"
        "  - {id: root, vg: vg0, size: 1G}\n"
        "  - {id: vm, vg: vg0, size: 512M}\n"
        "filesystems:\n"
        "  - {on: root, type: xfs, mount: /}\n"
        "image: {url: \"http://boot.lab/vm.raw.zst\", sha256: \"" "0000000000000000000000000000000000000000000000000000000000000000" "\", format: raw, target: vm}\n"
        "finish: none\n";

static const char raw_only_spec[] =
        "version: 1\n"
        "hostname: h\n"
        "disks:\n"
        "  - {id: d, match: {serial: kiln-disk0}, wipe: true}\n"
        "image: {url: \"http://boot.lab/disk.raw.zst\", sha256: \"" "0000000000000000000000000000000000000000000000000000000000000000" "\", format: raw, target: d}\n"
        "finish: none\n";

static void test_raw_image(void) {
        /* a raw image beside a root filesystem: resume; the raw image is
         * written again unless the record lists it, and no root is emptied */
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(raw_root_spec, &b))
                return;
        const struct plan_step *img = step_of(b.resume, PLAN_IMAGE);
        CHECK(img && img->device);
        if (img) {
                CHECK_STR(img->device, "/dev/vg0/vm");
                CHECK(strstr(img->description, "unless the progress record says 'image' is done"));
                CHECK(!strstr(img->description, "the root is emptied"));
                CHECK(img->destroys);   /* what a raw image overwrites, still said */
        }

        /* a raw image alone: no root filesystem for the record, an honest fresh install */
        _cleanup_spec_free_ struct spec *o = load_spec_text(raw_only_spec);
        _cleanup_inventory_free_ struct inventory *inv = load_inv("qemu-4disk");
        CHECK(o && inv);
        if (!o || !inv)
                return;
        struct inv_disk *vda = disk_at(inv, "/dev/vda");
        add_sig(&vda->sigs, &vda->n_sigs, sig("gpt", NULL));    /* what the image brought, or half of it */
        _cleanup_plan_free_ struct plan *g = plan_of(o, inv), *none = NULL;
        CHECK(g);
        if (!g)
                return;
        CHECK_INT(resume_decide(g, false, &none), 0);
        CHECK(!none && !g->resume);
        CHECK(g->mode_why && strstr(g->mode_why, "the spec mounts no root filesystem, where the progress record is kept"));
        CHECK(step_of(g, PLAN_WIPE) && step_of(g, PLAN_IMAGE));
}

/* A finished node (docs/reinstall.md): the record read from the disks, the
 * token presented (kiln.reinstall= beats the spec's reinstall:) and the
 * plan decide boot-installed, reinstall or refuse; an unfinished record
 * leaves the plans as they are. */
static void test_verdict(void) {
        _cleanup_free_ char *text = template_text();
        _cleanup_free_ char *with_token = replaced(text, "version: 1\n", "version: 1\nreinstall: lab-2026-12\n");
        CHECK(with_token);
        if (!with_token)
                return;
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(with_token, &b))
                return;
        CHECK_STR(b.spec->reinstall, "lab-2026-12");
        CHECK_STR(plan_reinstall_token(b.spec, NULL), "lab-2026-12");
        CHECK_STR(plan_reinstall_token(b.spec, "boot-server"), "boot-server");
        CHECK(!plan_reinstall_token(NULL, NULL));
        /* the record of the finished run, made with the spec's token */
        struct resume_record rec = { .complete = true, .stages = 1u << RESUME_STAGE_STORAGE | 1u << RESUME_STAGE_IMAGE };
        memcpy(rec.fingerprint, b.fresh->fingerprint, 65);
        rec.reinstall = strdup("lab-2026-12");
        /* it survives the record's JSON */
        _cleanup_strbuf_ struct strbuf j = STRBUF_INIT;
        CHECK_INT(resume_record_to_json(&rec, &j), 0);
        CHECK(strstr(strbuf_str(&j), "\"reinstall\": \"lab-2026-12\""));
        struct resume_record back = {};
        CHECK_INT(resume_record_from_json(j.buf, j.len, &back), 0);
        CHECK_STR(back.reinstall, "lab-2026-12");
        resume_record_done(&back);

        enum plan_verdict v = PLAN_VERDICT_RUN;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        /* same plan, same token: boot it */
        CHECK_INT(plan_verdict(b.fresh, &rec, plan_reinstall_token(b.spec, NULL), &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_BOOT_INSTALLED);
        CHECK_STR(plan_verdict_name(v), "boot-installed");
        CHECK(strstr(strbuf_str(&why), "a finished install of this plan"));
        /* no token at all: boot it (wipe: true alone never reinstalls) */
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, &rec, NULL, &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_BOOT_INSTALLED);
        /* a new token on the boot server's command line: reinstall */
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, &rec, plan_reinstall_token(b.spec, "lab-2027-01"), &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_REINSTALL);
        CHECK(strncmp(strbuf_str(&why), "the disks hold a finished install of this plan (", 48) == 0);
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, &rec, "lab-2027-01", &v, &why), 0);
        CHECK(strstr(strbuf_str(&why), "the reinstall token 'lab-2027-01' is not the one it was installed with ('lab-2026-12')"));
        /* the record has no token (installed without one): any token is a new act */
        free(rec.reinstall);
        rec.reinstall = NULL;
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, &rec, "lab-2026-12", &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_REINSTALL);
        CHECK(strstr(strbuf_str(&why), "installed with (none)"));
        rec.reinstall = strdup("lab-2026-12");

        /* another plan (another key size: the same layout to the inventory) */
        _cleanup_free_ char *other = replaced(with_token, "key_size: 512", "key_size: 256");
        CHECK(other);
        _cleanup_spec_free_ struct spec *s2 = other ? load_spec_text(other) : NULL;
        _cleanup_plan_free_ struct plan *p2 = s2 ? plan_of(s2, b.inv) : NULL;
        CHECK(p2);
        if (p2) {
                CHECK(!streq(p2->fingerprint, b.fresh->fingerprint));
                strbuf_reset(&why);
                CHECK_INT(plan_verdict(p2, &rec, plan_reinstall_token(s2, NULL), &v, &why), 0);
                CHECK_INT(v, PLAN_VERDICT_REFUSE);
                _cleanup_free_ char *want = NULL;
                CHECK(asprintf(&want, "the disks hold a finished install of another plan (%s), this spec makes plan %s, "
                               "and no new reinstall token was given (the token 'lab-2026-12' is the one on the disks)",
                               b.fresh->fingerprint, p2->fingerprint) > 0);
                CHECK_STR(strbuf_str(&why), want);
                strbuf_reset(&why);
                CHECK_INT(plan_verdict(p2, &rec, NULL, &v, &why), 0);
                CHECK_INT(v, PLAN_VERDICT_REFUSE);
                CHECK(strstr(strbuf_str(&why), "no new reinstall token was given (none)"));
                /* ... unless the operator's act is there */
                strbuf_reset(&why);
                CHECK_INT(plan_verdict(p2, &rec, "lab-2027-01", &v, &why), 0);
                CHECK_INT(v, PLAN_VERDICT_REINSTALL);
                CHECK(strstr(strbuf_str(&why), "a finished install of another plan"));
        }
        /* an interrupted run, or no record: the plans as plan_decide() made them (resume or fresh) */
        rec.complete = false;
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, &rec, "lab-2027-01", &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_RUN);
        CHECK_INT(plan_verdict(b.fresh, NULL, NULL, &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_RUN);
        CHECK_STR(strbuf_str(&why), "");
        resume_record_done(&rec);

        /* the installed command line: GRUB's root= for a root on an LV, then boot.cmdline */
        _cleanup_free_ char *cl = NULL;
        CHECK_INT(plan_installed_cmdline(b.spec, "0d4e-x", &cl), 0);
        CHECK(cl && strncmp(cl, "root=/dev/mapper/", 17) == 0 && strstr(cl, " ro"));
        fprintf(stderr, "installed cmdline: %s\n", cl ? cl : "(null)");
}

static void test_reinstall_token(void) {
        static const char *const good[] = { "a", "lab-2026-12", "ticket:4711", "x.y_z", NULL };
        for (const char *const *t = good; *t; t++)
                CHECK(!spec_reinstall_problem(*t));
        CHECK_STR(spec_reinstall_problem(""), "is empty");
        CHECK_STR(spec_reinstall_problem("a b"), "holds a character other than A-Z a-z 0-9 . _ : -");
        CHECK_STR(spec_reinstall_problem("x'y"), "holds a character other than A-Z a-z 0-9 . _ : -");
        char long_token[SPEC_REINSTALL_MAX + 2];
        memset(long_token, 'a', sizeof long_token - 1);
        long_token[sizeof long_token - 1] = 0;
        CHECK_STR(spec_reinstall_problem(long_token), "is longer than 64 characters");
        /* the spec refuses a bad one where it stands */
        struct diags d = {};
        struct spec *s = NULL;
        const char *bad = "version: 1\nreinstall: \"two words\"\ndisks:\n  - {id: a, match: {path: /dev/vda}}\n";
        CHECK_INT(spec_parse("t.yaml", bad, strlen(bad), &s, &d), -EINVAL);
        for (size_t i = 0; i < d.n; i++)
                if (strstr(d.items[i].message, "'reinstall' must be a token"))
                        CHECK_INT(d.items[i].line, 2);
        CHECK(d.n >= 1);
        diags_clear(&d);
        spec_free(s);
}

/* The finished-install marks (plan_marks(), mark.h) in the verdict: every
 * combination of marks on the disks, the record read (none, finished of
 * this or another plan, interrupted of this or another plan), the token
 * presented (none, the one of the install, a new one) and the spec's wipe. */
static void set_ptuuid(struct inventory *inv, const char *disk, const char *uuid) {
        struct inv_disk *d = disk_at(inv, disk);
        CHECK(d);
        if (!d)
                return;
        for (size_t i = 0; i < d->n_sigs; i++)
                if (d->sigs[i].type && streq(d->sigs[i].type, "gpt")) {
                        free(d->sigs[i].uuid);
                        d->sigs[i].uuid = uuid ? strdup(uuid) : NULL;
                        return;
                }
        if (uuid)
                add_sig(&d->sigs, &d->n_sigs, sig("gpt", uuid));
}

static void test_verdict_marks(void) {
        _cleanup_free_ char *text = template_text();
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(text, &b))
                return;
        _cleanup_free_ char *other_text = replaced(text, "key_size: 512", "key_size: 256");
        _cleanup_spec_free_ struct spec *s2 = other_text ? load_spec_text(other_text) : NULL;
        _cleanup_plan_free_ struct plan *p2 = s2 ? plan_of(s2, b.inv) : NULL;
        CHECK(p2);
        if (!p2)
                return;
        static const uint8_t rnd[MARK_RANDOM_LEN] = { 1, 2, 3, 4 };
        char no_token[MARK_UUID_LEN + 1], t1[MARK_UUID_LEN + 1];
        CHECK_INT(mark_encode(NULL, rnd, no_token), 0);
        CHECK_INT(mark_encode("T1", rnd, t1), 0);
        const char *tokens[] = { NULL, "T1", "T2" };
        enum { M_NONE, M_VDA, M_VDE_T1, M_BOTH, M_FOREIGN, _M_MAX };
        enum { R_NONE, R_DONE_SAME, R_DONE_OTHER, R_HALF_SAME, R_HALF_OTHER, _R_MAX };
        const enum plan_verdict RUN = PLAN_VERDICT_RUN, BOOT = PLAN_VERDICT_BOOT_INSTALLED,
                                REIN = PLAN_VERDICT_REINSTALL, REF = PLAN_VERDICT_REFUSE;
        /* [marks][record][token] */
        static const enum plan_verdict want[_M_MAX][_R_MAX][3] = {
                /* no mark: as before the marks */
                [M_NONE] = { [R_NONE] = { RUN, RUN, RUN }, [R_DONE_SAME] = { BOOT, BOOT, REIN },
                             [R_DONE_OTHER] = { REF, REF, REIN }, [R_HALF_SAME] = { RUN, RUN, RUN },
                             [R_HALF_OTHER] = { RUN, RUN, RUN } },
                /* /dev/vda (selected) installed without a token: any token is new */
                [M_VDA] = { [R_NONE] = { REF, REIN, REIN }, [R_DONE_SAME] = { BOOT, BOOT, REIN },
                            [R_DONE_OTHER] = { REF, REF, REIN }, [R_HALF_SAME] = { RUN, RUN, RUN },
                            [R_HALF_OTHER] = { REF, REIN, REIN } },
                /* /dev/vde, a disk the spec does not select, installed with T1 */
                [M_VDE_T1] = { [R_NONE] = { REF, REF, REIN }, [R_DONE_SAME] = { BOOT, BOOT, REIN },
                               [R_DONE_OTHER] = { REF, REF, REIN }, [R_HALF_SAME] = { RUN, RUN, RUN },
                               [R_HALF_OTHER] = { REF, REF, REIN } },
                /* both: T1 is on one of them, so it is not new */
                [M_BOTH] = { [R_NONE] = { REF, REF, REIN }, [R_DONE_SAME] = { BOOT, BOOT, REIN },
                             [R_DONE_OTHER] = { REF, REF, REIN }, [R_HALF_SAME] = { RUN, RUN, RUN },
                             [R_HALF_OTHER] = { REF, REF, REIN } },
                /* a PTUUID that is not a mark (a foreign UUIDv8): no mark */
                [M_FOREIGN] = { [R_NONE] = { RUN, RUN, RUN }, [R_DONE_SAME] = { BOOT, BOOT, REIN },
                                [R_DONE_OTHER] = { REF, REF, REIN }, [R_HALF_SAME] = { RUN, RUN, RUN },
                                [R_HALF_OTHER] = { RUN, RUN, RUN } },
        };
        /* wipe: false (the plan made with the signatures allowed, never run fresh): the same verdicts;
         * kiln boot then refuses a REINSTALL (the spec may not wipe; tests/host/test-boot-finish.sh) */
        _cleanup_free_ char *unwiped_text = replaced(text, "wipe: true", "wipe: false");
        _cleanup_spec_free_ struct spec *su = unwiped_text ? load_spec_text(unwiped_text) : NULL;
        CHECK(su);
        for (int mk = 0; mk < _M_MAX; mk++) {
                set_ptuuid(b.inv, "/dev/vda", mk == M_VDA || mk == M_BOTH ? no_token :
                                              mk == M_FOREIGN ? "12345678-9abc-8def-8123-456789abcdef" : NULL);
                set_ptuuid(b.inv, "/dev/vde", mk == M_VDE_T1 || mk == M_BOTH ? t1 : NULL);
                _cleanup_free_ struct plan_mark *m = NULL;
                size_t n = 9;
                CHECK_INT(plan_marks(b.inv, &m, &n), 0);
                CHECK_INT(n, mk == M_NONE || mk == M_FOREIGN ? 0 : mk == M_BOTH ? 2 : 1);
                _cleanup_plan_free_ struct plan *uf = NULL, *ur = NULL;
                bool unwiped = false;
                struct diags d = {};
                CHECK_INT(su ? plan_decide(su, b.inv, false, &d, &uf, &ur, &unwiped) : -EINVAL, 0);
                diags_clear(&d);
                CHECK(unwiped);
                for (int rc = 0; rc < _R_MAX; rc++)
                        for (int t = 0; t < 3; t++) {
                                struct resume_record rec = { .complete = rc == R_DONE_SAME || rc == R_DONE_OTHER,
                                                             .reinstall = (char *) "T1" };
                                memcpy(rec.fingerprint, rc == R_DONE_OTHER || rc == R_HALF_OTHER ? p2->fingerprint :
                                                        b.fresh->fingerprint, 65);
                                for (int w = 0; w < 2; w++) {
                                        const struct plan *p = w ? uf : b.fresh;
                                        enum plan_verdict v = 99;
                                        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                                        if (!p)
                                                continue;
                                        CHECK_INT(plan_verdict(p, rc == R_NONE ? NULL : &rec, tokens[t], &v, &why), 0);
                                        if (v != want[mk][rc][t])
                                                fprintf(stderr, "marks %d record %d token %s wipe %s: %s (%s)\n", mk, rc,
                                                        tokens[t] ? tokens[t] : "none", w ? "false" : "true",
                                                        plan_verdict_name(v), strbuf_str(&why));
                                        CHECK_INT(v, want[mk][rc][t]);
                                }
                        }
        }
        /* the words, naming the disks */
        set_ptuuid(b.inv, "/dev/vda", no_token);
        set_ptuuid(b.inv, "/dev/vde", NULL);
        enum plan_verdict v;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        CHECK_INT(plan_verdict(b.fresh, NULL, NULL, &v, &why), 0);
        CHECK_STR(strbuf_str(&why), "/dev/vda holds a finished kiln install (installed without a reinstall token; "
                                    "no reinstall token was given)");
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, NULL, "T2", &v, &why), 0);
        CHECK_STR(strbuf_str(&why), "/dev/vda holds a finished kiln install (installed without a reinstall token), "
                                    "and the reinstall token 'T2' is not the one it was installed with");
        set_ptuuid(b.inv, "/dev/vde", t1);
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(b.fresh, NULL, "T1", &v, &why), 0);
        char id[MARK_TOKEN_ID_LEN * 2 + 1];
        uint8_t raw[MARK_TOKEN_ID_LEN];
        CHECK_INT(mark_token_id("T1", raw), 0);
        hex_encode(raw, sizeof raw, id);
        _cleanup_free_ char *want_why = NULL;
        CHECK(asprintf(&want_why, "/dev/vda, /dev/vde hold a finished kiln install (installed with the reinstall token #%s; "
                       "the reinstall token 'T1' is the one it was installed with)", id) > 0);
        CHECK_STR(strbuf_str(&why), want_why);
        set_ptuuid(b.inv, "/dev/vda", NULL);
        set_ptuuid(b.inv, "/dev/vde", NULL);
}


/* Layouts (docs/spec.md "Layouts"): a node finished with one layout, and a
 * spec whose first fitting layout on the same machine is now another: the
 * other layout is another plan, refused without a new reinstall token; the
 * same spec again boots the installed system. */
#define LAYOUT_RAID10 \
        "  - name: raid10\n" \
        "    disks: [{id: d, match: {min_size: 2G}, count: 4, wipe: true}]\n" \
        "    raid: [{id: md0, level: 10, members: d}]\n" \
        "    filesystems: [{on: md0, type: xfs, mount: /}]\n"
#define LAYOUT_ONE \
        "  - name: one\n" \
        "    disks: [{id: s, path: /dev/vda, wipe: true}]\n" \
        "    filesystems: [{on: s, type: xfs, mount: /}]\n"
#define LAYOUT_SHARED \
        "image: {url: \"http://boot.lab/i.tar\", sha256: \"" \
        "1111111111111111111111111111111111111111111111111111111111111111\"}\n"
static void test_layouts_finished(void) {
        _cleanup_spec_free_ struct spec *s1 = load_spec_text("version: 1\nlayouts:\n" LAYOUT_RAID10 LAYOUT_ONE LAYOUT_SHARED);
        _cleanup_spec_free_ struct spec *s2 = load_spec_text("version: 1\nlayouts:\n" LAYOUT_ONE LAYOUT_RAID10 LAYOUT_SHARED);
        CHECK(s1 && s2);
        if (!s1 || !s2)
                return;
        CHECK_INT(s1->n_layouts, 2);
        CHECK_STR(s1->layout, "raid10");
        CHECK_STR(s1->layouts[1]->layout, "one");
        _cleanup_inventory_free_ struct inventory *blank = load_inv("qemu-4disk");
        _cleanup_plan_free_ struct plan *first = NULL, *first_resume = NULL;
        bool unwiped = false;
        CHECK_INT(decide(s1, blank, &first, &first_resume, &unwiped), 0);
        CHECK(first && first->spec == s1 && first->n_misses == 0);
        if (!first)
                return;
        /* the disks as that install left them */
        _cleanup_inventory_free_ struct inventory *inv = as_built(s1, "qemu-4disk");
        CHECK(inv);
        if (!inv)
                return;
        struct resume_record rec = { .complete = true, .stages = 1u << RESUME_STAGE_STORAGE | 1u << RESUME_STAGE_IMAGE };
        memcpy(rec.fingerprint, first->fingerprint, 65);
        enum plan_verdict v = PLAN_VERDICT_RUN;
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;

        /* the same spec: the same layout, the same plan: boot it */
        _cleanup_plan_free_ struct plan *again = NULL, *again_resume = NULL;
        CHECK_INT(decide(s1, inv, &again, &again_resume, &unwiped), 0);
        CHECK(again && again_resume && streq(again->fingerprint, first->fingerprint));
        if (again)
                CHECK_INT(plan_verdict(again, &rec, NULL, &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_BOOT_INSTALLED);

        /* the spec with 'one' first: it fits too and wins, another plan */
        _cleanup_plan_free_ struct plan *other = NULL, *other_resume = NULL;
        CHECK_INT(decide(s2, inv, &other, &other_resume, &unwiped), 0);
        CHECK(other && other->spec == s2 && other->spec->layout && streq(other->spec->layout, "one"));
        if (!other)
                return;
        CHECK(!streq(other->fingerprint, first->fingerprint));
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(other, &rec, NULL, &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_REFUSE);
        CHECK(strstr(strbuf_str(&why), "a finished install of another plan"));
        strbuf_reset(&why);
        CHECK_INT(plan_verdict(other, &rec, "rack-2", &v, &why), 0);
        CHECK_INT(v, PLAN_VERDICT_REINSTALL);
        /* the same layout under another name is another plan as well */
        _cleanup_spec_free_ struct spec *s3 = load_spec_text("version: 1\nlayouts:\n"
                "  - name: raid10-renamed\n"
                "    disks: [{id: d, match: {min_size: 2G}, count: 4, wipe: true}]\n"
                "    raid: [{id: md0, level: 10, members: d}]\n"
                "    filesystems: [{on: md0, type: xfs, mount: /}]\n" LAYOUT_SHARED);
        _cleanup_plan_free_ struct plan *renamed = s3 ? plan_of(s3, blank) : NULL;
        CHECK(renamed && !streq(renamed->fingerprint, first->fingerprint));
        resume_record_done(&rec);
}

/* A generated key (escrowed; no key in the spec): with unlock (Tang) the
 * volume opens again through its pin, so a run over it resumes (its
 * luks-open recovers the key: agent/storage/unlock.c unlock_recover());
 * without unlock kiln has no way back in, and the plan says so. */
static void test_generated_key(void) {
        _cleanup_free_ char *text = template_text(), *perdisk_p = src_path("templates/kvm-perdisk-luks-raid10.yaml");
        _cleanup_free_ char *perdisk = NULL;
        CHECK_INT(read_full_file(perdisk_p, SPEC_MAX_BYTES, &perdisk, NULL), 0);
        const char *b = perdisk ? strstr(perdisk, "      generate: true\n") : NULL;
        const char *e = b ? strstr(b, "-----END CERTIFICATE-----\n") : NULL;
        CHECK(b && e);
        if (!b || !e)
                return;
        e += strlen("-----END CERTIFICATE-----\n");
        _cleanup_free_ char *key = NULL, *key_unlock = NULL;
        if (asprintf(&key, "    key:\n%.*s", (int) (e - b), b) < 0 ||
            asprintf(&key_unlock, "%s    unlock: {tang: [{url: \"http://10.0.2.100:7500\", "
                     "thp: \"Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg\"}]}\n", key) < 0)
                abort();
        const char *from = "    key: {passphrase: \"fake-lab-passphrase-not-a-secret\"}\n";
        _cleanup_free_ char *with = replaced(text, from, key_unlock), *without = replaced(text, from, key);
        CHECK(with && without);
        if (!with || !without)
                return;
        {
                _cleanup_(second_boot_done) struct second_boot sb = {};
                if (second_boot(with, &sb)) {
                        CHECK_INT(count_kind(sb.resume, PLAN_LUKS_OPEN), 1);
                        CHECK_INT(count_kind(sb.resume, PLAN_LUKS_FORMAT), 0);
                }
        }
        _cleanup_spec_free_ struct spec *s = load_spec_text(without);
        CHECK(s);
        _cleanup_inventory_free_ struct inventory *inv = s ? as_built(s, "qemu-4disk") : NULL;
        _cleanup_plan_free_ struct plan *p = inv ? plan_of(s, inv) : NULL;
        CHECK(p);
        if (!p)
                return;
        struct plan *r = NULL;
        CHECK_INT(resume_decide(p, false, &r), 0);
        CHECK(!r);
        CHECK_STR(p->mode_why, "no interrupted run of this plan to resume: LUKS 'crypt0' has a generated key and no "
                               "'unlock' (Tang): kiln cannot open it again (only the escrow's private key does)");
}

static char *perdisk_text(void) {
        _cleanup_free_ char *p = src_path("templates/kvm-perdisk-luks-raid10.yaml");
        char *text = NULL;
        if (read_full_file(p, SPEC_MAX_BYTES, &text, NULL) < 0)
                abort();
        return text;
}

static size_t index_of(const struct plan *p, const struct plan_step *s) {
        return (size_t) (s - p->steps);
}

static const struct plan_step *step_id(const struct plan *p, enum plan_step_kind k, const char *id) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == k && p->steps[i].id && streq(p->steps[i].id, id))
                        return &p->steps[i];
        return NULL;
}

/* The md's member rule, as the plan and the run (apply.c, on what it probes
 * once the luks-open steps made the mappings) both use it. */
static void test_md_member_rule(void) {
        struct inv_signature a[] = { { .type = (char *) "crypto_LUKS", .uuid = (char *) "0a0b" },
                                     { .type = (char *) "linux_raid_member", .uuid = (char *) "aaaa-1" } };
        struct inv_signature other[] = { { .type = (char *) "linux_raid_member", .uuid = (char *) "bbbb-2" } };
        struct inv_signature nouuid[] = { { .type = (char *) "linux_raid_member" } };
        struct inv_signature xfs[] = { { .type = (char *) "xfs", .uuid = (char *) "cccc-3" } };
        _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
        const char *uuid = NULL;
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-0", a, 2, &uuid, &why), 1);
        CHECK_STR(uuid, "aaaa-1");
        CHECK_INT(why.len, 0);
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-1", a + 1, 1, &uuid, &why), 1);
        CHECK_STR(uuid, "aaaa-1");
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-2", other, 1, &uuid, &why), 0);
        CHECK_STR(strbuf_str(&why), "the members of md array 'md0' belong to different arrays");
        CHECK_STR(uuid, "aaaa-1");
        strbuf_reset(&why);
        uuid = NULL;
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-3", xfs, 1, &uuid, &why), 0);
        CHECK_STR(strbuf_str(&why), "/dev/mapper/crypt-3 is not a member of md array 'md0'");
        CHECK(!uuid);
        strbuf_reset(&why);
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-3", NULL, 0, &uuid, &why), 0);
        CHECK_STR(strbuf_str(&why), "/dev/mapper/crypt-3 is not a member of md array 'md0'");
        strbuf_reset(&why);
        CHECK_INT(resume_md_member("md0", "/dev/mapper/crypt-3", nouuid, 1, &uuid, &why), 0);
        CHECK_STR(strbuf_str(&why), "/dev/mapper/crypt-3 is not a member of md array 'md0'");
}

/* Per-disk LUKS under md (templates/kvm-perdisk-luks-raid10.yaml: generated
 * escrowed keys bound to Tang): the md superblocks are inside the closed LUKS
 * volumes, where the inventory cannot look. The resume plan is still made
 * (a resume, and the look at a finished node, which is the same plan run
 * read-only): each luks-open through its Tang pin, then the md over the
 * mappings, judged by the run once they are open (no UUID in the plan), then
 * the VG on it; /boot's md over partitions is judged from the inventory as
 * before. A disk whose header is gone still says so. */
static void test_perdisk_luks(void) {
        _cleanup_free_ char *text = perdisk_text();
        _cleanup_(second_boot_done) struct second_boot b = {};
        if (!second_boot(text, &b))
                return;
        const struct plan *f = b.fresh, *res = b.resume;
        CHECK_STR(res->mode_why, "the disks hold this plan's layout; the progress record decides");
        CHECK_INT(count_kind(res, PLAN_LUKS_OPEN), 4);
        CHECK_INT(count_kind(res, PLAN_MD_ASSEMBLE), 2);
        CHECK_INT(count_kind(res, PLAN_LUKS_FORMAT) + count_kind(res, PLAN_MD_CREATE), 0);
        const struct plan_step *md0 = step_id(res, PLAN_MD_ASSEMBLE, "md0"), *boot = step_id(res, PLAN_MD_ASSEMBLE, "md-boot");
        const struct plan_step *vg = step_of(res, PLAN_VG_ACTIVATE), *chk = step_of(res, PLAN_RESUME_CHECK);
        CHECK(md0 && boot && vg && chk);
        if (!md0 || !boot || !vg || !chk)
                return;
        /* md0: no UUID from the inventory; its members are the mappings the luks-open steps make, all before it */
        CHECK(!md0->uuid);
        CHECK_INT(strv_length(md0->inputs), 4);
        size_t opens = 0;
        for (size_t i = 0; i < res->n_steps; i++) {
                const struct plan_step *s = &res->steps[i];
                if (s->kind != PLAN_LUKS_OPEN)
                        continue;
                opens++;
                CHECK(i < index_of(res, md0));
                CHECK(strv_contains(md0->inputs, s->device));
                CHECK(s->description && strstr(s->description, "with the generated key its clevis token gives back "
                                                                "through Tang"));
        }
        CHECK_INT(opens, 4);
        CHECK_STR(md0->description, "assemble md 'md0' from /dev/mapper/crypt-0, /dev/mapper/crypt-1, /dev/mapper/crypt-2, "
                                    "/dev/mapper/crypt-3, once the luks-open steps above opened them (their superblocks "
                                    "are read then: one array, its UUID); keeps the array and its data");
        /* then the VG on md0, the mounts, the record */
        CHECK(index_of(res, md0) < index_of(res, vg));
        CHECK(index_of(res, vg) < index_of(res, chk));
        /* md-boot sits on partitions: the inventory's UUID, as before */
        CHECK(boot->uuid && strlen(boot->uuid) == 36);
        CHECK(boot->description && strstr(boot->description, boot->uuid));
        /* the fresh plan is unchanged: md-create over the mappings */
        const struct plan_step *create = step_id(f, PLAN_MD_CREATE, "md0");
        CHECK(create && create->inputs && streq(create->inputs[0], "/dev/mapper/crypt-0"));
        _cleanup_strbuf_ struct strbuf j = STRBUF_INIT;
        CHECK_INT(plan_to_json(res, &j), 0);
        CHECK(strstr(strbuf_str(&j), "\"mode\":\"resume\""));

        /* a finished node (marked disks) is the same plan: the look opens it before any verdict */
        static const uint8_t rnd[MARK_RANDOM_LEN] = { 5, 6, 7, 8 };
        char mk[MARK_UUID_LEN + 1];
        CHECK_INT(mark_encode(NULL, rnd, mk), 0);
        for (size_t i = 0; i < f->n_disks; i++)
                set_ptuuid(b.inv, f->disks[i].disk->path, mk);
        _cleanup_plan_free_ struct plan *g = plan_of(b.spec, b.inv);
        struct plan *look = NULL;
        CHECK(g);
        if (!g)
                return;
        CHECK_INT(resume_decide(g, false, &look), 0);
        CHECK(look);
        if (look) {
                const struct plan_step *m = step_id(look, PLAN_MD_ASSEMBLE, "md0");
                CHECK(m && !m->uuid);
                struct resume_record done = { .complete = true };
                memcpy(done.fingerprint, g->fingerprint, sizeof done.fingerprint);
                enum plan_verdict v;
                _cleanup_strbuf_ struct strbuf why = STRBUF_INIT;
                CHECK_INT(plan_verdict(g, &done, NULL, &v, &why), 0);
                CHECK_INT(v, PLAN_VERDICT_BOOT_INSTALLED);
        }
        plan_free(look);
        look = NULL;

        /* a disk whose LUKS header is gone: not this plan's run, and why */
        struct inv_partition *p2 = part_at(b.inv, "/dev/vdc3");
        CHECK(p2 && p2->n_sigs == 1);
        if (!p2)
                return;
        free(p2->sigs[0].type);
        p2->sigs[0].type = strdup("xfs");
        _cleanup_plan_free_ struct plan *h = plan_of(b.spec, b.inv);
        CHECK(h);
        if (!h)
                return;
        CHECK_INT(resume_decide(h, false, &look), 0);
        CHECK(!look);
        CHECK_STR(h->mode_why, "no interrupted run of this plan to resume: /dev/vdc3 holds no LUKS header");
}

int main(void) {
        test_verdict();
        test_layouts_finished();
        test_verdict_marks();
        test_reinstall_token();
        test_fingerprint();
        test_record();
        test_decide();
        test_unwiped_text();
        test_whole_disk_members();
        test_raw_image();
        test_generated_key();
        test_md_member_rule();
        test_perdisk_luks();
        return TEST_DONE();
}
