/* Host spec v1: the in-memory form of the operator's YAML (docs/spec.md).
 *
 * Objects refer to each other by id, in any stacking order. Every object and
 * every field that later stages may complain about keeps its source position,
 * so the planner can also report "file:line:col". spec_parse() is pure: it
 * reads a buffer and never touches the machine or the network. */
#pragma once
#include "diag.h"
#include "util.h"

#define SPEC_MAX_BYTES (1024u * 1024u)   /* larger input is refused */
#define SPEC_MAX_DEPTH 32                /* deeper nesting is refused */

struct spec_mark {
        unsigned line, col;     /* 1-based; 0 = not present in the file */
};

enum spec_size_kind {
        SPEC_SIZE_UNSET = 0,
        SPEC_SIZE_BYTES,        /* "20G" */
        SPEC_SIZE_PERCENT,      /* "10%" of the disk (partitions) or "80%FREE" of the VG free space (LVs) */
        SPEC_SIZE_REST,         /* "rest" (partitions) or "100%FREE" (LVs): everything that is left */
};

struct spec_size {
        enum spec_size_kind kind;
        uint64_t bytes;
        unsigned percent;       /* 1..100 */
        struct spec_mark mark;
};

/* A LUKS object's cipher and key size when the spec names none: set by the
 * parser, the only place a default is applied (downstream reads the spec). */
#define SPEC_LUKS_CIPHER "aes-xts-plain64"
#define SPEC_LUKS_KEY_SIZE 512u

/* What kind of object an id names (spec_lookup, and the references the
 * parser resolves). */
enum spec_obj_kind {
        SPEC_OBJ_NONE = 0,
        SPEC_OBJ_DISK,
        SPEC_OBJ_PARTITION,
        SPEC_OBJ_RAID,
        SPEC_OBJ_LUKS,
        SPEC_OBJ_VG,
        SPEC_OBJ_LV,
};

/* A reference by id, resolved once by the parser (cross_check): the object
 * and its kind; downstream compares pointers and never looks an id up. */
struct spec_ref {
        enum spec_obj_kind kind;
        const void *obj;
};

/* disks: which physical disks to use. One entry may select several ("count"). */
struct spec_disk {
        char *id;
        struct spec_mark mark;
        /* match criteria, all of which must hold; NULL/0/-1 = not given */
        char *path;             /* /dev/sda */
        char *by_id;            /* name under /dev/disk/by-id, with or without the prefix */
        char *serial;
        char *wwn;
        char *model;            /* shell glob (fnmatch) */
        char *vendor;           /* shell glob (fnmatch) */
        char *transport;        /* sata, sas, nvme, usb, virtio, scsi, ... */
        uint64_t min_size, max_size;
        int rotational;         /* -1 unset, 0, 1 */
        enum spec_disk_pick {
                SPEC_PICK_NONE = 0,
                SPEC_PICK_LARGEST,      /* size: largest: the count largest of the disks matched */
                SPEC_PICK_SMALLEST,
        } pick;
        unsigned count;         /* disks this rule must match exactly; default 1 */
        bool wipe;              /* allow destroying existing signatures */
        struct spec_mark match_mark;
        /* match: [{...}, {...}]: fallback criteria, tried in order; the
         * first that selects exactly count disks wins (plan.c). Each holds
         * its own criteria merged with those written directly in the entry
         * (which then stand in the fields above too), its id, count and wipe
         * copied; mark and match_mark are its mapping's. n_alts == 0: a
         * single set of criteria, the fields above. */
        struct spec_disk *alts; size_t n_alts;
};

#define SPEC_DISK_MAX_ALTS 16u

enum spec_part_type {
        SPEC_PART_LINUX = 0,
        SPEC_PART_RAID,
        SPEC_PART_LVM,
        SPEC_PART_BIOS_GRUB,
        SPEC_PART_ESP,
        SPEC_PART_SWAP,
};

/* partitions: GPT partitions, created on every disk the "on" rule selects. */
struct spec_partition {
        char *id;
        struct spec_mark mark;
        char *on;               /* disk id */
        const struct spec_disk *disk;   /* on, resolved */
        struct spec_mark on_mark;
        struct spec_size size;
        enum spec_part_type type;
        char *name;             /* GPT partition name; the id unless given (always set) */
};

