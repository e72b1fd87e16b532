# Write a minimal md v1.2 superblock (what `mdadm --create --metadata=1.2` puts at 4 KiB) into an image file.
import struct, sys, uuid
path, set_uuid, name = sys.argv[1], uuid.UUID(sys.argv[2]), sys.argv[3].encode()
size = 32 << 20
max_dev = 4
sb = bytearray(256 + 2 * max_dev)
struct.pack_into("<IIII", sb, 0, 0xa92b4efc, 1, 0, 0)
sb[16:32] = set_uuid.bytes
sb[32:32 + len(name)] = name
struct.pack_into("<QiiQII", sb, 64, 1700000000, 10, 0x201, (size >> 9) - 2048 - 8, 512, 4)
struct.pack_into("<QQQ", sb, 128, 2048, (size >> 9) - 2048, 8)   # data_offset, data_size, super_offset (sectors)
struct.pack_into("<I", sb, 160, 0)
sb[168:184] = uuid.UUID(int=1).bytes
struct.pack_into("<QQQ", sb, 192, 1700000000, 1, 0xffffffffffffffff)
struct.pack_into("<I", sb, 220, max_dev)
for i in range(max_dev):
    struct.pack_into("<H", sb, 256 + 2 * i, i)
s = sum(struct.unpack_from("<%dI" % (len(sb) // 4), sb))
struct.pack_into("<I", sb, 216, ((s & 0xffffffff) + (s >> 32)) & 0xffffffff)
with open(path, "r+b") as f:
    f.seek(4096)
    f.write(sb)
