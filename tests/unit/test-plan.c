/* plan_build() on small specs (read by spec_parse, as every spec is) and
 * hand-made inventories: disk selection,
 * refusals with their exact messages, step order for both stacking orders,
 * sizes, device names. The template plans against recorded inventories are
 * compared byte for byte in tests/host/test-plan.sh. */
#include "netconf.h"
#include "plan.h"
#include "tap.h"
#include <json-c/json.h>

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)
#define S(x) ((char *) (x))

static struct inv_disk disk(const char *name, uint64_t size, bool rot, const char *model, const char *serial) {
        static char paths[16][32];
        static unsigned n;
        char *p = paths[n++ % 16];
        snprintf(p, 32, "/dev/%s", name);
        return (struct inv_disk) {
                .name = S(name), .path = p, .size = size, .logical_sector = 512, .physical_sector = 512,
                .rotational = rot, .model = S(model), .serial = S(serial), .transport = S("virtio"),
        };
}

static struct inventory inv5(struct inv_disk *d) {
        /* deliberately not in path order: the planner sorts */
        d[0] = disk("vdc", 2 * GiB, true, "QEMU HARDDISK", "S3");
        d[1] = disk("vda", 2 * GiB, true, "QEMU HARDDISK", "S1");
        d[2] = disk("vde", 1 * GiB, false, "QEMU SSD", "S5");
        d[3] = disk("vdb", 2 * GiB, true, "QEMU HARDDISK", "S2");
        d[4] = disk("vdd", 2 * GiB, true, "QEMU HARDDISK", "S4");
        return (struct inventory) { .hostname = S("node"), .disks = d, .n_disks = 5 };
}

/* The spec from YAML text, through the parser that sets every default. */
static struct spec *parse(const char *text) {
        struct diags d = {};
        struct spec *s = NULL;
        if (spec_parse("t.yaml", text, strlen(text), &s, &d) < 0)
                diags_print(&d, stderr);
        diags_clear(&d);
        CHECK(s != NULL);
        return s;
}

static int build(const struct spec *s, const struct inventory *inv, struct plan **p, struct diags *d) {
        diags_clear(d);
        return plan_build(s, inv, p, d);
}

static void check_one_diag(struct diags *d, unsigned line, const char *msg) {
        CHECK_INT(d->n, 1);
        if (d->n >= 1) {
                CHECK_STR(d->items[0].message, msg);
                CHECK_INT(d->items[0].line, line);
        }
}

static size_t find_step(const struct plan *p, enum plan_step_kind k, const char *device) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == k && (!device || (p->steps[i].device && streq(p->steps[i].device, device))))
                        return i;
        return SIZE_MAX;
}

