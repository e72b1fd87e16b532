/* GPT partitioning with libparted: 1 MiB aligned, named, typed; the kernel
 * is told about the new table and the device nodes are waited for. */
#pragma once
#include "spec.h"
#include "strbuf.h"
#include "util.h"

struct partition_request {
        const char *name;               /* GPT partition name */
        enum spec_part_type type;
        uint64_t start, size;           /* bytes; multiples of 1 MiB (plan_build lays them out) */
};

/* Replace the disk's table with a fresh GPT holding exactly these partitions
 * (numbers 1..n in order), commit it to the disk and the kernel, and wait
 * for the nodes. *ret_paths (may be NULL) gets the partition paths. Fails
 * with -ENOSPC if a partition is not aligned or does not fit the GPT; err
 * (may be NULL) then says why: that, or the last message libparted raised. */
int partition_disk(const char *disk, const struct partition_request *req, size_t n, char ***ret_paths,
                   struct strbuf *err);

/* Wait until every path is a block device. */
int partition_wait(char *const *paths, uint64_t timeout_usec);

/* Set the GPT disk GUID (blkid's PTUUID) of a disk to uuid (text form),
 * in the primary header (LBA 1) and the backup (its AlternateLBA), each
 * with its header CRC32; nothing else changes (the entries and their CRC,
 * the protective MBR), so it may run while the partitions are in use (the
 * kernel keeps no disk GUID). Both headers are checked before either is
 * written: -EBADMSG (err says which and why) when one is missing, damaged
 * or names another GUID than the other, then nothing is written. What
 * marks a finished install (plan/mark.h). */
int partition_set_disk_guid(const char *disk, const char *uuid, struct strbuf *err);
