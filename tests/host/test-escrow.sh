#!/bin/bash
# luks[].key.escrow on a real loop device and LUKS2 image files (keyslots
# and tokens need no device-mapper): kiln apply generates the key, seals it
# to the operator's certificate (OpenSSL CMS), formats, and writes the
# kiln-escrow token and the report's escrow entry before the run goes on
# (the run then stops at the luks-open: this host has no device-mapper).
# Checks: the token is there and names the volume's UUID and the
# certificate's fingerprint; OpenSSL's own `openssl cms -decrypt` opens the
# blob and Debian's cryptsetup takes the key (the documented manual path);
# `kiln recover` checks the keyslot and prints the same key to a pipe,
# refuses a terminal, for RSA and EC certificates; the wrong private key,
# another certificate, a corrupt token and a token copied from another
# volume fail with their exact message and leave the image byte for byte
# as it was; certificates that do not parse, are expired, have a key of the
# wrong kind or usage are validate errors at file:line:col; the key is in
# no log, report or file (the disk image included).
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup cryptsetup openssl jq sha256sum base64 script
. "$SRC/tests/lib/loop.sh"
loop_init escrow
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

# the operator's certificates and keys
mk() { openssl req -x509 -newkey "$2" "${@:3}" -nodes -keyout "$T/$1.key" -out "$T/$1.crt" -days 30 -subj "/CN=kiln-$1" 2>/dev/null ||
         fail "openssl req $1"; }
mk op rsa:3072
mk ec ec -pkeyopt ec_paramgen_curve:P-256
mk wrong rsa:2048
mk ed ed25519
mk signonly rsa:2048 -addext keyUsage=digitalSignature
mk small rsa:1024
# an expired one (openssl ca sets the dates)
mkdir -p "$T/ca" && : >"$T/ca/index" && echo 01 >"$T/ca/serial"
printf '[ca]\ndefault_ca=d\n[d]\ndatabase=%s/ca/index\nnew_certs_dir=%s/ca\nserial=%s/ca/serial\ndefault_md=sha256\npolicy=p\n[p]\ncommonName=supplied\n' \
  "$T" "$T" "$T" >"$T/ca.cnf"
openssl req -new -newkey rsa:2048 -nodes -keyout "$T/old.key" -out "$T/old.csr" -subj /CN=old 2>/dev/null &&
  openssl ca -batch -config "$T/ca.cnf" -selfsign -keyfile "$T/old.key" -in "$T/old.csr" -out "$T/old.crt" \
    -startdate 20200101000000Z -enddate 20200102000000Z -notext >/dev/null 2>&1 || fail "openssl ca (expired certificate)"
fp() { openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr A-F a-f; }

# spec DISK CERTFILE OUT: one disk, LUKS2 on all of it, a generated key escrowed to CERTFILE (line 13: escrow)
spec() {
  { printf 'version: 1\nhostname: escrow-test\ndisks:\n  - id: a\n    path: %s\n    wipe: true\nluks:\n  - id: crypt\n    on: a\n' "$1"
    printf '    pbkdf: {type: pbkdf2, iterations: 1000}\n    key:\n      generate: true\n      escrow: |\n'
    sed 's/^/        /' "$2"; } >"$3"
}

# 1. certificates that cannot be used: validate errors at the value (line 13, col 15)
for c in ed signonly small old; do spec /dev/loop0 "$T/$c.crt" "$T/$c.yaml"; done
printf 'not a certificate\n' >"$T/junk.crt"; spec /dev/loop0 "$T/junk.crt" "$T/junk.yaml"
sed '15s/^\(        \)./\1X/' "$T/ed.yaml" >"$T/mangled.yaml"     # the first base64 character of the body
f="'key.escrow' of luks 'crypt'"
declare -A want=(
  [ed]="$f has a ED25519 key; escrow needs RSA (key transport) or EC (key agreement)"
  [signonly]="$f has an RSA key whose keyUsage does not allow keyEncipherment"
  [small]="$f has a 1024-bit RSA key; at least 2048 bits are needed"
  [old]="$f has expired"
  [junk]="$f is not a PEM certificate (no '-----BEGIN CERTIFICATE-----')"
  [mangled]="$f does not parse as an X.509 certificate"
)
for c in "${!want[@]}"; do
  out=$("$KILN" validate "$T/$c.yaml" 2>&1); rc=$?
  expect_eq "validate: $c certificate refused at file:line:col (exit $rc)" "2 $T/$c.yaml:13:15: ${want[$c]}" "$rc $out"
done
spec /dev/loop0 "$T/op.crt" "$T/ok.yaml"
sed 's/generate: true/passphrase: "kiln-escrow-passphrase"/' "$T/ok.yaml" >"$T/pass.yaml"
out=$("$KILN" validate "$T/pass.yaml" 2>&1)
expect_eq "validate: escrow without generate refused" \
  "$T/pass.yaml:13:7: $f goes with 'generate: true' (a passphrase or a key at a url is already kept by you)" "$(grep -v warning <<<"$out")"

