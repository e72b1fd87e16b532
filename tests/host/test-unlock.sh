#!/bin/bash
# luks[].unlock against a real Tang on 127.0.0.1 (Debian's tangd behind
# socat), on a LUKS2 image file (keyslots and tokens need no device-mapper):
# kiln's unlock_bind() makes a random key, encrypts it in process with
# clevis's pin (agent/storage/tang.c, sss.c: libjose, as clevis-encrypt-tang
# and clevis-encrypt-sss do), adds the keyslot (PBKDF2, 1000 iterations, as
# clevis does) and the clevis token with libcryptsetup, and proves it: the
# stored token decrypted in process (through Tang's /rec), the key in locked
# memory, opens the new keyslot. Checks: a wrong thumbprint binds nothing
# (header unchanged), both when Tang has no advertisement for it and when a
# server hands out the real advertisement for any thumbprint (kiln's own
# trust check), for tang and for one pin of sss; S1 and S512 thumbprints pin
# too; the token is clevis's and clevis's own tools accept it (clevis luks
# list; clevis luks pass and clevis decrypt yield the key that opens the
# slot, as clevis luks unlock and the initramfs do, for tang and sss); what
# clevis makes (clevis encrypt tang and sss, clevis luks bind) kiln's decrypt
# opens; the keyslot's PBKDF, the recovery key still opens slot 0, the proof
# fails for a slot without a token and once Tang is stopped, a failed proof
# (a Tang whose /rec fails) takes the token and keyslot back, sss t=1 of 2
# gets by with one Tang failing, with Tang stopped a bind fails with the
# fetch's error and writes nothing, kiln runs no clevis process, and kiln's
# json-c calls bind to json-c, not to jansson (both define json_object_get).
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

touch "$T/clevis.log"

# kiln's calls to json_object_get are json-c's (jansson, libjose's JSON, has one too)
if objdump -T "$PROBE" >"$T/dynsyms" 2>/dev/null; then
        b=$(awk '$NF == "json_object_get" { print $(NF-1) }' "$T/dynsyms" | sort -u | tr '\n' ' ')
        [[ $b == "(JSONC_0.14) " ]] && ok "json_object_get binds to json-c: $b" || not_ok "json_object_get binds to: '$b'"
fi

# a thumbprint that is not Tang's signing key: Tang has no advertisement for it; refused, nothing written
h0=$(sha256sum <"$img")
wrong=$(printf 'x%.0s' $(seq 43))
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$wrong" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: cannot fetch the Tang advertisement '$url/adv/$wrong': HTTP status 404: Protocol error"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(sha256sum <"$img") == "$h0" ]] &&
   ! cryptsetup token export --token-id 0 "$img" >/dev/null 2>&1; then
        ok "wrong thumbprint refused, header unchanged ($(tail -1 "$T/err"))"
else not_ok "wrong thumbprint: rc=$rc, '$(cat "$T/err")'"; fi

# a server in front of Tang that hands out Tang's real advertisement for any
# thumbprint and fails every recovery (POST /rec: 500)
curl -sf "$url/adv" >"$T/adv.jws" || fail "no advertisement from Tang"
front_port=$(free_port)
python3 - "$front_port" "$T/adv.jws" 2>>"$T/front.log" <<'PY' &
import http.server, sys
adv = open(sys.argv[2], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path.startswith("/adv")
        self.send_response(200 if ok else 404)
        self.send_header("Content-Type", "application/jose+json")
        self.send_header("Content-Length", str(len(adv) if ok else 0))
        self.end_headers()
        if ok: self.wfile.write(adv)
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(500); self.send_header("Content-Length", "0"); self.end_headers()
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
front_pid=$!
cleanup_pid "$front_pid"
wait_listen "$front_port" "$front_pid" || fail "the front server did not start"
front=http://127.0.0.1:$front_port
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$front" "$wrong" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: the thumbprint '$wrong' is no signing key of Tang '$front': Key was rejected by service"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(sha256sum <"$img") == "$h0" ]]; then
        ok "a real advertisement not signed by the pinned key refused, header unchanged ($(tail -1 "$T/err"))"
