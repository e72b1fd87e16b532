/* LVM through the lvm tool (the CLI is LVM's API), configured to work
 * without udev (no udev in the initramfs): device nodes are made by lvm
 * itself and by vgmknodes. */
#pragma once
#include "strbuf.h"
#include "util.h"

/* The --config string every lvm call gets. */
extern const char lvm_config[];

int lvm_pvcreate(const char *dev, struct strbuf *err);
/* extent_size 0 = lvm's default. pvs is NULL-terminated. */
int lvm_vgcreate(const char *vg, char *const *pvs, uint64_t extent_size, struct strbuf *err);
/* Exactly one of bytes / percent_free is non-zero (percent_free 1..100). */
int lvm_lvcreate(const char *vg, const char *lv, uint64_t bytes, unsigned percent_free, struct strbuf *err);
int lvm_vgmknodes(const char *vg, struct strbuf *err);
int lvm_vg_activate(const char *vg, struct strbuf *err);
/* The same without a write: no metadata update (global/metadata_read_only)
 * and every LV of vg activated read-only (activation/read_only_volume_list). */
int lvm_vg_activate_readonly(const char *vg, struct strbuf *err);
int lvm_vg_deactivate(const char *vg, struct strbuf *err);
/* The VG's UUID as lvm prints it (xxxxxx-xxxx-...). */
int lvm_vg_uuid(const char *vg, char **ret, struct strbuf *err);
