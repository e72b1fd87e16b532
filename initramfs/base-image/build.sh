#!/bin/bash
# Builds the real KVM host base image from Debian packages with mmdebstrap:
#   initramfs/base-image/build.sh OUTDIR [SUITE]
# Writes OUTDIR/kvm-host-SUITE.tar.zst and .sha256 (sha256sum format), for
# the spec's image: {url: …, sha256: …}. Needs root and the host's apt
# sources (the Debian package registry this host already uses: every enabled
# /etc/apt/sources.list{,.d/*.list,.d/*.sources} is handed to mmdebstrap, so no
# mirror is named here; KILN_BASE_SOURCES="FILE…" overrides). Installs
# mmdebstrap and zstd with apt-get when missing. Big (several hundred MB):
# the tests and the demo use build-small.sh instead. The image ships without
# apt sources (the node's operator configures its own) and without SSH host
# keys (made on first boot).
set -euo pipefail
trap 'echo "build.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
out=${1:?usage: build.sh OUTDIR [SUITE]}
suite=${2:-bookworm}
need=()
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
command -v zstd >/dev/null || need+=(zstd)
if ((${#need[@]})); then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2
fi
. "$(cd "$(dirname "$0")" && pwd)/sources.sh"
mkdir -p "$out"
img=$out/kvm-host-$suite.tar.zst
source "$(dirname "$0")/../cache.sh"
tmp=$(cache_tmp "$img" .tar.zst)
pkgs=(
  linux-image-amd64 systemd-sysv udev kmod ifupdown isc-dhcp-client iproute2
  qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients
  mdadm cryptsetup cryptsetup-initramfs lvm2 xfsprogs e2fsprogs dosfstools
  grub-pc grub-pc-bin grub-efi-amd64-bin grub2-common initramfs-tools openssh-server ca-certificates
  clevis clevis-luks clevis-initramfs
)
# The image's initramfs is generic, built here (generic-initramfs.sh: every
# module the netboot initramfs has, mdadm, LVM, cryptsetup and clevis) and
# marked so: kiln appends the node's crypttab and mdadm.conf to it and
# installs GRUB on the node after the image is unpacked: GRUB for both
# firmwares (grub-pc-bin, grub-efi-amd64-bin) and clevis's LUKS and
# initramfs parts, which unlock the disks through Tang at boot, as in the
# bootable test image (build-boot.sh). sshd makes its host keys on its
# first start (boot/ssh-keygen.conf).
setsid --wait mmdebstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*/LC_MESSAGES/*.mo' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
  --customize-hook="$(cd "$(dirname "$0")" && pwd)/generic-initramfs.sh \"\$1\"" \
  --customize-hook='mkdir -p "$1/etc/systemd/system/ssh.service.d"' \
  --customize-hook="upload $(cd "$(dirname "$0")" && pwd)/boot/ssh-keygen.conf /etc/systemd/system/ssh.service.d/kiln-keygen.conf" \
  --customize-hook='echo kvm-host >"$1/etc/hostname"' \
  --customize-hook='rm -f "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  "$suite" - "${sources[@]}" | zstd -q -T0 -"${KILN_BASE_ZSTD_LEVEL:-12}" -o "$tmp" -f
cache_commit "$tmp" "$img"
(cd "$out" && sha256sum "$(basename "$img")" >"$(basename "$img").sha256")
echo "base image: $img ($(stat -c %s "$img") bytes)"
