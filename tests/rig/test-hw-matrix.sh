#!/bin/bash
# The hardware junk boxes have (issue 25), on QEMU's emulated devices, in one
# machine (spec tests/rig/specs/hw-matrix.yaml):
#   disks   nvme0, nvme1 (2 GiB, an NVMe controller each): the system's
#           mirrors; data0, data1 (1 GiB, SATA: ide-hd on an AHCI
#           controller), data2 (1 GiB, SAS: scsi-hd behind an LSI
#           MegaRAID SAS 1078, Linux's megaraid_sas) and data3 (1 GiB,
#           scsi-hd on virtio-scsi): the image store's
#           raid10 f2; usb (1 GiB, usb-storage on xHCI, 8 MiB of random
#           bytes): a stick left in a port, which no rule says
#           `transport: usb` for;
#   NICs    an Intel 82574L (e1000e), the boot NIC (its iPXE ROM
#           netboots); a virtio NIC (taken by its MAC) and an Intel 82540EM
#           (e1000, taken by its name) in an active-backup bond0 that
#           carries cloudbr0; all three on one QEMU hub of the rig's user
#           network.
#   boot 1  netboot (e1000e), kiln installs: its inventory (kiln inventory
#           --json in the netboot initramfs, a report hook) names every
#           disk's transport, serial, sector sizes and by-id names; the plan
#           takes the six disks and leaves the stick; NVMe partitions are
#           nvme0n1p1..p4, 1 MiB aligned;
#   boot 2  from the NVMe disks under SeaBIOS: the installed system reaches
#           multi-user, / on the NVMe mirror, the image store mounted on the
#           SATA+SAS+virtio-scsi raid10, the arrays [UU] and [UUUU],
#           cloudbr0 up on bond0 over the two NICs; then (a disk
#           kiln-failover, rig_failover_disk) the bond's active NIC's link
#           goes down (QMP set_link): the installed system sees the other
#           NIC take over and fetches a file from the rig's nginx through
#           the bond.
# (A boot 3, the same under OVMF, was taken out on 2026-12-03 for CI time:
# an OVMF boot costs 350 s under TCG; UEFI from the disks is test-boot-disks'
# boot 4 and test-hw-4kn's.)
# After each boot the stick is byte for byte what it was.
# Assertions read the netboot initramfs's report, the installed system's
# report and the stick, never kiln's own log.
set -uo pipefail
: "${RIG_TIMEOUT:=1500}"
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
[[ -r /usr/share/qemu/efi-e1000e.rom || -r /usr/lib/ipxe/qemu/efi-e1000e.rom ]] || rig_skip "no e1000e iPXE ROM (ipxe-qemu)"
rig_boot_image
RIG_NIC_MODEL=e1000e
MAC_VIRTIO=52:54:00:6b:69:02 MAC_E1000=52:54:00:6b:69:03  # the bond's members (hw-matrix.yaml)
RIG_NICS=("virtio-net-pci $MAC_VIRTIO" "e1000 $MAC_E1000")
rig_disk --bus nvme nvme0 2G
rig_disk --bus nvme nvme1 2G
rig_disk --bus sata data0 1G
rig_disk --bus sata data1 1G
rig_disk --bus sas data2 1G
rig_disk --bus scsi data3 1G
head -c 8M /dev/urandom >"$RIG_TMP/stick.src" && truncate -s 1G "$RIG_TMP/stick.src"
rig_disk --bus usb usb 1G "$RIG_TMP/stick.src"
STICK=${RIG_DISK[-1]} STICK_SUM=$(rig_sha256 "$STICK")
stick_same() { [[ $(rig_sha256 "$STICK") == "$STICK_SUM" ]]; }

# kiln's own inventory of the machine, from the netboot initramfs
seg=$RIG_TMP/hook-root
mkdir -p "$seg/etc/kiln/report.d"
printf 'kiln inventory --json 2>/dev/null\n' >"$seg/etc/kiln/report.d/40-inventory"
rig_add_initrd_segment "$seg"
rig_spec specs/hw-matrix.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"

