#!/bin/bash
# kiln apply in the QEMU rig: disks that carry an old filesystem, an old LUKS
# header and an old md superblock.
#  boot 1: the spec does not say wipe -> kiln refuses (exit 3) before any
#          write: every disk image hashes the same afterwards;
#  boot 2: the same spec with wipe: true -> the disks are cleaned and
#          provisioned (raid10 far-2, LUKS2, LVM, xfs).
. "$SRC/tests/rig/lib.sh"
"$KILN" help 2>/dev/null | grep -q '^  boot ' || rig_skip "kiln has no boot command yet"
command -v cryptsetup >/dev/null || rig_skip "cryptsetup missing"
rig_init
rig_disks 4 2G
rig_disk extra 1G
mkfs.xfs -q -f -L oldfs "${RIG_DISK[0]}" || rig_die "mkfs.xfs on disk0"
printf old | cryptsetup luksFormat -q --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 "${RIG_DISK[1]}" - \
  || rig_die "luksFormat on disk1"
python3 "$SRC/tests/lib/md-superblock.py" "${RIG_DISK[2]}" old:md9 || rig_die "md superblock on disk2"
mkfs.ext4 -q -F -L keepme "$RIG_TMP/extra.img"
blkid -p "${RIG_DISK[0]}" | grep -q 'TYPE="xfs"' || rig_die "disk0 has no xfs"
blkid -p "${RIG_DISK[1]}" | grep -q 'TYPE="crypto_LUKS"' || rig_die "disk1 has no LUKS header"
blkid -p "${RIG_DISK[2]}" | grep -q 'TYPE="linux_raid_member"' || rig_die "disk2 has no md superblock"
before=$(rig_sha256 "${RIG_DISK[@]}")

RIG_VAR_WIPE=false rig_spec specs/apply-raid10-luks-lvm.yaml
rig_boot || rig_not_ok "boot 1: the guest did not finish"
rig_expect_exit 3
rig_check "boot 1: every disk hashes the same after the refusal" [ "$(rig_sha256 "${RIG_DISK[@]}")" = "$before" ]
rig_expect_section mdstat '^unused devices' "boot 1: no array was made"
if rig_section_has mdstat '^md'; then rig_not_ok "boot 1: an array exists after the refusal"; else rig_ok "boot 1: no array after the refusal"; fi
for w in '/dev/vda: .*TYPE="xfs"' '/dev/vdb: .*TYPE="crypto_LUKS"' '/dev/vdc: .*TYPE="linux_raid_member"'; do
  rig_expect_section blkid "$w" "boot 1: the guest still sees ${w%%:*}'s old signature"
done

RIG_VAR_WIPE=true rig_spec specs/apply-raid10-luks-lvm.yaml
rig_boot || rig_not_ok "boot 2: the guest did not finish"
rig_expect_exit 0
if rig_section_has blkid 'LABEL="oldfs"|UUID_SUB=.*LABEL="old:md9"'; then rig_not_ok "boot 2: an old signature survived"
else rig_ok "boot 2: the old filesystem and md superblock are gone"; fi
n_luks=$(rig_report_section blkid | grep -c 'TYPE="crypto_LUKS"')
rig_check "boot 2: exactly one LUKS device (the new one on the array), found $n_luks" [ "$n_luks" = 1 ]
rig_expect_section blkid '^/dev/md[0-9]+: UUID="[^"]+" TYPE="crypto_LUKS"' "boot 2: LUKS on the array"
rig_expect_section mdstat '256K chunks 2 far-copies \[4/4\] \[UUUU\]' "boot 2: raid10 far 2, four members active"
rig_expect_section lvs 'kvm_vg\|root\|1073741824B\|active' "boot 2: LV root active"
rig_expect_section mounts '^/dev/[^ ]*root /target xfs ' "boot 2: root mounted"
rig_check "the unselected disk has the same sha256" [ "$(rig_sha256 "$RIG_TMP/extra.img")" = "${before##*$'\n'}" ]
rig_done
