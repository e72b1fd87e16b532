#!/bin/bash
# luks[].unlock against a real Tang on 127.0.0.1 (Debian's tangd behind
# socat), on a LUKS2 image file (keyslots and tokens need no device-mapper):
# kiln's unlock_bind() makes a random key, has clevis encrypt it in a chroot
# (here "/", the key only on its stdin), adds the keyslot (PBKDF2, 1000
# iterations, as clevis does) and the clevis token with libcryptsetup, and
# proves it: the stored token through clevis decrypt (the key into locked
# memory) opens the new keyslot. Checks: a wrong thumbprint binds nothing
# (header unchanged), the token is clevis's and clevis's own tools accept it
# (clevis luks list; clevis luks pass yields the key that opens the slot, as
# clevis luks unlock and the initramfs do), the keyslot's PBKDF, the recovery
# key still opens slot 0, the proof fails for a slot without a token and once
# Tang is stopped, a failed proof takes the token and keyslot back, an sss
# binding of two pins works, with Tang stopped a bind fails with clevis's
# message and writes nothing, and the key is never in clevis's argv or
# environment.
set -u
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
((EUID == 0)) || { echo "needs root"; exit 77; }
for t in cryptsetup clevis clevis-luks-bind clevis-luks-pass jose socat /usr/libexec/tangd /usr/libexec/tangd-keygen; do
        command -v "$t" >/dev/null || { echo "missing $t (tests/deps.sh installs it)"; exit 77; }
done
PROBE=$BUILD/tests/unlock-probe
[[ -x $PROBE ]] || { echo "no $PROBE"; exit 77; }

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/tang.sh"
test_tmpdir unlock
tang_start "$T/tang" || fail "Tang did not start"
url=$TANG_URL sig=$TANG_THP

img=$T/luks.img
truncate -s 32M "$img"
KEY="kiln-test-$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
printf '%s' "$KEY" | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file - "$img" || { not_ok "luksFormat on a file"; exit 1; }

# clevis seen through a wrapper that records its argv and environment
cat >"$T/clevis" <<WRAP
#!/bin/bash
{ echo "argv: \$*"; env; } >>"$T/clevis.log"
exec /usr/bin/clevis "\$@"
WRAP
chmod +x "$T/clevis"
export KILN_T_CLEVIS=$T/clevis

# a thumbprint that is not Tang's signing key: refused, nothing written
h0=$(sha256sum <"$img")
wrong=$(printf 'x%.0s' $(seq 43))
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$wrong" >"$T/out" 2>"$T/err"; rc=$?
if ((rc == 1)) && [[ $(sha256sum <"$img") == "$h0" ]] && ! cryptsetup token export --token-id 0 "$img" >/dev/null 2>&1; then
        ok "wrong thumbprint refused, header unchanged ($(head -c 120 "$T/err"))"
else not_ok "wrong thumbprint: rc=$rc, $(cat "$T/err")"; fi

# the real binding, in a chroot of /
t0=$(date +%s.%N)
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
t1=$(date +%s.%N)
slot=$(cat "$T/out")
if ((rc == 0)) && [[ $slot == 1 ]]; then ok "bound and proven in keyslot $slot in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
else not_ok "bind: rc=$rc out='$slot' $(cat "$T/err")"; fi
# clevis's own tools accept kiln's token: list names the pin, pass (what clevis
# luks unlock and the initramfs decrypt) yields a key that opens keyslot 1
list=$(clevis luks list -d "$img" 2>&1)
[[ $list == "1: tang '{\"url\":\"$url\"}'" ]] && ok "clevis luks list: $list" || not_ok "clevis luks list: '$list'"
clevis luks pass -d "$img" -s 1 | cryptsetup open --test-passphrase --key-slot 1 --key-file - "$img" \
        && ok "clevis luks pass -s 1 yields the key that opens keyslot 1" || not_ok "clevis luks pass does not open keyslot 1"
kdf=$(cryptsetup luksDump --dump-json-metadata "$img" | jq -c '.keyslots["1"].kdf | {type, hash, iterations}')
[[ $kdf == '{"type":"pbkdf2","hash":"sha256","iterations":1000}' ]] && ok "keyslot 1: $kdf (clevis's own choice)" \
        || not_ok "keyslot 1 kdf: $kdf"
tok=$(cryptsetup token export --token-id 0 "$img" 2>/dev/null)
prot=$(jq -r '.jwe.protected' <<<"$tok" | tr '_-' '/+' | base64 -d 2>/dev/null)
if [[ $(jq -r .type <<<"$tok") == clevis && $(jq -c .keyslots <<<"$tok") == '["1"]' ]] &&
   [[ $(jq -r .clevis.pin <<<"$prot" 2>/dev/null) == tang && $(jq -r .clevis.tang.url <<<"$prot" 2>/dev/null) == "$url" ]]; then
        ok "LUKS2 token: type clevis, keyslot 1, pin tang, url $url"
else not_ok "token: $tok / $prot"; fi
printf '%s' "$KEY" | cryptsetup open --test-passphrase --key-slot 0 --key-file - "$img" \
        && ok "the spec's key still opens keyslot 0 (recovery)" || not_ok "recovery keyslot 0 does not open"

