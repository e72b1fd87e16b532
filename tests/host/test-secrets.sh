#!/bin/bash
# Secrets with characters that JSON escapes or URL-encoding changes (/ + & = %
# ' < > space, non-ASCII) never reach kiln's output at debug level (curl's
# debug lines where there are any), a run report, an event or anything the stand-in
# controller recorded: on the success path and on every error path
# registration has (a wrong signature: 401; 503 until the time is up; nothing
# listening; a path that is not the API), nor the output of validate and plan
# for a spec with a LUKS passphrase (valid, and with an error beside it).
# URL credentials (userinfo, a query token) on the CloudStack endpoint and
# the webhook are checked the same way (tests/host/test-secrets-url.sh does
# fetch, image, plan and validate).
# Each secret is looked for raw, JSON-escaped (with and without \/) and
# URL-encoded (%20 and +).
source "$(dirname "$0")/register-lib.sh"
SECRET_KEY=$(secret "cs/secret+&=%'<x> é-")
HOST_PASSWORD=$(secret "host pw/+&=%'<y>é-")
HMAC_KEY=$(secret "hmac/key+&=%'<z> é-")
PASSPHRASE=$(secret "luks pass/+&=%'é-")
SECRET_FORMS=$T/forms

# every form a secret could take on the way out, one a line
python3 - "$SECRET_KEY" "$HOST_PASSWORD" "$HMAC_KEY" "$PASSPHRASE" >"$T/forms" <<'PY'
import json, sys, urllib.parse
forms = set()
for s in sys.argv[1:]:
    for f in (s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1],
              json.dumps(s, ensure_ascii=False)[1:-1].replace("/", "\\/"),
              urllib.parse.quote(s, safe=""), urllib.parse.quote_plus(s, safe="")):
        forms.add(f)
print("\n".join(sorted(forms)))
PY
(( $(wc -l <"$T/forms") >= 16 )) || fail "expected at least 16 forms of the secrets"


start_controller
write_spec "$T/spec.yaml"
# URL credentials: userinfo on the CloudStack endpoint and the webhook, a
# token in the webhook's query string. The controller still gets the real
# URLs (it answers the same; it records paths only); kiln shows them as
# scheme://host:port/path with "?..." (url.h), in its output, the report and
# the events.
URL_PW="urlpw-" URL_TOKEN="urltok-"
sed -i "s|endpoint: \"$URL/client/api\"|endpoint: \"http://kiln:$URL_PW@127.0.0.1:$PORT/client/api\"|;
        s|url: \"$URL/kiln/webhook\"|url: \"http://hook:$URL_PW@127.0.0.1:$PORT/kiln/webhook?token=$URL_TOKEN\&sig=$URL_TOKEN\"|" "$T/spec.yaml"
grep -qF "$URL_TOKEN" "$T/spec.yaml" && grep -qF "kiln:$URL_PW@" "$T/spec.yaml" || fail "the spec's URLs were not given credentials"
printf '%s\n' "$URL_PW" "$URL_TOKEN" "$(printf 'kiln:%s' "$URL_PW" | base64 -w0)" "$(printf 'hook:%s' "$URL_PW" | base64 -w0)" >>"$T/forms"

# Success, at debug level: registered, events and report delivered and
# verified by the controller (so the signature over these characters agrees).
write_report "$T/r1.json" 10.0.2.15
"$KILN" -v register --report "$T/r1.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 || { cat "$T/log1"; fail "registration failed"; }
grep -q "added to CloudStack zone 'lab'" "$T/log1" || { cat "$T/log1"; fail "no 'added' message"; }
[[ $(controller_sql "SELECT count(*) FROM requests WHERE status != 200") == 0 ]] || fail "controller refused: $(controller_sql 'SELECT * FROM requests')"
[[ $(controller_sql "SELECT password_given FROM hosts") == 1 ]] || fail "the host password did not arrive"
jq -e --arg u "http://127.0.0.1:$PORT" '.registration.webhook.url == "\($u)/kiln/webhook?..." and
  .registration.cloudstack.endpoint == "\($u)/client/api"' "$T/r1.json" >/dev/null ||
  fail "the report does not show the URLs without credentials: $(jq -c .registration "$T/r1.json")"

# 401: CloudStack's refusal, final
controller_admin '{"fail_401": true}'
write_report "$T/r2.json" 10.0.2.16
rc=0; "$KILN" -v register --report "$T/r2.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || rc=$?
[[ $rc == 7 ]] && grep -q "HTTP 401" "$T/log2" || { cat "$T/log2"; fail "401: exit $rc"; }
# 503 until the time is up
controller_admin '{"fail_401": false, "fail_503": 1000}'
write_report "$T/r3.json" 10.0.2.17
rc=0; "$KILN" -v register --report "$T/r3.json" --spec "$T/spec.yaml" --timeout 2 >"$T/log3" 2>&1 || rc=$?
[[ $rc == 7 ]] && grep -q "did not answer listZones in time" "$T/log3" || { cat "$T/log3"; fail "503: exit $rc"; }
controller_admin '{"fail_503": 0}'
# a path that is not the API (404 with a JSON body that is not CloudStack's)
sed "s|/client/api|/client/nowhere|" "$T/spec.yaml" >"$T/spec-404.yaml"
write_report "$T/r4.json" 10.0.2.18
rc=0; "$KILN" -v register --report "$T/r4.json" --spec "$T/spec-404.yaml" --timeout 5 >"$T/log4" 2>&1 || rc=$?
[[ $rc == 7 ]] || { cat "$T/log4"; fail "404: exit $rc"; }
grep -qF "CloudStack request listZones to 'http://127.0.0.1:$PORT/client/nowhere' failed" "$T/log4" ||
  { cat "$T/log4"; fail "404: the endpoint is not shown without its credentials"; }
