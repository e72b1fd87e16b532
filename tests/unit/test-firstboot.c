/* The first-boot registration's texts (report/firstboot.h,
 * apply/firstboot_install.h): the config round trip and every refusal of
 * its parser, the unit, and the sshd drop-in for each kind of login. */
#include "firstboot.h"
#include "firstboot_install.h"
#include "tap.h"
#include "util.h"

#define SHA "e8f6986bc1dac9902ea90aaccff00dbd742023edb9b779cb6962df6bd4c2634e"

static void parse_fails(const char *text, const char *want) {
        struct firstboot_conf c = {};
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(firstboot_conf_parse(text, &c, &err), -EINVAL);
        CHECK_STR(strbuf_str(&err), want);
        CHECK(!c.spec_url && !c.report);        /* set only on success */
}

static void test_conf(void) {
        struct firstboot_conf c = {
                .spec_url = (char *) "http://10.0.2.100/specs/52:54:00:12:34:56.yaml", .spec_sha256 = (char *) SHA,
                .ca = (char *) FIRSTBOOT_CA, .report = (char *) FIRSTBOOT_REPORT, .marker = (char *) FIRSTBOOT_MARKER,
                .ip = (char *) "10.1.0.5",
        }, back = {};
        struct strbuf sb = STRBUF_INIT;
        _cleanup_strbuf_ struct strbuf err = STRBUF_INIT;
        CHECK_INT(firstboot_conf_format(&c, &sb), 0);
        CHECK(strstr(strbuf_str(&sb), "\nspec=http://10.0.2.100/specs/52:54:00:12:34:56.yaml\nspec_sha256=" SHA
                                      "\nca=/etc/kiln/ca.pem\nreport=/var/lib/kiln/report.json\n"
                                      "marker=/var/lib/kiln/registered\nip=10.1.0.5\n") != NULL);
        CHECK_INT(firstboot_conf_parse(strbuf_str(&sb), &back, &err), 0);
        CHECK_STR(back.spec_url, c.spec_url);
        CHECK_STR(back.spec_sha256, SHA);
        CHECK_STR(back.ca, FIRSTBOOT_CA);
        CHECK_STR(back.report, FIRSTBOOT_REPORT);
        CHECK_STR(back.marker, FIRSTBOOT_MARKER);
        CHECK_STR(back.ip, "10.1.0.5");
        firstboot_conf_done(&back);
        strbuf_release(&sb);

        /* optional keys may be missing; CRLF line ends are taken */
        CHECK_INT(firstboot_conf_parse("# c\r\nspec=http://a/s\r\nspec_sha256=" SHA "\r\nreport=/r\r\nmarker=/m\r\n", &back, &err), 0);
        CHECK_STR(back.spec_url, "http://a/s");
        CHECK(!back.ca && !back.ip);
        firstboot_conf_done(&back);

        /* a required value missing, or one with a line break, is not written */
        c.spec_sha256 = NULL;
        CHECK_INT(firstboot_conf_format(&c, &sb), -EINVAL);
        strbuf_release(&sb);
        c.spec_sha256 = (char *) SHA;
        c.ip = (char *) "10.1.0.5\nspec=http://evil/";
        CHECK_INT(firstboot_conf_format(&c, &sb), -EINVAL);
        strbuf_release(&sb);

        const char *base = "spec=http://a/s\nspec_sha256=" SHA "\nreport=/r\nmarker=/m\n";
        char t[512];
        snprintf(t, sizeof t, "%sfoo=bar\n", base);
        parse_fails(t, "line 5: unknown key 'foo'");
        snprintf(t, sizeof t, "%sspec=http://b/s\n", base);
        parse_fails(t, "line 5: 'spec' given twice");
        snprintf(t, sizeof t, "%sip=\n", base);
        parse_fails(t, "line 5: 'ip' is empty");
        snprintf(t, sizeof t, "%sip=10.0.0.1\rx\n", base);
        parse_fails(t, "line 5: 'ip' holds a carriage return");
        snprintf(t, sizeof t, "%sjust words\n", base);
        parse_fails(t, "line 5: expected key=value");
        parse_fails("spec=http://a/s\nreport=/r\nmarker=/m\n", "no 'spec_sha256'");
        parse_fails("spec=http://a/s\nspec_sha256=abc\nreport=/r\nmarker=/m\n", "'spec_sha256' is not 64 hexadecimal digits");
        parse_fails("", "no 'spec'");
}

static void test_unit(void) {
        struct strbuf sb = STRBUF_INIT;
        CHECK_INT(firstboot_unit_text(&sb), 0);
        const char *u = strbuf_str(&sb);
        CHECK(strstr(u, "\nExecStart=/usr/local/sbin/kiln register --firstboot /etc/kiln/firstboot.conf\n"));
        CHECK(strstr(u, "\nConditionPathExists=!/var/lib/kiln/registered\n"));
        CHECK(strstr(u, "\nAfter=network-online.target ssh.service libvirtd.service\n"));
        CHECK(strstr(u, "\nWants=network-online.target\n"));
        CHECK(strstr(u, "\nType=oneshot\n"));
        CHECK(strstr(u, "\nWantedBy=multi-user.target\n"));
        strbuf_release(&sb);
}

static void dropin(const char *user, const char *pw, const char *key, const char *want) {
        struct spec_cloudstack c = { .host_username = (char *) user, .host_password = (char *) pw,
                                     .host_authorized_key = (char *) key };
        struct strbuf sb = STRBUF_INIT;
        CHECK_INT(firstboot_sshd_dropin(&c, &sb), 0);
        const char *body = strstr(strbuf_str(&sb), "\nAllowUsers ");
        CHECK_STR(body ? body + 1 : NULL, want);
        strbuf_release(&sb);
}

static void test_dropin(void) {
        const char *key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEk3c2tpbG4 mgmt";
        dropin("root", "pw-0123456789", NULL, "AllowUsers root\nPermitRootLogin yes\nPasswordAuthentication yes\n"
                                              "KbdInteractiveAuthentication no\nPubkeyAuthentication no\n");
        dropin("root", NULL, key, "AllowUsers root\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                                  "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n");
        dropin("cloud", "pw-0123456789", key, "AllowUsers cloud\nPermitRootLogin no\nPasswordAuthentication yes\n"
                                              "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\n");
}

int main(void) {
        test_conf();
        test_unit();
        test_dropin();
        return TEST_DONE();
}
