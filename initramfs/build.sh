#!/bin/bash
# Builds the kiln netboot initramfs for a Debian kernel, in one command:
#
#   initramfs/build.sh [--kiln PATH] [--cache DIR] [--kver VERSION] [--out FILE] [--extra fio]
#
# - the kernel comes from Debian by package name (apt-get download
#   linux-image-KVER, KVER from `apt-cache depends linux-image-amd64`),
#   unpacked with dpkg-deb and indexed with depmod -b (the .deb ships no
#   modules.dep);
# - the modules in initramfs/modules are resolved with
#   `modprobe -d ROOT -S KVER --show-depends`, in load order;
# - kiln, busybox (static) and the tools kiln runs go in with their ldd
#   closures (kiln stripped); /init, lvm.conf and the udhcpc script come
#   from this directory.
#
# Everything is cached under --cache (default /var/cache/kiln, or
# $KILN_CACHE): the kernel .deb, the unpacked kernel, and each image under a
# key that hashes all inputs, so an unchanged rebuild takes a second.
# On stdout, the last lines are machine-readable:
#   KILN_KERNEL=/var/cache/kiln/vmlinuz-6.1.0-57-amd64
#   KILN_INITRD=/var/cache/kiln/initramfs-<key>.img
#   KILN_INITRD_SIZE=<bytes>
# With --extra fio, a second archive with fio and its closure is built
# (KILN_INITRD_EXTRA=...); concatenated after the main image (the kernel
# unpacks both) it adds fio for the benchmark comparison without bloating
# the image nodes boot from.
set -euo pipefail
trap 'echo "initramfs: error: line $LINENO: a command failed (status $?)" >&2' ERR
umask 022
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)

source "$HERE/cache.sh"
CACHE=$KILN_CACHE_DIR
KILN_BIN=${KILN_BINARY:-}
KVER=${KILN_KVER:-}
OUT=
EXTRA=
MAX_SIZE=$((16 * 1024 * 1024))

usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while (($#)); do
  case $1 in
    --kiln) KILN_BIN=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    --kver) KVER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --extra) EXTRA=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "build.sh: unknown option '$1'" >&2; usage 64 >&2 ;;
  esac
done
msg() { echo "initramfs: $*" >&2; }
die() { echo "initramfs: error: $*" >&2; exit 1; }

if [[ -z $KILN_BIN ]]; then
  for c in "$SRC/out/build-static/kiln" "$SRC/out/build/kiln"; do
    [[ -x $c ]] && { KILN_BIN=$c; break; }
  done
fi
[[ -n $KILN_BIN && -x $KILN_BIN ]] || die "no kiln binary: build kiln first or pass --kiln PATH"
KILN_BIN=$(readlink -f "$KILN_BIN")
[[ -z $EXTRA || $EXTRA == fio ]] || die "unknown extra '$EXTRA' (known: fio)"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9                         # the kernel download/unpack is shared; images are not

# --- the kernel -------------------------------------------------------------
if [[ -z $KVER ]]; then
  KVER=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | sed -n 1p)
  if [[ -z $KVER ]]; then
    # an apt index may be missing on a fresh machine
    apt-get update -qq >/dev/null 2>&1 || true
    KVER=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/.*Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | sed -n 1p)
  fi
  if [[ -z $KVER ]]; then     # offline: the newest kernel already in the cache
    KVER=$(ls -1d "$CACHE"/kernel-*/.done 2>/dev/null | sed 's,.*/kernel-\(.*\)/.done,\1,' | sort -V | tail -1)
  fi
  [[ -n $KVER ]] || die "cannot tell the kernel version: apt-cache depends linux-image-amd64 found nothing"
fi
KROOT=$CACHE/kernel-$KVER
if [[ ! -e $KROOT/.done ]]; then
  deb=$(ls -1 "$CACHE"/linux-image-"$KVER"_*.deb 2>/dev/null | tail -1 || true)
  if [[ -z $deb ]]; then
    # downloaded in a private directory and moved into the cache complete
    msg "downloading linux-image-$KVER"
    dl=$(mktemp -d "$CACHE/download.tmp.XXXXXX")
    (cd "$dl" && apt-get download "linux-image-$KVER" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) \
      || { rm -rf "$dl"; die "apt-get download linux-image-$KVER failed"; }
    got=$(ls -1 "$dl"/linux-image-"$KVER"_*.deb 2>/dev/null | tail -1)
    [[ -n $got ]] || { rm -rf "$dl"; die "apt-get download linux-image-$KVER left no .deb"; }
    deb=$CACHE/$(basename "$got")
    mv -f "$got" "$deb"
    rm -rf "$dl"
  fi
  msg "unpacking $(basename "$deb")"
  rm -rf "$KROOT" "$KROOT.tmp"
  mkdir -p "$KROOT.tmp"
  dpkg-deb -x "$deb" "$KROOT.tmp"
  depmod -b "$KROOT.tmp" "$KVER"
  touch "$KROOT.tmp/.done"
  mv "$KROOT.tmp" "$KROOT"