/* raid: an md array. members are ids of disks or partitions; an id that
 * stands for several devices (count > 1) contributes all of them. */
struct spec_raid {
        char *id;
        struct spec_mark mark;
        char *name;             /* md name: /dev/md/NAME; the id unless given (always set) */
        unsigned level;         /* 0, 1, 5, 6, 10 */
        struct spec_mark level_mark;
        char *layout;           /* raid10: n2 f2 o2 n3 f3 o3; raid5/6: left-symmetric etc. */
        struct spec_mark layout_mark;
        uint64_t chunk;         /* bytes; 0 = mdadm default */
        char *metadata;         /* "1.2" unless given ("1.0", "1.1", "0.90"; always set) */
        char *bitmap;           /* "internal" or "none"; NULL = mdadm default */
        char **members;         /* NULL-terminated ids */
        struct spec_ref *member_refs;   /* members, resolved (one each) */
        struct spec_mark *member_marks;
        struct spec_mark members_mark;
        unsigned spares;        /* the last N expanded members become spares */
        bool assume_clean;
};

enum spec_key_source {
        SPEC_KEY_NONE = 0,
        SPEC_KEY_PASSPHRASE,    /* inline passphrase (a secret) */
        SPEC_KEY_URL,           /* fetched over HTTP(S), sha256 pinned */
        SPEC_KEY_GENERATE,      /* random key made on the node */
};

enum spec_pbkdf_type {
        SPEC_PBKDF_DEFAULT = 0, /* libcryptsetup default for LUKS2 (argon2id) */
        SPEC_PBKDF_ARGON2ID,
        SPEC_PBKDF_ARGON2I,
        SPEC_PBKDF_PBKDF2,
};

struct spec_luks {
        char *id;
        struct spec_mark mark;
        char *on;               /* id of a disk, partition, raid or lv */
        struct spec_ref on_ref; /* on, resolved */
        struct spec_mark on_mark;
        char *name;             /* dm name: /dev/mapper/NAME; the id unless given (always set) */
        unsigned count;         /* devices it stands for: 1, or N when 'on' stands for N (a disk rule
                                 * with count N, a partition on one): one LUKS2 per device, named by
                                 * spec_luks_name(); set by the checks (0 only in an invalid spec) */
        char *cipher;           /* SPEC_LUKS_CIPHER unless the spec says (always set) */
        unsigned key_size;      /* bits; SPEC_LUKS_KEY_SIZE unless the spec says (always set) */
        char **bench_ciphers;   /* the benchmark's candidates for it ("cipher:key_size"): bench.ciphers,
                                 * else its own cipher and key size (always set, never empty) */
        unsigned sector_size;   /* 512 or 4096; 0 = libcryptsetup default */
        char *label;
        struct {
                enum spec_pbkdf_type type;
                unsigned time_ms;       /* 0 = default */
                uint64_t max_memory;    /* bytes; 0 = default (still capped on the node) */
                unsigned iterations;    /* pbkdf2 only: forced iteration count; 0 = benchmark */
                unsigned parallel;      /* argon2 threads; 0 = default */
        } pbkdf;
        bool no_read_workqueue, no_write_workqueue, discard;
        struct {
                enum spec_key_source source;
                char *passphrase;       /* SECRET */
                struct spec_mark passphrase_mark;
                char *url;
                char *sha256;           /* hex, lower case */
                struct spec_mark mark;
                /* generate only: the operator's certificate (PEM) the generated key is
                 * escrowed to (CMS EnvelopedData); NULL: kept nowhere */
                char *escrow;
                char escrow_sha256[65]; /* its SHA-256 fingerprint, hex (set when escrow is) */
        } key;
        /* unlock: unattended unlock at the installed system's boot (clevis);
         * n_tang == 0: none. The spec's key stays as the recovery keyslot. */
        struct {
                struct spec_tang *tang; size_t n_tang;
                unsigned threshold;     /* pins that must answer; 1 when not given */
                struct spec_mark mark;
        } unlock;
};

