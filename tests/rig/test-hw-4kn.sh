#!/bin/bash
# 4Kn disks (issue 25): two virtio disks with 4096-byte logical and physical
# sectors (spec tests/rig/specs/hw-4kn.yaml: RAID1 /boot, ESP and system,
# LUKS2 with 4096-byte sectors bound to Tang, LVM, XFS):
#   boot 1  netboot with `firmware: both`: refused before any write (exit 3,
#           the reason names each disk; no disk written): SeaBIOS never
#           started GRUB from these disks (its first run: the console stayed
#           empty for 15 minutes), so kiln does not install a BIOS boot there;
#   boot 2  netboot with `firmware: uefi`, kiln installs: its inventory says
#           4096/4096, the partitions are 1 MiB aligned, the LUKS sector is
#           4096;
#   boot 3  from the disks under OVMF: multi-user, / the root LV; cloudbr0
#           up with the node's address over the second NIC, the one the
#           spec takes by its MAC (a virtio NIC beside the e1000e boot NIC,
#           on one QEMU hub), and the boot NIC in no bridge.
# Assertions read the netboot initramfs's and the installed system's reports.
set -uo pipefail
: "${RIG_TIMEOUT:=1500}"
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
[[ -r /usr/share/qemu/efi-e1000e.rom || -r /usr/lib/ipxe/qemu/efi-e1000e.rom ]] || rig_skip "no e1000e iPXE ROM (ipxe-qemu)"
rig_boot_image
rig_tang_start
RIG_NIC_MODEL=e1000e
MAC_SECOND=52:54:00:6b:69:02            # cloudbr0's NIC (hw-4kn.yaml)
RIG_NICS=("virtio-net-pci $MAC_SECOND")
RIG_VAR_PASSPHRASE=$(secret k4-)
rig_disk --bus virtio:4k disk0 2G
rig_disk --bus virtio:4k disk1 2G
seg=$RIG_TMP/hook-root
mkdir -p "$seg/etc/kiln/report.d"
printf 'kiln inventory --json 2>/dev/null\n' >"$seg/etc/kiln/report.d/40-inventory"
rig_add_initrd_segment "$seg"
RIG_VAR_FIRMWARE=both
rig_spec specs/hw-4kn.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"
rig_disk_layer
rig_boot --pxe || rig_die "boot 1: the guest did not finish (see the console above)"
rig_expect_exit 3
for d in vda vdb; do
  rig_check "boot 1: the refusal names /dev/$d and why" \
    grep -aqF "boot firmware 'both' needs BIOS boot from /dev/$d, which has 4096-byte logical sectors: GRUB's BIOS boot reads 512-byte sectors, so a 4Kn disk boots only by UEFI (firmware: uefi)" "$RIG_SERIAL"
done
rig_check "boot 1: nothing was written to either disk" rig_disks_unwritten

RIG_VAR_FIRMWARE=uefi
rig_spec specs/hw-4kn.yaml
rig_boot --pxe || rig_die "boot 2: the installation did not finish (see the console above)"
rig_expect_exit 0
rig_report_section "hook 40-inventory" >"$RIG_TMP/inventory.json"
inv() { jq -r "$1" "$RIG_TMP/inventory.json"; }
rig_check "boot 2: both disks are 4Kn ($(inv '[.disks[] | "\(.path) \(.logical_sector)/\(.physical_sector)"] | join(", ")'))" \
  test "$(inv '[.disks[] | "\(.logical_sector)/\(.physical_sector)"] | join(" ")')" = "4096/4096 4096/4096"
parts=$(inv '.disks[0].partitions[] | "\(.path) \(.start)"')
rig_check "boot 2: every partition starts on a 1 MiB boundary ($(cut -d' ' -f2 <<<"$parts" | paste -sd' '))" \
  eval '[[ $(wc -l <<<"$parts") == 4 ]] && ! awk "\$2 % 1048576 { bad = 1 } END { exit !bad }" <<<"$parts"'
rig_check "boot 2: the LUKS2 volume has 4096-byte sectors (its luksDump)" \
  eval 'sed -n "/^--- luksdump /,/^--- dmsetup/p" "$RIG_REPORT" | grep -Eq "sector: +4096 \[bytes\]"'

if rig_boot_disk --uefi; then
  rig_expect_section system '^multi-user active' "boot 3 (OVMF): the installed system reached multi-user from the 4Kn disks"
  rig_expect_section findmnt '^/ +/dev/mapper/sys_vg-root ' "boot 3 (OVMF): / is the root LV"
  # QEMU's DHCP leases 10.0.2.15 up, one address per MAC, first come first
  # served: the initramfs's ipconfig (ip=::::::dhcp, for Tang) asks on both
  # NICs, and whichever asked first holds .15 (the e1000e, since its link is
  # up before ipconfig asks: kiln-links-up)
  rig_expect_section ip-addr '^cloudbr0 +UP +10\.0\.2\.1[5-9]/' "boot 3 (OVMF): cloudbr0 is up with an address from the rig's DHCP"
  port=$(rig_report_section bridge-ports | sed -n 's/: cloudbr0$//p')
  rig_check "boot 3 (OVMF): cloudbr0's one port is the NIC with MAC $MAC_SECOND ($(rig_report_section bridge-ports | paste -sd' '); $(rig_report_section ip-link | paste -sd' '))" \
    eval '[[ $(wc -w <<<"$port") == 1 ]] && rig_section_has ip-link "^$port(@[^ ]*)? +[A-Z]+ +$MAC_SECOND "'
  # the NIC with the boot MAC (a bridge on it carries that MAC too)
  boot_nic=$(rig_report_section ip-link | awk -v m="$RIG_MAC" '$3 == m && $1 != "cloudbr0" { sub(/@.*/, "", $1); print $1 }')
  rig_check "boot 3 (OVMF): the e1000e boot NIC (${boot_nic:-none has $RIG_MAC}) is in no bridge" \
    eval '[[ -n $boot_nic ]] && ! rig_section_has bridge-ports "^$boot_nic:"'
else
  rig_not_ok "boot 3 (OVMF): the installed system did not report"
fi
rig_done
