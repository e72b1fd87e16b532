/* url_display() and url_scrub(): credentials in a URL (userinfo, the query
 * string, a fragment) never reach what kiln shows. */
#include "tap.h"
#include "url.h"
#include "util.h"

static void check_display(const char *in, const char *want) {
        char buf[URL_DISPLAY_MAX];
        const char *got = url_display(in, buf);
        CHECK(got == buf);
        if (!streq(got, want))
                fprintf(stderr, "url_display('%s')\n", in ? in : "(null)");
        CHECK_STR(got, want);
}

static void test_display(void) {
        check_display("https://images.example/os/base.tar.zst", "https://images.example/os/base.tar.zst");
        check_display("http://127.0.0.1:8080/x", "http://127.0.0.1:8080/x");
        check_display("https://user:pa55@images.example:8443/base.tar.zst", "https://images.example:8443/base.tar.zst");
        check_display("https://user@images.example/b", "https://images.example/b");
        check_display("https://a@b:c@d@host/p", "https://host/p");     /* the last '@' ends the userinfo */
        check_display("https://u:p@host", "https://host");
        check_display("https://u:p@host?token=abc", "https://host?...");
        check_display("https://host/base.tar.zst?token=abc&sig=def", "https://host/base.tar.zst?...");
        check_display("https://host/k?X-Amz-Signature=abc#frag", "https://host/k?...");
        check_display("https://host/k#access_token=abc", "https://host/k#...");
        check_display("https://host/path/with@at/x?key=1", "https://host/path/with@at/x?...");
        check_display("file:///etc/kiln/key", "file:///etc/kiln/key");
        check_display("http://[::1]:80/x?q", "http://[::1]:80/x?...");
        check_display("https://host/a\nb\x7f", "https://host/a_b_");
        /* not URLs: rendered the same way */
        check_display("", "");
        check_display(NULL, "");
        check_display("/var/lib/kiln/spec.yaml", "/var/lib/kiln/spec.yaml");
        check_display("https:/u:p@host/x", "host/x");
        check_display("/a@b/c", "b/c");
        check_display("user:secret@host/x?y", "host/x?...");
        check_display("noscheme?token=1", "noscheme?...");
        check_display("ht tp://u:p@h/x", "h/x");      /* no scheme: up to the last @ before a / goes */

        /* long: cut at the maximum with "...", the query still elided */
        char longurl[2000], buf[URL_DISPLAY_MAX];
        memcpy(longurl, "https://u:SECRETPW@host/", 24);
        memset(longurl + 24, 'a', 1900);
        memcpy(longurl + 1924, "?token=SECRET", 14);
        const char *d = url_display(longurl, buf);
        CHECK_INT(strlen(d), URL_DISPLAY_MAX - 1);
        CHECK(strncmp(d, "https://host/aaa", 16) == 0);
        CHECK(streq(d + URL_DISPLAY_MAX - 4, "..."));
        CHECK(!strstr(d, "SECRET"));
        /* a long userinfo is dropped whole */
        memcpy(longurl, "https://u:", 10);
        memset(longurl + 10, 'S', 1500);
        memcpy(longurl + 1510, "@host/p", 8);
        check_display(longurl, "https://host/p");

        _cleanup_free_ char *dup = url_display_dup("https://u:p@h/x?t=1");
        CHECK_STR(dup, "https://h/x?...");
        CHECK(url_display_dup(NULL) == NULL);
}

static void check_scrub(const char *in, const char *want) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        CHECK_INT(url_scrub(in, strlen(in), &sb), 0);
        if (!streq(strbuf_str(&sb), want))
                fprintf(stderr, "url_scrub('%s')\n", in);
        CHECK_STR(strbuf_str(&sb), want);
}

static void test_scrub(void) {
        check_scrub("", "");
        check_scrub("no url here", "no url here");
        check_scrub("failed to fetch 'https://u:p@h/x?token=1': HTTP 404", "failed to fetch 'https://h/x?...': HTTP 404");
        check_scrub("Issue another request to this URL: 'http://h:1/a?sig=2' and http://u@g/b?c",
                    "Issue another request to this URL: 'http://h:1/a?...' and http://g/b?...");
        check_scrub("Location: https://cdn/x?X-Amz-Signature=abc\r", "Location: https://cdn/x?...\r");
        check_scrub("odd ://u:p@h/x?y end", "odd ://h/x?... end");
        check_scrub("<http://u:p@h/?q>", "<http://h/?...>");
        /* only len bytes */
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        CHECK_INT(url_scrub("http://h/a?b", 8, &sb), 0);
        CHECK_STR(strbuf_str(&sb), "http://h");
        /* the strbuf's maximum holds */
        _cleanup_strbuf_ struct strbuf small = STRBUF_INIT;
        small.max = 4;
        CHECK_INT(url_scrub("http://h/a", 10, &small), -E2BIG);
}

static void check_debug(const char *in, bool out, const char *want) {
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        CHECK_INT(url_scrub_debug_line(in, strlen(in), out, &sb), 0);
        if (!streq(strbuf_str(&sb), want))
                fprintf(stderr, "url_scrub_debug_line('%s')\n", in);
        CHECK_STR(strbuf_str(&sb), want);
}

static void test_debug_lines(void) {
        check_debug("GET /blob?token=abc&sig=def HTTP/1.1", true, "GET /blob?... HTTP/1.1");
        check_debug("GET /blob?token=abc", true, "GET /blob?...");
        check_debug("GET /blob HTTP/1.1", true, "GET /blob HTTP/1.1");
        check_debug("Host: 127.0.0.1:8080", true, "Host: 127.0.0.1:8080");
        check_debug("Authorization: Basic a2lsbjpzZWNyZXQ=", true, "Authorization: [redacted]");
        check_debug("proxy-authorization: Bearer x", true, "proxy-authorization: [redacted]");
        check_debug("Cookie: session=abc", true, "Cookie: [redacted]");
        check_debug("Set-Cookie: session=abc; Path=/", false, "Set-Cookie: [redacted]");
        check_debug("Location: /blob?sig=abc", false, "Location: /blob?...");
        check_debug("location:https://u:p@cdn/x?X-Amz-Signature=abc", false, "location: https://cdn/x?...");
        check_debug("Issue another request to this URL: 'http://h:1/blob?sig=abc'", false,
                    "Issue another request to this URL: 'http://h:1/blob?...'");
        /* HTTP/2: curl 7.88 and 8.x describe the pseudo-headers as text */
        check_debug("h2h3 [:path: /blob?sig=abc]", false, "h2h3 [:path: /blob?...]");
        check_debug("[HTTP/2] [1] [:path: /k?X-Amz-Signature=abc&x=1]", false, "[HTTP/2] [1] [:path: /k?...]");
        check_debug("[HTTP/2] [1] [:path: /k]", false, "[HTTP/2] [1] [:path: /k]");
        check_debug("HTTP/1.1 200 OK", false, "HTTP/1.1 200 OK");
        check_debug("", false, "");
}

int main(void) {
        test_display();
        test_scrub();
        test_debug_lines();
        return TEST_DONE();
}
