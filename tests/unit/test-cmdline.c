/* kiln.* options from the kernel command line (agent/spec/cmdline.c). */
#include "cmdline.h"
#include "tap.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_typical(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("BOOT_IMAGE=vmlinuz initrd=initrd.img console=ttyS0,115200n8 "
                                "kiln.spec=http://10.0.2.100/specs/${mac}.yaml kiln.spec.sha256=" HASH
                                " kiln.ca=/etc/kiln/ca.pem kiln.report=/dev/ttyS1 quiet\n", &c, &bad), 0);
        CHECK_STR(c.spec, "http://10.0.2.100/specs/${mac}.yaml");
        CHECK_STR(c.spec_sha256, HASH);
        CHECK_STR(c.ca, "/etc/kiln/ca.pem");
        CHECK_STR(c.report, "/dev/ttyS1");
        CHECK(!c.debug);
        CHECK(!c.unknown);
        CHECK(!bad);
        cmdline_done(&c);
        CHECK(!c.spec);
}

static void test_none(void) {
        struct kiln_cmdline c;
        CHECK_INT(cmdline_parse("", &c, NULL), 0);
        CHECK(!c.spec && !c.ca && !c.report && !c.spec_sha256 && !c.debug);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("  \t\n root=/dev/sda1 ro kilnspec=x kiln=1 ", &c, NULL), 0);
        CHECK(!c.spec);
        cmdline_done(&c);
}

static void test_debug(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("kiln.debug", &c, NULL), 0);
        CHECK(c.debug);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.debug=1", &c, NULL), 0);
        CHECK(c.debug);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.debug kiln.debug=off", &c, NULL), 0);
        CHECK(!c.debug);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.debug=maybe", &c, &bad), -EINVAL);
        CHECK_STR(bad, "kiln.debug=maybe");
        free(bad);
}

/* kiln.fresh (never resume an interrupted run): bare, or a boolean value
 * (1/0, yes/no, true/false, on/off, any case); the last one wins; anything
 * else is an error that names the word as it was written. */
/* kiln.reinstall=TOKEN (docs/reinstall.md): a token, or the word refused */
static void test_reinstall(void) {
        struct kiln_cmdline c = {};
        char *bad = NULL;
        CHECK_INT(cmdline_parse("quiet kiln.reinstall=lab-2027-01 kiln.spec=http://h/s", &c, NULL), 0);
        CHECK_STR(c.reinstall, "lab-2027-01");
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.spec=http://h/s", &c, NULL), 0);
        CHECK(!c.reinstall);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.reinstall=a kiln.reinstall=b", &c, NULL), 0);
        CHECK_STR(c.reinstall, "b");
        cmdline_done(&c);
        static const char *const refused[] = { "kiln.reinstall=", "kiln.reinstall", "kiln.reinstall=a/b", "\"kiln.reinstall=a b\"" };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                bad = NULL;
                CHECK_INT(cmdline_parse(refused[i], &c, &bad), -EINVAL);
                CHECK(bad && strncmp(bad, "kiln.reinstall", 14) == 0);
                free(bad);
        }
}

static void test_fresh(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("console=ttyS0 kiln.spec=http://h/s.yaml", &c, NULL), 0);
        CHECK(!c.fresh);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.fresh", &c, NULL), 0);
        CHECK(c.fresh);
        CHECK(!c.debug);        /* one flag does not set the other */
        CHECK(!c.unknown);
        cmdline_done(&c);
        static const char *const on[] = { "1", "yes", "true", "on", "YES", "True" };
        static const char *const off[] = { "0", "no", "false", "off", "NO", "Off" };
        for (size_t i = 0; i < ELEMENTSOF(on); i++) {
                char w[32];
                snprintf(w, sizeof w, "kiln.fresh=%s", on[i]);
                CHECK_INT(cmdline_parse(w, &c, NULL), 0);
                CHECK(c.fresh);
                cmdline_done(&c);
                snprintf(w, sizeof w, "kiln.fresh kiln.fresh=%s", off[i]);
                CHECK_INT(cmdline_parse(w, &c, NULL), 0);
                CHECK(!c.fresh);
                cmdline_done(&c);
        }
        CHECK_INT(cmdline_parse("kiln.fresh=0 kiln.debug kiln.fresh", &c, NULL), 0);
        CHECK(c.fresh && c.debug);
        cmdline_done(&c);
        static const char *const garbage[] = { "kiln.fresh=maybe", "kiln.fresh=", "kiln.fresh=2", "kiln.fresh=yess",
                                               "kiln.fresh=\"yes no\"" };
        for (size_t i = 0; i < ELEMENTSOF(garbage); i++) {
                char w[64];
                snprintf(w, sizeof w, "kiln.spec=http://h/s.yaml %s quiet", garbage[i]);
                CHECK_INT(cmdline_parse(w, &c, &bad), -EINVAL);
                CHECK_STR(bad, i == 4 ? "kiln.fresh=yes no" : garbage[i]);
                free(bad);
                bad = NULL;
        }
        /* kiln.freshly is another option (unknown, not kiln.fresh) */
        CHECK_INT(cmdline_parse("kiln.freshly", &c, NULL), 0);
        CHECK(!c.fresh && c.unknown && c.unknown[0]);
        CHECK_STR(c.unknown[0], "kiln.freshly");
        cmdline_done(&c);
}

