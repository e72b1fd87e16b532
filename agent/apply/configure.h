/* Configure the installed system for the storage kiln built: /etc/fstab,
 * /etc/crypttab, /etc/mdadm/mdadm.conf and /etc/hostname under the target. */
#pragma once
#include "plan.h"
#include "strbuf.h"

#include <limits.h>

/* Text of each file, from the plan's steps and what the devices now carry
 * (UUIDs read with libblkid). Pure apart from reading the devices. */
int configure_fstab(const struct plan *p, struct strbuf *out);
int configure_crypttab(const struct plan *p, struct strbuf *out);
/* What cryptroot's initramfs hook makes of that crypttab: its LUKS lines
 * (/cryptroot/crypttab in a generic initramfs, initrd.h). */
int configure_crypttab_initramfs(const struct plan *p, struct strbuf *out);
/* The PARTUUID of a partition the plan makes, read back from its disk
 * (-ENOENT: dev is no partition of the plan). */
int configure_partuuid(const struct plan *p, const char *dev, char **ret);
int configure_mdadm_conf(const struct plan *p, struct strbuf *out, struct strbuf *err);

/* The initramfs' degraded start of md: an initramfs-tools script, in the
 * target at CONFIGURE_MD_START_ETC (an update-initramfs on the node takes it
 * from there) and in the node's archive appended to a generic initramfs at
 * CONFIGURE_MD_START_INITRD (initrd.h). An array udev has begun to assemble
 * that still misses members CONFIGURE_MD_START_WAIT_S seconds after the
 * script began is started degraded, before cryptroot and the root wait look
 * for it (configure.c says why Debian's own start is not enough). */
#define CONFIGURE_MD_START_NAME "kiln-md-degraded"
#define CONFIGURE_MD_START_ETC "/etc/initramfs-tools/scripts/init-premount/" CONFIGURE_MD_START_NAME
#define CONFIGURE_MD_START_INITRD "scripts/init-premount/" CONFIGURE_MD_START_NAME
#define CONFIGURE_MD_START_WAIT_S "20"   /* seconds, as the script says it */
const char *configure_md_start_script(void);

/* The initramfs' early link-up, for a volume unlocked over the network: an
 * initramfs-tools script (init-premount, as above: in the target at
 * CONFIGURE_LINKS_UP_ETC, in the node's archive at CONFIGURE_LINKS_UP_INITRD)
 * that, with ip= on the kernel command line, sets every NIC's link up before
 * cryptroot and clevis run ipconfig (configure.c says why). */
#define CONFIGURE_LINKS_UP_NAME "kiln-links-up"
#define CONFIGURE_LINKS_UP_ETC "/etc/initramfs-tools/scripts/init-premount/" CONFIGURE_LINKS_UP_NAME
#define CONFIGURE_LINKS_UP_INITRD "scripts/init-premount/" CONFIGURE_LINKS_UP_NAME
const char *configure_links_up_script(void);

/* Write all of them under kiln_paths.target (with md, also the degraded
 * start; with LUKS, also the link-up); hostname may be NULL (skipped). */
int configure_target(const struct plan *p, const char *hostname, struct strbuf *err);

/* network: the systemd-networkd files of n (netconf.h) under the target, old
 * kiln files there removed, systemd-networkd enabled, and kiln's unit that
 * restarts it where it gave up (netheal.h). Refuses (-ENOENT, err
 * says so) before writing anything when the image has no systemd-networkd. */
int configure_network(const struct netconf *n, struct strbuf *err);

/* The UUID (or TYPE when key is "TYPE") libblkid finds on a device. */
int configure_probe_value(const char *dev, const char *key, char **ret);

/* rel (absolute, inside the target) under kiln_paths.target; -ENAMETOOLONG. */
int configure_target_path(const char *rel, char buf[static PATH_MAX]);
/* The symlink rel (in the target) -> to, made beside it and renamed over it
 * (a rerun replaces it); parents made. */
int configure_symlink(const char *to, const char *rel);