/* One Tang server of luks[].unlock: its URL and the thumbprint of its
 * signing key (what `jose jwk thp` prints), which the advertisement must
 * be signed with. */
struct spec_tang {
        char *url;
        char *thp;
        struct spec_mark mark;
};

struct spec_vg {
        char *id;
        struct spec_mark mark;
        char *name;             /* VG name; the id unless given (always set) */
        char **pvs;             /* ids of disks, partitions, raids or luks */
        struct spec_ref *pv_refs;       /* pvs, resolved (one each) */
        struct spec_mark *pv_marks;
        struct spec_mark pvs_mark;
        uint64_t extent_size;   /* 0 = lvm default */
};

struct spec_lv {
        char *id;
        struct spec_mark mark;
        char *vg;               /* vg id */
        const struct spec_vg *vg_obj;   /* vg, resolved */
        struct spec_mark vg_mark;
        char *name;             /* LV name; the id unless given (always set) */
        struct spec_size size;
};

enum spec_fs_type {
        SPEC_FS_XFS = 0,
        SPEC_FS_EXT4,
        SPEC_FS_SWAP,
        SPEC_FS_VFAT,
};

struct spec_filesystem {
        struct spec_mark mark;
        char *on;               /* id of any block-device object */
        struct spec_ref on_ref; /* on, resolved */
        struct spec_mark on_mark;
        enum spec_fs_type type;
        char *label;
        char **mkfs_options;    /* extra argv for mkfs, NULL-terminated */
        char *mount;            /* absolute path inside the target; NULL for swap / unmounted */
        struct spec_mark mount_mark;
        char *mount_options;    /* NULL: "defaults" (spec_fs_mount_options) */
        /* required: the boot fails (emergency mode) without it. Set by the
         * parser: true for '/', '/usr', '/boot' and '/boot/efi' (what the node
         * cannot run without), else the spec's 'required' (default false:
         * nofail in fstab and crypttab, docs/spec.md "Device waits") */
        bool required;
        struct spec_mark required_mark;
        /* encrypt: random (swap only): plain dm-crypt with a fresh key from
         * /dev/urandom at every boot (crypttab's swap option); kiln leaves the
         * device blank and formats nothing */
        bool encrypt_random;
        struct spec_mark encrypt_mark;
        /* device_timeout: seconds systemd waits for this line's device (its
         * fstab line, an encrypted swap's crypttab line); 0 = the top-level
         * one (spec_fs_device_timeout). A data disk that may be dead gets a
         * short wait, while '/' keeps the long one for slow HBAs */
        unsigned device_timeout;
        struct spec_mark device_timeout_mark;
};

/* How long the installed system's systemd waits for each device of fstab
 * and crypttab (x-systemd.device-timeout=) when the spec's device_timeout
 * does not say: 5 minutes, not systemd's 90 s. SAS HBAs that enumerate for
 * minutes and disks that spin up one after another on junk boxes exceed
 * 90 s; a device that is not there after 5 minutes is taken as gone
 * (docs/spec.md "Device waits"). The parser sets it, nothing downstream. */
#define SPEC_DEVICE_TIMEOUT_S 300u
#define SPEC_DEVICE_TIMEOUT_MAX_S 3600u

/* How many boots of the installed system in a row may fail (never reach
 * multi-user with the network up, the installed system's `kiln bootcount
 * good`) before kiln's read-only look at the netbooted node stops booting
 * it: 3, so that a reset or a power cut in the middle of one boot, or a
 * second try after a slow device, does not stop a node, while a system that
 * cannot boot is not booted forever (docs/reinstall.md "A boot that
 * failed", docs/spec.md). The parser sets it, nothing downstream. */
#define SPEC_FAILED_BOOT_LIMIT 3u
#define SPEC_FAILED_BOOT_LIMIT_MAX 100u

/* The plain dm-crypt of a swap with encrypt: random (crypttab cipher=, size=). */
#define SPEC_SWAP_CIPHER "aes-xts-plain64"
#define SPEC_SWAP_KEY_SIZE 512u

