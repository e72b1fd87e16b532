/* The boot-loader and luks-bind steps as the plan makes them, and the texts
 * they hand to the target: GRUB's drop-in, debconf selections, clevis
 * configurations. No root, no target: the executor's side is
 * tests/host/test-unlock.sh (clevis against a real tangd) and the rig. */
#include "bootloader.h"
#include "diag.h"
#include "inventory.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"
#include "tap.h"
#include "unlock.h"

static char *src_path(const char *rel) {
        const char *src = getenv("SRC");
        char *p = NULL;
        if (asprintf(&p, "%s/%s", src ? src : "..", rel) < 0)
                abort();
        return p;
}

static struct spec *load(const char *rel) {
        _cleanup_free_ char *p = src_path(rel);
        struct diags d = {};
        struct spec *s = NULL;
        if (spec_load(p, &s, &d) < 0)
                diags_print(&d, stderr);
        diags_clear(&d);
        CHECK(s != NULL);
        return s;
}

static struct plan *plan_of(const struct spec *s, struct inventory **ret_inv) {
        _cleanup_free_ char *p = src_path("tests/inventories/qemu-4disk.json");
        struct inventory *inv = NULL;
        CHECK_INT(inventory_load_json(p, &inv, NULL), 0);
        struct diags d = {};
        struct plan *pl = NULL;
        if (inv && plan_build(s, inv, &pl, &d) < 0)
                diags_print(&d, stderr);
        diags_clear(&d);
        CHECK(pl != NULL);
        *ret_inv = inv;
        return pl;
}

static const struct plan_step *step_of(const struct plan *p, enum plan_step_kind k) {
        for (size_t i = 0; p && i < p->n_steps; i++)
                if (p->steps[i].kind == k)
                        return &p->steps[i];
        return NULL;
}

static size_t index_of(const struct plan *p, enum plan_step_kind k) {
        const struct plan_step *s = step_of(p, k);
        return s ? (size_t) (s - p->steps) : SIZE_MAX;
}

static void test_tang_template(void) {
        _cleanup_spec_free_ struct spec *s = load("templates/raid1-boot-raid10.yaml");
        if (!s)
                return;
        struct inventory *inv = NULL;
        _cleanup_plan_free_ struct plan *p = plan_of(s, &inv);
        if (!p) {
                inventory_free(inv);
                return;
        }
        const struct plan_step *b = step_of(p, PLAN_LUKS_BIND), *g = step_of(p, PLAN_BOOTLOADER);
        CHECK(b && g);
        if (b) {
                CHECK_STR(b->device, "/dev/md/md-data");
                CHECK_STR(b->id, "crypt0");
                CHECK(b->obj == &s->luks[0]);
                CHECK(b->destroys == NULL);
        }
        if (g) {
                CHECK_INT(strv_length(g->inputs), 4);
                CHECK_STR(g->inputs[0], "/dev/vda");
                CHECK_STR(g->inputs[3], "/dev/vdd");
                CHECK(g->device == NULL);
                CHECK(strstr(g->description, "grub-install i386-pc on /dev/vda, its boot code on /dev/vdb /dev/vdc /dev/vdd "
                                             "(copied where the BIOS boot partition lies alike, else grub-bios-setup; "
                                             "debconf grub-pc/install_devices: /dev/vda /dev/vdb /dev/vdc /dev/vdd)") != NULL);
                CHECK(strstr(g->description, "x86_64-efi") == NULL);
        }
        /* configure (crypttab) < luks-bind < boot-loader (the initramfs takes the binding) < register */
        CHECK(index_of(p, PLAN_CONFIGURE) < index_of(p, PLAN_LUKS_BIND));
        CHECK(index_of(p, PLAN_LUKS_BIND) < index_of(p, PLAN_BOOTLOADER));
        CHECK(index_of(p, PLAN_BOOTLOADER) < index_of(p, PLAN_REGISTER));
        CHECK_STR(plan_step_kind_name(PLAN_LUKS_BIND), "luks-bind");
        CHECK_STR(plan_step_kind_name(PLAN_BOOTLOADER), "boot-loader");

        /* a Tang pin and no ip= in boot.cmdline: the initramfs needs the network */
        _cleanup_free_ char *cmd = NULL;
        CHECK_INT(plan_kernel_cmdline(s, &cmd), 0);
        CHECK_STR(cmd, "console=tty0 console=ttyS0,115200n8 ip=::::::dhcp");

        _cleanup_strbuf_ struct strbuf cfg = STRBUF_INIT, sel = STRBUF_INIT;
        CHECK_INT(s->boot.timeout, SPEC_BOOT_TIMEOUT);
        CHECK_INT(bootloader_grub_cfg(cmd, s->boot.timeout, &cfg), 0);
        CHECK_STR(strbuf_str(&cfg), "# written by kiln: boot.cmdline and boot.timeout of the host spec\n"
                                    "GRUB_CMDLINE_LINUX=\"console=tty0 console=ttyS0,115200n8 ip=::::::dhcp\"\n"
                                    "GRUB_TIMEOUT=5\nGRUB_RECORDFAIL_TIMEOUT=5\n"
                                    "GRUB_TERMINAL=\"console serial\"\n"
                                    "GRUB_SERIAL_COMMAND=\"serial --unit=0 --speed=115200\"\n");
        if (g) {
                CHECK_INT(bootloader_debconf(p, g, &sel), 0);
                /* the recorded disks have no by-id names: their paths */
                CHECK_STR(strbuf_str(&sel), "grub-pc grub-pc/install_devices multiselect /dev/vda, /dev/vdb, /dev/vdc, /dev/vdd\n"
                                            "grub-pc grub-pc/install_devices_empty boolean false\n");
        }

        const char *pin = NULL;
        _cleanup_free_ char *conf = NULL;
        CHECK_INT(unlock_clevis_config(&s->luks[0], &pin, &conf), 0);
        CHECK_STR(pin, "tang");
        CHECK_STR(conf, "{\"url\":\"http://10.0.2.100:7500\",\"thp\":\"Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg\"}");
        inventory_free(inv);
}