/* The KVM host layout: four disks, RAID1 /boot, raid10 f2 data, LUKS, LVM on top. */
static void test_kvm_layout(void) {
        struct inv_disk dd[5];
        struct inventory inv = inv5(dd);
#define KVM_HEAD "version: 1\n" \
                 "hostname: kvm-1\n" \
                 "disks:\n" \
                 "  - {id: d, match: {min_size: 2G, rotational: true}, count: 4, wipe: true}\n" \
                 "partitions:\n" \
                 "  - {id: bios, on: d, size: 1M, type: bios_grub}\n" \
                 "  - {id: boot, on: d, size: 256M, type: raid}\n" \
                 "  - {id: data, on: d, size: rest, type: raid}\n" \
                 "raid:\n" \
                 "  - {id: md0, level: 1, members: boot, metadata: \"1.0\"}\n" \
                 "  - {id: md1, level: 10, layout: f2, chunk: 256K, members: data}\n" \
                 "luks:\n" \
                 "  - {id: crypted, on: md1, sector_size: 4096, key: {passphrase: k7Tq9wLm2Vxr}}\n" \
                 "lvm:\n" \
                 "  - {id: vg0, name: crypted_vg, pvs: [crypted]}\n" \
                 "filesystems:\n" \
                 "  - {on: images, type: xfs, mount: /var/lib/libvirt/images}\n" \
                 "  - {on: md0, type: ext4, mount: /boot}\n" \
                 "  - {on: root, type: xfs, mount: /}\n" \
                 "finish: reboot\n"
        struct diags d = {};
        struct plan *p = NULL;

        /* 100%FREE before a fixed LV: the fixed one can never fit, and the spec says so before any plan */
        static const char bad_text[] = KVM_HEAD "bench: {}\nvolumes:\n"
                                       "  - {id: images, vg: vg0, size: 100%FREE}\n"
                                       "  - {id: root, vg: vg0, size: 1G}\n";
        struct spec *bad = NULL;
        CHECK_INT(spec_parse("t.yaml", bad_text, strlen(bad_text), &bad, &d), -EINVAL);
        CHECK(bad == NULL);
        check_one_diag(&d, 24, "volume 'root' follows volume 'images', which takes all free space of volume group 'vg0'");
        diags_clear(&d);

#define KVM_VOLUMES "volumes:\n" \
                    "  - {id: root, vg: vg0, size: 1G}\n" \
                    "  - {id: images, vg: vg0, size: 100%FREE}\n"
        _cleanup_spec_free_ struct spec *sp = parse(KVM_HEAD "bench: {}\n" KVM_VOLUMES);
        if (!sp)
                return;
        struct spec_disk *disks = sp->disks;
        struct spec_partition *parts = sp->partitions;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        CHECK_INT(d.n, 0);
        if (!p)
                return;
        static const enum plan_step_kind want[] = {
                PLAN_PARTITION, PLAN_PARTITION, PLAN_PARTITION, PLAN_PARTITION,
                PLAN_MD_CREATE, PLAN_MD_CREATE, PLAN_BENCH_RAW, PLAN_LUKS_FORMAT, PLAN_LUKS_OPEN, PLAN_BENCH_CRYPT,
                PLAN_PVCREATE, PLAN_VGCREATE, PLAN_LVCREATE, PLAN_LVCREATE,
                PLAN_MKFS, PLAN_MKFS, PLAN_MKFS, PLAN_MOUNT, PLAN_MOUNT, PLAN_MOUNT, PLAN_CONFIGURE, PLAN_FINISH,
        };
        CHECK_INT(p->n_steps, ELEMENTSOF(want));
        for (size_t i = 0; i < p->n_steps && i < ELEMENTSOF(want); i++)
                CHECK_STR(plan_step_kind_name(p->steps[i].kind), plan_step_kind_name(want[i]));

        /* sorted by path, vde (1 GiB, not rotational) not selected */
        CHECK_INT(p->n_disks, 4);
        CHECK_STR(p->disks[0].disk->path, "/dev/vda");
        CHECK_STR(p->disks[3].disk->path, "/dev/vdd");
        CHECK_STR(p->steps[0].device, "/dev/vda");
        CHECK_INT(p->steps[0].n_parts, 3);
        CHECK_STR(p->steps[0].parts[2].device, "/dev/vda3");
        CHECK_U64(p->steps[0].parts[0].start, MiB);
        CHECK_U64(p->steps[0].parts[0].size, MiB);
        CHECK_U64(p->steps[0].parts[1].start, 2 * MiB);
        CHECK_U64(p->steps[0].parts[1].size, 256 * MiB);
        CHECK_U64(p->steps[0].parts[2].start, 258 * MiB);
        /* 2 GiB minus the backup GPT, aligned down: the last MiB is lost */
        CHECK_U64(p->steps[0].parts[2].size, 2 * GiB - MiB - 258 * MiB);

        const struct plan_step *md1 = &p->steps[5];
        CHECK_STR(md1->device, "/dev/md/md1");
        CHECK_STR(md1->id, "md1");
        CHECK_INT(strv_length(md1->inputs), 4);
        CHECK_STR(md1->inputs[0], "/dev/vda3");
        CHECK_STR(md1->inputs[3], "/dev/vdd3");
        CHECK(md1->size_approx);
        CHECK_STR(md1->description, "create raid10 /dev/md/md1 layout f2 chunk 256 KiB metadata 1.2 from 4 devices: "
                                    "/dev/vda3 /dev/vdb3 /dev/vdc3 /dev/vdd3 (~3.4 GiB)");
        CHECK_STR(p->steps[6].device, "/dev/md/md1");
        CHECK_STR(p->steps[7].device, "/dev/md/md1");
        CHECK_STR(p->steps[7].destroys, "contents of /dev/md/md1");
        CHECK_STR(p->steps[8].device, "/dev/mapper/crypted");
        CHECK_STR(p->steps[9].device, "/dev/mapper/crypted");
        CHECK_STR(p->steps[10].device, "/dev/mapper/crypted");
        CHECK_STR(p->steps[11].device, "/dev/crypted_vg");
        CHECK_STR(p->steps[12].device, "/dev/crypted_vg/root");
        CHECK_STR(p->steps[13].device, "/dev/crypted_vg/images");
        /* mounts: / first, then /boot, then the deeper one */
        CHECK_STR(p->steps[17].description, "mount /dev/crypted_vg/root on /target (defaults)");
        CHECK_STR(p->steps[18].description, "mount /dev/md/md0 on /target/boot (defaults)");
        CHECK_STR(p->steps[19].device, "/dev/crypted_vg/images");

        _cleanup_strbuf_ struct strbuf text = STRBUF_INIT, json = STRBUF_INIT;
        CHECK_INT(plan_to_text(p, &text), 0);
        CHECK_INT(plan_to_json(p, &json), 0);
        if (getenv("PLAN_PRINT"))
                fprintf(stderr, "%s%s", strbuf_str(&text), strbuf_str(&json));
        /* the fifth disk is listed as untouched and appears in no step */
        CHECK(strstr(strbuf_str(&text), "  /dev/vde  1 GiB  virtio  ssd  model 'QEMU SSD'  serial 'S5': untouched\n") != NULL);
        for (size_t i = 0; i < p->n_steps; i++) {
                CHECK(!p->steps[i].device || !strstr(p->steps[i].device, "vde"));
                CHECK(!strstr(p->steps[i].description, "vde"));
                for (size_t k = 0; p->steps[i].inputs && p->steps[i].inputs[k]; k++)
                        CHECK(!strstr(p->steps[i].inputs[k], "vde"));
        }
        CHECK(strstr(strbuf_str(&json), "\"kind\":\"md-create\"") != NULL);
        /* the JSON parses and says the same as the steps */
        json_object *o = json_tokener_parse(strbuf_str(&json)), *steps = NULL, *disks_j = NULL;
        CHECK(o != NULL);
        CHECK(json_object_object_get_ex(o, "steps", &steps) && json_object_array_length(steps) == p->n_steps);
        CHECK(json_object_object_get_ex(o, "disks", &disks_j) && json_object_array_length(disks_j) == 5);
        for (size_t i = 0; steps && i < p->n_steps && i < json_object_array_length(steps); i++) {
                json_object *st = json_object_array_get_idx(steps, i), *k = NULL, *dev = NULL;
                CHECK(json_object_object_get_ex(st, "kind", &k));
                CHECK_STR(json_object_get_string(k), plan_step_kind_name(p->steps[i].kind));
                json_object_object_get_ex(st, "device", &dev);
                if (p->steps[i].device)
                        CHECK_STR(json_object_get_string(dev), p->steps[i].device);
        }
        json_object_put(o);
        p = plan_free(p);

        /* with tuning, the benchmark picks the cipher at run time: the plan says so, not the spec's cipher */
        _cleanup_spec_free_ struct spec *tuned = parse(KVM_HEAD KVM_VOLUMES "bench: {tune: true, ciphers: "
                                                       "[\"aes-xts-plain64:512\", \"xchacha12,aes-adiantum-plain64:256\"]}\n");
        if (tuned && build(tuned, &inv, &p, &d) == 0 && p)
                CHECK_STR(p->steps[7].description,
                          "luksFormat /dev/md/md1 as LUKS2: cipher and key size chosen at run time by the benchmark among "
                          "'aes-xts-plain64:512', 'xchacha12,aes-adiantum-plain64:256' (tuning may turn the workqueues "
                          "off), sector 4096, pbkdf argon2id, passphrase from the spec");
        else
                CHECK(!"the tuned spec plans");
        p = plan_free(p);
        /* tuning without candidates: the LUKS object's own cipher, the one the benchmark measures */
        _cleanup_spec_free_ struct spec *own = parse(KVM_HEAD KVM_VOLUMES "bench: {tune: true}\n");
        if (own) {
                CHECK_STR(own->luks[0].bench_ciphers[0], "aes-xts-plain64:512");
                CHECK(own->luks[0].bench_ciphers[1] == NULL);
        }
        _cleanup_spec_free_ struct spec *serpent = parse(
                "version: 1\ndisks: [{id: d, count: 1, wipe: true}]\n"
                "luks: [{id: c, on: d, cipher: serpent-xts-plain64, key_size: 256, key: {passphrase: k7Tq9wLm2Vxr}}]\n"
                "filesystems: [{on: c, type: xfs, mount: /}]\nbench: {tune: true}\n");
        struct inv_disk one[1] = { disk("vda", 10 * GiB, true, "m", "s") };
        struct inventory inv1 = { .disks = one, .n_disks = 1 };
        if (serpent && build(serpent, &inv1, &p, &d) == 0 && p) {
                size_t k = find_step(p, PLAN_LUKS_FORMAT, NULL);
                CHECK(k != SIZE_MAX);
                if (k != SIZE_MAX)
                        CHECK(strstr(p->steps[k].description, "benchmark among 'serpent-xts-plain64:256' (tuning") != NULL);
        } else
                CHECK(!"the serpent spec plans");
        p = plan_free(p);

        /* four disks but one holds an old array: with wipe, a wipe step first */
        struct inv_signature sig_gpt = { .type = S("gpt"), .offset = 512 };
        struct inv_signature sig_md = { .type = S("linux_raid_member"), .label = S("old:1"), .offset = 4096 };
        char *holders[] = { S("md127"), NULL };
        struct inv_partition oldp = { .name = S("vdb1"), .path = S("/dev/vdb1"), .number = 1, .sigs = &sig_md, .n_sigs = 1, .holders = holders };
        dd[3].sigs = &sig_gpt;
        dd[3].n_sigs = 1;
        dd[3].parts = &oldp;
        dd[3].n_parts = 1;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        if (p) {
                CHECK_INT(p->steps[0].kind, PLAN_WIPE);
                CHECK_STR(p->steps[0].device, "/dev/vdb");
                CHECK_STR(p->steps[0].inputs[0], "/dev/md127");
                CHECK_STR(p->steps[0].description, "wipe /dev/vdb: stop /dev/md127, then remove 2 signatures");
                CHECK_STR(p->steps[0].destroys, "gpt at offset 512, linux_raid_member 'old:1' on /dev/vdb1 at offset 4096; "
                                                "all data on /dev/md127");
                CHECK_INT(p->steps[1].kind, PLAN_PARTITION);
                p = plan_free(p);
        }

        /* without wipe: refused, naming the holder */
        disks[0].wipe = false;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' selects /dev/vdb, which is in use by /dev/md127; set 'wipe: true' to stop it and wipe the disk");
        /* signatures only, no holder, no wipe: refused with types and offsets */
        oldp.holders = NULL;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' selects /dev/vdb, which holds signatures (gpt at offset 512, "
                              "linux_raid_member 'old:1' on /dev/vdb1 at offset 4096); set 'wipe: true' to destroy them");
        /* mounted: refused even with wipe */
        disks[0].wipe = true;
        oldp.mountpoint = S("/mnt");
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' selects /dev/vdb, which is mounted (/dev/vdb1 on /mnt); kiln never touches a mounted disk");
        CHECK(p == NULL);
        dd[3].n_sigs = 0;
        dd[3].n_parts = 0;
        /* a disk the inventory could not probe: refused even with wipe */
        dd[3].unreadable = true;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' selects /dev/vdb, which could not be read: its signatures are unknown, so kiln will not touch it");
        dd[3].unreadable = false;

        /* partitions that do not fit */
        parts[1].size.bytes = 2 * GiB;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        CHECK_INT(d.n, 4);
        CHECK_STR(d.items[0].message, "partitions on /dev/vda (disk rule 'd') need 2049 MiB but only 2046 MiB is usable: 'bios' 1 MiB, 'boot' 2 GiB, 'data' rest");
        parts[1].size.bytes = 2046 * MiB - MiB;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        CHECK_STR(d.n ? d.items[0].message : "", "no space left on /dev/vda (disk rule 'd') for partition 'data' (size rest): 'bios' 1 MiB, 'boot' 2045 MiB, 'data' rest");
        parts[1].size.bytes = 256 * MiB;

        /* wrong count: ask for five rotational disks */
        disks[0].count = 5;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' must match exactly 5 disks but matches 4 (/dev/vda, /dev/vdb, /dev/vdc, /dev/vdd); "
                              "/dev/vde size 1 GiB is below min_size 2 GiB");
        disks[0].count = 3;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 4, "disk rule 'd' must match exactly 3 disks but matches 4 (/dev/vda, /dev/vdb, /dev/vdc, /dev/vdd); narrow the rule or raise its count");
        disks[0].count = 4;
        diags_clear(&d);
}

