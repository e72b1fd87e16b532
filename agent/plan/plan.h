/* The plan: the ordered, typed steps `kiln apply` will run, each with the
 * device it acts on and what it destroys. plan_build() is pure: it resolves
 * the spec's disk rules against an inventory, makes every safety refusal,
 * and never writes. One executor (apply.c) runs the steps; dry-run prints them. */
#pragma once
#include "diag.h"
#include "inventory.h"
#include "spec.h"
#include "strbuf.h"

struct netconf;

enum plan_step_kind {
        PLAN_WIPE,              /* tear down holders, remove signatures */
        PLAN_PARTITION,         /* write a GPT with the spec's partitions on one disk */
        PLAN_MD_CREATE,
        PLAN_LUKS_FORMAT,
        PLAN_LUKS_OPEN,
        PLAN_PVCREATE,
        PLAN_VGCREATE,
        PLAN_LVCREATE,
        PLAN_MKFS,
        PLAN_MOUNT,
        PLAN_BENCH_RAW,         /* before the first luksFormat: cipher speed (zero-backed dm-crypt) and the raw device under LUKS */
        PLAN_BENCH_CRYPT,       /* after luksOpen: the same I/O through dm-crypt, then the gate */
        PLAN_IMAGE,
        PLAN_CONFIGURE,         /* fstab, crypttab, mdadm.conf, hostname in the target */
        PLAN_NETWORK,           /* network: systemd-networkd files (and resolv.conf) in the target */
        PLAN_LUKS_BIND,         /* luks[].unlock: a clevis-bound keyslot (unlock.h), then proven */
        PLAN_BOOTLOADER,        /* boot: target initramfs, GRUB on every boot disk, kernel cmdline, update-grub */
        PLAN_REGISTER,
        PLAN_FINISH,
        /* resume after a failure (docs/apply.md): these replace the steps that built the stack */
        PLAN_MD_ASSEMBLE,       /* mdadm --assemble the array the interrupted run made */
        PLAN_VG_ACTIVATE,       /* vgchange -ay the VG the interrupted run made */
        PLAN_SKIP_STAGE,        /* a step the interrupted run did; kept, not re-run */
        PLAN_RESUME_CHECK,      /* read the progress record in the mounted root: this plan, unfinished? */
        _PLAN_STEP_KIND_MAX,
};

/* One GPT partition of a PLAN_PARTITION step, resolved to bytes. */
struct plan_part {
        const struct spec_partition *part;
        unsigned number;        /* 1-based GPT entry number (spec order on that disk) */
        char *device;           /* /dev/vda2, /dev/nvme0n1p2 */
        uint64_t start, size;   /* bytes, both multiples of 1 MiB */
};

/* The dm-crypt parameters a benchmark may replace (bench: {tune: true}). */
struct plan_crypt {
        const char *cipher;             /* "aes-xts-plain64" (points into the spec) */
        unsigned key_size;              /* bits */
        unsigned sector_size;           /* 0 = libcryptsetup's default */
        bool no_read_workqueue, no_write_workqueue, discard;
};

/* LUKS_FORMAT, LUKS_OPEN: the volume as luksFormat makes it and the open maps it. */
struct plan_luks {
        const struct spec_luks *key;    /* whose key: (passphrase, URL, generate): the one spec object
                                         * the executor reads, for the key material alone */
        const char *backing;            /* the device under LUKS (luksFormat writes it, the open reads it) */
        char *name;                     /* the dm name (spec_luks_name()): /dev/mapper/NAME */
        struct plan_crypt crypt;        /* the spec's values, or, with tuned_by, what the bench replaces */
        size_t tuned_by;                /* 0, or the number (1-based) of the bench-raw step whose choice
                                         * replaces crypt: the one hand-over between two steps */
        const char *label;
        enum spec_pbkdf_type pbkdf;
        unsigned pbkdf_time_ms, pbkdf_iterations, pbkdf_parallel;
        uint64_t pbkdf_max_memory;
        bool key_done;                  /* LUKS_OPEN: the key is not needed again (the last copy's open, and
                                         * not generated: bind fetches it again) */
        char *crypttab_options;         /* LUKS_FORMAT: the fourth field of its crypttab line, whole
                                         * ("luks,initramfs,noauto", "luks,nofail,x-systemd.device-timeout=300s";
                                         * plan.c crypttab_options(), docs/spec.md "Device waits") */
};

