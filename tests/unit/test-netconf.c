/* The network section: parsed model (spec), resolution against a hand-made
 * inventory and the exact systemd-networkd files (netconf). The bridge, VLAN
 * and NIC files on a real apply are checked in tests/host/test-network.sh. */
#include "diag.h"
#include "netconf.h"
#include "plan.h"
#include "tap.h"

#define S(x) ((char *) (x))

static const char spec_text[] =
        "version: 1\n"
        "disks: [{id: d, path: /dev/vda}]\n"
        "filesystems: [{on: d, type: xfs, mount: /}]\n"
        "network:\n"
        "  bonds:\n"
        "    - {name: bond0, mode: 802.3ad, members: [{name: \"ens1f*\"}, {mac: \"AA:BB:CC:00:00:02\"}]}\n"
        "  bridges:\n"
        "    - {name: cloudbr0, bond: bond0, address: \"10.9.0.${hostname}/24\", gateway: 10.9.0.1}\n"
        "    - {name: cloudbr1, nic: {link: true}, dhcp: true}\n";

static const char hdr[] = "# written by kiln from the host spec's network section\n";

static const char *file(const struct netconf_file *f, size_t n, const char *path) {
        for (size_t i = 0; i < n; i++)
                if (streq(f[i].path, path))
                        return f[i].content;
        return NULL;
}

static void test_model(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = NULL;
        CHECK_INT(spec_parse("t.yaml", spec_text, strlen(spec_text), &s, &d), 0);
        diags_clear(&d);
        if (!s)
                return;
        const struct spec_network *n = &s->network;
        CHECK(n->present);
        CHECK_INT(n->n_bonds, 1);
        CHECK_STR(n->bonds[0].mode, "802.3ad");
        CHECK_INT(n->bonds[0].n_members, 2);
        CHECK_INT(n->bonds[0].members[0].rule, SPEC_NIC_NAME);
        CHECK_STR(n->bonds[0].members[1].value, "aa:bb:cc:00:00:02");   /* lower case */
        CHECK_INT(n->n_bridges, 2);
        CHECK_STR(n->bridges[0].bond, "bond0");
        CHECK_INT(n->bridges[0].address_mark.line, 8);
        CHECK(!n->bridges[0].dhcp);
        CHECK_INT(n->bridges[1].nic.rule, SPEC_NIC_LINK);
        CHECK(n->bridges[1].dhcp);
        CHECK(spec_network_bond(s, "bond0") == &n->bonds[0]);
        CHECK(spec_network_bond(s, "bond1") == NULL);

        CHECK(spec_ip_problem("10.0.0.1/24", true) == NULL);
        CHECK(spec_ip_problem("fd00::1/64", true) == NULL);
        CHECK(spec_ip_problem("fd00::1", false) == NULL);
        CHECK_STR(spec_ip_problem("10.0.0.1", true), "has no '/prefix' (write 10.1.0.5/24)");
        CHECK_STR(spec_ip_problem("10.0.0.1/24", false), "takes no '/prefix'");
        CHECK_STR(spec_ip_problem("10.0.0.1/0", true), "has a prefix that is not 1..32");
        CHECK_STR(spec_ip_problem("fd00::1/129", true), "has a prefix that is not 1..128");
        CHECK_STR(spec_ip_problem("10.0.0.1/2x", true), "has a prefix that is not 1..32");
        CHECK_STR(spec_ip_problem("host.lab", false), "is not an IPv4 or IPv6 address");
        CHECK_STR(spec_ip_problem("10.0.0.0/24", true), "is the network address of its subnet, no host's (give the host's own address, like 10.1.0.5/24)");
        CHECK_STR(spec_ip_problem("10.0.0.3/30", true), "is the broadcast address of its subnet, no host's (give the host's own address, like 10.1.0.5/24)");
        CHECK(spec_ip_problem("10.0.0.0/31", true) == NULL);    /* RFC 3021: both are hosts */
        CHECK(spec_ip_problem("10.0.0.7/32", true) == NULL);
        char why[320];
        CHECK(spec_gateway_problem("10.0.2.15/24", "10.0.2.2", why, sizeof why) == NULL);
        CHECK(spec_gateway_problem("fd00::5/64", "fe80::1", why, sizeof why) == NULL);
        CHECK(spec_gateway_problem("fd00::5/64", "fd00::1", why, sizeof why) == NULL);
        CHECK(spec_gateway_problem("10.0.2.15/23", "10.0.3.1", why, sizeof why) == NULL);      /* 10.0.2.0/23 */
        CHECK_STR(spec_gateway_problem("10.0.2.15/24", "10.0.3.1", why, sizeof why),
                  "is outside 10.0.2.0/24, the subnet of 'address' 10.0.2.15/24: the kernel has no route to it, so the node "
                  "would have no default route (give a gateway in that subnet, or the right prefix)");
        CHECK_STR(spec_gateway_problem("fd00:1::5/64", "fd00:2::1", why, sizeof why),
                  "is outside fd00:1::/64, the subnet of 'address' fd00:1::5/64: the kernel has no route to it, so the node "
                  "would have no default route (give a gateway in that subnet, or the right prefix)");
}

