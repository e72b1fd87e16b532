/* Backoff arithmetic and the pure parts of fetch (URL schemes, digests),
 * plus fetch_to_buffer over file:// (no network needed). */
#include "backoff.h"
#include "fetch.h"
#include "tap.h"

#include <fcntl.h>
#include <limits.h>

/* A fault's window grows: [d/2, d/2 + max(d/2, 4 s)] with d = initial * 2^n,
 * capped (tests use tiny caps: the window never exceeds the cap). */
static void test_backoff(void) {
        struct backoff b = BACKOFF_INIT(100, 1000, 0);
        for (int round = 0; round < 200; round++) {
                unsigned d0 = backoff_spread_ms(&b, 0, false, 0), d3 = backoff_spread_ms(&b, 3, false, 0);
                unsigned d9 = backoff_spread_ms(&b, 9, false, 0), d40 = backoff_spread_ms(&b, 40, false, 0);
                CHECK(d0 >= 50 && d0 <= 50 + 1000);    /* window: min(4 s, cap 1 s) */
                CHECK(d3 >= 400 && d3 <= 400 + 1000);
                CHECK(d9 >= 500 && d9 <= 1500);        /* capped */
                CHECK(d40 >= 500 && d40 <= 1500);      /* no overflow */
        }
        /* jitter: not every delay is the same */
        unsigned first = backoff_spread_ms(&b, 5, false, 0), differ = 0;
        for (int i = 0; i < 50; i++)
                differ += backoff_spread_ms(&b, 5, false, 0) != first;
        CHECK(differ > 0);
        CHECK(backoff_status_is_pushback(503) && backoff_status_is_pushback(429));
        CHECK(!backoff_status_is_pushback(500) && !backoff_status_is_pushback(502) && !backoff_status_is_pushback(404));
}

/* The spread a rack needs. Faults: every window at least
 * BACKOFF_MIN_WINDOW_MS wide (never wider than the cap), never before
 * Retry-After (itself capped). Push-back: one steady window,
 * [1 s, 1 s + BACKOFF_PUSHBACK_WINDOW_MS] whatever the retry's number, or
 * [RA, RA + max(RA, 4 s)] after a Retry-After. */
static void test_spread(void) {
        struct backoff b = BACKOFF_INIT(0, 0, 0);       /* fetch's defaults: 500 ms doubling to 30 s */
        unsigned lo0 = UINT_MAX, hi0 = 0, in_first_second = 0;
        unsigned plo = UINT_MAX, phi = 0, p_first_second = 0;
        for (int round = 0; round < 2000; round++) {
                unsigned d0 = backoff_spread_ms(&b, 0, false, 0);
                CHECK(d0 >= 250 && d0 <= 250 + BACKOFF_MIN_WINDOW_MS);
                lo0 = d0 < lo0 ? d0 : lo0;
                hi0 = d0 > hi0 ? d0 : hi0;
                in_first_second += d0 < 1250;
                unsigned d9 = backoff_spread_ms(&b, 9, false, 0);       /* d = 30 s: [15 s, 30 s] */
                CHECK(d9 >= 15000 && d9 <= 30000);
                unsigned ra = backoff_spread_ms(&b, 0, false, 7000);    /* Retry-After: 7 s */
                CHECK(ra >= 7000 && ra <= 7000 + BACKOFF_MIN_WINDOW_MS);
                unsigned far = backoff_spread_ms(&b, 0, false, 86400u * 1000u);   /* a day: capped */
                CHECK(far >= BACKOFF_RETRY_AFTER_MAX_MS && far <= BACKOFF_RETRY_AFTER_MAX_MS + BACKOFF_MIN_WINDOW_MS);

                for (unsigned n = 0; n < 40; n += 13) {                  /* the same window every time */
                        unsigned p = backoff_spread_ms(&b, n, true, 0);
                        CHECK(p >= BACKOFF_PUSHBACK_FLOOR_MS && p <= BACKOFF_PUSHBACK_FLOOR_MS + BACKOFF_PUSHBACK_WINDOW_MS);
                        plo = p < plo ? p : plo;
                        phi = p > phi ? p : phi;
                        p_first_second += n == 0 && p < BACKOFF_PUSHBACK_FLOOR_MS + 1000;
                }
                unsigned p1 = backoff_spread_ms(&b, 5, true, 1000);    /* Retry-After: 1 s: [1 s, 5 s] */
                CHECK(p1 >= 1000 && p1 <= 1000 + BACKOFF_MIN_WINDOW_MS);
                unsigned p7 = backoff_spread_ms(&b, 0, true, 7000);    /* 7 s: [7 s, 14 s] */
                CHECK(p7 >= 7000 && p7 <= 14000);
                unsigned pfar = backoff_spread_ms(&b, 0, true, 86400u * 1000u);   /* capped, window too */
                CHECK(pfar >= BACKOFF_RETRY_AFTER_MAX_MS && pfar <= BACKOFF_RETRY_AFTER_MAX_MS + BACKOFF_PUSHBACK_WINDOW_MS);
        }
        /* the whole window is used: about a quarter of the first retries in its first second */
        CHECK(lo0 < 500 && hi0 > BACKOFF_MIN_WINDOW_MS - 250);
        CHECK(in_first_second > 350 && in_first_second < 650);
        /* push-back: about 1/16 of the retries in the window's first second (2000 x 1/16 = 125) */
        CHECK(plo < BACKOFF_PUSHBACK_FLOOR_MS + 500 && phi > BACKOFF_PUSHBACK_FLOOR_MS + BACKOFF_PUSHBACK_WINDOW_MS - 500);
        CHECK(p_first_second > 60 && p_first_second < 200);
        /* a cap below the window narrows both (tests use tiny caps) */
        struct backoff t = BACKOFF_INIT(1, 2, 0);
        for (int round = 0; round < 200; round++) {
                unsigned d = backoff_spread_ms(&t, 3, false, 0), p = backoff_spread_ms(&t, 3, true, 0);
                CHECK(d >= 1 && d <= 3);
                CHECK(p >= 2 && p <= 4);
        }
}

