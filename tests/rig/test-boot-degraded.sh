#!/bin/bash
# A data volume whose PV is gone (issue 30, item 4, second case), and a LUKS
# key that no spec holds, recovered from the raw disks (issue 28's rig
# proof), on one install: the storage of the whole job plus a fifth disk
# (serial kiln-data) that holds the VM image store's volume group alone, the
# LUKS2 volume's key generated on the node, escrowed to the operator's
# certificate and bound to Tang (spec tests/rig/specs/degraded.yaml):
#   boot 1  netboot: kiln installs; /var/lib/libvirt/images is XFS on
#           data_vg/images, the only PV of data_vg the fifth disk; its fstab
#           line gets nofail and a device wait of its own, 20 s (the
#           others the spec's 120 s); the report posted to the
#           controller carries the escrow blob;
#   boot 2  from the disks (SeaBIOS) with the fifth disk left off, as a dead
#           disk would be: the initramfs opens the escrowed volume through
#           Tang, the node still reaches multi-user, cloudbr0 is up, sshd
#           answers (the stand-in's addHost logs in over it), and the first
#           boot's storage check (kiln register --firstboot, docs/register.md
#           "The storage check at first boot") names the image store's
#           mount, its device and why: in kiln-register's journal, the
#           storage-degraded event the controller received (signed: the
#           stand-in keeps only what its HMAC verifies) and the report posted
#           to it; the node is registered anyway (the mount is not required).
#           This is the systemd half of the check that the host test
#           (tests/host/test-firstboot-storage.sh) cannot run: systemctl show
#           of the units, the journal, and the wait for the device's job,
#           which ends after the mount's own 20 s timeout.
#   then    Tang down, the node off: the operator's recovery from the raw
#           member disks (docs/recovery.md). The host kernel has no md nor
#           device-mapper, so the array's first 32 MiB are read from the
#           members' far-2 layout (tests/lib/md-far2-head.py: the set UUID
#           is md0's); `kiln recover` with the wrong key pair fails with its
#           exact message and writes nothing; with the operator's key it
#           opens keyslot 0, Debian's cryptsetup takes the printed key
#           (--test-passphrase, and the volume key it yields decrypts the
#           data's first sector: the LVM PV label blkid saw on the node).
#           The key is in no disk image, console, report or controller record.
# Assertions read the installed system's report (ttyS1), its console, the
# controller's records and the raw disks, never kiln's own log.
set -uo pipefail
: "${RIG_TIMEOUT:=1500}"
. "$SRC/tests/rig/lib.sh"
rig_init
command -v openssl >/dev/null && command -v cryptsetup >/dev/null || rig_skip "no openssl or cryptsetup (bash tests/deps.sh)"
# the operator's key pair (throwaway), and another operator's
for who in op other; do
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$RIG_TMP/$who.key" -out "$RIG_TMP/$who.crt" -days 2 -subj "/CN=kiln-rig-$who" \
    2>/dev/null || rig_die "openssl req ($who)"
done
RIG_VAR_ESCROW_CERT=$(awk '{printf "%s\\n", $0}' "$RIG_TMP/op.crt")
fp() { openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr A-F a-f; }
rig_job_setup specs/degraded.yaml dg-
rig_disk data 1G               # disk 4: data_vg's only PV
NODE_IP=$RIG_JOB_NODE_IP
ctl_dump() { rig_controller_dump "$RIG_TMP/dump-$1.json" || rig_die "no controller dump after boot $1"; }
jqc() { jq -r "$2" "$RIG_TMP/dump-$1.json"; }
# the storage-degraded events the controller kept, their bodies as JSON
events_sd() { jqc "$1" '[.events[] | select(.type == "storage-degraded") | (.body | if type == "string" then fromjson else . end)]'; }

# --- boot 1: netboot and install ---------------------------------------------
rig_boot --pxe || rig_die "boot 1: the installation did not finish (see the console above)"
rig_last_report
rig_expect_exit 0
# the image store's XFS, as the kiln initramfs' blkid saw it
UUID_IMAGES=$(rig_report_section blkid | sed -n '/data_vg-images/ s/.* UUID="\([^"]*\)".*/\1/p' | head -1)
rig_check "boot 1: the image store is XFS on data_vg/images, UUID $UUID_IMAGES (blkid)" test -n "$UUID_IMAGES"
blkid_of() { rig_report_section blkid | sed -n "s|^$1: .*\\bUUID=\"\\([^\"]*\\)\".*|\\1|p" | head -1; }
UUID_MD0=$(rig_report_section blkid | sed -n '/LABEL="[^"]*:md0"/ s/^[^ ]* UUID="\([^"]*\)".*/\1/p' | head -1)
UUID_LUKS=$(blkid_of /dev/md0) UUID_PV=$(blkid_of /dev/mapper/crypt0)
rig_check "boot 1: md0 ($UUID_MD0) holds the LUKS2 volume $UUID_LUKS, whose mapping is the PV $UUID_PV (blkid)" \
  eval '[[ -n $UUID_MD0 && -n $UUID_LUKS && -n $UUID_PV ]]'
