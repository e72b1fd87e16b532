/* The inventory's JSON form round-trips byte for byte, loads into the
 * structures the planner reads, rejects bad files with a precise message,
 * and a recorded /sys tree is read the way a live one would be. */
#include "inventory.h"
#include "paths.h"
#include "probe.h"
#include "tap.h"

#include <dirent.h>

static char *src_path(const char *rel) {
        const char *src = getenv("SRC");
        char *p = NULL;
        if (asprintf(&p, "%s/%s", src ? src : ".", rel) < 0)
                abort();
        return p;
}

static void test_roundtrip_all(void) {
        _cleanup_free_ char *dir = src_path("tests/inventories");
        DIR *d = opendir(dir);
        CHECK(d != NULL);
        if (!d)
                return;
        unsigned files = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t n = strlen(de->d_name);
                if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
                        continue;
                files++;
                _cleanup_free_ char *p = NULL, *text = NULL;
                CHECK(asprintf(&p, "%s/%s", dir, de->d_name) > 0);
                size_t len = 0;
                CHECK_INT(read_full_file(p, 1 << 24, &text, &len), 0);
                _cleanup_inventory_free_ struct inventory *inv = NULL;
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                int r = inventory_load_json(p, &inv, &err);
                if (r < 0)
                        fprintf(stderr, "%s: %s\n", de->d_name, strbuf_why(&err, r));
                CHECK_INT(r, 0);
                if (r < 0)
                        continue;
                _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
                CHECK_INT(inventory_to_json(inv, &out), 0);
                if (!text || strcmp(strbuf_str(&out), text) != 0) {
                        fprintf(stderr, "%s does not round-trip\n", de->d_name);
                        CHECK(false);
                }
                /* and again through the structures: load(to_json(x)) == x */
                _cleanup_inventory_free_ struct inventory *again = NULL;
                CHECK_INT(inventory_from_json_string(strbuf_str(&out), out.len, &again, NULL), 0);
                _cleanup_strbuf_ struct strbuf out2 = STRBUF_INIT;
                if (again)
                        CHECK_INT(inventory_to_json(again, &out2), 0);
                CHECK_STR(strbuf_str(&out2), strbuf_str(&out));
                _cleanup_strbuf_ struct strbuf txt = STRBUF_INIT;
                CHECK_INT(inventory_to_text(inv, &txt), 0);
                CHECK(txt.len > 100);
        }
        closedir(d);
        CHECK(files >= 6);
}

static void test_qemu_fields(void) {
        _cleanup_free_ char *p = src_path("tests/inventories/qemu-4disk-dirty.json");
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        CHECK_INT(inventory_load(p, &inv, NULL), 0);
        if (!inv)
                return;
        CHECK_INT(inv->n_disks, 5);
        CHECK_STR(inventory_primary_mac(inv), "52:54:00:12:34:56");
        CHECK_INT(inv->cpus, 2);
        CHECK(inv->cpu_aes && !inv->cpu_vaes && inv->cpu_avx2);
        CHECK_STR(inv->disks[0].name, "vda");
        CHECK_STR(inv->disks[0].path, "/dev/vda");
        CHECK_U64(inv->disks[0].size, 2ull << 30);
        CHECK_STR(inv->disks[0].transport, "virtio");
        CHECK(!inv_disk_in_use(&inv->disks[0]));
        CHECK(inv_disk_has_signatures(&inv->disks[1]));
        CHECK_STR(inv->disks[1].sigs[0].type, "xfs");
        CHECK_STR(inv->disks[1].sigs[0].label, "olddata");
        CHECK_STR(inv->disks[2].sigs[0].type, "linux_raid_member");
        CHECK_U64(inv->disks[2].sigs[0].offset, 4096);
        CHECK(inv->disks[2].sigs[0].uuid != NULL);
        CHECK_U64(inv->disks[4].size, 1ull << 30);
}

