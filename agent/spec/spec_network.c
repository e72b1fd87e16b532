/* network: the installed system's bridges, bonds and VLANs (docs/spec.md
 * "network"), the NIC rules, and the checks of names across them. */
#include "spec_internal.h"

#include <arpa/inet.h>
#include <ctype.h>

/* ---- network ----------------------------------------------------------- */

static const char *const bond_modes[] = {
        "balance-rr", "active-backup", "balance-xor", "broadcast", "802.3ad", "balance-tlb", "balance-alb", NULL,
};

/* Linux interface names: 1..15 characters, no '/', ':', whitespace; not "." or "..". */
static bool valid_ifname(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 15 || streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char) *p) && !strchr("_.-", *p))
                        return false;
        return true;
}

/* "52:54:00:12:34:56", hex digits in any case (spec_internal.h) */
bool spec_valid_mac(const char *s) {
        if (strlen(s) != 17)
                return false;
        for (size_t i = 0; i < 17; i++)
                if (i % 3 == 2 ? s[i] != ':' : !isxdigit((unsigned char) s[i]))
                        return false;
        return true;
}

/* s ("ADDR" or "ADDR/PREFIX") as bytes: its family's length (4, 16), or 0
 * when it is no address; *pfx is the prefix, or the family's bits without one. */
static size_t ip_parse(const char *s, unsigned char bin[static 16], unsigned *pfx) {
        char buf[INET6_ADDRSTRLEN + 8];
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t) (slash - s) : strlen(s), len;
        if (n == 0 || n >= sizeof buf)
                return 0;
        memcpy(buf, s, n);
        buf[n] = 0;
        if (inet_pton(AF_INET, buf, bin) == 1)
                len = 4;
        else if (inet_pton(AF_INET6, buf, bin) == 1)
                len = 16;
        else
                return 0;
        *pfx = (unsigned) len * 8;
        if (slash && (safe_atou(slash + 1, pfx) < 0 || !isdigit((unsigned char) slash[1]) || *pfx == 0 || *pfx > len * 8))
                *pfx = 0;
        return len;
}

bool spec_ip_same(const char *a, const char *b) {
        unsigned char x[16], y[16];
        unsigned px, py;
        size_t n = ip_parse(a, x, &px);
        return n && n == ip_parse(b, y, &py) && memcmp(x, y, n) == 0;
}

/* Bit i (0 = the highest) of bin. */
static unsigned ip_bit(const unsigned char *bin, unsigned i) {
        return (bin[i / 8] >> (7 - i % 8)) & 1;
}

const char *spec_ip_problem(const char *s, bool with_prefix) {
        const char *slash = strchr(s, '/');
        if (with_prefix && !slash)
                return "has no '/prefix' (write 10.1.0.5/24)";
        if (!with_prefix && slash)
                return "takes no '/prefix'";
        unsigned char bin[16];
        unsigned pfx;
        size_t len = ip_parse(s, bin, &pfx);
        if (len == 0)
                return "is not an IPv4 or IPv6 address";
        if (pfx == 0)
                return len == 4 ? "has a prefix that is not 1..32" : "has a prefix that is not 1..128";
        /* IPv4 below /31 (RFC 3021): the lowest and highest address of the
         * subnet are its network and broadcast address, no host's */
        if (slash && len == 4 && pfx <= 30) {
                unsigned ones = 0;
                for (unsigned i = pfx; i < 32; i++)
                        ones += ip_bit(bin, i);
                if (ones == 0)
                        return "is the network address of its subnet, no host's (give the host's own address, like 10.1.0.5/24)";
                if (ones == 32 - pfx)
                        return "is the broadcast address of its subnet, no host's (give the host's own address, like 10.1.0.5/24)";
        }
        return NULL;
}

