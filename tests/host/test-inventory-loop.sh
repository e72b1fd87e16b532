#!/bin/bash
# kiln inventory on real loop devices: every signature libblkid finds is
# reported with the exact type, offset, UUID and label (checked against the
# values we wrote and against wipefs), partitions and mounts are seen, and
# probing changes not one byte of any disk.
set -euo pipefail
[[ $(id -u) == 0 ]] || { echo "needs root"; exit 77; }
command -v losetup >/dev/null && command -v wipefs >/dev/null && command -v jq >/dev/null || { echo "needs losetup, wipefs, jq"; exit 77; }
losetup -f >/dev/null 2>&1 || { echo "no free loop device"; exit 77; }

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir inv
# lvm (libdevmapper) makes /dev/mapper/control even on a kernel without
# device-mapper; leave /dev as it was
if [[ ! -e /dev/mapper/control ]]; then
  cleanup_do eval 'grep -qw device-mapper /proc/misc 2>/dev/null || { rm -f /dev/mapper/control; rmdir /dev/mapper 2>/dev/null; }'
fi
attach_as() {  # attach_as VAR FILE (not loop.sh's attach: this test's kiln sees loop devices only where it says so)
  local l; l=$(losetup -f --show "$2"); cleanup_loop "$l"; printf -v "$1" '%s' "$l"
}

# A: GPT with an ext4 and a swap partition (this kernel parses no partition
# tables, so partx adds the partitions)
truncate -s 64M "$T/a.img"
parted -s "$T/a.img" mklabel gpt mkpart one 1MiB 20MiB mkpart two 20MiB 60MiB
attach_as A "$T/a.img"
partx -a "$A"
mkfs.ext4 -q -L kilnext -U 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d "${A}p1"
mkswap -q -L kilnswap -U 11111111-2222-4333-8444-555555555555 "${A}p2"
PTUUID=$(blkid -p -o value -s PTUUID "$A")
# B: xfs on the whole disk (xfs wants 300 MB)
truncate -s 320M "$T/b.img"
mkfs.xfs -q -L kilnxfs -m uuid=22222222-3333-4444-8555-666666666666 "$T/b.img"
attach_as B "$T/b.img"
# C: LUKS2 (formatting needs no device-mapper)
truncate -s 32M "$T/c.img"
printf 'not-a-real-passphrase' | cryptsetup luksFormat --type luks2 --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
  --uuid 12345678-1234-4234-8234-123456789abc --label kilnluks --batch-mode --key-file=- "$T/c.img"
attach_as C "$T/c.img"
# D: an md v1.2 superblock (mdadm --create needs the md driver this kernel lacks)
truncate -s 32M "$T/d.img"
python3 "$SRC/tests/lib/md-superblock.py" "$T/d.img" oldnode:1 c6a1e0f3-27d4-8b59-3e1a-94f0d2b7c815
attach_as D "$T/d.img"
# E: an LVM physical volume, if lvm can write one here
truncate -s 32M "$T/e.img"
attach_as E "$T/e.img"
LVMCONF='devices { obtain_device_list_from_udev = 0 } activation { udev_sync = 0 udev_rules = 0 }'
HAVE_PV=0
if command -v lvm >/dev/null && lvm pvcreate -q --config "$LVMCONF" "$E" >/dev/null 2>&1 </dev/null; then HAVE_PV=1; fi
# F: blank
truncate -s 16M "$T/f.img"
attach_as F "$T/f.img"
# mount A's ext4 so the inventory has a mountpoint to find
MNT="$T/mnt"; mkdir -p "$MNT"; mount -o ro "${A}p1" "$MNT"; cleanup_umount "$MNT"