static void test_sss_and_uefi(void) {
        _cleanup_spec_free_ struct spec *s = load("templates/single-disk.yaml");
        if (!s)
                return;
        struct inventory *inv = NULL;
        _cleanup_plan_free_ struct plan *p = plan_of(s, &inv);
        const struct plan_step *g = step_of(p, PLAN_BOOTLOADER);
        CHECK(g != NULL);
        CHECK(step_of(p, PLAN_LUKS_BIND) == NULL);
        if (g) {
                CHECK(strstr(g->description, "grub-install x86_64-efi into /boot/efi (/dev/vda2, on /dev/vda) "
                                             "at EFI/BOOT/BOOTX64.EFI, no NVRAM entry") != NULL);
                CHECK(strstr(g->description, "grub-bios-setup") == NULL && strstr(g->description, "boot code") == NULL);
                _cleanup_strbuf_ struct strbuf sel = STRBUF_INIT;
                CHECK_INT(bootloader_debconf(p, g, &sel), 0);
                CHECK(strstr(strbuf_str(&sel), "grub-efi-amd64 grub2/force_efi_extra_removable boolean true\n") != NULL);
                CHECK(strstr(strbuf_str(&sel), "grub-efi-amd64 grub2/update_nvram boolean false\n") != NULL);
                CHECK(strstr(strbuf_str(&sel), "grub-pc/install_devices multiselect /dev/vda\n") != NULL);
        }
        _cleanup_free_ char *cmd = NULL;
        CHECK_INT(plan_kernel_cmdline(s, &cmd), 0);
        CHECK_STR(cmd, "");
        _cleanup_strbuf_ struct strbuf cfg = STRBUF_INIT;
        CHECK_INT(bootloader_grub_cfg("console=ttyS1,9600n8 ip=10.0.0.5::10.0.0.1:255.255.255.0::eth0:none", 0, &cfg), 0);
        CHECK(strstr(strbuf_str(&cfg), "serial --unit=1 --speed=9600") != NULL);
        CHECK(strstr(strbuf_str(&cfg), "\nGRUB_TIMEOUT=0\nGRUB_RECORDFAIL_TIMEOUT=0\n") != NULL);
        inventory_free(inv);

        /* two pins, threshold 2: sss; an ip= of the spec's own is kept as the only one */
        struct spec_tang tang[] = {
                { .url = (char *) "http://10.0.2.100:7500", .thp = (char *) "Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg" },
                { .url = (char *) "https://10.0.2.101/", .thp = (char *) "0123456789abcdefghijklmnopqrstuvwxyzABCDEFG" },
        };
        struct spec_luks l = { .id = (char *) "c" };
        l.unlock.tang = tang;
        l.unlock.n_tang = 2;
        l.unlock.threshold = 2;
        const char *pin = NULL;
        _cleanup_free_ char *conf = NULL;
        CHECK_INT(unlock_clevis_config(&l, &pin, &conf), 0);
        CHECK_STR(pin, "sss");
        CHECK_STR(conf, "{\"t\":2,\"pins\":{\"tang\":[{\"url\":\"http://10.0.2.100:7500\",\"thp\":\"Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg\"},"
                        "{\"url\":\"https://10.0.2.101/\",\"thp\":\"0123456789abcdefghijklmnopqrstuvwxyzABCDEFG\"}]}}");
        char *args[] = { (char *) "console=ttyS0", (char *) "ip=:::::eth0:dhcp", NULL };
        struct spec s2 = { .luks = &l, .n_luks = 1 };
        s2.boot.present = true;
        s2.boot.cmdline = args;
        _cleanup_free_ char *cmd2 = NULL;
        CHECK_INT(plan_kernel_cmdline(&s2, &cmd2), 0);
        CHECK_STR(cmd2, "console=ttyS0 ip=:::::eth0:dhcp");
        l.unlock.n_tang = 0;
        CHECK_INT(unlock_clevis_config(&l, &pin, &conf), -EINVAL);
}