ctl_dump 1
rig_check "boot 1: the report posted to the controller carries one escrow blob, for $UUID_LUKS, sealed to the operator's certificate" \
  test "$(jqc 1 '[.reports[0].body.escrow.crypt0[]? | "\(.uuid) \(.keyslot) \(.certificate_sha256) \(.cms | length > 100)"] | join(",")')" = "$UUID_LUKS 0 $(fp "$RIG_TMP/op.crt") true"

# --- boot 2: the installed system without the fifth disk ----------------------
rig_controller_ssh "$NODE_IP"
tang0=$(rig_tang_requests)
rig_boot_disk --without 4 || rig_not_ok "boot 2: the installed system did not report (see its console above)"
rig_last_report
rig_check "boot 2: the initramfs opened the escrowed volume through Tang (recovery requests $tang0 -> $(rig_tang_requests))" \
  test "$(rig_tang_requests)" -gt "$tang0"
rig_expect_section system '^multi-user active' "boot 2: the node reached multi-user without its image store's disk"
rig_check "boot 2: no emergency mode (console)" eval '! grep -aq "You are in emergency mode" "$RIG_SERIAL"'
rig_expect_section ip-addr "^cloudbr0 +UP +$NODE_IP/" "boot 2: cloudbr0 is up with the node's address"
rig_expect_section network-heal '^network up: cloudbr0 configured by systemd-networkd' \
  "boot 2: kiln-network-heal saw cloudbr0 configured ($(rig_report_section network-heal | grep -c 'restarting it') restart(s) of networkd)"
rig_expect_section ssh '^ssh.service active' "boot 2: sshd runs"
rig_expect_section ssh '^listening .*:22$' "boot 2: sshd listens on port 22"
rig_expect_section journal-ssh "Accepted password for root from" "boot 2: sshd answered: the stand-in's addHost logged in"
rig_expect_no_section findmnt '^/var/lib/libvirt/images ' "boot 2: /var/lib/libvirt/images is not mounted"
rig_expect_section fstab "^UUID=$UUID_IMAGES /var/lib/libvirt/images xfs defaults,nofail,x-systemd.device-timeout=20s " \
  "boot 2: its fstab line has nofail and the filesystem's own 20 s wait"
rig_expect_section fstab "^UUID=[-0-9a-f]* /boot ext4 defaults,x-systemd.device-timeout=120s " \
  "boot 2: /boot's line keeps the spec's 120 s wait"
rig_expect_section journal-register \
  "warning: storage not up: mount /var/lib/libvirt/images \\(UUID=$UUID_IMAGES, not required\\): not mounted: its device UUID=$UUID_IMAGES is not there: it did not appear within 20s \\(x-systemd.device-timeout\\)" \
  "boot 2: kiln-register's journal names the mount, its device and why"
rig_expect_section registration '^marker present' "boot 2: registered anyway (the mount is not required)"
rig_expect_section registration '^ExecMainStatus=0' "boot 2: kiln register exited 0"
ctl_dump 2
ev=$(events_sd 2)
rig_check "boot 2: the controller got one storage-degraded event ($(jq -c '[.[] | .result]' <<<"$ev"))" \
  test "$(jq -r 'length' <<<"$ev")" = 1
rig_check "boot 2: the event: degraded, the node registers, the image store named with its source" \
  test "$(jq -r '.[0] | "\(.result) \(.registers) \(.failed | length) \(.failed[0].mountpoint) \(.failed[0].source) \(.failed[0].required)"' <<<"$ev")" \
       = "degraded true 1 /var/lib/libvirt/images UUID=$UUID_IMAGES false"
rig_check "boot 2: the event says what systemd says of the mount and the device ($(jq -r '.[0].failed[0].systemd' <<<"$ev"))" \
  eval '[[ $(jq -r ".[0].failed[0].systemd" <<<"$ev") == "var-lib-libvirt-images.mount: ActiveState=inactive"*"; dev-disk-by\\x2duuid-"*".device: ActiveState=inactive"* ]]'
rig_check "boot 2: the event carries systemd's journal of the wait (Timed out waiting for device)" \
  eval 'jq -r ".[0].failed[0].journal" <<<"$ev" | grep -q "Timed out waiting for device"'
rig_check "boot 2: the report posted by the first boot has storage_check degraded" \
  test "$(jqc 2 '.reports[-1].body.storage_check.result')" = degraded
