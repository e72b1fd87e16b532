#!/bin/bash
# LUKS on each disk, under the RAID: netboot on four blank 2 GiB disks and a
# fifth, smaller one the spec does not select (tests/rig/specs/
# perdisk-luks-raid10.yaml). The guest's own view must show, from the top:
# the LVs on the md, md raid10 far 2 with 4 of 4 members that are the four
# dm-crypt mappings crypt-0..crypt-3, each a LUKS2 on one disk's data
# partition (the guest's sysfs slaves, which lsblk -s draws; dmsetup table,
# mdadm --detail, blkid, cryptsetup luksDump, all run inside the guest).
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
rig_disks 4 2G
rig_disk spare 512M
spare=${RIG_DISK[4]}
dd if=/dev/urandom of="$spare" bs=1M count=4 conv=notrunc status=none   # something to keep
before=$(rig_sha256 "$spare")
rig_spec specs/perdisk-luks-raid10.yaml
rig_boot --pxe || rig_die "the guest did not finish (see the console above)"

rig_expect_exit 0
rig_expect_section mdstat '^md[0-9]+ : active raid10 ' "md array is raid10"
rig_expect_section mdstat '\[4/4\] \[UUUU\]' "all four members active"
rig_expect_section mdadm-detail 'Raid Level : raid10' "mdadm: raid10"
rig_expect_section mdadm-detail 'Layout : far=2' "mdadm: layout far=2"
rig_expect_section mdadm-detail 'Chunk Size : 256K' "mdadm: 256K chunk"
rig_expect_section mdadm-detail 'Active Devices : 4' "mdadm: 4 active devices"
for k in 0 1 2 3; do
  rig_expect_section mdadm-detail "active sync +/dev/(mapper/crypt-$k|dm-[0-9]+)" "mdadm: member $k active"
  rig_expect_section dmsetup-table "^crypt-$k: 0 [0-9]+ crypt aes-xts-plain64 " "dmsetup: crypt-$k is a dm-crypt aes-xts-plain64 mapping"
done
rig_expect_no_section mdadm-detail 'active sync +/dev/vd[a-d]' "no raw partition is an md member"
d=(a b c d)
for k in 0 1 2 3; do
  rig_expect_section blkid "^/dev/vd${d[$k]}2: .*TYPE=\"crypto_LUKS\"" "LUKS2 header on /dev/vd${d[$k]}2"
done
rig_expect_section blkid '^/dev/md[0-9]+: .*TYPE="LVM2_member"' "the md array is the PV"
rig_expect_no_section blkid '^/dev/md[0-9]+: .*crypto_LUKS' "no LUKS on the array itself"
rig_expect_no_section mdadm-detail '/dev/vde' "the spare disk is not an md member"
rig_expect_no_section blkid '^/dev/vde' "the spare disk carries no signature"
rig_expect_section luksdump '^Version:[[:space:]]+2' "LUKS2"
rig_expect_section luksdump 'Cipher key:[[:space:]]+512 bits' "512-bit key"
rig_expect_section luksdump 'sector:[[:space:]]+4096 \[bytes\]' "4096-byte sectors"
rig_expect_section luksdump 'Flags: .*no-read-workqueue' "perf flags are persistent"
rig_expect_section luksdump '^Label:[[:space:]]+kvm-disk' "LUKS label"
# the stack from sysfs, top down: the array sits on four dm devices, each
# of them crypt-N on one disk's data partition
rig_expect_section slaves '^md[0-9]+: dm-[0-9]+ dm-[0-9]+ dm-[0-9]+ dm-[0-9]+$' "sysfs: the array sits on four dm devices"
for k in 0 1 2 3; do
  rig_expect_section slaves "^dm-[0-9]+ \\(crypt-$k\\): vd[a-d]2$" "sysfs: crypt-$k sits on a disk's data partition"
done
rig_expect_section slaves '^dm-[0-9]+ \(kvm_vg-root\): md[0-9]+$' "sysfs: LV root sits on the array"
n=$(rig_report_section slaves | sed -nE 's/^dm-[0-9]+ \(crypt-[0-3]\): (vd[a-d]2)$/\1/p' | sort -u | wc -l)
rig_check "the four crypt mappings sit on four different disks" test "$n" = 4
rig_expect_section vgs '^ *kvm_vg\|1\|2\|' "VG kvm_vg with one PV and two LVs"
rig_expect_section pvs '^ */dev/md' "the PV is the md array"
rig_expect_section lvs '^ *kvm_vg\|root\|1073741824B\|active' "LV root, 1 GiB, active"
rig_expect_section mounts '^/dev/(mapper/kvm_vg-root|kvm_vg/root) /target xfs ' "root LV mounted on /target as xfs"
rig_expect_section mounts '^/dev/(mapper/kvm_vg-images|kvm_vg/images) /target/var/lib/libvirt/images xfs .*noatime' "images LV mounted as xfs, noatime"
rig_expect_section 'target /etc/crypttab' '^crypt-0 UUID=[0-9a-f-]+ none luks,initramfs$' "crypttab: crypt-0 with initramfs"
rig_expect_section 'target /etc/crypttab' '^crypt-3 UUID=[0-9a-f-]+ none luks,initramfs$' "crypttab: crypt-3 with initramfs"
after=$(rig_sha256 "$spare")
rig_check "the fifth (unselected) disk is unchanged" test "$before" = "$after"
echo "# initramfs ${RIG_INITRD_SIZE:-?} bytes, /init at ${RIG_INIT_SECONDS}s guest uptime, guest run ${RIG_BOOT_SECONDS}s"
rig_done
