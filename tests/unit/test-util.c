#include "log.h"
#include "strbuf.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static void test_parse_size(void) {
        uint64_t v = 0;
        CHECK_INT(parse_size("512", &v, NULL), 0); CHECK_U64(v, 512);
        CHECK_INT(parse_size("1K", &v, NULL), 0); CHECK_U64(v, 1024);
        CHECK_INT(parse_size("256K", &v, NULL), 0); CHECK_U64(v, 262144);
        CHECK_INT(parse_size("20G", &v, NULL), 0); CHECK_U64(v, 20ull << 30);
        CHECK_INT(parse_size("1T", &v, NULL), 0); CHECK_U64(v, 1ull << 40);
        CHECK_INT(parse_size("4MiB", &v, NULL), 0); CHECK_U64(v, 4ull << 20);
        CHECK_INT(parse_size("2g", &v, NULL), 0); CHECK_U64(v, 2ull << 30);
        CHECK_INT(parse_size("2GiB", &v, NULL), 0); CHECK_U64(v, 2ull << 30);
        CHECK_INT(parse_size("30GB", &v, NULL), 0); CHECK_U64(v, 30000000000ull);
        CHECK_INT(parse_size("1TB", &v, NULL), 0); CHECK_U64(v, 1000000000000ull);
        CHECK_INT(parse_size("1kB", &v, NULL), 0); CHECK_U64(v, 1000);
        CHECK_INT(parse_size("512B", &v, NULL), 0); CHECK_U64(v, 512);
        unsigned fl = 0;
        CHECK_INT(parse_size("512", &v, &fl), 0); CHECK_INT(fl, SIZE_BARE);
        CHECK_INT(parse_size("512B", &v, &fl), 0); CHECK_INT(fl, SIZE_BYTES);
        CHECK_INT(parse_size("5GB", &v, &fl), 0); CHECK_INT(fl, SIZE_DECIMAL);
        CHECK_INT(parse_size("5G", &v, &fl), 0); CHECK_INT(fl, 0);
        CHECK_INT(parse_size("2gb", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("2Gb", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("2GIB", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("2 G", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("18446744073709551615", &v, NULL), 0);
        CHECK_INT(parse_size("18446745EB", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("18447PB", &v, NULL), -ERANGE);
        CHECK_INT(parse_size("", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("G", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("1X", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("-1G", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("1.5G", &v, NULL), -EINVAL);
        CHECK_INT(parse_size("99999999999999999999", &v, NULL), -ERANGE);
        CHECK_INT(parse_size("16777216T", &v, NULL), -ERANGE);
        CHECK_INT(parse_size("16383P", &v, NULL), 0);
}

static void test_strbuf(void) {
        struct strbuf sb = { .max = 8 };
        CHECK_INT(strbuf_adds(&sb, "abcd"), 0);
        CHECK_INT(strbuf_addf(&sb, "%d", 1234), 0);
        CHECK_STR(strbuf_str(&sb), "abcd1234");
        CHECK_INT(strbuf_adds(&sb, "x"), -E2BIG);
        strbuf_release(&sb);
        struct strbuf j = STRBUF_INIT;
        CHECK_INT(strbuf_add_json_string(&j, "a\"b\\c\n\x01"), 0);
        CHECK_STR(strbuf_str(&j), "\"a\\\"b\\\\c\\n\\u0001\"");
        strbuf_release(&j);
}

static void test_redact(void) {
        CHECK_INT(log_register_secret("hunter2-secret"), 0);
        char line[] = "key=hunter2-secret; again hunter2-secret.";
        log_redact(line);
        CHECK_STR(line, "key=[redacted]; again [redacted].");
        log_forget_secrets();
}

static void test_hex(void) {
        static const unsigned char bytes[] = { 0x00, 0x0f, 0xa5, 0xff, 0x10 };
        char out[2 * sizeof bytes + 1];
        memset(out, 'X', sizeof out);
        hex_encode(bytes, sizeof bytes, out);
        CHECK_STR(out, "000fa5ff10");
        hex_encode(bytes, 0, out);
        CHECK_STR(out, "");
        CHECK(hex_valid("000fa5ff10", 10));
        CHECK(hex_valid("ABCdef0189", 10));
        CHECK(!hex_valid("000fa5ff1", 10));     /* short */
        CHECK(!hex_valid("000fa5ff100", 10));   /* long */
        CHECK(!hex_valid("000fa5ff1g", 10));    /* not hex */
        CHECK(!hex_valid(" 00fa5ff10", 10));
        CHECK(!hex_valid(NULL, 0));
        CHECK(hex_valid("", 0));
}

static void test_strv_pushdup(void) {
        _cleanup_strv_free_ char **v = NULL;
        char name[] = "md9";
        CHECK_INT(strv_pushdup(&v, name), 0);
        name[0] = 'x';                  /* a copy: the caller's buffer may change */
        CHECK_INT(strv_pushdup(&v, "-q"), 0);
        CHECK_INT(strv_length(v), 2);
        CHECK_STR(v[0], "md9");
        CHECK_STR(v[1], "-q");
        CHECK(v[2] == NULL);
}

static void test_strbuf_errorf(void) {
        _cleanup_strbuf_ struct strbuf e = STRBUF_INIT;
        CHECK_STR(strbuf_why(&e, -EIO), strerror(EIO));       /* the callee said nothing */
        CHECK_STR(strbuf_why(NULL, -ENOENT), strerror(ENOENT));
        CHECK_INT(strbuf_errorf(&e, -EIO, "cannot read '%s'", "/dev/vda"), -EIO);
        CHECK_STR(strbuf_str(&e), "cannot read '/dev/vda'");
        CHECK_STR(strbuf_why(&e, -EIO), "cannot read '/dev/vda'");
        /* the old message may be part of the new one (ASan sees a use after free) */
        CHECK_INT(strbuf_errorf(&e, 0, "%s (gave up after %u attempts)", strbuf_str(&e), 3u), 0);
        CHECK_STR(strbuf_str(&e), "cannot read '/dev/vda' (gave up after 3 attempts)");
        CHECK_INT(strbuf_errorf(&e, -EINVAL, "%s", ""), -EINVAL);
        CHECK_STR(strbuf_str(&e), "");
        CHECK_INT(e.len, 0);
        CHECK_INT(strbuf_errorf(NULL, -ENOENT, "kept nowhere %d", 1), -ENOENT);
        /* a message past the buffer's maximum leaves it empty, not cut */
        _cleanup_strbuf_ struct strbuf small = { .max = 8 };
        CHECK_INT(strbuf_errorf(&small, -EIO, "%s", "short"), -EIO);
        CHECK_STR(strbuf_str(&small), "short");
        CHECK_INT(strbuf_errorf(&small, -EIO, "%s", "much longer than eight"), -EIO);
        CHECK_INT(small.len, 0);
        CHECK_INT(small.max, 8);
}

int main(void) {
        test_strbuf_errorf();
        test_strv_pushdup();
        test_hex();
        test_parse_size();
        test_strbuf();
        test_redact();
        return TEST_DONE();
}
