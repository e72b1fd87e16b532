#!/bin/bash
# kiln apply in the QEMU rig, LUKS-over-LVM stacking with a RAID1 /boot, on a
# 512 MiB guest: RAID1 (metadata 1.0) /boot + raid10 far-2 -> LVM -> one
# LUKS2 container per LV (argon2id with the default memory cost, which kiln
# must cap to what the node can spare) -> xfs, mounted.
. "$SRC/tests/rig/lib.sh"
"$KILN" help 2>/dev/null | grep -q '^  boot ' || rig_skip "kiln has no boot command yet"
RIG_MEM=512
rig_init
rig_disks 4 2G
rig_spec specs/apply-raid1-lvm-luks.yaml
rig_boot || rig_not_ok "the guest did not finish"
rig_expect_exit 0
rig_expect_section mdstat 'active raid1 vd.2\[[0-9]\] vd.2\[[0-9]\] vd.2\[[0-9]\] vd.2\[[0-9]\]' "RAID1 over the four boot partitions"
rig_expect_section mdstat 'super 1\.0 \[4/4\] \[UUUU\]' "RAID1 with metadata 1.0, four members active"
rig_expect_section mdstat '256K chunks 2 far-copies \[4/4\] \[UUUU\]' "raid10 far 2 with 256K chunks, four members active"
rig_expect_section pvs '^ */dev/md[0-9]+\|host_vg' "the VG sits directly on the array"
rig_expect_section lvs 'host_vg\|root\|1073741824B\|active' "LV root, 1 GiB"
rig_expect_section lvs 'host_vg\|images\|[0-9]+B\|active' "LV images"
rig_expect_section 'luksdump /dev/mapper/host_vg-root' 'Cipher key:[[:space:]]+256 bits' "LUKS on root: 256-bit key"
rig_expect_section 'luksdump /dev/mapper/host_vg-images' 'Cipher key:[[:space:]]+512 bits' "LUKS on images: 512-bit key"
rig_expect_section 'luksdump /dev/mapper/host_vg-images' 'sector: 4096 \[bytes\]' "LUKS on images: 4096-byte sectors"
rig_expect_section 'luksdump /dev/mapper/host_vg-images' 'Flags:.*no-read-workqueue.*no-write-workqueue' "LUKS on images: perf flags"
rig_expect_section luksdump 'PBKDF:[[:space:]]+argon2id' "argon2id keyslots"
# the PBKDF memory actually used must fit the node: at most a quarter of its RAM
mem_kb=$(rig_report_section luksdump | sed -n 's/^[[:space:]]*Memory:[[:space:]]*\([0-9]*\).*/\1/p' | sort -n | tail -1)
rig_check "argon2id memory ${mem_kb:-?} KiB is at most 128 MiB on a 512 MiB node" [ -n "$mem_kb" ] && [ "$mem_kb" -le 131072 ]
if rig_section_has dmesg-tail '[Oo]ut of memory|oom-kill|[Kk]illed process'; then rig_not_ok "the OOM killer ran"
else rig_ok "no OOM kill"; fi
rig_expect_section blkid '^/dev/md[0-9]+: LABEL="boot".*TYPE="ext4"' "ext4 /boot on the RAID1"
rig_expect_section blkid '^/dev/mapper/croot: LABEL="root".*TYPE="xfs"' "xfs root inside LUKS"
rig_expect_section blkid '^/dev/mapper/cimages: LABEL="images".*TYPE="xfs"' "xfs images inside LUKS"
rig_expect_section mounts '^/dev/mapper/croot /target xfs ' "root mounted"
rig_expect_section mounts ' /target/boot ext4 ' "/boot mounted"
rig_expect_section mounts '^/dev/mapper/cimages /target/var/lib/libvirt/images xfs ' "images mounted"
rig_expect_section 'target /etc/crypttab' '^croot UUID=' "crypttab: croot"
rig_expect_section 'target /etc/crypttab' '^cimages UUID=' "crypttab: cimages"
rig_expect_section 'target /etc/mdadm/mdadm.conf' '^ARRAY /dev/md/md-boot ' "mdadm.conf: md-boot"
rig_done
