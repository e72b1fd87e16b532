/* boot: the installed system boots from its disks (docs/spec.md "boot"):
 * firmware, GRUB's disks and ESP, and the check that GRUB can find and open
 * /boot unattended. */
#include "spec_internal.h"

static const char *const firmware_names[] = {
        [SPEC_FIRMWARE_BIOS] = "bios", [SPEC_FIRMWARE_UEFI] = "uefi", [SPEC_FIRMWARE_BOTH] = "both", NULL,
};

/* The least an ESP partition (or each member of an ESP RAID1) may be. Two
 * needs, the larger binds: grub-install writes GRUB twice (EFI/debian and the
 * removable EFI/BOOT/BOOTX64.EFI): 152-204 KiB each as grub-mkimage builds it
 * from Debian 12's grub-efi-amd64-bin for /boot on GPT, md and ext4, 4.0 MiB
 * each as its monolithic grubx64.efi, about 12 MiB in all with shim and
 * MokManager; and the UEFI specification asks FAT32 of an ESP on a fixed
 * disk, which needs 65525 clusters: mkfs.fat 4.2 -F 32 makes one without a
 * warning from 33 MiB on (32 MiB gives 64496 clusters). docs/spec.md "boot". */
#define ESP_MIN_BYTES (UINT64_C(33) << 20)

static void check_esp_size(struct ctx *c, const struct spec_partition *p) {
        char sz[32], t[QUOTE_MAX + 4];
        if (p->size.kind != SPEC_SIZE_BYTES || p->size.bytes >= ESP_MIN_BYTES)
                return;
        spec_emit(c, p->size.mark.line, p->size.mark.col,
                  "'size' of partition '%s' is %s, too small for an ESP: it is at least 33M (GRUB twice, at EFI/debian and "
                  "the removable EFI/BOOT, up to 4 MiB each, and FAT32, which UEFI asks of an ESP, needs 65525 clusters)",
                  spec_quote(p->id ? p->id : "?", t), format_size(p->size.bytes, sz, sizeof sz));
}

void spec_parse_boot(struct ctx *c, const struct ynode *m, struct spec_boot *b) {
        static const char *const keys[] = { "firmware", "cmdline", "timeout", "disks", NULL };
        char f[256];
        struct loc l = { "boot", "" };
        b->present = true;
        b->mark = (struct spec_mark) { m->line, m->col };
        spec_check_keys(c, m, &l, keys);
        const struct ynode *v = spec_map_get(m, "firmware");
        int e;
        if (!v)
                emitn(c, m, "'boot' has no 'firmware' (bios, uefi or both)");
        else if (spec_get_enum(c, &l, "firmware", v, firmware_names, &e) > 0) {
                b->firmware = e;
                b->firmware_mark = (struct spec_mark) { v->line, v->col };
        }
        v = spec_map_get(m, "cmdline");
        if (spec_get_strv(c, &l, "cmdline", v, false, &b->cmdline, NULL) > 0)
                for (size_t i = 0; b->cmdline[i]; i++) {
                        const char *a = b->cmdline[i];
                        bool ok = *a != 0;
                        for (const char *p = a; ok && *p; p++)
                                if ((unsigned char) *p <= 0x20 || *p == 0x7f || strchr("\"'\\$`", *p))
                                        ok = false;
                        if (!ok)
                                emitn(c, v->items[i], "%s: each entry is one kernel argument without spaces, quotes, '\\', '$' or '`'",
                                      spec_field(&l, "cmdline", f));
                }
        b->timeout = SPEC_BOOT_TIMEOUT;
        (void) spec_get_unsigned(c, &l, "timeout", spec_map_get(m, "timeout"), 0, SPEC_BOOT_TIMEOUT_MAX, &b->timeout);
        v = spec_map_get(m, "disks");
        if (spec_get_strv(c, &l, "disks", v, true, &b->disks, &b->disk_marks) > 0)
                b->disks_mark = (struct spec_mark) { v->line, v->col };
}

/* boot: what GRUB needs to find and boot the installed system unattended
 * (notes: Debian 12's GRUB 2.06 opens no argon2 keyslot; BIOS on GPT needs a
 * bios_grub partition for the core image; firmware reads the ESP as plain
 * FAT). Called only on a graph without cycles. About 140 lines: one rule
 * after another over the same resolved /boot, ESP and disk sets, in the
 * order their messages are reported (the root cause first, issue 29). */