/* LVM on md, LUKS on a logical volume, filesystem on the LUKS device. */
static void test_lvm_then_luks(void) {
        struct inv_disk dd[5];
        struct inventory inv = inv5(dd);
        _cleanup_spec_free_ struct spec *sp = parse(
                "version: 1\n"
                "disks: [{id: d, match: {model: \"QEMU HARD*\"}, count: 4}]\n"
                "partitions: [{id: data, on: d, size: 50%, type: raid}]\n"
                "raid: [{id: md1, level: 10, layout: n2, members: data}]\n"
                "lvm: [{id: vg0, pvs: [md1]}]\n"
                "volumes:\n"
                "  - {id: swap, vg: vg0, size: 100M}\n"
                "  - {id: rootlv, vg: vg0, size: 50%FREE}\n"
                "luks: [{id: root, on: rootlv, key: {passphrase: k7Tq9wLm2Vxr}}]\n"
                "filesystems:\n"
                "  - {on: root, type: ext4, mount: /}\n"
                "  - {on: swap, type: swap}\n"
                "register: {webhook: {url: \"http://127.0.0.1:1/hook\"}}\n");
        if (!sp)
                return;
        struct diags d = {};
        _cleanup_plan_free_ struct plan *p = NULL;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        CHECK_INT(d.n, 0);
        if (!p)
                return;
        static const enum plan_step_kind want[] = {
                PLAN_PARTITION, PLAN_PARTITION, PLAN_PARTITION, PLAN_PARTITION, PLAN_MD_CREATE,
                PLAN_PVCREATE, PLAN_VGCREATE, PLAN_LVCREATE, PLAN_LVCREATE, PLAN_LUKS_FORMAT, PLAN_LUKS_OPEN,
                PLAN_MKFS, PLAN_MKFS, PLAN_MOUNT, PLAN_CONFIGURE, PLAN_REGISTER, PLAN_FINISH,
        };
        CHECK_INT(p->n_steps, ELEMENTSOF(want));
        for (size_t i = 0; i < p->n_steps && i < ELEMENTSOF(want); i++)
                CHECK_STR(plan_step_kind_name(p->steps[i].kind), plan_step_kind_name(want[i]));
        CHECK_U64(p->steps[0].parts[0].size, 1 * GiB);
        CHECK_STR(p->steps[5].device, "/dev/md/md1");
        CHECK_STR(p->steps[9].device, "/dev/vg0/rootlv");
        CHECK_STR(p->steps[10].device, "/dev/mapper/root");
        CHECK_STR(p->steps[11].description, "mkfs ext4 on /dev/mapper/root");
        CHECK_STR(p->steps[12].description, "mkswap swap on /dev/vg0/swap");
        CHECK_STR(p->steps[13].description, "mount /dev/mapper/root on /target (defaults)");
        CHECK_STR(p->steps[16].description, "mark /dev/vda /dev/vdb /dev/vdc /dev/vdd as a finished kiln install "
                                            "(GPT disk GUID), then stay up (finish: none)");
        /* the disks it marks are the finish step's inputs: the disks partitioned */
        CHECK(p->steps[16].inputs && strv_length(p->steps[16].inputs) == 4);
        CHECK(find_step(p, PLAN_BENCH_RAW, NULL) == SIZE_MAX);
}