static void test_urls(void) {
        CHECK_INT(fetch_check_url("http://127.0.0.1:8080/x"), 0);
        CHECK_INT(fetch_check_url("https://example.invalid/x"), 0);
        CHECK_INT(fetch_check_url("file:///tmp/x"), 0);
        CHECK_INT(fetch_check_url("ftp://127.0.0.1/x"), -EPROTONOSUPPORT);
        CHECK_INT(fetch_check_url("gopher://127.0.0.1/x"), -EPROTONOSUPPORT);
        CHECK_INT(fetch_check_url("scp://127.0.0.1/x"), -EPROTONOSUPPORT);
        CHECK_INT(fetch_check_url(""), -EINVAL);
        CHECK_INT(fetch_check_url(NULL), -EINVAL);

        char *buf = NULL;
        size_t len = 0;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(fetch_to_buffer("ftp://127.0.0.1/x", NULL, 100, NULL, &buf, &len, NULL, &err), -EPROTONOSUPPORT);
        CHECK(buf == NULL);
        CHECK_STR(strbuf_str(&err), "unsupported URL scheme (only http, https and file)");
}

static void test_digests(void) {
        const char *a = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        CHECK(sha256_hex_valid(a));
        CHECK(!sha256_hex_valid("e3b0"));
        CHECK(!sha256_hex_valid("g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        CHECK(sha256_hex_equal(a, "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
        CHECK(!sha256_hex_equal(a, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b856"));
        CHECK(!sha256_hex_equal(a, NULL));
}

static int cr(const char *v, struct fetch_content_range *ret) {
        return fetch_parse_content_range(v, strlen(v), ret);
}

static void test_content_range(void) {
        struct fetch_content_range c, untouched = { .first = 7, .last = 7, .complete = 8, .complete_known = true };

        CHECK_INT(cr("bytes 100-199/1000", &c), 0);
        CHECK_U64(c.first, 100);
        CHECK_U64(c.last, 199);
        CHECK_U64(c.complete, 1000);
        CHECK(c.complete_known);
        /* what follows the colon as curl hands it over: blank, CR LF */
        CHECK_INT(cr(" bytes 0-0/1\r\n", &c), 0);
        CHECK_U64(c.last, 0);
        CHECK_U64(c.complete, 1);
        CHECK_INT(cr("\tBYTES\t\t5-9/*  ", &c), 0);
        CHECK_U64(c.first, 5);
        CHECK_U64(c.last, 9);
        CHECK(!c.complete_known);
        CHECK_U64(c.complete, 0);
        CHECK_INT(cr("bytes 9223372036854775806-9223372036854775806/9223372036854775807", &c), 0);
        CHECK_U64(c.first, INT64_MAX - 1);
        CHECK_U64(c.complete, INT64_MAX);
        /* only len bytes count: the rest of curl's buffer is not read */
        CHECK_INT(fetch_parse_content_range("bytes 1-2/3 and more", 11, &c), 0);
        CHECK_U64(c.complete, 3);

        static const struct { const char *v; int err; } bad[] = {
                /* overflow: beyond INT64_MAX, and beyond UINT64_MAX */
                { "bytes 0-9223372036854775808/*", -ERANGE },
                { "bytes 9223372036854775808-9223372036854775809/*", -ERANGE },
                { "bytes 0-1/99999999999999999999999", -ERANGE },
                /* start > end, end at or past the total */
                { "bytes 200-100/1000", -ERANGE },
                { "bytes 0-1000/1000", -ERANGE },
                { "bytes 999-1000/1000", -ERANGE },
                { "bytes 0-0/0", -ERANGE },
                /* missing parts */
                { "", -EINVAL },
                { "   \r\n", -EINVAL },
                { "bytes", -EINVAL },
                { "bytes ", -EINVAL },
                { "bytes 100", -EINVAL },
                { "bytes 100-", -EINVAL },
                { "bytes 100-199", -EINVAL },
                { "bytes 100-199/", -EINVAL },
                { "bytes -199/1000", -EINVAL },
                { "bytes 100-/1000", -EINVAL },
                { "100-199/1000", -EINVAL },
                { "bytes100-199/1000", -EINVAL },
                /* the unsatisfied-range form answers a 416, not a resume */
                { "bytes */1000", -EINVAL },
                /* another unit, signs, spaces inside, other number forms */
                { "items 100-199/1000", -EINVAL },
                { "bytesx 100-199/1000", -EINVAL },
                { "bytes +100-199/1000", -EINVAL },
                { "bytes 100--199/1000", -EINVAL },
                { "bytes 100 - 199/1000", -EINVAL },
                { "bytes 100-199 /1000", -EINVAL },
                { "bytes 0x10-0x20/1000", -EINVAL },
                /* trailing junk */
                { "bytes 100-199/1000x", -EINVAL },
                { "bytes 100-199/1000 1000", -EINVAL },
                { "bytes 100-199/1000/1000", -EINVAL },
                { "bytes 100-199/*x", -EINVAL },
                { "bytes 100-199/**", -EINVAL },
                { "bytes 100-199/1000, bytes 200-299/1000", -EINVAL },
                { "bytes 100-199/1000\r\nX-Other: 1", -EINVAL },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                c = untouched;
                int r = cr(bad[i].v, &c);
                if (r != bad[i].err)
                        fprintf(stderr, "content range '%s'\n", bad[i].v);
                CHECK_INT(r, bad[i].err);
                CHECK(c.first == 7 && c.last == 7 && c.complete == 8 && c.complete_known);  /* ret untouched */
        }
        /* a NUL inside is junk, not an end */
        CHECK_INT(fetch_parse_content_range("bytes 1-2/3\0", 12, &c), -EINVAL);
        CHECK_INT(fetch_parse_content_range(NULL, 0, &c), -EINVAL);
}

static void test_file_buffer(void) {
        char path[] = "/tmp/kiln-test-fetch.XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK_INT(write(fd, "hello\n", 6), 6);
        close(fd);
        char url[128];
        snprintf(url, sizeof(url), "file://%s", path);

        char *buf = NULL;
        size_t len = 0;
        /* one result and one err through every call: each starts by emptying them */
        struct fetch_result res = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(fetch_to_buffer(url, NULL, 100, NULL, &buf, &len, NULL, NULL), 0);
        CHECK_STR(buf, "hello\n");
        CHECK_INT(len, 6);
        free(buf);
        buf = NULL;

        /* the sha256 of "hello\n" */
        CHECK_INT(fetch_to_buffer(url, NULL, 100, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
                                  &buf, &len, &res, &err), 0);
        CHECK_STR(res.sha256, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
        CHECK_INT(err.len, 0);
        free(buf);
        buf = NULL;
        CHECK_INT(fetch_to_buffer(url, NULL, 100, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                                  &buf, &len, &res, &err), -EBADMSG);
        CHECK(buf == NULL);
        CHECK_STR(strbuf_str(&err), "sha256 mismatch: expected e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855, "
                             "got 5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
        CHECK_INT(fetch_to_buffer(url, NULL, 5, NULL, &buf, &len, NULL, &err), -EFBIG);
        CHECK(buf == NULL);
        CHECK_STR(strbuf_str(&err), "larger than the limit of 5 bytes");
        CHECK_INT(fetch_to_buffer(url, NULL, 6, NULL, &buf, &len, NULL, &err), 0);
        CHECK_INT(err.len, 0);
        free(buf);
        buf = NULL;

        unlink(path);
        struct fetch_options o = { .no_retry = true };
        CHECK_INT(fetch_to_buffer(url, &o, 100, NULL, &buf, &len, &res, &err), -ENOENT);
        CHECK_INT(res.attempts, 1);
        CHECK(strstr(strbuf_str(&err), path));
}

int main(void) {
        test_backoff();
        test_spread();
        test_urls();
        test_digests();
        test_content_range();
        test_file_buffer();
        return TEST_DONE();
}