# 2. kiln apply: format with a generated key, the escrow token, the report
truncate -s 64M "$T/a.img"; attach "$T/a.img"; A=$ATTACHED
run_apply() {  # CERT NAME: apply onto A, escrowed to CERT; the log in $T/NAME.log
  spec "$A" "$T/$1.crt" "$T/$2.yaml"
  rm -rf "$KILN_RUN_DIR"
  "$KILN" apply --yes "$T/$2.yaml" >"$T/$2.log" 2>&1; rc=$?
  # this host has no device-mapper: the run stops at the luks-open, after the format and the escrow
  if ((rc == 4)) && grep -Eq "^step [0-9]+/[0-9]+ luks-format .* done" "$T/$2.log" &&
     grep -Eq "^error: step [0-9]+/[0-9]+ luks-open failed .*: Operation not supported" "$T/$2.log"; then
    ok "apply ($1): luks-format done, stopped at luks-open (no device-mapper here)"
  else not_ok "apply ($1) exited $rc"; tail -20 "$T/$2.log"; fi
  expect_in "apply ($1) logs the escrow" "$T/$2.log" "key escrowed to the certificate with SHA-256 $(fp "$T/$1.crt")"
}
run_apply op apply-rsa
uuid=$(cryptsetup luksUUID "$A")
tok=$(cryptsetup luksDump --dump-json-metadata "$A" | jq -c '[.tokens[] | select(.type == "kiln-escrow")]')
expect_eq "one kiln-escrow token, for this volume and certificate, keyslot 0, no keyslots list" \
  "1 $uuid $(fp "$T/op.crt") 0 []" "$(jq -r '"\(length) \(.[0].uuid) \(.[0].certificate_sha256) \(.[0].keyslot) \(.[0].keyslots)"' <<<"$tok")"
rep=$(jq -c '.escrow.crypt' "$KILN_RUN_DIR/report.json")
expect_eq "the report carries the same blob for the device" \
  "$A 0 $uuid 0 $(fp "$T/op.crt") true" \
  "$(jq -r --argjson t "$tok" '.[0] | "\(.device) \(.index) \(.uuid) \(.keyslot) \(.certificate_sha256) \(.cms == $t[0].cms)"' <<<"$rep")"

# the standard tools: cryptsetup token export, openssl cms -decrypt, cryptsetup takes the key
id=$(cryptsetup luksDump --dump-json-metadata "$A" | jq -r '.tokens | to_entries[] | select(.value.type == "kiln-escrow") | .key')
cryptsetup token export --token-id "$id" "$A" | jq -r .cms | base64 -d |
  openssl cms -decrypt -inform DER -recip "$T/op.crt" -inkey "$T/op.key" -binary >"$T/key.openssl" 2>"$T/openssl.err"
check "openssl cms -decrypt opens the blob; cryptsetup opens keyslot 0 with it" \
  cryptsetup open --test-passphrase --key-slot 0 --key-file "$T/key.openssl" "$A"
KEY=$(cat "$T/key.openssl")
[[ $KEY =~ ^[0-9a-f]{64}$ ]] && ok "the key is 64 hex characters (256 bits)" || not_ok "the key is not 64 hex characters"

# 3. kiln recover: check, print to a pipe, refuse a terminal; the device is only read
h0=$(sha256sum <"$T/a.img")
expect_kiln 0 "$T/rec.log" recover "$A" --key "$T/op.key" --cert "$T/op.crt" &&
  expect_in "kiln recover checks the keyslot" "$T/rec.log" "the escrowed key of $A opens its keyslot (checked; nothing opened)"
"$KILN" recover "$A" --key "$T/op.key" --cert "$T/op.crt" --print 2>"$T/rec2.log" | cat >"$T/key.kiln"
check "kiln recover --print gives the key openssl gives" cmp -s "$T/key.kiln" "$T/key.openssl"
script -qec "$KILN recover $A --key $T/op.key --cert $T/op.crt --print" /dev/null >"$T/tty.log" 2>&1; rc=$?
expect_eq "kiln recover --print to a terminal: refused, exit 3" \
  "3 error: refusing to print the recovered key of $A to a terminal: pipe it (kiln recover ... --print | cryptsetup open --key-file=- ...) or redirect it to a file; nothing was read" \
  "$rc $(tr -d '\r' <"$T/tty.log")"
expect_eq "recovery wrote nothing to the device" "$h0" "$(sha256sum <"$T/a.img")"

