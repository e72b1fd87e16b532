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

tmp=$(mktemp -d)
socat_pid=
cleanup() {
        [[ -n $socat_pid ]] && kill "$socat_pid" 2>/dev/null && wait "$socat_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

mkdir "$tmp/db"
/usr/libexec/tangd-keygen "$tmp/db" || { bad "tangd-keygen"; exit 1; }
sig=
for k in "$tmp"/db/*.jwk; do
        python3 -c 'import json,sys; sys.exit(0 if "verify" in json.load(open(sys.argv[1])).get("key_ops", []) else 1)' "$k" \
                && sig=$(jose jwk thp -i "$k")
done
[[ -n $sig ]] || { bad "no signing key in $tmp/db"; exit 1; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr EXEC:"/usr/libexec/tangd $tmp/db" 2>"$tmp/tang.log" &
socat_pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/adv" >/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port

img=$tmp/luks.img
truncate -s 32M "$img"
KEY="kiln-test-$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
printf '%s' "$KEY" | cryptsetup luksFormat --type luks2 --batch-mode --pbkdf pbkdf2 --pbkdf-force-iterations 1000 \
        --key-file - "$img" || { bad "luksFormat on a file"; exit 1; }

# clevis seen through a wrapper that records its argv and environment
cat >"$tmp/clevis" <<WRAP
#!/bin/bash
{ echo "argv: \$*"; env; } >>"$tmp/clevis.log"
exec /usr/bin/clevis "\$@"
WRAP
chmod +x "$tmp/clevis"
export KILN_T_CLEVIS=$tmp/clevis

# a thumbprint that is not Tang's signing key: refused, nothing written
h0=$(sha256sum <"$img")
wrong=$(printf 'x%.0s' $(seq 43))
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$wrong" >"$tmp/out" 2>"$tmp/err"; rc=$?
if ((rc == 1)) && [[ $(sha256sum <"$img") == "$h0" ]] && ! cryptsetup token export --token-id 0 "$img" >/dev/null 2>&1; then
        ok "wrong thumbprint refused, header unchanged ($(head -c 120 "$tmp/err"))"
else bad "wrong thumbprint: rc=$rc, $(cat "$tmp/err")"; fi

# the real binding, in a chroot of /
t0=$(date +%s.%N)
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$sig" >"$tmp/out" 2>"$tmp/err"; rc=$?
t1=$(date +%s.%N)
slot=$(cat "$tmp/out")
if ((rc == 0)) && [[ $slot == 1 ]]; then ok "bound and proven in keyslot $slot in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s"
else bad "bind: rc=$rc out='$slot' $(cat "$tmp/err")"; fi
# clevis's own tools accept kiln's token: list names the pin, pass (what clevis
# luks unlock and the initramfs decrypt) yields a key that opens keyslot 1
list=$(clevis luks list -d "$img" 2>&1)
[[ $list == "1: tang '{\"url\":\"$url\"}'" ]] && ok "clevis luks list: $list" || bad "clevis luks list: '$list'"
clevis luks pass -d "$img" -s 1 | cryptsetup open --test-passphrase --key-slot 1 --key-file - "$img" \
        && ok "clevis luks pass -s 1 yields the key that opens keyslot 1" || bad "clevis luks pass does not open keyslot 1"
kdf=$(cryptsetup luksDump --dump-json-metadata "$img" | jq -c '.keyslots["1"].kdf | {type, hash, iterations}')
[[ $kdf == '{"type":"pbkdf2","hash":"sha256","iterations":1000}' ]] && ok "keyslot 1: $kdf (clevis's own choice)" \
        || bad "keyslot 1 kdf: $kdf"
tok=$(cryptsetup token export --token-id 0 "$img" 2>/dev/null)
prot=$(jq -r '.jwe.protected' <<<"$tok" | tr '_-' '/+' | base64 -d 2>/dev/null)
if [[ $(jq -r .type <<<"$tok") == clevis && $(jq -c .keyslots <<<"$tok") == '["1"]' ]] &&
   [[ $(jq -r .clevis.pin <<<"$prot" 2>/dev/null) == tang && $(jq -r .clevis.tang.url <<<"$prot" 2>/dev/null) == "$url" ]]; then
        ok "LUKS2 token: type clevis, keyslot 1, pin tang, url $url"
else bad "token: $tok / $prot"; fi
printf '%s' "$KEY" | cryptsetup open --test-passphrase --key-slot 0 --key-file - "$img" \
        && ok "the spec's key still opens keyslot 0 (recovery)" || bad "recovery keyslot 0 does not open"

"$PROBE" prove "$img" / 1 >"$tmp/out" 2>"$tmp/err" && ok "proof: the pin alone opens keyslot 1" \
        || bad "prove: $(cat "$tmp/err")"
[[ ! -s $tmp/out ]] || bad "prove printed something on stdout"
# the key the pin yields (what clevis luks pass prints) never left locked memory
pinkey=$(clevis luks pass -d "$img" -s 1)
[[ ${#pinkey} -ge 32 ]] || bad "clevis luks pass printed ${#pinkey} bytes"
grep -qF -- "$pinkey" "$tmp/out" "$tmp/err" "$tmp/clevis.log" && bad "the pin's key shows in the probe's output or clevis's argv/env" \
        || ok "the pin's key (${#pinkey} bytes) is in no output, argv or environment"
"$PROBE" prove "$img" / 0 >"$tmp/out" 2>"$tmp/err"; rc=$?
((rc == 1)) && ok "proof fails for a slot without a token: $(head -c 150 "$tmp/err")" || bad "prove slot 0: rc=$rc"

# sss: two pins (the same server twice), threshold 2
printf '%s' "$KEY" | "$PROBE" bind "$img" - 2 "$url" "$sig" "$url" "$sig" >"$tmp/out" 2>"$tmp/err"; rc=$?
s2=$(cat "$tmp/out")
tok2=$(cryptsetup token export --token-id 1 "$img" 2>/dev/null)
prot2=$(jq -r '.jwe.protected' <<<"$tok2" | tr '_-' '/+' | base64 -d 2>/dev/null)
if ((rc == 0)) && [[ $s2 == 2 ]] && [[ $(jq -r .clevis.pin <<<"$prot2" 2>/dev/null) == sss ]] &&
   "$PROBE" prove "$img" - 2 2>"$tmp/err"; then
        ok "sss binding (t=2 of 2 tang pins) in keyslot 2, proven"
else bad "sss: rc=$rc slot='$s2' $(cat "$tmp/err") $prot2"; fi

# a proof that fails (here: clevis decrypt refuses) takes back the keyslot and token it added
keyslots() { cryptsetup luksDump --dump-json-metadata "$img" | jq -c '[.keyslots | keys[]], [.tokens | keys[]]'; }
before=$(keyslots)
cat >"$tmp/clevis-nodecrypt" <<WRAP
#!/bin/bash
{ echo "argv: \$*"; env; } >>"$tmp/clevis.log"
[[ \$1 == decrypt ]] && { echo "refused for the test" >&2; exit 1; }
exec /usr/bin/clevis "\$@"
WRAP
chmod +x "$tmp/clevis-nodecrypt"
printf '%s' "$KEY" | KILN_T_CLEVIS=$tmp/clevis-nodecrypt "$PROBE" bind "$img" / 1 "$url" "$sig" >"$tmp/out" 2>"$tmp/err"; rc=$?
want="unlock-probe bind: clevis decrypt of the token of keyslot 3: refused for the test: Input/output error"
if ((rc == 1)) && [[ $(tail -1 "$tmp/err") == "$want" && $(keyslots) == "$before" ]]; then
        ok "a failed proof leaves no keyslot and no token ($before)"
else bad "failed proof: rc=$rc '$(tail -1 "$tmp/err")', slots/tokens $(keyslots), before $before"; fi

# Tang stopped: the proof fails (storage exit code in the step)
kill "$socat_pid"; wait "$socat_pid" 2>/dev/null; socat_pid=
"$PROBE" prove "$img" / 1 >"$tmp/out" 2>"$tmp/err"; rc=$?
((rc == 1)) && ok "Tang stopped: proof fails ($(head -c 150 "$tmp/err"))" || bad "prove without Tang: rc=$rc"
# Tang stopped: a bind fails with clevis's own message and writes nothing
h0=$(sha256sum <"$img")
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$sig" >"$tmp/out" 2>"$tmp/err"; rc=$?
want="unlock-probe bind: clevis encrypt tang: Unable to fetch advertisement: '$url/adv/$sig'!: Input/output error"
if ((rc == 1)) && [[ $(tail -1 "$tmp/err") == "$want" && $(sha256sum <"$img") == "$h0" ]]; then
        ok "Tang stopped: bind refused, nothing written ($(tail -1 "$tmp/err"))"
else bad "bind without Tang: rc=$rc '$(tail -1 "$tmp/err")', header $( [[ $(sha256sum <"$img") == "$h0" ]] && echo same || echo changed)"; fi

# the key never in clevis's argv or environment (it went through the pipe)
[[ -s $tmp/clevis.log ]] || bad "the clevis wrapper was not used"
grep -qF -- "$KEY" "$tmp/clevis.log" && bad "the key is in clevis's argv or environment" \
        || ok "key not in clevis's argv or environment ($(grep -c '^argv:' "$tmp/clevis.log") runs)"
# only clevis encrypt (the key on stdin) and clevis decrypt (the JWE on stdin)
others=$(grep '^argv:' "$tmp/clevis.log" | grep -Ev '^argv: (encrypt (tang|sss) \{"(url|t)":.*\} -y|decrypt)$')
grep -q '^argv: encrypt tang {"url":"[^"]*","thp":"[^"]*"} -y$' "$tmp/clevis.log" && grep -q '^argv: decrypt$' "$tmp/clevis.log" &&
        [[ -z $others ]] && ok "clevis runs: encrypt tang|sss CONFIG -y, decrypt" \
        || bad "unexpected clevis argv: $others $(grep '^argv:' "$tmp/clevis.log" | head -2)"
exit $fail
