#!/bin/bash
# kiln.ca= given as a URL: `kiln boot` fetches the CA bundle, saves it as
# RUN_DIR/ca.pem and uses that one file for every later HTTPS transfer (the
# spec here; the keys, the image and the controller get the same path), or,
# when the spec has its own ca:, both in RUN_DIR/spec-ca.pem. The
# spec is served over HTTPS by nginx on 127.0.0.1 with a certificate of a
# test CA the system does not trust: without kiln.ca= the boot must fail.
set -euo pipefail
[[ -n ${TRACE:-} ]] && set -x
command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 77; }
source "$SRC/tests/lib/http.sh"
test_tmpdir boot-ca
export KILN_RUN_DIR=$T/run

mkdir -p "$T/www"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/www/ca.pem" -days 2 -subj "/CN=kiln boot test CA" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj "/CN=127.0.0.1" 2>/dev/null
echo "subjectAltName=IP:127.0.0.1" >"$T/ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/www/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/srv.pem" -days 2 \
  -extfile "$T/ext" 2>/dev/null
cp "$SRC/tests/rig/specs/apply-raid1-lvm-luks.yaml" "$T/www/spec.yaml"
http_start "$T/www" "$T/srv.pem" "$T/srv.key"
INV=$SRC/tests/inventories/qemu-4disk.json
S=https://127.0.0.1:$HTTPS_PORT
SPEC=$S/spec.yaml

echo "# kiln.ca=URL: the HTTPS spec verifies against it, and it is kept as RUN_DIR/ca.pem"
echo "kiln.spec=$SPEC kiln.ca=http://127.0.0.1:$HTTP_PORT/ca.pem" >"$T/cmdline"
run_kiln 0 boot --cmdline "$T/cmdline" --inventory "$INV" --dry-run
grep -qF "fetched spec '$SPEC'" "$T/err" || { cat "$T/err"; fail "spec not fetched"; }
cmp "$T/www/ca.pem" "$T/run/ca.pem" || fail "RUN_DIR/ca.pem is not the CA bundle"

echo "# the spec's own ca: (a URL, fetched over HTTPS trusting kiln.ca=) joins kiln.ca= in RUN_DIR/spec-ca.pem"
{ echo "ca: $S/ca.pem"; cat "$T/www/spec.yaml"; } >"$T/www/spec-ca.yaml"
echo "kiln.spec=$S/spec-ca.yaml kiln.ca=http://127.0.0.1:$HTTP_PORT/ca.pem" >"$T/cmdline"
run_kiln 0 boot --cmdline "$T/cmdline" --inventory "$INV" --dry-run
cmp <(cat "$T/www/ca.pem"; echo; cat "$T/www/ca.pem"; echo) "$T/run/spec-ca.pem" \
  || fail "RUN_DIR/spec-ca.pem is not kiln.ca= and then the spec's ca:"
echo "# a ca: that cannot be fetched stops the boot (exit 8), before the plan"
{ echo "ca: $S/missing.pem"; cat "$T/www/spec.yaml"; } >"$T/www/spec-ca.yaml"
run_kiln 8 boot --cmdline "$T/cmdline" --inventory "$INV" --dry-run
expect_err "failed to load the CA of spec '$S/spec-ca.yaml' ($S/missing.pem): HTTP 404; nothing was written"

echo "# without kiln.ca= the same spec is refused (TLS verification), nothing saved"
rm -rf "$T/run"
echo "kiln.spec=$SPEC" >"$T/cmdline"
run_kiln 8 boot --cmdline "$T/cmdline" --inventory "$INV" --dry-run
grep -qF "failed to fetch spec '$SPEC'" "$T/err" || { cat "$T/err"; fail "no TLS failure message"; }
[[ ! -e $T/run/ca.pem ]] || fail "a CA file appeared without kiln.ca="
echo "ok"