else not_ok "wrong thumbprint, real advertisement: rc=$rc, '$(cat "$T/err")'"; fi

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
# the token's JWE, compact again, through the real clevis decrypt
jq -r '.jwe | "\(.protected).\(.encrypted_key).\(.iv).\(.ciphertext).\(.tag)"' <<<"$tok" | clevis decrypt |
        cryptsetup open --test-passphrase --key-slot 1 --key-file - "$img" \
        && ok "clevis decrypt of kiln's JWE yields the key that opens keyslot 1" || not_ok "clevis decrypt of kiln's JWE"
hdr=$(jq -r '.jwe.protected' <<<"$tok" | tr '_-' '/+' | base64 -d 2>/dev/null | jq -c '{alg, enc, kid: (.kid | length), pin: .clevis.pin, adv: (.clevis.tang.adv.keys | length), epk: .epk.kty}')
[[ $hdr == '{"alg":"ECDH-ES","enc":"A256GCM","kid":43,"pin":"tang","adv":2,"epk":"EC"}' ]] \
        && ok "protected header as clevis makes it: $hdr" || not_ok "protected header: $hdr"

# what the real clevis makes, kiln's in-process decrypt opens
secret="kiln-test-plaintext-$RANDOM"
got=$(printf '%s' "$secret" | clevis encrypt tang "{\"url\":\"$url\",\"thp\":\"$sig\"}" -y | "$PROBE" decrypt 2>"$T/err")
[[ $got == "$secret" ]] && ok "clevis encrypt tang -> kiln's tang_decrypt: the plaintext back" \
        || not_ok "kiln's decrypt of clevis's JWE: '$got' $(cat "$T/err")"
got=$(printf '%s' "$secret" | clevis encrypt sss "{\"t\":2,\"pins\":{\"tang\":[{\"url\":\"$url\",\"thp\":\"$sig\"},{\"url\":\"$url\",\"thp\":\"$sig\"}]}}" -y |
        "$PROBE" decrypt 2>"$T/err")
[[ $got == "$secret" ]] && ok "clevis encrypt sss (t=2 of 2 tang pins) -> kiln's sss_decrypt: the plaintext back" \
        || not_ok "kiln's decrypt of clevis's sss JWE: '$got' $(cat "$T/err")"

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
hdr2=$(jq -c '{alg, enc, pin: .clevis.pin, t: .clevis.sss.t, p: (.clevis.sss.p | length), jwe: (.clevis.sss.jwe | length)}' <<<"$prot2")
[[ $hdr2 == '{"alg":"dir","enc":"A256GCM","pin":"sss","t":2,"p":43,"jwe":2}' ]] \
        && ok "sss protected header as clevis makes it: $hdr2" || not_ok "sss protected header: $hdr2"
clevis luks pass -d "$img" -s 2 | cryptsetup open --test-passphrase --key-slot 2 --key-file - "$img" \
        && ok "clevis luks pass -s 2 (clevis's sss decrypt of kiln's JWE) yields the key that opens keyslot 2" \
        || not_ok "clevis luks pass does not open keyslot 2"
# one sss pin's thumbprint wrong: refused, nothing written
h0=$(sha256sum <"$img")
printf '%s' "$KEY" | "$PROBE" bind "$img" - 2 "$url" "$sig" "$front" "$wrong" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: the thumbprint '$wrong' is no signing key of Tang '$front': Key was rejected by service"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(sha256sum <"$img") == "$h0" ]]; then
        ok "sss with a wrong thumbprint refused, header unchanged ($(tail -1 "$T/err"))"
else not_ok "sss wrong thumbprint: rc=$rc, '$(cat "$T/err")'"; fi

