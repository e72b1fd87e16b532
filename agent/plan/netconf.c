/* The installed system's network, resolved and rendered as systemd-networkd
 * files (netconf.h; the section is docs/spec.md "network"). */
#include "netconf.h"

#include "plan.h"

#include <fnmatch.h>
#include <strings.h>

struct nbuild {
        const struct spec *spec;
        const struct inventory *inv;
        struct spec_vars vars;
        const struct spec_node *row;    /* the machine's nodes row (plan_node_row()), or NULL */
        struct plan_findings f;
        const char **taken_by;          /* per inventory NIC: "bond 'bond0'" / "bridge 'cloudbr0'" (untagged) */
        char **taken_text;              /* owned texts of taken_by */
};

#define nfinding(b, refusal, m, ...) plan_finding(&(b)->f, (refusal), (m), __VA_ARGS__)

/* " (this machine has eth0 52:54:00:12:34:56, eth1 ...)" */
static int nics_text(const struct inventory *inv, struct strbuf *sb) {
        if (inv->n_nics == 0)
                return strbuf_adds(sb, " (this machine has no NIC)");
        int r = strbuf_adds(sb, " (this machine has ");
        for (size_t i = 0; r >= 0 && i < inv->n_nics; i++)
                r = strbuf_addf(sb, "%s%s %s%s", i ? ", " : "", inv->nics[i].name ? inv->nics[i].name : "?",
                                inv->nics[i].mac ? inv->nics[i].mac : "no MAC", inv->nics[i].up ? " (link)" : "");
        return r < 0 ? r : strbuf_adds(sb, ")");
}

static const char *rule_text(const struct spec_nic *n, char buf[static 96]) {
        switch (n->rule) {
        case SPEC_NIC_MAC: snprintf(buf, 96, "MAC %s", n->value); break;
        case SPEC_NIC_NAME: snprintf(buf, 96, "name '%.60s'", n->value); break;
        case SPEC_NIC_BOOT: snprintf(buf, 96, "'boot: true'"); break;
        case SPEC_NIC_LINK: snprintf(buf, 96, "'link: true'"); break;
        default: snprintf(buf, 96, "?"); break;
        }
        return buf;
}

/* The inventory NIC a rule takes: MAC equal; the boot NIC (the one
 * inventory_primary_mac() names: /init brought up only BOOTIF's NIC); the
 * first NIC with link; the first NIC whose name matches the glob. */
static int resolve_nic(struct nbuild *b, const struct spec_nic *n, const char *who, const struct inv_nic **ret) {
        const struct inventory *inv = b->inv;
        const char *boot = n->rule == SPEC_NIC_BOOT ? inventory_primary_mac(inv) : NULL;
        for (size_t i = 0; i < inv->n_nics; i++) {
                const struct inv_nic *x = &inv->nics[i];
                if (strempty(x->mac))
                        continue;
                bool ok = false;
                switch (n->rule) {
                case SPEC_NIC_MAC: ok = strcasecmp(x->mac, n->value) == 0; break;
                case SPEC_NIC_BOOT: ok = boot && streq(x->mac, boot); break;
                case SPEC_NIC_LINK: ok = x->up; break;
                case SPEC_NIC_NAME: ok = x->name && fnmatch(n->value, x->name, 0) == 0; break;
                default: break;
                }
                if (ok) {
                        *ret = x;
                        return 1;
                }
        }
        char rt[96];
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        int r = nics_text(inv, &sb);
        if (r < 0)
                return r;
        r = nfinding(b, true, n->mark, "%s: no NIC of this machine matches %s%s", who, rule_text(n, rt), strbuf_str(&sb));
        return r < 0 ? r : 0;
}

/* A NIC is a bond member or an untagged bridge port of one owner only. */
static int take_nic(struct nbuild *b, const struct inv_nic *x, const char *owner, struct spec_mark m) {
        size_t i = (size_t) (x - b->inv->nics);
        if (b->taken_by[i])
                return nfinding(b, true, m, "NIC %s (%s) is taken by %s and by %s", x->name ? x->name : "?", x->mac,
                                b->taken_by[i], owner);
        if (!(b->taken_text[i] = strdup(owner)))
                return -ENOMEM;
        b->taken_by[i] = b->taken_text[i];
        return 0;
}

