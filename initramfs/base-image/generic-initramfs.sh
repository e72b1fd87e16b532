#!/bin/bash
# Makes the image's initramfs generic, on the build host (an mmdebstrap
# customize hook of build.sh and build-boot.sh: fast, nothing is emulated):
#
#   generic-initramfs.sh ROOT [CONF]
#   generic-initramfs.sh --marker     (prints the marker's path, for the rig)
#
# The initramfs then boots any layout kiln makes without being rebuilt on the
# node: Debian 12's cryptroot, clevis, mdadm and lvm2 hooks always put in
# their tools (cryptsetup, askpass, clevis with curl and jose, mdadm with its
# udev rules and every RAID personality, lvm); what they take from the build
# root's /etc (crypttab, mdadm.conf, the ciphers of open volumes) the node
# adds at install time (agent/apply/initrd.h). Every module the netboot
# initramfs loads (initramfs/modules: its storage and NIC drivers, md, dm,
# the ciphers) goes in through a hook, not loaded until asked for; a required
# one the image's kernel lacks fails the build, and so does one whose dependencies the image left
# out. CONF, if given, is installed as /etc/initramfs-tools/conf.d/kiln.conf
# (the bootable test image's MODULES=list and compression). Last, the marker
# kiln looks for (its path is agent/base/paths.c's generic_initramfs) names
# each kernel and the size of its initrd as built here.
set -euo pipefail
trap 'echo "generic-initramfs.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
root=${1:?usage: generic-initramfs.sh ROOT [CONF]}
conf=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
src=$here/../..
marker=$(sed -n 's/^ *\.generic_initramfs = "\(\/[^"]*\)",$/\1/p' "$src/agent/base/paths.c")
[[ -n $marker ]] || { echo "generic-initramfs.sh: no generic_initramfs in agent/base/paths.c" >&2; exit 1; }
[[ $root == --marker ]] && { echo "$marker"; exit 0; }

if [[ -n $conf ]]; then
  install -D -m 0644 "$conf" "$root/etc/initramfs-tools/conf.d/kiln.conf"
fi
# initramfs-tools' resume hook would otherwise take the build host's largest
# swap (/proc/swaps) as the resume device of every node; kiln's swap has a
# random key (nothing to resume from), and a node's own rebuild keeps this
mkdir -p "$root/etc/initramfs-tools/conf.d"
printf '# kiln: no hibernation resume device (generic-initramfs.sh)\nRESUME=none\n' \
  >"$root/etc/initramfs-tools/conf.d/kiln-resume"
versions=()
for d in "$root"/lib/modules/*/; do
  [[ -e $d/modules.dep ]] && versions+=("$(basename "$d")")
done
((${#versions[@]})) || { echo "generic-initramfs.sh: no kernel in $root" >&2; exit 1; }
# The modules go in through a hook (manual_add_modules), not modules.d: what
# modules.d lists the initramfs also loads on every boot, before its root,
# and loading every driver of initramfs/modules for hardware the node does
# not have took 12 s of each emulated boot (2026-12-06, test-hw-4kn). udev
# loads what the machine has by its modalias; md, dm-crypt, the ciphers and
# the filesystems load on demand (their module aliases), as under MODULES=most.
names=()
while read -r m; do
  m=${m%%#*}; m=${m//[[:space:]]/}
  [[ -n $m ]] || continue
  name=${m#\?}
  for v in "${versions[@]}"; do
    if ! deps=$(modprobe -d "$root" -S "$v" --show-depends "$name" 2>/dev/null); then
      [[ $m == \?* ]] && continue 2
      echo "generic-initramfs.sh: kernel $v has no module $name (initramfs/modules)" >&2; exit 1
    fi
    while read -r kind path _; do
      [[ $kind == insmod && ! -e $path ]] && { echo "generic-initramfs.sh: $name needs ${path#"$root"}, not in the image" >&2; exit 1; }
    done <<<"$deps"
  done
  names+=("$name")
done <"$src/initramfs/modules"
# The hook finds the modules as manual_add_modules does (its two modprobe
# calls), but copies them in one cp and asks modinfo for their firmware once:
# manual_add_modules forks about seven times a module (copy_file's realpath,
# readlink, mkdir and cp; modinfo), 43 s for these 93 modules in a node's own
# update-initramfs under QEMU's emulation (tests/rig/test-boot-disks.sh,
# 2026-12-07). The firmware goes in through initramfs-tools' add_firmware;
# what is not found is not warned about (manual_add_modules warns only for
# modules loaded on the machine that builds).
hook=$root/usr/share/initramfs-tools/hooks/kiln-generic
mkdir -p "$(dirname "$hook")"
{
  echo '#!/bin/sh'
  echo "# written by kiln's generic-initramfs.sh from initramfs/modules: the netboot"
  echo "# initramfs's drivers, put in without loading them at boot"
  echo 'case $1 in prereqs) exit 0 ;; esac'
  echo '. /usr/share/initramfs-tools/hook-functions'
  echo "set -- ${names[*]}"
  cat <<'HOOK'
list=$(mktemp) || exit 1
{ /sbin/modprobe --all --set-version="$version" --ignore-install --quiet --show-depends "$@"
  /sbin/modprobe --all --set-version="$version" --quiet --show-depends "$@"; } |
  awk '$1 == "insmod" { sub("^/lib/", "/usr/lib/", $2); print $2 }' | sort -u >"$list"
xargs -r cp -n --parents -t "$DESTDIR" <"$list" || { rm -f "$list"; exit 1; }
[ "${verbose:-}" = y ] && sed 's/^/Adding module /' "$list"
for fw in $(xargs -r modinfo -k "$version" -F firmware <"$list"); do
  add_firmware "$fw" || true
done
rm -f "$list"
HOOK
} >"$hook"
chmod 0755 "$hook"
chroot "$root" update-initramfs -u -k all
mkdir -p "$root$(dirname "$marker")"
{
  echo "# kiln: the initramfs of these kernels is generic (initramfs/base-image/generic-initramfs.sh);"
  echo "# kernel version, size of /boot/initrd.img-VERSION as built"
  for v in "${versions[@]}"; do
    echo "$v $(stat -c %s "$root/boot/initrd.img-$v")"
  done
} >"$root$marker"