const char *spec_gateway_problem(const char *address, const char *gateway, char *buf, size_t size) {
        unsigned char a[16], g[16];
        unsigned pfx, gp;
        size_t len = ip_parse(address, a, &pfx), glen = ip_parse(gateway, g, &gp);
        if (len == 0 || pfx == 0 || glen == 0)
                return NULL;            /* spec_ip_problem() names these */
        if (glen != len) {
                snprintf(buf, size, "is an %s address, and 'address' %s is %s: the node would have no default route",
                         glen == 4 ? "IPv4" : "IPv6", address, len == 4 ? "IPv4" : "IPv6");
                return buf;
        }
        if (memcmp(a, g, len) == 0)
                return "is the bridge's own address (give the router's)";
        /* an IPv6 router is usually named by its link-local address (fe80::/10) */
        if (len == 16 && g[0] == 0xfe && (g[1] & 0xc0) == 0x80)
                return NULL;
        bool inside = true;
        for (unsigned i = 0; i < pfx; i++)
                inside &= ip_bit(a, i) == ip_bit(g, i);
        if (inside)
                return NULL;
        for (unsigned i = pfx; i < len * 8; i++)
                a[i / 8] &= (unsigned char) ~(1u << (7 - i % 8));
        char net[INET6_ADDRSTRLEN];
        if (!inet_ntop(len == 4 ? AF_INET : AF_INET6, a, net, sizeof net))
                return NULL;
        snprintf(buf, size, "is outside %s/%u, the subnet of 'address' %s: the kernel has no route to it, so the node "
                 "would have no default route (give a gateway in that subnet, or the right prefix)", net, pfx, address);
        return buf;
}

/* An address field: its ${...} are checked here, its syntax too when it has
 * none (the plan checks the expanded value again). */
void spec_check_ip(struct ctx *c, const struct loc *l, const char *key, const struct ynode *v, const char *s,
                   bool with_prefix) {
        char f[256], t[QUOTE_MAX + 4];
        if (!spec_check_vars(c, l, key, v, s) || strstr(s, "${"))
                return;
        const char *why = spec_ip_problem(s, with_prefix);
        if (why)
                emitn(c, v, "%s: '%s' %s", spec_field(l, key, f), spec_quote(s, t), why);
}

/* A NIC rule: exactly one of {mac: X}, {boot: true}, {link: true}, {name: GLOB}. */
static void parse_nic(struct ctx *c, const struct ynode *m, const char *where, const char *key, struct spec_nic *n) {
        static const char *const keys[] = { "mac", "boot", "link", "name", NULL };
        char f[256], t[QUOTE_MAX + 4], w[192];
        snprintf(w, sizeof w, "'%s' of %s", key, where);
        struct loc l = { w, "" }, lo = { where, "" };
        if (spec_want_map(c, &lo, key, m) <= 0)
                return;
        n->mark = (struct spec_mark) { m->line, m->col };
        spec_check_keys(c, m, &l, keys);
        size_t given = 0;
        for (size_t i = 0; keys[i]; i++)
                given += spec_map_get(m, keys[i]) != NULL;
        if (given != 1) {
                emitn(c, m, "%s must name exactly one of 'mac', 'boot', 'link', 'name', not %zu", spec_field(&lo, key, f), given);
                return;
        }
        const struct ynode *v;
        bool b = false;
        if ((v = spec_map_get(m, "mac"))) {
                if (spec_get_str(c, &l, "mac", v, &n->value) <= 0)
                        return;
                for (char *p = n->value; *p; p++)
                        *p = (char) tolower((unsigned char) *p);
                if (!spec_valid_mac(n->value))
                        emitn(c, v, "%s must be a MAC address like 52:54:00:12:34:56, not '%s'", spec_field(&l, "mac", f), spec_quote(n->value, t));
                else
                        n->rule = SPEC_NIC_MAC;
        } else if ((v = spec_map_get(m, "name"))) {
                if (spec_get_str(c, &l, "name", v, &n->value) > 0)
                        n->rule = SPEC_NIC_NAME;
        } else if ((v = spec_map_get(m, "boot")) && spec_get_bool(c, &l, "boot", v, &b) > 0) {
                if (b)
                        n->rule = SPEC_NIC_BOOT;
                else
                        emitn(c, v, "%s can only be true", spec_field(&l, "boot", f));
        } else if ((v = spec_map_get(m, "link")) && spec_get_bool(c, &l, "link", v, &b) > 0) {
                if (b)
                        n->rule = SPEC_NIC_LINK;
                else
                        emitn(c, v, "%s can only be true", spec_field(&l, "link", f));
        }
}

/* The name of a bond or bridge: required, an interface name; once valid, it
 * names the object in later messages (where becomes "KIND 'NAME'"). */
