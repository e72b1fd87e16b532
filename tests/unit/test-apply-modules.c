/* The pure parts of the executor's modules: argv construction for mdadm,
 * lvm and mkfs, name arithmetic, mount ordering, and exec's contract
 * (exit status, timeout, bounded stderr, clean environment). */
#include "apply.h"
#include "commands.h"
#include "exitcode.h"
#include "exec.h"
#include "luks.h"
#include "lvm.h"
#include "md.h"
#include "mkfs.h"
#include "mount.h"
#include "partition.h"
#include "paths.h"
#include "wipe.h"

#include "tap.h"

#include <limits.h>
#include <sys/stat.h>

static char *joined(char **v) {
        struct strbuf sb = STRBUF_INIT;
        exec_argv_to_string((const char *const *) v, &sb);
        return strbuf_detach(&sb);
}

static void test_md_argv(void) {
        char *members[] = { "/dev/vda2", "/dev/vdb2", "/dev/vdc2", "/dev/vdd2", "/dev/vde2", NULL };
        struct md_create_params p = {
                .name = "md1", .level = 10, .layout = "f2", .chunk = 256 * 1024, .metadata = "1.2",
                .bitmap = "internal", .members = members, .spares = 1,
        };
        char **argv = NULL;
        CHECK_INT(md_create_argv(&p, &argv), 0);
        char *s = joined(argv);
        CHECK_STR(s, "/sbin/mdadm --create /dev/md/md1 --run --name=md1 --homehost=any --level=10 --raid-devices=4 "
                     "--spare-devices=1 --layout=f2 --chunk=256K --metadata=1.2 --bitmap=internal "
                     "/dev/vda2 /dev/vdb2 /dev/vdc2 /dev/vdd2 /dev/vde2");
        free(s);
        strv_free(argv);

        struct md_create_params q = { .name = "boot", .level = 1, .members = members, .assume_clean = true };
        members[2] = NULL;
        CHECK_INT(md_create_argv(&q, &argv), 0);
        s = joined(argv);
        CHECK_STR(s, "/sbin/mdadm --create /dev/md/boot --run --name=boot --homehost=any --level=1 --raid-devices=2 "
                     "--assume-clean /dev/vda2 /dev/vdb2");
        free(s);
        strv_free(argv);

        q.spares = 2;   /* no active member left */
        CHECK_INT(md_create_argv(&q, &argv), -EINVAL);
}

static void test_mkfs_argv(void) {
        char **argv = NULL;
        char *opts[] = { "-m", "reflink=1", NULL };
        CHECK_INT(mkfs_argv(SPEC_FS_XFS, "/dev/vg0/root", "root", opts, &argv), 0);
        char *s = joined(argv);
        CHECK_STR(s, "/sbin/mkfs.xfs -f -L root -m reflink=1 /dev/vg0/root");
        free(s);
        strv_free(argv);
        CHECK_INT(mkfs_argv(SPEC_FS_EXT4, "/dev/md/boot", NULL, NULL, &argv), 0);
        s = joined(argv);
        CHECK_STR(s, "/sbin/mkfs.ext4 -F -q /dev/md/boot");
        free(s);
        strv_free(argv);
        CHECK_INT(mkfs_argv(SPEC_FS_VFAT, "/dev/vda1", "EFI", NULL, &argv), 0);
        s = joined(argv);
        CHECK_STR(s, "/sbin/mkfs.vfat -n EFI /dev/vda1");
        free(s);
        strv_free(argv);
}

