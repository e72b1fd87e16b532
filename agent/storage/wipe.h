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

/* The direct holders of the device and of its partitions, as kernel names
 * (md127, dm-0), without duplicates, in sysfs order: what the inventory
 * lists as holders and the plan as the wipe step's inputs. */
int wipe_list_holders(const char *devpath, char ***ret);

/* Stop one holder (a kernel name or a /dev path: md127, /dev/dm-0) with
 * everything stacked on it, top layer first. A holder that is already gone
 * is not an error. */
int wipe_stop_holder(const char *holder, struct strbuf *err);

/* Signatures of the partitions, then of the disk (both GPT headers and the
 * PMBR), then make the kernel forget the old partitions. Fails with -EBUSY
 * if anything still holds the disk or a partition. */
int wipe_erase(const char *devpath, struct strbuf *err, unsigned *ret_removed);

/* teardown + wipe_erase. */
int wipe_disk(const char *devpath, struct strbuf *err, unsigned *ret_removed);

/* "vg--a-lv" → "vg-a": the VG part of an LVM dm name. */
int wipe_lvm_vg_from_dm_name(const char *dm_name, char **ret);
