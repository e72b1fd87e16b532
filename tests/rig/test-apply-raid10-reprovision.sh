#!/bin/bash
# kiln apply in the QEMU rig, LUKS-under-LVM stacking:
#  boot 1: four blank disks -> raid10 far-2 (256K chunk) -> LUKS2 -> LVM -> xfs,
#          mounted; a fifth disk that the spec does not select keeps its hash;
#  boot 2: the same disks with that whole layout brought up before kiln runs
#          (array assembled, LUKS open, VG active: see kiln-pre-init below);
#          the spec says wipe and the boot carries the operator's reinstall
#          act (kiln.reinstall=: boot 1 left a finished install, which is
#          otherwise refused, docs/reinstall.md), so kiln tears it down and
#          builds it anew.
# Assertions read what the guest's kernel reports (mdstat, mdadm --detail,
# luksDump, lvs, blkid, mounts), never kiln's own log.
. "$SRC/tests/rig/lib.sh"
"$KILN" help 2>/dev/null | grep -q '^  boot ' || rig_skip "kiln has no boot command yet"
rig_init
rig_disks 4 2G
rig_disk extra 1G
mkfs.ext4 -q -F -L keepme "$RIG_TMP/extra.img"
extra_hash=$(rig_sha256 "$RIG_TMP/extra.img")

check_layout() {  # $1 = boot number
  local b=$1
  rig_expect_exit 0
  rig_expect_section mdstat 'active raid10 vd.2\[[0-9]\] vd.2\[[0-9]\] vd.2\[[0-9]\] vd.2\[[0-9]\]' "boot $b: raid10 over the four data partitions"
  rig_expect_section mdstat '256K chunks 2 far-copies \[4/4\] \[UUUU\]' "boot $b: 256K chunk, far 2, all four members active"
  rig_expect_section mdadm-detail 'Layout : far=2' "boot $b: mdadm --detail says far=2"
  rig_expect_section mdadm-detail 'Active Devices : 4' "boot $b: four active devices"
  rig_expect_section luksdump 'Version:[[:space:]]+2' "boot $b: LUKS2 on the array"
  rig_expect_section luksdump 'cipher: aes-xts-plain64' "boot $b: spec's cipher"
  rig_expect_section luksdump 'Cipher key:[[:space:]]+512 bits' "boot $b: spec's key size"
  rig_expect_section luksdump 'sector: 4096 \[bytes\]' "boot $b: spec's sector size"
  rig_expect_section luksdump 'PBKDF:[[:space:]]+argon2id' "boot $b: argon2id keyslot"
  rig_expect_section luksdump 'Flags:.*no-read-workqueue.*no-write-workqueue' "boot $b: perf flags stored in the header"
  rig_expect_section crypt-status 'type:[[:space:]]+LUKS2' "boot $b: the LUKS device is open"
  rig_expect_section pvs '/dev/mapper/crypt0\|kvm_vg' "boot $b: the PV is the open LUKS device"
  rig_expect_section lvs 'kvm_vg\|root\|1073741824B\|active' "boot $b: LV root, 1 GiB, active"
  rig_expect_section lvs 'kvm_vg\|images\|[0-9]+B\|active' "boot $b: LV images, active"
  rig_expect_section blkid '^/dev/mapper/kvm_vg-root: LABEL="root".*TYPE="xfs"' "boot $b: xfs 'root' on the LV"
  rig_expect_section blkid '^/dev/mapper/kvm_vg-images: LABEL="images".*TYPE="xfs"' "boot $b: xfs 'images' on the LV"
  rig_expect_section mounts '^/dev/[^ ]*root /target xfs ' "boot $b: root mounted at /target"
  rig_expect_section mounts '^/dev/[^ ]*images /target/var/lib/libvirt/images xfs ' "boot $b: images mounted below it"
  rig_expect_section 'target /etc/crypttab' '^crypt0 UUID=[0-9a-f-]+ none luks' "boot $b: crypttab names the LUKS UUID"
  rig_expect_section 'target /etc/fstab' '^UUID=[0-9a-f-]+ / xfs ' "boot $b: fstab mounts / by UUID"
  rig_expect_section 'target /etc/mdadm/mdadm.conf' '^ARRAY /dev/md/md-data .*UUID=' "boot $b: mdadm.conf has the array"
  rig_check "boot $b: the unselected disk has the same sha256" [ "$(rig_sha256 "$RIG_TMP/extra.img")" = "$extra_hash" ]
}
luks_uuid() { rig_report_section blkid | sed -n 's/^\/dev\/md[0-9]*: UUID="\([^"]*\)" TYPE="crypto_LUKS".*/\1/p' | head -1; }

# --- boot 1: blank disks ---
RIG_VAR_WIPE=false rig_spec specs/apply-raid10-luks-lvm.yaml
rig_boot || rig_not_ok "boot 1: the guest did not finish"
check_layout 1
uuid1=$(luks_uuid)
rig_check "boot 1: LUKS UUID found" [ -n "$uuid1" ]

# --- boot 2: the earlier layout is active when kiln starts ---
# An extra initramfs segment runs before /init (rdinit=): it assembles the
# array, opens LUKS and activates the VG exactly as an installed system or a
# previous run would leave them, prints what the kernel then has, and
# hands over to /init.
mkdir -p "$RIG_TMP/pre"
cat >"$RIG_TMP/pre/kiln-pre-init" <<'PRE'
#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LVM_SUPPRESS_FD_WARNINGS=1 DM_DISABLE_UDEV=1
/bin/busybox mkdir -p /proc /sys /dev /run
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox mkdir -p /run/lvm /run/lock/lvm /run/cryptsetup
while read -r ko; do /bin/busybox insmod "$ko" 2>/dev/null; done </etc/kiln/modules.load
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vdd2 ] && break; /bin/busybox sleep 0.5; done
exec >/dev/console 2>&1
mdadm --assemble /dev/md/md-data --run /dev/vda2 /dev/vdb2 /dev/vdc2 /dev/vdd2
printf '%s' rig-passphrase-not-a-secret | cryptsetup open --key-file=- /dev/md/md-data crypt0
lvm vgchange -ay kvm_vg
sed "s/^/pre-init: mdstat: /" /proc/mdstat
echo "pre-init: dm:"; for d in /sys/block/dm-*/dm/name; do echo "pre-init: dm $(cat "$d")"; done
/bin/busybox umount /dev /sys /proc
exec /init
PRE
chmod 755 "$RIG_TMP/pre/kiln-pre-init"
rig_add_initrd_segment "$RIG_TMP/pre" zstd -q -3
RIG_VAR_WIPE=true rig_spec specs/apply-raid10-luks-lvm.yaml
rig_boot --append "rdinit=/kiln-pre-init kiln.reinstall=reprovision-boot-2" || rig_not_ok "boot 2: the guest did not finish"
pre=$(grep '^pre-init:' "$RIG_SERIAL")
rig_check "boot 2: the old array was assembled before kiln ran" grep -Eq 'active raid10' <<<"$pre"
rig_check "boot 2: the old LUKS mapping was open before kiln ran" grep -q 'pre-init: dm crypt0' <<<"$pre"
rig_check "boot 2: the old VG was active before kiln ran" grep -q 'pre-init: dm kvm_vg-root' <<<"$pre"
check_layout 2
uuid2=$(luks_uuid)
rig_check "boot 2: a new LUKS header (UUID $uuid2 differs from $uuid1)" [ -n "$uuid2" -a "$uuid2" != "$uuid1" ]
rig_done