static void test_names(void) {
        char *vg = NULL;
        CHECK_INT(wipe_lvm_vg_from_dm_name("vg0-root", &vg), 0);
        CHECK_STR(vg, "vg0");
        free(vg);
        CHECK_INT(wipe_lvm_vg_from_dm_name("crypted--vg-my--lv", &vg), 0);
        CHECK_STR(vg, "crypted-vg");
        free(vg);
        CHECK_INT(wipe_lvm_vg_from_dm_name("nodash", &vg), -EINVAL);
        CHECK_INT(wipe_lvm_vg_from_dm_name("-x", &vg), -EINVAL);

        char *p = NULL;
        CHECK_INT(paths_partition("/dev/vda", 3, &p), 0);
        CHECK_STR(p, "/dev/vda3");
        free(p);
        CHECK_INT(paths_partition("/dev/nvme0n1", 1, &p), 0);
        CHECK_STR(p, "/dev/nvme0n1p1");
        free(p);
        CHECK_INT(paths_partition("/dev/loop7", 2, &p), 0);
        CHECK_STR(p, "/dev/loop7p2");
        free(p);

        /* the one cipher splitter (luksFormat and the benchmark's AF_ALG figure) */
        char ciph[16], mode[32];
        CHECK_INT(luks_cipher_split("aes-xts-plain64", ciph, sizeof ciph, mode, sizeof mode), 0);
        CHECK_STR(ciph, "aes");
        CHECK_STR(mode, "xts-plain64");
        CHECK_INT(luks_cipher_split("xchacha12,aes-adiantum-plain64", ciph, sizeof ciph, mode, sizeof mode), 0);
        CHECK_STR(ciph, "xchacha12,aes");
        CHECK_STR(mode, "adiantum-plain64");
        CHECK_INT(luks_cipher_split("aes", ciph, sizeof ciph, mode, sizeof mode), -EINVAL);
        CHECK_INT(luks_cipher_split("aes-", ciph, sizeof ciph, mode, sizeof mode), -EINVAL);
        CHECK_INT(luks_cipher_split("serpent-twofish-aes-xts", ciph, 4, mode, sizeof mode), -EINVAL);

        CHECK_STR(apply_step_name(PLAN_MD_CREATE), "md-create");
        /* one stage name for a step's begin, end and failed_stage */
        char stage[160];
        struct plan_step st = { .kind = PLAN_REGISTER, .index = 1 };
        CHECK_STR(apply_stage_name(&st, stage, sizeof stage), "register webhook");
        st.index = 0;
        CHECK_STR(apply_stage_name(&st, stage, sizeof stage), "register cloudstack");
        st = (struct plan_step) { .kind = PLAN_WIPE, .id = "d", .device = (char *) "/dev/vda" };
        CHECK_STR(apply_stage_name(&st, stage, sizeof stage), "wipe d");
        st.id = NULL;
        CHECK_STR(apply_stage_name(&st, stage, sizeof stage), "wipe /dev/vda");
        CHECK_INT(cmd_apply_exit_code(-EIO, PLAN_LUKS_FORMAT), KILN_EXIT_STORAGE);
        CHECK_INT(cmd_apply_exit_code(-EIO, PLAN_IMAGE), KILN_EXIT_IMAGE);
        CHECK_INT(cmd_apply_exit_code(-EIO, PLAN_REGISTER), KILN_EXIT_REGISTER);
        CHECK_INT(cmd_apply_exit_code(-ENOMEM, _PLAN_STEP_KIND_MAX), KILN_EXIT_FAILURE);
        CHECK_INT(cmd_apply_exit_code(0, _PLAN_STEP_KIND_MAX), KILN_EXIT_OK);
        CHECK(strstr(lvm_config, "udev_sync=0") && strstr(lvm_config, "obtain_device_list_from_udev=0"));
}

static void test_exec(void) {
        CHECK_INT(exec_argv((const char *[]) { "/bin/true", NULL }, NULL, NULL), 0);
        int status = 0;
        CHECK_INT(exec_argv((const char *[]) { "/bin/false", NULL }, NULL, &status), -EIO);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
        CHECK_INT(exec_argv((const char *[]) { "/nonexistent/kiln-helper", NULL }, NULL, NULL), -ENOENT);

        struct strbuf err = STRBUF_INIT;
        struct exec_options o = { .err = &err };
        CHECK_INT(exec_argv((const char *[]) { "/bin/ls", "/nonexistent-kiln-path", NULL }, &o, NULL), -EIO);
        CHECK(strstr(exec_last_line(&err), "nonexistent-kiln-path") != NULL);
        strbuf_release(&err);

        uint64_t t = now_usec();
        struct exec_options to = { .timeout_usec = 200 * 1000 };
        CHECK_INT(exec_argv((const char *[]) { "/bin/sleep", "10", NULL }, &to, NULL), -ETIMEDOUT);
        CHECK(now_usec() - t < 3 * 1000000ull);

        /* stderr is bounded: keep only the tail */
        struct strbuf big = STRBUF_INIT;
        struct exec_options bo = { .err = &big };
        CHECK_INT(exec_argv((const char *[]) { "/usr/bin/head", "-c", "100000", "/dev/zero", NULL }, &bo, NULL), 0);
        CHECK_INT(big.len, 0);  /* that went to stdout, which is discarded */
        strbuf_release(&big);

        /* the child's environment is fixed: nothing of ours leaks into it */
        setenv("KILN_TEST_SECRET", "hunter2-secret", 1);
        struct strbuf out = STRBUF_INIT;
        struct exec_options eo = { .out = &out };
        CHECK_INT(exec_argv((const char *[]) { "/usr/bin/env", NULL }, &eo, NULL), 0);
        CHECK(strstr(strbuf_str(&out), "hunter2") == NULL);
        CHECK(strstr(strbuf_str(&out), "PATH=/usr/sbin") != NULL);
        strbuf_release(&out);

        /* stdout has its own bound */
        struct strbuf small = STRBUF_INIT;
        small.max = 1000;
        struct exec_options so = { .out = &small };
        CHECK_INT(exec_argv((const char *[]) { "/usr/bin/head", "-c", "5000", "/dev/zero", NULL }, &so, NULL), -E2BIG);
        strbuf_release(&small);
}

