/* The installed system's network: the spec's network section resolved
 * against the inventory (which NIC each rule takes, the addresses with their
 * ${...} expanded), and the systemd-networkd files that say it. Pure: the
 * configure stage writes the files (apply/configure.c). */
#pragma once
#include "diag.h"
#include "inventory.h"
#include "spec.h"
#include "strbuf.h"

#define NETCONF_DIR "/etc/systemd/network"
/* The kernel modules of the bridges, VLANs and bonds, loaded early by
 * systemd-modules-load (before systemd-networkd starts) */
#define NETCONF_MODULES "/etc/modules-load.d/kiln-network.conf"

/* What a bridge sits on: one NIC or a bond; vlan (from the spec) on top. */
struct netconf_bridge {
        const struct spec_bridge *spec;
        const struct inv_nic *nic;      /* the NIC, or NULL when: */
        const struct spec_bond *bond;   /* the bond */
        char *address, *gateway;        /* expanded; NULL with DHCP */
        char **dns;                     /* expanded; NULL-terminated or NULL */
};

struct netconf_bond {
        const struct spec_bond *spec;
        const struct inv_nic **members; size_t n_members;
};

struct netconf {
        struct netconf_bridge *bridges; size_t n_bridges;
        struct netconf_bond *bonds;     size_t n_bonds;
};

/* One file to write: path under the target root, and its text. */
struct netconf_file {
        char *path;
        char *content;
};

/* Resolve s->network (which must be present) against inv. A NIC rule that
 * matches no NIC, or one NIC taken twice, is a refusal (-EPERM); an address
 * that needs a value the inventory lacks or that expands to no address is
 * invalid (-EINVAL); both go into diags at the spec's position. */
int netconf_build(const struct spec *s, const struct inventory *inv, struct netconf **ret, struct diags *diags);
struct netconf *netconf_free(struct netconf *n);
DEFINE_CLEANUP(netconf_free, struct netconf *)

/* One line: "cloudbr0 over eth0 (52:54:00:12:34:56), DHCP; cloudbr1 over ..." */
int netconf_describe(const struct netconf *n, struct strbuf *out);

/* The files, in the order they are written: .netdev and .network files under
 * NETCONF_DIR, NETCONF_MODULES, /etc/resolv.conf when a bridge has dns. */
int netconf_files(const struct netconf *n, struct netconf_file **ret, size_t *ret_n);
void netconf_files_free(struct netconf_file *f, size_t n);
