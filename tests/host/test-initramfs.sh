#!/bin/bash
# initramfs/build.sh: builds (or reuses from the cache) the netboot image and
# checks what is in it: /init, kiln, the tools with their libraries, the
# modules /init loads, lvm.conf without udev, and the 16 MiB limit.
set -euo pipefail
: "${SRC:?}" "${KILN:?}"
[[ ${KILN_SANITIZE:-} == ON ]] && { echo "skip: sanitizer build (the image takes the normal build)"; exit 77; }
[[ $(id -u) == 0 ]] || { echo "skip: needs root"; exit 77; }
for t in zstd cpio depmod apt-get; do command -v $t >/dev/null || { echo "skip: no $t"; exit 77; }; done
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir initramfs

out=$(bash "$SRC/initramfs/build.sh" --kiln "$KILN" 2>"$T/log") || { cat "$T/log"; fail "build.sh failed"; }
cat "$T/log"
img=$(sed -n 's/^KILN_INITRD=//p' <<<"$out")
kernel=$(sed -n 's/^KILN_KERNEL=//p' <<<"$out")
size=$(sed -n 's/^KILN_INITRD_SIZE=//p' <<<"$out")
[[ -s $img && -s $kernel ]] || fail "no image or kernel in: $out"
[[ $size == "$(stat -c %s "$img")" ]] || fail "printed size $size is not the file's"
((size <= 16 * 1024 * 1024)) || fail "image is $size bytes, over 16 MiB"
grep -q "initramfs size: $size bytes" "$T/log" || fail "build.sh did not print the size"

# a second run with the same inputs reuses the image
out2=$(bash "$SRC/initramfs/build.sh" --kiln "$KILN" 2>"$T/log2")
grep -q 'reusing' "$T/log2" || fail "unchanged inputs were rebuilt"
[[ $(sed -n 's/^KILN_INITRD=//p' <<<"$out2") == "$img" ]] || fail "unchanged inputs gave another image"

zstd -dc "$img" | (mkdir "$T/root" && cd "$T/root" && cpio -id --quiet 2>/dev/null)
r=$T/root
for f in init usr/bin/kiln bin/busybox usr/sbin/mdadm usr/sbin/lvm usr/sbin/cryptsetup usr/sbin/mkfs.xfs \
         usr/sbin/mkfs.ext4 usr/sbin/mkswap usr/sbin/blkid usr/sbin/wipefs etc/lvm/lvm.conf \
         usr/share/udhcpc/default.script etc/kiln/modules.load; do
  [[ -e $r/$f || -L $r/$f ]] || fail "'/$f' is missing from the image"
done
strip --strip-unneeded -o "$T/kiln" "$KILN"
cmp -s "$T/kiln" "$r/usr/bin/kiln" || fail "the image's kiln is not '$KILN' (stripped)"
readelf -S "$r/usr/bin/kiln" | grep -q '\.symtab' && fail "the image's kiln has a symbol table (not stripped)"
grep -q 'udev_sync = 0' "$r/etc/lvm/lvm.conf" && grep -q 'obtain_device_list_from_udev = 0' "$r/etc/lvm/lvm.conf" \
  || fail "lvm.conf does not turn udev off"
# every library each binary needs is in the image (resolved inside the image root)
for b in usr/bin/kiln usr/sbin/mdadm usr/sbin/lvm usr/sbin/cryptsetup usr/sbin/mkfs.xfs; do
  for lib in $(objdump -p "$r/$b" 2>/dev/null | awk '/NEEDED/ {print $2}'); do
    [[ -e $r/usr/lib/x86_64-linux-gnu/$lib || -e $r/usr/lib/$lib ]] \
      || fail "'$lib' needed by /$b is not in the image"
  done
done
[[ -e $r/lib64/ld-linux-x86-64.so.2 ]] || fail "no dynamic loader"
# the modules, in load order: each one's dependencies come before it
load=$r/etc/kiln/modules.load
for m in virtio_blk.ko virtio_net.ko md-mod.ko raid10.ko raid1.ko dm-crypt.ko dm-zero.ko xts.ko aesni-intel.ko \
         algif_skcipher.ko af_alg.ko xfs.ko ext4.ko nvme.ko ahci.ko e1000e.ko; do
  grep -q "/$m\$" "$load" || fail "module $m is not loaded by /init"
done
while read -r ko; do [[ -f $r$ko ]] || fail "'$ko' listed but not in the image"; done <"$load"
(( $(grep -n '/md-mod.ko$' "$load" | cut -d: -f1) < $(grep -n '/raid10.ko$' "$load" | cut -d: -f1) )) \
  || fail "raid10 is loaded before md-mod"
(( $(grep -n '/dm-mod.ko$' "$load" | cut -d: -f1) < $(grep -n '/dm-crypt.ko$' "$load" | cut -d: -f1) )) \
  || fail "dm-crypt is loaded before dm-mod"
echo "ok: $img, $size bytes, $(wc -l <"$load") modules"