/* Expand one address field; NULL in stays NULL. */
static int expand_ip(struct nbuild *b, const char *in, struct spec_mark m, const char *what, bool with_prefix,
                     char **ret) {
        if (!in)
                return 0;
        const char *var = NULL;
        _cleanup_free_ char *out = NULL;
        int r = spec_expand(in, &b->vars, &out, &var);
        if (r == -ENODATA || r == -EINVAL)
                return nfinding(b, false, m, "%s '%s' needs ${%s}, which this machine's inventory has no value for",
                                what, in, var ? var : "?");
        if (r < 0)
                return r;
        const char *why = spec_ip_problem(out, with_prefix);
        if (why)
                return nfinding(b, false, m, "%s '%s' becomes '%s' on this machine, which %s", what, in, out, why);
        *ret = TAKE_PTR(out);
        return 0;
}

static int build_bridge(struct nbuild *b, const struct spec_bridge *sb, struct netconf_bridge *nb) {
        char who[160];
        nb->spec = sb;
        snprintf(who, sizeof who, "'nic' of bridge '%s'", sb->name);
        int r = 0;
        if (sb->bond)
                nb->bond = spec_network_bond(b->spec, sb->bond);
        else if ((r = resolve_nic(b, &sb->nic, who, &nb->nic)) > 0 && !sb->vlan) {
                snprintf(who, sizeof who, "bridge '%s'", sb->name);
                r = take_nic(b, nb->nic, who, sb->nic.mark);
        } else if (r > 0) {
                /* a VLAN may share a NIC with an untagged bridge, not with a bond */
                const char *owner = b->taken_by[nb->nic - b->inv->nics];
                if (owner && strncmp(owner, "bond ", 5) == 0)
                        r = nfinding(b, true, sb->nic.mark, "NIC %s (%s) is taken by %s and by VLAN %u of bridge '%s' (put the VLAN on the bond)",
                                     nb->nic->name ? nb->nic->name : "?", nb->nic->mac, owner, sb->vlan, sb->name);
        }
        if (r < 0)
                return r;
        /* the machine's nodes row, when it has an address for this bridge: its
         * address (and gateway) stand for the bridge's own, DHCP or not */
        const struct spec_node *row = b->row && b->row->address && spec_node_bridge(b->spec, b->row) == sb ? b->row : NULL;
        const char *address = row ? row->address : sb->address;
        const char *gateway = row && row->gateway ? row->gateway : sb->gateway;
        struct spec_mark amark = row ? row->address_mark : sb->address_mark;
        struct spec_mark gmark = row && row->gateway ? row->gateway_mark : sb->gateway_mark;
        if (row)
                snprintf(who, sizeof who, "'address' of nodes row '%s' (bridge '%s')", row->key, sb->name);
        else
                snprintf(who, sizeof who, "'address' of bridge '%s'", sb->name);
        if ((r = expand_ip(b, address, amark, who, true, &nb->address)) < 0)
                return r;
        if (row && row->gateway)
                snprintf(who, sizeof who, "'gateway' of nodes row '%s' (bridge '%s')", row->key, sb->name);
        else
                snprintf(who, sizeof who, "'gateway' of bridge '%s'", sb->name);
        if ((r = expand_ip(b, gateway, gmark, who, false, &nb->gateway)) < 0)
                return r;
        char why[320];
        const char *p = nb->address && nb->gateway ? spec_gateway_problem(nb->address, nb->gateway, why, sizeof why) : NULL;
        /* the spec checked the pair already when both are its own and fixed */
        if (p && (row || strstr(address, "${") || strstr(gateway, "${")) &&
            (r = nfinding(b, false, gmark, "%s '%s' %s", who, nb->gateway, p)) < 0)
                return r;
        snprintf(who, sizeof who, "'dns' of bridge '%s'", sb->name);
        for (size_t i = 0; sb->dns && sb->dns[i]; i++) {
                char *d = NULL;
                if ((r = expand_ip(b, sb->dns[i], sb->dns_mark, who, false, &d)) < 0)
                        return r;
                if (d && (r = strv_push(&nb->dns, d)) < 0)
                        return r;
        }
        return 0;
}

/* A bond of one member (the spec warns already): name the NICs with link
 * that nothing takes, the likely forgotten second member. */
static int warn_lone_member(struct nbuild *b, const struct netconf_bond *nb) {
        if (nb->n_members != 1)
                return 0;
        _cleanup_strbuf_ struct strbuf sb = STRBUF_INIT;
        size_t n = 0;
        for (size_t i = 0; i < b->inv->n_nics; i++) {
                const struct inv_nic *x = &b->inv->nics[i];
                if (x->up && !b->taken_by[i] &&
                    strbuf_addf(&sb, "%s%s (%s)", n++ ? ", " : "", x->name ? x->name : "?", x->mac) < 0)
                        return -ENOMEM;
        }
        if (n == 0)
                return 0;
        const struct inv_nic *m = nb->members[0];
        return diags_warn(b->f.diags, b->f.file, nb->spec->mark.line, nb->spec->mark.col,
                          "bond '%s' has one member, %s (%s); %s %s link and %s taken by nothing: the forgotten second member?",
                          nb->spec->name, m->name ? m->name : "?", m->mac, strbuf_str(&sb), n == 1 ? "has" : "have",
                          n == 1 ? "is" : "are");
}