static void test_luks_key(void) {
        struct luks_key *k = NULL;
        CHECK_INT(luks_key_new("correct horse", 13, &k), 0);
        CHECK_INT(k->len, 13);
        CHECK(memcmp(k->data, "correct horse", 13) == 0);
        luks_key_free(k);
        CHECK_INT(luks_key_generate(64, &k), 0);
        CHECK_INT(k->len, 64);
        luks_key_free(k);
        CHECK_INT(luks_key_new("", 0, &k), -EINVAL);

        uint64_t cap = 0;
        CHECK_INT(luks_pbkdf_memory_cap(&cap), 0);
        CHECK(cap > 0);

        /* a quarter of MemAvailable, from the procfs kiln_paths names */
        char dir[] = "/tmp/kiln-test-meminfo.XXXXXX", file[64];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(file, sizeof file, "%s/meminfo", dir);
        const char *saved = kiln_paths.procfs;
        kiln_paths.procfs = dir;
        static const struct { const char *text; int r; uint64_t cap; } cases[] = {
                { "MemTotal:        2048 kB\nMemFree:  100 kB\nMemAvailable:    1000 kB\n", 0, 256000 },
                { "MemTotal:        2048 kB\nMemFree:  100 kB\n", -ENODATA, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                FILE *f = fopen(file, "we");
                CHECK(f != NULL);
                if (!f)
                        break;
                fputs(cases[i].text, f);
                fclose(f);
                cap = 0;
                CHECK_INT(luks_pbkdf_memory_cap(&cap), cases[i].r);
                CHECK_U64(cap, cases[i].cap);
        }
        unlink(file);
        CHECK_INT(luks_pbkdf_memory_cap(&cap), -ENOENT);
        rmdir(dir);
        kiln_paths.procfs = saved;
}

/* lvm_vg_uuid() against a stand-in lvm (kiln_paths.lvm): the argv it gets
 * (the udev-less config, vgs -o vg_uuid VG) and the UUID out of vgs' padded
 * output; a VG lvm does not know is an error, an empty answer -ENODATA. */
static void test_lvm_vg_uuid(void) {
        char dir[] = "/tmp/kiln-test-lvm.XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        char script[PATH_MAX], args[PATH_MAX];
        snprintf(script, sizeof script, "%s/lvm", dir);
        snprintf(args, sizeof args, "%s/args", dir);
        FILE *f = fopen(script, "we");
        CHECK(f);
        if (!f)
                return;
        fprintf(f, "#!/bin/sh\necho \"$*\" >'%s'\n"
                   "case \"$*\" in\n"
                   "  *' kvm_vg') printf '  zjbvGq-NtMi-jF2o-mAFm-zmOT-eyH8-Y3xLWu\\n' ;;\n"
                   "  *' empty_vg') ;;\n"
                   "  *) echo \"  Volume group \\\"${7}\\\" not found\" >&2; exit 5 ;;\n"
                   "esac\n", args);
        fclose(f);
        CHECK_INT(chmod(script, 0755), 0);
        const char *saved = kiln_paths.lvm;
        kiln_paths.lvm = script;
        char *uuid = NULL;
        struct strbuf err = STRBUF_INIT;
        CHECK_INT(lvm_vg_uuid("kvm_vg", &uuid, &err), 0);
        CHECK_STR(uuid, "zjbvGq-NtMi-jF2o-mAFm-zmOT-eyH8-Y3xLWu");
        free(uuid);
        char *got = NULL;
        CHECK_INT(read_full_file(args, 4096, &got, NULL), 0);
        CHECK(got && strncmp(got, "vgs --config ", 13) == 0 && strstr(got, "udev_sync=0") &&
              strstr(got, " --noheadings -o vg_uuid kvm_vg\n"));
        free(got);
        uuid = NULL;
        CHECK_INT(lvm_vg_uuid("empty_vg", &uuid, &err), -ENODATA);
        CHECK(!uuid);
        CHECK_INT(lvm_vg_uuid("other_vg", &uuid, &err), -EIO);
        CHECK(!uuid);
        CHECK(strstr(exec_last_line(&err), "not found") != NULL);
        strbuf_release(&err);
        kiln_paths.lvm = saved;
        unlink(args);
        unlink(script);
        rmdir(dir);
}

int main(void) {
        paths_init();
        test_md_argv();
        test_mkfs_argv();
        test_names();
        test_exec();
        test_luks_key();
        test_lvm_vg_uuid();
        return TEST_DONE();
}
