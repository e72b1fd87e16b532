#!/bin/bash
# Netboot (QEMU iPXE → TFTP → kernel + kiln initramfs → kiln boot) on four
# blank 2 GiB disks and a fifth, smaller one the spec does not select.
# The guest's kernel must end with: md raid10, far 2, 256K chunk, 4 of 4
# members active; LUKS2 on it with the spec's cipher and key size; the VG and
# both LVs; XFS on them, mounted under /target. The fifth disk is unchanged.
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
rig_disks 4 2G
rig_disk spare 512M
spare=${RIG_DISK[4]}
dd if=/dev/urandom of="$spare" bs=1M count=4 conv=notrunc status=none   # something to keep
before=$(rig_sha256 "$spare")
rig_spec specs/raid10-luks-lvm.yaml
rig_boot --pxe || rig_die "the guest did not finish (see the console above)"

rig_expect_exit 0
rig_expect_section mdstat '^md[0-9]+ : active raid10 ' "md array is raid10"
rig_expect_section mdstat '\[4/4\] \[UUUU\]' "all four members active"
rig_expect_section mdadm-detail 'Raid Level : raid10' "mdadm: raid10"
rig_expect_section mdadm-detail 'Layout : far=2' "mdadm: layout far=2"
rig_expect_section mdadm-detail 'Chunk Size : 256K' "mdadm: 256K chunk"
rig_expect_section mdadm-detail 'Active Devices : 4' "mdadm: 4 active devices"
rig_expect_section mdadm-detail 'active sync +/dev/vdd2' "mdadm: the fourth disk's data partition is a member"
rig_expect_no_section mdadm-detail '/dev/vde' "the spare disk is not an md member"
rig_expect_no_section blkid '^/dev/vde' "the spare disk carries no signature"
rig_expect_section luksdump '^Version:[[:space:]]+2' "LUKS2"
rig_expect_section luksdump 'cipher:[[:space:]]+aes-xts-plain64' "cipher aes-xts-plain64"
rig_expect_section luksdump 'Cipher key:[[:space:]]+512 bits' "512-bit key"
rig_expect_section luksdump 'sector:[[:space:]]+4096 \[bytes\]' "4096-byte sectors"
rig_expect_section luksdump 'PBKDF:[[:space:]]+argon2id' "argon2id keyslot"
rig_expect_section luksdump 'Flags: .*no-read-workqueue' "perf flags are persistent"
rig_expect_section luksdump '^Label:[[:space:]]+kvm-data' "LUKS label"
rig_expect_section blkid '^/dev/md[0-9]+: .*TYPE="crypto_LUKS"' "LUKS is on the md array"
rig_expect_section vgs '^ *kvm_vg\|1\|2\|' "VG kvm_vg with one PV and two LVs"
rig_expect_section pvs '^ */dev/mapper/crypt0\|kvm_vg' "the PV is the opened LUKS device"
rig_expect_section lvs '^ *kvm_vg\|root\|1073741824B\|active' "LV root, 1 GiB, active"
rig_expect_section lvs '^ *kvm_vg\|images\|[0-9]+B\|active' "LV images, active"
rig_expect_section mounts '^/dev/(mapper/kvm_vg-root|kvm_vg/root) /target xfs ' "root LV mounted on /target as xfs"
rig_expect_section mounts '^/dev/(mapper/kvm_vg-images|kvm_vg/images) /target/var/lib/libvirt/images xfs .*noatime' "images LV mounted as xfs, noatime"
rig_expect_section blkid 'LABEL="root".*TYPE="xfs"' "xfs labelled root"
after=$(rig_sha256 "$spare")
rig_check "the fifth (unselected) disk is unchanged" test "$before" = "$after"
echo "# initramfs ${RIG_INITRD_SIZE:-?} bytes, /init at ${RIG_INIT_SECONDS}s guest uptime, guest run ${RIG_BOOT_SECONDS}s"
rig_done
