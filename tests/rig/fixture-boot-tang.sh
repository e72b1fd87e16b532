#!/bin/bash
# The shared install "boot-tang" (ctest: rig/fixture-boot-tang, the
# FIXTURES_SETUP of tests/rig/test-boot-disks.sh and test-finished.sh, which
# boot qcow2 overlays of it: rig_fixture_boot in tests/rig/lib.sh): one
# netboot installs spec tests/rig/specs/boot-tang.yaml on four blank 2 GiB
# disks (RAID1 /boot + RAID1 ESP + raid10 f2 + LUKS2 bound to a fresh Tang
# + LVM + XFS, the bootable image, GRUB for both firmwares) and powers off;
# when kiln exited 0 with a complete report, the disks, the Tang keys, the
# served spec and the boot's report and console go to
# RIG_FIXTURES/boot-tang (default BUILD/rig-fixtures). What the install
# must have done is checked by the tests that use it, on this boot's report.
set -uo pipefail
# an install boot (the target's update-initramfs under TCG: minutes)
RIG_TIMEOUT=${RIG_TIMEOUT:-1500}
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
[[ -n ${RIG_FIXTURES:-} ]] || rig_skip "no RIG_FIXTURES (nor BUILD): nowhere to keep the install"
rig_boot_image
rig_tang_start
RIG_VAR_PASSPHRASE=$(secret tang-pass-)
rig_disks 4 2G
rig_spec specs/boot-tang.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"

rig_boot --pxe || rig_die "the install did not finish (see the console above)"
rig_expect_exit 0
((RIG_FAILS == 0)) || rig_die "the install failed: nothing shared"
rig_fixture_publish boot-tang specs/boot-tang.yaml
rig_done