/* BENCH_RAW, BENCH_CRYPT: what the benchmark runs and, raw, chooses among. */
struct plan_bench {
        const struct spec_bench *policy;        /* spec->bench: sizes, gate, tune */
        char *const *ciphers;                   /* BENCH_RAW: the candidates ("cipher:key_size", the spec's) */
        struct plan_crypt want;                 /* BENCH_RAW: the volume's own values (kept without tune, or when
                                                 * tuning measured nothing they allow) */
        const char *luks_id;
};

/* MKFS, MOUNT: the filesystem. */
struct plan_fs {
        enum spec_fs_type type;
        const char *label;              /* MKFS */
        char *const *mkfs_options;      /* MKFS: extra mkfs argv, NULL for none */
        bool blank;                     /* MKFS: no filesystem, signatures cleared (swap encrypted at every boot) */
        const char *mountpoint;         /* MOUNT: under the target ("/", "/var/lib") */
        const char *options;            /* MOUNT: the mount options (spec_fs_mount_options()) */
        const char *inspect_options;    /* MOUNT: the read-only look at a finished node (no journal replay) */
        unsigned fsck_pass;             /* MOUNT: fstab's sixth field (0 for XFS, 1 for "/", else 2) */
        char *swap_name;                /* MKFS blank: the crypttab name it is mapped as (spec_swap_crypt_name()) */
        bool swap_by_partuuid;          /* MKFS blank: crypttab names the source by the PARTUUID of the
                                         * partition the plan makes (else by the device: /dev/md/NAME, /dev/VG/LV) */
        char *fstab_options;            /* MOUNT, MKFS swap: the fourth field of its fstab line, whole
                                         * (options plus nofail and x-systemd.device-timeout=, docs/spec.md
                                         * "Device waits"); NULL for other MKFS steps */
        char *crypttab_options;         /* MKFS blank: the fourth field of its crypttab line */
};

/* MD_CREATE, MD_ASSEMBLE: the array. */
struct plan_md {
        const char *name;               /* /dev/md/NAME */
        unsigned level;
        const char *layout;
        uint64_t chunk;
        const char *metadata;
        const char *bitmap;
        unsigned spares;
        bool assume_clean;
};

/* VGCREATE, VG_ACTIVATE: the volume group. */
struct plan_vg {
        const char *name;
        uint64_t extent_size;           /* VGCREATE: bytes, 0 = LVM's default */
        char **lv_nodes;                /* VG_ACTIVATE: the LV nodes to wait for (owned) */
};

