#!/bin/bash
# The whole job (issue 16, item 8), on one set of four disks, the node PXE
# first on every boot (spec tests/rig/specs/whole-job.yaml):
#   boot 1  netboot: kiln installs (RAID1 /boot + ESPs, raid10 f2, LUKS2 bound
#           to the rig's Tang, LVM, XFS, the bootable image, GRUB, cloudbr0,
#           the first-boot unit) and posts "installed" to the webhook; no
#           addHost from the initramfs;
#   boot 2  PXE again: kiln finds the finished run and kexecs the installed
#           system, which brings cloudbr0 up with the node's address; its
#           first-boot unit (kiln-register) registers; the stand-in
#           controller's addHost logs in over SSH (a hostfwd on 127.0.0.1 to
#           the guest's port 22) as root with the host password, runs the
#           image's stub cloudstack-setup-agent and records the host Up;
#   boot 3  PXE again: the installed system again, its md, LUKS and
#           filesystem UUIDs and the progress record's run_id unchanged,
#           still exactly one host and one addHost, what boot 2 wrote still
#           there; then the secrets check of the installed system (below);
# (A boot 4, the operator's reinstall act from an image without the
# generic-initramfs marker, was taken out on 2026-12-03 for CI time: the
# reinstall act is test-kvm-full's second run and test-apply-raid10-
# reprovision's boot 2; the node's own update-initramfs is test-boot-disks'
# boot 5; kiln's fallback call of it in the target is host/test-bootloader.)
# Secrets check (after boot 3, the node registered): the installed system's
# kiln-report searches its whole file tree, its initramfs unpacked and the
# journal of every boot for the test's LUKS passphrase, host password, API
# secret and HMAC key, read from a small rig-only disk (virtio serial
# kiln-needles, under min_size: kiln never selects it; in the rig's temp dir,
# mode 0600, zeroed after boot 3), plus canaries that must be found (so a
# search that sees nothing cannot pass); the host greps the raw member disks
# (what is not encrypted: /boot, the ESPs, the headers) the same way, with
# the patterns from a pipe. Secrets never go into argv or the environment.
# Assertions read the guest's reports (the kiln initramfs' and the
# installed system's, ttyS1), its console and the controller's records,
# never kiln's own log.
#
# RIG_WJ_DISKBOOT=1 (development only): boots 2 and 3 from the disks
# (SeaBIOS) instead of through kiln.
set -uo pipefail
# an install boot takes 250 s on a quiet machine, over 600 s at load 15
: "${RIG_TIMEOUT:=1500}"
. "$SRC/tests/rig/lib.sh"
rig_init
# the image, Tang, the controller, the node's sshd on loopback, the secrets,
# four disks and the spec: the same for the demo (tests/demo.sh)
rig_job_setup specs/whole-job.yaml wj-
rig_disk needles 1M            # the secrets check's patterns (boot 3 only)
chmod 0600 "$RIG_TMP/needles.img"
NODE_IP=$RIG_JOB_NODE_IP       # QEMU's user network gives the node this address
BOOT_FROM=()                   # boots 2 and 3: PXE first (kiln hands over), or the disks
[[ ${RIG_WJ_DISKBOOT:-0} == 1 ]] && BOOT_FROM=(--disk)
T=()                           # "what took how long" lines for the summary

# The storage's UUIDs from the kiln initramfs' blkid (boot 1): one line
# "md-member UUID" per md member partition, "luks UUID", "fs TYPE UUID"
uuids_from_blkid() {
  rig_report_section blkid | awk '
    { uuid = ""; type = "" }
    match($0, / UUID="[^"]*"/) { uuid = substr($0, RSTART + 7, RLENGTH - 8) }
    match($0, / TYPE="[^"]*"/) { type = substr($0, RSTART + 7, RLENGTH - 8) }
    uuid == "" { next }
    type == "linux_raid_member" { print "md " uuid; next }
    type == "crypto_LUKS" { print "luks " uuid; next }
    type == "LVM2_member" { print "pv " uuid; next }
    type == "xfs" || type == "ext4" || type == "vfat" { print "fs " type " " uuid }' | sort -u
}
# The same from the installed system's lsblk (boot 2 and 3)
uuids_from_lsblk() {
  rig_report_section uuids | awk '
    $1 ~ /^(md|luks) / { next }
    $3 == "linux_raid_member" { print "md " $4; next }
    $3 == "crypto_LUKS" { print "luks " $4; next }
    $3 == "LVM2_member" { print "pv " $4; next }
    ($3 == "xfs" || $3 == "ext4" || $3 == "vfat") && $4 != "" { print "fs " $3 " " $4 }' | sort -u
}
# The run_id of the run report kiln saved in the initramfs (boot 1)
run_id_from_initramfs() {
  rig_report_section "kiln-file report.json" | tr -d '\n' | grep -o '"run_id": *"[^"]*"' | head -1 | sed 's/.*: *"//; s/"$//'
}
# The run_id of the installed system's progress record (boot 2 and 3)
run_id_installed() {
  rig_report_section kiln-state | sed -n 's|^/var/lib/kiln/progress.json run_id ||p' | head -1
}
ctl_dump() { rig_controller_dump "$RIG_TMP/dump-$1.json" || rig_die "no controller dump after boot $1"; }
jqc() {  # jqc BOOT FILTER: the filter's output on the controller dump after BOOT
  jq -r "$2" "$RIG_TMP/dump-$1.json"
}