void spec_check_boot(struct ctx *c) {
        struct spec *s = c->s;
        const struct spec_boot *b = &s->boot;
        char t[QUOTE_MAX + 4], t2[QUOTE_MAX + 4];
        if (!b->present)
                return;
        if (!s->image.present || s->image.format != SPEC_IMAGE_TAR)
                spec_emit(c, b->mark.line, b->mark.col,
                          "'boot' installs GRUB from the installed system: the spec needs an image of format 'tar'");
        const struct spec_filesystem *bfs = spec_boot_filesystem(s);
        if (!bfs || !bfs->on) {
                spec_emit(c, b->mark.line, b->mark.col, "'boot' needs a filesystem mounted at '/boot' or '/'");
                return;
        }
        const char *bname = streq(bfs->mount, "/boot") ? "/boot" : "/ (which holds /boot)";
        const struct spec_luks *lk = spec_luks_below(s, bfs->on);
        if (lk) {
                bool argon = lk->pbkdf.type != SPEC_PBKDF_PBKDF2;
                if (argon)
                        spec_emit(c, bfs->mount_mark.line, bfs->mount_mark.col,
                                  "%s would sit inside luks '%s', whose %s keyslot Debian 12's GRUB (2.06) cannot open "
                                  "('Argon2 not supported'); put /boot on its own filesystem outside LUKS (e.g. an md RAID1)",
                                  bname, spec_quote(lk->id ? lk->id : "?", t),
                                  spec_pbkdf_type_name(spec_pbkdf_effective(lk->pbkdf.type)));
                else
                        spec_emit(c, bfs->mount_mark.line, bfs->mount_mark.col,
                                  "%s would sit inside luks '%s': GRUB would ask for its passphrase on the console at every boot; "
                                  "put /boot on its own filesystem outside LUKS (e.g. an md RAID1)",
                                  bname, spec_quote(lk->id ? lk->id : "?", t));
        }
        _cleanup_strv_free_ char **under = NULL, **grub = NULL;
        if (spec_disks_below(s, bfs->on, &under) < 0 || spec_boot_disks(s, &grub) < 0) {
                c->error = -ENOMEM;
                return;
        }
        if (b->disks) {
                bool known = true;
                for (size_t i = 0; b->disks[i]; i++)
                        if (!spec_resolve(c, "disks", "boot", b->disks[i], b->disk_marks[i], KIND_BIT(SPEC_OBJ_DISK)))
                                known = false;
                if (!known)
                        return;
                /* GRUB on a disk without /boot boots only while another disk
                 * holds /boot: no redundancy, and its own bios_grub or ESP
                 * would be asked for next. Refused here, and left out of the
                 * checks below, so the cause is the one message. */
                _cleanup_strv_free_ char **keep = NULL;
                for (size_t i = 0; b->disks[i]; i++)
                        if (!strv_contains(under, b->disks[i]))
                                spec_emit(c, b->disk_marks[i].line, b->disk_marks[i].col,
                                          "'disks' of boot names disk '%s', which carries no part of %s ('%s'); "
                                          "GRUB goes to the disks /boot is on", spec_quote(b->disks[i], t), bname,
                                          spec_quote(bfs->on, t2));
                        else if (strv_pushdup(&keep, b->disks[i]) < 0) {
                                c->error = -ENOMEM;
                                return;
                        }
                strv_free(grub);
                grub = TAKE_PTR(keep);
                for (size_t i = 0; under && under[i]; i++)
                        if (!strv_contains(grub, under[i]))
                                spec_emit(c, b->disks_mark.line, b->disks_mark.col,
                                          "the boot loader would miss disk '%s', which carries /boot's '%s'; "
                                          "add it to 'disks' of boot (a node whose first disk fails must still boot)",
                                          spec_quote(under[i], t), spec_quote(bfs->on, t2));
        }
        const char *fw = firmware_names[b->firmware];
        if (b->firmware == SPEC_FIRMWARE_BIOS || b->firmware == SPEC_FIRMWARE_BOTH)
                for (size_t i = 0; grub && grub[i]; i++) {
                        bool found = false;
                        for (size_t j = 0; j < s->n_partitions && !found; j++)
                                found = s->partitions[j].type == SPEC_PART_BIOS_GRUB && s->partitions[j].on &&
                                        streq(s->partitions[j].on, grub[i]);
                        if (!found)
                                spec_emit(c, b->firmware_mark.line, b->firmware_mark.col,
                                          "boot firmware '%s' needs a 'bios_grub' partition on disk '%s', where GRUB is installed "
                                          "(GRUB keeps its core image there on GPT)", fw, spec_quote(grub[i], t));
                }
        if (b->firmware != SPEC_FIRMWARE_UEFI && b->firmware != SPEC_FIRMWARE_BOTH)
                return;
        const struct spec_filesystem *esp = spec_esp_filesystem(s);
        if (!esp || !esp->on) {
                spec_emit(c, b->firmware_mark.line, b->firmware_mark.col,
                          "boot firmware '%s' needs an ESP: a vfat filesystem mounted at '/boot/efi' on an 'esp' partition, "
                          "or on an md RAID1 with metadata \"1.0\" of 'esp' partitions, one on every disk GRUB is installed on", fw);
                return;
        }
        if (esp->type != SPEC_FS_VFAT) {
                spec_emit(c, esp->mount_mark.line, esp->mount_mark.col, "the ESP (mounted at '/boot/efi') must be vfat, not %s",
                          spec_fs_type_name(esp->type));
                return;
        }
        const void *o = NULL;
        enum spec_obj_kind k = spec_lookup(s, esp->on, &o);
        _cleanup_strv_free_ char **esp_disks = NULL;
        bool parts_ok = true;
        if (k == SPEC_OBJ_PARTITION) {
                const struct spec_partition *p = o;
                parts_ok = p->type == SPEC_PART_ESP;
                if (parts_ok)
                        check_esp_size(c, p);
        } else if (k == SPEC_OBJ_RAID) {
                const struct spec_raid *a = o;
                if (a->level != 1 || !a->metadata || !streq(a->metadata, "1.0")) {
                        spec_emit(c, esp->on_mark.line, esp->on_mark.col,
                                  "the ESP is on raid '%s', which must be level 1 with metadata \"1.0\" "
                                  "(the firmware reads each member as a plain FAT filesystem)", spec_quote(a->id ? a->id : "?", t));
                        return;
                }
                for (size_t i = 0; a->members && a->members[i]; i++) {
                        const void *m = NULL;
                        if (spec_lookup(s, a->members[i], &m) != SPEC_OBJ_PARTITION ||
                            ((const struct spec_partition *) m)->type != SPEC_PART_ESP)
                                parts_ok = false;
                        else
                                check_esp_size(c, m);
                }
        } else {
                spec_emit(c, esp->on_mark.line, esp->on_mark.col,
                          "the ESP must be on an 'esp' partition or an md RAID1 of them, not on %s '%s'",
                          spec_kind_name(k), spec_quote(esp->on, t));
                return;
        }
        if (!parts_ok) {
                spec_emit(c, esp->on_mark.line, esp->on_mark.col,
                          "the ESP on '%s' must be made of partitions of type 'esp'", spec_quote(esp->on, t));
                return;
        }
        if (spec_disks_below(s, esp->on, &esp_disks) < 0) {
                c->error = -ENOMEM;
                return;
        }
        for (size_t i = 0; grub && grub[i]; i++)
                if (!strv_contains(esp_disks, grub[i]))
                        spec_emit(c, b->firmware_mark.line, b->firmware_mark.col,
                                  "boot firmware '%s' needs an ESP on disk '%s', where GRUB is installed, but the ESP on '%s' "
                                  "is not there; put an 'esp' partition on every boot disk into an md RAID1 with metadata \"1.0\"",
                                  fw, spec_quote(grub[i], t), spec_quote(esp->on, t2));
}

