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
