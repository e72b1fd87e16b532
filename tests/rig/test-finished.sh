#!/bin/bash
# A finished node boots its installed system and is never reinstalled by
# accident (docs/reinstall.md), on one set of four disks (spec
# tests/rig/specs/boot-tang.yaml, the node PXE-first on every boot):
#   boot 1  netboot: install (RAID1 /boot, raid10 f2 + LUKS2 bound to Tang
#           + LVM + XFS, the bootable image, GRUB), power off (the shared
#           install "boot-tang", tests/rig/fixture-boot-tang.sh: boots 2-4
#           run on qcow2 overlays of its disks);
#   boot 2  netboot again, stopped when /init is about to kexec: kiln looked
#           at the disks read-only: every member disk unchanged, no array,
#           mapping or mount left, the decision boot-installed;
#   boot 3  another plan (the root LV 1G instead of 2G): refused, exit 3,
#           every disk unchanged;
#   boot 4  another layout (other partitions, wipe: true, no token): refused
#           by the finished-install mark on the disks, exit 3, every disk
#           unchanged.
# "Unchanged": each of boots 2-4 runs on a fresh empty qcow2 layer over
# every disk (rig_disk_layer), and after it no layer holds a single written
# byte (rig_disks_unwritten, qemu-img map): stronger than the raw disks'
# sha256 before and after, which a write of the same bytes keeps.
# The kexec into the installed system (its own kernel reporting, with kiln's
# command line and no GRUB) is boots 2 and 3 of tests/rig/test-whole-job.sh,
# and the operator's act (kiln.reinstall=) reinstalling a finished node is
# its boot 4, over the same storage: one boot and one install fewer here.
# Assertions read the guests' reports (/init's and the installed system's),
# the consoles and the disks' hashes; never kiln's log.
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
rig_boot_image
T=()
nothing_up() {  # /init's report: no array, no dm mapping, nothing mounted under /target
  ! rig_section_has mdstat '^md' && ! rig_report_section mounts | grep -q ' /target' &&
  ! rig_section_has dmsetup-table 'crypt|linear'
}

# --- boot 1: install (the shared install) --------------------------------------
rig_fixture_boot boot-tang specs/boot-tang.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"
SPEC_SERVED=$RIG_SPEC
cp "$RIG_SPEC" "$RIG_TMP/spec-orig.yaml"
T+=("boot 1 (netboot, install; the shared install): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_expect_section mdstat 'raid10' "boot 1: raid10 built"

# --- boot 2: PXE again, stopped before the kexec --------------------------------
rig_disk_layer
rig_boot --pxe --until 'done: booting the installed system \(kexec\)' \
  || rig_not_ok "boot 2: /init never got to the kexec"
T+=("boot 2 (netboot, look read-only, load the installed kernel): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_expect_section "kiln-file boot-installed.json" '"kernel": ?"/(boot/)?vmlinuz' "boot 2: kiln found the installed kernel"
rig_expect_section "kiln-file boot-installed.json" '"cmdline": ?"root=/dev/mapper/kvm_vg-root ro console=tty0 console=ttyS0,115200n8 ip=::::::dhcp"' \
  "boot 2: the installed command line (root= as GRUB's, then boot.cmdline)"
rig_check "boot 2: no run report (nothing was run)" eval '! rig_report_sections | grep -q "^kiln-file report.json"'
rig_check "boot 2: nothing assembled, opened or mounted when kiln was done" nothing_up
rig_check "boot 2: every member disk unchanged (nothing written to it)" rig_disks_unwritten

# --- boot 3: another plan: refused, nothing written -------------------------------
sed 's/{id: root, vg: vg0, size: 2G}/{id: root, vg: vg0, size: 1G}/' "$RIG_TMP/spec-orig.yaml" >"$SPEC_SERVED"
rig_check "boot 3: the served spec is another plan" eval '! cmp -s "$SPEC_SERVED" "$RIG_TMP/spec-orig.yaml"'
rig_disk_layer
rig_boot --pxe || rig_not_ok "boot 3: no report"
T+=("boot 3 (netboot, another plan): $RIG_BOOT_SECONDS s")
rig_expect_exit 3
rig_check "boot 3: the console names the refusal" grep -aq 'refusing to apply .*a finished install of another plan' "$RIG_SERIAL"
rig_check "boot 3: nothing assembled, opened or mounted" nothing_up
rig_check "boot 3: every member disk unchanged (nothing written to it)" rig_disks_unwritten

# --- boot 4: another layout, wipe: true, no token: refused by the mark ------------
# (/boot's partitions 192M instead of 256M: the disks no longer hold this
# plan's GPT, so nothing is looked at; the GPT disk GUID every member disk
# got at the end of boot 1, the finished-install mark, stops it)
sed 's/{id: boot, on: d, size: 256M, type: raid}/{id: boot, on: d, size: 192M, type: raid}/' \
  "$RIG_TMP/spec-orig.yaml" >"$SPEC_SERVED"
rig_check "boot 4: the served spec is another layout" eval '! cmp -s "$SPEC_SERVED" "$RIG_TMP/spec-orig.yaml"'
rig_disk_layer
rig_boot --pxe || rig_not_ok "boot 4: no report"
T+=("boot 4 (netboot, another layout): $RIG_BOOT_SECONDS s")
rig_expect_exit 3
rig_check "boot 4: the console names the marked disks and the refusal" \
  grep -aq 'refusing to apply .*/dev/vda, /dev/vdb, /dev/vdc, /dev/vdd hold a finished kiln install (installed without a reinstall token; no reinstall token was given); nothing was written; to reinstall on purpose, boot with kiln.reinstall=NEW-TOKEN' "$RIG_SERIAL"
rig_check "boot 4: nothing assembled, opened or mounted" nothing_up
rig_check "boot 4: every member disk unchanged (nothing written to it)" rig_disks_unwritten

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