static void test_selection(void) {
        struct inv_disk dd[3];
        char *byid0[] = { S("nvme-Samsung_SSD_980_S1"), NULL };
        dd[0] = disk("nvme0n1", 500 * GiB, false, "Samsung SSD 980", "S1");
        dd[0].transport = S("nvme");
        dd[0].by_id = byid0;
        dd[0].wwn = S("eui.0025385b71b0a1b2");
        dd[1] = disk("sda", 4096 * GiB, true, "ST4000NM0035", "ZC1");
        dd[2] = disk("sdb", 4096 * GiB, true, "ST4000NM0035", "ZC2");
        struct inventory inv = { .disks = dd, .n_disks = 3 };
#define SEL_DISKS(sys) "version: 1\n" \
                       "disks:\n" \
                       "  - {id: sys, match: " sys "}\n" \
                       "  - {id: hdd, match: {model: \"ST4000*\"}, count: 2}\n"
#define SEL_REST "partitions:\n" \
                 "  - {id: esp, on: sys, size: 512M, type: esp}\n" \
                 "  - {id: os, on: sys, size: rest, type: linux}\n" \
                 "raid: [{id: r, level: 1, members: hdd}]\n" \
                 "filesystems:\n" \
                 "  - {on: os, type: xfs, mount: /}\n" \
                 "  - {on: esp, type: vfat, mount: /boot/efi}\n"
        _cleanup_spec_free_ struct spec *by_id = parse(SEL_DISKS("{by_id: /dev/disk/by-id/nvme-Samsung_SSD_980_S1}") SEL_REST);
        _cleanup_spec_free_ struct spec *all = parse(
                SEL_DISKS("{by_id: nvme-Samsung_SSD_980_S1, serial: S1, wwn: \"0x0025385B71B0A1B2\", transport: NVMe}") SEL_REST);
        _cleanup_spec_free_ struct spec *wrong = parse(
                SEL_DISKS("{by_id: /dev/disk/by-id/nvme-Samsung_SSD_980_S1, serial: S9}") SEL_REST);
        _cleanup_spec_free_ struct spec *twice = parse(
                SEL_DISKS("{by_id: /dev/disk/by-id/nvme-Samsung_SSD_980_S1}") "  - {id: extra, match: {serial: ZC2}}\n" SEL_REST);
        if (!by_id || !all || !wrong || !twice)
                return;
        struct diags d = {};
        struct plan *p = NULL;
        CHECK_INT(build(by_id, &inv, &p, &d), 0);
        if (p) {
                CHECK_STR(p->steps[0].parts[1].device, "/dev/nvme0n1p2");
                CHECK_STR(p->steps[1].description, "create raid1 /dev/md/r metadata 1.2 from 2 devices: /dev/sda /dev/sdb (~3.9 TiB)");
                p = plan_free(p);
        }
        /* by-id without the prefix, serial, wwn (prefix-insensitive), transport */
        CHECK_INT(build(all, &inv, &p, &d), 0);
        p = plan_free(p);
        CHECK_INT(build(wrong, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 3, "disk rule 'sys' must match exactly 1 disk but matches 0 (none); /dev/nvme0n1 serial is 'S1', not 'S9'; "
                              "/dev/sda has no /dev/disk/by-id/nvme-Samsung_SSD_980_S1; /dev/sdb has no /dev/disk/by-id/nvme-Samsung_SSD_980_S1");

        /* ambiguous: a rule for one ST4000 by serial overlaps the model rule */
        CHECK_INT(build(twice, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 5, "disk /dev/sdb is matched by both disk rules 'hdd' and 'extra'; a disk may belong to one rule only");
        diags_clear(&d);
}

static void test_lv_overflow(void) {
        struct inv_disk dd[1] = { disk("vda", 10 * GiB, true, "m", "s") };
        struct inventory inv = { .disks = dd, .n_disks = 1 };
        _cleanup_spec_free_ struct spec *sp = parse(
                "version: 1\n"
                "disks: [{id: d}]\n"
                "lvm: [{id: vg, pvs: [d]}]\n"
                "volumes:\n"
                "  - {id: a, vg: vg, size: 6G}\n"
                "  - {id: b, vg: vg, size: 6G}\n");
        if (!sp)
                return;
        struct diags d = {};
        struct plan *p = NULL;
        CHECK_INT(build(sp, &inv, &p, &d), -EPERM);
        check_one_diag(&d, 6, "logical volume 'b' (6 GiB) does not fit in volume group 'vg': at most 4 GiB is left free");
        sp->lvs[1].size.bytes = 3 * GiB;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        if (p) {
                CHECK_STR(p->steps[0].description, "pvcreate /dev/vda");
                CHECK_STR(p->steps[1].description, "vgcreate vg from /dev/vda (10236 MiB)");
                p = plan_free(p);
        }
        diags_clear(&d);
}

/* raid5 and raid6 capacity, partitions by percent, a label that needs JSON escaping */
static void test_levels(void) {
        struct inv_disk dd[4] = {
                disk("sda", 100 * GiB, true, "m", "1"), disk("sdb", 100 * GiB, true, "m", "2"),
                disk("sdc", 100 * GiB, true, "m", "3"), disk("sdd", 100 * GiB, true, "m", "4"),
        };
        struct inventory inv = { .disks = dd, .n_disks = 4 };
        _cleanup_spec_free_ struct spec *sp = parse(
                "version: 1\n"
                "disks: [{id: d, count: 4}]\n"
                "partitions:\n"
                "  - {id: a, on: d, size: 25%, type: raid}\n"
                "  - {id: b, on: d, size: 25%, type: raid}\n"
                "  - {id: c, on: d, size: rest, type: raid}\n"
                "raid:\n"
                "  - {id: r5, level: 5, members: a}\n"
                "  - {id: r6, level: 6, members: b}\n"
                "  - {id: r10, level: 10, layout: o3, members: c, spares: 1}\n"
                "filesystems:\n"
                "  - {on: r5, type: ext4, label: \"a\\\"b\", mount: /srv/a/b}\n"
                "  - {on: r6, type: xfs, mount: /srv}\n");
        if (!sp)
                return;
        struct diags d = {};
        _cleanup_plan_free_ struct plan *p = NULL;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        if (!p)
                return;
        CHECK_U64(p->steps[0].parts[0].size, 25 * GiB);
        CHECK_U64(p->steps[0].parts[1].start, 25 * GiB + MiB);
        CHECK_U64(p->steps[0].parts[2].size, 50 * GiB - 2 * MiB);
        /* raid5 of 4x25G: 3x; raid6: 2x; raid10 o3 over 3 active (1 spare): 1x (less the md reserve) */
        CHECK(p->steps[4].size <= 75 * GiB && p->steps[4].size > 74 * GiB);
        CHECK(p->steps[5].size <= 50 * GiB && p->steps[5].size > 49 * GiB);
        CHECK(p->steps[6].size <= 50 * GiB - 2 * MiB && p->steps[6].size > 49 * GiB);
        CHECK_STR(p->steps[6].description, "create raid10 /dev/md/r10 layout o3 metadata 1.2 from 3 devices: "
                                           "/dev/sda3 /dev/sdb3 /dev/sdc3, spares: /dev/sdd3 (~49.9 GiB)");
        CHECK_STR(p->steps[9].description, "mount /dev/md/r6 on /target/srv (defaults)");
        CHECK_STR(p->steps[10].description, "mount /dev/md/r5 on /target/srv/a/b (defaults)");
        _cleanup_strbuf_ struct strbuf json = STRBUF_INIT;
        CHECK_INT(plan_to_json(p, &json), 0);
        json_object *o = json_tokener_parse(strbuf_str(&json));
        CHECK(o != NULL);
        json_object_put(o);
        CHECK(strstr(strbuf_str(&json), "label 'a\\\"b'") != NULL);
        diags_clear(&d);
}

/* the mount order's one rule: path components, "/" = 0 */
static void test_mount_depth(void) {
        CHECK_INT(plan_mount_depth("/"), 0);
        CHECK_INT(plan_mount_depth("/boot"), 1);
        CHECK_INT(plan_mount_depth("/var/lib/libvirt/images"), 4);
        CHECK_INT(plan_mount_depth("/var//lib/"), 2);
}

/* Device waits (docs/spec.md "Device waits"): the plan decides the whole
 * fourth field of every fstab and crypttab line. Only what the node cannot
 * run without is required; a volume the initramfs opens gets noauto and no
 * systemd option; the spec's device_timeout replaces the 5 min default. */
static const char *luks_options(const struct plan *p, const char *name) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == PLAN_LUKS_FORMAT && streq(p->steps[i].luks.name, name))
                        return p->steps[i].luks.crypttab_options;
        return "(none)";
}

