#!/usr/bin/env python3
"""Read the first BYTES of an md RAID10 array with the far-2 layout (near 1,
far 2: kiln's raid10 f2) from its members' raw disk images into OUT, on a
host whose kernel has no md driver (mdadm cannot assemble there). The first
of the two copies is striped like RAID0 across the members in the order of
their roles: chunk c is on the member with role c % n, at data offset +
(c // n) chunks. Each member's v1.2 superblock (4 KiB into its partition)
gives the set UUID, layout, chunk, role and data offset; the members must
agree and be the whole set. Prints the set UUID (as blkid does).
usage: md-far2-head.py OUT BYTES IMAGE:PARTNO..."""
import json, struct, subprocess, sys, uuid

out, want, members = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
roles = {}
for m in members:
    image, partno = m.rsplit(":", 1)
    table = json.loads(subprocess.run(["sfdisk", "-J", image], check=True, capture_output=True, text=True).stdout)["partitiontable"]
    part = [p for p in table["partitions"] if p["node"] == image + partno]
    if len(part) != 1:
        sys.exit(f"{image}: no partition {partno}")
    start = part[0]["start"] * table.get("sectorsize", 512)
    with open(image, "rb") as f:
        f.seek(start + 4096)
        sb = f.read(1024)
    magic, major = struct.unpack_from("<II", sb, 0)
    if magic != 0xa92b4efc or major != 1:
        sys.exit(f"{image}: partition {partno} has no md v1.2 superblock")
    set_uuid = sb[16:32].hex()
    level, layout, _size, chunk, raid_disks = struct.unpack_from("<iIQII", sb, 72)
    data_offset, = struct.unpack_from("<Q", sb, 128)
    dev_number, = struct.unpack_from("<I", sb, 160)
    role, = struct.unpack_from("<H", sb, 256 + 2 * dev_number)
    if level != 10 or layout != 0x201:
        sys.exit(f"{image}: level {level} layout {layout:#x}, not raid10 far 2 (0x201)")
    roles[role] = (image, start + data_offset * 512, chunk * 512, raid_disks, set_uuid)

if len(set(r[4] for r in roles.values())) != 1 or len(set((r[2], r[3]) for r in roles.values())) != 1:
    sys.exit("the members are not of one array")
chunk, n = next(iter(roles.values()))[2:4]
if sorted(roles) != list(range(n)):
    sys.exit(f"members with roles {sorted(roles)}, the array has {n}")
with open(out, "wb") as o:
    for c in range((want + chunk - 1) // chunk):
        image, base = roles[c % n][:2]
        with open(image, "rb") as f:
            f.seek(base + (c // n) * chunk)
            o.write(f.read(chunk))
print(uuid.UUID(next(iter(roles.values()))[4]))
