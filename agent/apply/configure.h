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

/* Write all of them under kiln_paths.target; hostname may be NULL (skipped). */
int configure_target(const struct plan *p, const char *hostname, struct strbuf *err);

/* network: the systemd-networkd files of n (netconf.h) under the target, old
 * kiln files there removed, systemd-networkd enabled. Refuses (-ENOENT, err
 * says so) before writing anything when the image has no systemd-networkd. */
int configure_network(const struct netconf *n, struct strbuf *err);

/* The UUID (or TYPE when key is "TYPE") libblkid finds on a device. */
int configure_probe_value(const char *dev, const char *key, char **ret);

/* rel (absolute, inside the target) under kiln_paths.target; -ENAMETOOLONG. */
int configure_target_path(const char *rel, char buf[static PATH_MAX]);
/* The symlink rel (in the target) -> to, made beside it and renamed over it
 * (a rerun replaces it); parents made. */
int configure_symlink(const char *to, const char *rel);
