#!/bin/bash
# A data volume whose PV is gone (issue 30, item 4, second case), on the
# storage of the whole job plus a fifth disk (serial kiln-data) that holds
# the VM image store's volume group alone (spec tests/rig/specs/degraded.yaml):
#   boot 1  netboot: kiln installs; /var/lib/libvirt/images is XFS on
#           data_vg/images, the only PV of data_vg the fifth disk; its fstab
#           line gets nofail and a 30 s device wait;
#   boot 2  from the disks (SeaBIOS) with the fifth disk left off, as a dead
#           disk would be: the node still reaches multi-user, cloudbr0 is up,
#           sshd answers (the stand-in's addHost logs in over it), and the
#           first boot's storage check (kiln register --firstboot,
#           docs/register.md "The storage check at first boot") names the
#           image store's mount, its device and why: in kiln-register's
#           journal, the storage-degraded event the controller received
#           (signed: the stand-in keeps only what its HMAC verifies) and the
#           report posted to it; the node is registered anyway (the mount is
#           not required). This is the systemd half of the check that the
#           host test (tests/host/test-firstboot-storage.sh) cannot run:
#           systemctl show of the units, the journal, and the wait for the
#           device's job, which ends after the 30 s timeout.
# Assertions read the installed system's report (ttyS1), its console and the
# controller's records, never kiln's own log.
#
# Written 2026-12-02, NOT RUN yet (no QEMU for helpers): the lead runs it.
set -uo pipefail
: "${RIG_TIMEOUT:=1500}"
. "$SRC/tests/rig/lib.sh"
rig_init
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

# --- boot 2: the installed system without the fifth disk ----------------------
rig_controller_ssh "$NODE_IP"
rig_boot_disk --without 4 || rig_not_ok "boot 2: the installed system did not report (see its console above)"
rig_last_report
rig_expect_section system '^multi-user active' "boot 2: the node reached multi-user without its image store's disk"
rig_check "boot 2: no emergency mode (console)" eval '! grep -aq "You are in emergency mode" "$RIG_SERIAL"'
rig_expect_section ip-addr "^cloudbr0 +UP +$NODE_IP/" "boot 2: cloudbr0 is up with the node's address"
rig_expect_section ssh '^ssh.service active' "boot 2: sshd runs"
rig_expect_section ssh '^listening .*:22$' "boot 2: sshd listens on port 22"
rig_expect_section journal-ssh "Accepted password for root from" "boot 2: sshd answered: the stand-in's addHost logged in"
rig_expect_no_section findmnt '^/var/lib/libvirt/images ' "boot 2: /var/lib/libvirt/images is not mounted"
rig_expect_section fstab "^UUID=$UUID_IMAGES /var/lib/libvirt/images xfs defaults,nofail,x-systemd.device-timeout=30s " \
  "boot 2: its fstab line has nofail and the spec's 30 s wait"
rig_expect_section journal-register \
  "warning: storage not up: mount /var/lib/libvirt/images \\(UUID=$UUID_IMAGES, not required\\): not mounted: its device UUID=$UUID_IMAGES is not there: it did not appear within 30s \\(x-systemd.device-timeout\\)" \
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
rig_done
