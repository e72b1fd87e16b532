#!/usr/bin/env python3
"""Write an md v1.2 superblock (as mdadm --create would) at 4 KiB into a
disk image, so a test can give a disk an old RAID member signature on a host
whose kernel has no md driver. `mdadm --examine IMAGE` and libblkid accept it.
usage: md-superblock.py IMAGE [NAME [UUID]]: NAME is the array's name (blkid's
LABEL, default old:md0), UUID its set UUID (blkid's UUID, default random)."""
import os, struct, sys, uuid

path = sys.argv[1]
name = (sys.argv[2] if len(sys.argv) > 2 else "old:md0").encode()[:32]
set_uuid = uuid.UUID(sys.argv[3]) if len(sys.argv) > 3 else uuid.uuid4()
size = os.path.getsize(path)
sb = bytearray(256 + 2 * 4)
sectors = size // 512
data_offset = 2048
struct.pack_into("<IIII", sb, 0, 0xa92b4efc, 1, 0, 0)        # magic, major, feature_map, pad
sb[16:32] = set_uuid.bytes                                      # set_uuid
sb[32:32 + len(name)] = name                                    # set_name
struct.pack_into("<QIIQII", sb, 64, 1700000000, 1, 0, (sectors - data_offset) & ~7, 0, 2)  # ctime level layout size chunk raid_disks
struct.pack_into("<QQQQ", sb, 128, data_offset, sectors - data_offset, 8, 0)  # data_offset data_size super_offset recovery_offset
struct.pack_into("<I", sb, 160, 0)                              # dev_number
sb[168:184] = uuid.uuid4().bytes                                # device_uuid
struct.pack_into("<QQQ", sb, 192, 1700000000, 1, 0xffffffffffffffff)  # utime events resync_offset
struct.pack_into("<I", sb, 220, 4)                              # max_dev
struct.pack_into("<HHHH", sb, 256, 0, 1, 0xffff, 0xffff)        # dev_roles
csum = 0
for (w,) in struct.iter_unpack("<I", bytes(sb)):
    csum += w
csum = (csum & 0xffffffff) + (csum >> 32)
struct.pack_into("<I", sb, 216, csum & 0xffffffff)
with open(path, "r+b") as f:
    f.seek(4096)
    f.write(sb)
