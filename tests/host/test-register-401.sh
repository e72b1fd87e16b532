#!/bin/bash
# 401 is final: no retry, a clear error with CloudStack's own text, exit 7,
# no host added. Once from the fault mode, once for real (wrong secret key,
# refused by the controller's signature check).
source "$(dirname "$0")/register-lib.sh"
start_controller --fail-401
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15

register_expect 7 "$T/log" "$T/report.json" 401
grep -q "error: registration of node '52:54:00:12:34:56' failed: CloudStack refused listZones (HTTP 401, errorcode 401): unable to verify user credentials and/or request signature" "$T/log" \
  || { cat "$T/log"; fail "401: unclear error"; }
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/client/api'") == 1 ]] || fail "401 was retried: $(controller_sql 'SELECT * FROM requests')"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "a host was added"
jq -e '.registration.cloudstack | .result == "FAIL" and (.error | contains("HTTP 401"))' "$T/report.json" >/dev/null \
  || fail "the saved report does not record the failure"
controller_stop

# The real check: a wrong secret key signs wrongly; the controller refuses it.
start_controller
write_spec "$T/spec.yaml" "wrong-secret-key-0123456789"
write_report "$T/report.json" 10.0.2.15
register_expect 7 "$T/log2" "$T/report.json" "wrong key"
grep -q "CloudStack refused listZones (HTTP 401, errorcode 401): unable to verify user credentials and/or request signature" "$T/log2" \
  || { cat "$T/log2"; fail "wrong key: unclear error"; }
[[ $(controller_sql "SELECT group_concat(reason) FROM requests WHERE path = '/client/api'") == "bad signature" ]] || fail "wrong key: $(controller_sql 'SELECT * FROM requests')"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "a host was added with a wrong key"
grep -qF "wrong-secret-key-0123456789" "$T/log2" "$T/report.json" && fail "the wrong secret key leaked"
assert_no_secrets "$T"/log* "$T/report.json"
echo "ok: 401 final, clear, exit 7"
