#!/bin/bash
# The kiln demo, on a fresh Debian 12 as root:
#
#   bash tests/demo.sh
#
# installs the dependencies, builds kiln and the netboot initramfs, then
# netboots one QEMU node (software emulation; QEMU's iPXE, TFTP, and nginx on
# 127.0.0.1 serving the node's spec) with four blank 2 GiB disks, which kiln
# provisions from the encrypted KVM host template
# (templates/kvm-raid10-luks-lvm.yaml: md RAID10 far 2, LUKS2, LVM, XFS).
# At the end it prints what the node's kernel reports: disks, md, LUKS, LVs,
# mounts, and the image, benchmark and registration results when the spec
# has them.
#
# The image is the small test image (initramfs/base-image/build-small.sh),
# the controller the stand-in CloudStack (tests/controller/), both on
# 127.0.0.1. Takes a few minutes; the first run also downloads the Debian
# kernel package.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
T0=$(date +%s)
step() { printf '\n==> %s\n' "$*"; }

step "dependencies (tests/deps.sh)"
bash tests/deps.sh

step "build kiln"
cmake -S . -B out/build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
nice -n 5 cmake --build out/build -j"$(nproc)" 2>&1 | grep -E 'error|warning' || true
export KILN=$SRC/out/build/kiln SRC
[[ -x $KILN ]] || { echo "demo: the build did not produce $KILN"; exit 1; }
"$KILN" version

step "netboot initramfs (initramfs/build.sh)"
bash initramfs/build.sh --kiln "$KILN" | tail -4

step "boot one QEMU node by PXE"
# shellcheck source=rig/lib.sh
. "$SRC/tests/rig/lib.sh"
rig_init
rig_disks 4 2G

# The small base image (built here, with its manifest) and the stand-in
# CloudStack controller on 127.0.0.1, reached by the node through a relay.
rig_small_image
rig_controller
RIG_VAR_PASSPHRASE=$(rig_secret demo-)
RIG_VAR_HOST_PASSWORD=$(rig_secret demo-host-)
# tests/rig/specs/kvm-full.yaml: the template's storage with its image, bench
# and register sections pointed at the demo's servers
rig_spec specs/kvm-full.yaml
"$KILN" validate "$RIG_SPEC"
echo "spec: $RIG_SPEC (storage of templates/kvm-raid10-luks-lvm.yaml)"
booted=0
rig_boot --pxe && booted=1

step "what the node's kernel reports"
if ((booted == 0)) && [[ ! -s $RIG_REPORT ]]; then
  echo "the node sent no report; its console:"; tail -40 "$RIG_SERIAL"; exit 1
fi
rc=$(rig_exit_code)
show() {  # show TITLE SECTION [FILTER-REGEX]
  local title=$1 sec=$2 re=${3:-.} out
  out=$(rig_report_section "$sec" | grep -E -- "$re" || true)
  [[ -n $out ]] || return 0
  printf '\n%s\n' "$title"; sed 's/^/    /' <<<"$out"
}
echo "kiln boot exit code: $rc $( ((rc == 0)) && echo '(success)' || echo '(failed: see the console log above)')"
show "disks and partitions:" partitions 'vd[a-z]'
show "md arrays (/proc/mdstat):" mdstat 'md|blocks'
show "md detail:" mdadm-detail 'Raid Level|Layout|Chunk Size|Active Devices|State :'
show "LUKS:" luksdump '^Version|^Label|Flags|cipher:|sector:|Cipher key|PBKDF:'
show "LVM volume groups (name|PVs|LVs|size|free|extent):" vgs .
show "LVM logical volumes (vg|lv|bytes|active|devices):" lvs .
show "mounted under /target:" mounts ' /target'
show "filesystems:" blkid 'TYPE="(xfs|ext4|vfat|swap)"'
show "target /etc/fstab:" "target /etc/fstab" .
show "target /etc/crypttab:" "target /etc/crypttab" .
show "image (target root):" target-ls .
printf '\nwhat the controller recorded:\n'
rig_controller_dump "$RIG_TMP/controller.json" || true
jq -r '
  (.hosts[] | "    host \(.name // "-") ip \(.ipaddress) hypervisor \(.hypervisor) state \(.state) zone \(.zone_id)"),
  "    webhook events: \(.events | length), reports: \(.reports | length)",
  (.reports[-1].body.bench // {} | to_entries[] | select(.value|type == "number") | "    bench \(.key): \(.value)")' "$RIG_TMP/controller.json" || true
for f in $(rig_report_sections | sed -n 's/^kiln-file //p'); do show "kiln $f:" "kiln-file $f" .; done
cat <<EOF

initramfs: $RIG_INITRD_SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $RIG_INITRD_SIZE/1048576}") MiB)
node: /init at ${RIG_INIT_SECONDS:-?} s of guest uptime, whole guest run $RIG_BOOT_SECONDS s
demo: $(( $(date +%s) - T0 )) s in all; node console log: $RIG_SERIAL (kept with RIG_KEEP=1)
EOF
((rc == 0))