struct plan_step {
        enum plan_step_kind kind;
        const char *id;         /* spec object id (points into the spec), NULL for global steps */
        char *device;           /* the device acted on: /dev/vda, /dev/md/md1, /dev/mapper/crypted, /dev/vg0/root */
        char **inputs;          /* NULL-terminated devices consumed (md members, PVs) */
        char *description;      /* one human line */
        char *destroys;         /* what is lost, NULL if nothing */
        const void *obj;        /* the spec object (struct spec_raid * etc.), NULL for global steps */
        unsigned index;         /* for objects that expand per disk: which copy */
        uint64_t size;          /* bytes the device will hold (partition disk, md, LUKS, VG, LV); 0 = unknown */
        bool size_approx;       /* size is an estimate (md/LUKS/LVM overhead) */
        struct plan_part *parts; size_t n_parts;   /* PLAN_PARTITION only */
        enum plan_step_kind skipped;                /* PLAN_SKIP_STAGE only: the kind it skips */
        char *uuid;                                 /* PLAN_MD_ASSEMBLE only; NULL: read by the run (see below) */
        struct plan_lv {                            /* PLAN_LVCREATE only: what lvcreate gets */
                const char *vg, *name;              /* VG and LV names (point into the spec) */
                uint64_t bytes;                     /* exact size, or 0 with: */
                unsigned percent_free;              /* -l N%FREE (spec "rest" = 100) */
        } lv;
        /* by kind, decided by plan_build (the executor runs these and reads no spec object) */
        union {
                struct plan_luks luks;          /* LUKS_FORMAT, LUKS_OPEN */
                struct plan_bench bench;        /* BENCH_RAW, BENCH_CRYPT */
                struct plan_fs fs;              /* MKFS, MOUNT */
                struct plan_md md;              /* MD_CREATE, MD_ASSEMBLE */
                struct plan_vg vg;              /* VGCREATE, VG_ACTIVATE */
                const struct spec_luks *bind;   /* LUKS_BIND: the volume, its key: and its unlock: */
                const struct spec_boot *boot;   /* BOOTLOADER */
        };
};

/* Step fields by kind (the typed payload, the union above, is what the
 * executor runs; obj stays for the reports' ids and the fingerprint):
 *   WIPE         id/obj: disk rule; device: the disk; inputs: holders to stop first (/dev/md127, /dev/dm-0)
 *   PARTITION    id/obj: disk rule; device: the disk; parts: the GPT entries
 *   MD_CREATE    id/obj: raid; device: /dev/md/NAME; inputs: members, the last md.spares are spares; md
 *   BENCH_RAW    id/obj: luks; device: the device under LUKS (before luksFormat); bench
 *   LUKS_FORMAT  id/obj: luks; device: the device under LUKS; inputs: { that device }; luks
 *   LUKS_OPEN    id/obj: luks; device: /dev/mapper/NAME; inputs: { the device under LUKS }; luks
 *   BENCH_CRYPT  id/obj: luks; device: /dev/mapper/NAME; inputs: { the device under LUKS }; bench.policy
 *   PVCREATE     id/obj: vg; device: the PV; index: which PV of the VG
 *   VGCREATE     id/obj: vg; device: /dev/VG; inputs: the PVs; vg
 *   LVCREATE     id/obj: lv; device: /dev/VG/LV; inputs: { /dev/VG }; lv: VG and LV names, size rule
 *   MKFS, MOUNT  id: the filesystem's "on"; obj: struct spec_filesystem; device: the block device; fs
 *   IMAGE        obj: struct spec_image; device: raw target or NULL (tar into the target root)
 *   CONFIGURE    obj: the spec; runs from the LUKS_FORMAT, MKFS and MOUNT payloads (fstab, crypttab)
 *   NETWORK      obj: struct spec_network; plan->net holds the resolved NICs (netconf.h)
 *   LUKS_BIND    id/obj: luks; device: the device under LUKS (its header); bind
 *   BOOTLOADER   obj: struct spec_boot; device: NULL; inputs: the disks GRUB is installed on; boot
 *                (i386-pc writes to each; with UEFI they carry the ESP's members)
 *   REGISTER     obj: struct spec_cloudstack (index 0) or struct spec_webhook (index 1)
 *   FINISH       obj: the spec (spec->finish)
 * Resume plans only (resume.h):
 *   MD_ASSEMBLE  id/obj: raid; device: /dev/md/NAME; inputs: members; uuid: the array UUID on them, NULL
 *                when a member is a mapping an earlier luks-open makes (per-disk LUKS: the run reads
 *                it from the opened members); md
 *   VG_ACTIVATE  id/obj: vg; device: /dev/VG; vg (with lv_nodes)
 *   SKIP_STAGE   the step it replaces: skipped (kind, id, obj, index, device of that step)
 *   RESUME_CHECK device: the progress record's path */

