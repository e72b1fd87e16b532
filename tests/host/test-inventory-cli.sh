#!/bin/bash
# kiln inventory from recorded inputs (no root): a recorded /sys tree gives
# the checked-in JSON, saved JSON round-trips, and bad inputs fail with the
# exact message and exit code.
set -euo pipefail
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir invcli
INV=$SRC/tests/inventories

"$KILN" inventory --sysroot "$INV/sysroot-mixed" --json >"$T/out.json"
diff -u "$INV/sysroot-mixed.expected.json" "$T/out.json" || fail "recorded tree gives different JSON"
"$KILN" inventory --sysroot "$INV/sysroot-mixed" >"$T/out.txt"
grep -Eq '^vdb +40 KiB hdd +virtio .* swap ' "$T/out.txt" || fail "text lacks vdb swap: $(cat "$T/out.txt")"
grep -q 'held by md0' "$T/out.txt" || fail "text lacks the md0 holder"

for f in "$INV"/*.json; do
  "$KILN" inventory --sysroot "$f" --json | cmp - "$f" || fail "$f does not round-trip"
done

# disks that repeat a serial (cheap USB bridges, some virtual disks): a
# warning naming them all, on stderr; the inventory itself is unchanged
jq '.disks[2].serial = "kiln-disk0" | .disks[3].serial = "kiln-disk0"' "$INV/qemu-4disk.json" >"$T/twins.json"
"$KILN" inventory --sysroot "$T/twins.json" --json >"$T/twins.out" 2>"$T/twins.err" || fail "twins: kiln inventory failed"
[[ "$(cat "$T/twins.err")" == "warning: disks /dev/vda, /dev/vdc and /dev/vdd report the same serial 'kiln-disk0' (a USB bridge or virtual disks?): a spec cannot select them by serial; use path, by_id or wwn" ]] \
  || fail "twins: stderr [$(cat "$T/twins.err")]"
[[ "$(jq -c '[.disks[].serial]' "$T/twins.out")" == '["kiln-disk0","kiln-disk1","kiln-disk0","kiln-disk0","kiln-extra"]' ]] \
  || fail "twins: serials changed: $(jq -c '[.disks[].serial]' "$T/twins.out")"
"$KILN" inventory --sysroot "$INV/qemu-4disk.json" >/dev/null 2>"$T/e" || fail "qemu-4disk: kiln inventory failed"
[[ ! -s $T/e ]] || fail "qemu-4disk: unexpected stderr [$(cat "$T/e")]"

check_err() {  # check_err WANT_RC WANT_STDERR ARGS...
  local want_rc=$1 want=$2; shift 2
  local rc=0
  "$KILN" inventory "$@" >"$T/o" 2>"$T/e" || rc=$?
  [[ $rc == "$want_rc" ]] || fail "kiln inventory $*: exit $rc, expected $want_rc"
  [[ "$(cat "$T/e")" == "$want" ]] || fail "kiln inventory $*: stderr [$(cat "$T/e")], expected [$want]"
  [[ ! -s $T/o ]] || fail "kiln inventory $*: printed output on failure"
}
check_err 1 "error: failed to read inventory '/nonexistent/inv': No such file or directory" --sysroot /nonexistent/inv
printf '{"version": 1, "disks": [{"name": "vda", "size": "2G"}]}' >"$T/bad.json"
check_err 1 "error: failed to read inventory '$T/bad.json': disks[0].size: expected an unsigned integer" --sysroot "$T/bad.json"
printf '{"version": 1, "disks": [' >"$T/trunc.json"
check_err 1 "error: failed to read inventory '$T/trunc.json': not valid JSON at byte 25: unexpected end of data" --sysroot "$T/trunc.json"
check_err 64 "error: unexpected argument 'extra' (see 'kiln inventory --help')" extra
echo ok

# without udev (the kiln netboot initramfs has no /dev/disk/by-id), kiln
# makes the by-id names itself, as udev's rules would: the recorded tree's
# udev names of every virtio, NVMe and ATA disk (sda's from the IDENTIFY
# data libata exposes as VPD page 0x89: the 40-character ATA model, the
# serial, the WWN) come out of the same tree with its by-id links removed
cp -a "$INV/sysroot-mixed" "$T/noudev" && rm -r "$T/noudev/dev/disk/by-id"
python3 - "$(readlink -f "$T/noudev/sys/block/sda/device")/vpd_pg89" <<'PY'
import struct, sys
idw = [0] * 256
def put(first, text, n):   # an ATA string: two characters a word, the first in the high byte
    t = text.ljust(n)
    for i in range(0, n, 2):
        idw[first + i // 2] = ord(t[i]) << 8 | ord(t[i + 1])
put(10, "ZFL1A2B3".rjust(20), 20)
put(27, "ST2000DM008-2FR102", 40)
idw[87] = 0x4100
idw[108:112] = [0x5000, 0xc500, 0xb1a2, 0xc3d4]
page = bytearray(572)
page[1] = 0x89
struct.pack_into(">H", page, 2, 568)
page[60:572] = struct.pack("<256H", *idw)
open(sys.argv[1], "wb").write(page)
PY
"$KILN" inventory --sysroot "$T/noudev" --json >"$T/noudev.json" || fail "no by-id links: kiln inventory failed"
for link in "$INV"/sysroot-mixed/dev/disk/by-id/*; do
  name=${link##*/}
  [[ $name == *-part[0-9]* ]] && continue
  disk=/dev/$(basename "$(readlink "$link")")
  jq -e --arg d "$disk" --arg n "$name" '.disks[] | select(.path == $d) | .by_id | index($n)' "$T/noudev.json" >/dev/null \
    || fail "no by-id links: $disk lacks udev's name $name (kiln made: $(jq -c --arg d "$disk" '.disks[] | select(.path == $d) | .by_id' "$T/noudev.json"))"
done
[[ $(jq -c '.disks[] | select(.path == "/dev/sdb") | .by_id' "$T/noudev.json") == '[]' ]] \
  || fail "no by-id links: sdb (no IDENTIFY page) got names: $(jq -c '.disks[] | select(.path == "/dev/sdb") | .by_id' "$T/noudev.json")"
echo "ok: without /dev/disk/by-id kiln makes udev's virtio, NVMe, ATA and WWN names"
