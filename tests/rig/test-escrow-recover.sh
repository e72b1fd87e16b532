#!/bin/bash
# Escrowed recovery keys (issue 28), end to end (UNRUN when written: the
# helper that wrote it had no rig; the lead runs it):
#   boot 1  netboot: kiln provisions per-disk LUKS2 under raid10 f2
#           (tests/rig/specs/boot-escrow.yaml): each disk's volume formatted
#           with the generated key, the key escrowed to the operator's
#           certificate (a kiln-escrow token in each header, the report's
#           escrow entries), each header bound to the rig's Tang; no secret
#           is in the spec;
#   boot 2  from the disks, Tang up: the installed system opens all four
#           volumes through Tang and reaches multi-user;
#   then    Tang stopped: on the host, each raw member disk (qemu-img
#           convert of its top layer, losetup -P; LUKS2 keyslots and tokens
#           need no device-mapper) is recovered with the operator's private
#           key and the documented command (docs/recovery.md): kiln recover
#           checks the keyslot, --print pipes the key into Debian's
#           cryptsetup (--test-passphrase: this host has no device-mapper to
#           map it), openssl cms -decrypt agrees; the wrong private key fails
#           with its message and the disk's sha256 stays; the recovered keys
#           are in no disk image, console or report.
set -uo pipefail
# an install boot (the target's update-initramfs under TCG: minutes), as fixture-boot-tang.sh
RIG_TIMEOUT=${RIG_TIMEOUT:-1500}
. "$SRC/tests/rig/lib.sh"
rig_init
for t in jq openssl cryptsetup losetup qemu-img; do command -v "$t" >/dev/null || rig_skip "no $t"; done
((EUID == 0)) || rig_skip "needs root for loop devices"
rig_boot_image
rig_tang_start
op=$RIG_TMP/operator
openssl req -x509 -newkey rsa:3072 -nodes -keyout "$op.key" -out "$op.crt" -days 30 -subj /CN=kiln-rig-operator 2>/dev/null ||
  rig_die "openssl req (operator)"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$RIG_TMP/wrong.key" -out "$RIG_TMP/wrong.crt" -days 30 -subj /CN=wrong 2>/dev/null ||
  rig_die "openssl req (wrong)"
RIG_VAR_ESCROW_CERT=$(awk '{printf "%s\\n", $0}' "$op.crt")      # inside a YAML double-quoted string
rig_disks 4 2G
rig_spec specs/boot-escrow.yaml
"$KILN" validate "$RIG_SPEC" >/dev/null || rig_die "the spec does not validate"

# --- boot 1: install --------------------------------------------------------
rig_boot --pxe || rig_die "the install did not finish (see the console above)"
rig_expect_exit 0
rig_expect_section mdstat 'raid10' "boot 1: raid10 built over the four crypt mappings"
rig_check "boot 1: the console says each header got its escrow token" \
  test "$(grep -ac "key escrowed to the certificate with SHA-256" "$RIG_SERIAL")" -ge 4
install_serial=$RIG_SERIAL install_report=$RIG_REPORT

# --- boot 2: from the disks, through Tang ---------------------------------------
rig_disk_layer
before=$(rig_tang_requests)
rig_boot_disk || rig_not_ok "boot 2: the installed system did not report (see its console above)"
rig_expect_section system '^multi-user active' "boot 2: the installed system reached multi-user"
rig_expect_section crypt-status 'type: +LUKS2' "boot 2: a LUKS2 mapping is active"
rig_check "boot 2: Tang answered the unlocks ($before -> $(rig_tang_requests))" test "$(rig_tang_requests)" -ge "$((before + 4))"