/* Which inventory disk each spec disk rule selected. */
struct plan_disk {
        const struct spec_disk *rule;
        const struct inv_disk *disk;
        unsigned index;         /* 0..count-1 within the rule */
        unsigned alt;           /* a rule with match alternatives: the one that won, 1-based; else 0 */
};

struct plan {
        const struct spec *spec;
        const struct inventory *inv;
        char *hostname;         /* spec hostname with ${mac} ${uuid} ${serial} ${hostname} from the
                                 * inventory (the one place it is expanded); NULL if the inventory
                                 * lacks a value it needs: */
        const char *hostname_missing;   /* then the variable it lacks ("serial"): a plan and a
                                         * dry run show the template, a real run refuses */
        const char *hostname_placeholder;       /* the inventory's value of it when that is a
                                                 * placeholder (spec_value_is_placeholder) */
        const char *hostname_template;  /* what hostname was expanded from: the nodes row's
                                         * hostname, else the spec's (NULL: none) */
        const struct spec_node *node;   /* the nodes row that applies (plan_node_row()); NULL: none */
        struct plan_disk *disks; size_t n_disks;
        struct plan_step *steps; size_t n_steps;
        struct netconf *net;    /* the spec's network resolved on this machine; NULL without one */
        /* sha256 (hex) over what defines the storage stack: the storage steps'
         * objects, devices and layout and the selected disks' identities; not
         * what differs between two boots (wipe steps, signatures, hostname) */
        char fingerprint[65];
        bool resume;            /* a resume plan (resume.h), else a fresh install */
        /* a spec with layouts: the winner is spec->layout; each earlier
         * layout's reasons for not fitting (plan_choose_layout()), in order */
        struct plan_miss {
                const char *layout;     /* points into its spec */
                char *reason;           /* the disk rule, how many disks it wants, what matched */
                char *rule;             /* that rule's id, or NULL */
        } *misses; size_t n_misses;
        char *mode_why;         /* why resume or fresh (NULL: nothing was checked) */
};

/* Refusals (wrong disk count, ambiguous match, signatures without wipe,
 * mounted or in-use device) go into diags naming the disk and the reason,
 * and make it return -EPERM. */
int plan_build(const struct spec *spec, const struct inventory *inv, struct plan **ret, struct diags *diags);
/* The row of spec->nodes for this machine: the row keyed by the boot NIC's
 * MAC (inventory_primary_mac(), the one ${mac} names), else the row keyed
 * by its SMBIOS serial (not a placeholder), else the default row; NULL when
 * none applies. The one place the rule is. */
const struct spec_node *plan_node_row(const struct spec *spec, const struct inventory *inv);
/* PLAN_ALLOW_SIGNATURES: no refusal for signatures on a disk whose rule has no
 * 'wipe: true' (resume.h: only to find out whether they are an interrupted run
 * of this plan; such a plan is never run as it is). */
#define PLAN_ALLOW_SIGNATURES 1u
/* PLAN_DISK_RULES_ONLY: only whether the disk rules select their disks
 * (counts, matches): what makes a layout fit (plan_choose_layout()); such a
 * build makes no plan and returns 0 or -EPERM. */
#define PLAN_DISK_RULES_ONLY 2u
int plan_build_full(const struct spec *spec, const struct inventory *inv, unsigned flags, struct plan **ret,
                    struct diags *diags);
struct plan *plan_free(struct plan *p);
/* A spec with layouts (spec.h): the first layout whose disk rules fit inv,
 * in *ret (without layouts: spec itself), and each earlier layout's reasons
 * in *ret_misses (one per refusal, as plan_miss). None fits: every layout's
 * reasons go into diags as refusals naming the layout, and into *ret_misses
 * (the caller frees them, plan_misses_free()), -EPERM. */