static const char *mount_options(const struct plan *p, const char *path) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].kind == PLAN_MOUNT && streq(p->steps[i].fs.mountpoint, path))
                        return p->steps[i].fs.fstab_options;
        return "(none)";
}

static void test_device_waits(void) {
        struct inv_disk dd[5];
        struct inventory inv = inv5(dd);
        static const char base[] =
                "version: 1\n"
                "%s"
                "disks: [{id: d, match: {model: \"QEMU HARD*\"}, count: 4}]\n"
                "partitions:\n"
                "  - {id: boot, on: d, size: 64M, type: raid}\n"
                "  - {id: data, on: d, size: rest, type: raid}\n"
                "raid:\n"
                "  - {id: md-boot, level: 1, members: boot, metadata: \"1.0\"}\n"
                "  - {id: md0, level: 10, members: data}\n"
                "lvm: [{id: vg0, pvs: [md0]}]\n"
                "volumes:\n"
                "  - {id: root, vg: vg0, size: 256M}\n"
                "  - {id: swap, vg: vg0, size: 64M}\n"
                "  - {id: var, vg: vg0, size: 256M}\n"
                "  - {id: images, vg: vg0, size: 100%%FREE}\n"
                "luks:\n"
                "  - {id: croot, on: root, discard: true, key: {passphrase: k7Tq9wLm2Vxr}}\n"
                "  - {id: cvar, on: var, key: {passphrase: k7Tq9wLm2Vxr}}\n"
                "  - {id: cimages, on: images, key: {passphrase: k7Tq9wLm2Vxr}}\n"
                "filesystems:\n"
                "  - {on: md-boot, type: ext4, mount: /boot}\n"
                "  - {on: croot, type: xfs, mount: /, mount_options: noatime}\n"
                "  - {on: cvar, type: xfs, mount: /var, required: true}\n"
                "  - {on: cimages, type: xfs, mount: /var/lib/libvirt/images}\n"
                "  - {on: swap, type: swap}\n";
        for (int timed = 0; timed <= 1; timed++) {
                char text[4096];
                snprintf(text, sizeof text, base, timed ? "device_timeout: 10min\n" : "");
                _cleanup_spec_free_ struct spec *sp = parse(text);
                if (!sp)
                        return;
                CHECK_INT(sp->device_timeout, timed ? 600 : SPEC_DEVICE_TIMEOUT_S);
                struct diags d = {};
                _cleanup_plan_free_ struct plan *p = NULL;
                CHECK_INT(build(sp, &inv, &p, &d), 0);
                if (!p)
                        return;
                const char *t = timed ? "600s" : "300s";
                char want[256];
                /* under /: opened by the initramfs, not waited for again */
                CHECK_STR(luks_options(p, "croot"), "luks,discard,noauto");
                /* under a required /var: systemd opens it, and must */
                snprintf(want, sizeof want, "luks,x-systemd.device-timeout=%s", t);
                CHECK_STR(luks_options(p, "cvar"), want);
                /* under the image store: nofail, the node boots without it */
                snprintf(want, sizeof want, "luks,nofail,x-systemd.device-timeout=%s", t);
                CHECK_STR(luks_options(p, "cimages"), want);
                snprintf(want, sizeof want, "noatime,x-systemd.device-timeout=%s", t);
                CHECK_STR(mount_options(p, "/"), want);
                snprintf(want, sizeof want, "defaults,x-systemd.device-timeout=%s", t);
                CHECK_STR(mount_options(p, "/boot"), want);
                CHECK_STR(mount_options(p, "/var"), want);
                snprintf(want, sizeof want, "defaults,nofail,x-systemd.device-timeout=%s", t);
                CHECK_STR(mount_options(p, "/var/lib/libvirt/images"), want);
                /* what the install mounts with stays the spec's */
                size_t m = find_step(p, PLAN_MOUNT, "/dev/mapper/croot");
                CHECK(m != SIZE_MAX);
                if (m != SIZE_MAX)
                        CHECK_STR(p->steps[m].fs.options, "noatime");
                size_t w = find_step(p, PLAN_MKFS, "/dev/vg0/swap");
                CHECK(w != SIZE_MAX);
                snprintf(want, sizeof want, "sw,nofail,x-systemd.device-timeout=%s", t);
                if (w != SIZE_MAX)
                        CHECK_STR(p->steps[w].fs.fstab_options, want);
        }
        /* a filesystem's own device_timeout: its fstab line (and an
         * encrypted swap's crypttab line), and the LUKS volume under it
         * when nothing else sits there */
        {
                char text[4096];
                snprintf(text, sizeof text, base, "device_timeout: 10min\n");
                char *images = strstr(text, "mount: /var/lib/libvirt/images}");
                char *swap = strstr(text, "type: swap}");
                if (!images || !swap)
                        return;
                static const char own_images[] = "mount: /var/lib/libvirt/images, device_timeout: 20s}\n"
                                                 "  - {on: swap, type: swap, device_timeout: 1min}\n";
                memcpy(images, own_images, sizeof own_images);
                _cleanup_spec_free_ struct spec *sp = parse(text);
                if (!sp)
                        return;
                struct diags d = {};
                _cleanup_plan_free_ struct plan *p = NULL;
                CHECK_INT(build(sp, &inv, &p, &d), 0);
                if (!p)
                        return;
                CHECK_STR(mount_options(p, "/var/lib/libvirt/images"), "defaults,nofail,x-systemd.device-timeout=20s");
                /* the LUKS under the image store alone waits as long as it */
                CHECK_STR(luks_options(p, "cimages"), "luks,nofail,x-systemd.device-timeout=20s");
                CHECK_STR(luks_options(p, "cvar"), "luks,x-systemd.device-timeout=600s");
                CHECK_STR(mount_options(p, "/"), "noatime,x-systemd.device-timeout=600s");
                size_t w = find_step(p, PLAN_MKFS, "/dev/vg0/swap");
                CHECK(w != SIZE_MAX);
                if (w != SIZE_MAX)
                        CHECK_STR(p->steps[w].fs.fstab_options, "sw,nofail,x-systemd.device-timeout=60s");
        }
        /* Tang-bound or per disk: the initramfs opens it, whatever sits above */
        _cleanup_spec_free_ struct spec *sp = parse(
                "version: 1\n"
                "disks: [{id: d, match: {model: \"QEMU HARD*\"}, count: 4}]\n"
                "partitions: [{id: data, on: d, size: rest}]\n"
                "luks: [{id: c, on: data, key: {passphrase: k7Tq9wLm2Vxr}}]\n"
                "raid: [{id: md0, level: 10, members: c}]\n"
                "filesystems: [{on: md0, type: xfs, mount: /srv}]\n");
        if (!sp)
                return;
        struct diags d = {};
        _cleanup_plan_free_ struct plan *p = NULL;
        CHECK_INT(build(sp, &inv, &p, &d), 0);
        if (p) {
                CHECK_STR(luks_options(p, "c-0"), "luks,initramfs,noauto");
                CHECK_STR(luks_options(p, "c-3"), "luks,initramfs,noauto");
                CHECK_STR(mount_options(p, "/srv"), "defaults,nofail,x-systemd.device-timeout=300s");
        }
}