static void test_junk_fields(void) {
        _cleanup_free_ char *p = src_path("tests/inventories/junk-box.json");
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        CHECK_INT(inventory_load(p, &inv, NULL), 0);
        if (!inv)
                return;
        unsigned ssd = 0, hdd = 0, usb = 0;
        for (size_t i = 0; i < inv->n_disks; i++) {
                const struct inv_disk *d = &inv->disks[i];
                if (d->removable && streq(d->transport, "usb"))
                        usb++;
                else if (d->rotational && d->size >= 1000000000000ull)
                        hdd++;
                else if (!d->rotational)
                        ssd++;
        }
        CHECK_INT(ssd, 2);
        CHECK_INT(hdd, 4);
        CHECK_INT(usb, 1);
        CHECK_STR(inv->disks[4].serial, inv->disks[5].serial);
        CHECK_STR(inv->disks[0].parts[2].sigs[0].type, "swap");
        CHECK_STR(inventory_primary_mac(inv), "d4:3d:7e:12:ab:cd");
}

static void test_bad_json(void) {
        static const struct { const char *text; int r; const char *msg; } cases[] = {
                { "{\"version\": 1, \"disks\": [{\"name\": \"vda\", \"size\": -1}]}", -EINVAL,
                  "disks[0].size: expected an unsigned integer" },
                { "{\"version\": 1, \"disks\": [{\"name\": \"vda\", \"path\": \"/dev/vda\", \"partitions\": [{\"name\": \"vda1\", \"start\": \"x\"}]}]}",
                  -EINVAL, "disks[0].partitions[0].start: expected an unsigned integer" },
                /* found by fuzz-inventory: resume compared a disk's missing path */
                { "{\"version\": 1, \"disks\": [{\"name\": \"vda\", \"size\": 1}]}", -EINVAL, "disks[0].path: missing" },
                { "{\"version\": 1, \"disks\": [{\"name\": \"vda\", \"sise\": 1}]}", -EINVAL, "disks[0].sise: unknown key" },
                { "{\"version\": 2}", -EINVAL, "version: unsupported inventory version (expected 1)" },
                { "{\"version\": 1, \"cpu\": {\"count\": true}}", -EINVAL, "cpu.count: expected an unsigned integer" },
                { "{\"version\": 1, \"nics\": [{\"mac\": \"52:54:00:12:34:56\"}]}", -EINVAL, "nics[0].name: missing" },
                { "{\"version\": 1, \"disks\": [{\"name\": \"vda\", \"logical_sector\": 4294967296}]}", -EINVAL,
                  "disks[0].logical_sector: number out of range" },
                { "{\"version\": 1,", -EBADMSG, NULL },
                { "[]", -EINVAL, ": expected an object" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_inventory_free_ struct inventory *inv = NULL;
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                int r = inventory_from_json_string(cases[i].text, strlen(cases[i].text), &inv, &err);
                CHECK_INT(r, cases[i].r);
                CHECK(inv == NULL);
                if (cases[i].msg)
                        CHECK_STR(strbuf_str(&err), cases[i].msg);
                else
                        CHECK(strncmp(strbuf_str(&err), "not valid JSON at byte ", 23) == 0);
        }
}

static void test_sysroot(void) {
        _cleanup_free_ char *root = src_path("tests/inventories/sysroot-mixed");
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        unsetenv("KILN_INVENTORY_INCLUDE_LOOP");
        CHECK_INT(inventory_load(root, &inv, NULL), 0);
        if (!inv)
                return;
        CHECK_STR(inv->hostname, "rec-node");
        CHECK_STR(inv->machine_uuid, "6b1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d");
        CHECK_STR(inv->serial, "QEMU-SERIAL-1");
        CHECK_STR(inv->cpu_model, "QEMU TCG CPU version 2.5+");
        CHECK_INT(inv->cpus, 2);
        CHECK_U64(inv->mem_total, 1006924ull * 1024);
        CHECK_U64(inv->mem_available, 884736ull * 1024);
        /* loop, zram, md and dm devices are not disks; an empty loop never is */
        CHECK_INT(inv->n_disks, 5);
        const char *names[] = { "nvme0n1", "sda", "sdb", "vda", "vdb" };
        for (size_t i = 0; i < inv->n_disks && i < ELEMENTSOF(names); i++)
                CHECK_STR(inv->disks[i].name, names[i]);
        if (inv->n_disks != 5)
                return;
        const struct inv_disk *nv = &inv->disks[0], *sda = &inv->disks[1], *usb = &inv->disks[2],
                              *vda = &inv->disks[3], *vdb = &inv->disks[4];
        CHECK_STR(nv->transport, "nvme");
        CHECK_STR(nv->model, "SAMSUNG MZVL2512HCJQ-00B00");
        CHECK_STR(nv->serial, "S675NX0T812345");
        CHECK_STR(nv->wwn, "eui.002538b811b2c3d4");
        CHECK_INT(strv_length(nv->holders), 1);
        CHECK_STR(nv->holders ? nv->holders[0] : NULL, "dm-0");
        CHECK(inv_disk_in_use(nv));
        CHECK_STR(sda->transport, "sata");
        CHECK_STR(sda->serial, "ZFL1A2B3");
        CHECK_STR(sda->wwn, "0x5000c500b1a2c3d4");
        CHECK_STR(sda->vendor, "ATA");
        CHECK_STR(sda->model, "ST2000DM008-2FR1");
        CHECK(sda->rotational);
        CHECK_INT(sda->physical_sector, 4096);
        CHECK_U64(sda->size, 3907029168ull * 512);
        CHECK_INT(strv_length(sda->by_id), 2);
        CHECK(!inv_disk_in_use(sda));
        CHECK_STR(usb->transport, "usb");
        CHECK(usb->removable);
        CHECK_STR(usb->vendor, "Kingston");
        CHECK_STR(vda->transport, "virtio");
        CHECK(vda->vendor == NULL);
        CHECK_STR(vda->serial, "QM00001");
        CHECK_INT(vda->n_parts, 2);
        CHECK_INT(strv_length(vda->by_id), 1);
        CHECK_STR(vda->by_id ? vda->by_id[0] : NULL, "virtio-QM00001");
        if (vda->n_parts == 2) {
                CHECK_STR(vda->parts[0].path, "/dev/vda1");
                CHECK_INT(vda->parts[0].number, 1);
                CHECK_U64(vda->parts[0].start, 2048ull * 512);
                CHECK_U64(vda->parts[0].size, 1048576ull * 512);
                CHECK_STR(vda->parts[0].holders ? vda->parts[0].holders[0] : NULL, "md0");
                CHECK_STR(vda->parts[1].mountpoint, "/mnt/old root");
        }
        CHECK(inv_disk_in_use(vda));
        /* the holders as the plan's wipe step stops them: /dev paths, each once */
        char **held = NULL;
        CHECK_INT(inv_disk_holders(vda, &held), 0);
        CHECK_INT(strv_length(held), 1);
        CHECK_STR(held ? held[0] : NULL, "/dev/md0");
        strv_free(held);
        held = NULL;
        CHECK_INT(inv_disk_holders(nv, &held), 0);
        CHECK_STR(held ? held[0] : NULL, "/dev/dm-0");
        strv_free(held);
        held = (char **) 1;
        CHECK_INT(inv_disk_holders(sda, &held), 0);
        CHECK(held == NULL);
        CHECK_INT(vdb->n_sigs, 1);
        CHECK_INT(inv_disk_count_signatures(vdb), 1);
        CHECK(inv_disk_has_signatures(vdb));
        CHECK_INT(inv_disk_count_signatures(sda), 0);
        if (vdb->n_sigs == 1) {
                CHECK_STR(vdb->sigs[0].type, "swap");
                CHECK_STR(vdb->sigs[0].usage, "other");
                CHECK_STR(vdb->sigs[0].uuid, "11111111-2222-4333-8444-555555555555");
                CHECK_STR(vdb->sigs[0].label, "recswap");
                CHECK_U64(vdb->sigs[0].offset, 4096 - 10);
        }
        CHECK_INT(inv->n_nics, 3);
        CHECK_STR(inv->nics[0].name, "eth0");
        CHECK_STR(inv->nics[1].name, "eth1");
        CHECK_STR(inv->nics[2].name, "br0");
        CHECK_STR(inventory_primary_mac(inv), "52:54:00:12:34:56");

        /* loop devices with a size become disks on request */
        setenv("KILN_INVENTORY_INCLUDE_LOOP", "1", 1);
        _cleanup_inventory_free_ struct inventory *withloop = NULL;
        CHECK_INT(inventory_probe(root, &withloop, NULL), 0);
        CHECK_INT(withloop ? withloop->n_disks : 0, 6);
        /* or only the ones named, by path or name: never a prefix or a
         * longer name, never an empty one */
        static const struct { const char *list; size_t n_disks; } lists[] = {
                { "/dev/loop0", 6 },
                { "/dev/loop1", 5 },            /* empty: never a disk */
                { " /dev/loop7,:loop0\t", 6 },
                { "loop0 /dev/loop1", 6 },
                { "/dev/loop", 5 },
                { "/dev/loop00 loop01 /dev/loop0/", 5 },
                { "", 5 },
                { "0", 5 },
        };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                _cleanup_inventory_free_ struct inventory *some = NULL;
                setenv("KILN_INVENTORY_INCLUDE_LOOP", lists[i].list, 1);
                CHECK_INT(inventory_probe(root, &some, NULL), 0);
                CHECK_INT(some ? some->n_disks : 0, lists[i].n_disks);
                if (some && some->n_disks == 6)
                        CHECK_STR(some->disks[0].name, "loop0");
        }
        unsetenv("KILN_INVENTORY_INCLUDE_LOOP");

        /* the recorded tree's JSON is what the checked-in file says */
        _cleanup_free_ char *exp_path = src_path("tests/inventories/sysroot-mixed.expected.json"), *exp = NULL;
        CHECK_INT(read_full_file(exp_path, 1 << 20, &exp, NULL), 0);
        _cleanup_strbuf_ struct strbuf out = STRBUF_INIT;
        CHECK_INT(inventory_to_json(inv, &out), 0);
        CHECK_STR(strbuf_str(&out), exp);
}