# 4. the wrong private key, another certificate: exact messages, nothing written
neg() {  # DESC DEVICE WANT ARGS...: kiln recover fails with exit 4 and exactly WANT; the image unchanged
  local desc=$1 dev=$2 msg=$3 img=${IMG:-$T/a.img}; shift 3
  local before; before=$(sha256sum <"$img")
  out=$("$KILN" recover "$dev" "$@" 2>&1 >"$T/neg.out"); rc=$?
  expect_eq "$desc" "4 error: failed to recover the key of $dev: $msg; nothing was written" "$rc $out"
  [[ ! -s $T/neg.out ]] || not_ok "$desc: something was printed"
  expect_eq "$desc: the image is unchanged" "$before" "$(sha256sum <"$img")"
}
neg "the wrong private key" "$A" "'$T/wrong.key' is not the private key of the certificate '$T/op.crt'" \
  --key "$T/wrong.key" --cert "$T/op.crt" --print
neg "another operator's key pair" "$A" \
  "the escrow token of $A is for the certificate with SHA-256 $(fp "$T/op.crt"), not for this one ($(fp "$T/wrong.crt"))" \
  --key "$T/wrong.key" --cert "$T/wrong.crt" --print

# 5. a corrupt token, a token copied from another volume (image files, cryptsetup token import)
cp "$T/a.img" "$T/c.img"
jq -c '.[0]' <<<"$tok" >"$T/tok.json"
retoken() {  # IMG JQ-FILTER: the escrow token of IMG replaced by the original one through FILTER
  cryptsetup token remove --token-id "$id" "$1" 2>/dev/null
  jq -c "$2" "$T/tok.json" | cryptsetup token import --token-id "$id" "$1" || fail "token import into $1"
}
retoken "$T/c.img" '.cms = "!!!not base64!!!"'
IMG=$T/c.img neg "a token whose cms is not base64" "$T/c.img" "the escrow token $id of $T/c.img is corrupt (its 'cms' is not base64)" \
  --key "$T/op.key" --cert "$T/op.crt"
retoken "$T/c.img" '.cms = "'"$(head -c 300 /dev/urandom | base64 -w0)"'"'
IMG=$T/c.img neg "a token whose cms is no CMS" "$T/c.img" "the escrow token $id of $T/c.img is corrupt (its 'cms' is no CMS EnvelopedData)" \
  --key "$T/op.key" --cert "$T/op.crt"
retoken "$T/c.img" 'del(.uuid)'
IMG=$T/c.img neg "a token without its uuid" "$T/c.img" "the escrow token $id of $T/c.img is corrupt (it lacks 'uuid', 'cms' or a valid 'keyslot')" \
  --key "$T/op.key" --cert "$T/op.crt"
# another volume: its own header (its own UUID), the first volume's token
truncate -s 32M "$T/o.img"
head -c 40 /dev/urandom | base64 | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
  --key-file - "$T/o.img" || fail "luksFormat of the other volume"
IMG=$T/o.img neg "a volume without an escrow token" "$T/o.img" \
  "$T/o.img has no escrow token (it was not formatted with an escrowed key)" --key "$T/op.key" --cert "$T/op.crt"
id=0 retoken "$T/o.img" '.'
ouuid=$(cryptsetup luksUUID "$T/o.img")
IMG=$T/o.img neg "a token copied from another volume" "$T/o.img" \
  "the escrow token 0 of $T/o.img names the volume UUID $uuid, but $T/o.img is $ouuid: the token was copied from another volume" \
  --key "$T/op.key" --cert "$T/op.crt" --print
IMG=$T/o.img neg "a device that does not exist" "$T/c.img.none" "cannot load the LUKS2 header of $T/c.img.none" \
  --key "$T/op.key" --cert "$T/op.crt"

# 6. an EC certificate: key agreement instead of key transport
run_apply ec apply-ec
"$KILN" recover "$A" --key "$T/ec.key" --cert "$T/ec.crt" --print 2>"$T/rec-ec.log" >"$T/key.ec"
cryptsetup token export --token-id 0 "$A" | jq -r .cms | base64 -d |
  openssl cms -decrypt -inform DER -recip "$T/ec.crt" -inkey "$T/ec.key" -binary >"$T/key.ec.openssl" 2>/dev/null
check "EC: kiln recover and openssl cms -decrypt agree, and the key opens keyslot 0" \
  bash -c "cmp -s '$T/key.ec' '$T/key.ec.openssl' && cryptsetup open --test-passphrase --key-slot 0 --key-file '$T/key.ec' '$A'"

# 7. the keys are nowhere: not in the logs, the report, the run dir, the disk image, the spec
KEY_EC=$(cat "$T/key.ec")
printf '%s\n' "$KEY" "$KEY_EC" >"$T/forms"
hits=$(grep -rlaFf "$T/forms" "$T" --exclude='key.*' --exclude=forms)
expect_eq "neither key is in any file but the recovered ones (logs, report, image, specs)" "" "$hits"
checks_done
