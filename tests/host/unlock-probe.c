/* For tests/host/test-unlock.sh: runs kiln's own unlock_bind() and
 * unlock_prove() (agent/unlock.c) on a LUKS2 image file, the way the
 * luks-bind step does in the target chroot, with the key read from stdin.
 *   unlock-probe bind IMAGE ROOT THRESHOLD URL THP [URL THP]...   prints the new keyslot
 *   unlock-probe prove IMAGE ROOT SLOT
 *   unlock-probe open IMAGE                                        kiln's own later opening of a
 *     volume with a generated key (unlock_recover(): a clevis token through Tang, the key checked
 *     against its keyslot, nothing activated): prints "keyslot N", never the key
 *   unlock-probe decrypt                                           a compact tang or sss JWE on stdin
 *     through kiln's in-process pin (tang_decrypt, sss_decrypt), its plaintext on stdout (test data only)
 *   unlock-probe boot SPEC INVENTORY                               the boot-loader step
 *     of the plan of SPEC on the recorded INVENTORY, in KILN_TARGET (bootloader_step,
 *     what apply runs)
 * ROOT "-" runs clevis on this system without a chroot. Exit 0 ok, 1 failed
 * (the reason on stderr), 64 usage. */
#include "bootloader.h"
#include "diag.h"
#include "exec.h"
#include "inventory.h"
#include "luks.h"
#include "paths.h"
#include "plan.h"
#include "spec.h"
#include "sss.h"
#include "strbuf.h"
#include "tang.h"
#include "unlock.h"

#include <unistd.h>

static int boot(const char *spec_path, const char *inv_path, struct strbuf *err) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = NULL;
        struct inventory *inv = NULL;
        int r = spec_load(spec_path, &s, &d);
        if (r == 0)
                r = inventory_load_json(inv_path, &inv, NULL);
        _cleanup_plan_free_ struct plan *p = NULL;
        if (r == 0)
                r = plan_build(s, inv, &p, &d);
        diags_print(&d, stderr);
        diags_clear(&d);
        const struct plan_step *st = NULL;
        for (size_t i = 0; r == 0 && i < p->n_steps; i++)
                if (p->steps[i].kind == PLAN_BOOTLOADER)
                        st = &p->steps[i];
        if (r == 0 && !st)
                r = -ENOENT;
        if (r == 0)
                r = bootloader_step(p, st, err);
        p = plan_free(p);
        inventory_free(inv);
        return r;
}

int main(int argc, char **argv) {
        paths_init();
        if (argc == 4 && streq(argv[1], "boot")) {
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                int r = boot(argv[2], argv[3], &err);
                if (r < 0)
                        fprintf(stderr, "unlock-probe boot: %s: %s\n", exec_last_line(&err), strerror(-r));
                return r < 0 ? 1 : 0;
        }
        if (argc == 2 && streq(argv[1], "decrypt")) {
                _cleanup_strbuf_ struct strbuf jwe = { .max = 256u * 1024u }, err = STRBUF_INIT;
                char buf[4096];
                for (ssize_t k; (k = read(STDIN_FILENO, buf, sizeof buf)) > 0;)
                        if (strbuf_add(&jwe, buf, (size_t) k) < 0)
                                return 1;
                while (jwe.len > 0 && (jwe.buf[jwe.len - 1] == '\n' || jwe.buf[jwe.len - 1] == ' '))
                        jwe.buf[--jwe.len] = '\0';
                size_t len = 0;
                char pin[16] = "";
                (void) tang_jwe_pin(strbuf_str(&jwe), pin, sizeof pin);
                int r = streq(pin, "sss") ? sss_decrypt(strbuf_str(&jwe), buf, sizeof buf, &len, &err)
                                          : tang_decrypt(strbuf_str(&jwe), buf, sizeof buf, &len, &err);
                if (r < 0) {
                        fprintf(stderr, "unlock-probe decrypt: %s: %s\n", strbuf_why(&err, r), strerror(-r));
                        return 1;
                }
                fwrite(buf, 1, len, stdout);
                return 0;
        }
        if (argc == 3 && streq(argv[1], "open")) {
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                _cleanup_luks_key_free_ struct luks_key *key = NULL;
                int slot = -1;
                luks_setup_logging();
                int r = unlock_recover(NULL, argv[2], &key, &slot, &err);
                if (r < 0) {
                        fprintf(stderr, "unlock-probe open: %s: %s\n", strbuf_why(&err, r), strerror(-r));
                        return 1;
                }
                printf("keyslot %d\n", slot);
                return 0;
        }
        if (argc < 5)
                return 64;
        const char *img = argv[2], *root = streq(argv[3], "-") ? NULL : argv[3];
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        int r;
        if (streq(argv[1], "prove")) {
                unsigned slot;
                if (safe_atou(argv[4], &slot) < 0)
                        return 64;
                r = unlock_prove(root, img, (int) slot, &err);
        } else if (streq(argv[1], "bind") && argc >= 7 && (argc - 5) % 2 == 0) {
                struct spec_tang tang[8];
                struct spec_luks l = { .id = (char *) "probe" };
                if (safe_atou(argv[4], &l.unlock.threshold) < 0)
                        return 64;
                for (int i = 5; i + 1 < argc && l.unlock.n_tang < 8; i += 2)
                        tang[l.unlock.n_tang++] = (struct spec_tang) { .url = argv[i], .thp = argv[i + 1] };
                l.unlock.tang = tang;
                char buf[1024];
                size_t n = 0;
                for (ssize_t k; n < sizeof buf && (k = read(STDIN_FILENO, buf + n, sizeof buf - n)) > 0;)
                        n += (size_t) k;
                _cleanup_luks_key_free_ struct luks_key *key = NULL;
                r = luks_key_new(buf, n, &key);
                explicit_wipe(buf, sizeof buf);
                int slot = -1;
                if (r == 0)
                        r = unlock_bind(root, img, &l, key, &err, &slot);
                if (r == 0)
                        printf("%d\n", slot);
        } else
                return 64;
        if (r < 0) {
                fprintf(stderr, "unlock-probe %s: %s: %s\n", argv[1], exec_last_line(&err), strerror(-r));
                return 1;
        }
        return 0;
}
