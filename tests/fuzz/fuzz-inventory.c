/* libFuzzer target: the inventory JSON (`kiln plan --inventory FILE`,
 * `kiln inventory --sysroot FILE`, the tests' recorded machines). What
 * inventory_from_json_string() accepts must save and load back to the same
 * JSON, print as text, and go through what `kiln plan` does with it
 * (plan_build, resume_decide, plan_to_text/json) against the templates'
 * specs (from $SRC/templates when the runner sets SRC). */
#include "diag.h"
#include "inventory.h"
#include "plan.h"
#include "resume.h"
#include "spec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct spec *specs[16];
static size_t n_specs;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        const char *src = getenv("SRC");
        char dir[4096];
        if (!src)
                return 0;
        snprintf(dir, sizeof dir, "%s/templates", src);
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        for (struct dirent *e; (e = readdir(d)) && n_specs < ELEMENTSOF(specs);) {
                char path[8192];
                struct diags dg = {};
                if (!strstr(e->d_name, ".yaml"))
                        continue;
                snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
                if (spec_load(path, &specs[n_specs], &dg) == 0)
                        n_specs++;
                diags_clear(&dg);
        }
        closedir(d);
        return 0;
}

static void plan_with(const struct spec *spec, const struct inventory *inv) {
        struct diags dg = {};
        struct plan *fresh = NULL, *resume = NULL;
        struct strbuf sb = STRBUF_INIT;
        bool unwiped = false;
        int r = plan_decide(spec, inv, false, &dg, &fresh, &resume, &unwiped);
        if (r == 0) {
                if (!fresh || plan_to_text(fresh, &sb) < 0 || plan_to_json(fresh, &sb) < 0)
                        __builtin_trap();
                if (resume && (plan_to_text(resume, &sb) < 0 || plan_to_json(resume, &sb) < 0))
                        __builtin_trap();
        } else if (r == -EPERM && dg.n == 0)
                __builtin_trap();       /* a refusal names its reason */
        diags_sort(&dg);
        diags_clear(&dg);
        strbuf_release(&sb);
        plan_free(fresh);
        plan_free(resume);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct inventory *inv = NULL, *again = NULL;
        struct strbuf a = STRBUF_INIT, b = STRBUF_INIT, t = STRBUF_INIT;
        struct strbuf err = STRBUF_INIT;
        char **warn = NULL;
        int r = inventory_from_json_string((const char *) data, size, &inv, &err);
        if (r < 0) {
                if (inv)
                        __builtin_trap();
                if ((r == -EBADMSG || r == -EINVAL) && !err.len)
                        __builtin_trap();       /* a bad file says where */
                strbuf_release(&err);
                return 0;
        }
        if (err.len)
                __builtin_trap();
        if (inventory_to_json(inv, &a) < 0 || inventory_from_json_string(a.buf, a.len, &again, &err) < 0 ||
            inventory_to_json(again, &b) < 0 || a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0)
                __builtin_trap();       /* load(to_json(x)) gives x back */
        if (inventory_to_text(inv, &t) < 0 || inventory_warnings(inv, &warn) < 0)
                __builtin_trap();
        (void) inventory_primary_mac(inv);
        for (size_t i = 0; i < inv->n_disks; i++) {
                (void) inventory_count_serial(inv, inv->disks[i].serial);
                (void) inv_disk_in_use(&inv->disks[i]);
        }
        if (n_specs > 0)
                plan_with(specs[size % n_specs], inv);
        strv_free(warn);
        strbuf_release(&a);
        strbuf_release(&b);
        strbuf_release(&t);
        strbuf_release(&err);
        inventory_free(inv);
        inventory_free(again);
        return 0;
}
