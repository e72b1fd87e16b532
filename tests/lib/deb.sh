#!/bin/bash
# One Debian package as its .deb, from this machine's apt sources, cached:
#
#   tests/lib/deb.sh PACKAGE        # prints the path of the .deb
#
# The file is the archive's own (apt-get download checks it against the
# signed index) under apt's name for the candidate version,
# PACKAGE_VERSION_ARCH.deb, so a cold cache and a warm one hold the same
# bytes, and a new version in the archive is a new entry. Cached in
# $KILN_CACHE (default /var/cache/kiln) as deb/PACKAGE_VERSION_ARCH.deb,
# written under cache_tmp's name and renamed into place when complete
# (initramfs/cache.sh). For tests that add a package to a Debian root made
# by rootfs.sh (dpkg --root), where a whole new root would cost a mmdebstrap
# run for one small package.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../../initramfs/cache.sh"
pkg=${1:?usage: deb.sh PACKAGE}
candidate() { apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: //p'; }
ver=$(candidate)
if [[ -z $ver || $ver == "(none)" ]]; then
  apt-get update -qq >/dev/null 2>&1 || true     # an apt index may be missing on a fresh machine
  ver=$(candidate)
fi
[[ -n $ver && $ver != "(none)" ]] || { echo "deb.sh: no version of '$pkg' in this machine's apt sources" >&2; exit 1; }
arch=$(apt-cache show "$pkg=$ver" | sed -n 's/^Architecture: //p' | sed -n 1p)
name=${pkg}_${ver//:/%3a}_$arch.deb              # apt's file name: an epoch's ':' is written %3a
dir=$KILN_CACHE_DIR/deb
final=$dir/$name
if [[ ! -s $final ]]; then
  mkdir -p "$dir"
  dl=$(mktemp -d "$dir/download.tmp.XXXXXX")
  trap 'rm -rf "$dl"' EXIT
  (cd "$dl" && apt-get download "$pkg=$ver" >"$dl/log" 2>&1) \
    || { grep -v '^W: Download is performed unsandboxed' "$dl/log" >&2; echo "deb.sh: apt-get download $pkg=$ver failed" >&2; exit 1; }
  [[ -s $dl/$name ]] || { echo "deb.sh: apt-get download $pkg=$ver left no $name" >&2; exit 1; }
  tmp=$(cache_tmp "$final" .deb)
  mv -f "$dl/$name" "$tmp"
  cache_commit "$tmp" "$final"
fi
echo "$final"
