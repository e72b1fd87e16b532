#!/bin/bash
# Swap encrypted with a fresh random key at every boot (filesystems[].encrypt:
# random) on a real loop disk: kiln formats nothing there, the old
# filesystem that sat where the swap partition now is is gone (Debian's
# cryptdisks refuses a plain-mode source with a signature; on a partition the
# partition step already clears stale signatures, the swap step's own clear
# is what covers md and LV, which need the rig), and it writes crypttab naming
# the partition by the PARTUUID its GPT holds (never /dev/loopN) and fstab on
# /dev/mapper/NAME. Assertions read the disk (blkid) and the target's files.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup parted blkid mkfs.xfs mkfs.ext4
. "$SRC/tests/lib/loop.sh"
loop_init swaprandom
source "$SRC/tests/lib/spec.sh"

truncate -s 400M "$T/a.img"
attach "$T/a.img"; A=$ATTACHED
# the old layout: a GPT with one partition further on, and an ext4 left
# outside any partition exactly where the swap partition will be (the wipe
# step does not see it: no partition holds it)
truncate -s 32M "$T/old.img" && mkfs.ext4 -q -F -L oldfs "$T/old.img" || exit 1
dd if="$T/old.img" of="$A" bs=1M seek=1 conv=notrunc status=none || exit 1
parted -s "$A" mklabel gpt mkpart old 100MiB 200MiB || exit 1
[[ $(blkid -p -o value -s TYPE --offset $((1 << 20)) "$A") == ext4 ]] || not_ok "the old ext4 is not at 1 MiB"
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"
spec_write "$T/spec.yaml" random-swap finish -- HOSTNAME=swap-test DISK="$A" FINISH=none
out=$("$KILN" apply --yes "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] || { not_ok "apply exited $rc: $out"; checks_done; }
sig=$(blkid -p -o value -s TYPE "${A}p1"; true)
[[ -z $sig ]] && ok "the swap partition holds no signature (the old ext4 is gone)" || not_ok "${A}p1 still holds '$sig'"
if [[ -x /lib/cryptsetup/checks/un_blkid ]]; then
  /lib/cryptsetup/checks/un_blkid "${A}p1" >/dev/null 2>&1 && ok "Debian's cryptdisks precheck (un_blkid) accepts it" \
    || not_ok "un_blkid refuses ${A}p1"
fi
partuuid=$(blkid -p -o value -s PART_ENTRY_UUID "${A}p1")
[[ -n $partuuid ]] || not_ok "no PARTUUID on ${A}p1"
want="cswap_crypt PARTUUID=$partuuid /dev/urandom plain,swap,cipher=aes-xts-plain64,size=512,nofail,x-systemd.device-timeout=300s"
grep -qxF "$want" "$T/target/etc/crypttab" && ok "crypttab: $want" \
  || not_ok "crypttab lacks '$want': $(cat "$T/target/etc/crypttab" 2>&1)"
grep -q "$A" "$T/target/etc/crypttab" && not_ok "crypttab names $A: $(cat "$T/target/etc/crypttab")"
grep -qxF "/dev/mapper/cswap_crypt none swap sw,nofail,x-systemd.device-timeout=300s 0 0" "$T/target/etc/fstab" && ok "fstab swaps on /dev/mapper/cswap_crypt" \
  || not_ok "fstab: $(cat "$T/target/etc/fstab")"
grep -q "UUID=$(blkid -o value -s UUID "${A}p2") / xfs" "$T/target/etc/fstab" || not_ok "fstab lacks root"
# what Debian 12's systemd makes of the swap's crypttab line (nofail: wanted,
# not required; the device timeout on its PARTUUID), when this machine has it
gen=/lib/systemd/system-generators/systemd-cryptsetup-generator
if [[ -x $gen ]]; then
  mkdir -p "$T/gen/n" "$T/gen/e" "$T/gen/l"
  SYSTEMD_CRYPTTAB="$T/target/etc/crypttab" "$gen" "$T/gen/n" "$T/gen/e" "$T/gen/l" 2>/dev/null
  [[ -L $T/gen/n/cryptsetup.target.wants/systemd-cryptsetup@cswap_crypt.service && \
     ! -e $T/gen/n/cryptsetup.target.requires/systemd-cryptsetup@cswap_crypt.service ]] \
    && ok "systemd: cryptsetup.target only wants cswap_crypt (nofail)" || not_ok "systemd: $(ls -R "$T/gen/n")"
  grep -qx 'JobRunningTimeoutSec=300s' "$T/gen/n/dev-disk-by\x2dpartuuid-${partuuid//-/\\x2d}.device.d/50-device-timeout.conf" 2>/dev/null \
    && ok "systemd: waits 300 s for the swap's partition" || not_ok "systemd: no device timeout: $(ls -R "$T/gen/n")"
fi
checks_done