fi
KERNEL=$KROOT/boot/vmlinuz-$KVER
[[ -r $KERNEL ]] || die "kernel image '$KERNEL' is missing"
flock -u 9                      # images build in private stage dirs and land by rename

# --- what goes in ------------------------------------------------------------
MODS=()                     # .ko paths relative to $KROOT, in load order
declare -A seen_mod=()
while read -r line; do
  line=${line%%#*}; line=${line//[[:space:]]/}
  [[ -n $line ]] || continue
  optional=0
  [[ $line == \?* ]] && { optional=1; line=${line#\?}; }
  if ! deps=$(modprobe -d "$KROOT" -S "$KVER" --show-depends "$line" 2>/dev/null); then
    ((optional)) && continue
    die "module '$line' not found in kernel $KVER"
  fi
  while read -r kind path _; do
    [[ $kind == insmod ]] || continue           # "builtin NAME" needs nothing
    rel=${path#"$KROOT"/}
    [[ -n ${seen_mod[$rel]:-} ]] && continue
    seen_mod[$rel]=1
    MODS+=("$rel")
  done <<<"$deps"
done <"$HERE/modules"

TOOLS=(mdadm lvm dmsetup cryptsetup mkfs.xfs mkfs.ext4 mke2fs mkswap mkfs.vfat blkid wipefs)
BINS=("$KILN_BIN")
for t in "${TOOLS[@]}"; do
  p=$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$t") || die "'$t' is not installed (bash tests/deps.sh)"
  BINS+=("$(readlink -f "$p")")
done
BUSYBOX=/bin/busybox
[[ -x $BUSYBOX ]] && file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' \
  || die "a static busybox is needed: apt-get install busybox-static"

# the shared-library closure of a list of ELF files (full paths, unique)
closure() {
  local f
  for f in "$@"; do
    ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' || true
  done | sort -u | while read -r l; do
    # canonical directory (merged /usr), keeping the soname link and its target
    echo "$(readlink -f "$(dirname "$l")")/$(basename "$l")"
    readlink -f "$l"
  done | sort -u
}
LIBS=$(closure "${BINS[@]}")
# glibc dlopen()s libgcc_s for pthread_exit/cancellation (argon2's threads in
# cryptsetup): ldd never lists it, and without it luksOpen aborts
# ("libgcc_s.so.1 must be installed for pthread_exit to work").
# (awk reads to the end: quitting early would SIGPIPE ldconfig, and pipefail
# would then end this script without a word)
gcc_s=$(ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ && !f {print $NF; f = 1}')
[[ -n $gcc_s ]] || die "libgcc_s.so.1 not found (apt-get install libgcc-s1)"
LIBS=$(printf '%s\n%s\n%s\n' "$LIBS" "$(readlink -f "$(dirname "$gcc_s")")/libgcc_s.so.1" "$(readlink -f "$gcc_s")" | sort -u)

EXTRA_BINS=() EXTRA_LIBS=
if [[ $EXTRA == fio ]]; then
  p=$(command -v fio) || die "fio is not installed"
  EXTRA_BINS=("$(readlink -f "$p")")
  EXTRA_LIBS=$(comm -23 <(closure "${EXTRA_BINS[@]}") <(echo "$LIBS"))
fi

# --- cache key: every input's content ---------------------------------------
KEY=$( {
  echo "kver $KVER"
  printf '%s\n' "${MODS[@]}"
  sha256sum "$HERE/build.sh" "$HERE/init" "$HERE/lvm.conf" "$HERE/udhcpc.script" "$HERE/modules" \
            "$BUSYBOX" "${BINS[@]}" $LIBS | sed "s,  $SRC/,  ,"
  printf '%s\n' "${TOOLS[@]}"
} | sha256sum | cut -c1-16)
IMG=$CACHE/initramfs-$KEY.img

build_image() {  # build_image STAGE OUTPUT
  # byte for byte the same from the same inputs, cold or warm: sorted
  # names, owner root, every time stamp the epoch (cpio --reproducible only
  # renumbers inodes and drops device numbers)
  local stage=$1 out=$2 tmp
  tmp=$(cache_tmp "$out" .img)
  find "$stage" -mindepth 1 -exec touch -h -d @0 {} +
  (cd "$stage" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0 --reproducible) \
    | zstd -q -19 -T0 -o "$tmp" -f
  cache_commit "$tmp" "$out"
}

copy_file() {  # copy_file STAGE PATH: copy keeping the path (symlinks kept as symlinks)
  local stage=$1 p=$2
  mkdir -p "$stage$(dirname "$p")"
  cp -a "$p" "$stage$p"
}

if [[ ! -s $IMG ]]; then
  t0=$(date +%s.%N)
  msg "building $IMG (kernel $KVER, ${#MODS[@]} modules, kiln $KILN_BIN)"
  ST=$(mktemp -d "$CACHE/stage.XXXXXX")
  trap 'rm -rf "$ST"' EXIT
  mkdir -p "$ST"/{bin,usr/bin,usr/sbin,usr/lib,usr/lib64,etc/lvm,etc/kiln,proc,sys,dev,run,tmp,target,root,var/lib,usr/share/udhcpc}
  ln -s ../run "$ST/var/run"
  ln -s usr/lib "$ST/lib"         # merged /usr, as on Debian 12
  ln -s usr/lib64 "$ST/lib64"
  ln -s usr/sbin "$ST/sbin"        # kiln_paths: /sbin/mdadm, /sbin/lvm ...
  chmod 1777 "$ST/tmp"
  install -m 0755 "$HERE/init" "$ST/init"
  install -m 0644 "$HERE/lvm.conf" "$ST/etc/lvm/lvm.conf"
  install -m 0755 "$HERE/udhcpc.script" "$ST/usr/share/udhcpc/default.script"
  install -m 0755 "$BUSYBOX" "$ST/bin/busybox"
  ln -s busybox "$ST/bin/sh"
  install -m 0755 "$KILN_BIN" "$ST/usr/bin/kiln"
  # a build tree's kiln carries its symbol table (the dynamic one: 1.1 of its
  # 1.7 MB, 450 KB of the compressed image); /init never needs it
  strip --strip-unneeded "$ST/usr/bin/kiln"
  for b in "${BINS[@]:1}"; do install -m 0755 "$b" "$ST/usr/sbin/$(basename "$b")"; done
  # the names kiln and the operator use, where the binary has another name
  for t in "${TOOLS[@]}"; do
    [[ -e $ST/usr/sbin/$t ]] || ln -s "$(basename "$(readlink -f "$(PATH=/usr/sbin:/usr/bin:/sbin:/bin command -v "$t")")")" "$ST/usr/sbin/$t"
  done
  for l in $LIBS; do copy_file "$ST" "$l"; done
  for f in /etc/mke2fs.conf /etc/ssl/certs/ca-certificates.crt; do
    [[ -r $f ]] && { mkdir -p "$ST$(dirname "$f")"; cp -L "$f" "$ST$f"; }
  done
  printf 'hosts: files dns\n' >"$ST/etc/nsswitch.conf"
  printf '127.0.0.1 localhost\n' >"$ST/etc/hosts"
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ST/etc/passwd"
  printf 'root:x:0:\ndisk:x:6:\n' >"$ST/etc/group"
  : >"$ST/etc/fstab"
  # kernel modules, and the order /init loads them in
  for m in "${MODS[@]}"; do
    mkdir -p "$ST/usr/$(dirname "$m")"
    cp "$KROOT/$m" "$ST/usr/$m"
  done
  mkdir -p "$ST/usr/lib/modules/$KVER"
  cp "$KROOT/lib/modules/$KVER"/modules.{order,builtin,builtin.modinfo} "$ST/usr/lib/modules/$KVER/"
  depmod -b "$ST" "$KVER"
  printf '/%s\n' "${MODS[@]}" >"$ST/etc/kiln/modules.load"
  echo "$KVER" >"$ST/etc/kiln/kernel"
  echo "$KEY" >"$ST/etc/kiln/initramfs"
  build_image "$ST" "$IMG"
  rm -rf "$ST"; trap - EXIT
  msg "built in $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s"
  # keep the cache small: the newest 8 images (the rig copies the one it boots)
  ls -1t "$CACHE"/initramfs-*.img 2>/dev/null | grep -v -- '-extra-' | tail -n +9 | xargs -r rm -f
else
  msg "reusing $IMG (inputs unchanged)"
fi

EXTRA_IMG=
if [[ $EXTRA == fio ]]; then
  EXTRA_IMG=$CACHE/initramfs-extra-fio-$( (sha256sum "${EXTRA_BINS[@]}" $EXTRA_LIBS; echo "$KEY") | sha256sum | cut -c1-16).img
  if [[ ! -s $EXTRA_IMG ]]; then
    ST=$(mktemp -d "$CACHE/stage.XXXXXX")
    trap 'rm -rf "$ST"' EXIT
    mkdir -p "$ST/usr/bin"
    install -m 0755 "${EXTRA_BINS[0]}" "$ST/usr/bin/fio"
    for l in $EXTRA_LIBS; do copy_file "$ST" "$l"; done
    build_image "$ST" "$EXTRA_IMG"
    rm -rf "$ST"; trap - EXIT
  fi
fi

size=$(stat -c %s "$IMG")
mib=$(echo "scale=1; $size / 1048576" | bc)
msg "initramfs size: $size bytes ($mib MiB compressed, limit 16 MiB), kernel $KVER $(stat -c %s "$KERNEL") bytes"
((size <= MAX_SIZE)) || msg "warning: the image is $mib MiB, over the 16 MiB target (tests/host/test-initramfs.sh fails)"
if [[ -n $OUT ]]; then cp "$IMG" "$OUT"; IMG=$(readlink -f "$OUT"); fi
echo "KILN_KERNEL=$KERNEL"
echo "KILN_INITRD=$IMG"
echo "KILN_INITRD_SIZE=$size"
echo "KILN_KVER=$KVER"
[[ -z $EXTRA_IMG ]] || { echo "KILN_INITRD_EXTRA=$EXTRA_IMG"; echo "KILN_INITRD_EXTRA_SIZE=$(stat -c %s "$EXTRA_IMG")"; }
