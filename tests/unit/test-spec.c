/* The parsed model of host specs: templates and inline documents. */
#include "diag.h"
#include "log.h"
#include "spec.h"
#include "tap.h"

static char *template_path(const char *name) {
        const char *src = getenv("SRC");
        static char buf[4096];
        snprintf(buf, sizeof buf, "%s/templates/%s", src ? src : ".", name);
        return buf;
}

static struct spec *load(const char *name) {
        struct diags d = {};
        struct spec *s = NULL;
        int r = spec_load(template_path(name), &s, &d);
        if (r < 0)
                diags_print(&d, stderr);
        CHECK_INT(r, 0);
        CHECK_INT(diags_errors(&d, 0), 0);   /* templates carry placeholders: warnings only */
        diags_clear(&d);
        return s;
}

static struct spec *parse(const char *text, struct diags *d) {
        struct spec *s = NULL;
        int r = spec_parse("t.yaml", text, strlen(text), &s, d);
        CHECK((r == 0) == (s != NULL));
        return s;
}

static void test_luks_lvm(void) {
        _cleanup_spec_free_ struct spec *s = load("kvm-raid10-luks-lvm.yaml");
        if (!s)
                return;
        CHECK_INT(s->version, 1);
        CHECK_STR(s->hostname, "kvm-${serial}");
        CHECK_INT(s->n_disks, 1);
        CHECK_STR(s->disks[0].id, "d");
        CHECK_INT(s->disks[0].count, 4);
        CHECK_U64(s->disks[0].min_size, 2ull << 30);
        CHECK_INT(s->disks[0].rotational, -1);
        CHECK(s->disks[0].wipe);
        CHECK_INT(s->disks[0].match_mark.line, 17);

        CHECK_INT(s->n_partitions, 3);
        CHECK_INT(s->partitions[0].type, SPEC_PART_BIOS_GRUB);
        CHECK_INT(s->partitions[0].size.kind, SPEC_SIZE_BYTES);
        CHECK_U64(s->partitions[0].size.bytes, 1ull << 20);
        CHECK_STR(s->partitions[2].name, "data");
        CHECK_INT(s->partitions[2].size.kind, SPEC_SIZE_REST);
        CHECK_INT(s->partitions[2].type, SPEC_PART_RAID);
        CHECK_STR(s->partitions[2].on, "d");

        CHECK_INT(s->n_raids, 2);
        CHECK_STR(s->raids[0].metadata, "1.0");
        const struct spec_raid *a = &s->raids[1];
        CHECK_STR(a->id, "md0");
        CHECK_STR(a->name, "md0");
        CHECK_INT(a->level, 10);
        CHECK_STR(a->layout, "f2");
        CHECK_U64(a->chunk, 256 * 1024);
        CHECK_STR(a->metadata, "1.2");
        CHECK(a->bitmap == NULL);
        CHECK_INT(strv_length(a->members), 1);
        CHECK_STR(a->members[0], "data");
        CHECK_INT(a->member_marks[0].line, 32);
        CHECK_INT(a->member_marks[0].col, 14);
        CHECK(a->assume_clean);
        CHECK_INT(a->level_mark.line, 29);
        CHECK_INT(a->level_mark.col, 12);

        CHECK_INT(s->n_luks, 1);
        const struct spec_luks *x = &s->luks[0];
        CHECK_STR(x->on, "md0");
        CHECK_STR(x->cipher, "aes-xts-plain64");
        CHECK_INT(x->key_size, 512);
        CHECK_INT(x->sector_size, 4096);
        CHECK_STR(x->label, "kvm-data");
        CHECK_INT(x->pbkdf.type, SPEC_PBKDF_ARGON2ID);
        CHECK_INT(x->pbkdf.time_ms, 200);
        CHECK_U64(x->pbkdf.max_memory, 64ull << 20);
        CHECK_INT(x->pbkdf.parallel, 1);
        CHECK(x->no_read_workqueue && x->no_write_workqueue && !x->discard);
        CHECK_INT(x->key.source, SPEC_KEY_PASSPHRASE);
        CHECK_STR(x->key.passphrase, "fake-lab-passphrase-not-a-secret");

        CHECK_INT(s->n_vgs, 1);
        CHECK_STR(s->vgs[0].name, "kvm_vg");
        CHECK_INT(strv_length(s->vgs[0].pvs), 1);
        CHECK_STR(s->vgs[0].pvs[0], "crypt0");
        CHECK_INT(s->n_lvs, 2);
        CHECK_INT(s->lvs[0].size.kind, SPEC_SIZE_BYTES);
        CHECK_U64(s->lvs[0].size.bytes, 1ull << 30);
        CHECK_INT(s->lvs[1].size.kind, SPEC_SIZE_REST);
        CHECK_STR(s->lvs[1].vg, "vg0");

        CHECK_INT(s->n_filesystems, 3);
        CHECK_STR(s->filesystems[2].mount, "/var/lib/libvirt/images");
        CHECK_STR(s->filesystems[2].mount_options, "noatime");
        CHECK_INT(s->filesystems[2].type, SPEC_FS_XFS);
        CHECK_STR(spec_fs_type_name(s->filesystems[2].type), "xfs");

        /* boot: GRUB for BIOS on every disk under /boot's RAID1 */
        CHECK(s->boot.present);
        CHECK_INT(s->boot.firmware, SPEC_FIRMWARE_BIOS);
        CHECK_STR(spec_firmware_name(s->boot.firmware), "bios");
        CHECK_INT(strv_length(s->boot.cmdline), 2);
        CHECK_STR(s->boot.cmdline[1], "console=ttyS0,115200n8");
        CHECK(s->boot.disks == NULL);
        CHECK(spec_boot_filesystem(s) == &s->filesystems[0]);
        CHECK(spec_esp_filesystem(s) == NULL);
        CHECK(spec_luks_below(s, "md-boot") == NULL);
        CHECK(spec_luks_below(s, "root") == &s->luks[0]);
        char **bd = NULL;
        CHECK_INT(spec_boot_disks(s, &bd), 0);
        CHECK_INT(strv_length(bd), 1);
        CHECK_STR(bd[0], "d");
        strv_free(bd);
        CHECK(!spec_has_unlock(s));

        CHECK(s->image.present);
        CHECK_INT(s->image.format, SPEC_IMAGE_TAR);
        CHECK_U64(s->image.max_size, 2ull << 30);
        CHECK(s->bench.present);
        CHECK_INT(strv_length(s->bench.ciphers), 2);
        CHECK(s->bench.tune);
        CHECK(s->bench.max_overhead == 0.5);
        CHECK(s->bench.write_mbps == 150);
        CHECK_INT(s->bench.on_fail, SPEC_ON_FAIL_WARN);
        CHECK(s->cloudstack.present);
        CHECK_STR(s->cloudstack.zone, "lab");
        CHECK_STR(s->cloudstack.secret_key, "fake-secret-key-not-a-secret");
        CHECK(!s->webhook.present);
        CHECK_INT(s->finish, SPEC_FINISH_REBOOT);

        const void *obj = NULL;
        CHECK_INT(spec_lookup(s, "md0", &obj), SPEC_OBJ_RAID);
        CHECK(obj == &s->raids[1]);
        CHECK_INT(spec_lookup(s, "images", &obj), SPEC_OBJ_LV);
        CHECK_INT(spec_lookup(s, "vg0", NULL), SPEC_OBJ_VG);
        CHECK_INT(spec_lookup(s, "nope", NULL), SPEC_OBJ_NONE);

        /* secrets are redacted once registered */
        CHECK_INT(spec_register_secrets(s), 0);
        char line[256];
        snprintf(line, sizeof line, "key=%s secret=%s pw=%s", x->key.passphrase, s->cloudstack.secret_key,
                 s->cloudstack.host_password);
        log_redact(line);
        CHECK(strstr(line, "fake-lab-passphrase") == NULL);
        CHECK(strstr(line, "fake-secret-key") == NULL);
        CHECK(strstr(line, "fake-host-password") == NULL);
        CHECK(strstr(line, "key=") != NULL);
        log_forget_secrets();
}

