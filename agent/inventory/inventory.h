/* What a machine has: disks (with the signatures they already carry),
 * NICs, CPU, memory. Pure: inventory_probe() (probe.h) reads a live or
 * recorded /sys + /dev tree; inventory_load_json() reads what `kiln
 * inventory --json` saved, so a plan can be made for a machine that is not
 * this one. */
#pragma once
#include "strbuf.h"
#include "util.h"

/* Limits for a probed or loaded inventory. */
#define INVENTORY_MAX_DISKS 4096
#define INVENTORY_MAX_PARTS 256
#define INVENTORY_MAX_NICS 1024

/* One on-disk signature found by libblkid. */
struct inv_signature {
        char *type;             /* blkid TYPE or PTTYPE: gpt, dos, xfs, ext4, crypto_LUKS, linux_raid_member, LVM2_member, swap ... */
        char *usage;            /* filesystem, crypto, raid, other, partition_table */
        char *uuid;
        char *label;
        uint64_t offset;        /* bytes from the start of the device */
};

struct inv_partition {
        char *name;             /* vda1 */
        char *path;             /* /dev/vda1 */
        unsigned number;
        uint64_t start, size;   /* bytes */
        struct inv_signature *sigs; size_t n_sigs;
        char **holders;         /* NULL-terminated: md0, dm-1 (from /sys/.../holders) */
        char *mountpoint;       /* NULL if not mounted */
};

struct inv_disk {
        char *name;             /* vda */
        char *path;             /* /dev/vda */
        char **by_id;           /* NULL-terminated names under /dev/disk/by-id */
        uint64_t size;          /* bytes */
        unsigned logical_sector, physical_sector;
        bool rotational, removable, readonly;
        char *model, *vendor, *serial, *wwn;
        char *transport;        /* sata, sas, nvme, usb, virtio, scsi, ... */
        struct inv_partition *parts; size_t n_parts;
        struct inv_signature *sigs; size_t n_sigs;   /* on the whole disk */
        char **holders;         /* NULL-terminated */
        char *mountpoint;       /* whole disk mounted */
        bool unreadable;        /* the disk or a partition could not be opened or probed
                                 * (EPERM, EIO ...): signatures unknown, so treat it as in use */
};

struct inv_nic {
        char *name;             /* eth0 */
        char *mac;              /* 52:54:00:12:34:56 */
        bool up;
        char **ipv4;            /* NULL-terminated addresses, for registration */
};

struct inventory {
        char *hostname;
        char *machine_uuid;     /* /sys/class/dmi/id/product_uuid */
        char *serial;           /* /sys/class/dmi/id/product_serial */
        char *cpu_model;
        unsigned cpus;
        bool cpu_aes, cpu_vaes, cpu_avx2;
        uint64_t mem_total, mem_available;    /* bytes */
        struct inv_disk *disks; size_t n_disks;
        struct inv_nic *nics;   size_t n_nics;
};

/* On failure err (may be NULL) says where: "disks[1].size: expected an
 * unsigned integer" for a bad JSON file; nothing for a file that cannot be
 * read (-errno). */
int inventory_load_json(const char *path, struct inventory **ret, struct strbuf *err);
int inventory_from_json_string(const char *text, size_t len, struct inventory **ret, struct strbuf *err);

/* JSON: the shape of the files in tests/inventories/; load(to_json(x)) gives x back. */
int inventory_to_json(const struct inventory *inv, struct strbuf *out);
int inventory_to_text(const struct inventory *inv, struct strbuf *out);

struct inventory *inventory_free(struct inventory *inv);
/* Free what one element owns (not the element): for a prober or loader
 * that drops an element it has half filled. */
void inv_partition_done(struct inv_partition *p);
void inv_disk_done(struct inv_disk *d);
void inv_nic_done(struct inv_nic *n);
DEFINE_CLEANUP(inventory_free, struct inventory *)
#define _cleanup_inventory_free_ _cleanup_(inventory_freep)

/* How many disks report this serial (cheap USB bridges and some virtual
 * disks repeat one); 0 for NULL or "". */
size_t inventory_count_serial(const struct inventory *inv, const char *serial);
/* What is odd about this machine, one message a line, e.g. "disks /dev/sda
 * and /dev/sdb report the same serial 'X'...". *ret is NULL if nothing is. */
int inventory_warnings(const struct inventory *inv, char ***ret);
/* Appends to sb the warning about the disks that report serial ("disks
 * /dev/sda and /dev/sdb report the same serial 'X' ..."): 1, or 0 (nothing
 * appended) when fewer than two do. */
int inventory_serial_warning(const struct inventory *inv, const char *serial, struct strbuf *sb);

/* The MAC of the boot NIC (first NIC that is up with a MAC, else first with a MAC). */
const char *inventory_primary_mac(const struct inventory *inv);
/* True if the disk or any partition has a signature, holder or mount, or could not be read. */
bool inv_disk_in_use(const struct inv_disk *d);
bool inv_disk_has_signatures(const struct inv_disk *d);
/* The signatures on the disk and its partitions (what a wipe removes). */
size_t inv_disk_count_signatures(const struct inv_disk *d);
/* The holders of the disk and its partitions as /dev paths ("/dev/md127"),
 * each once, disk's partitions first; *ret is NULL when there is none. */
int inv_disk_holders(const struct inv_disk *d, char ***ret);
