#!/bin/bash
# Resume after a failure in the QEMU rig, one boot pair on the same disks,
# both stacking orders at once (specs/resume-both.yaml): md0 (RAID10 far-2)
# -> LUKS2 -> LVM -> xfs root, and md1 (RAID10 far-2) -> LVM -> LUKS2 on an
# LV -> xfs:
#  boot 1: the storage is built, then the image is not there (404): kiln
#          fails (exit 5), the guest powers off;
#  boot 2: the image is served; kiln assembles both arrays, opens LUKS,
#          activates the VGs, mounts, finds the progress record of boot 1 and
#          goes on with the image, configure and registration.
# The md, LUKS, VG UUIDs and the PARTUUIDs are read from the guest's own
# mdadm, cryptsetup, lvm and blkid after each boot and must not change; the
# run report's "kept" lists them; the stand-in controller must have been
# asked to add the host exactly once.
. "$SRC/tests/rig/lib.sh"
rig_init
rig_small_image
mv "$RIG_TMP/www/images/small.tar.zst" "$RIG_TMP/small.tar.zst"   # boot 1: 404

# what the guest's tools say, after kiln, in the guest report
seg=$RIG_TMP/seg
mkdir -p "$seg/etc/kiln/report.d"
cat >"$seg/etc/kiln/report.d/60-resume" <<'HOOK'
echo "md-uuid $(mdadm --detail /dev/md/md0 2>/dev/null | sed -n 's/^ *UUID : //p')"
echo "luks-uuid $(cryptsetup luksUUID /dev/md/md0 2>/dev/null)"
echo "vg-uuid $(lvm vgs --noheadings -o vg_uuid kvm_vg 2>/dev/null | tr -d ' ')"
echo "md1-uuid $(mdadm --detail /dev/md/md1 2>/dev/null | sed -n 's/^ *UUID : //p')"
echo "vg1-uuid $(lvm vgs --noheadings -o vg_uuid lvm_vg 2>/dev/null | tr -d ' ')"
echo "luks1-uuid $(cryptsetup luksUUID /dev/mapper/lvm_vg-data 2>/dev/null)"
echo "partuuids $(for p in /dev/vd[abcd][123]; do blkid -o value -s PARTUUID $p; done 2>/dev/null | tr '\n' ' ')"
echo "data $(grep ' /target/srv/data ' /proc/mounts | cut -d' ' -f1,3)"
echo "image $( [ -f /target/etc/kiln-image ] && echo present || echo absent)"
echo "progress $(tr -d '\n ' </target/var/lib/kiln/progress.json 2>/dev/null)"
HOOK
rig_add_initrd_segment "$seg"

rig_controller
RIG_VAR_PASSPHRASE=$(secret rig-resume-)
RIG_VAR_HOST_PASSWORD=$(secret host-pw-)
rig_disks 4 2G
rig_spec specs/resume-both.yaml

hook() { rig_report_section "hook 60-resume" | sed -n "s/^$1 //p"; }
add_hosts() { jq '[.requests[] | select(.command == "addHost")] | length' "$1"; }

# --- boot 1: storage built, image 404 ---
rig_boot || rig_die "boot 1: the guest did not finish"
b1=$RIG_BOOT_SECONDS
rig_expect_exit 5
rig_expect_section mdstat '256K chunks 2 far-copies \[4/4\] \[UUUU\]' "boot 1: raid10 far 2 over four members"
rig_expect_section mounts ' /target xfs ' "boot 1: root mounted"
md1=$(hook md-uuid) luks1=$(hook luks-uuid) vg1=$(hook vg-uuid)
rig_check "boot 1: md, LUKS and VG UUIDs read in the guest ($md1 / $luks1 / $vg1)" [ -n "$md1" -a -n "$luks1" -a -n "$vg1" ]
lmd1=$(hook md1-uuid) lvg1=$(hook vg1-uuid) lluks1=$(hook luks1-uuid) parts1=$(hook partuuids)
rig_check "boot 1: LVM-under-LUKS md, VG and LUKS UUIDs read in the guest ($lmd1 / $lvg1 / $lluks1)" \
  [ -n "$lmd1" -a -n "$lvg1" -a -n "$lluks1" ]
rig_check "boot 1: twelve PARTUUIDs read in the guest" [ "$(wc -w <<<"$parts1")" = 12 ]
rig_check "boot 1: the LUKS-on-LV xfs is mounted" [ "$(hook data)" = "/dev/mapper/cdata xfs" ]
rig_check "boot 1: no image on the root" [ "$(hook image)" = absent ]
rig_check "boot 1: the progress record lists storage, unfinished" \
  grep -q '"stages_done":\["storage"\],"complete":false' <<<"$(hook progress)"