static void test_lvm_luks(void) {
        _cleanup_spec_free_ struct spec *s = load("kvm-raid10-lvm-luks.yaml");
        if (!s)
                return;
        CHECK_INT(s->n_luks, 2);
        CHECK_STR(s->luks[0].on, "root");
        CHECK_INT(spec_lookup(s, s->luks[0].on, NULL), SPEC_OBJ_LV);
        CHECK_STR(s->vgs[0].pvs[0], "md0");
        CHECK_STR(s->filesystems[1].on, "croot");
        CHECK(s->webhook.present);
        CHECK_STR(s->webhook.hmac_key, "fake-hmac-key-not-a-secret");
        CHECK_INT(spec_register_secrets(s), 0);
        char line[128];
        snprintf(line, sizeof line, "hmac %s", s->webhook.hmac_key);
        log_redact(line);
        CHECK(strstr(line, "fake-hmac-key") == NULL);
        log_forget_secrets();
}

static void test_other_templates(void) {
        _cleanup_spec_free_ struct spec *j = load("junk-box.yaml");
        if (j) {
                CHECK_INT(j->n_disks, 2);
                CHECK_INT(j->disks[0].rotational, 0);
                CHECK_U64(j->disks[0].max_size, 1ull << 40);
                CHECK_INT(j->disks[1].rotational, 1);
                CHECK_INT(j->disks[1].count, 4);
                CHECK_STR(j->raids[0].metadata, "1.0");
                CHECK_STR(j->raids[2].members[0], "hdd");
                CHECK_STR(j->raids[2].layout, "n2");
                CHECK_STR(j->raids[1].bitmap, "internal");
                CHECK_INT(j->luks[0].key.source, SPEC_KEY_URL);
                CHECK_U64(j->vgs[1].extent_size, 64ull << 20);
                CHECK_INT(strv_length(j->filesystems[4].mkfs_options), 2);
                CHECK_STR(j->filesystems[4].mkfs_options[1], "reflink=1");
        }
        _cleanup_spec_free_ struct spec *r = load("raid1-boot-raid10.yaml");
        if (r) {
                CHECK_INT(r->raids[0].level, 1);
                CHECK_STR(r->raids[0].metadata, "1.0");
                CHECK_STR(r->raids[0].bitmap, "none");
                CHECK_INT(r->luks[0].key.source, SPEC_KEY_URL);
                CHECK_STR(r->luks[0].key.sha256, "2e640b78bc078a4d768365fdc0b854e12c75d58a8092d10ec34f32043352c3c4");
                CHECK_STR(r->luks[0].key.url, "http://boot.lab/keys/${uuid}.key");
                CHECK(r->bench.cipher_mbps == 500);
                CHECK_INT(r->bench.on_fail, SPEC_ON_FAIL_ABORT);
        }
        _cleanup_spec_free_ struct spec *d = load("single-disk.yaml");
        if (d) {
                CHECK_STR(d->disks[0].path, "/dev/vda");
                CHECK_INT(d->disks[0].count, 1);
                CHECK_INT(d->partitions[1].type, SPEC_PART_ESP);
                CHECK_STR(spec_part_type_name(d->partitions[1].type), "esp");
                CHECK_INT(d->filesystems[1].type, SPEC_FS_SWAP);
                CHECK(d->filesystems[1].mount == NULL);
                CHECK(!d->bench.present && !d->cloudstack.present);
        }
}