enum spec_image_format {
        SPEC_IMAGE_TAR = 0,     /* root filesystem tarball, compression detected from data */
        SPEC_IMAGE_RAW,         /* raw disk image written to a block device */
};

struct spec_image {
        bool present;
        struct spec_mark mark;
        char *url;
        char *sha256;
        enum spec_image_format format;
        char *target;           /* raw: id of the block device to write */
        struct spec_ref target_ref;     /* target, resolved */
        uint64_t max_size;      /* refuse more bytes than this; 0 = default limit */
};

enum spec_on_fail {
        SPEC_ON_FAIL_ABORT = 0,
        SPEC_ON_FAIL_WARN,
};

struct spec_bench {
        bool present;
        struct spec_mark mark;
        char **ciphers;         /* candidates, e.g. "aes-xts-plain64:512", "xchacha12,aes-adiantum-plain64:256" */
        bool tune;              /* try perf flags / sector sizes / ciphers and pick the fastest */
        double cipher_mbps;     /* 0 = no floor */
        double write_mbps, read_mbps;
        double max_overhead;    /* 0.5 = encrypted may be at most 50 % slower than raw; 0 = no limit */
        enum spec_on_fail on_fail;
};

struct spec_cloudstack {
        bool present;
        struct spec_mark mark;
        char *endpoint;         /* http(s)://host:8080/client/api */
        char *zone, *pod, *cluster;
        char *api_key;
        char *secret_key;       /* SECRET */
        char *host_username;    /* what addHost logs in with; the account is set up on the target */
        char *host_password;    /* SECRET; stored hashed in the target's /etc/shadow */
        char *host_authorized_key; /* the management server's SSH public key, for host_username */
        char *host_url;         /* default: http://<node ip> */
};

struct spec_webhook {
        bool present;
        struct spec_mark mark;
        char *url;
        char *hmac_key;         /* SECRET */
};

enum spec_firmware {
        SPEC_FIRMWARE_BIOS = 0,
        SPEC_FIRMWARE_UEFI,
        SPEC_FIRMWARE_BOTH,
};

/* boot.timeout: the seconds GRUB's menu waits before it boots the first
 * entry, as Debian's /etc/default/grub has it unless the spec says */
#define SPEC_BOOT_TIMEOUT 5u
#define SPEC_BOOT_TIMEOUT_MAX 300u

/* boot: the installed system boots from its disks; the plan installs GRUB.
 * /boot is the filesystem mounted at /boot, or the root filesystem. */
struct spec_boot {
        bool present;
        struct spec_mark mark;
        enum spec_firmware firmware;
        struct spec_mark firmware_mark;
        char **cmdline;         /* extra kernel arguments (GRUB_CMDLINE_LINUX), NULL-terminated or NULL */
        unsigned timeout;       /* GRUB's menu, seconds (GRUB_TIMEOUT): SPEC_BOOT_TIMEOUT unless the spec says */
        char **disks;           /* disk rule ids GRUB goes to; NULL: every disk under /boot */
        struct spec_mark *disk_marks;
        struct spec_mark disks_mark;
};

/* network: the installed system's network (systemd-networkd files, written by
 * the configure stage): CloudStack's bridges over a NIC or a bond, maybe on a
 * VLAN, with DHCP or a static address. NICs are chosen by rule; the plan
 * resolves each rule to one NIC of the inventory. */
enum spec_nic_rule {
        SPEC_NIC_NONE = 0,
        SPEC_NIC_MAC,           /* value: the MAC, lower case */
        SPEC_NIC_BOOT,          /* the NIC the node booted from (inventory_primary_mac) */
        SPEC_NIC_LINK,          /* the first NIC with link */
        SPEC_NIC_NAME,          /* value: a shell glob on the name the inventory reports */
};

struct spec_nic {
        enum spec_nic_rule rule;
        char *value;
        struct spec_mark mark;
};

struct spec_bond {
        char *name;             /* bond0 */
        struct spec_mark mark;
        char *mode;             /* balance-rr, active-backup, ..., 802.3ad; default active-backup */
        struct spec_nic *members; size_t n_members;
};