sum_all() { md5sum "$T"/*.img; }   # not adversarial: any change shows
before=$(sum_all)

KILN_INVENTORY_INCLUDE_LOOP=1 "$KILN" inventory --json >"$T/inv.json"
KILN_INVENTORY_INCLUDE_LOOP=1 "$KILN" inventory >"$T/inv.txt"
"$KILN" inventory --json >"$T/noloop.json"

[[ $(sum_all) == "$before" ]] || fail "inventory changed a disk image"
# without the knob no loop device is a disk
[[ $(jq '[.disks[] | select(.name | startswith("loop"))] | length' "$T/noloop.json") == 0 ]] || fail "loop devices listed without KILN_INVENTORY_INCLUDE_LOOP"

# sigs DEVNAME: "type@offset uuid label" per signature, as kiln reports it
sigs() {
  local dev=${1#/dev/}
  jq -r --arg d "$dev" '.disks[] | (select(.name == $d) | .signatures[]), (.partitions[] | select(.name == $d) | .signatures[])
        | "\(.type)@\(.offset) \(.uuid // "-") \(.label // "-")"' "$T/inv.json"
}
expect() {  # expect DEV LINES...
  local dev=$1; shift
  local want got
  want=$(printf '%s\n' "$@" | sed '/^$/d')
  got=$(sigs "$dev")
  [[ "$got" == "$want" ]] || fail "signatures of $dev: got [$got], expected [$want]"
  # and the same types at the same offsets as wipefs lists
  local wf
  wf=$(wipefs -J "$dev" | jq -r '.signatures[]? | "\(.type)@\(.offset)"' | while IFS=@ read -r t o; do echo "$t@$((o))"; done)
  [[ "$(sed 's/ .*//' <<<"$got")" == "$wf" ]] || fail "signatures of $dev differ from wipefs: kiln [$got] wipefs [$wf]"
}
expect "$A" "gpt@512 $PTUUID -" "gpt@$((64 * 1024 * 1024 - 512)) $PTUUID -" "PMBR@510 - -"
expect "${A}p1" "ext4@1080 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d kilnext"
expect "${A}p2" "swap@4086 11111111-2222-4333-8444-555555555555 kilnswap"
expect "$B" "xfs@0 22222222-3333-4444-8555-666666666666 kilnxfs"
expect "$C" "crypto_LUKS@0 12345678-1234-4234-8234-123456789abc kilnluks" "crypto_LUKS@16384 12345678-1234-4234-8234-123456789abc kilnluks"
expect "$D" "linux_raid_member@4096 c6a1e0f3-27d4-8b59-3e1a-94f0d2b7c815 oldnode:1"
if ((HAVE_PV)); then
  PVUUID=$(blkid -p -o value -s UUID "$E")
  expect "$E" "LVM2_member@536 $PVUUID -"
else
  echo "note: lvm pvcreate unavailable, LVM2_member not checked"
fi
expect "$F"

# usage, partitions, mount, sizes
an=${A#/dev/}
[[ $(jq -r --arg d "$an" '.disks[] | select(.name == $d) | [.size, (.partitions | length), .partitions[0].start, .partitions[0].size, .partitions[1].number, .partitions[0].mountpoint, .partitions[1].signatures[0].usage, .transport] | @tsv' "$T/inv.json") \
   == "$((64 << 20))	2	$((1 << 20))	$((19 << 20))	2	$MNT	other	virtual" ]] || fail "disk $an: wrong size, partitions or mountpoint: $(jq -c --arg d "$an" '.disks[] | select(.name == $d)' "$T/inv.json")"
[[ $(jq -r --arg d "${C#/dev/}" '.disks[] | select(.name == $d) | .signatures[0].usage' "$T/inv.json") == crypto ]] || fail "LUKS usage is not crypto"
[[ $(jq -r --arg d "${D#/dev/}" '.disks[] | select(.name == $d) | .signatures[0].usage' "$T/inv.json") == raid ]] || fail "md usage is not raid"
grep -Eq "^${B#/dev/} +320 MiB .* xfs " "$T/inv.txt" || fail "text table lacks the xfs disk: $(cat "$T/inv.txt")"
grep -Eq "mounted on $MNT" "$T/inv.txt" || fail "text table lacks the mount"

# the saved JSON reads back to the same JSON
"$KILN" inventory --sysroot "$T/inv.json" --json | cmp - "$T/inv.json" || fail "saved inventory does not round-trip"
echo "ok"
