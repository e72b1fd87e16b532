/* Existing on-disk signatures of one device or image file, read with
 * libblkid's low-level probe the way wipefs lists them: every filesystem,
 * RAID, crypto and LVM superblock and every partition table, with the byte
 * offset of its magic. Opens read-only; never writes. */
#pragma once
#include "inventory.h"

/* -ENOENT etc. from open; -EIO (or the probe's errno) if the device cannot be read. */
int sigprobe_device(const char *path, struct inv_signature **ret, size_t *ret_n);

/* The GPT type of a BIOS boot partition (parted's bios_grub flag), where
 * GRUB's BIOS core image sits. */
#define SIGPROBE_GPT_BIOS_BOOT "21686148-6449-6e6f-744e-656564454649"

/* One partition of a partition table: its number and PARTUUID (GPT) or
 * the MBR's disk-id-based name (NULL if the table gives none), its type
 * (GPT: the type GUID, lower case; NULL if none), and where it lies, in
 * bytes, on a disk of sector_size-byte logical sectors. */
struct sigprobe_part {
        unsigned number;
        char *uuid;
        char *type;
        uint64_t start, size;
        unsigned sector_size;
};

/* The partitions of the table on a whole disk, as libblkid reads them
 * (read-only). *ret is empty (and *ret_n 0) when there is no table. */
int sigprobe_partitions(const char *disk, struct sigprobe_part **ret, size_t *ret_n);
void sigprobe_partitions_free(struct sigprobe_part *p, size_t n);
