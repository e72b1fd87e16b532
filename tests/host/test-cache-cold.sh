#!/bin/bash
# Each cache is made the same way cold as warm (initramfs/cache.sh): built
# into an empty cache directory ($KILN_CACHE pointed at a new one), it gives
# what the warm cache holds, under the same name, and leaves no temporary
# file behind. Covered here, where it is cheap:
#   - the rootfs tarball (tests/lib/rootfs.sh essential): a real tar archive
#     named .tar (it once was a directory renamed to .tar), made once;
#   - the netboot initramfs (initramfs/build.sh): cold and warm images are
#     byte for byte the same, kernel package downloaded into the empty cache.
# The static prefix (initramfs/static/build.sh) takes minutes cold; its cold
# path runs whenever its key changes, and run-all.sh prints its time.
set -euo pipefail
((EUID == 0)) || { echo "skip: needs root (apt-get, mmdebstrap)"; exit 77; }
: "${SRC:?}" "${KILN:?}"
source "$SRC/initramfs/cache.sh"
WARM=$KILN_CACHE_DIR

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
no_leftovers() { ! find "$1" -name '*.tmp.*' | grep -q .; }

test_tmpdir cache-cold /var/tmp

# --- the rootfs tarball -----------------------------------------------------
t=$SECONDS
cold=$(KILN_CACHE=$T/rootfs bash "$SRC/tests/lib/rootfs.sh" essential 2>"$T/rootfs.log") \
  || { sed 's/^/#   /' "$T/rootfs.log"; not_ok "rootfs.sh essential into an empty cache"; cold=; }
echo "# rootfs cold: $((SECONDS - t)) s"
if [[ -n $cold ]]; then
  check "the cold tarball lands in the empty cache under its .tar name" bash -c '[[ $1 == "$2"/rootfs-*-essential-*.tar && -f $1 ]]' _ "$cold" "$T/rootfs"
  check "it is a tar archive of a Debian root" bash -c 'tar -tf "$1" | grep -qx "./etc/debian_version"' _ "$cold"
  check "no temporary file is left in the cache" no_leftovers "$T/rootfs"
  t=$SECONDS
  again=$(KILN_CACHE=$T/rootfs bash "$SRC/tests/lib/rootfs.sh" essential 2>"$T/rootfs2.log")
  check "warm: the same file, not made again ($((SECONDS - t)) s)" \
    bash -c '[[ $1 == "$2" ]] && ! grep -q making "$3"' _ "$again" "$cold" "$T/rootfs2.log"
  warm=$(bash "$SRC/tests/lib/rootfs.sh" essential 2>/dev/null) || warm=
  check "cold and warm caches use one name for it" test "$(basename "$cold")" = "$(basename "$warm")"
fi

# --- the netboot initramfs --------------------------------------------------
t=$SECONDS
out=$(KILN_CACHE=$T/initramfs bash "$SRC/initramfs/build.sh" --kiln "$KILN" 2>"$T/initramfs.log") \
  || { tail -n 20 "$T/initramfs.log" | sed 's/^/#   /'; not_ok "initramfs/build.sh into an empty cache"; out=; }
echo "# initramfs cold (kernel download included): $((SECONDS - t)) s"
if [[ -n $out ]]; then
  cold=$(sed -n 's/^KILN_INITRD=//p' <<<"$out")
  check "the cold build downloaded the kernel package into the empty cache" bash -c 'ls "$1"/linux-image-*.deb >/dev/null' _ "$T/initramfs"
  check "no temporary file or directory is left in the cache" no_leftovers "$T/initramfs"
  t=$SECONDS
  wout=$(bash "$SRC/initramfs/build.sh" --kiln "$KILN" 2>"$T/initramfs-warm.log")
  warm=$(sed -n 's/^KILN_INITRD=//p' <<<"$wout")
  echo "# initramfs in the warm cache ($WARM): $((SECONDS - t)) s"
  check "cold and warm images have one name ($(basename "$cold"))" test "$(basename "$cold")" = "$(basename "$warm")"
  check "cold and warm images are byte for byte the same" cmp -s "$cold" "$warm"
fi

checks_done