int netconf_build(const struct spec *s, const struct inventory *inv, struct netconf **ret, struct diags *diags) {
        const struct spec_network *sn = &s->network;
        _cleanup_(netconf_freep) struct netconf *n = calloc(1, sizeof *n);
        struct nbuild b = { .spec = s, .inv = inv, .row = plan_node_row(s, inv), .f = { diags, s->file } };
        plan_spec_vars(inv, &b.vars);
        _cleanup_free_ const char **taken = calloc(inv->n_nics + 1, sizeof *taken);
        _cleanup_free_ char **texts = calloc(inv->n_nics + 1, sizeof *texts);
        if (!n || !taken || !texts)
                return -ENOMEM;
        b.taken_by = taken;
        b.taken_text = texts;
        int r = 0;
        if (sn->n_bonds && !(n->bonds = calloc(sn->n_bonds, sizeof *n->bonds)))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < sn->n_bonds; i++) {
                const struct spec_bond *sb = &sn->bonds[i];
                struct netconf_bond *nb = &n->bonds[n->n_bonds++];
                nb->spec = sb;
                if (!(nb->members = calloc(sb->n_members ? sb->n_members : 1, sizeof *nb->members))) {
                        r = -ENOMEM;
                        break;
                }
                char who[160];
                for (size_t j = 0; r >= 0 && j < sb->n_members; j++) {
                        snprintf(who, sizeof who, "'members[%zu]' of bond '%s'", j, sb->name);
                        const struct inv_nic *x = NULL;
                        r = resolve_nic(&b, &sb->members[j], who, &x);
                        if (r > 0) {
                                snprintf(who, sizeof who, "bond '%s'", sb->name);
                                nb->members[nb->n_members++] = x;
                                r = take_nic(&b, x, who, sb->members[j].mark);
                        }
                }
        }
        if (r >= 0 && sn->n_bridges && !(n->bridges = calloc(sn->n_bridges, sizeof *n->bridges)))
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < sn->n_bridges; i++)
                r = build_bridge(&b, &sn->bridges[i], &n->bridges[n->n_bridges++]);
        for (size_t i = 0; r >= 0 && i < n->n_bonds; i++)
                r = warn_lone_member(&b, &n->bonds[i]);
        for (size_t i = 0; i < inv->n_nics; i++)
                free(texts[i]);
        if (r < 0 || (r = plan_findings_result(&b.f)) < 0)
                return r;
        *ret = TAKE_PTR(n);
        return 0;
}

struct netconf *netconf_free(struct netconf *n) {
        if (!n)
                return NULL;
        for (size_t i = 0; i < n->n_bridges; i++) {
                free(n->bridges[i].address);
                free(n->bridges[i].gateway);
                strv_free(n->bridges[i].dns);
        }
        free(n->bridges);
        for (size_t i = 0; i < n->n_bonds; i++)
                free(n->bonds[i].members);
        free(n->bonds);
        free(n);
        return NULL;
}

static const struct netconf_bond *find_bond(const struct netconf *n, const struct spec_bond *sb) {
        for (size_t i = 0; i < n->n_bonds; i++)
                if (n->bonds[i].spec == sb)
                        return &n->bonds[i];
        return NULL;
}

static int nic_text(struct strbuf *out, const struct inv_nic *x) {
        return strbuf_addf(out, "%s (%s)", x->name ? x->name : "?", x->mac);
}

int netconf_describe(const struct netconf *n, struct strbuf *out) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n->n_bridges; i++) {
                const struct netconf_bridge *b = &n->bridges[i];
                r = strbuf_addf(out, "%s%s over ", i ? "; " : "", b->spec->name);
                if (r >= 0 && b->nic)
                        r = nic_text(out, b->nic);
                else if (r >= 0) {
                        const struct netconf_bond *nb = find_bond(n, b->bond);
                        r = strbuf_addf(out, "bond %s %s of", b->bond->name, b->bond->mode);
                        for (size_t j = 0; r >= 0 && nb && j < nb->n_members; j++) {
                                r = strbuf_adds(out, j ? ", " : " ");
                                if (r >= 0)
                                        r = nic_text(out, nb->members[j]);
                        }
                }
                if (r >= 0 && b->spec->vlan)
                        r = strbuf_addf(out, " VLAN %u", b->spec->vlan);
                if (r >= 0)
                        r = b->address ? strbuf_addf(out, ", %s%s%s", b->address, b->gateway ? " via " : "", b->gateway ? b->gateway : "")
                                       : strbuf_adds(out, b->spec->dhcp ? ", DHCP" : ", no address");
                for (size_t j = 0; r >= 0 && b->dns && b->dns[j]; j++)
                        r = strbuf_addf(out, "%s%s", j ? " " : ", dns ", b->dns[j]);
        }
        return r;
}