/* Disks repeating a serial: counted, and one warning per serial naming them all. */
static void test_serial_twins(void) {
        static const char text[] =
                "{\"version\": 1, \"disks\": ["
                "{\"name\": \"sda\", \"path\": \"/dev/sda\", \"serial\": \"X1\"},"
                "{\"name\": \"sdb\", \"path\": \"/dev/sdb\", \"serial\": \"\"},"
                "{\"name\": \"sdc\", \"path\": \"/dev/sdc\", \"serial\": \"Y2\"},"
                "{\"name\": \"sdd\", \"path\": \"/dev/sdd\", \"serial\": \"\"},"
                "{\"name\": \"sde\", \"path\": \"/dev/sde\", \"serial\": \"X1\"},"
                "{\"name\": \"sdf\", \"path\": \"/dev/sdf\", \"serial\": \"X1\"}]}";
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        CHECK_INT(inventory_from_json_string(text, strlen(text), &inv, NULL), 0);
        if (!inv)
                return;
        CHECK_INT((int) inventory_count_serial(inv, "X1"), 3);
        CHECK_INT((int) inventory_count_serial(inv, "Y2"), 1);
        CHECK_INT((int) inventory_count_serial(inv, ""), 0);    /* no serial is not a shared serial */
        CHECK_INT((int) inventory_count_serial(inv, NULL), 0);
        _cleanup_strv_free_ char **w = NULL;
        CHECK_INT(inventory_warnings(inv, &w), 0);
        CHECK_INT((int) strv_length(w), 1);
        if (w)
                CHECK_STR(w[0], "disks /dev/sda, /dev/sde and /dev/sdf report the same serial 'X1' (a USB bridge or "
                                "virtual disks?): a spec cannot select them by serial; use path, by_id or wwn");
        _cleanup_inventory_free_ struct inventory *one = NULL;
        CHECK_INT(inventory_from_json_string("{\"version\": 1}", 14, &one, NULL), 0);
        _cleanup_strv_free_ char **none = NULL;
        CHECK_INT(inventory_warnings(one, &none), 0);
        CHECK(none == NULL);
}

static void test_missing(void) {
        _cleanup_inventory_free_ struct inventory *inv = NULL;
        CHECK_INT(inventory_load("/nonexistent/kiln-inventory.json", &inv, NULL), -ENOENT);
        CHECK(inv == NULL);
}

int main(void) {
        test_roundtrip_all();
        test_qemu_fields();
        test_junk_fields();
        test_bad_json();
        test_sysroot();
        test_missing();
        test_serial_twins();
        return TEST_DONE();
}