# --- boot 1: netboot and install ---------------------------------------------
rig_boot --pxe || rig_die "boot 1: the installation did not finish (see the console above)"
T+=("boot 1 (netboot, install): $RIG_BOOT_SECONDS s")
rig_check "boot 1: the image's generic initramfs took the node's files, no update-initramfs (console)" \
  grep -aq "appended this node's crypttab and mdadm.conf to the image's generic initramfs" "$RIG_SERIAL"
rig_last_report
rig_expect_exit 0
rig_expect_section mdstat '^md[^ ]* : active raid10 ' "boot 1: raid10 built"
UUIDS1=$(uuids_from_blkid)
RUN1=$(run_id_from_initramfs)
rig_check "boot 1: the storage carries md, LUKS, PV and filesystem UUIDs ($(wc -l <<<"$UUIDS1") found)" \
  eval '[[ $(grep -c "^md " <<<"$UUIDS1") == 3 && $(grep -c "^luks " <<<"$UUIDS1") == 1 && $(grep -c "^fs " <<<"$UUIDS1") -ge 4 ]]'
rig_check "boot 1: the run report has a run_id ($RUN1)" test -n "$RUN1"
ctl_dump 1
rig_check "boot 1: the initramfs sent no addHost (the first boot registers)" \
  test "$(jqc 1 '[.requests[] | select(.command == "addHost")] | length')" = 0
rig_check "boot 1: the controller holds no host yet" test "$(jqc 1 '.hosts | length')" = 0
rig_check "boot 1: the webhook got the installer's run report ($(jqc 1 '.reports[-1].body.result // "none"'))" \
  test "$(jqc 1 '[.reports[] | select(.body.run_id == "'"$RUN1"'" and .body.result == "SUCCESS")] | length')" -ge 1
rig_check "boot 1: which leaves CloudStack to the first boot ($(jqc 1 '.reports[-1].body.registration.cloudstack.result // "-"'))" \
  test "$(jqc 1 '.reports[-1].body.registration.cloudstack | "\(.result) \(.unit)"')" = "FIRSTBOOT kiln-register.service"

# --- boot 2: PXE first again: kiln boots the installed system, which registers
# addHost logs in through the hostfwd to the guest's sshd
rig_job_boot_installed "$NODE_IP" "${BOOT_FROM[@]}" \
  || rig_not_ok "boot 2: the installed system did not report (see its console above)"
