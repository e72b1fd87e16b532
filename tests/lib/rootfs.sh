#!/bin/bash
# A brand-new Debian root as a tarball, made with mmdebstrap from this
# machine's apt sources and cached by a hash of those sources and this script:
#
#   tests/lib/rootfs.sh VARIANT     # essential | minbase; prints the tarball path
#
# Cached in $KILN_CACHE (default /var/cache/kiln) as
# rootfs-SUITE-VARIANT-KEY.tar, written under cache_tmp's name (which keeps
# the .tar suffix: mmdebstrap picks its output format from the file name, and
# a name without it gives a directory) and renamed into place when complete.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
source "$SRC/initramfs/cache.sh"
variant=${1:?usage: rootfs.sh essential|minbase}
[[ $variant == essential || $variant == minbase ]] || { echo "rootfs.sh: unknown variant '$variant'" >&2; exit 64; }
command -v mmdebstrap >/dev/null || { echo "rootfs.sh: mmdebstrap is missing (bash tests/deps.sh)" >&2; exit 1; }
sources=$(bash "$SRC/initramfs/static/debian-sources.sh" deb)
[[ -n $sources ]] || { echo "rootfs.sh: no Debian apt source on this machine" >&2; exit 1; }
suite=$(awk '{ for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/ && $i ~ /:\/\//) { print $(i + 1); exit } }' <<<"$sources")
key=$( { echo "$sources"; cat "$0"; } | sha256sum | cut -c1-12)
tarball=$KILN_CACHE_DIR/rootfs-$suite-$variant-$key.tar
if [[ ! -s $tarball ]]; then
  mkdir -p "$KILN_CACHE_DIR"
  tmp=$(cache_tmp "$tarball" .tar)
  trap 'rm -rf "$tmp"' EXIT
  echo "rootfs: making $tarball" >&2
  t0=$SECONDS
  nice -n 10 mmdebstrap --variant="$variant" --quiet "$suite" "$tmp" - <<<"$sources" >&2 \
    || { echo "rootfs: mmdebstrap --variant=$variant $suite failed" >&2; exit 1; }
  cache_commit "$tmp" "$tarball"
  trap - EXIT
  echo "rootfs: made in $((SECONDS - t0)) s" >&2
fi
echo "$tarball"
