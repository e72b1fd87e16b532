#!/bin/bash
# A finished node boots its installed system and is never reinstalled by
# accident (docs/reinstall.md), on one set of four disks (spec
# tests/rig/specs/boot-tang.yaml, the node PXE-first on every boot):
#   boot 1  netboot: install (RAID1 /boot, raid10 f2 + LUKS2 bound to Tang
#           + LVM + XFS, the bootable image, GRUB), power off;
#   boot 2  netboot again, stopped when /init is about to kexec: kiln looked
#           at the disks read-only: every member disk's sha256 unchanged,
#           no array, mapping or mount left, the decision boot-installed;
#   boot 3  another plan (the root LV 1G instead of 2G): refused, exit 3,
#           every disk's sha256 unchanged;
#   boot 4  another layout (other partitions, wipe: true, no token): refused
#           by the finished-install mark on the disks, exit 3, every disk's
#           sha256 unchanged.
# The kexec into the installed system (its own kernel reporting, with kiln's
# command line and no GRUB) is boots 2 and 3 of tests/rig/test-whole-job.sh,
# and the operator's act (kiln.reinstall=) reinstalling a finished node is
# its boot 4, over the same storage: one boot and one install fewer here.
# Assertions read the guests' reports (/init's and the installed system's),
# the consoles and the disks' hashes; never kiln's log.
set -uo pipefail
# two boots install (the target's update-initramfs under TCG: minutes)
RIG_TIMEOUT=${RIG_TIMEOUT:-1500}
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
rig_boot_image
rig_tang_start
RIG_VAR_PASSPHRASE=$(rig_secret fin-pass-)
rig_disks 4 2G
rig_spec specs/boot-tang.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"
SPEC_SERVED=$RIG_SPEC
cp "$RIG_SPEC" "$RIG_TMP/spec-orig.yaml"
T=()
disks_sum() { sha256sum "${RIG_DISK[@]}" | awk '{print $1}' | tr '\n' ' '; }
nothing_up() {  # /init's report: no array, no dm mapping, nothing mounted under /target
  ! rig_section_has mdstat '^md' && ! rig_report_section mounts | grep -q ' /target' &&
  ! rig_section_has dmsetup-table 'crypt|linear'
}

# --- boot 1: install ----------------------------------------------------------
rig_boot --pxe || rig_die "boot 1: provisioning did not finish"
T+=("boot 1 (netboot, install): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_expect_section mdstat 'raid10' "boot 1: raid10 built"
rig_check "boot 1: an image without the marker: kiln says it runs update-initramfs in the target (console)" \
  grep -aq "image has no generic initramfs marker at $(bash "$SRC/initramfs/base-image/generic-initramfs.sh" --marker): running update-initramfs in the target" "$RIG_SERIAL"
SUM1=$(disks_sum)

# --- boot 2: PXE again, stopped before the kexec --------------------------------
rig_boot --pxe --until 'done: booting the installed system \(kexec\)' \
  || rig_not_ok "boot 2: /init never got to the kexec"
T+=("boot 2 (netboot, look read-only, load the installed kernel): $RIG_BOOT_SECONDS s")
rig_expect_exit 0
rig_expect_section "kiln-file boot-installed.json" '"kernel": ?"/(boot/)?vmlinuz' "boot 2: kiln found the installed kernel"
rig_expect_section "kiln-file boot-installed.json" '"cmdline": ?"root=/dev/mapper/kvm_vg-root ro console=tty0 console=ttyS0,115200n8 ip=::::::dhcp"' \
  "boot 2: the installed command line (root= as GRUB's, then boot.cmdline)"
rig_check "boot 2: no run report (nothing was run)" eval '! rig_report_sections | grep -q "^kiln-file report.json"'
rig_check "boot 2: nothing assembled, opened or mounted when kiln was done" nothing_up
SUM2=$(disks_sum)
rig_check "boot 2: every member disk's sha256 unchanged" test "$SUM2" = "$SUM1"

# --- boot 3: another plan: refused, nothing written -------------------------------
sed 's/{id: root, vg: vg0, size: 2G}/{id: root, vg: vg0, size: 1G}/' "$RIG_TMP/spec-orig.yaml" >"$SPEC_SERVED"
rig_check "boot 3: the served spec is another plan" eval '! cmp -s "$SPEC_SERVED" "$RIG_TMP/spec-orig.yaml"'
SUM3=$(disks_sum)
rig_boot --pxe || rig_not_ok "boot 3: no report"
T+=("boot 3 (netboot, another plan): $RIG_BOOT_SECONDS s")
rig_expect_exit 3
rig_check "boot 3: the console names the refusal" grep -aq 'refusing to apply .*a finished install of another plan' "$RIG_SERIAL"
rig_check "boot 3: nothing assembled, opened or mounted" nothing_up
rig_check "boot 3: every member disk's sha256 unchanged" test "$(disks_sum)" = "$SUM3"

# --- boot 4: another layout, wipe: true, no token: refused by the mark ------------
# (/boot's partitions 192M instead of 256M: the disks no longer hold this
# plan's GPT, so nothing is looked at; the GPT disk GUID every member disk
# got at the end of boot 1, the finished-install mark, stops it)
sed 's/{id: boot, on: d, size: 256M, type: raid}/{id: boot, on: d, size: 192M, type: raid}/' \
  "$RIG_TMP/spec-orig.yaml" >"$SPEC_SERVED"
rig_check "boot 4: the served spec is another layout" eval '! cmp -s "$SPEC_SERVED" "$RIG_TMP/spec-orig.yaml"'
SUM4=$(disks_sum)
rig_boot --pxe || rig_not_ok "boot 4: no report"
T+=("boot 4 (netboot, another layout): $RIG_BOOT_SECONDS s")
rig_expect_exit 3
rig_check "boot 4: the console names the marked disks and the refusal" \
  grep -aq 'refusing to apply .*/dev/vda, /dev/vdb, /dev/vdc, /dev/vdd hold a finished kiln install (installed without a reinstall token; no reinstall token was given); nothing was written; to reinstall on purpose, boot with kiln.reinstall=NEW-TOKEN' "$RIG_SERIAL"
rig_check "boot 4: nothing assembled, opened or mounted" nothing_up
rig_check "boot 4: every member disk's sha256 unchanged" test "$(disks_sum)" = "$SUM4"

rig_log "times under TCG:"; printf 'rig:   %s\n' "${T[@]}" >&2
rig_done
