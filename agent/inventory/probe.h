/* Probing a machine into the inventory model (inventory.h). Only reads. */
#pragma once
#include "inventory.h"

/* sysroot NULL = the live system (kiln_paths). Never writes. */
int inventory_probe(const char *sysroot, struct inventory **ret);
/* --sysroot may name a saved JSON file or a recorded tree; this picks. */
int inventory_load(const char *sysroot_or_json, struct inventory **ret);

/* The same, and on failure *reterr (if not NULL) says where: the device or
 * file that could not be read, or what inventory_load_json_full() says of
 * a bad JSON file. Free it. Probing skips loop devices unless
 * KILN_INVENTORY_INCLUDE_LOOP is 1 (all of them) or lists them by path
 * ("/dev/loop3 /dev/loop7"), and never lists ram, zram, dm or md devices
 * as disks (they show up as holders). */
int inventory_probe_full(const char *sysroot, struct inventory **ret, char **reterr);
int inventory_load_full(const char *sysroot_or_json, struct inventory **ret, char **reterr);
