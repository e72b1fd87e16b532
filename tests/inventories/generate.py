# How the recorded inventories here were written (by hand, as data): run it in
# this directory, then canonicalize each file through kiln so that it is in the
# exact form `kiln inventory --json` writes (the unit test checks that):
#   python3 generate.py && for f in qemu-*.json single-disk.json junk-box.json raid1-boot.json; do
#     kiln inventory --sysroot $f --json >$f.new && mv $f.new $f; done
# sysroot-mixed/ is a recorded /sys, /proc and /dev tree; its expected JSON is
# sysroot-mixed.expected.json.
import json, copy
G = 1 << 30
M = 1 << 20
def sig(type, usage, offset, uuid=None, label=None):
    return {"type": type, "usage": usage, "uuid": uuid, "label": label, "offset": offset}
def gpt(uuid, size):
    return [sig("gpt", "partition_table", 512, uuid), sig("gpt", "partition_table", size - 512, uuid),
            sig("PMBR", "partition_table", 510)]
def disk(name, size, transport, rot=False, model=None, vendor=None, serial=None, wwn=None, by_id=(), removable=False,
         lsec=512, psec=512, sigs=(), parts=(), holders=(), path=None):
    return {"name": name, "path": path or "/dev/" + name, "by_id": list(by_id), "size": size,
            "logical_sector": lsec, "physical_sector": psec, "rotational": rot, "removable": removable,
            "readonly": False, "model": model, "vendor": vendor, "serial": serial, "wwn": wwn,
            "transport": transport, "signatures": list(sigs), "holders": list(holders), "mountpoint": None,
            "unreadable": False, "partitions": list(parts)}
def part(dname, n, start, size, sigs=(), holders=(), mount=None, sep=""):
    name = f"{dname}{sep}{n}"
    return {"name": name, "path": "/dev/" + name, "number": n, "start": start, "size": size,
            "signatures": list(sigs), "holders": list(holders), "mountpoint": mount}
def inv(hostname, uuid, serial, cpu, count, aes, vaes, avx2, total, avail, disks, nics):
    return {"version": 1, "hostname": hostname, "machine_uuid": uuid, "serial": serial,
            "cpu": {"model": cpu, "count": count, "aes": aes, "vaes": vaes, "avx2": avx2},
            "memory": {"total": total, "available": avail}, "disks": disks, "nics": nics}
def nic(name, mac, up=True, ipv4=()):
    return {"name": name, "mac": mac, "up": up, "ipv4": list(ipv4)}

# The QEMU rig guest: -cpu max under TCG, 1 GiB, 2 vCPUs, virtio disks with serial=kiln-NAME (tests/rig/lib.sh), no udev (no by-id)
qdisks = [disk(n, 2 * G, "virtio", serial=f"kiln-disk{i}") for i, n in enumerate(("vda", "vdb", "vdc", "vdd"))] + \
         [disk("vde", 1 * G, "virtio", serial="kiln-extra")]
qemu = inv("(none)", "6b1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", None, "QEMU TCG CPU version 2.5+", 2, True, False, True,
           1031090176, 905969664, qdisks, [nic("eth0", "52:54:00:12:34:56", True, ["10.0.2.15"])])
out = {"qemu-4disk.json": qemu}

dirty = copy.deepcopy(qemu)
dirty["disks"][1]["signatures"] = [sig("xfs", "filesystem", 0, "0b7d3c1e-5a2f-4f0e-9d6b-3c8e1a7f2b54", "olddata")]
dirty["disks"][2]["signatures"] = [sig("linux_raid_member", "raid", 4096, "c6a1e0f3-27d4-8b59-3e1a-94f0d2b7c815", "oldnode:1")]
out["qemu-4disk-dirty.json"] = dirty

# A complete earlier kiln layout, assembled: GPT, RAID1 /boot (md0) + raid10 (md127) with LUKS open (dm-0) on it
prov = copy.deepcopy(qemu)
for i, d in enumerate(prov["disks"][:4]):
    n = d["name"]
    d["signatures"] = gpt(f"8e5c1d2a-0b3f-4c6d-9e7f-1a2b3c4d5e{i:02d}", d["size"])
    d["partitions"] = [
        part(n, 1, 1 * M, 512 * M, [sig("linux_raid_member", "raid", 512 * M - 8192, "5a6b7c8d-9e0f-1a2b-3c4d-5e6f7a8b9c0d", "kiln-node:0")], ["md0"]),
        part(n, 2, 513 * M, 2 * G - 513 * M - 1 * M, [sig("linux_raid_member", "raid", 4096, "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f6a7b8", "kiln-node:1")], ["md127"]),
    ]
out["qemu-4disk-provisioned.json"] = prov

# One NVMe disk, a small server with an installed OS
nv = disk("nvme0n1", 512110190592, "nvme", model="SAMSUNG MZVL2512HCJQ-00B00", serial="S675NX0T812345",
          wwn="eui.002538b811b2c3d4",
          by_id=["nvme-SAMSUNG_MZVL2512HCJQ-00B00_S675NX0T812345", "nvme-eui.002538b811b2c3d4"],
          sigs=gpt("2b8c1a44-6e2f-4d3a-9b1c-7f0e5d4c3b2a", 512110190592),
          parts=[part("nvme0n1", 1, 1 * M, 512 * M, [sig("vfat", "filesystem", 82, "A1B2-C3D4", "EFI")], sep="p"),
                 part("nvme0n1", 2, 513 * M, 512110190592 - 513 * M - 1 * M,
                      [sig("ext4", "filesystem", 1080, "7d9e2f10-3a4b-4c5d-8e6f-0a1b2c3d4e5f", "root")], sep="p")])