/* ---- the files ---- */

struct files {
        struct netconf_file *f;
        size_t n;
};

static int file_add(struct files *fs, char *path, struct strbuf *content) {
        if (!path)
                return -ENOMEM;
        struct netconf_file *nf = realloc(fs->f, (fs->n + 1) * sizeof *nf);
        if (!nf) {
                free(path);
                return -ENOMEM;
        }
        fs->f = nf;
        char *c = strdup(strbuf_str(content));
        if (!c) {
                free(path);
                return -ENOMEM;
        }
        fs->f[fs->n++] = (struct netconf_file) { .path = path, .content = c };
        strbuf_reset(content);
        return 0;
}

static const char hdr[] = "# written by kiln from the host spec's network section\n";

/* The .network of a port (NIC or bond): the bridge it joins untagged, the
 * VLAN devices on it, no addresses of its own. */
static int port_network(const struct netconf *n, struct strbuf *t, const struct inv_nic *nic,
                        const struct spec_bond *bond) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n->n_bridges; i++) {
                const struct netconf_bridge *b = &n->bridges[i];
                if ((nic && b->nic != nic) || (bond && b->bond != bond))
                        continue;
                r = b->spec->vlan ? strbuf_addf(t, "VLAN=vlan%u\n", b->spec->vlan) : strbuf_addf(t, "Bridge=%s\n", b->spec->name);
        }
        return r < 0 ? r : strbuf_adds(t, "LinkLocalAddressing=no\n");
}

/* A bridge takes the MAC of the NIC under it (a bond: its first member's),
 * so the DHCP server that booted the node knows the bridge. */
static const char *bridge_mac(const struct netconf *n, const struct netconf_bridge *b) {
        if (b->nic)
                return b->nic->mac;
        const struct netconf_bond *nb = find_bond(n, b->bond);
        return nb && nb->n_members ? nb->members[0]->mac : NULL;
}

static char *mac_hex(const char *mac) {
        char *s = malloc(strlen(mac) + 1), *p = s;
        for (; s && *mac; mac++)
                if (*mac != ':')
                        *p++ = *mac;
        if (s)
                *p = 0;
        return s;
}