static void test_inline(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = parse(
                "version: 1\n"
                "disks:\n"
                "  - {id: a, path: /dev/sda}\n"
                "  - {id: b, match: {serial: S1, wwn: '0x5000', model: 'Samsung*', transport: NVMe}}\n"
                "  - {id: c, by_id: ata-X, rotational: false, max_size: 2T}\n"
                "  - {id: e, rotational: true}\n"
                "partitions:\n"
                "  - {id: p1, on: c, size: 25%}\n"
                "raid:\n"
                "  - {id: r6, level: 6, layout: left-symmetric, members: [a, b, p1, e], spares: 0}\n"
                "lvm: [{id: g, pvs: r6}]\n"
                "volumes: [{id: v, vg: g, size: 40%FREE}]\n", &d);
        diags_print(&d, stderr);
        CHECK_INT(d.n, 0);
        if (s) {
                CHECK_STR(s->disks[1].serial, "S1");
                CHECK_STR(s->disks[1].transport, "nvme");
                CHECK_STR(s->disks[1].model, "Samsung*");
                CHECK_INT(s->disks[1].match_mark.line, 4);
                CHECK_INT(s->disks[1].match_mark.col, 20);
                CHECK_STR(s->disks[2].by_id, "ata-X");
                CHECK_INT(s->partitions[0].size.kind, SPEC_SIZE_PERCENT);
                CHECK_INT(s->partitions[0].size.percent, 25);
                CHECK_INT(s->raids[0].level, 6);
                CHECK_INT(strv_length(s->raids[0].members), 4);
                CHECK_INT(s->lvs[0].size.kind, SPEC_SIZE_PERCENT);
                CHECK_INT(s->lvs[0].size.percent, 40);
                CHECK_INT(s->finish, SPEC_FINISH_NONE);
        }
        diags_clear(&d);

        /* errors: every one reported, nothing returned */
        struct spec *bad = parse("version: 1\ndisks: [{id: d, count: 4}]\n"
                                 "raid: [{id: m, level: 10, layout: n3, members: d, spares: 2}]\n", &d);
        CHECK(bad == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1) {
                CHECK_INT(d.items[0].line, 3);
                CHECK_STR(d.items[0].message,
                          "raid 'm' (level 10 layout 'n3') needs at least 3 active members, but has 2 (4 devices, 2 spares)");
        }
        diags_clear(&d);
        /* one spare: counted in the singular */
        bad = parse("version: 1\ndisks: [{id: d, count: 2}]\n"
                    "raid: [{id: m, level: 1, members: d, spares: 1}]\n", &d);
        CHECK(bad == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1)
                CHECK_STR(d.items[0].message, "raid 'm' (level 1) needs at least 2 active members, but has 1 (2 devices, 1 spare)");
        diags_clear(&d);

        /* secrets never appear in diagnostics */
        bad = parse("version: 1\ndisks: [{id: d}]\nluks: [{id: l, on: d, key: {passphrase: short}}]\n", &d);
        CHECK(bad == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1)
                CHECK(strstr(d.items[0].message, "short") == NULL || strstr(d.items[0].message, "too short"));
        diags_clear(&d);

        /* oversize input is refused before parsing */
        size_t big = SPEC_MAX_BYTES + 1;
        char *buf = malloc(big);
        memset(buf, '#', big);
        CHECK_INT(spec_parse("big.yaml", buf, big, &bad, &d), -EINVAL);
        CHECK_INT(d.n, 1);
        free(buf);
        diags_clear(&d);
}

