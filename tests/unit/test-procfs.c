/* procfs.c against files written like the kernel writes them. */
#include "procfs.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/kiln-test-procfs.XXXXXX";

static void put(const char *name, const char *text) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        FILE *f = fopen(p, "we");
        CHECK(f != NULL);
        if (!f)
                return;
        fputs(text, f);
        fclose(f);
}

static void drop(const char *name) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, name);
        (void) unlink(p);
}

static void test_meminfo(void) {
        struct procfs_meminfo m = { 1, 1 };
        put("meminfo", "MemTotal:       24576000 kB\nMemFree:         1000 kB\n"
                       "MemAvailable:\t12288000 kB\nMemAvailableX:  1 kB\nSwapTotal: 0 kB\n");
        CHECK_INT(procfs_read_meminfo(dir, &m), 0);
        CHECK_U64(m.total, 24576000ull * 1024);
        CHECK_U64(m.available, 12288000ull * 1024);
        /* a missing field stays 0; garbage and overflow are not numbers */
        put("meminfo", "MemTotal: lots kB\nMemAvailable: 99999999999999999999 kB\n");
        CHECK_INT(procfs_read_meminfo(dir, &m), 0);
        CHECK_U64(m.total, 0);
        CHECK_U64(m.available, 0);
        drop("meminfo");
        CHECK_INT(procfs_read_meminfo(dir, &m), -ENOENT);
}

static void test_cpuinfo(void) {
        struct procfs_cpuinfo ci = {};
        put("cpuinfo", "processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\n"
                       "flags\t\t: fpu sse2 aes avx2 vaesx\n\n"
                       "processor\t: 1\nmodel name\t: Other\nflags\t\t: vaes\n\n");
        CHECK_INT(procfs_read_cpuinfo(dir, &ci), 0);
        CHECK_INT(ci.cpus, 2);
        CHECK_STR(ci.model, "Example CPU @ 2.0GHz");
        CHECK(ci.aes);
        CHECK(ci.avx2);
        CHECK(!ci.vaes);        /* "vaesx" is not vaes, and only the first flags line counts */
        free(ci.model);
        put("cpuinfo", "");
        ci = (struct procfs_cpuinfo) {};
        CHECK_INT(procfs_read_cpuinfo(dir, &ci), 0);
        CHECK_INT(ci.cpus, 0);
        CHECK(ci.model == NULL);
        drop("cpuinfo");
        CHECK_INT(procfs_read_cpuinfo(dir, &ci), -ENOENT);
}

static void test_misc(void) {
        put("misc", "229 fuse\n236 device-mapper\n");
        CHECK_INT(procfs_misc_has(dir, "device-mapper"), 1);
        CHECK_INT(procfs_misc_has(dir, "fuse"), 1);
        put("misc", "229 fuse\n236 device-mapper-x\n 1 xdevice-mapper\n");
        CHECK_INT(procfs_misc_has(dir, "device-mapper"), 0);
        CHECK_INT(procfs_misc_has(dir, ""), 0);
        drop("misc");
        CHECK_INT(procfs_misc_has(dir, "fuse"), -ENOENT);
}

static void test_stat_starttime(void) {
        uint64_t t = 7;
        /* a real line (kernel 6.1), starttime 1234 */
        CHECK_INT(procfs_parse_stat_starttime("321 (kiln) R 1 321 321 0 -1 4194560 106 0 0 0 0 0 0 0 20 0 1 0 1234 "
                                              "5472256 313 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                                              &t),
                  0);
        CHECK_U64(t, 1234);
        /* comm with spaces and ')': fields count after the last ')' */
        CHECK_INT(procfs_parse_stat_starttime("9 (a) b) (c) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n", &t), 0);
        CHECK_U64(t, 99);
        t = 7;
        CHECK_INT(procfs_parse_stat_starttime("9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n", &t), -EINVAL);
        CHECK_INT(procfs_parse_stat_starttime("9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 x1 0\n", &t), -EINVAL);
        CHECK_INT(procfs_parse_stat_starttime("9 (x) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0  5 0\n", &t), -EINVAL);
        CHECK_INT(procfs_parse_stat_starttime("no parenthesis", &t), -EINVAL);
        CHECK_INT(procfs_parse_stat_starttime(NULL, &t), -EINVAL);
        CHECK_U64(t, 7);
        /* the real file: this process started before now, and not a day ago */
        uint64_t age = 0;
        CHECK_INT(procfs_self_age_usec("/proc", &age), 0);
        CHECK(age < 86400ull * 1000000);
        CHECK_INT(procfs_self_age_usec(dir, &age), -ENOENT);
}

int main(void) {
        if (!mkdtemp(dir))
                return 1;
        test_meminfo();
        test_cpuinfo();
        test_misc();
        test_stat_starttime();
        (void) rmdir(dir);
        return TEST_DONE();
}