struct spec_bridge {
        char *name;             /* cloudbr0 */
        struct spec_mark mark;
        struct spec_nic nic;    /* the port: a NIC ... */
        char *bond;             /* ... or a bond of network.bonds (by name) */
        struct spec_mark bond_mark;
        unsigned vlan;          /* 1..4094: the bridge takes VLAN device vlanN on that port; 0 = untagged */
        bool dhcp;
        char *address;          /* "10.1.0.5/24" or "fd00::5/64"; may hold ${...} */
        struct spec_mark address_mark;
        char *gateway;          /* may hold ${...} */
        struct spec_mark gateway_mark;
        char **dns;             /* NULL-terminated or NULL; may hold ${...} */
        struct spec_mark dns_mark;
};

struct spec_network {
        bool present;
        struct spec_mark mark;
        struct spec_bridge *bridges; size_t n_bridges;
        struct spec_bond *bonds;     size_t n_bonds;
};

/* nodes: per-node values in the rack's one spec (docs/spec.md "Per-node
 * values: nodes"), a row per machine, keyed by the boot NIC's MAC or the
 * SMBIOS serial, and a default row for the machines not in the table. A
 * row's hostname stands for the spec's hostname, its address (and gateway)
 * for the address of one bridge of network. plan_node_row() picks the row. */
enum spec_node_by {
        SPEC_NODE_MAC = 0,      /* key: a MAC, lower case with colons */
        SPEC_NODE_SERIAL,       /* key: an SMBIOS serial, as the inventory reports it */
        SPEC_NODE_DEFAULT,      /* key: "default" */
};

struct spec_node {
        char *key;              /* the MAC (lower case), the serial, or "default" */
        enum spec_node_by by;
        struct spec_mark mark;  /* the key's */
        char *hostname;         /* may hold ${...}; NULL: the spec's hostname */
        struct spec_mark hostname_mark;
        char *address;          /* "ADDR/PREFIX", may hold ${...}; NULL: the bridge's own */
        struct spec_mark address_mark;
        char *gateway;          /* only with address; NULL: the bridge's own */
        struct spec_mark gateway_mark;
        char *bridge;           /* the bridge address goes to; NULL: the first of network.bridges */
        struct spec_mark bridge_mark;
};

#define SPEC_NODE_DEFAULT_KEY "default"

enum spec_finish {
        SPEC_FINISH_NONE = 0,
        SPEC_FINISH_REBOOT,
        SPEC_FINISH_POWEROFF,
};

struct spec {
        char *file;             /* name used in diagnostics */
        unsigned version;
        char *hostname;         /* may contain ${mac:hexhyp} ${mac:hexraw} ${uuid} ${serial} ${hostname} */
        struct spec_mark hostname_mark;
        char *ca;               /* extra CA bundle (PEM text or path/URL) for HTTPS */
        char *reinstall;        /* the operator's reinstall token (docs/reinstall.md), NULL if none */

        struct spec_disk *disks;             size_t n_disks;
        struct spec_partition *partitions;   size_t n_partitions;
        struct spec_raid *raids;             size_t n_raids;
        struct spec_luks *luks;              size_t n_luks;
        struct spec_vg *vgs;                 size_t n_vgs;
        struct spec_lv *lvs;                 size_t n_lvs;
        struct spec_filesystem *filesystems; size_t n_filesystems;

        struct spec_image image;
        struct spec_boot boot;
        struct spec_bench bench;
        struct spec_cloudstack cloudstack;
        struct spec_webhook webhook;
        struct spec_network network;
        struct spec_node *nodes; size_t n_nodes;        /* nodes: in file order; n_nodes 0: none */
        struct spec_mark nodes_mark;
        enum spec_finish finish;
        struct spec_mark finish_mark;
        unsigned device_timeout;        /* seconds; SPEC_DEVICE_TIMEOUT_S unless the spec says (always set) */
        struct spec_mark device_timeout_mark;
        unsigned failed_boot_limit;     /* SPEC_FAILED_BOOT_LIMIT unless the spec says (always set) */