static void parse_ifname(struct ctx *c, const struct ynode *m, const struct loc *l, const char *kind,
                         char *where, size_t where_size, char **ret) {
        char f[256], t[QUOTE_MAX + 8];
        const struct ynode *v = spec_map_get(m, "name");
        if (!v)
                spec_missing(c, m, where, "name");
        else if (spec_get_str(c, l, "name", v, ret) > 0) {
                if (!valid_ifname(*ret))
                        emitn(c, v, "%s '%s' is not an interface name (1..15 letters, digits, '_', '.', '-')",
                              spec_field(l, "name", f), spec_quote(*ret, t));
                else
                        snprintf(where, where_size, "%s '%s'", kind, *ret);
        }
}

/* What a bond and a bridge start with: where (at first "KIND #N", then,
 * once named, "KIND 'NAME'"), its mark, its name and the check of its keys. */
static void parse_iface_head(struct ctx *c, const struct ynode *m, size_t idx, const char *kind,
                             const char *const *keys, char *where, size_t where_size, struct loc *l,
                             struct spec_mark *mark, char **name) {
        snprintf(where, where_size, "%s #%zu", kind, idx + 1);
        *l = (struct loc) { where, "" };
        *mark = (struct spec_mark) { m->line, m->col };
        parse_ifname(c, m, l, kind, where, where_size, name);
        spec_check_keys(c, m, l, keys);
}

static void parse_bond(struct ctx *c, const struct ynode *m, size_t idx, struct spec_bond *x) {
        static const char *const keys[] = { "name", "mode", "members", NULL };
        char where[128], f[256], t[QUOTE_MAX + 8];
        struct loc l;
        parse_iface_head(c, m, idx, "bond", keys, where, sizeof where, &l, &x->mark, &x->name);
        const struct ynode *v;
        int e;
        if (spec_get_enum(c, &l, "mode", spec_map_get(m, "mode"), bond_modes, &e) > 0)
                x->mode = strdup(bond_modes[e]);
        else
                x->mode = strdup("active-backup");
        if (!x->mode)
                c->error = -ENOMEM;
        v = spec_map_get(m, "members");
        if (!v) {
                spec_missing(c, m, where, "members");
                return;
        }
        if (v->kind != YNODE_SEQ || v->n == 0) {
                emitn(c, v, "%s must be a list of NIC rules, not %s", spec_field(&l, "members", f),
                      v->kind == YNODE_SEQ ? "an empty list" : spec_describe(v, t));
                return;
        }
        if (!(x->members = calloc(v->n, sizeof *x->members))) {
                c->error = -ENOMEM;
                return;
        }
        for (size_t i = 0; i < v->n; i++) {
                char key[32];
                snprintf(key, sizeof key, "members[%zu]", i);
                parse_nic(c, v->items[i], where, key, &x->members[x->n_members++]);
        }
        /* a bond of one NIC has nothing to fail over to or balance across:
         * almost always a forgotten second member */
        if (v->n == 1 && x->name)
                spec_warn(c, v, "bond '%s' has one member: it has no NIC to fail over to (add the second NIC to 'members', "
                          "or put the bridge on the NIC itself with 'nic')", x->name);
}