controller_dump >"$T/dump.json"
jq -e '.events | length >= 3' "$T/dump.json" >/dev/null || fail "the dump lacks the events"
# nothing listening
controller_stop
write_report "$T/r5.json" 10.0.2.19
rc=0; "$KILN" -v register --report "$T/r5.json" --spec "$T/spec.yaml" --timeout 2 >"$T/log5" 2>&1 || rc=$?
[[ $rc == 7 ]] || { cat "$T/log5"; fail "refused connection: exit $rc"; }
grep -qF "'http://127.0.0.1:$PORT/client/api'" "$T/log5" ||
  { cat "$T/log5"; fail "refused connection: the endpoint is not shown without its credentials"; }

# validate and plan with a LUKS passphrase and the register secrets
python3 - "$SRC/templates/kvm-raid10-luks-lvm.yaml" "$T/luks.yaml" "$PASSPHRASE" "$SECRET_KEY" "$HOST_PASSWORD" <<'PY'
import json, sys
src, dst, pp, sk, hp = sys.argv[1:]
t = open(src).read()
for old, new in (("fake-lab-passphrase-not-a-secret", pp), ("fake-secret-key-not-a-secret", sk),
                 ("fake-host-password-not-a-secret", hp)):
    assert t.count(old) == 1, old
    t = t.replace('"%s"' % old, json.dumps(new, ensure_ascii=False))
# Tang-bound (luks-bind and boot-loader steps in the plan): the key still shows nowhere
k = "    key: {passphrase: %s}\n" % json.dumps(pp, ensure_ascii=False)
assert t.count(k) == 1
t = t.replace(k, k + '    unlock: {tang: [{url: "http://127.0.0.1:7500", thp: "Vv-tkM-gZBdT7uMCAMaKHBdDFYs2jEYGIatP0bP1Sjg"}]}\n')
open(dst, "w").write(t)
PY
"$KILN" -v validate "$T/luks.yaml" >"$T/log6" 2>&1 || { cat "$T/log6"; fail "the passphrase spec does not validate"; }
"$KILN" -v plan "$T/luks.yaml" --inventory "$SRC/tests/inventories/qemu-4disk.json" >"$T/plan.txt" 2>&1 ||
  { cat "$T/plan.txt"; fail "plan failed"; }
"$KILN" -v plan "$T/luks.yaml" --inventory "$SRC/tests/inventories/qemu-4disk.json" --json >"$T/plan.json" 2>>"$T/plan.txt" ||
  { cat "$T/plan.txt"; fail "plan --json failed"; }
grep -q "passphrase from the spec" "$T/plan.txt" || fail "the plan does not describe the key source"
grep -q " luks-bind .*tang http://127.0.0.1:7500" "$T/plan.txt" && grep -q " boot-loader " "$T/plan.txt" ||
  fail "the plan has no luks-bind and boot-loader steps"
"$KILN" -v apply "$T/luks.yaml" --inventory "$SRC/tests/inventories/qemu-4disk.json" --dry-run >"$T/log9" 2>&1 ||
  { cat "$T/log9"; fail "apply --dry-run failed"; }
grep -q "luks-bind" "$T/log9" || { cat "$T/log9"; fail "apply --dry-run does not show the luks-bind step"; }
# an error beside the secrets: the spec is refused, the secrets stay out of the message
printf 'bogus_top_level: 1\n' >>"$T/luks.yaml"
rc=0; "$KILN" -v validate "$T/luks.yaml" >"$T/log7" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "unknown top-level key 'bogus_top_level'" "$T/log7" || { cat "$T/log7"; fail "bad spec: exit $rc"; }
# a secret where a list belongs is not echoed either
sed -i 's/^bogus_top_level: 1$//; s/^\(    secret_key: \)\(.*\)$/\1[\2]/' "$T/luks.yaml"
rc=0; "$KILN" -v validate "$T/luks.yaml" >"$T/log8" 2>&1 || rc=$?
[[ $rc == 2 ]] && grep -q "secret_key" "$T/log8" || { cat "$T/log8"; fail "secret_key as a list: exit $rc"; }

no_secret_forms "$T"/log* "$T"/r[1-5].json "$T/dump.json" "$T/plan.txt" "$T/plan.json"
echo "ok: no form of any secret in 9 outputs (one a dry run with a Tang-bound volume), 5 reports, the controller's records and 2 plans"