T+=("boot 2 (PXE, kiln hands over, first boot registers): $RIG_BOOT_SECONDS s")
tang_before=$RIG_TANG_BEFORE
installed_checks() {  # installed_checks BOOT-NAME
  local b=$1
  rig_expect_section system '^multi-user active' "$b: the installed system reached multi-user"
  rig_expect_section root-stack '^kvm_vg-root lvm xfs' "$b: / is kvm_vg/root (xfs) on the installed disks"
  rig_expect_section crypt-status 'type: +LUKS2' "$b: the LUKS2 mapping is active"
  if [[ ${RIG_WJ_DISKBOOT:-0} != 1 ]]; then
    rig_check "$b: kiln's initramfs ran first (PXE) and the installed system came up in the same power-on" \
      grep -aq 'kiln-init: started' "$RIG_SERIAL"
    rig_check "$b: /init handed over by kexec, and the installed kernel started after it (console)" \
      awk '/kiln-init: done: booting the installed system \(kexec\)/ { handed = 1 } handed && /Linux version/ { found = 1 } END { exit !found }' "$RIG_SERIAL"
    rig_check "$b: two reports on ttyS1: kiln's initramfs' (exit 0), then the installed system's" \
      eval '[[ $RIG_REPORTS == 2 ]] && awk "/^--- exit/ { getline; print; exit }" "$RIG_REPORT.all" | grep -qx 0' 
    rig_expect_section cmdline '^root=[^ ]+ ro console=tty0 console=ttyS0,115200n8' \
      "$b: the installed kernel got kiln's command line (root= as GRUB's, then boot.cmdline)"
    rig_expect_no_section cmdline 'BOOT_IMAGE=' "$b: no GRUB in this boot (GRUB passes BOOT_IMAGE=)"
  fi
  rig_expect_section ip-addr "^cloudbr0 +UP +$NODE_IP/" "$b: cloudbr0 is up with the node's address $NODE_IP"
  rig_expect_section bridge-ports 'cloudbr0' "$b: the NIC is a port of cloudbr0"
  rig_expect_section ssh '^ssh.service active' "$b: sshd runs"
  rig_expect_section ssh '^listening .*:22$' "$b: sshd listens on port 22"
}
installed_checks "boot 2"
rig_check "boot 2: Tang unlocked the root volume ($tang_before -> $(rig_tang_requests) recovery requests)" \
  test "$(rig_tang_requests)" -gt "$tang_before"
rig_expect_section registration '^LoadState=loaded' "boot 2: the installed system has the first-boot unit kiln-register.service"
rig_expect_section registration '^marker present' "boot 2: the first-boot unit recorded its success (/var/lib/kiln/registered)"
rig_expect_section registration '^Result=success' "boot 2: kiln-register.service succeeded"
rig_expect_section registration '^ExecMainStatus=0' "boot 2: kiln register exited 0"
rig_expect_section journal-ssh "Accepted password for root from" "boot 2: sshd accepted the management server's password login as root"
ctl_dump 2
ZONE=$(jqc 2 '.zones[] | select(.name == "lab") | .id')
rig_check "boot 2: the controller holds exactly one host" test "$(jqc 2 '.hosts | length')" = 1
rig_check "boot 2: the host is $NODE_IP, KVM, Up ($(jqc 2 '.hosts[0] | "\(.ipaddress) \(.hypervisor) \(.state)"'))" \
  test "$(jqc 2 '.hosts[0] | "\(.ipaddress) \(.hypervisor) \(.state)"')" = "$NODE_IP KVM Up"
rig_check "boot 2: one addHost was sent" test "$(jqc 2 '[.requests[] | select(.command == "addHost")] | length')" = 1
rig_check "boot 2: the controller logged in once over SSH as root, through the hostfwd, and the setup command succeeded" \
  test "$(jqc 2 '[.logins[] | "\(.username) \(.port) \(.result) \(.exit_status)"] | join(",")')" = "root $RIG_SSH_PORT ok 0"
setup_cmd=$(jqc 2 '.logins[0].command // ""')
stub=$(rig_report_section setup-agent)
rig_check "boot 2: the stub cloudstack-setup-agent ran once, as root" \
  eval '[[ $(wc -l <<<"$stub") == 1 && $stub == *" user=root uid=0 args="* ]]'
rig_check "boot 2: with the arguments the controller sent (${setup_cmd:0:60}...)" \
  eval '[[ -n $setup_cmd && "cloudstack-setup-agent ${stub#* args=}" == "$(tr -s " " <<<"$setup_cmd" | sed "s/ $//")" ]]'
rig_check "boot 2: for the controller's zone ($ZONE)" eval '[[ $stub == *"-z $ZONE "* ]]'
rig_check "boot 2: the webhook got the first boot's report too, a delivery of its own ($(jqc 2 '[.events[] | select(.type == "report")] | length') reports)" \
  test "$(jqc 2 '[.events[] | select(.type == "report")] | length')" -ge 2
rig_check "boot 2: the run's report now says CloudStack added the host" \
  test "$(jqc 2 '.reports[] | select(.body.run_id == "'"$RUN1"'") | .body.registration.cloudstack | "\(.result) \(.added)"')" = "SUCCESS true"
