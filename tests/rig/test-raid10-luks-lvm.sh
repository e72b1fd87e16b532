#!/bin/bash
# Netboot (QEMU iPXE → TFTP → kernel + kiln initramfs → kiln boot) on four
# blank 2 GiB disks and a fifth, smaller one the spec does not select.
# The guest's kernel must end with: md raid10, far 2, 256K chunk, 4 of 4
# members active; LUKS2 on it with the spec's cipher and key size; the VG and
# both LVs; XFS on them, mounted under /target. The fifth disk is unchanged.
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
rig_disks_and_spare
rig_spec specs/raid10-luks-lvm.yaml
rig_boot --pxe || rig_die "the guest did not finish (see the console above)"

rig_expect_exit 0
rig_expect_raid10_f2
rig_expect_section mdadm-detail 'active sync +/dev/vdd2' "mdadm: the fourth disk's data partition is a member"
rig_expect_section luksdump '^Version:[[:space:]]+2' "LUKS2"
rig_expect_section luksdump 'cipher:[[:space:]]+aes-xts-plain64' "cipher aes-xts-plain64"
rig_expect_section luksdump 'Cipher key:[[:space:]]+512 bits' "512-bit key"
rig_expect_section luksdump 'sector:[[:space:]]+4096 \[bytes\]' "4096-byte sectors"
rig_expect_section luksdump 'PBKDF:[[:space:]]+argon2id' "argon2id keyslot"
rig_expect_section luksdump 'Flags: .*no-read-workqueue' "perf flags are persistent"
rig_expect_section luksdump '^Label:[[:space:]]+kvm-data' "LUKS label"
rig_expect_section blkid '^/dev/md[0-9]+: .*TYPE="crypto_LUKS"' "LUKS is on the md array"
rig_expect_section pvs '^ */dev/mapper/crypt0\|kvm_vg' "the PV is the opened LUKS device"
rig_expect_kvm_vg
rig_expect_section blkid 'LABEL="root".*TYPE="xfs"' "xfs labelled root"
rig_spare_done