# --- boot 1: netboot over the e1000e NIC, install -------------------------------
rig_boot --pxe || rig_die "boot 1: the installation did not finish (see the console above)"
rig_expect_exit 0
rig_report_section "hook 40-inventory" >"$RIG_TMP/inventory.json"
inv() { jq -r "$1" "$RIG_TMP/inventory.json"; }
rig_check "boot 1: kiln inventory --json ran in the netboot initramfs" jq -e '.disks | length > 0' "$RIG_TMP/inventory.json"
# serial -> "path transport logical/physical", as kiln's inventory says
disk_line() { inv ".disks[] | select(.serial == \"$1\") | \"\(.path) \(.transport) \(.logical_sector)/\(.physical_sector)\""; }
by_id() { inv ".disks[] | select(.serial == \"$1\") | .by_id[]?"; }
rig_log "boot 1: the inventory: $(inv '[.disks[] | "\(.path) \(.transport) \(.serial) \(.model) [\(.by_id | join(" "))]"] | join("; ")')"
for s in kiln-nvme0 kiln-nvme1; do
  rig_check "boot 1: $s is an NVMe namespace, 512-byte sectors ($(disk_line $s))" eval '[[ $(disk_line '$s') =~ ^/dev/nvme[0-9]n1\ nvme\ 512/512$ ]]'
  rig_check "boot 1: $s has nvme- by-id names, made without udev ($(by_id $s | paste -sd' '))" eval 'by_id '$s' | grep -q "^nvme-QEMU_NVMe_Ctrl_'$s'$"'
done
for s in kiln-data0 kiln-data1; do
  rig_check "boot 1: $s is a SATA disk ($(disk_line $s))" eval '[[ $(disk_line '$s') =~ ^/dev/sd[a-z]\ sata\ 512/512$ ]]'
  rig_check "boot 1: $s has its ata- by-id name, made without udev ($(by_id $s | paste -sd' '))" eval 'by_id '$s' | grep -q "^ata-QEMU_HARDDISK_'$s'$"'
done
rig_check "boot 1: kiln-data2 is a SCSI disk behind the MegaRAID ($(disk_line kiln-data2))" eval '[[ $(disk_line kiln-data2) =~ ^/dev/sd[a-z]\ scsi\ 512/512$ ]]'
rig_check "boot 1: kiln-data3 is a SCSI disk on virtio-scsi ($(disk_line kiln-data3))" eval '[[ $(disk_line kiln-data3) =~ ^/dev/sd[a-z]\ scsi\ 512/512$ ]]'
rig_check "boot 1: kiln-data3's vendor and model are QEMU's scsi-hd's ($(inv '.disks[] | select(.serial == "kiln-data3") | "\(.vendor) \(.model)"'))" \
  test "$(inv '.disks[] | select(.serial == "kiln-data3") | "\(.vendor)/\(.model)"')" = "QEMU/QEMU HARDDISK"
# SCSI disks get no by-id name without udev (agent/inventory/probe.c synth_by_id)
rig_check "boot 1: kiln-data3 has no by-id name made without udev ($(by_id kiln-data3 | paste -sd' '))" test -z "$(by_id kiln-data3)"
# the NICs: eth0 .. in the netboot initramfs, in the order their drivers load
nic() { inv ".nics[] | select(.mac == \"$1\") | \"\(.name) \(.up)\""; }
rig_log "boot 1: the NICs: $(inv '[.nics[] | "\(.name) \(.mac) up=\(.up)"] | join("; ")')"
rig_check "boot 1: the inventory has the three NICs" test "$(inv '.nics | length')" = 3
rig_check "boot 1: the e1000e ($RIG_MAC) is the NIC with link, the one that booted ($(nic $RIG_MAC))" eval '[[ $(nic $RIG_MAC) == *" true" ]]'
rig_check "boot 1: the e1000 ($MAC_E1000) is eth1, the name the spec's bond member rule takes ($(nic $MAC_E1000))" \
  test "$(nic $MAC_E1000)" = "eth1 false"
