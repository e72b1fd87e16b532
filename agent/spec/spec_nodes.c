/* nodes: per-node values in a rack's one spec (docs/spec.md "Per-node
 * values: nodes"). A mapping from a machine's key (the boot NIC's MAC, or
 * its SMBIOS serial, or "default") to a row of the values that differ per
 * machine: hostname, and a static address (with its gateway) for one bridge
 * of network. The plan picks the row (plan_node_row()); here the table is
 * read and checked: keys, rows, and no key, hostname or address twice. */
#include "spec_internal.h"

#include <ctype.h>

static const char *const node_keys[] = { "hostname", "address", "gateway", "bridge", NULL };

static void parse_row(struct ctx *c, const struct ynode *k, const struct ynode *m, struct spec_node *x) {
        char where[160], f[256], t[QUOTE_MAX + 8];
        snprintf(where, sizeof where, "nodes row '%s'", spec_quote(x->key, t));
        struct loc l = { where, "" };
        if (ynode_is_null(m) || m->kind != YNODE_MAP) {
                emitn(c, ynode_is_null(m) ? k : m, "%s must be a mapping of %s, not %s", where,
                      "hostname, address, gateway and bridge", ynode_is_null(m) ? "empty" : spec_describe(m, t));
                return;
        }
        spec_check_keys(c, m, &l, node_keys);
        const struct ynode *v = spec_map_get(m, "hostname");
        if (spec_get_str(c, &l, "hostname", v, &x->hostname) > 0) {
                x->hostname_mark = (struct spec_mark) { v->line, v->col };
                if (spec_check_vars(c, &l, "hostname", v, x->hostname))
                        spec_check_hostname(c, v, spec_field(&l, "hostname", f), x->hostname);
        }
        v = spec_map_get(m, "address");
        if (spec_get_str(c, &l, "address", v, &x->address) > 0) {
                x->address_mark = (struct spec_mark) { v->line, v->col };
                spec_check_ip(c, &l, "address", v, x->address, true);
        }
        v = spec_map_get(m, "gateway");
        if (spec_get_str(c, &l, "gateway", v, &x->gateway) > 0) {
                x->gateway_mark = (struct spec_mark) { v->line, v->col };
                spec_check_ip(c, &l, "gateway", v, x->gateway, false);
                if (!x->address)
                        emitn(c, spec_map_key(m, "gateway"), "%s has 'gateway' without 'address'", where);
                else if (!strstr(x->address, "${") && !strstr(x->gateway, "${") && !spec_ip_problem(x->address, true) &&
                         !spec_ip_problem(x->gateway, false)) {
                        char why[320];
                        const char *p = spec_gateway_problem(x->address, x->gateway, why, sizeof why);
                        if (p)
                                emitn(c, v, "%s: '%s' %s", spec_field(&l, "gateway", f), spec_quote(x->gateway, t), p);
                }
        }
        v = spec_map_get(m, "bridge");
        if (spec_get_str(c, &l, "bridge", v, &x->bridge) > 0) {
                x->bridge_mark = (struct spec_mark) { v->line, v->col };
                if (!x->address)
                        emitn(c, spec_map_key(m, "bridge"), "%s has 'bridge' without 'address' (the bridge is where the address goes)", where);
        }
}

const struct spec_bridge *spec_node_bridge(const struct spec *s, const struct spec_node *row) {
        for (size_t i = 0; i < s->network.n_bridges; i++)
                if (row && row->bridge ? s->network.bridges[i].name && streq(s->network.bridges[i].name, row->bridge) : true)
                        return &s->network.bridges[i];
        return NULL;
}

/* A row's address goes on a bridge of network: the one it names, else the first. */
static void check_row_bridge(struct ctx *c, const struct spec_node *x) {
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        if (!x->address)
                return;
        if (!c->s->network.present || c->s->network.n_bridges == 0) {
                spec_emit(c, x->address_mark.line, x->address_mark.col,
                          "'address' of nodes row '%s' needs a bridge to go on, but the spec has no 'network' bridges",
                          spec_quote(x->key, t));
                return;
        }
        if (x->bridge && !spec_node_bridge(c->s, x))
                spec_emit(c, x->bridge_mark.line, x->bridge_mark.col, "'bridge' of nodes row '%s' names no bridge of network.bridges: '%s'",
                          spec_quote(x->key, t), spec_quote(x->bridge, t2));
}

/* No key, hostname or address twice: a second machine of the same name or
 * address breaks the first one's registration and network. Values with
 * ${...} differ per machine and are not compared. */
