#!/usr/bin/env python3
"""Decrypt the first sector of a LUKS2 volume's data segment in user space
(the host kernel has no device-mapper) and print the LVM PV UUID it holds,
as blkid prints it, or fail. The volume key comes on standard input as
`cryptsetup luksDump --dump-volume-key` prints it (never in argv), and only
aes-xts-plain64 is read: the first data sector's IV is 0 whatever the sector
size. usage: ... | luks-pv-label.py IMAGE DATA-OFFSET SECTOR-SIZE"""
import re, sys
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

image, offset, sector = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
dump = sys.stdin.read()
m = re.search(r"(?:MK|Volume key) dump:\s*((?:[0-9a-f]{2}\s+)+)", dump)
if not m:
    sys.exit("no volume key on standard input")
key = bytes.fromhex("".join(m.group(1).split()))
with open(image, "rb") as f:
    f.seek(offset)
    data = f.read(sector)
plain = Cipher(algorithms.AES(key), modes.XTS(bytes(16))).decryptor().update(data)
label = plain.find(b"LABELONE")
if label < 0 or plain[label + 24:label + 32] != b"LVM2 001":
    sys.exit("the first sector holds no LVM2 label: not this key, or not a PV")
u = plain[label + 32:label + 64].decode()
print("-".join([u[0:6], u[6:10], u[10:14], u[14:18], u[18:22], u[22:26], u[26:32]]))