rig_check "boot 1: kiln-usb is a USB disk ($(disk_line kiln-usb))" eval '[[ $(disk_line kiln-usb) =~ ^/dev/sd[a-z]\ usb\ 512/512$ ]]'
# what the run took: partition tables on the two NVMe disks, the raid10 on
# the four data disks (its members in mdstat, by kiln's inventory's names)
serial_of() { inv ".disks[] | select(.path == \"/dev/$1\") | .serial"; }
report() { rig_report_section "kiln-file report.json" | jq -r "$1"; }
parted=$(report '[.storage[] | select(.kind == "partitions") | .device] | join(" ")')
rig_check "boot 1: the run partitioned the two NVMe disks ($parted)" \
  test "$(for d in $parted; do serial_of "${d#/dev/}"; done | sort | paste -sd' ')" = "kiln-nvme0 kiln-nvme1"
members=$(rig_report_section mdstat | sed -n 's/^md[0-9]* : active raid10 //p' | grep -Eo 'sd[a-z]+')
rig_check "boot 1: the raid10's members are the SATA, SAS and virtio-scsi disks ($(paste -sd' ' <<<"$members"))" \
  test "$(for d in $members; do serial_of "$d"; done | sort | paste -sd' ')" = "kiln-data0 kiln-data1 kiln-data2 kiln-data3"
# the NVMe partitions, as kiln's inventory read them after the run
parts=$(inv '.disks[] | select(.serial == "kiln-nvme0") | .partitions[] | "\(.path) \(.start)"')
rig_check "boot 1: the NVMe partitions are named nvme0n1p1..p4 ($(cut -d' ' -f1 <<<"$parts" | paste -sd' '))" \
  eval '[[ $(cut -d" " -f1 <<<"$parts" | sed "s|^/dev/nvme[0-9]n1p||" | paste -sd" ") == "1 2 3 4" ]]'
rig_check "boot 1: every NVMe partition starts on a 1 MiB boundary ($(cut -d' ' -f2 <<<"$parts" | paste -sd' '))" \
  eval '[[ -n $parts ]] && ! awk "\$2 % 1048576 { bad = 1 } END { exit !bad }" <<<"$parts"'
rig_check "boot 1: the USB stick is byte for byte what it was" stick_same

# --- boot 2: the installed system from NVMe, SeaBIOS ----------------------------
check_installed() {  # BOOT
  local b=$1
  rig_expect_section system '^multi-user active' "$b: the installed system reached multi-user"
  rig_expect_section findmnt '^/ +/dev/mapper/sys_vg-root ' "$b: / is the root LV"
  rig_expect_section root-stack 'nvme[0-9]n1p4' "$b: / sits on the NVMe mirror"
  rig_expect_section findmnt '^/var/lib/libvirt/images +/dev/md' "$b: the image store is mounted on its array"
  rig_check "$b: the arrays are whole ($(rig_report_section mdstat | grep -Eo '\[[0-9]/[0-9]\] \[[U_]+\]' | paste -sd' '))" \
    eval '[[ $(rig_report_section mdstat | grep -Eo "\[[0-9]/[0-9]\] \[[U_]+\]" | sort | paste -sd" ") == "[2/2] [UU] [2/2] [UU] [2/2] [UU] [4/4] [UUUU]" ]]'
  rig_expect_section ip-addr '^cloudbr0 +UP +10\.0\.2\.15/' "$b: cloudbr0 is up with the node's address"
  # kiln's unit saw it configured (after restarting networkd, if networkd gave up: its lines say so)
  rig_expect_section network-heal '^network up: cloudbr0 configured by systemd-networkd' \
    "$b: kiln-network-heal saw cloudbr0 configured ($(rig_report_section network-heal | grep -c 'restarting it') restart(s) of networkd)"
  # cloudbr0 on bond0, bond0 over the virtio NIC and the e1000 (by their
  # own MACs: a bond gives its members its MAC), the e1000e in neither
  rig_expect_section bridge-ports '^bond0: cloudbr0$' "$b: bond0 is cloudbr0's port"
  rig_check "$b: bond0 has two members, as ports ($(rig_report_section bridge-ports | paste -sd' '))" \
    test "$(rig_report_section bridge-ports | grep -c ': bond0$')" = 2
  rig_expect_section "bonding bond0" '^Bonding Mode: fault-tolerance \(active-backup\)$' "$b: bond0 is active-backup"
  local macs
  macs=$(rig_report_section "bonding bond0" | sed -n 's/^Permanent HW addr: //p' | sort | paste -sd' ')
  rig_check "$b: bond0's members are the virtio NIC and the e1000 ($macs)" test "$macs" = "$MAC_VIRTIO $MAC_E1000"
  rig_check "$b: bond0 and both members have link" test "$(rig_report_section "bonding bond0" | grep -c '^MII Status: up$')" = 3
  # their modules were there before systemd-networkd made them (kiln's
  # modules-load file; networkd's own load timed out under load once)
  rig_expect_section modules-load "^Inserted module 'bonding'$" "$b: systemd-modules-load inserted bonding"
  rig_expect_section modules-load "^Inserted module 'bridge'$" "$b: systemd-modules-load inserted bridge"
  rig_check "$b: the USB stick is byte for byte what it was" stick_same
  # every by-id name kiln made without udev is one the installed system's udev made
  local missing
  missing=$(inv '.disks[].by_id[]?' | grep -vxF -f <(rig_report_section by-id))
  rig_check "$b: udev made every by-id name kiln made without it (not made by udev: ${missing:-none})" test -z "$missing"
}
# after the report: bond0's active NIC's link goes down (rig_bond_failover)
rig_failover_disk
rig_boot_disk --qmp rig_bond_failover || rig_not_ok "boot 2: the installed system did not report (see its console above)"
check_installed "boot 2 (SeaBIOS)"
rig_expect_section lsblk '^nvme0n1 +disk' "boot 2: the installed system sees the NVMe disks"
rig_log "boot 2: QMP: $(grep -v '^{' "$RIG_QMP_LOG" | paste -sd' ')"
before=$(rig_report_section bond-failover | sed -n 's/^active before \([^ ]*\) .*/\1/p')
after=$(rig_report_section bond-failover | sed -n 's/^active after \([^ ,]*\),.*/\1/p')
rig_check "boot 2: the rig took the active NIC's link down ($(grep '^link of' "$RIG_QMP_LOG"))" grep -q '^link of nic[12] (.*) down at' "$RIG_QMP_LOG"
rig_check "boot 2: the other member took over ($(rig_report_section bond-failover | paste -sd'; '))" \
  eval '[[ -n $before && -n $after && $after != "$before" ]]'
rig_expect_section bond-failover-bonding "^Currently Active Slave: $after\$" "boot 2: /proc/net/bonding/bond0 names $after active"
rig_check "boot 2: /proc/net/bonding/bond0 says $before has no link" \
  test "$(rig_report_section bond-failover-bonding | awk -v m="$before" '/^Slave Interface:/ { s = $3 } /^MII Status:/ && s == m { print $3 }')" = down
rig_check "boot 2: traffic flows through the bond after the failover: a file from the rig's nginx ($(rig_report_section bond-failover-http | paste -sd' '))" \
  eval '[[ $(rig_report_section bond-failover-http | paste -sd" ") =~ ^HTTP/1\.[01]\ 200\ .*\ $RIG_FAILOVER_TOKEN$ ]]'
rig_done