static void check_twins(struct ctx *c, const struct spec_node *rows, const char *const *raw, size_t n) {
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        for (size_t i = 0; i < n; i++) {
                const struct spec_node *x = &rows[i];
                for (size_t j = 0; x->key && j < i; j++)
                        if (rows[j].key && streq(rows[j].key, x->key)) {
                                spec_emit(c, x->mark.line, x->mark.col, "duplicate key '%s' in nodes (first at line %u%s%s%s)",
                                          spec_quote(raw[i], t), rows[j].mark.line, streq(raw[i], raw[j]) ? "" : " as '",
                                          streq(raw[i], raw[j]) ? "" : spec_quote(raw[j], t2),
                                          streq(raw[i], raw[j]) ? "" : "': MACs match in any case");
                                break;
                        }
                for (size_t j = 0; x->hostname && !strstr(x->hostname, "${") && j < i; j++)
                        if (rows[j].hostname && !strstr(rows[j].hostname, "${") && strcasecmp(rows[j].hostname, x->hostname) == 0) {
                                spec_emit(c, x->hostname_mark.line, x->hostname_mark.col,
                                          "'hostname' of nodes row '%s' is '%s', the host name of row '%s' (line %u) too (host names match in any case): two machines of one name",
                                          spec_quote(x->key, t), spec_quote(x->hostname, t2), rows[j].key ? rows[j].key : "?",
                                          rows[j].hostname_mark.line);
                                break;
                        }
                for (size_t j = 0; x->address && !strstr(x->address, "${") && j < i; j++)
                        if (rows[j].address && !strstr(rows[j].address, "${") && spec_ip_same(rows[j].address, x->address)) {
                                spec_emit(c, x->address_mark.line, x->address_mark.col,
                                          "'address' of nodes row '%s' is '%s', the address of row '%s' (line %u): two machines of one address",
                                          spec_quote(x->key, t), spec_quote(x->address, t2), rows[j].key ? rows[j].key : "?",
                                          rows[j].address_mark.line);
                                break;
                        }
        }
}

void spec_parse_nodes(struct ctx *c, const struct ynode *m) {
        char t[QUOTE_MAX + 8];
        struct spec *s = c->s;
        s->nodes_mark = (struct spec_mark) { m->line, m->col };
        if (ynode_is_null(m) || (m->kind == YNODE_MAP && m->n == 0)) {
                emitn(c, m, "'nodes' is empty: give a row per machine (\"52:54:00:12:34:56\": {hostname: ...}), or no 'nodes'");
                return;
        }
        if (m->kind != YNODE_MAP) {
                emitn(c, m, "'nodes' must be a mapping of MAC or serial to a row ({hostname, address, gateway, bridge}), not %s",
                      spec_describe(m, t));
                return;
        }
        _cleanup_free_ const char **raw = calloc(m->n / 2 + 1, sizeof *raw);
        if (!raw || !(s->nodes = calloc(m->n / 2 + 1, sizeof *s->nodes))) {
                c->error = -ENOMEM;
                return;
        }
        for (size_t i = 0; i + 1 < m->n; i += 2) {
                const struct ynode *k = m->items[i];
                if (k->kind != YNODE_SCALAR || ynode_is_null(k) || k->len != strlen(k->value)) {
                        emitn(c, k, "keys must be plain strings in nodes (a MAC, a serial or 'default')");
                        continue;
                }
                raw[s->n_nodes] = k->value;
                struct spec_node *x = &s->nodes[s->n_nodes++];
                x->mark = (struct spec_mark) { k->line, k->col };
                if (!(x->key = strdup(k->value))) {
                        c->error = -ENOMEM;
                        return;
                }
                if (streq(x->key, SPEC_NODE_DEFAULT_KEY))
                        x->by = SPEC_NODE_DEFAULT;
                else if (spec_valid_mac(x->key)) {
                        x->by = SPEC_NODE_MAC;
                        for (char *p = x->key; *p; p++)
                                *p = (char) tolower((unsigned char) *p);
                } else {
                        x->by = SPEC_NODE_SERIAL;
                        /* such a serial is what a whole batch of boards reports: the row would take them all */
                        if (spec_value_is_placeholder(x->key))
                                emitn(c, k, "key '%s' of nodes is a placeholder serial many boards report, "
                                      "which names no one machine (key the row by the boot NIC's MAC)", spec_quote(x->key, t));
                }
                parse_row(c, k, m->items[i + 1], x);
                /* the default row is every machine's that has no row of its own: a fixed
                 * name or address there would be the same on all of them */
                if (x->by == SPEC_NODE_DEFAULT && x->hostname && !strstr(x->hostname, "${"))
                        spec_emit(c, x->hostname_mark.line, x->hostname_mark.col,
                                  "'hostname' of the default row of nodes is '%s' for every machine without a row of its own: "
                                  "make it differ per machine (${serial}, ${mac:hexraw})", spec_quote(x->hostname, t));
                if (x->by == SPEC_NODE_DEFAULT && x->address && !strstr(x->address, "${"))
                        spec_emit(c, x->address_mark.line, x->address_mark.col,
                                  "'address' of the default row of nodes would be '%s' for every machine without a row of its own: "
                                  "give each machine its row, and the others DHCP (no address in the default row)", spec_quote(x->address, t));
        }
        check_twins(c, s->nodes, raw, s->n_nodes);
        for (size_t i = 0; i < s->n_nodes; i++)
                check_row_bridge(c, &s->nodes[i]);
}

void spec_free_nodes(struct spec *s) {
        for (size_t i = 0; i < s->n_nodes; i++) {
                free(s->nodes[i].key); free(s->nodes[i].hostname); free(s->nodes[i].address);
                free(s->nodes[i].gateway); free(s->nodes[i].bridge);
        }
        free(s->nodes);
}