int netconf_files(const struct netconf *n, struct netconf_file **ret, size_t *ret_n) {
        struct files fs = { 0 };
        _cleanup_strbuf_ struct strbuf t = STRBUF_INIT;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n->n_bridges; i++) {
                const struct netconf_bridge *b = &n->bridges[i];
                const char *name = b->spec->name, *mac = bridge_mac(n, b);
                r = strbuf_addf(&t, "%s[NetDev]\nName=%s\nKind=bridge\n%s%s%s", hdr, name,
                                mac ? "MACAddress=" : "", mac ? mac : "", mac ? "\n" : "");
                if (r >= 0)
                        r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-%s.netdev", name), &t);
                if (r >= 0)
                        r = strbuf_addf(&t, "%s[Match]\nName=%s\n\n[Network]\n", hdr, name);
                if (r >= 0 && b->address)
                        r = strbuf_addf(&t, "Address=%s\n%s%s%s", b->address, b->gateway ? "Gateway=" : "",
                                        b->gateway ? b->gateway : "", b->gateway ? "\n" : "");
                else if (r >= 0)
                        r = strbuf_adds(&t, b->spec->dhcp ? "DHCP=yes\n" : "LinkLocalAddressing=no\n");
                for (size_t j = 0; r >= 0 && b->dns && b->dns[j]; j++)
                        r = strbuf_addf(&t, "DNS=%s\n", b->dns[j]);
                if (r >= 0)
                        r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-%s.network", name), &t);
                if (r >= 0 && b->spec->vlan) {
                        unsigned v = b->spec->vlan;
                        r = strbuf_addf(&t, "%s[NetDev]\nName=vlan%u\nKind=vlan\n\n[VLAN]\nId=%u\n", hdr, v, v);
                        if (r >= 0)
                                r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-vlan%u.netdev", v), &t);
                        if (r >= 0)
                                r = strbuf_addf(&t, "%s[Match]\nName=vlan%u\n\n[Network]\nBridge=%s\nLinkLocalAddressing=no\n",
                                                hdr, v, name);
                        if (r >= 0)
                                r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-vlan%u.network", v), &t);
                }
        }
        for (size_t i = 0; r >= 0 && i < n->n_bonds; i++) {
                const struct netconf_bond *nb = &n->bonds[i];
                const char *name = nb->spec->name;
                r = strbuf_addf(&t, "%s[NetDev]\nName=%s\nKind=bond\n%s%s%s\n[Bond]\nMode=%s\nMIIMonitorSec=100ms\n", hdr, name,
                                nb->n_members ? "MACAddress=" : "", nb->n_members ? nb->members[0]->mac : "",
                                nb->n_members ? "\n" : "", nb->spec->mode);
                if (r >= 0)
                        r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-%s.netdev", name), &t);
                if (r >= 0)
                        r = strbuf_addf(&t, "%s[Match]\nName=%s\n\n[Network]\n", hdr, name);
                if (r >= 0)
                        r = port_network(n, &t, NULL, nb->spec);
                if (r >= 0)
                        r = file_add(&fs, strdupf(NETCONF_DIR "/10-kiln-%s.network", name), &t);
                for (size_t j = 0; r >= 0 && j < nb->n_members; j++) {
                        _cleanup_free_ char *hex = mac_hex(nb->members[j]->mac);
                        if (!hex) {
                                r = -ENOMEM;
                                break;
                        }
                        r = strbuf_addf(&t, "%s[Match]\nPermanentMACAddress=%s\n\n[Network]\nBond=%s\nLinkLocalAddressing=no\n",
                                        hdr, nb->members[j]->mac, name);
                        if (r >= 0)
                                r = file_add(&fs, strdupf(NETCONF_DIR "/20-kiln-%s.network", hex), &t);
                }
        }
        /* each NIC under a bridge or a VLAN, once */
        for (size_t i = 0; r >= 0 && i < n->n_bridges; i++) {
                const struct inv_nic *x = n->bridges[i].nic;
                bool seen = false;
                for (size_t j = 0; x && j < i; j++)
                        seen |= n->bridges[j].nic == x;
                if (!x || seen)
                        continue;
                _cleanup_free_ char *hex = mac_hex(x->mac);
                if (!hex) {
                        r = -ENOMEM;
                        break;
                }
                r = strbuf_addf(&t, "%s[Match]\nPermanentMACAddress=%s\n\n[Network]\n", hdr, x->mac);
                if (r >= 0)
                        r = port_network(n, &t, x, NULL);
                if (r >= 0)
                        r = file_add(&fs, strdupf(NETCONF_DIR "/20-kiln-%s.network", hex), &t);
        }
        /* systemd-networkd loads a kind's module when it creates the first
         * such device, and gives the kernel 25 s to answer; a bond whose
         * creation timed out that way (a slow boot: modules load while udev
         * loads the others) never takes its members, and the node is off
         * the network (systemd issue 19999; the rig's test-hw-matrix saw it).
         * Loaded by systemd-modules-load in sysinit, they are there first. */
        bool any_vlan = false;
        for (size_t i = 0; i < n->n_bridges; i++)
                any_vlan |= n->bridges[i].spec->vlan != 0;
        if (r >= 0)
                r = strbuf_addf(&t, "%sbridge\n%s%s", hdr, any_vlan ? "8021q\n" : "", n->n_bonds ? "bonding\n" : "");
        if (r >= 0)
                r = file_add(&fs, strdup(NETCONF_MODULES), &t);
        /* without systemd-resolved (not in Debian's base image) DNS= reaches no resolver */
        bool any_dns = false;
        for (size_t i = 0; i < n->n_bridges; i++)
                any_dns |= n->bridges[i].dns != NULL;
        if (r >= 0 && any_dns) {
                r = strbuf_adds(&t, hdr);
                for (size_t i = 0; r >= 0 && i < n->n_bridges; i++)
                        for (size_t j = 0; r >= 0 && n->bridges[i].dns && n->bridges[i].dns[j]; j++)
                                r = strbuf_addf(&t, "nameserver %s\n", n->bridges[i].dns[j]);
                if (r >= 0)
                        r = file_add(&fs, strdup("/etc/resolv.conf"), &t);
        }
        if (r < 0) {
                netconf_files_free(fs.f, fs.n);
                return r;
        }
        *ret = fs.f;
        *ret_n = fs.n;
        return 0;
}

void netconf_files_free(struct netconf_file *f, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(f[i].path);
                free(f[i].content);
        }
        free(f);
}
