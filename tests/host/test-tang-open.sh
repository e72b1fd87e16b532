#!/bin/bash
# kiln's own later openings of a volume whose key the spec does not carry
# (key: generate, with or without escrow): the look at a finished node and a
# resume open it through the clevis token its run bound, with the in-process
# Tang client (agent/storage/unlock.c unlock_recover(): the token decrypted
# through Tang's /rec, the key checked against its keyslot with
# libcryptsetup, nothing activated), against Debian's tangd on 127.0.0.1.
# On a LUKS2 image file (keyslots and tokens need no device-mapper; this
# host has none, so an activation stops there):
#  1. unlock-probe open (what the luks-open step calls): a volume without a
#     clevis token, a tang and an sss binding that open (the key checked,
#     never printed), another Tang at the token's URL (its keys are not the
#     token's), Tang stopped: exact messages, the image byte for byte as it
#     was;
#  2. kiln apply of a generate+escrow+unlock spec over a volume of it with
#     Tang stopped: the resume stops at luks-open with the device, the Tang
#     URL and the reason, exit 4, no fresh install, nothing written; the same
#     through kiln boot's look at the disks (exit 4, nothing written); with
#     Tang up the key is recovered (the run then stops at the activation);
#  3. kiln plan: a generated key with unlock resumes, without unlock the plan
#     says why not.
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices and LUKS2 headers"
skip_unless_tools cryptsetup jq sha256sum openssl losetup socat jose
PROBE=$BUILD/tests/unlock-probe
[[ -x $PROBE ]] || { echo "SKIP: no $PROBE"; exit 77; }
source "$SRC/tests/lib/loop.sh"
source "$SRC/tests/lib/tang.sh"
loop_init tangopen
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

tang_start "$T/tang" || fail "Tang did not start"
url=$TANG_URL thp=$TANG_THP port=$TANG_PORT

# a volume formatted with a key nobody keeps (as kiln's generate: 64 hex characters, a pipe only)
img=$T/luks.img
truncate -s 32M "$img"
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s' "$KEY" | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file - "$img" || fail "luksFormat on a file"

opens() {  # DESC RC WANT: unlock-probe open IMG exits RC, its last stderr line matches WANT (a glob) or
           # stdout is WANT for rc 0; the image unchanged
        local before out err rc
        before=$(sha256sum <"$img")
        "$PROBE" open "$img" >"$T/open.out" 2>"$T/open.err"; rc=$?
        out=$(cat "$T/open.out") err=$(tail -1 "$T/open.err")
        local good=0
        if ((rc == 0)); then [[ $out == "$3" ]] && good=1; else [[ $err == $3 && -z $out ]] && good=1; fi
        if ((rc == $2 && good)); then
                ok "$1 (${err:-$out})"
        else not_ok "$1: rc=$rc out='$out' err='$(cat "$T/open.err")'"; fi
        expect_eq "$1: the image is unchanged" "$before" "$(sha256sum <"$img")"
}

# 1. the probe
opens "no clevis token: refused" 1 "unlock-probe open: $img has no clevis token: no Tang pin opens it: No such file or directory"
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$thp" >"$T/out" 2>"$T/err" && [[ $(cat "$T/out") == 1 ]] \
        || fail "bind: $(cat "$T/err")"
opens "bound to Tang: the key recovered through /rec opens keyslot 1" 0 "keyslot 1"
pinkey=$(clevis luks pass -d "$img" -s 1 2>/dev/null)
[[ -n $pinkey ]] && ! grep -qF -- "$pinkey" "$T/open.out" "$T/open.err" && ! grep -qF -- "$KEY" "$T/open.out" "$T/open.err" \
        && ok "the recovered key is in no output" || not_ok "the key shows in the probe's output (or clevis luks pass failed)"

# an sss token (t=2 of the same Tang twice) opens the same way, in process
cp "$img" "$T/sss.img"
cryptsetup token remove --token-id 0 "$T/sss.img" && cryptsetup luksKillSlot -q "$T/sss.img" 1 </dev/null 2>/dev/null ||
        fail "unbind the copy"
