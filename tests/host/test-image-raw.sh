#!/bin/bash
# kiln image --format raw: a zstd-compressed raw disk image streamed from
# nginx onto a real loop device (large aligned writes, fsync), compared byte
# for byte; the run-dir marker; an image larger than the device; a wrong
# sha256 leaves the marker; a directory is refused as a raw target.
set -euo pipefail
[[ -n ${TRACE:-} ]] && set -x
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (loop devices)"; exit 77; }
source "$SRC/tests/lib/http.sh"
test_tmpdir image-raw
export KILN_RUN_DIR=$T/run

# a 20 MiB "disk image": random data, zero stretches, not a multiple of the write size
mkdir -p "$T/www"
python3 - "$T/disk.img" <<'PY'
import os, sys, random
random.seed(42)
with open(sys.argv[1], "wb") as f:
    for i in range(20):
        f.write(random.randbytes(1 << 19) + bytes(1 << 19) if i % 3 else bytes(1 << 20))
    f.write(random.randbytes(12345))
PY
zstd -q -3 "$T/disk.img" -o "$T/www/disk.img.zst"
SUM=$(sha256sum <"$T/www/disk.img.zst" | cut -d' ' -f1)
SIZE=$(stat -c %s "$T/disk.img")
truncate -s 32M "$T/backing"
LOOP=$(losetup -f --show "$T/backing") || { echo "SKIP: no loop device"; exit 77; }
cleanup_loop "$LOOP"
http_start "$T/www"
U=http://127.0.0.1:$HTTP_PORT

echo "# good raw install"
# junk first, so a missing write would show
head -c 32M /dev/urandom | dd of="$LOOP" bs=1M status=none conv=fsync
run_kiln 0 image "$U/disk.img.zst" --sha256 "$SUM" --target "$LOOP" --format raw
expect_err "onto '$LOOP'"
cmp -n "$SIZE" "$T/disk.img" "$LOOP" || fail "device content differs"
[[ ! -e $KILN_RUN_DIR/image-incomplete ]] || fail "marker left after a good install"

echo "# format picked from the target: a block device means raw"
run_kiln 0 image "$U/disk.img.zst" --sha256 "$SUM" --target "$LOOP"
cmp -n "$SIZE" "$T/disk.img" "$LOOP"

echo "# wrong sha256: exit 5, marker in the run dir names the device"
run_kiln 5 image "$U/disk.img.zst" --sha256 "$(printf 'a%.0s' {1..64})" --target "$LOOP" --format raw
expect_err "sha256 mismatch"
[[ $(head -1 "$KILN_RUN_DIR/image-incomplete") == "$LOOP" ]] || fail "no marker naming $LOOP"
grep -qx "failed: sha256 mismatch: expected a*, got [0-9a-f]*" "$KILN_RUN_DIR/image-incomplete" \
  || fail "the marker does not say why: $(cat "$KILN_RUN_DIR/image-incomplete")"

echo "# larger than the device"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(40 << 20))' | zstd -q -c >"$T/www/big.img.zst"
run_kiln 5 image "$U/big.img.zst" --sha256 "$(sha256sum <"$T/www/big.img.zst" | cut -d' ' -f1)" --target "$LOOP" --format raw
expect_err "the image is larger than '$LOOP'"

echo "# a corrupt image stops with a clear error"
head -c 3000000 "$T/www/disk.img.zst" >"$T/www/cut.img.zst"
run_kiln 5 image "$U/cut.img.zst" --sha256 "$(sha256sum <"$T/www/cut.img.zst" | cut -d' ' -f1)" --target "$LOOP" --format raw
expect_err "corrupt or truncated image"
[[ -e $KILN_RUN_DIR/image-incomplete ]] || fail "marker missing after a failure"

echo "# not a block device"
mkdir "$T/dir"
run_kiln 5 image "$U/disk.img.zst" --sha256 "$SUM" --target "$T/backing" --format raw
expect_err "'$T/backing' is not a block device"
echo ok