# the signing key's SHA-1 and SHA-512 thumbprints pin it too (clevis's alternative; the spec's S512)
for a in S1 S512; do
        for k in "$T"/tang/db/*.jwk; do
                jq -e '.key_ops | index("verify")' "$k" >/dev/null && t=$(jose jwk thp -a "$a" -i "$k")
        done
        printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$t" >"$T/out" 2>"$T/err"; rc=$?
        s3=$(cat "$T/out")
        if ((rc == 0)) && [[ -n $s3 ]] && "$PROBE" prove "$img" / "$s3" 2>>"$T/err"; then
                ok "a $a thumbprint (${#t} characters) binds and proves (keyslot $s3)"
        else not_ok "$a thumbprint: rc=$rc $(cat "$T/err")"; fi
        [[ -n $s3 ]] && { clevis luks unbind -f -d "$img" -s "$s3" >/dev/null 2>&1 || not_ok "unbind $s3"; }
done

# a keyslot that the real clevis luks bind made: kiln's proof (its decrypt) opens it
printf '%s' "$KEY" | clevis luks bind -y -d "$img" -k - tang "{\"url\":\"$url\",\"thp\":\"$sig\"}" >/dev/null 2>"$T/err" &&
        cslot=$(cryptsetup luksDump --dump-json-metadata "$img" | jq -r '[.keyslots | keys[] | tonumber] | max') &&
        "$PROBE" prove "$img" / "$cslot" 2>>"$T/err" \
        && ok "clevis luks bind's keyslot $cslot proven by kiln's decrypt" || not_ok "clevis luks bind + kiln prove: $(cat "$T/err")"
clevis luks unbind -f -d "$img" -s "$cslot" >/dev/null 2>&1 || not_ok "clevis luks unbind -s $cslot"

# a proof that fails takes back the keyslot and token it added: the tang pin
# through the front server (its advertisement is Tang's: the encryption is
# good, the recovery fails)
keyslots() { cryptsetup luksDump --dump-json-metadata "$img" | jq -c '[.keyslots | keys[]], [.tokens | keys[]]'; }
before=$(keyslots)
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$front" "$sig" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: tang decrypt of the token of keyslot 3 of $img: Tang '$front' did not answer the key recovery: HTTP status 500: Resource temporarily unavailable"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(keyslots) == "$before" ]]; then
        ok "a failed proof (tang) leaves no keyslot and no token ($before)"
else not_ok "failed proof (tang): rc=$rc '$(tail -1 "$T/err")', slots/tokens $(keyslots), before $before"; fi
# the same for sss: t=2, one pin's Tang does not answer /rec
printf '%s' "$KEY" | "$PROBE" bind "$img" / 2 "$url" "$sig" "$front" "$sig" >"$T/out" 2>"$T/err"; rc=$?
want="unlock-probe bind: sss decrypt of the token of keyslot 3 of $img: 1 of 2 sss pins answered: Tang '$front' did not answer the key recovery: HTTP status 500: Required key not available"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == "$want" && $(keyslots) == "$before" ]]; then
        ok "a failed proof (sss) leaves no keyslot and no token ($before)"
else not_ok "failed proof (sss): rc=$rc '$(tail -1 "$T/err")', slots/tokens $(keyslots), before $before"; fi
# t=1 of the same two pins: the second answers for the first
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$front" "$sig" "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
s4=$(cat "$T/out")
((rc == 0)) && [[ -n $s4 ]] && ok "sss t=1 of 2, the first pin's Tang failing: bound and proven in keyslot $s4" \
        || not_ok "sss t=1: rc=$rc $(cat "$T/err")"
[[ -n $s4 ]] && { clevis luks unbind -f -d "$img" -s "$s4" >/dev/null 2>&1 || not_ok "unbind $s4"; }

# Tang stopped: the proof fails (storage exit code in the step)
tang_stop
"$PROBE" prove "$img" / 1 >"$T/out" 2>"$T/err"; rc=$?
((rc == 1)) && ok "Tang stopped: proof fails ($(head -c 150 "$T/err"))" || not_ok "prove without Tang: rc=$rc"
# Tang stopped: a bind fails with clevis's own message and writes nothing
h0=$(sha256sum <"$img")
printf '%s' "$KEY" | "$PROBE" bind "$img" / 1 "$url" "$sig" >"$T/out" 2>"$T/err"; rc=$?
# (curl's own text between: "Failed to connect to 127.0.0.1 port P after N ms: ...")
want="unlock-probe bind: cannot fetch the Tang advertisement '$url/adv/$sig': Failed to connect to 127.0.0.1 port $TANG_PORT after * ms: Couldn't connect to server: Resource temporarily unavailable"
if ((rc == 1)) && [[ $(tail -1 "$T/err") == $want && $(sha256sum <"$img") == "$h0" ]]; then
        ok "Tang stopped: bind refused, nothing written ($(tail -1 "$T/err"))"
else not_ok "bind without Tang: rc=$rc '$(tail -1 "$T/err")', header $( [[ $(sha256sum <"$img") == "$h0" ]] && echo same || echo changed)"; fi

# kiln ran no clevis at all (tang and sss in process; the wrapper logs every run)
[[ ! -s $T/clevis.log ]] && ok "kiln ran no clevis process" \
        || not_ok "kiln ran clevis: $(grep '^argv:' "$T/clevis.log" | head -3)"
checks_done