static void test_expand(void) {
        struct spec_vars v = { .mac = "52:54:00:12:34:56", .uuid = "u-1", .serial = "SER1", .hostname = "h" };
        char *out = NULL;
        CHECK_INT(spec_expand("kvm-${serial}.${hostname}/${mac}/${uuid}", &v, &out, NULL), 0);
        CHECK_STR(out, "kvm-SER1.h/52:54:00:12:34:56/u-1");
        free(out);
        out = NULL;
        CHECK_INT(spec_expand("plain $ and $x", &v, &out, NULL), 0);
        CHECK_STR(out, "plain $ and $x");
        free(out);
        out = NULL;
        CHECK_INT(spec_expand("", &v, &out, NULL), 0);
        CHECK_STR(out, "");
        free(out);
        out = NULL;
        CHECK_INT(spec_expand("x${nope}", &v, &out, NULL), -EINVAL);
        CHECK_INT(spec_expand("x${mac", &v, &out, NULL), -EINVAL);
        struct spec_vars none = {};
        CHECK_INT(spec_expand("x${serial}", &none, &out, NULL), -ENODATA);
        CHECK(out == NULL);
        /* the variable without a value is named (plan shows it, apply refuses with it) */
        const char *missing = NULL;
        struct spec_vars only_mac = { .mac = "52:54:00:12:34:56" };
        CHECK_INT(spec_expand("${mac}-${uuid}-${serial}", &only_mac, &out, &missing), -ENODATA);
        CHECK_STR(missing, "uuid");
        CHECK(out == NULL);
        missing = NULL;
        CHECK_INT(spec_expand("${mac}", &only_mac, &out, &missing), 0);
        CHECK(missing == NULL);
        CHECK_STR(out, "52:54:00:12:34:56");
        free(out);
        out = NULL;
        /* iPXE's forms of the MAC, the ones a host name can hold */
        struct spec_vars upper = { .mac = "B0:26:28:4F:8A:10" };
        CHECK_INT(spec_expand("n-${mac:hexhyp}.${mac:hexraw}", &upper, &out, NULL), 0);
        CHECK_STR(out, "n-b0-26-28-4f-8a-10.b026284f8a10");
        free(out);
        out = NULL;
        missing = NULL;
        CHECK_INT(spec_expand("${mac:hexraw}", &none, &out, &missing), -ENODATA);
        CHECK_STR(missing, "mac");
}

