#!/bin/bash
# The webhook report has a time budget of its own: with a CloudStack API that
# takes connections and never answers, kiln register --timeout 8 gives
# CloudStack 6 s (one or more 2 s attempts: the first retry waits 0.25-4.25 s,
# so a late draw leaves no room for a second) and still delivers the FAIL report (with CloudStack's error)
# to the webhook, and exits 7 within the 8 s. A second run of the same report
# (CloudStack answering again) is delivered under a new delivery id, so a
# receiver that drops duplicates keeps the SUCCESS.
source "$(dirname "$0")/register-lib.sh"
start_controller --hang
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15
run_id=$(jq -r .run_id "$T/report.json")
start=$(date +%s%N)
rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" --timeout 8 --request-timeout 2 >"$T/log1" 2>&1 || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc == 7 ]] || { cat "$T/log1"; fail "dead CloudStack: exit $rc, not 7"; }
grep -qE "registration of node '52:54:00:12:34:56' failed: CloudStack at 'http://127.0.0.1:$PORT/client/api' did not answer listZones in time after [1-9] attempts? \(last: Operation timed out" "$T/log1" \
  || { cat "$T/log1"; fail "dead CloudStack: unclear error"; }
(( ms >= 5500 && ms < 12000 )) || fail "dead CloudStack: took ${ms} ms with --timeout 8"
body=$(controller_sql "SELECT body FROM events WHERE type = 'report'")
[[ -n $body ]] || { cat "$T/log1"; fail "no report reached the webhook"; }
[[ $(jq -r '[.result, .registration.cloudstack.result] | join(" ")' <<<"$body") == "SUCCESS FAIL" ]] || fail "report received: $(jq -c .registration <<<"$body")"
jq -r .registration.cloudstack.error <<<"$body" | grep -qE "^CloudStack at 'http://127.0.0.1:$PORT/client/api' did not answer listZones in time" \
  || fail "the report lacks CloudStack's error: $(jq -c .registration <<<"$body")"
# CloudStack's part ends at 6 s (three quarters of 8), whatever its last
# attempt was; the report reaches the webhook after that and before the 8 s.
report_at=$(controller_sql "SELECT received FROM events WHERE type = 'report'")
after=$(python3 -c 'import sys, datetime as d; t = d.datetime.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=d.timezone.utc); print(int(t.timestamp() * 1000 - int(sys.argv[1]) / 1e6))' "$start" "$report_at")
echo "report received ${after} ms after the start"
(( after >= 5500 && after < 8500 )) || fail "report received ${after} ms after the start (CloudStack's part ends at 6000 ms, the run at 8000)"
d1=$(controller_sql "SELECT delivery FROM events WHERE type = 'report'")
[[ $d1 =~ ^$run_id/report/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] || fail "delivery id '$d1'"
echo "dead CloudStack: FAIL report delivered, exit 7 after ${ms} ms"

# CloudStack back: the same report again, a new delivery id, the SUCCESS kept.
controller_admin '{"hang": false}'
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "second run failed"; }
[[ $(controller_sql "SELECT count(*) FROM events WHERE type = 'report'") == 2 ]] || fail "second report dropped as a duplicate: $(controller_sql "SELECT delivery FROM events WHERE type = 'report'")"
d2=$(controller_sql "SELECT delivery FROM events WHERE type = 'report' ORDER BY id DESC LIMIT 1")
[[ $d2 != "$d1" && $d2 == "$run_id/report/"* ]] || fail "second delivery id '$d2' (first '$d1')"
[[ $(controller_sql "SELECT body FROM reports WHERE run_id = '$run_id'" | jq -r .registration.cloudstack.result) == SUCCESS ]] || fail "the receiver kept the FAIL"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE reason = 'duplicate delivery'") == 0 ]] || fail "a report was taken as a duplicate"
assert_no_secrets "$T"/log* "$T/report.json"
echo "ok: the report has its own budget and a new delivery id per run"