        /* layouts: (docs/spec.md "Layouts"): storage stacks chosen per
         * machine. Each layout is parsed as a spec of its own (its storage
         * sections beside everything outside layouts:), named by layout.
         * The spec spec_parse() returns is the first layout; layouts holds
         * every one in order (layouts[0] is that spec itself, the others it
         * owns). Without layouts: layout is NULL and n_layouts 0. */
        char *layout;
        struct spec_mark layout_mark;
        struct spec **layouts; size_t n_layouts;
};

#define SPEC_LAYOUTS_MAX 32u

/* Parse and validate. Every problem goes into diags (file:line:col); returns
 * 0 when the spec is valid, -EINVAL when diags holds errors (*ret is then
 * NULL), other -errno on allocation failure. file is only used in messages. */
int spec_parse(const char *file, const char *data, size_t len, struct spec **ret, struct diags *diags);
int spec_load(const char *path, struct spec **ret, struct diags *diags);

/* Wipes secrets, frees everything; accepts NULL, returns NULL. */
struct spec *spec_free(struct spec *s);
DEFINE_CLEANUP(spec_free, struct spec *)
#define _cleanup_spec_free_ _cleanup_(spec_freep)

/* Register every secret of the spec with the log's redaction filter. */
int spec_register_secrets(const struct spec *s);

/* What kind of object an id names, and its position; SPEC_OBJ_NONE if unknown. */
enum spec_obj_kind spec_lookup(const struct spec *s, const char *id, const void **ret_obj);

/* Expand ${mac} ${mac:hexhyp} ${mac:hexraw} ${uuid} ${serial} ${hostname} in a string. Unknown variables
 * are an error (-EINVAL). Values come from the inventory (see inventory.h). */
struct spec_vars {
        const char *mac, *uuid, *serial, *hostname;
};
/* On -ENODATA (a variable without a value in vars) *reterr_var (may be
 * NULL) names that variable ("serial"). */
int spec_expand(const char *in, const struct spec_vars *vars, char **ret, const char **reterr_var);

/* Why h is not a host name by RFC 1123 ("has a label that starts or ends
 * with '-'"), or NULL when it is one. */
const char *spec_hostname_problem(const char *h);
/* A reinstall token (spec `reinstall:`, kiln.reinstall=; docs/reinstall.md):
 * 1 to SPEC_REINSTALL_MAX characters of A-Z a-z 0-9 . _ : - ; NULL when t is
 * one, else what is wrong with it. */
#define SPEC_REINSTALL_MAX 64
const char *spec_reinstall_problem(const char *t);
/* An SMBIOS serial or UUID that boards report instead of a real one ("To be
 * filled by O.E.M.", "Default string", all zeros, ...): kiln treats it as
 * missing. NULL counts as a placeholder. */
bool spec_value_is_placeholder(const char *value);

/* Does a disk rule's serial hold glob characters ('*', '?', '[')? Then it is
 * a pattern (fnmatch) and may match several disks. */
bool spec_is_glob(const char *s);

/* How many copies of each block a raid10 array of this layout keeps (n2 f2
 * o2: 2, n3 f3 o3: 3; NULL is mdadm's default n2): its minimum member count
 * and the divisor of its capacity. */
unsigned spec_raid10_copies(const char *layout);
/* The names of the spec's enums, as the spec writes them: one table each,
 * beside the parser that reads them; NULL for a value out of range. */
const char *spec_part_type_name(enum spec_part_type t);
const char *spec_fs_type_name(enum spec_fs_type t);
const char *spec_pbkdf_type_name(enum spec_pbkdf_type t);
/* What a key source is, for the plan's text ("passphrase from the spec"). */
const char *spec_key_source_name(enum spec_key_source k);
/* What x's key is, for the plan: spec_key_source_name(), or for a generated
 * key escrowed to a certificate, that. */
const char *spec_luks_key_name(const struct spec_luks *x);
/* The escrow certificate check (spec_escrow.c): pem must be exactly one
 * X.509 certificate with an RSA (at least 2048 bits, keyUsage allowing
 * keyEncipherment when it has one) or EC key (keyAgreement), valid now.
 * *ret_cert (may be NULL) gets it, ret_sha256 its SHA-256 fingerprint (hex).
 * On failure why says what is wrong ("has expired"), to follow the field's
 * name: -EBADMSG (does not parse), -EKEYREJECTED (its key), -EKEYEXPIRED. */