static void parse_bridge(struct ctx *c, const struct ynode *m, size_t idx, struct spec_bridge *x) {
        static const char *const keys[] = { "name", "nic", "bond", "vlan", "dhcp", "address", "gateway", "dns", NULL };
        char where[128];
        struct loc l;
        parse_iface_head(c, m, idx, "bridge", keys, where, sizeof where, &l, &x->mark, &x->name);
        const struct ynode *v;
        const struct ynode *nic = spec_map_get(m, "nic"), *bond = spec_map_get(m, "bond");
        if (!nic && !bond)
                emitn(c, m, "%s has neither 'nic' nor 'bond' (the port it bridges)", where);
        else if (nic && bond)
                emitn(c, spec_map_key(m, "bond"), "%s has both 'nic' and 'bond'; give one", where);
        else if (nic)
                parse_nic(c, nic, where, "nic", &x->nic);
        else if (spec_get_str(c, &l, "bond", bond, &x->bond) > 0)
                x->bond_mark = (struct spec_mark) { bond->line, bond->col };
        (void) spec_get_unsigned(c, &l, "vlan", spec_map_get(m, "vlan"), 1, 4094, &x->vlan);
        (void) spec_get_bool(c, &l, "dhcp", spec_map_get(m, "dhcp"), &x->dhcp);
        v = spec_map_get(m, "address");
        if (spec_get_str(c, &l, "address", v, &x->address) > 0) {
                x->address_mark = (struct spec_mark) { v->line, v->col };
                spec_check_ip(c, &l, "address", v, x->address, true);
        }
        if (x->dhcp && v)       /* neither: a bridge without an address of the host (guest traffic) */
                emitn(c, spec_map_key(m, "address"), "%s has both 'dhcp: true' and 'address'; give one", where);
        v = spec_map_get(m, "gateway");
        if (spec_get_str(c, &l, "gateway", v, &x->gateway) > 0) {
                x->gateway_mark = (struct spec_mark) { v->line, v->col };
                spec_check_ip(c, &l, "gateway", v, x->gateway, false);
                if (!x->address)
                        emitn(c, spec_map_key(m, "gateway"), "%s has 'gateway' without 'address'%s", where,
                              x->dhcp ? " (DHCP gives the gateway)" : "");
                else if (!strstr(x->address, "${") && !strstr(x->gateway, "${") &&
                         !spec_ip_problem(x->address, true) && !spec_ip_problem(x->gateway, false)) {
                        char why[320], f[256], t[QUOTE_MAX + 4];
                        const char *p = spec_gateway_problem(x->address, x->gateway, why, sizeof why);
                        if (p)
                                emitn(c, v, "%s: '%s' %s", spec_field(&l, "gateway", f), spec_quote(x->gateway, t), p);
                }
        }
        v = spec_map_get(m, "dns");
        if (spec_get_strv(c, &l, "dns", v, true, &x->dns, NULL) > 0) {
                x->dns_mark = (struct spec_mark) { v->line, v->col };
                for (size_t i = 0; x->dns[i]; i++)
                        spec_check_ip(c, &l, "dns", v->kind == YNODE_SEQ ? v->items[i] : v, x->dns[i], false);
        }
}

const struct spec_bond *spec_network_bond(const struct spec *s, const char *name) {
        for (size_t i = 0; name && i < s->network.n_bonds; i++)
                if (s->network.bonds[i].name && streq(s->network.bonds[i].name, name))
                        return &s->network.bonds[i];
        return NULL;
}

/* Does bridge b give the node a default route? Not when its gateway is
 * refused already (its own message says why). */
static bool default_route(const struct spec_bridge *b) {
        char why[320];
        if (!b->gateway || !b->address)
                return false;
        if (strstr(b->address, "${") || strstr(b->gateway, "${"))
                return true;
        return !spec_ip_problem(b->address, true) && !spec_ip_problem(b->gateway, false) &&
               !spec_gateway_problem(b->address, b->gateway, why, sizeof why);
}

/* Names unique over bridges, bonds and VLAN devices; a bridge's bond exists;
 * a port carries at most one untagged bridge; a VLAN id is used once. */