static void test_hostname_rules(void) {
        CHECK(spec_hostname_problem("kvm-01.lab") == NULL);
        CHECK(spec_hostname_problem("a") == NULL);
        CHECK(spec_hostname_problem("node-b0:26") != NULL);
        CHECK(spec_hostname_problem("junk-To be filled by O.E.M.") != NULL);
        CHECK(spec_hostname_problem("-a") != NULL);
        CHECK(spec_hostname_problem("a-.b") != NULL);
        CHECK(spec_hostname_problem("a..b") != NULL);
        CHECK(spec_hostname_problem("a.") != NULL);
        CHECK(spec_hostname_problem("") != NULL);
        char label[80];
        memset(label, 'a', 64);
        label[64] = 0;
        CHECK(spec_hostname_problem(label) != NULL);
        label[63] = 0;
        CHECK(spec_hostname_problem(label) == NULL);
        /* placeholder serials and UUIDs count as missing */
        static const char *const junk[] = {
                "To be filled by O.E.M.", "TO BE FILLED BY O.E.M.", "Default string", "System Serial Number",
                "0123456789", "00000000", "0", "  ", "", "00000000-0000-0000-0000-000000000000",
                "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "03000200-0400-0500-0006-000700080009", "Not Specified",
                "XXXXXXXXXX", NULL,
        };
        for (size_t i = 0; junk[i]; i++)
                CHECK(spec_value_is_placeholder(junk[i]));
        CHECK(spec_value_is_placeholder(NULL));
        CHECK(!spec_value_is_placeholder("SN-TEST-42"));
        CHECK(!spec_value_is_placeholder("6b1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"));
        CHECK(!spec_value_is_placeholder("CZ1234ABCD"));
}

/* A generated key is kept nowhere: fine under a scratch filesystem nobody
 * mounts at boot, refused under one that fstab would open again. */
/* match: [...]: each alternative is a whole rule, the criteria written
 * directly in the entry merged into it */
static void test_match_alternatives(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = parse(
                "version: 1\n"
                "disks:\n"
                "  - id: d\n"
                "    count: 2\n"
                "    wipe: true\n"
                "    rotational: true\n"
                "    match:\n"
                "      - {transport: nvme, size: largest}\n"
                "      - {model: 'ST*', min_size: 1T}\n"
                "raid: [{id: m, level: 1, members: d}]\n", &d);
        CHECK(s != NULL);
        CHECK_INT(d.n, 0);
        if (s) {
                const struct spec_disk *r = &s->disks[0];
                CHECK_INT(r->n_alts, 2);
                CHECK_INT(r->rotational, 1);
                CHECK(r->transport == NULL);
                CHECK_INT(r->match_mark.line, 8);
                if (r->n_alts == 2) {
                        CHECK_STR(r->alts[0].id, "d");
                        CHECK_STR(r->alts[0].transport, "nvme");
                        CHECK_INT(r->alts[0].pick, SPEC_PICK_LARGEST);
                        CHECK_INT(r->alts[0].rotational, 1);
                        CHECK_INT(r->alts[0].count, 2);
                        CHECK(r->alts[0].wipe);
                        CHECK_INT(r->alts[0].match_mark.line, 8);
                        CHECK_STR(r->alts[1].model, "ST*");
                        CHECK_U64(r->alts[1].min_size, 1ull << 40);
                        CHECK_INT(r->alts[1].rotational, 1);
                        CHECK_INT(r->alts[1].pick, SPEC_PICK_NONE);
                        CHECK(r->alts[1].transport == NULL);
                        CHECK_INT(r->alts[1].match_mark.line, 9);
                }
        }
        diags_clear(&d);
}