struct x509_st;
int spec_escrow_cert(const char *pem, struct x509_st **ret_cert, char ret_sha256[static 65], char *why, size_t why_len);
/* The PBKDF a keyslot gets: default stands for libcryptsetup's LUKS2
 * default, argon2id. */
enum spec_pbkdf_type spec_pbkdf_effective(enum spec_pbkdf_type t);
/* Is obj (a spec object) the object id names or below it (through
 * partitions, raid members, luks, volume groups, volumes)? The spec must
 * be valid (no cycles). */
bool spec_is_below(const struct spec *s, const char *id, const void *obj);
/* The mount options of a filesystem: its mount_options, else "defaults". */
const char *spec_fs_mount_options(const struct spec_filesystem *fs);
/* How long the installed system waits for fs's device: its own
 * device_timeout, else the spec's (docs/spec.md "Device waits"). */
unsigned spec_fs_device_timeout(const struct spec *s, const struct spec_filesystem *fs);
/* The key size in bits of a cipher written without one (bench.ciphers'
 * "cipher" rather than "cipher:bits", kiln bench --cipher): 256 for
 * Adiantum, which takes no other, else SPEC_LUKS_KEY_SIZE. */
unsigned spec_cipher_key_size(const char *cipher);
/* The dm name of device #index of a luks: its name when it stands for one
 * device, else "<name>-<index>" (crypt0-0 .. crypt0-3): the one place the
 * per-disk names are made (plan, apply, crypttab, resume). */
int spec_luks_name(const struct spec_luks *x, unsigned index, char **ret);
/* The dm name of a swap with encrypt: random: "<on>_crypt" (Debian's
 * spelling, sda5_crypt), /dev/mapper/<that> in fstab. */
int spec_swap_crypt_name(const struct spec_filesystem *fs, char **ret);
const char *spec_firmware_name(enum spec_firmware f);

/* The filesystem that holds /boot: the one mounted at /boot, else the root
 * filesystem; NULL when there is neither. */
const struct spec_filesystem *spec_boot_filesystem(const struct spec *s);
/* The filesystem mounted at /, or NULL. */
const struct spec_filesystem *spec_root_filesystem(const struct spec *s);
/* The ESP: the vfat filesystem mounted at /boot/efi, or NULL. */
const struct spec_filesystem *spec_esp_filesystem(const struct spec *s);
/* The disk rule ids below object id (through partitions, raid members,
 * luks, volume groups, volumes), each once, in the order met; 0 and *ret
 * (maybe NULL: none) on success. The spec must be valid (no cycles). */
int spec_disks_below(const struct spec *s, const char *id, char ***ret);
/* The disk rules GRUB is installed on: boot.disks, else every disk rule
 * below /boot's filesystem. */
int spec_boot_disks(const struct spec *s, char ***ret);
/* The first luks below object id (the device /boot sits on), or NULL. */
const struct spec_luks *spec_luks_below(const struct spec *s, const char *id);
/* The bridge of network.bridges a nodes row's address goes to: the row's
 * bridge, else the first bridge; NULL when there is none. */
const struct spec_bridge *spec_node_bridge(const struct spec *s, const struct spec_node *row);
/* The bond of network.bonds named name, or NULL. */
const struct spec_bond *spec_network_bond(const struct spec *s, const char *name);
/* Why s is not an IP address (with_prefix: "ADDR/PREFIX"), or NULL when it is one. */
const char *spec_ip_problem(const char *s, bool with_prefix);
/* Why gateway cannot be the next hop of address ("ADDR/PREFIX"; both valid):
 * outside its subnet, of the other family, the address itself; NULL when it
 * can. The text may be in buf. */
const char *spec_gateway_problem(const char *address, const char *gateway, char *buf, size_t size);
/* Does any luks have an unlock pin? */
bool spec_has_unlock(const struct spec *s);