rig_expect_section "kiln-file report.json" '"resumed": ?false' "boot 1: the run report says not resumed"
rig_controller_dump "$RIG_TMP/dump-1.json" || rig_die "no controller dump"
rig_check "boot 1: the controller was not asked to add the host" [ "$(add_hosts "$RIG_TMP/dump-1.json")" = 0 ]

# --- boot 2: the image is there ---
mv "$RIG_TMP/small.tar.zst" "$RIG_TMP/www/images/small.tar.zst"
rig_boot || rig_die "boot 2: the guest did not finish"
rig_expect_exit 0
rig_expect_section mdstat '256K chunks 2 far-copies \[4/4\] \[UUUU\]' "boot 2: raid10 far 2 over four members"
rig_check "boot 2: same md UUID ($(hook md-uuid))" [ "$(hook md-uuid)" = "$md1" ]
rig_check "boot 2: same LUKS UUID ($(hook luks-uuid))" [ "$(hook luks-uuid)" = "$luks1" ]
rig_check "boot 2: same VG UUID ($(hook vg-uuid))" [ "$(hook vg-uuid)" = "$vg1" ]
rig_check "boot 2: LVM under LUKS: same md UUID ($(hook md1-uuid))" [ "$(hook md1-uuid)" = "$lmd1" ]
rig_check "boot 2: LVM under LUKS: same VG UUID ($(hook vg1-uuid))" [ "$(hook vg1-uuid)" = "$lvg1" ]
rig_check "boot 2: LVM under LUKS: same LUKS UUID ($(hook luks1-uuid))" [ "$(hook luks1-uuid)" = "$lluks1" ]
rig_check "boot 2: same PARTUUIDs" [ "$(hook partuuids)" = "$parts1" ]
rig_check "boot 2: the LUKS-on-LV xfs is mounted" [ "$(hook data)" = "/dev/mapper/cdata xfs" ]
# the run report's "kept" (report.json comes twice in the guest report)
rig_report_section "kiln-file report.json" | jq -s '.[0].resume.kept' >"$RIG_TMP/kept.json"
kept() { jq -r --arg k "$1" '.[$k] // "missing"' "$RIG_TMP/kept.json"; }
nodash() { tr -d ':-' <<<"$1"; }   # mdadm prints 8:8:8:8, blkid 8-4-4-4-12
rig_check "boot 2: the report keeps md0 $(kept 'md md0')" [ "$(nodash "$(kept 'md md0')")" = "$(nodash "$md1")" ]
rig_check "boot 2: the report keeps md1 $(kept 'md md1')" [ "$(nodash "$(kept 'md md1')")" = "$(nodash "$lmd1")" ]
rig_check "boot 2: the report keeps VG kvm_vg $(kept 'vg kvm_vg')" [ "$(kept 'vg kvm_vg')" = "$vg1" ]
rig_check "boot 2: the report keeps VG lvm_vg $(kept 'vg lvm_vg')" [ "$(kept 'vg lvm_vg')" = "$lvg1" ]
rig_check "boot 2: the report keeps LUKS on md0" [ "$(kept 'luks /dev/md/md0')" = "$luks1" ]
rig_check "boot 2: the report keeps LUKS on the LV" [ "$(kept 'luks /dev/lvm_vg/data')" = "$lluks1" ]
set -- $parts1; i=0
for d in a b c d; do for n in 1 2 3; do
  i=$((i + 1))
  [ "$(kept "partition /dev/vd$d$n")" = "${!i}" ] || rig_not_ok "boot 2: the report keeps PARTUUID ${!i} of /dev/vd$d$n (it says $(kept "partition /dev/vd$d$n"))"
done; done
rig_check "boot 2: the report keeps twelve PARTUUIDs" [ "$(jq '[keys[] | select(startswith("partition "))] | length' "$RIG_TMP/kept.json")" = 12 ]
rig_check "boot 2: the image is on the root" [ "$(hook image)" = present ]
rig_check "boot 2: the progress record is complete" \
  grep -q '"stages_done":\["storage","image","configure","register"\],"complete":true' <<<"$(hook progress)"
rig_expect_section "kiln-file report.json" '"resumed": ?true' "boot 2: the run report says resumed"
rig_expect_section 'target /etc/fstab' '^UUID=[0-9a-f-]+ / xfs ' "boot 2: fstab written"
rig_controller_dump "$RIG_TMP/dump-2.json" || rig_die "no controller dump"
rig_check "boot 2: no addHost either (it is the installed system's first boot's)" [ "$(add_hosts "$RIG_TMP/dump-2.json")" = 0 ]
rig_check "boot 2: the report leaves CloudStack to the first boot" \
  jq -e '[.reports[].body.registration.cloudstack.result] | index("FIRSTBOOT") != null' "$RIG_TMP/dump-2.json"
rig_log "boot 1 took $b1 s, boot 2 $RIG_BOOT_SECONDS s"
rig_done
