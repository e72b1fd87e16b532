#!/bin/bash
# A controller that takes the connection and never answers: every attempt
# times out, kiln retries within the total limit (less the webhook report's
# own share, a quarter of it) and then gives up with a clear error and exit
# 7 -- it does not hang the node.
source "$(dirname "$0")/register-lib.sh"
start_controller --hang
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15

start=$(date +%s%N)
rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" --timeout 10 --request-timeout 2 >"$T/log" 2>&1 || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc == 7 ]] || { cat "$T/log"; fail "never answering: exit $rc, not 7"; }
grep -Eq "CloudStack at 'http://127.0.0.1:$PORT/client/api' did not answer listZones in time after [2-9] attempts \(last: Operation timed out" "$T/log" \
  || { cat "$T/log"; fail "never answering: unclear error"; }
# CloudStack's part of 10 s is 7.5 s (the report keeps 2.5 s, and is taken at
# once): a 2 s attempt, then a wait from backoff.h's fault window (0.5-4.5 s
# for the first retry), so at least two attempts; slack above the limit for
# process start-up on a loaded machine (ASan builds).
(( ms >= 7000 && ms < 15000 )) || fail "gave up after ${ms} ms; the limit was 10 s, CloudStack's part 7.5 s"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE reason = 'hang: never answered'") -ge 2 ]] || fail "not retried: $(controller_sql 'SELECT * FROM requests')"
assert_no_secrets "$T/log" "$T/report.json"
echo "ok: gave up after ${ms} ms (limit 10 s)"
