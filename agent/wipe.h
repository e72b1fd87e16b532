/* Make a disk blank: stop what is stacked on it (top layer first: open LUKS
 * mappings and other dm devices, active VGs, md arrays), then remove every
 * signature libblkid knows (filesystems, LUKS headers, md superblocks, LVM
 * labels, partition tables at both ends), partitions before the disk, and
 * make the kernel forget the old partitions. */
#pragma once
#include "strbuf.h"
#include "util.h"

/* Tear down every holder of the device and of its partitions, recursively,
 * top layer first. err (may be NULL) gets the helper's stderr on failure. */
int wipe_teardown(const char *devpath, struct strbuf *err);

/* Remove all signatures from one block device; *ret_removed counts them. */
int wipe_signatures(const char *devpath, unsigned *ret_removed);

/* teardown + partitions' signatures + the disk's + re-read the table. */
int wipe_disk(const char *devpath, struct strbuf *err, unsigned *ret_removed);

/* "vg--a-lv" → "vg-a": the VG part of an LVM dm name. */
int wipe_lvm_vg_from_dm_name(const char *dm_name, char **ret);
