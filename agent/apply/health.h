/* The installed system's storage, checked at its first boot (issue 30,
 * docs/register.md "Storage check at first boot"): every mount and swap of
 * the /etc/fstab and every volume of the /etc/crypttab that kiln wrote
 * (configure.c), each up or not, and for one that is not up, why.
 *
 * Required is what the node's systemd makes of the line: no `nofail`. A
 * crypttab line with `noauto` is a volume the initramfs opens
 * (docs/spec.md "Device waits"); systemd starts nothing for it, and it is
 * checked through the mount on it.
 *
 * Up means, from the kernel's own tables:
 *   mount   /proc/self/mountinfo has the mount point, mounted from the
 *           device the line names (same device number);
 *   swap    /proc/swaps lists that device;
 *   volume  /dev/mapper/NAME is a block device.
 * The device a line names (UUID=, PARTUUID=, a path) is found with libblkid
 * (its cache kept in memory: nothing is written).
 *
 * Why, for one that is not up: whether its device is there at all; and
 * where systemd runs (kiln_paths.systemd_booted, never with a root of its
 * own), what systemd says of its unit and of the device's (`systemctl
 * show`: ActiveState, SubState, Result) and the unit's last journal lines
 * of this boot. A unit whose job is still running (a device systemd still
 * waits for, up to its x-systemd.device-timeout) is waited for first, at
 * most HEALTH_SETTLE_MAX_USEC. Silent module: the caller logs. */
#pragma once
#include "strbuf.h"
#include "util.h"

#include <json-c/json.h>

#define HEALTH_SETTLE_MAX_USEC (600ull * 1000000ull)      /* the unit's TimeoutStartSec= is 900 s */
#define HEALTH_JOURNAL_LINES 5
#define HEALTH_FILE_MAX (1024u * 1024u)

enum health_kind {
        HEALTH_MOUNT,
        HEALTH_SWAP,
        HEALTH_VOLUME,
};

struct health_item {
        enum health_kind kind;
        char *what;             /* the mount point, the swap's source, the volume's name */
        char *source;           /* as the line names it: UUID=..., /dev/mapper/NAME */
        char *device;           /* the device that carries it now, or NULL: none */
        char *timeout;          /* x-systemd.device-timeout= of the line, or NULL */
        bool required;
        bool up;
        char *why;              /* NULL when up */
        char *unit;             /* where systemd runs: its unit, and what systemd says of it */
        char *systemd;
        char *journal;
};

struct health {
        struct health_item *items;
        size_t n;
        bool systemd;           /* systemd was asked */
        unsigned down, required_down;
};

void health_done(struct health *h);

/* The check. root: the installed system is mounted there (the fstab,
 * crypttab and mount points are read under it; systemd is not asked), NULL
 * for /. A file kiln did not write (no fstab: nothing to check) is no
 * error. -errno with err filled when a file cannot be read or parsed. */
int health_check(const char *root, struct health *ret, struct strbuf *err);

/* One line for the log: "mount /srv (UUID=..., required): not mounted: ..." */
int health_item_describe(const struct health_item *it, struct strbuf *out);

/* The report's member and the event's list: every item (all), or those not up. */
json_object *health_to_json(const struct health *h, bool all);

const char *health_kind_name(enum health_kind k);