single = inv("edge-01", "4c4c4544-0042-3510-8052-b4c04f4a3432", "4B5RJ42", "Intel(R) Xeon(R) E-2278G CPU @ 3.40GHz",
             16, True, False, True, 33554432 * 1024, 32212254720, [nv],
             [nic("eno1", "b0:26:28:4f:8a:10", True, ["192.168.10.41"]), nic("eno2", "b0:26:28:4f:8a:11", False)])
out["single-disk.json"] = single

# A junk box: two SSDs of different sizes, four spinning SATA disks (two of them reporting the same serial,
# as cheap bridges and flashed drives do), and a USB stick
def ata(n, size, model, serial, wwn, rot, psec=512, sigs=(), parts=()):
    return disk(n, size, "sata", rot=rot, model=model[:16], vendor="ATA", serial=serial, wwn=wwn, psec=psec,
                by_id=[f"ata-{model.replace(' ', '_')}_{serial}"] + ([f"wwn-{wwn}"] if wwn else []), sigs=sigs, parts=parts)
sda = ata("sda", 240057409536, "KINGSTON SA400S37240G", "50026B7784A1B2C3", "0x50026b7784a1b2c3", False,
          sigs=gpt("3e1f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7", 240057409536),
          parts=[part("sda", 1, 1 * M, 512 * M, [sig("vfat", "filesystem", 82, "5E2A-91C0", None)]),
                 part("sda", 2, 513 * M, 240057409536 - 513 * M - 1 * M - 8 * G,
                      [sig("ext4", "filesystem", 1080, "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f", None)]),
                 part("sda", 3, 240057409536 - 1 * M - 8 * G, 8 * G, [sig("swap", "other", 4086, "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", None)])])
sdb = ata("sdb", 480103981056, "Samsung SSD 860 EVO 500GB", "S3Z1NB0K123456A", "0x5002538e40a1b2c3", False,
          sigs=[sig("LVM2_member", "raid", 536, "Xc3vQ1-aB2d-eF3g-hI4j-kL5m-nO6p-qR7sT8", None)])
sdc = ata("sdc", 2000398934016, "ST2000DM008-2FR102", "ZFL1A2B3", "0x5000c500b1a2c3d4", True, psec=4096)
sdd = ata("sdd", 2000398934016, "ST2000DM008-2FR102", "ZFL1A2B4", "0x5000c500b1a2c3d5", True, psec=4096)
sde = ata("sde", 1000204886016, "WDC WD10EZEX-08WN4A0", "WD-WCC6Y0123456", None, True, psec=4096)
sdf = ata("sdf", 4000787030016, "WDC WD40EFRX-68N32N0", "WD-WCC6Y0123456", None, True, psec=4096)
usb = disk("sdg", 15610576896, "usb", model="DataTraveler 3.0", vendor="Kingston", serial="E0D55EA573F1E4B1A8B30F1D",
           removable=True, by_id=["usb-Kingston_DataTraveler_3.0_E0D55EA573F1E4B1A8B30F1D-0:0"],
           sigs=[sig("dos", "partition_table", 510, "4f1e2d3c")],
           parts=[part("sdg", 1, 1 * M, 15610576896 - 1 * M, [sig("vfat", "filesystem", 82, "B4E1-7A2C", "RESCUE")])])
junk = inv("junk-01", "03000200-0400-0500-0006-000700080009", "To be filled by O.E.M.",
           "Intel(R) Core(TM) i5-4570 CPU @ 3.20GHz", 4, True, False, True, 16 * G, 15 * G,
           [sda, sdb, sdc, sdd, sde, sdf, usb],
           [nic("enp2s0", "d4:3d:7e:12:ab:cd", True, ["10.20.0.57"]), nic("enp3s0", "00:1b:21:aa:bb:cc", False)])
out["junk-box.json"] = junk

# raid1 boot: two SATA SSDs already carrying a RAID1 /boot with holders, plus two blank HDDs
r1 = [ata("sda", 480103981056, "INTEL SSDSC2KB480G8", "PHYF812300AB480BGN", "0x55cd2e414f1a2b3c", False,
          sigs=gpt("aa11bb22-cc33-4d44-8e55-ff6600770088", 480103981056),
          parts=[part("sda", 1, 1 * M, 1 * G, [sig("linux_raid_member", "raid", 1 * G - 8192, "0d1c2b3a-4958-6776-8594-a3b2c1d0e0f0", "r1:0")], ["md0"])]),
      ata("sdb", 480103981056, "INTEL SSDSC2KB480G8", "PHYF812300CD480BGN", "0x55cd2e414f1a2b3d", False,
          sigs=gpt("aa11bb22-cc33-4d44-8e55-ff6600770089", 480103981056),
          parts=[part("sdb", 1, 1 * M, 1 * G, [sig("linux_raid_member", "raid", 1 * G - 8192, "0d1c2b3a-4958-6776-8594-a3b2c1d0e0f0", "r1:0")], ["md0"])]),
      ata("sdc", 2000398934016, "ST2000NM0008-2F3100", "ZDS0ABC1", "0x5000c500c0a1b2c3", True, psec=4096),
      ata("sdd", 2000398934016, "ST2000NM0008-2F3100", "ZDS0ABC2", "0x5000c500c0a1b2c4", True, psec=4096)]
out["raid1-boot.json"] = inv("r1-node", "8d2f0c7e-1b3a-4c5d-9e6f-7a8b9c0d1e2f", "CZ20340ABC", "AMD EPYC 7302P 16-Core Processor",
                             32, True, False, True, 128 * G, 125 * G, r1,
                             [nic("eno1np0", "3c:ec:ef:01:02:03", True, ["10.0.5.11"]), nic("eno2np1", "3c:ec:ef:01:02:04", False)])
for k, v in out.items():
    with open(k, "w") as f:
        json.dump(v, f, indent=2)
        f.write("\n")
