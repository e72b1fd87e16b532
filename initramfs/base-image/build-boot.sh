#!/bin/bash
# Builds the small BOOTABLE base image for the rig and the demo, from Debian
# packages with mmdebstrap (minbase, no docs, man pages or translations,
# only the kernel modules a QEMU guest loads):
#
#   initramfs/base-image/build-boot.sh OUTDIR [SUITE]
#
# Writes OUTDIR/boot-SUITE.tar.zst and OUTDIR/boot-SUITE.tar.zst.sha256
# (sha256sum format) and prints, last, machine-readable lines:
#   KILN_BOOT_IMAGE=OUTDIR/boot-bookworm.tar.zst
#   KILN_BOOT_IMAGE_SHA256=<hex>
#   KILN_BOOT_IMAGE_SIZE=<bytes>
#
# The image holds what a provisioned node needs to boot its own disks:
# Debian's kernel, systemd, udev, initramfs-tools, mdadm, lvm2,
# cryptsetup-initramfs, clevis (luks, initramfs: Tang unlock in the
# initramfs), xfsprogs, e2fsprogs, GRUB for BIOS and UEFI (grub-pc-bin,
# grub-efi-amd64-bin), openssh-server and iproute2; plus a unit that, once
# multi-user is reached (and the first-boot registration has run), writes
# what the installed system sees to the second serial port and powers off
# (boot/kiln-report), and a stub /usr/bin/cloudstack-setup-agent
# (cloudstack-agent is not in Debian) that records how CloudStack's
# management server ran it over SSH. Its initramfs is generic, built here
# (generic-initramfs.sh, with boot/initramfs-test.conf), and marked so: kiln's
# boot-loader step appends the node's crypttab and mdadm.conf to it and
# installs GRUB after the image is unpacked.
#
# Cached in /var/cache/kiln (or $KILN_CACHE) in two layers, each under a
# hash of its inputs: the package root (suite, packages, dpkg filters, the
# apt sources' contents, mmdebstrap's version) and the image (that root plus
# the files in boot/), so editing the report unit costs a repack, not a
# mmdebstrap run. Files are written under a temporary name that keeps their
# suffix (NAME.tmp.PID.tar.zst) and renamed into place only when complete
# (initramfs/cache.sh).
# Needs root and this host's apt sources (sources.sh). KILN_BOOT_ZSTD_LEVEL
# sets the compression (default 9).
set -euo pipefail
tmp= stage=
trap 'echo "build-boot.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
trap 'rm -rf ${tmp:+"$tmp"} ${stage:+"$stage"}' EXIT
umask 022
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build-boot.sh OUTDIR [SUITE]}
suite=${2:-bookworm}
[[ $(id -u) == 0 ]] || { echo "build-boot.sh: needs root (mmdebstrap, owners)" >&2; exit 77; }
for t in mmdebstrap zstd tar sha256sum flock; do
  command -v "$t" >/dev/null || { echo "build-boot.sh: '$t' is missing (bash tests/deps.sh)" >&2; exit 1; }
done
. "$here/sources.sh"
. "$here/../cache.sh"
cache=$KILN_CACHE_DIR
level=${KILN_BOOT_ZSTD_LEVEL:-9}
mkdir -p "$cache" "$out"
msg() { echo "build-boot: $*" >&2; }