int plan_choose_layout(const struct spec *spec, const struct inventory *inv, const struct spec **ret,
                       struct plan_miss **ret_misses, size_t *ret_n_misses, struct diags *diags);
void plan_misses_free(struct plan_miss *m, size_t n);
/* Copies of to's misses from from (a resume plan shows the fresh one's); 0 or -ENOMEM. */
int plan_copy_misses(struct plan *to, const struct plan *from);
/* What a planner found wrong with a spec on this machine: the plan and the
 * network resolution (netconf.c) both report this way. */
struct plan_findings {
        struct diags *diags;
        const char *file;               /* the spec's, for file:line:col */
        unsigned refused, invalid;      /* refusals (-EPERM), invalid input (-EINVAL) */
};
/* Adds a finding at spec position m to f->diags and counts it. */
int plan_finding(struct plan_findings *f, bool refusal, struct spec_mark m, const char *fmt, ...) _printf_(4, 5);
/* What the findings make of the run: -EINVAL (invalid input first), -EPERM, or 0. */
int plan_findings_result(const struct plan_findings *f);
DEFINE_CLEANUP(plan_free, struct plan *)
#define _cleanup_plan_free_ _cleanup_(plan_freep)

/* The values ${...} expand to on this machine (the one place they are taken
 * from the inventory): a placeholder serial or UUID counts as missing. */
void plan_spec_vars(const struct inventory *inv, struct spec_vars *ret);

/* The kernel command line the boot-loader step writes (GRUB_CMDLINE_LINUX):
 * boot.cmdline, plus PLAN_UNLOCK_IP when a luks has unlock pins and no entry
 * starts with "ip=" (Tang needs the network in the initramfs). */
#define PLAN_UNLOCK_IP "ip=::::::dhcp"
int plan_kernel_cmdline(const struct spec *s, char **ret);
/* The whole command line the installed system boots with, as GRUB's
 * update-grub writes it and as kiln boot kexecs it (docs/reinstall.md):
 * "root=ROOT ro " + plan_kernel_cmdline(). ROOT follows grub-mkconfig: a
 * root filesystem on an LV is named by its mapper node
 * (/dev/mapper/VG-LV, dashes doubled), any other by UUID=root_uuid. */
int plan_installed_cmdline(const struct spec *s, const char *root_uuid, char **ret);

/* The kind of step that made what s stands for: a resume plan's SKIP_STAGE
 * keeps what its `skipped` step made, and carries that step's payload and
 * parts; MD_ASSEMBLE stands for the MD_CREATE of its array. What configure
 * and the initramfs archive scan for, so that a resumed run writes the same
 * fstab, crypttab and mdadm.conf as the fresh one it resumes. */
enum plan_step_kind plan_step_made(const struct plan_step *s);
/* Deep copies of a payload (its owned strings duplicated), for a resume
 * step that runs or keeps the fresh step's payload; 0 or -ENOMEM. */
int plan_luks_copy(struct plan_luks *dst, const struct plan_luks *src);
int plan_fs_copy(struct plan_fs *dst, const struct plan_fs *src);

int plan_to_text(const struct plan *p, struct strbuf *out);
/* One line per selected disk, naming it (size, model, serial, rule), with
 * what it holds now: what a run of p destroys, as the operator knows it. */
int plan_losses_text(const struct plan *p, struct strbuf *out);
int plan_to_json(const struct plan *p, struct strbuf *out);
const char *plan_step_kind_name(enum plan_step_kind k);
/* The mount order's rule (plan_build emits mounts shallowest first, equal
 * depths in spec order; the executor runs them as planned): the number of
 * path components, "/" = 0, "/var/lib" = 2. */
unsigned plan_mount_depth(const char *mountpoint);
/* Is this step part of the storage stack (partition .. mount, and the bench between)? */
bool plan_step_is_storage(enum plan_step_kind k);
