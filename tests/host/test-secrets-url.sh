#!/bin/bash
# Credentials in URLs (userinfo "user:pass@" and a query string such as
# ?token=...&sig=...) never reach what kiln shows, while the real URL is
# still the one requested: kiln fetch and kiln image at debug level (curl's
# request line, its Authorization header, a redirect's Location and curl's
# remarks about it) on success, a 404, a refused connection and a wrong
# digest (the image's incomplete marker left on disk); kiln plan (text and
# JSON) and validate of a spec whose image, CloudStack and webhook URLs
# carry credentials, and validate's error for a URL without "://".
# Each secret is looked for raw, URL-encoded and (user:pass) in base64.
# URLs are shown as scheme://host[:port]/path with "?..." for the query.
set -euo pipefail
source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/image-fixtures.sh"
test_tmpdir secrets-url
PW=$(secret urlpw-) TOK=$(secret urltok-) SIG=$(secret urlsig-) RTOK=$(secret redirtok-)
SECRET_FORMS=$T/forms
printf '%s\n' "$PW" "$TOK" "$SIG" "$RTOK" "$(printf 'kiln:%s' "$PW" | base64 -w0)" >"$T/forms"

small_image
mkdir -p "$T/www"
head -c 300000 /dev/urandom >"$T/www/blob"
SUM=$(sha256sum "$T/www/blob" | cut -d' ' -f1)
cp "$SMALL_DIR/small.tar.zst" "$T/www/"
HTTP_LOCATIONS="location = /redir { return 302 /blob?sig=$RTOK; }" http_start "$T/www"
H=127.0.0.1:$HTTP_PORT
Q="token=$TOK&sig=$SIG"

# success: the real URL (with its credentials) is requested, the shown one has none
run_kiln 0 -v fetch "http://kiln:$PW@$H/blob?$Q" --sha256 "$SUM" -o "$T/out"
cmp "$T/www/blob" "$T/out" || fail "content differs"
cp "$T/err" "$T/log-fetch"
expect_err "fetched 'http://$H/blob?...': 300000 bytes"
grep -qF "curl > GET /blob?... HTTP/1.1" "$T/err" || { cat "$T/err"; fail "no redacted request line at debug level"; }
grep -qF "curl > Authorization: [redacted]" "$T/err" || { cat "$T/err"; fail "no redacted Authorization header"; }
grep -qF "GET /blob?$Q " "$HTTP_DIR/access.log" || fail "nginx did not get the real URL: $(tail -2 "$HTTP_DIR/access.log")"
# a redirect whose target carries a token (Location, curl's remark on it)
run_kiln 0 -v fetch "http://$H/redir" --sha256 "$SUM" -o "$T/out"
cp "$T/err" "$T/log-redir"
grep -qF "curl < Location: http://$H/blob?..." "$T/err" || { cat "$T/err"; fail "no redacted Location"; }
grep -qF "GET /blob?sig=$RTOK " "$HTTP_DIR/access.log" || fail "the redirect was not followed to the real URL"
# 404: final, the error shows the URL without credentials
run_kiln 8 -v fetch "http://kiln:$PW@$H/missing?$Q" -o "$T/out"
cp "$T/err" "$T/log-404"
expect_err "failed to fetch 'http://$H/missing?...': HTTP 404"
# a refused connection
port=$(free_port)
run_kiln 8 -v fetch "http://kiln:$PW@127.0.0.1:$port/x?$Q" --retries 0 -o "$T/out"
cp "$T/err" "$T/log-refused"
expect_err "failed to fetch 'http://127.0.0.1:$port/x?...': "

# kiln image: a 404, and a wrong digest (the incomplete marker stays on disk)
mkdir -p "$T/target"
run_kiln 5 -v image "http://kiln:$PW@$H/none.tar.zst?$Q" --sha256 "$SMALL_SUM" --target "$T/target"
cp "$T/err" "$T/log-image-404"
expect_err "failed to install image 'http://$H/none.tar.zst?...' onto '$T/target': download failed: HTTP 404"
run_kiln 5 -v image "http://kiln:$PW@$H/small.tar.zst?$Q" --sha256 "$SUM" --target "$T/target"
cp "$T/err" "$T/log-image-sha"
expect_err "image 'http://$H/small.tar.zst?...' failed verification"
[[ -n $(find "$T/target" -maxdepth 1 -name '.*incomplete*' -size +0) ]] || fail "no incomplete marker: $(ls -A "$T/target")"
if grep -raFf "$T/forms" "$T/target" >"$T/hit"; then fail "a URL credential was written into the target: $(head -c 300 "$T/hit")"; fi

# plan and validate: every URL of the spec carries credentials
python3 - "$SRC/templates/kvm-raid10-luks-lvm.yaml" "$T/spec.yaml" "$PW" "$TOK" <<'PY'
import sys
src, dst, pw, tok = sys.argv[1:]
t = open(src).read()
for old, new in (('url: "http://boot.lab/images/kvm-base.tar.zst"',
                  'url: "https://kiln:%s@boot.lab/images/kvm-base.tar.zst?token=%s"' % (pw, tok)),
                 ('endpoint: "http://controller.lab:8080/client/api"',
                  'endpoint: "http://kiln:%s@controller.lab:8080/client/api"' % pw)):
    assert t.count(old) == 1, old
    t = t.replace(old, new)
old = '    host_password: "fake-host-password-not-a-secret"\n'
assert t.count(old) == 1
t = t.replace(old, old + '  webhook:\n    url: "https://hooks.lab/kiln/${uuid}?token=%s"\n' % tok)
open(dst, "w").write(t)
PY
"$KILN" -v validate "$T/spec.yaml" >"$T/log-validate" 2>&1 || { cat "$T/log-validate"; fail "the spec does not validate"; }
"$KILN" -v plan "$T/spec.yaml" --inventory "$SRC/tests/inventories/qemu-4disk.json" >"$T/plan.txt" 2>&1 ||
  { cat "$T/plan.txt"; fail "plan failed"; }
"$KILN" plan "$T/spec.yaml" --inventory "$SRC/tests/inventories/qemu-4disk.json" --json >"$T/plan.json" 2>>"$T/plan.txt" ||
  { cat "$T/plan.txt"; fail "plan --json failed"; }
for want in "unpack tar image https://boot.lab/images/kvm-base.tar.zst?..." \
            "install kiln-register.service: addHost with CloudStack at http://controller.lab:8080/client/api" "report to webhook https://hooks.lab/kiln/\${uuid}?..."; do
  grep -qF "$want" "$T/plan.txt" || { cat "$T/plan.txt"; fail "plan does not say: $want"; }
done
# URLs the spec check refuses: the errors quote them without their credentials
sed "s|https://kiln:$PW@boot.lab|https:/kiln:$PW@boot.lab|" "$T/spec.yaml" >"$T/bad.yaml"
rc=0; "$KILN" -v validate "$T/bad.yaml" >"$T/log-bad" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -qF "'url' of image is not a url: 'boot.lab/images/kvm-base.tar.zst?...'" "$T/log-bad" ||
  { cat "$T/log-bad"; fail "not a url: exit $rc"; }

no_secret_forms "$T"/log-* "$T/plan.txt" "$T/plan.json"
echo "ok: no URL credential in $(ls "$T"/log-* | wc -l) outputs, the target and 2 plans; the real URLs were requested"