/* luks on a partition of a count: 4 rule: four LUKS2, named NAME-0..NAME-3,
 * and a raid may take them as members */
static void test_luks_per_disk(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = parse(
                "version: 1\n"
                "disks: [{id: d, count: 4}]\n"
                "partitions: [{id: p, on: d, size: rest}]\n"
                "luks:\n"
                "  - {id: c, on: p, key: {passphrase: 'lab-passphrase-0815'}}\n"
                "  - {id: one, name: single, on: md0, key: {passphrase: 'lab-passphrase-0815'}}\n"
                "raid: [{id: md0, level: 10, layout: f2, members: c}]\n"
                "filesystems: [{on: one, type: xfs, mount: /}]\n", &d);
        CHECK(s != NULL);
        CHECK_INT(d.n, 0);
        if (s) {
                CHECK_INT(s->luks[0].count, 4);
                CHECK_INT(s->luks[1].count, 1);
                char *n = NULL;
                CHECK_INT(spec_luks_name(&s->luks[0], 3, &n), 0);
                CHECK_STR(n, "c-3");
                free(n);
                n = NULL;
                CHECK_INT(spec_luks_name(&s->luks[1], 0, &n), 0);
                CHECK_STR(n, "single");
                free(n);
        }
        diags_clear(&d);
        /* a filesystem cannot sit on the four at once */
        _cleanup_spec_free_ struct spec *bad = parse(
                "version: 1\n"
                "disks: [{id: d, count: 4}]\n"
                "luks: [{id: c, on: d, key: {passphrase: 'lab-passphrase-0815'}}]\n"
                "filesystems: [{on: c, type: xfs}]\n", &d);
        CHECK(bad == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1)
                CHECK(strstr(d.items[0].message, "stands for 4 devices") != NULL);
        diags_clear(&d);
}

static void test_generated_key(void) {
        static const char base[] =
                "version: 1\n"
                "disks: [{id: d, path: /dev/vdb}]\n"
                "luks: [{id: c, on: d, key: {generate: true}}]\n"
                "lvm: [{id: g, pvs: c}]\n"
                "volumes: [{id: v, vg: g, size: 100%FREE}]\n";
        char text[512];
        struct diags d = {};
        snprintf(text, sizeof text, "%sfilesystems: [{on: v, type: xfs}]\n", base);
        _cleanup_spec_free_ struct spec *ok = parse(text, &d);
        CHECK(ok != NULL);
        CHECK_INT(d.n, 0);
        diags_clear(&d);
        snprintf(text, sizeof text, "%sfilesystems: [{on: v, type: swap}]\n", base);
        _cleanup_spec_free_ struct spec *swap = parse(text, &d);
        CHECK(swap == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1) {
                CHECK_INT(d.items[0].line, 3);
                CHECK(strstr(d.items[0].message, "(used as swap)") != NULL);
        }
        diags_clear(&d);
}