printf '%s' "$KEY" | "$PROBE" bind "$T/sss.img" / 2 "$url" "$thp" "$url" "$thp" >"$T/out" 2>"$T/err" \
        || fail "sss bind: $(cat "$T/err")"
pin=$(cryptsetup token export --token-id 0 "$T/sss.img" | jq -r '.jwe.protected' | tr '_-' '/+' | base64 -d 2>/dev/null | jq -r .clevis.pin)
[[ $pin == sss ]] || not_ok "the copy's token is pin '$pin', not sss"
img=$T/sss.img opens "bound to sss (t=2): the key recovered opens keyslot 1" 0 "keyslot 1"

# another Tang at the token's URL (other keys): it has no key for the token's kid
tang_stop
tang_start "$T/other" "$port" || fail "the other Tang did not start on port $port"
[[ $TANG_THP != "$thp" ]] || fail "the other Tang has the same signing key"
opens "another Tang at $url: refused" 1 \
        "unlock-probe open: tang decrypt of the token of keyslot 1 of $img: Tang '$url' did not answer the key recovery: HTTP status *: *"
tang_stop
opens "Tang stopped: refused with the device, the URL and the reason" 1 \
        "unlock-probe open: tang decrypt of the token of keyslot 1 of $img: Tang '$url' did not answer the key recovery: Failed to connect to 127.0.0.1 port $port after * ms: Couldn't connect to server: *"

# 2. kiln apply and kiln boot over such a volume, on a loop device: spec DEV URL THP OUT [UNLOCK]
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/op.key" -out "$T/op.crt" -days 30 -subj /CN=kiln-op 2>/dev/null \
        || fail "openssl req"
echo kiln >"$T/f" && tar -C "$T" -cf "$T/img.tar" f || fail "tar"
spec() {
        { printf 'version: 1\nhostname: tangopen\ndisks:\n  - id: a\n    path: %s\n    wipe: true\n' "$1"
          printf 'luks:\n  - id: crypt\n    on: a\n    pbkdf: {type: pbkdf2, iterations: 1000}\n'
          [[ ${5:-unlock} == unlock ]] && printf '    unlock: {tang: [{url: "%s", thp: "%s"}]}\n' "$2" "$3"
          printf '    key:\n      generate: true\n      escrow: |\n'
          sed 's/^/        /' "$T/op.crt"
          printf 'filesystems:\n  - {on: crypt, type: ext4, mount: /}\n'
          printf 'image: {url: "file://%s", sha256: "%s"}\n' "$T/img.tar" "$(sha256sum <"$T/img.tar" | cut -d' ' -f1)"
        } >"$4"
}
truncate -s 64M "$T/a.img"; attach "$T/a.img"; A=$ATTACHED
printf '%s' "$KEY" | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file - "$A" || fail "luksFormat $A"
tang_start "$T/tang" || fail "Tang did not start again"
url=$TANG_URL port=$TANG_PORT
printf '%s' "$KEY" | "$PROBE" bind "$A" / 1 "$url" "$thp" >"$T/out" 2>"$T/err" && [[ $(cat "$T/out") == 1 ]] \
        || fail "bind $A: $(cat "$T/err")"
