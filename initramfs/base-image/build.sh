#!/bin/bash
# Builds the real KVM host base image from Debian packages with mmdebstrap:
#   initramfs/base-image/build.sh OUTDIR [SUITE]
# Writes OUTDIR/kvm-host-SUITE.tar.zst and .sha256 (sha256sum format), for
# the spec's image: {url: …, sha256: …}. Needs root, mmdebstrap, zstd and
# access to the Debian package registry through apt. Big (several hundred
# MB): the tests and the demo use build-small.sh instead.
set -euo pipefail
out=${1:?usage: build.sh OUTDIR [SUITE]}
suite=${2:-bookworm}
command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap is not installed" >&2; exit 1; }
mkdir -p "$out"
img=$out/kvm-host-$suite.tar.zst
pkgs=(
  linux-image-amd64 systemd-sysv udev kmod ifupdown isc-dhcp-client iproute2
  qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients
  mdadm cryptsetup cryptsetup-initramfs lvm2 xfsprogs e2fsprogs dosfstools
  grub-pc grub-efi-amd64-bin initramfs-tools openssh-server ca-certificates
)
# The installed system's initramfs and GRUB are made on the node after the
# image is unpacked (the storage layout is only known there).
mmdebstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
  --customize-hook='echo kvm-host >"$1/etc/hostname"' \
  "$suite" - | zstd -q -T0 -19 -o "$img.tmp" -f
mv -f "$img.tmp" "$img"
(cd "$out" && sha256sum "$(basename "$img")" >"$(basename "$img").sha256")
echo "base image: $img ($(stat -c %s "$img") bytes)"
