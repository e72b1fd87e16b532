/* The installed system's network when systemd-networkd gave up on it.
 *
 * systemd-networkd gives the kernel 25 s to answer each netlink request
 * (creating a bond, a bridge, setting a link up). A request that gets no
 * answer in time puts the link into the setup state "failed", and networkd
 * never tries that link again in this boot: a node whose boot stalled at
 * that moment (a slow module load on an old box, systemd issue 19999; the
 * rig's emulated guests stall 20-56 s) stays off the network, its bond and
 * bridge down, until someone restarts networkd by hand.
 *
 * So the install puts NETHEAL_UNIT into the target with the network files
 * (configure_network): at every boot, after systemd-networkd and before
 * network-online.target, `FIRSTBOOT_BINARY network heal BRIDGE...` reads
 * networkd's own state of each link (kiln_paths.netif_links/IFINDEX,
 * ADMIN_STATE=) and
 *   - restarts systemd-networkd when a link reads "failed" (a new
 *     networkd configures every link afresh), naming the links, at most
 *     NETHEAL_RESTARTS_MAX times;
 *   - is done when every bridge of the spec reads "configured" (its address
 *     is there: DHCP, static), or when NETHEAL_WINDOW_S went by since
 *     networkd (re)started without that (a cable out, no DHCP server: left
 *     to networkd, which keeps trying those; said in the log).
 * docs/spec.md "When systemd-networkd gives up" tells operators. */
#pragma once
#include "netconf.h"
#include "strbuf.h"

#include <stdbool.h>
#include <time.h>

#define NETHEAL_UNIT           "kiln-network-heal.service"
#define NETHEAL_UNIT_PATH      "/etc/systemd/system/" NETHEAL_UNIT
#define NETHEAL_WANTS_LINK     "/etc/systemd/system/multi-user.target.wants/" NETHEAL_UNIT
#define NETHEAL_NETWORKD_UNIT  "systemd-networkd.service"
#define NETHEAL_WINDOW_S       120u     /* systemd-networkd-wait-online's own default wait */
#define NETHEAL_RESTARTS_MAX   3u

/* networkd's state of the links, as read once */
struct netheal_look {
        struct strbuf failed;   /* "bond0, cloudbr0": links that read failed; "" none */
        struct strbuf waiting;  /* "cloudbr0 (configuring)": bridges not yet configured; "" none */
};
void netheal_look_done(struct netheal_look *l);

/* Reads kiln_paths.netif_links: every link whose state file reads
 * ADMIN_STATE=failed and was written at or after since (a file older than
 * the last restart is the networkd before it); each of bridges[0..n) whose
 * state is not "configured" (missing: "no such link", "not set up yet").
 * Names from kiln_paths.sysfs/class/net/NAME/ifindex. -errno when the
 * directory cannot be read (ENOENT: nothing written yet is not an error). */
int netheal_look(char *const *bridges, size_t n, const struct timespec *since, struct netheal_look *ret);

/* The unit's text: ExecStart= names the bridges of n. */
int netheal_unit_text(const struct netconf *n, struct strbuf *out);
/* The unit into the target, enabled (multi-user.target.wants); err names a
 * file that could not be written. Nothing when n has no bridge. */
int netheal_install(const struct netconf *n, struct strbuf *err);