pinkey2=$(clevis luks pass -d "$A" -s 1 2>/dev/null)
[[ ${#pinkey2} -ge 32 ]] || fail "clevis luks pass $A -s 1"
spec "$A" "$url" "$thp" "$T/s.yaml"
"$KILN" plan "$T/s.yaml" >"$T/plan.out" 2>&1 || not_ok "kiln plan: $(cat "$T/plan.out")"
expect_in "kiln plan: a generated key with unlock resumes" "$T/plan.out" "mode: resume"
expect_in "kiln plan: its luks-open says where the key comes from" "$T/plan.out" \
        "open $A as /dev/mapper/crypt, with the generated key its clevis token gives back through Tang"

# 3. without unlock kiln has no way back in: the plan says so before anything runs
spec "$A" "$url" "$thp" "$T/nounlock.yaml" none
"$KILN" plan "$T/nounlock.yaml" >"$T/plan2.out" 2>&1 || not_ok "kiln plan (no unlock): $(cat "$T/plan2.out")"
expect_in "kiln plan: a generated key without unlock does not resume, and the plan says why" "$T/plan2.out" \
        "mode: fresh install (no interrupted run of this plan to resume: LUKS 'crypt' has a generated key and no 'unlock' (Tang): kiln cannot open it again (only the escrow's private key does))"

tang_stop
h0=$(sha256sum <"$T/a.img")
rm -rf "$KILN_RUN_DIR"
"$KILN" apply --yes "$T/s.yaml" >"$T/apply.log" 2>&1; rc=$?
want="error: step */* luks-open failed on '/dev/mapper/crypt': luks 'crypt' has a generated key, which only its Tang pin gives back, and that failed: tang decrypt of the token of keyslot 1 of $A: Tang '$url' did not answer the key recovery: Failed to connect to 127.0.0.1 port $port after * ms: Couldn't connect to server: *; not resuming, and no fresh install either (a Tang that does not answer is no reason to wipe); nothing was written"
if ((rc == 4)) && [[ $(grep '^error:' "$T/apply.log" | tail -1) == $want ]]; then
        ok "kiln apply, Tang stopped: the resume stops at luks-open, exit 4 ($(grep '^error:' "$T/apply.log" | tail -1))"
else not_ok "kiln apply, Tang stopped: rc=$rc"; tail -15 "$T/apply.log"; fi
expect_eq "kiln apply, Tang stopped: the disk is unchanged" "$h0" "$(sha256sum <"$T/a.img")"
grep -q "wipe\|luks-format" "$T/apply.log" && grep -Eq "^step [0-9]+/[0-9]+ (wipe|luks-format)" "$T/apply.log" \
        && not_ok "kiln apply, Tang stopped: a wipe or format ran" || ok "kiln apply, Tang stopped: no wipe, no format"

# the look at the disks (kiln boot, as the netboot initramfs runs it), Tang stopped
echo "console=ttyS0 kiln.spec=file://$T/s.yaml" >"$T/cmdline"
rm -rf "$KILN_RUN_DIR"
"$KILN" boot --cmdline "$T/cmdline" --no-finish --no-kexec >"$T/boot.log" 2>&1; rc=$?
want="error: cannot look at the disks of '*': luks-open /dev/mapper/crypt: luks 'crypt' has a generated key, which only its Tang pin gives back, and that failed: tang decrypt of the token of keyslot 1 of $A: Tang '$url' did not answer the key recovery: Failed to connect to 127.0.0.1 port $port after * ms: Couldn't connect to server: *; nothing was written"
if ((rc == 4)) && [[ $(sed 's/^\[ *[0-9.]*\] //' "$T/boot.log" | grep '^error:' | tail -1) == $want ]]; then
        ok "kiln boot, Tang stopped: the look stops, exit 4 ($(grep 'error:' "$T/boot.log" | tail -1))"
else not_ok "kiln boot, Tang stopped: rc=$rc"; tail -15 "$T/boot.log"; fi
expect_eq "kiln boot, Tang stopped: the disk is unchanged" "$h0" "$(sha256sum <"$T/a.img")"

# Tang up again (same keys, same URL): the resume recovers the key (then stops at the activation: no device-mapper)
tang_start "$T/tang" "$port" || fail "Tang did not start again on $port"
rm -rf "$KILN_RUN_DIR"
"$KILN" apply --yes "$T/s.yaml" >"$T/apply2.log" 2>&1; rc=$?
expect_in "kiln apply, Tang up: the resume recovers the generated key through the pin" "$T/apply2.log" \
        "luks 'crypt' on $A: its generated key recovered through its Tang pin (keyslot 1)"
expect_in "kiln apply, Tang up: then the activation fails here (no device-mapper) and the run installs fresh" \
        "$T/apply2.log" "not resuming (luks-open /dev/mapper/crypt: Operation not supported); undoing the resume steps and installing fresh"
grep -rqF -- "$pinkey2" "$T/apply.log" "$T/apply2.log" "$T/boot.log" "$KILN_RUN_DIR" \
        && not_ok "the key Tang gives back shows in a log or the run directory" || ok "the key Tang gives back is in no log, report or run file"
checks_done