pkgs=(
  linux-image-amd64 systemd-sysv udev kmod initramfs-tools zstd
  mdadm lvm2 cryptsetup-initramfs clevis clevis-luks clevis-initramfs
  xfsprogs e2fsprogs dosfstools
  grub2-common grub-pc-bin grub-efi-amd64-bin
  openssh-server iproute2
)
# Text nobody reads in a test guest, and every kernel module but what a
# QEMU guest with virtio disks and NIC, kiln's storage stack and its host
# network (bridge, VLAN, bond) load: the
# kernel package alone is 400 MB unpacked, its modules 396 MB (dpkg matches
# the package's own paths, /lib/..., and the last matching pattern wins).
# Files, not directories, are excluded: dpkg cannot make a directory below
# an excluded one (usr/share/locale/be@latin/LC_MESSAGES). The real host
# image (build.sh) keeps every module.
excludes=(
  '/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*/LC_MESSAGES/*.mo'
  '/lib/modules/*/kernel/*'
)
m=/lib/modules/*/kernel
includes=(
  '/usr/share/doc/*/copyright'
  "$m/arch/*" "$m/virt/*" "$m/crypto/*" "$m/lib/*" "$m/block/*"
  "$m/drivers/block/*" "$m/drivers/md/*" "$m/drivers/virtio/*" "$m/drivers/char/*"
  "$m/drivers/ata/*" "$m/drivers/nvme/*" "$m/drivers/firmware/*" "$m/drivers/acpi/*"
  "$m/drivers/scsi/scsi_mod.ko" "$m/drivers/scsi/scsi_common.ko" "$m/drivers/scsi/sd_mod.ko"
  "$m/drivers/scsi/virtio_scsi.ko" "$m/drivers/net/virtio_net.ko" "$m/drivers/net/net_failover.ko"
  "$m/net/core/*" "$m/net/packet/*"
  # the host network kiln writes (systemd-networkd): bridges (cloudbr0),
  # VLANs and bonds, with what they load
  "$m/net/bridge/*" "$m/net/802/*" "$m/net/llc/*" "$m/net/8021q/*" "$m/net/tls/*" "$m/drivers/net/bonding/*"
  "$m/fs/xfs/*" "$m/fs/ext4/*" "$m/fs/jbd2/*" "$m/fs/mbcache.ko" "$m/fs/fat/*" "$m/fs/nls/*"
  "$m/fs/efivarfs/*" "$m/fs/autofs/*" "$m/fs/binfmt_misc.ko"
  # what those of initramfs/modules below need (generic-initramfs.sh fails
  # the build when one is missing)
  "$m/drivers/scsi/raid_class.ko" "$m/drivers/scsi/scsi_transport_sas.ko" "$m/drivers/dca/*"
  "$m/drivers/i2c/algos/*" "$m/drivers/net/mdio.ko" "$m/drivers/net/phy/*" "$m/net/xfrm/xfrm_algo.ko"
  # the USB host and storage drivers' own (usbcore, xhci_hcd, ehci_hcd):
  # without them the installed system never sees a USB stick
  "$m/drivers/usb/common/*" "$m/drivers/usb/core/*" "$m/drivers/usb/host/*" "$m/drivers/usb/storage/*"
)
# every module the netboot initramfs loads (its storage and NIC drivers):
# the generic initramfs has them all (generic-initramfs.sh); a module name's
# '_' is '-' in some file names
while read -r name; do
  name=${name%%#*}; name=${name//[[:space:]]/}; name=${name#\?}
  [[ -n $name ]] && includes+=("$m/*/${name//_/[-_]}.ko")
done <"$here/../modules"
dpkgopts=()
for e in "${excludes[@]}"; do dpkgopts+=(--dpkgopt="path-exclude=$e"); done
for e in "${includes[@]}"; do dpkgopts+=(--dpkgopt="path-include=$e"); done

# --- layer 1: the package root ------------------------------------------------
key1=$( {
  echo "kiln boot image root v1 $suite merged-usr hook"
  mmdebstrap --version
  printf 'pkg %s\n' "${pkgs[@]}"
  printf 'opt %s\n' "${dpkgopts[@]}"
  for s in "${sources[@]}"; do echo "source $s"; cat "$s"; done
  # the generic initramfs: its script, the module list and conf it reads,
  # and where the marker goes (agent/base/paths.c)
  cat "$here/generic-initramfs.sh" "$here/../modules" "$here/boot/initramfs-test.conf"
  grep generic_initramfs "$here/../../agent/base/paths.c"
} | sha256sum | cut -c1-16)
root=$cache/boot-root-$suite-$key1.tar.zst
exec 9>"$cache/.lock-boot-image"
flock 9             # one build at a time: a second caller waits, then reuses it
if [[ ! -s $root ]]; then
  tmp=$(cache_tmp "$root" .tar.zst)
  rm -f "$tmp"
  msg "mmdebstrap $suite (${#pkgs[@]} packages, minbase): a few minutes"
  t0=$(date +%s)
  # Debian's kernel and GRUB packages need no answers; no recommends
  # (mmdebstrap's default), no apt lists or sources left behind
  # merged /usr set up by mmdebstrap's own hook: no usrmerge, so no perl
  # its own session: on failure mmdebstrap sends SIGHUP to its process group
  setsid --wait mmdebstrap --variant=minbase --include="$(IFS=,; echo "${pkgs[*]}")" "${dpkgopts[@]}" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='Apt::Install-Recommends "false"' \
    --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
    --customize-hook="$here/generic-initramfs.sh \"\$1\" $here/boot/initramfs-test.conf" \
    --customize-hook='rm -f "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb' \
    "$suite" - "${sources[@]}" | zstd -q -T0 -3 -o "$tmp" -f
  cache_commit "$tmp" "$root"; tmp=
  msg "package root: $(stat -c %s "$root") bytes in $(( $(date +%s) - t0 )) s"
fi

# --- layer 2: the image (root + the report unit and its friends) --------------
key2=$( {
  echo "kiln boot image v1 $key1 level $level"
  cat "$0" "$here"/boot/*        # contents, not names: the key must not depend on the path
} | sha256sum | cut -c1-16)
img=$cache/boot-$suite-$key2.tar.zst
if [[ ! -s $img ]]; then
  t0=$(date +%s)
  stage=$(mktemp -d "$cache/boot-stage.XXXXXX")
  o=$stage/overlay
  install -D -m 0755 "$here/boot/kiln-report" "$o/usr/local/sbin/kiln-report"
  # the marker's path has one home (agent/base/paths.c, read by generic-initramfs.sh)
  sed -i "s|^GENERIC_MARKER=.*|GENERIC_MARKER=$(bash "$here/generic-initramfs.sh" --marker)|" "$o/usr/local/sbin/kiln-report"
  install -D -m 0755 "$here/boot/cloudstack-setup-agent" "$o/usr/bin/cloudstack-setup-agent"
  install -D -m 0644 "$here/boot/kiln-report.service" "$o/etc/systemd/system/kiln-report.service"
  install -D -m 0644 "$here/boot/ssh-keygen.conf" "$o/etc/systemd/system/ssh.service.d/kiln-keygen.conf"
  install -D -m 0644 "$here/boot/sshd-hostkey.conf" "$o/etc/ssh/sshd_config.d/kiln-hostkey.conf"
  install -D -m 0644 "$here/boot/journald-persistent.conf" "$o/etc/systemd/journald.conf.d/kiln-test-image.conf"
  install -D -m 0644 "$here/boot/networkd-debug.conf" "$o/etc/systemd/system/systemd-networkd.service.d/kiln-debug.conf"
  mkdir -p "$o/etc/systemd/system/multi-user.target.wants"
  ln -s /etc/systemd/system/kiln-report.service "$o/etc/systemd/system/multi-user.target.wants/kiln-report.service"
  echo kiln-boot >"$o/etc/hostname"
  echo "kiln bootable test image $suite $key2" >"$o/etc/kiln-image"
  # the root's tar plus the overlay's files (no directory entries: the
  # root's own stay as they are): GNU tar appends to an uncompressed archive
  zstd -q -dc "$root" >"$stage/image.tar"
  (cd "$o" && find . ! -type d | sort) >"$stage/list"
  # the root's hostname is replaced: delete it first, then append
  tar --delete -f "$stage/image.tar" ./etc/hostname 2>/dev/null || true
  tar -C "$o" --numeric-owner --owner=0 --group=0 --mtime=@1700000000 --no-recursion \
    -rf "$stage/image.tar" -T "$stage/list"
  tmp=$(cache_tmp "$img" .tar.zst)
  zstd -q -T0 -"$level" "$stage/image.tar" -o "$tmp" -f
  rm -rf "$stage"; stage=
  cache_commit "$tmp" "$img"; tmp=
  msg "image: $(stat -c %s "$img") bytes in $(( $(date +%s) - t0 )) s (zstd -$level)"
  # older images and package roots of this suite go
  for f in "$cache"/boot-"$suite"-*.tar.zst "$cache"/boot-root-"$suite"-*.tar.zst; do
    [[ $f == "$img" || $f == "$root" || $f == *.tmp.* ]] || rm -f "$f"
  done
fi
flock -u 9

name=boot-$suite.tar.zst
tmp=$(cache_tmp "$out/$name" .tar.zst)
cp "$img" "$tmp"
cache_commit "$tmp" "$out/$name"; tmp=
sha=$(sha256sum "$out/$name" | cut -d' ' -f1)
echo "$sha  $name" >"$out/$name.sha256.tmp.$$" && mv -f "$out/$name.sha256.tmp.$$" "$out/$name.sha256"
echo "KILN_BOOT_IMAGE=$out/$name"
echo "KILN_BOOT_IMAGE_SHA256=$sha"
echo "KILN_BOOT_IMAGE_SIZE=$(stat -c %s "$out/$name")"