"$PROBE" prove "$img" / 1 >"$T/out" 2>"$T/err" && ok "proof: the pin alone opens keyslot 1" \
        || not_ok "prove: $(cat "$T/err")"
[[ ! -s $T/out ]] || not_ok "prove printed something on stdout"
# the key the pin yields (what clevis luks pass prints) never left locked memory
pinkey=$(clevis luks pass -d "$img" -s 1)
[[ ${#pinkey} -ge 32 ]] || not_ok "clevis luks pass printed ${#pinkey} bytes"
grep -qF -- "$pinkey" "$T/out" "$T/err" "$T/clevis.log" && not_ok "the pin's key shows in the probe's output or clevis's argv/env" \
        || ok "the pin's key (${#pinkey} bytes) is in no output, argv or environment"
"$PROBE" prove "$img" / 0 >"$T/out" 2>"$T/err"; rc=$?
((rc == 1)) && ok "proof fails for a slot without a token: $(head -c 150 "$T/err")" || not_ok "prove slot 0: rc=$rc"

# sss: two pins (the same server twice), threshold 2
printf '%s' "$KEY" | "$PROBE" bind "$img" - 2 "$url" "$sig" "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
s2=$(cat "$T/out")
tok2=$(cryptsetup token export --token-id 1 "$img" 2>/dev/null)
prot2=$(jq -r '.jwe.protected' <<<"$tok2" | tr '_-' '/+' | base64 -d 2>/dev/null)
if ((rc == 0)) && [[ $s2 == 2 ]] && [[ $(jq -r .clevis.pin <<<"$prot2" 2>/dev/null) == sss ]] &&
   "$PROBE" prove "$img" - 2 2>"$T/err"; then
        ok "sss binding (t=2 of 2 tang pins) in keyslot 2, proven"
else not_ok "sss: rc=$rc slot='$s2' $(cat "$T/err") $prot2"; fi

# a proof that fails (here: clevis decrypt refuses) takes back the keyslot and token it added
keyslots() { cryptsetup luksDump --dump-json-metadata "$img" | jq -c '[.keyslots | keys[]], [.tokens | keys[]]'; }
before=$(keyslots)
cat >"$T/clevis-nodecrypt" <<WRAP
#!/bin/bash
{ echo "argv: \$*"; env; } >>"$T/clevis.log"
[[ \$1 == decrypt ]] && { echo "refused for the test" >&2; exit 1; }
exec /usr/bin/clevis "\$@"
WRAP
chmod +x "$T/clevis-nodecrypt"
printf '%s' "$KEY" | KILN_T_CLEVIS=$T/clevis-nodecrypt "$PROBE" bind "$img" / 1 "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: clevis decrypt of the token of keyslot 3: refused for the test: Input/output error"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(keyslots) == "$before" ]]; then
        ok "a failed proof leaves no keyslot and no token ($before)"
else not_ok "failed proof: rc=$rc '$(tail -1 "$T/err")', slots/tokens $(keyslots), before $before"; fi

# Tang stopped: the proof fails (storage exit code in the step)
tang_stop
"$PROBE" prove "$img" / 1 >"$T/out" 2>"$T/err"; rc=$?
((rc == 1)) && ok "Tang stopped: proof fails ($(head -c 150 "$T/err"))" || not_ok "prove without Tang: rc=$rc"
# Tang stopped: a bind fails with clevis's own message and writes nothing
h0=$(sha256sum <"$img")
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: clevis encrypt tang: Unable to fetch advertisement: '$url/adv/$sig'!: Input/output error"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(sha256sum <"$img") == "$h0" ]]; then
        ok "Tang stopped: bind refused, nothing written ($(tail -1 "$T/err"))"
else not_ok "bind without Tang: rc=$rc '$(tail -1 "$T/err")', header $( [[ $(sha256sum <"$img") == "$h0" ]] && echo same || echo changed)"; fi

# the key never in clevis's argv or environment (it went through the pipe)
[[ -s $T/clevis.log ]] || not_ok "the clevis wrapper was not used"
grep -qF -- "$KEY" "$T/clevis.log" && not_ok "the key is in clevis's argv or environment" \
        || ok "key not in clevis's argv or environment ($(grep -c '^argv:' "$T/clevis.log") runs)"
# only clevis encrypt (the key on stdin) and clevis decrypt (the JWE on stdin)
others=$(grep '^argv:' "$T/clevis.log" | grep -Ev '^argv: (encrypt (tang|sss) \{"(url|t)":.*\} -y|decrypt)$')
grep -q '^argv: encrypt tang {"url":"[^"]*","thp":"[^"]*"} -y$' "$T/clevis.log" && grep -q '^argv: decrypt$' "$T/clevis.log" &&
        [[ -z $others ]] && ok "clevis runs: encrypt tang|sss CONFIG -y, decrypt" \
        || not_ok "unexpected clevis argv: $others $(grep '^argv:' "$T/clevis.log" | head -2)"
checks_done