void spec_free_boot(struct spec *s) {
        strv_free(s->boot.cmdline); strv_free(s->boot.disks); free(s->boot.disk_marks);
}

DEFINE_STRING_TABLE_TO_STRING(spec_firmware_name, enum spec_firmware, firmware_names)

const struct spec_filesystem *spec_boot_filesystem(const struct spec *s) {
        const struct spec_filesystem *root = NULL;
        for (size_t i = 0; i < s->n_filesystems; i++) {
                const struct spec_filesystem *fs = &s->filesystems[i];
                if (fs->mount && streq(fs->mount, "/boot"))
                        return fs;
                if (fs->mount && streq(fs->mount, "/"))
                        root = fs;
        }
        return root;
}

const struct spec_filesystem *spec_root_filesystem(const struct spec *s) {
        for (size_t i = 0; i < s->n_filesystems; i++)
                if (s->filesystems[i].mount && streq(s->filesystems[i].mount, "/"))
                        return &s->filesystems[i];
        return NULL;
}

const struct spec_filesystem *spec_esp_filesystem(const struct spec *s) {
        for (size_t i = 0; i < s->n_filesystems; i++)
                if (s->filesystems[i].mount && streq(s->filesystems[i].mount, "/boot/efi"))
                        return &s->filesystems[i];
        return NULL;
}

int spec_boot_disks(const struct spec *s, char ***ret) {
        if (s->boot.disks) {
                _cleanup_strv_free_ char **v = NULL;
                for (size_t i = 0; s->boot.disks[i]; i++)
                        if (!strv_contains(v, s->boot.disks[i]) && strv_pushdup(&v, s->boot.disks[i]) < 0)
                                return -ENOMEM;
                *ret = TAKE_PTR(v);
                return 0;
        }
        const struct spec_filesystem *fs = spec_boot_filesystem(s);
        if (!fs || !fs->on) {
                *ret = NULL;
                return 0;
        }
        return spec_disks_below(s, fs->on, ret);
}