rig_check "boot 2: the controller holds exactly one host, Up" test "$(jqc 2 '[.hosts[] | select(.state == "Up")] | length')" = 1
rig_check "boot 2: no secret of the job in the installed system's report" rig_no_secret_in "$RIG_REPORT"

# --- the operator's recovery from the raw member disks, Tang down -------------
rig_tang_stop
HEAD=$RIG_TMP/md0-head.img
rig_fixture_stat "${RIG_DISK[@]}" >"$RIG_TMP/disks.stat"
set_uuid=$(python3 "$SRC/tests/lib/md-far2-head.py" "$HEAD" $((32 << 20)) "${RIG_DISK[0]}:4" "${RIG_DISK[1]}:4" "${RIG_DISK[2]}:4" "${RIG_DISK[3]}:4")
rig_check "recovery: the four members' first copy is md0 ($set_uuid), holding the LUKS2 volume $UUID_LUKS" \
  eval '[[ $set_uuid == "$UUID_MD0" && $(cryptsetup luksUUID "$HEAD") == "$UUID_LUKS" ]]'
rig_check "recovery: the header's kiln-escrow token holds the blob the report carried" \
  test "$(cryptsetup luksDump --dump-json-metadata "$HEAD" | jq -r '[.tokens[] | select(.type == "kiln-escrow") | .cms] | join(",")')" = "$(jqc 1 '.reports[0].body.escrow.crypt0[0].cms')"
h0=$(sha256sum <"$HEAD")
out=$("$KILN" recover "$HEAD" --key "$RIG_TMP/other.key" --cert "$RIG_TMP/other.crt" --print 2>&1 >"$RIG_TMP/recover-wrong.out"); rc=$?
rig_check "recovery with another operator's key pair: exit 4 and the exact error, nothing printed ($rc $out)" \
  test "$rc $out" = "4 error: failed to recover the key of $HEAD: the escrow token of $HEAD is for the certificate with SHA-256 $(fp "$RIG_TMP/op.crt"), not for this one ($(fp "$RIG_TMP/other.crt")); nothing was written"
rig_check "recovery with another operator's key pair: the volume's header is unchanged" \
  eval '[[ ! -s $RIG_TMP/recover-wrong.out && $(sha256sum <"$HEAD") == "$h0" ]]'
out=$("$KILN" recover "$HEAD" --key "$RIG_TMP/op.key" --cert "$RIG_TMP/op.crt" 2>&1); rc=$?
rig_check "recovery with the operator's key: kiln checks the escrowed key against keyslot 0 ($rc $out)" \
  test "$rc $out" = "0 the escrowed key of $HEAD opens its keyslot (checked; nothing opened)"
"$KILN" recover "$HEAD" --key "$RIG_TMP/op.key" --cert "$RIG_TMP/op.crt" --print 2>/dev/null \
  | cryptsetup open --test-passphrase --key-file=- "$HEAD"; rc=$?
rig_check "recovery: Debian's cryptsetup takes the printed key (cryptsetup open --test-passphrase: exit $rc)" test "$rc" = 0
pv=$("$KILN" recover "$HEAD" --key "$RIG_TMP/op.key" --cert "$RIG_TMP/op.crt" --print 2>/dev/null \
  | cryptsetup luksDump --dump-volume-key --batch-mode --key-file=- "$HEAD" \
  | /usr/bin/python3 "$SRC/tests/lib/luks-pv-label.py" "$HEAD" $((16 << 20)) 4096)
rig_check "recovery: the volume key it yields decrypts the data's first sector, the PV label blkid saw on the node (${pv:-none})" \
  test "$pv" = "$UUID_PV"
rig_check "recovery: the header is unchanged, and no disk was written since the node powered off" \
  eval '[[ $(sha256sum <"$HEAD") == "$h0" ]] && rig_fixture_stat "${RIG_DISK[@]}" | cmp -s - "$RIG_TMP/disks.stat"'
# the key, as kiln prints it (64 hex characters) and in base64, in nothing
# the run left: the five disk images, the consoles, the reports, the
# controller's records (its database and dumps), Tang's log
key=$("$KILN" recover "$HEAD" --key "$RIG_TMP/op.key" --cert "$RIG_TMP/op.crt" --print 2>/dev/null)
rig_check "recovery: the key is 64 hex characters" eval '[[ $key =~ ^[0-9a-f]{64}$ ]]'
hits=$(grep -a -l -F -f <(printf '%s\n%s\n' "$key" "$(printf %s "$key" | base64 -w0)") \
  "${RIG_DISK[@]}" "$RIG_TMP"/serial-*.log "$RIG_TMP"/report-* "$RIG_TMP"/dump-*.json "$RIG_TANG_LOG" \
  $(find "$RIG_TMP/controller" -type f) 2>/dev/null)
rig_check "the key is in no disk image, console, report or controller record (${hits:-none})" test -z "$hits"
unset key
rig_done
