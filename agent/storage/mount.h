/* Mount the new filesystems under the target root (kiln_paths.target). */
#pragma once
#include "spec.h"
#include "util.h"

/* Mount dev at target + mountpoint (directories made as needed). options is
 * an fstab-style list ("defaults", "noatime,nodev", ...): known flags become
 * mount flags, the rest is passed to the filesystem. */
int mount_under_target(const char *dev, const char *mountpoint, enum spec_fs_type type, const char *options);


/* Unmount everything under the target, deepest first. */
int mount_unmount_target(void);