UUIDS2=$(uuids_from_lsblk)
RUN2=$(run_id_installed)
rig_check "boot 2: the installed system sees the UUIDs boot 1 made" test "$UUIDS2" = "$UUIDS1"
[[ $UUIDS2 == "$UUIDS1" ]] || diff <(echo "$UUIDS1") <(echo "$UUIDS2") | sed 's/^/# /'
rig_check "boot 2: the progress record is boot 1's run ($RUN2)" test "$RUN2" = "$RUN1"
rig_check "boot 2: no secret on the console, in the reports or in the controller's records" \
  rig_no_secret_in "$RIG_SERIAL" "$RIG_REPORT.all" "$RIG_TMP/dump-2.json"

# --- boot 3: PXE first again: nothing changes; then the secrets check -------------
# the needles: label, secret; the canaries are what the search must find
luks_uuid=$(awk '$1 == "luks" {print $2}' <<<"$UUIDS1")
{
  printf 'luks-passphrase %s\n' "$RIG_VAR_PASSPHRASE"
  printf 'host-password %s\n' "$RIG_VAR_HOST_PASSWORD"
  printf 'api-secret %s\n' "$RIG_VAR_SECRET_KEY"
  printf 'hmac-key %s\n' "$RIG_VAR_HMAC_KEY"
  printf 'canary-tree %s\n' "kiln bootable test image"
  printf 'canary-initramfs %s\n' "$luks_uuid"
  printf 'canary-journal %s\n' "_HOSTNAME=kvm-$RIG_SMBIOS_SERIAL"
} | dd of="$RIG_TMP/needles.img" conv=notrunc status=none
rig_job_boot_installed "$NODE_IP" "${BOOT_FROM[@]}" \
  || rig_not_ok "boot 3: the installed system did not report (see its console above)"
T+=("boot 3 (PXE, kiln hands over, secrets check): $RIG_BOOT_SECONDS s")
# the needles go at once
dd if=/dev/zero of="$RIG_TMP/needles.img" bs=1M count=1 conv=notrunc status=none
installed_checks "boot 3"
UUIDS3=$(uuids_from_lsblk)
rig_check "boot 3: md, LUKS, PV and filesystem UUIDs unchanged" test "$UUIDS3" = "$UUIDS1"
[[ $UUIDS3 == "$UUIDS1" ]] || diff <(echo "$UUIDS1") <(echo "$UUIDS3") | sed 's/^/# /'
rig_check "boot 3: the progress record is still boot 1's run" test "$(run_id_installed)" = "$RUN1"
rig_expect_section registration '^marker present' "boot 3: the registration marker of boot 2 is still there"
stub3=$(rig_report_section setup-agent)
rig_check "boot 3: the stub's log of boot 2 is still there, and the agent was not set up again" test "$stub3" = "$stub"
ctl_dump 3
rig_check "boot 3: still exactly one host, Up" test "$(jqc 3 '[.hosts[] | .state] | join(",")')" = Up
rig_check "boot 3: still one addHost in all" test "$(jqc 3 '[.requests[] | select(.command == "addHost")] | length')" = 1
rig_check "boot 3: still one SSH login in all" test "$(jqc 3 '.logins | length')" = 1
# the secrets check, as the installed system ran it
rig_expect_section secrets-grep '^needles 7 ' "boot 3: the secrets check read its 7 patterns"
for c in 'canary-tree.* in /etc/kiln-image$' 'canary-initramfs.* in /boot/initrd\.img-[^:]+:/' 'canary-journal.* in the journal$'; do
  rig_expect_section secrets-grep "^found .*$c" "boot 3: the search finds its canary (${c%%.*})"
done
rig_expect_no_section secrets-grep '^found .*(luks-passphrase|host-password|api-secret|hmac-key)' \
  "boot 3: no secret in the installed system's files, its initramfs or its journal"
rig_report_section secrets-grep | grep -E '^(searched|initramfs|journal|matches|seconds)' | sed 's/^/# /'
raw_hits=$(for i in 0 1 2 3; do grep -a -c -F -f <(rig_job_secrets) "${RIG_DISK[$i]}"; done | paste -sd+ | bc)
rig_check "boot 3: no secret in the raw member disks (/boot, ESPs, headers: $raw_hits matching blocks)" test "$raw_hits" = 0
ctl_dump 3
rig_check "boot 3: no secret on the console, in the reports or in the controller's records" \
  rig_no_secret_in "$RIG_SERIAL" "$RIG_REPORT.all" "$RIG_TMP/dump-3.json"

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
