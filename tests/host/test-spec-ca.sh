#!/bin/bash
# The spec's own `ca:` serves every HTTPS transfer the spec causes, beside
# the CA the command was given (docs/spec.md#ca). nginx on 127.0.0.1 serves
# the image and takes the webhook's POSTs over TLS only, with a certificate
# of a throwaway CA the system does not trust:
#  - kiln apply on a loop disk with `ca:` as a path, as PEM text and as a
#    URL: the image and the webhook's report arrive over HTTPS (nginx's
#    access log, the target tree, the saved run report)
#  - without `ca:` the image download fails TLS verification
#  - `ca:` holding no certificate: refused before the first write (the disk
#    hashes the same)
#  - kiln register: `--ca` (another CA) and the spec's `ca:` are both
#    trusted, whichever of them signed the server
set -uo pipefail
: "${KILN:?}" "${SRC:?}" "${BUILD:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools openssl losetup mkfs.ext4 findmnt jq zstd
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
source "$SRC/tests/lib/loop.sh"
source "$SRC/tests/lib/spec.sh"
loop_init spec-ca

# two throwaway CAs: A signs nginx's certificate, B signs nothing here
mkdir -p "$T/www"
for ca in a b; do
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca-$ca.key" -out "$T/ca-$ca.pem" -days 2 \
    -subj "/CN=kiln spec-ca test CA $ca" 2>/dev/null || { echo "FAIL: openssl"; exit 1; }
done
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$T/ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca-a.pem" -CAkey "$T/ca-a.key" -CAcreateserial -out "$T/srv.pem" -days 2 \
  -extfile "$T/ext" 2>/dev/null || { echo "FAIL: openssl x509"; exit 1; }
cp "$T/ca-a.pem" "$T/www/ca-a.pem"
printf 'not a certificate\n' >"$T/no-cert.pem"

small_image
cp "$SMALL_DIR/small.tar.zst" "$T/www/"
# the webhook: nginx answers every POST to /hook with 204; kiln is only
# ever given https:// URLs, so what the access log shows came over TLS
HTTP_LOCATIONS='location = /hook { return 204; }' http_start "$T/www" "$T/srv.pem" "$T/srv.key" || exit 1
S=https://127.0.0.1:$HTTPS_PORT
hook_posts() { grep -c '"POST /hook HTTP/[0-9.]*" 204 ' "$HTTP_DIR/access.log"; }
image_gets() { grep -c '"GET /small.tar.zst HTTP/[0-9.]*" 200 ' "$HTTP_DIR/access.log"; }

truncate -s 256M "$T/a.img"
attach "$T/a.img"; A=$ATTACHED
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

ca_spec() {  # ca_spec CA-LINE: the spec with that `ca:` line (or none)
  spec_write - root-disk -- HOSTNAME=kiln-spec-ca DISK="$A"
  cat <<YAML
$1
image: {url: "$S/small.tar.zst", sha256: "$SMALL_SUM"}
register:
  webhook: {url: "$S/hook"}
finish: none
YAML
}
fresh_apply() {  # fresh_apply WANT_RC: kiln apply --fresh of $T/spec.yaml, output in $T/out
  umount -R "$T/target" 2>/dev/null
  expect_kiln "$1" "$T/out" apply --yes --fresh "$T/spec.yaml"
}

pem_inline=$(sed 's/^/  /' "$T/ca-a.pem")
for form in path pem url; do
  case $form in
    path) ca_spec "ca: $T/ca-a.pem" ;;
    pem) ca_spec "ca: |
$pem_inline" ;;
    url) ca_spec "ca: http://127.0.0.1:$HTTP_PORT/ca-a.pem" ;;
  esac >"$T/spec.yaml"
  posts0=$(hook_posts); gets0=$(image_gets)
  fresh_apply 0 || continue
  [[ -f $T/target/etc/kiln-image ]] || not_ok "ca: as $form: the image is not on the target"
  (($(image_gets) == gets0 + 1)) || not_ok "ca: as $form: nginx saw $(($(image_gets) - gets0)) image GETs over TLS, expected 1"
  (($(hook_posts) == posts0 + 1)) || not_ok "ca: as $form: $(($(hook_posts) - posts0)) webhook POSTs over TLS, expected 1"
  [[ $(jq -r .registration.webhook.result "$T/run/report.json" 2>/dev/null) == SUCCESS ]] \
    || not_ok "ca: as $form: the webhook registration: $(jq -c .registration "$T/run/report.json")"
  cmp -s <(cat "$T/ca-a.pem"; echo) <(sed '$d' "$T/run/spec-ca.pem"; echo) \
    || not_ok "ca: as $form: RUN_DIR/spec-ca.pem is not the CA"
  ok "ca: as $form: the image and the webhook's report went over HTTPS"
done

# without ca: the image download fails TLS verification, and so does the
# failure's report to the webhook
ca_spec "" >"$T/spec.yaml"
posts0=$(hook_posts); gets0=$(image_gets)
if fresh_apply 5; then
  grep -q "image '$S/small.tar.zst': download failed: .*certificate" "$T/out" \
    || not_ok "without ca: no TLS error for the image: $(grep -i image "$T/out" | tail -2)"
  (($(image_gets) == gets0 && $(hook_posts) == posts0)) || not_ok "without ca: nginx answered a request over TLS"
  ok "without ca: the image is refused by TLS verification"
fi

# ca: with no certificate in it: refused before anything is written
umount -R "$T/target" 2>/dev/null
ca_spec "ca: $T/no-cert.pem" >"$T/spec.yaml"
before=$(sha256sum <"$T/a.img")
rc=0; "$KILN" apply --yes --fresh "$T/spec.yaml" >"$T/out" 2>&1 || rc=$?
[[ $rc == 8 ]] || not_ok "a ca: without a certificate: exit $rc, expected 8"
grep -qF "failed to load the CA of spec '$T/spec.yaml' ($T/no-cert.pem): it holds no PEM certificate; nothing was written" "$T/out" \
  || not_ok "a ca: without a certificate: $(tail -2 "$T/out")"
[[ $(sha256sum <"$T/a.img") == "$before" ]] && ok "a ca: without a certificate is refused, the disk unchanged" \
  || not_ok "a ca: without a certificate changed the disk"

# kiln register: --ca and the spec's ca: are both trusted
ca_spec "ca: $T/ca-b.pem" >"$T/spec-b.yaml"
ca_spec "ca: $T/ca-a.pem" >"$T/spec-a.yaml"
cp "$T/run/report.json" "$T/report.json" 2>/dev/null || not_ok "no saved run report"
for c in "a b" "b a"; do
  set -- $c
  posts0=$(hook_posts)
  rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec-$2.yaml" --ca "$T/ca-$1.pem" --save "$T/r.json" \
    >"$T/out" 2>&1 || rc=$?
  [[ $rc == 0 ]] || { tail -3 "$T/out"; not_ok "kiln register --ca CA-$1 with ca: CA-$2 exited $rc"; }
  (($(hook_posts) > posts0)) && ok "kiln register: --ca CA-$1 and ca: CA-$2 both trusted (server signed by CA-a)" \
    || not_ok "kiln register --ca CA-$1, ca: CA-$2: no webhook POST over TLS"
done
posts0=$(hook_posts)
rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec-b.yaml" --ca "$T/ca-b.pem" >"$T/out" 2>&1 || rc=$?
[[ $rc == 7 && $(hook_posts) == "$posts0" ]] && ok "kiln register with only CA-b is refused by TLS" \
  || not_ok "kiln register with only CA-b: exit $rc, $(($(hook_posts) - posts0)) POSTs"

checks_done
