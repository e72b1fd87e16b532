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
rig_disks_and_spare
rig_spec specs/perdisk-luks-raid10.yaml
rig_boot --pxe || rig_die "the guest did not finish (see the console above)"

rig_expect_exit 0
rig_expect_raid10_f2
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
rig_expect_section pvs '^ */dev/md' "the PV is the md array"
rig_expect_kvm_vg
rig_expect_section 'target /etc/crypttab' '^crypt-0 UUID=[0-9a-f-]+ none luks,initramfs,noauto$' "crypttab: crypt-0 with initramfs, noauto (opened there, not waited for again)"
rig_expect_section 'target /etc/crypttab' '^crypt-3 UUID=[0-9a-f-]+ none luks,initramfs,noauto$' "crypttab: crypt-3 with initramfs, noauto"
rig_spare_done