# --- Tang down: recovery from the raw member disks ------------------------------
rig_tang_stop
fp=$(openssl x509 -in "$op.crt" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr A-F a-f)
: >"$RIG_TMP/keys"
for i in 0 1 2 3; do
  raw=$RIG_TMP/member$i.raw
  qemu-img convert -O raw "${RIG_DISK[$i]}" "$raw" || { rig_not_ok "disk $i: qemu-img convert"; continue; }
  loop=$(losetup -P -f --show "$raw") || { rig_not_ok "disk $i: losetup"; continue; }
  part=${loop}p4
  for w in 1 2 3 4 5; do [[ -b $part ]] && break; sleep 1; done
  h0=$(rig_sha256 "$raw")
  rig_check "disk $i: the header holds a kiln-escrow token for the operator's certificate" \
    eval "cryptsetup luksDump --dump-json-metadata '$part' | jq -e --arg fp '$fp' '[.tokens[] | select(.type == \"kiln-escrow\" and .certificate_sha256 == \$fp)] | length == 1' >/dev/null"
  "$KILN" recover "$part" --key "$op.key" --cert "$op.crt" >"$RIG_TMP/rec$i.log" 2>&1
  rig_check "disk $i: kiln recover checks the keyslot" grep -q "opens its keyslot (checked; nothing opened)" "$RIG_TMP/rec$i.log"
  "$KILN" recover "$part" --key "$op.key" --cert "$op.crt" --print 2>/dev/null >"$RIG_TMP/key$i"
  rig_check "disk $i: the documented pipe: kiln recover --print | cryptsetup --key-file=- takes it" \
    eval "'$KILN' recover '$part' --key '$op.key' --cert '$op.crt' --print 2>/dev/null |
          cryptsetup open --test-passphrase --key-file=- '$part'"
  id=$(cryptsetup luksDump --dump-json-metadata "$part" | jq -r '.tokens | to_entries[] | select(.value.type == "kiln-escrow") | .key')
  cryptsetup token export --token-id "$id" "$part" | jq -r .cms | base64 -d |
    openssl cms -decrypt -inform DER -binary -recip "$op.crt" -inkey "$op.key" >"$RIG_TMP/key$i.openssl" 2>/dev/null
  rig_check "disk $i: openssl cms -decrypt gives the same key" cmp -s "$RIG_TMP/key$i" "$RIG_TMP/key$i.openssl"
  out=$("$KILN" recover "$part" --key "$RIG_TMP/wrong.key" --cert "$op.crt" --print 2>&1 >/dev/null); rc=$?
  rig_check "disk $i: the wrong private key fails (exit $rc: $out)" \
    eval "[[ $rc == 4 && \$out == *\"is not the private key of the certificate\"* ]]"
  out=$("$KILN" recover "$part" --key "$RIG_TMP/wrong.key" --cert "$RIG_TMP/wrong.crt" --print 2>&1 >/dev/null); rc=$?
  rig_check "disk $i: another operator's key pair fails (exit $rc)" eval "[[ $rc == 4 && \$out == *\"is for the certificate with SHA-256 $fp\"* ]]"
  losetup -d "$loop"
  rig_check "disk $i: recovery changed nothing on the disk (sha256)" test "$(rig_sha256 "$raw")" = "$h0"
  cat "$RIG_TMP/key$i" >>"$RIG_TMP/keys"; echo >>"$RIG_TMP/keys"
done
rig_check "one key for the four disks (one luks object), 64 hex characters" \
  eval "[[ \$(sort -u '$RIG_TMP/keys' | grep -c .) == 1 && \$(head -1 '$RIG_TMP/keys') =~ ^[0-9a-f]{64}\$ ]]"
if grep -aqF -f <(grep . "$RIG_TMP/keys") "$RIG_TMP"/member*.raw "$install_serial" "$install_report" "$RIG_SERIAL" "$RIG_REPORT" "$RIG_SPEC"; then
  rig_not_ok "the key appears in a disk image, a console, a report or the spec"
else rig_ok "the key appears in no disk image, console, report or the spec"; fi
rm -f "$RIG_TMP"/member*.raw
rig_done
