#!/bin/bash
# On a kernel without device-mapper (this host's), `kiln bench` refuses with
# a clear message naming what is missing (and AF_ALG, when that is missing
# too), exit code 1, nothing on stdout, and no device touched; --device-only
# measures the device alone there (read only unless --write).
set -euo pipefail
if grep -qw device-mapper /proc/misc 2>/dev/null; then echo "this kernel has device-mapper"; exit 77; fi
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir bench

if python3 -c 'import socket; socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)' 2>/dev/null; then
  alg=""
else
  alg=" and no AF_ALG sockets (CONFIG_CRYPTO_USER_API_SKCIPHER) for the in-memory cipher figure (libcryptsetup's crypt_benchmark() method)"
fi
want="error: crypt benchmark cannot run: the kernel has no device-mapper (no 'device-mapper' in /proc/misc; dm-mod and dm-crypt are needed)$alg"

truncate -s 64M "$T/disk.img"
printf 'kiln' | dd of="$T/disk.img" bs=1 seek=1048576 conv=notrunc status=none
before=$(sha256sum "$T/disk.img")
for args in "" "--json" "--write --size 16M $T/disk.img" "--tune --cipher aes-xts-plain64:256 --cipher xchacha12,aes-adiantum-plain64"; do
  rc=0
  # shellcheck disable=SC2086
  "$KILN" bench $args >"$T/out" 2>"$T/err" || rc=$?
  [[ $rc == 1 ]] || fail "kiln bench $args: exit $rc, expected 1"
  [[ "$(cat "$T/err")" == "$want" ]] || fail "kiln bench $args: stderr [$(cat "$T/err")], expected [$want]"
  [[ ! -s $T/out ]] || fail "kiln bench $args: printed [$(cat "$T/out")]"
done
[[ $(sha256sum "$T/disk.img") == "$before" ]] || fail "the device was written"

# bad arguments are usage errors, before anything runs
rc=0; "$KILN" bench --cipher aes >/dev/null 2>"$T/err" || rc=$?
[[ $rc == 64 && "$(cat "$T/err")" == "error: bad --cipher 'aes' (expected e.g. aes-xts-plain64:512)" ]] || fail "bad cipher: $rc $(cat "$T/err")"
rc=0; "$KILN" bench --min-write fast >/dev/null 2>"$T/err" || rc=$?
[[ $rc == 64 && "$(cat "$T/err")" == "error: bad number 'fast' for --min-write" ]] || fail "bad floor: $rc $(cat "$T/err")"
rc=0; "$KILN" bench --crypt /dev/null >/dev/null 2>"$T/err" || rc=$?
[[ $rc == 64 && "$(cat "$T/err")" == "error: --crypt needs the raw DEVICE under it to compare with" ]] || fail "crypt alone: $rc $(cat "$T/err")"
rc=0; "$KILN" bench --device-only >/dev/null 2>"$T/err" || rc=$?
want_do="error: --device-only needs DEVICE and measures no cipher (no --cipher, --tune, --min-cipher)"
[[ $rc == 64 && "$(cat "$T/err")" == "$want_do" ]] || fail "device-only without DEVICE: $rc $(cat "$T/err")"
rc=0; "$KILN" bench --device-only --cipher aes-xts-plain64 "$T/disk.img" >/dev/null 2>"$T/err" || rc=$?
[[ $rc == 64 && "$(cat "$T/err")" == "$want_do" ]] || fail "device-only with a cipher: $rc $(cat "$T/err")"
[[ $(sha256sum "$T/disk.img") == "$before" ]] || fail "the device was written"

# --device-only runs without device-mapper: direct I/O on the file, read
# only (the file is unchanged), every figure with its settle verdict
rc=0; "$KILN" bench --device-only --json --size 32M "$T/disk.img" >"$T/out" 2>"$T/err" || rc=$?
[[ $rc == 0 ]] || fail "device-only: exit $rc: $(cat "$T/err")"
jq -e '.raw.device == "'"$T/disk.img"'" and .raw.seq_write == null and .ciphers == [] and .crypt.seq_read == null
       and (.raw.seq_read, .raw.rand_read | .mbps > 0 and (.settled | type) == "boolean" and .mbps_low <= .mbps_high
            and .budget_seconds >= .window_seconds - 0.5 and .window_ios >= 2)
       and .settle_tolerance == 0.1 and .target_seconds == 0.42
       and ([.phases[].name] | index("kernel check") == null and index("raw: seq read") != null)' "$T/out" >/dev/null ||
  fail "device-only json: $(cat "$T/out")"
# each unsettled figure is a warning on stderr, and only those
n_unsettled=$(jq '[.raw.seq_read, .raw.rand_read | select(.settled == false)] | length' "$T/out")
[[ $(grep -c '^warning: not settled within its budget: ' "$T/err" || true) == "$n_unsettled" ]] ||
  fail "unsettled warnings: $n_unsettled in the json, stderr [$(cat "$T/err")]"
[[ $(sha256sum "$T/disk.img") == "$before" ]] || fail "the device was written by a read-only bench"
echo ok