static void check_network(struct ctx *c) {
        const struct spec_network *n = &c->s->network;
        char t[QUOTE_MAX + 4];
        for (size_t i = 0; i < n->n_bonds; i++)
                for (size_t j = 0; n->bonds[i].name && j < i; j++)
                        if (n->bonds[j].name && streq(n->bonds[i].name, n->bonds[j].name))
                                spec_emit(c, n->bonds[i].mark.line, n->bonds[i].mark.col,
                                          "bond name '%s' is used twice (first at line %u)", spec_quote(n->bonds[i].name, t), n->bonds[j].mark.line);
        for (size_t i = 0; i < n->n_bridges; i++) {
                const struct spec_bridge *b = &n->bridges[i];
                if (!b->name)
                        continue;
                for (size_t j = 0; j < i; j++)
                        if (n->bridges[j].name && streq(b->name, n->bridges[j].name))
                                spec_emit(c, b->mark.line, b->mark.col, "bridge name '%s' is used twice (first at line %u)",
                                          spec_quote(b->name, t), n->bridges[j].mark.line);
                if (spec_network_bond(c->s, b->name))
                        spec_emit(c, b->mark.line, b->mark.col, "bridge name '%s' is also the name of a bond", spec_quote(b->name, t));
                if (b->bond && !spec_network_bond(c->s, b->bond))
                        spec_emit(c, b->bond_mark.line, b->bond_mark.col, "'bond' of bridge '%s' names no bond of network.bonds: '%s'",
                                  spec_quote(b->name, t), b->bond);
                for (size_t j = 0; b->vlan && j < i; j++)
                        if (n->bridges[j].vlan == b->vlan)
                                spec_emit(c, b->mark.line, b->mark.col, "bridges '%s' and '%s' both use VLAN %u",
                                          n->bridges[j].name ? n->bridges[j].name : "?", spec_quote(b->name, t), b->vlan);
                for (size_t j = 0; b->bond && !b->vlan && j < i; j++)
                        if (!n->bridges[j].vlan && n->bridges[j].bond && streq(n->bridges[j].bond, b->bond))
                                spec_emit(c, b->mark.line, b->mark.col, "bridges '%s' and '%s' both take bond '%s' untagged (give one a 'vlan')",
                                          n->bridges[j].name ? n->bridges[j].name : "?", spec_quote(b->name, t), b->bond);
        }
        /* one default route per family: two of equal weight make the kernel
         * spread or flip the node's traffic between the networks */
        for (size_t i = 0; i < n->n_bridges; i++)
                for (size_t j = 0; default_route(&n->bridges[i]) && j < i; j++)
                        if (default_route(&n->bridges[j]) &&
                            !strchr(n->bridges[i].gateway, ':') == !strchr(n->bridges[j].gateway, ':')) {
                                spec_emit(c, n->bridges[i].gateway_mark.line, n->bridges[i].gateway_mark.col,
                                          "bridges '%s' and '%s' both have an %s 'gateway': the node would get two default routes "
                                          "of equal weight; keep 'gateway' on the bridge that reaches the management server only",
                                          n->bridges[j].name ? n->bridges[j].name : "?", n->bridges[i].name ? n->bridges[i].name : "?",
                                          strchr(n->bridges[i].gateway, ':') ? "IPv6" : "IPv4");
                                break;
                        }
        for (size_t k = 0; k < n->n_bonds; k++) {
                bool used = false;
                for (size_t i = 0; i < n->n_bridges; i++)
                        used |= n->bridges[i].bond && n->bonds[k].name && streq(n->bridges[i].bond, n->bonds[k].name);
                if (!used && n->bonds[k].name && c->n_emitted < SPEC_MAX_DIAGS) {
                        c->n_emitted++;
                        int r = diags_warn(c->d, c->file, n->bonds[k].mark.line, n->bonds[k].mark.col,
                                           "bond '%s' is used by no bridge", spec_quote(n->bonds[k].name, t));
                        if (r < 0 && c->error == 0)
                                c->error = r;
                }
        }
}

void spec_parse_network(struct ctx *c, const struct ynode *m) {
        static const char *const keys[] = { "bridges", "bonds", NULL };
        struct loc l = { "network", "" };
        struct spec_network *n = &c->s->network;
        n->present = true;
        n->mark = (struct spec_mark) { m->line, m->col };
        spec_check_keys(c, m, &l, keys);
        PARSE_SECTION(c, m, "bonds", "bond", n->bonds, n->n_bonds, parse_bond);
        PARSE_SECTION(c, m, "bridges", "bridge", n->bridges, n->n_bridges, parse_bridge);
        if (!spec_map_get(m, "bridges"))
                emitn(c, m, "'network' has no 'bridges' (CloudStack's KVM hosts need cloudbr0)");
        check_network(c);
}

void spec_free_network(struct spec_network *n) {
        for (size_t i = 0; i < n->n_bonds; i++) {
                free(n->bonds[i].name); free(n->bonds[i].mode);
                for (size_t j = 0; j < n->bonds[i].n_members; j++)
                        free(n->bonds[i].members[j].value);
                free(n->bonds[i].members);
        }
        free(n->bonds);
        for (size_t i = 0; i < n->n_bridges; i++) {
                struct spec_bridge *b = &n->bridges[i];
                free(b->name); free(b->nic.value); free(b->bond); free(b->address); free(b->gateway); strv_free(b->dns);
        }
        free(n->bridges);
}
