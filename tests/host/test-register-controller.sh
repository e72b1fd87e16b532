#!/bin/bash
# The stand-in controller checks what CloudStack checks: requests are sent
# here with curl (not with kiln), so a controller that accepted anything would
# fail this test. A valid signature is accepted; a wrong one, an unknown key,
# an expired request and a signatureversion=3 request without expires are
# refused with 401 and CloudStack's error body; a missing parameter gets 431;
# a webhook post with a wrong HMAC gets 401.
NO_KILN=1 source "$(dirname "$0")/register-lib.sh"
NO_KILN=1 start_controller

export CTL_SRC="$SRC/tests/controller" SECRET_KEY API_KEY
# All signed requests made at once (python starts slowly on a busy machine),
# one query string per line: a valid listZones; the same expired a minute
# ago; signatureversion=3 without expires; addHost without its parameters.
mapfile -t Q < <(python3 - <<'PY'
import datetime, os, sys, urllib.parse
sys.path.insert(0, os.environ["CTL_SRC"])
import controller

# The controller's signer reproduces the developer guide's published example.
p = {"apikey": "plgWJfZK4gyS3mOMTVmjUVg-X-jlWlnfaUJ9GAbBbf9EdM-kAYMmAiLqzzq1ElZLYq_u38zCm0bewzGUdP66mg",
     "command": "listUsers", "response": "json"}
s = controller.cloudstack_signature(p, "VDaACYb0LV9eNjTetIOElcVQkvJck_J_QljX_FcHRj87ZKiy0z0ty0ZsYBkoXkY9b7eq1EhwJaw7FF3akA3KBQ")
assert s == "TTpdDq/7j/J58XCRHomKoQXEQds=", s

def sign(cmd, off, expires=True, **extra):
    p = {"command": cmd, "response": "json", "apikey": os.environ["API_KEY"], "signatureversion": "3"}
    if expires:
        t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=off)
        p["expires"] = t.strftime("%Y-%m-%dT%H:%M:%S+0000")
    p.update(extra)
    p["signature"] = controller.cloudstack_signature(p, os.environ["SECRET_KEY"])
    return urllib.parse.urlencode(p, quote_via=urllib.parse.quote)

print(sign("listZones", 300))
print(sign("listZones", -60))
print(sign("listZones", 0, expires=False))
print(sign("addHost", 300, hypervisor="KVM"))
PY
)
(( ${#Q[@]} == 4 )) || fail "could not sign the test requests (or the guide's example differs)"
call() { curl -s -o "$T/body" -w '%{http_code}' "$URL/client/api?$1"; }

good=${Q[0]}
[[ $(call "$good") == 200 ]] || fail "a correctly signed request was refused: $(cat "$T/body")"
grep -q '"name": "lab"' "$T/body" || fail "listZones does not list zone lab: $(cat "$T/body")"

# Same request, the signature's first character changed.
sig=${good##*signature=}
[[ ${sig:0:1} == B ]] && other=C || other=B
bad="${good%signature=*}signature=$other${sig:1}"
[[ $(call "$bad") == 401 ]] || fail "a request with a bad signature was not refused with 401"
grep -q '"listzonesresponse": {"uuidList": \[\], "errorcode": 401, "errortext": "unable to verify user credentials and/or request signature"}' "$T/body" \
  || fail "bad signature: not CloudStack's error body: $(cat "$T/body")"

# A parameter changed after signing.
[[ $(call "${good/command=listZones/command=listHosts}") == 401 ]] || fail "a request changed after signing was not refused"

# Correctly signed, but expired a minute ago.
[[ $(call "${Q[1]}") == 401 ]] || fail "an expired request was not refused with 401"
grep -q '"errorcode": 401' "$T/body" || fail "expired: not CloudStack's error body: $(cat "$T/body")"

# signatureversion=3 without expires (correctly signed over what is sent).
[[ $(call "${Q[2]}") == 401 ]] || fail "signatureversion 3 without expires was not refused"

# Unknown API key.
[[ $(call "${good/apikey=$API_KEY/apikey=someone-else}") == 401 ]] || fail "an unknown apikey was not refused"

# Signed and valid, but addHost without its required parameters: 431.
[[ $(call "${Q[3]}") == 431 ]] || fail "addHost without zoneid did not answer 431"
grep -q 'missing parameter zoneid' "$T/body" || fail "431 without the reason: $(cat "$T/body")"

# The controller recorded why it refused each one.
reasons=$(controller_sql "SELECT group_concat(reason) FROM requests")
for want in "bad signature" "request expired" "signatureversion 3 without expires" "unknown apikey"; do
  [[ $reasons == *"$want"* ]] || fail "controller did not record '$want' (recorded: $reasons)"
done
[[ $(controller_sql "SELECT count(*) FROM requests WHERE reason = 'bad signature'") == 2 ]] || fail "bad signature and tampering not both refused as 'bad signature'"

# Webhook: a body with a wrong HMAC is refused, the right one accepted.
body='{"type":"stage-begin","stage":"x"}'
good_sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$HMAC_KEY" -hex | sed 's/.*= //')
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Kiln-Signature: sha256=$good_sig" -H 'X-Kiln-Event: stage-begin' \
  -H 'X-Kiln-Delivery: r1/1' --data-binary "$body" "$URL/kiln/webhook")
[[ $code == 200 ]] || fail "webhook with the right HMAC got $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "X-Kiln-Signature: sha256=${good_sig/?/0}0" -H 'X-Kiln-Event: stage-begin' \
  --data-binary "$body" "$URL/kiln/webhook")
[[ $code == 401 ]] || fail "webhook with a wrong HMAC got $code, not 401"
code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Kiln-Event: stage-begin' --data-binary "$body" "$URL/kiln/webhook")
[[ $code == 401 ]] || fail "webhook without a signature got $code, not 401"
[[ $(controller_sql "SELECT count(*) FROM events") == 1 ]] || fail "controller stored a refused webhook event"
echo "ok: controller verifies signatures, expiry, parameters and webhook HMACs"