static void test_files(void) {
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = NULL;
        CHECK_INT(spec_parse("t.yaml", spec_text, strlen(spec_text), &s, &d), 0);
        if (!s)
                return;
        struct inv_nic nics[] = {
                { .name = S("eno1"), .mac = S("aa:bb:cc:00:00:09"), .up = true },
                { .name = S("ens1f0"), .mac = S("aa:bb:cc:00:00:01"), .up = true },
                { .name = S("ens1f1"), .mac = S("aa:bb:cc:00:00:02"), .up = false },
        };
        struct inventory inv = { .hostname = S("7"), .nics = nics, .n_nics = 3 };
        _cleanup_(netconf_freep) struct netconf *n = NULL;
        CHECK_INT(netconf_build(s, &inv, &n, &d), 0);
        CHECK_INT(d.n, 0);
        if (!n)
                return;
        CHECK(n->bridges[0].bond == &s->network.bonds[0]);
        CHECK_STR(n->bridges[0].address, "10.9.0.7/24");
        CHECK(n->bridges[1].nic == &nics[0]);           /* the first NIC with link */
        CHECK(n->bonds[0].members[0] == &nics[1] && n->bonds[0].members[1] == &nics[2]);

        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        CHECK_INT(netconf_describe(n, &t), 0);
        CHECK_STR(strbuf_str(&t), "cloudbr0 over bond bond0 802.3ad of ens1f0 (aa:bb:cc:00:00:01), ens1f1 (aa:bb:cc:00:00:02), "
                  "10.9.0.7/24 via 10.9.0.1; cloudbr1 over eno1 (aa:bb:cc:00:00:09), DHCP");

        struct netconf_file *f = NULL;
        size_t nf = 0;
        CHECK_INT(netconf_files(n, &f, &nf), 0);
        CHECK_INT(nf, 10);      /* 2 bridges x 2, the bond 2, its 2 members, cloudbr1's NIC 1, the modules; no resolv.conf */
        char want[512];
        snprintf(want, sizeof want, "%s[NetDev]\nName=cloudbr0\nKind=bridge\nMACAddress=aa:bb:cc:00:00:01\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/10-kiln-cloudbr0.netdev"), want);
        snprintf(want, sizeof want, "%s[Match]\nName=cloudbr0\n\n[Network]\nAddress=10.9.0.7/24\nGateway=10.9.0.1\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/10-kiln-cloudbr0.network"), want);
        snprintf(want, sizeof want, "%s[NetDev]\nName=bond0\nKind=bond\nMACAddress=aa:bb:cc:00:00:01\n\n[Bond]\nMode=802.3ad\nMIIMonitorSec=100ms\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/10-kiln-bond0.netdev"), want);
        snprintf(want, sizeof want, "%s[Match]\nName=bond0\n\n[Network]\nBridge=cloudbr0\nLinkLocalAddressing=no\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/10-kiln-bond0.network"), want);
        snprintf(want, sizeof want, "%s[Match]\nPermanentMACAddress=aa:bb:cc:00:00:02\n\n[Network]\nBond=bond0\nLinkLocalAddressing=no\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/20-kiln-aabbcc000002.network"), want);
        snprintf(want, sizeof want, "%s[Match]\nPermanentMACAddress=aa:bb:cc:00:00:09\n\n[Network]\nBridge=cloudbr1\nLinkLocalAddressing=no\n", hdr);
        CHECK_STR(file(f, nf, "/etc/systemd/network/20-kiln-aabbcc000009.network"), want);
        /* the bridge's and the bond's modules before systemd-networkd starts; no VLAN, no 8021q */
        snprintf(want, sizeof want, "%sbridge\nbonding\n", hdr);
        CHECK_STR(file(f, nf, "/etc/modules-load.d/kiln-network.conf"), want);
        CHECK(file(f, nf, "/etc/resolv.conf") == NULL);
        netconf_files_free(f, nf);

        /* no NIC with link: refused, naming the rule and the machine's NICs */
        for (size_t i = 0; i < 3; i++)
                nics[i].up = false;
        _cleanup_(netconf_freep) struct netconf *n2 = NULL;
        CHECK_INT(netconf_build(s, &inv, &n2, &d), -EPERM);
        CHECK(n2 == NULL);
        CHECK_INT(d.n, 1);
        if (d.n == 1) {
                CHECK_STR(d.items[0].message, "'nic' of bridge 'cloudbr1': no NIC of this machine matches 'link: true' "
                          "(this machine has eno1 aa:bb:cc:00:00:09, ens1f0 aa:bb:cc:00:00:01, ens1f1 aa:bb:cc:00:00:02)");
                CHECK_INT(d.items[0].line, 9);
        }
        diags_clear(&d);
}

