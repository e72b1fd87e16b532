/* The installed system's boot counter (agent/plan/bootcount.h): its file
 * read and written, the updates of attempt and good, a corrupt file's exact
 * error and what it is taken as, the look's rule below and at the limit, and
 * the spec's failed_boot_limit (default, range). */
#include "bootcount.h"
#include "diag.h"
#include "spec.h"
#include "strbuf.h"
#include "util.h"
#include "tap.h"

static void test_roundtrip(void) {
        struct bootcount bc = {}, back;
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT, err = STRBUF_INIT;
        /* 2026-12-03T05:40:00Z */
        time_t t0 = 1796276400;
        bootcount_attempt(&bc, t0);
        bootcount_attempt(&bc, t0 + 60);
        CHECK_INT(bc.attempts, 2);
        CHECK_STR(bc.last_attempt, "2026-12-03T05:41:00Z");
        CHECK_STR(bc.last_good, "");
        CHECK_INT(bootcount_format(&bc, &t), 0);
        CHECK_STR(strbuf_str(&t), "# written by kiln bootcount: boots begun since the last good one (docs/reinstall.md)\n"
                                  "version=1\nattempts=2\nlast_attempt=2026-12-03T05:41:00Z\n");
        CHECK_INT(bootcount_parse(strbuf_str(&t), &back, &err), 0);
        CHECK_INT(back.attempts, 2);
        CHECK_STR(back.last_attempt, "2026-12-03T05:41:00Z");
        CHECK_STR(back.last_good, "");
        bootcount_good(&bc, t0 + 120);
        CHECK_INT(bc.attempts, 0);
        CHECK_STR(bc.last_good, "2026-12-03T05:42:00Z");
        CHECK_STR(bc.last_attempt, "2026-12-03T05:41:00Z");       /* kept */
        strbuf_reset(&t);
        CHECK_INT(bootcount_format(&bc, &t), 0);
        CHECK_INT(bootcount_parse(strbuf_str(&t), &back, &err), 0);
        CHECK_INT(back.attempts, 0);
        CHECK_STR(back.last_good, "2026-12-03T05:42:00Z");
        /* comments and blank lines, no trailing newline */
        CHECK_INT(bootcount_parse("# x\n\nattempts=7\nversion=1", &back, &err), 0);
        CHECK_INT(back.attempts, 7);
        /* the count stops at its maximum */
        bc.attempts = BOOTCOUNT_ATTEMPTS_MAX;
        bootcount_attempt(&bc, t0);
        CHECK_INT(bc.attempts, BOOTCOUNT_ATTEMPTS_MAX);
}

static void test_corrupt(void) {
        static const struct { const char *text, *err; } bad[] = {
                { "", "no 'version'" },
                { "version=1\n", "no 'attempts'" },
                { "garbage\n", "line 1: expected key=value" },
                { "version=1\nattempts=x\n", "line 2: 'attempts' is not a number: 'x'" },
                { "version=1\nattempts=-1\n", "line 2: 'attempts' is not a number: '-1'" },
                { "version=1\nattempts=\n", "line 2: 'attempts' is not a number: ''" },
                { "version=1\nattempts=1000001\n", "line 2: 'attempts' is out of range: 1000001" },
                { "version=2\nattempts=1\n", "line 1: version 2 (this kiln reads version 1)" },
                { "version=1\nattempts=1\nattempts=2\n", "line 3: 'attempts' given twice" },
                { "version=1\nattempts=1\nlast_good=yesterday\n",
                  "line 3: 'last_good' is not a UTC time (YYYY-MM-DDTHH:MM:SSZ): 'yesterday'" },
                { "version=1\nattempts=1\nlast_attempt=2026-12-03 05:40:00\n",
                  "line 3: 'last_attempt' is not a UTC time (YYYY-MM-DDTHH:MM:SSZ): '2026-12-03 05:40:00'" },
                { "version=1\nattempts=1\nboots=3\n", "line 3: unknown key 'boots'" },
                { "version=1\r\nattempts=1\r\n", "line 1: 'version' is not a number: '1\r'" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
                struct bootcount bc = { .attempts = 42 };
                CHECK_INT(bootcount_parse(bad[i].text, &bc, &err), -EBADMSG);
                CHECK_STR(strbuf_str(&err), bad[i].err);
                CHECK_INT(bc.attempts, 42);     /* untouched */
        }
        /* what an unreadable counter is taken as: one boot that did not end well */
        struct bootcount bc = { .attempts = 42, .last_good = "2026-12-03T05:42:00Z" };
        bootcount_unreadable(&bc);
        CHECK_INT(bc.attempts, 1);
        CHECK_STR(bc.last_good, "");
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_BOOT_REPORT);
        CHECK_INT(bootcount_verdict(&bc, 1), BOOTCOUNT_STOP);
}

static void test_verdict(void) {
        struct bootcount bc = {};
        CHECK_INT(bootcount_verdict(NULL, 3), BOOTCOUNT_BOOT);         /* no file */
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_BOOT);          /* 0: the last boot was good */
        bc.attempts = 1;
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_BOOT_REPORT);
        bc.attempts = 2;
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_BOOT_REPORT);
        bc.attempts = 3;
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_STOP);
        bc.attempts = 9;
        CHECK_INT(bootcount_verdict(&bc, 3), BOOTCOUNT_STOP);
        bc.attempts = 1;
        CHECK_INT(bootcount_verdict(&bc, 1), BOOTCOUNT_STOP);
        CHECK_STR(bootcount_verdict_name(BOOTCOUNT_STOP), "boot-failed, stopped");
}

static void test_spec_limit(void) {
        static const char base[] = "version: 1\ndisks: [{id: d}]\nfilesystems:\n  - {on: d, type: xfs, mount: /}\n";
        struct diags d = {};
        struct spec *s = NULL;
        CHECK_INT(spec_parse("a.yaml", base, strlen(base), &s, &d), 0);
        CHECK(s && s->failed_boot_limit == SPEC_FAILED_BOOT_LIMIT && SPEC_FAILED_BOOT_LIMIT == 3);
        spec_free(s);
        diags_clear(&d);
        static const char five[] = "version: 1\nfailed_boot_limit: 5\ndisks: [{id: d}]\nfilesystems:\n  - {on: d, type: xfs, mount: /}\n";
        s = NULL;
        CHECK_INT(spec_parse("a.yaml", five, strlen(five), &s, &d), 0);
        CHECK(s && s->failed_boot_limit == 5);
        spec_free(s);
        diags_clear(&d);
}

int main(void) {
        test_roundtrip();
        test_corrupt();
        test_verdict();
        test_spec_limit();
        return TEST_DONE();
}
