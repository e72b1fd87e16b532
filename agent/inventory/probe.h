/* Probing a machine into the inventory model (inventory.h). Only reads. */
#pragma once
#include "inventory.h"

/* sysroot NULL = the live system (kiln_paths). Never writes. On failure
 * err (may be NULL) says where: the device or file that could not be read.
 * Probing skips loop devices unless KILN_INVENTORY_INCLUDE_LOOP is 1 (all of
 * them) or lists them by path ("/dev/loop3 /dev/loop7"), and never lists
 * ram, zram, dm or md devices as disks (they show up as holders). */
int inventory_probe(const char *sysroot, struct inventory **ret, struct strbuf *err);
/* --sysroot may name a saved JSON file or a recorded tree; this picks. err
 * as for inventory_probe(), or what inventory_load_json() says of a bad
 * JSON file. */
int inventory_load(const char *sysroot_or_json, struct inventory **ret, struct strbuf *err);