/* A bond of one member: the spec warns; the plan names the NICs with link
 * nothing takes (the likely forgotten member), not those without link. */
static void test_lone_member(void) {
        static const char text[] =
                "version: 1\n"
                "disks: [{id: d, path: /dev/vda}]\n"
                "filesystems: [{on: d, type: xfs, mount: /}]\n"
                "network:\n"
                "  bonds: [{name: bond0, members: [{name: eno1}]}]\n"
                "  bridges: [{name: cloudbr0, bond: bond0, dhcp: true}]\n";
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = NULL;
        CHECK_INT(spec_parse("t.yaml", text, strlen(text), &s, &d), 0);
        CHECK_INT(d.n, 1);
        if (d.n == 1)
                CHECK_STR(d.items[0].message, "bond 'bond0' has one member: it has no NIC to fail over to (add the second NIC "
                          "to 'members', or put the bridge on the NIC itself with 'nic')");
        diags_clear(&d);
        if (!s)
                return;
        struct inv_nic nics[] = {
                { .name = S("eno1"), .mac = S("aa:bb:cc:00:00:01"), .up = true },
                { .name = S("eno2"), .mac = S("aa:bb:cc:00:00:02"), .up = true },
                { .name = S("eno3"), .mac = S("aa:bb:cc:00:00:03"), .up = false },
        };
        struct inventory inv = { .hostname = S("n1"), .nics = nics, .n_nics = 3 };
        _cleanup_(netconf_freep) struct netconf *n = NULL;
        CHECK_INT(netconf_build(s, &inv, &n, &d), 0);
        CHECK_INT(d.n, 1);
        if (d.n == 1) {
                CHECK_STR(d.items[0].message, "bond 'bond0' has one member, eno1 (aa:bb:cc:00:00:01); eno2 (aa:bb:cc:00:00:02) "
                          "has link and is taken by nothing: the forgotten second member?");
                CHECK_INT(d.items[0].line, 5);
        }
        diags_clear(&d);
}

/* A gateway with variables is checked against the expanded address. */
static void test_gateway_expanded(void) {
        static const char text[] =
                "version: 1\n"
                "disks: [{id: d, path: /dev/vda}]\n"
                "filesystems: [{on: d, type: xfs, mount: /}]\n"
                "network:\n"
                "  bridges: [{name: cloudbr0, nic: {link: true}, address: \"10.${hostname}.0.5/24\", gateway: 10.7.1.1}]\n";
        struct diags d = {};
        _cleanup_spec_free_ struct spec *s = NULL;
        CHECK_INT(spec_parse("t.yaml", text, strlen(text), &s, &d), 0);
        CHECK_INT(d.n, 0);
        if (!s)
                return;
        struct inv_nic nics[] = { { .name = S("eno1"), .mac = S("aa:bb:cc:00:00:01"), .up = true } };
        struct inventory inv = { .hostname = S("7"), .nics = nics, .n_nics = 1 };
        _cleanup_(netconf_freep) struct netconf *n = NULL;
        CHECK_INT(netconf_build(s, &inv, &n, &d), -EINVAL);
        CHECK_INT(d.n, 1);
        if (d.n == 1)
                CHECK_STR(d.items[0].message, "'gateway' of bridge 'cloudbr0' '10.7.1.1' is outside 10.7.0.0/24, the subnet of "
                          "'address' 10.7.0.5/24: the kernel has no route to it, so the node would have no default route "
                          "(give a gateway in that subnet, or the right prefix)");
        diags_clear(&d);
}

int main(void) {
        test_model();
        test_files();
        test_lone_member();
        test_gateway_expanded();
        return TEST_DONE();
}