static void test_quotes_and_last_wins(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("kiln.spec=http://a/1 kiln.spec=\"http://b/with space.yaml\" x", &c, NULL), 0);
        CHECK_STR(c.spec, "http://b/with space.yaml");
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("\"kiln.ca=/a b/ca.pem\"", &c, NULL), 0);
        CHECK_STR(c.ca, "/a b/ca.pem");
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.spec=\"http://unterminated", &c, &bad), -EINVAL);
        CHECK_STR(bad, "kiln.spec=\"http://unterminated");
        free(bad);
}

static void test_bad_values(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("quiet kiln.spec= ro", &c, &bad), -EINVAL);
        CHECK_STR(bad, "kiln.spec=");
        free(bad), bad = NULL;
        CHECK_INT(cmdline_parse("kiln.spec", &c, &bad), -EINVAL);
        CHECK_STR(bad, "kiln.spec");
        free(bad), bad = NULL;
        CHECK_INT(cmdline_parse("kiln.spec=x kiln.spec.sha256=abc", &c, &bad), -EINVAL);
        CHECK_STR(bad, "kiln.spec.sha256=abc");
        free(bad), bad = NULL;
        /* 64 characters but not hex */
        CHECK_INT(cmdline_parse("kiln.spec.sha256=" "g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", &c, &bad), -EINVAL);
        free(bad), bad = NULL;
        /* upper case is accepted and normalised */
        CHECK_INT(cmdline_parse("kiln.spec.sha256=0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF", &c, &bad), 0);
        CHECK_STR(c.spec_sha256, HASH);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse(NULL, &c, NULL), -EINVAL);
}

/* kiln.enlist=URL and kiln.enlist.timeout=SEC (1..86400) */
static void test_enlist(void) {
        struct kiln_cmdline c;
        char *bad = NULL;
        CHECK_INT(cmdline_parse("quiet kiln.enlist=http://10.0.0.1/kiln/enlist kiln.enlist.timeout=30", &c, NULL), 0);
        CHECK_STR(c.enlist, "http://10.0.0.1/kiln/enlist");
        CHECK_INT(c.enlist_timeout_sec, 30);
        CHECK(!c.spec);
        cmdline_done(&c);
        CHECK_INT(cmdline_parse("kiln.spec=http://h/${mac}.yaml", &c, NULL), 0);
        CHECK(!c.enlist);
        CHECK_INT(c.enlist_timeout_sec, 0);
        cmdline_done(&c);
        const char *bads[] = { "kiln.enlist=", "kiln.enlist.timeout=0", "kiln.enlist.timeout=86401",
                               "kiln.enlist.timeout=-1", "kiln.enlist.timeout=5s", "kiln.enlist.timeout" };
        for (size_t i = 0; i < ELEMENTSOF(bads); i++) {
                CHECK_INT(cmdline_parse(bads[i], &c, &bad), -EINVAL);
                CHECK_STR(bad, bads[i]);
                free(bad), bad = NULL;
        }
}

static void test_unknown(void) {
        struct kiln_cmdline c;
        CHECK_INT(cmdline_parse("kiln.spce=http://x kiln.foo kiln.spce=y", &c, NULL), 0);
        CHECK(c.unknown && c.unknown[0] && c.unknown[1] && !c.unknown[2]);
        CHECK_STR(c.unknown[0], "kiln.spce");
        CHECK_STR(c.unknown[1], "kiln.foo");
        CHECK(!c.spec);
        cmdline_done(&c);
}

static void test_limits(void) {
        struct kiln_cmdline c;
        size_t n = CMDLINE_MAX_BYTES + 2;
        char *big = malloc(n);
        memset(big, 'a', n - 1);
        big[n - 1] = 0;
        CHECK_INT(cmdline_parse(big, &c, NULL), -E2BIG);
        memcpy(big, "kiln.spec=", 10);
        big[CMDLINE_MAX_BYTES] = 0;
        CHECK_INT(cmdline_parse(big, &c, NULL), 0);
        CHECK_INT(strlen(c.spec), CMDLINE_MAX_BYTES - 10);
        cmdline_done(&c);
        free(big);
}

static void test_read(void) {
        char dir[] = "/tmp/kiln-cmdline.XXXXXX";
        CHECK(mkdtemp(dir));
        char path[64];
        snprintf(path, sizeof path, "%s/cmdline", dir);
        FILE *f = fopen(path, "we");
        fputs("console=ttyS0 kiln.spec=http://h/s.yaml kiln.debug\n", f);
        fclose(f);
        struct kiln_cmdline c;
        CHECK_INT(cmdline_read(dir, &c, NULL), 0);
        CHECK_STR(c.spec, "http://h/s.yaml");
        CHECK(c.debug);
        cmdline_done(&c);
        unlink(path);
        CHECK_INT(cmdline_read(dir, &c, NULL), -ENOENT);
        rmdir(dir);
}

int main(void) {
        test_reinstall();
        test_typical();
        test_none();
        test_debug();
        test_fresh();
        test_quotes_and_last_wins();
        test_bad_values();
        test_enlist();
        test_unknown();
        test_limits();
        test_read();
        return TEST_DONE();
}
