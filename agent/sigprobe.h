/* Existing on-disk signatures of one device or image file, read with
 * libblkid's low-level probe the way wipefs lists them: every filesystem,
 * RAID, crypto and LVM superblock and every partition table, with the byte
 * offset of its magic. Opens read-only; never writes. */
#pragma once
#include "inventory.h"

/* -ENOENT etc. from open; -EIO (or the probe's errno) if the device cannot be read. */
int sigprobe_device(const char *path, struct inv_signature **ret, size_t *ret_n);