/* the resume stages: a resumed run skips the binds once all are done, and
 * the boot loader once it ran; both survive the progress record */
static void test_resume_stages(void) {
        CHECK_INT(resume_stage_of(PLAN_LUKS_BIND), RESUME_STAGE_UNLOCK);
        CHECK_INT(resume_stage_of(PLAN_BOOTLOADER), RESUME_STAGE_BOOT);
        CHECK_STR(resume_stage_name(RESUME_STAGE_UNLOCK), "unlock");
        CHECK_STR(resume_stage_name(RESUME_STAGE_BOOT), "boot");
        CHECK(!plan_step_is_storage(PLAN_LUKS_BIND) && !plan_step_is_storage(PLAN_BOOTLOADER));
        struct resume_record rec = { .stages = (1u << RESUME_STAGE_STORAGE) | (1u << RESUME_STAGE_UNLOCK) };
        memset(rec.fingerprint, 'a', 64);
        _cleanup_strbuf_ struct strbuf j = STRBUF_INIT;
        CHECK_INT(resume_record_to_json(&rec, &j), 0);
        CHECK(strstr(strbuf_str(&j), "\"unlock\"") != NULL);
        struct resume_record back = {};
        CHECK_INT(resume_record_from_json(strbuf_str(&j), j.len, &back), 0);
        CHECK_INT(back.stages, rec.stages);
        resume_record_done(&back);
}

/* grub.cfg for a generic initramfs: newest kernel first (by version, not by
 * text: 6.10 after 6.9), paths under the /boot filesystem or under /boot of /,
 * the serial terminal of console=ttyS */
static void test_grub_menu(void) {
        char *v[] = { (char *) "6.1.0-9-amd64", (char *) "6.1.0-10-amd64" };
        _cleanup_strbuf_ struct strbuf m = STRBUF_INIT;
        CHECK_INT(bootloader_grub_menu("root=/dev/mapper/vg0-root ro console=ttyS0,115200n8", 5, "", v, 2, &m), 0);
        const char *t = strbuf_str(&m);
        CHECK(strstr(t, "set default=0\nset timeout=5\n") != NULL);
        CHECK(strstr(t, "serial --unit=0 --speed=115200\nterminal_input console serial\nterminal_output console serial\n") != NULL);
        const char *a = strstr(t, "menuentry 'Linux 6.1.0-10-amd64' --id 'kiln-6.1.0-10-amd64' {\n\tinsmod gzio\n"
                                  "\tlinux /vmlinuz-6.1.0-10-amd64 root=/dev/mapper/vg0-root ro console=ttyS0,115200n8\n"
                                  "\tinitrd /initrd.img-6.1.0-10-amd64\n}\n");
        const char *b = strstr(t, "menuentry 'Linux 6.1.0-9-amd64'");
        CHECK(a != NULL && b != NULL && a < b);
        strbuf_reset(&m);
        CHECK_INT(bootloader_grub_menu("root=UUID=0c8a ro", 0, "/boot", v, 1, &m), 0);
        CHECK(strstr(strbuf_str(&m), "\tlinux /boot/vmlinuz-6.1.0-9-amd64 root=UUID=0c8a ro\n\tinitrd /boot/initrd.img-6.1.0-9-amd64\n") != NULL);
        CHECK(strstr(strbuf_str(&m), "set default=0\nset timeout=0\n") != NULL);
        CHECK(strstr(strbuf_str(&m), "serial") == NULL);
}

int main(void) {
        test_resume_stages();
        test_tang_template();
        test_sss_and_uefi();
        test_grub_menu();
        return TEST_DONE();
}
