#!/bin/bash
# A brand-new Debian root as a tarball, made with mmdebstrap from this
# machine's apt sources and cached by a hash of those sources and the variant:
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
# the key: what decides the root's content (the sources and the variant)
key=$( { echo "$sources"; echo "mmdebstrap --variant=$variant $suite"; } | sha256sum | cut -c1-12)
tarball=$KILN_CACHE_DIR/rootfs-$suite-$variant-$key.tar
if [[ ! -s $tarball ]]; then
  mkdir -p "$KILN_CACHE_DIR"
  tmp=$(cache_tmp "$tarball" .tar)
  trap 'rm -rf "$tmp"' EXIT
  echo "rootfs: making $tarball" >&2
  t0=$SECONDS
  # In its own session: when it fails, mmdebstrap sends SIGHUP to its whole
  # process group, which would otherwise be ctest's and end every test that
  # runs beside this one.
  # One retry: a Debian mirror answering mid-update fails a run now and then;
  # a second failure is final, with the end of mmdebstrap's log.
  log=$KILN_CACHE_DIR/rootfs-$suite-$variant.log
  for try in 1 2; do
    rm -rf "$tmp"
    nice -n 10 setsid --wait mmdebstrap --variant="$variant" --verbose "$suite" "$tmp" - <<<"$sources" >"$log" 2>&1 && break
    echo "rootfs: mmdebstrap --variant=$variant $suite failed (try $try); the end of its log ($log):" >&2
    grep -v '^/var/cache/apt/archives/' "$log" | tail -n 25 | cut -c1-400 >&2
    ((try < 2)) || exit 1
  done
  cache_commit "$tmp" "$tarball"
  trap - EXIT
  echo "rootfs: made in $((SECONDS - t0)) s" >&2
fi
echo "$tarball"