/* nodes: the row for a machine is its boot MAC's (in any case), else its
 * serial's (a placeholder serial has none), else the default row; the
 * hostname and cloudbr0's address come from it. */
static void test_nodes_row(void) {
        _cleanup_spec_free_ struct spec *s = parse(
                "version: 1\nhostname: kvm-${serial}\ndisks: [{id: d, path: /dev/vda, wipe: true}]\n"
                "filesystems: [{on: d, type: ext4, mount: /}]\n"
                "network: {bridges: [{name: cloudbr0, nic: {boot: true}, dhcp: true}]}\n"
                "nodes:\n"
                "  \"52:54:00:AA:BB:CC\": {hostname: a1, address: 10.0.0.5/24, gateway: 10.0.0.1}\n"
                "  SN-7: {hostname: a2}\n"
                "  default: {hostname: \"spare-${mac:hexraw}\"}\n");
        if (!s)
                return;
        struct inv_disk dd[5];
        struct inventory inv = inv5(dd);
        struct inv_nic nic = { .name = S("eth0"), .mac = S("52:54:00:aa:bb:cc"), .up = true };
        inv.nics = &nic;
        inv.n_nics = 1;
        inv.serial = S("SN-7");
        struct diags d = {};
        struct plan *p = NULL;
        CHECK(plan_node_row(s, &inv) == &s->nodes[0]);
        CHECK_INT(build(s, &inv, &p, &d), 0);
        if (p) {
                CHECK_STR(p->hostname, "a1");
                CHECK(p->net && p->net->n_bridges == 1);
                if (p->net && p->net->n_bridges == 1) {
                        CHECK_STR(p->net->bridges[0].address, "10.0.0.5/24");
                        CHECK_STR(p->net->bridges[0].gateway, "10.0.0.1");
                }
        }
        p = plan_free(p);
        nic.mac = S("52:54:00:00:00:01");       /* another MAC: the serial's row */
        CHECK(plan_node_row(s, &inv) == &s->nodes[1]);
        CHECK_INT(build(s, &inv, &p, &d), 0);
        if (p) {
                CHECK_STR(p->hostname, "a2");
                CHECK(p->net && p->net->bridges[0].address == NULL);    /* DHCP: the row has no address */
        }
        p = plan_free(p);
        inv.serial = S("To be filled by O.E.M.");       /* a placeholder keys no row: the default */
        CHECK(plan_node_row(s, &inv) == &s->nodes[2]);
        CHECK_INT(build(s, &inv, &p, &d), 0);
        if (p)
                CHECK_STR(p->hostname, "spare-525400000001");
        p = plan_free(p);
        diags_clear(&d);
}

int main(void) {
        test_nodes_row();
        test_mount_depth();
        test_levels();
        test_kvm_layout();
        test_lvm_then_luks();
        test_selection();
        test_lv_overflow();
        test_device_waits();
        return TEST_DONE();
}