/* unlock pins and boot firmware with ESPs: the model the plan reads */
static void test_boot_unlock(void) {
        static const char text[] =
                "version: 1\n"
                "disks: [{id: d, match: {min_size: 1G}, count: 2}]\n"
                "partitions:\n"
                "  - {id: bios, on: d, size: 1M, type: bios_grub}\n"
                "  - {id: esp, on: d, size: 64M, type: esp}\n"
                "  - {id: boot, on: d, size: 256M, type: raid}\n"
                "  - {id: data, on: d, size: rest, type: raid}\n"
                "raid:\n"
                "  - {id: md-esp, level: 1, members: esp, metadata: \"1.0\"}\n"
                "  - {id: md-boot, level: 1, members: boot}\n"
                "  - {id: md-data, level: 1, members: data}\n"
                "luks:\n"
                "  - id: c\n"
                "    on: md-data\n"
                "    key: {passphrase: \"fake-lab-passphrase\"}\n"
                "    unlock:\n"
                "      tang:\n"
                "        - {url: \"http://10.0.2.100:7500\", thp: \"Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg\"}\n"
                "        - {url: \"http://10.0.2.101\", thp: \"0123456789abcdefghijklmnopqrstuvwxyzABCDEFG\"}\n"
                "      threshold: 2\n"
                "filesystems:\n"
                "  - {on: c, type: xfs, mount: /}\n"
                "  - {on: md-boot, type: ext4, mount: /boot}\n"
                "  - {on: md-esp, type: vfat, mount: /boot/efi}\n"
                "image: {url: \"http://h/i.tar\", sha256: \"" "0000000000000000000000000000000000000000000000000000000000000000" "\"}\n"
                "boot: {firmware: both, cmdline: [console=ttyS0]}\n";
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = parse(text, &d);
        if (!s)
                diags_print(&d, stderr);
        CHECK(s != NULL);
        diags_clear(&d);
        if (!s)
                return;
        CHECK_INT(s->boot.firmware, SPEC_FIRMWARE_BOTH);
        CHECK(spec_esp_filesystem(s) == &s->filesystems[2]);
        CHECK(spec_boot_filesystem(s) == &s->filesystems[1]);
        CHECK(spec_has_unlock(s));
        const struct spec_luks *x = &s->luks[0];
        CHECK_INT(x->unlock.n_tang, 2);
        CHECK_INT(x->unlock.threshold, 2);
        CHECK_STR(x->unlock.tang[0].url, "http://10.0.2.100:7500");
        CHECK_STR(x->unlock.tang[1].thp, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG");
        CHECK_INT(x->unlock.mark.line, 17);

        /* the same with one pin: threshold defaults to 1 */
        _cleanup_free_ char *one = strdup(text);
        char *at = strstr(one, "        - {url: \"http://10.0.2.101\"");
        char *end = strstr(one, "filesystems:");
        memmove(at, end, strlen(end) + 1);
        _cleanup_spec_free_ struct spec *s1 = parse(one, &d);
        if (!s1)
                diags_print(&d, stderr);
        diags_clear(&d);
        if (s1) {
                CHECK_INT(s1->luks[0].unlock.n_tang, 1);
                CHECK_INT(s1->luks[0].unlock.threshold, 1);
        }
}

/* raid10's copies: the members it needs (validation) and its capacity (plan) */
static void test_raid10_copies(void) {
        CHECK_INT(spec_raid10_copies(NULL), 2);
        CHECK_INT(spec_raid10_copies("f2"), 2);
        CHECK_INT(spec_raid10_copies("o2"), 2);
        CHECK_INT(spec_raid10_copies("n3"), 3);
        CHECK_INT(spec_raid10_copies("f3"), 3);
}

/* device_timeout and required (docs/spec.md "Device waits"): the parser sets
 * both, the one place their defaults are applied. */
static void test_device_waits(void) {
        static const struct { const char *v; unsigned s; } ok[] = {
                { NULL, SPEC_DEVICE_TIMEOUT_S }, { "1s", 1 }, { "300s", 300 }, { "5min", 300 }, { "1h", 3600 },
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                char text[512];
                snprintf(text, sizeof text, "version: 1\n%s%s%sdisks: [{id: d}]\n"
                         "partitions: [{id: a, on: d, size: 1G}, {id: b, on: d, size: 1G}, {id: c, on: d, size: rest}]\n"
                         "filesystems:\n"
                         "  - {on: a, type: xfs, mount: /}\n"
                         "  - {on: b, type: xfs, mount: /srv}\n"
                         "  - {on: c, type: xfs, mount: /data, required: true}\n",
                         ok[i].v ? "device_timeout: " : "", ok[i].v ? ok[i].v : "", ok[i].v ? "\n" : "");
                struct diags d = {};
                _cleanup_spec_free_ struct spec *sp = parse(text, &d);
                if (d.n)
                        diags_print(&d, stderr);
                diags_clear(&d);
                CHECK(sp != NULL);
                if (!sp)
                        continue;
                CHECK_INT(sp->device_timeout, ok[i].s);
                CHECK(sp->filesystems[0].required);     /* '/' always */
                CHECK(!sp->filesystems[1].required);    /* the default */
                CHECK(sp->filesystems[2].required);     /* the spec's */
        }
}

/* nodes: the table's rows as parsed (MAC keys lower-cased, the key's
 * kind), and its duplicates refused at the key's or the value's place. */
static void test_nodes(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = parse(
                "version: 1\nhostname: kvm-${serial}\ndisks: [{id: d}]\n"
                "network: {bridges: [{name: cloudbr0, nic: {boot: true}, dhcp: true}, {name: cloudbr1, nic: {link: true}, vlan: 5}]}\n"
                "nodes:\n"
                "  \"52:54:00:AA:BB:CC\": {hostname: a1, address: 10.0.0.5/24, gateway: 10.0.0.1}\n"
                "  SN-7: {address: 10.0.1.5/24, bridge: cloudbr1}\n"
                "  default: {hostname: \"spare-${mac:hexraw}\"}\n", &d);
        CHECK_INT(diags_errors(&d, 0), 0);
        diags_clear(&d);
        if (!s)
                return;
        CHECK_INT(s->n_nodes, 3);
        CHECK_STR(s->nodes[0].key, "52:54:00:aa:bb:cc");
        CHECK_INT(s->nodes[0].by, SPEC_NODE_MAC);
        CHECK_INT(s->nodes[0].mark.line, 6);
        CHECK_STR(s->nodes[0].gateway, "10.0.0.1");
        CHECK_INT(s->nodes[1].by, SPEC_NODE_SERIAL);
        CHECK(s->nodes[1].hostname == NULL);
        CHECK_STR(spec_node_bridge(s, &s->nodes[1])->name, "cloudbr1");
        CHECK_STR(spec_node_bridge(s, &s->nodes[0])->name, "cloudbr0");
        CHECK_INT(s->nodes[2].by, SPEC_NODE_DEFAULT);

        static const struct { const char *rows; unsigned line, col; const char *msg; } bad[] = {
                { "  SN-A: {hostname: x1}\n  SN-A: {hostname: x2}\n", 8, 3, "duplicate key 'SN-A' in nodes (first at line 7)" },
                { "  SN-A: {hostname: x1}\n  SN-B: {hostname: X1}\n", 8, 20,
                  "'hostname' of nodes row 'SN-B' is 'X1', the host name of row 'SN-A' (line 7) too (host names match in any case): two machines of one name" },
                { "  SN-A: {address: 10.0.0.5/24}\n  SN-B: {address: 10.0.0.5/8}\n", 8, 19,
                  "'address' of nodes row 'SN-B' is '10.0.0.5/8', the address of row 'SN-A' (line 7): two machines of one address" },
                { "  SN-A: {address: \"fd00::5/64\"}\n  SN-B: {address: \"fd00:0::5/64\"}\n", 8, 19,
                  "'address' of nodes row 'SN-B' is 'fd00:0::5/64', the address of row 'SN-A' (line 7): two machines of one address" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char text[1024];
                snprintf(text, sizeof text, "version: 1\ndisks: [{id: d}]\nnetwork: {bridges: [{name: cloudbr0, nic: {boot: true}, dhcp: true}]}\n"
                         "\n\nnodes:\n%s", bad[i].rows);
                _cleanup_spec_free_ struct spec *b = parse(text, &d);
                CHECK(b == NULL);
                CHECK_INT(d.n, 1);
                if (d.n == 1) {
                        CHECK_STR(d.items[0].message, bad[i].msg);
                        CHECK_INT(d.items[0].line, bad[i].line);
                        CHECK_INT(d.items[0].col, bad[i].col);
                }
                diags_clear(&d);
        }
}

int main(void) {
        test_nodes();
        test_device_waits();
        test_raid10_copies();
        test_hostname_rules();
        test_luks_lvm();
        test_lvm_luks();
        test_other_templates();
        test_inline();
        test_expand();
        test_generated_key();
        test_match_alternatives();
        test_luks_per_disk();
        test_boot_unlock();
        return TEST_DONE();
}
