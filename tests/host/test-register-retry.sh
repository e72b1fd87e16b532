#!/bin/bash
# Delivery policy: 503 twice then 200 -> retried with backoff and registered
# exactly once; a refused connection (nothing listening) is retried until the
# total limit and then fails with exit 7.
source "$(dirname "$0")/register-lib.sh"
start_controller --fail-503 2
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15

start=$(date +%s%N)
"$KILN" -v register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log" 2>&1 || { cat "$T/log"; fail "registration after two 503s failed"; }
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $(sql "SELECT group_concat(command || ':' || status) FROM (SELECT * FROM requests WHERE path = '/client/api' ORDER BY id LIMIT 3)") \
   == listZones:503,listZones:503,listZones:200 ]] || fail "requests: $(sql 'SELECT * FROM requests')"
[[ $(sql "SELECT count(*) FROM hosts") == 1 ]] || fail "expected one host after retries: $(sql 'SELECT * FROM hosts')"
[[ $(sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] || fail "addHost sent more than once"
# Two waits of at least 0.5 s and 1 s (backoff 1 s doubling, jitter [d/2, d]).
(( ms >= 1500 )) || fail "retries did not back off (took ${ms} ms)"
echo "503 twice then 200: registered once in ${ms} ms"

# Nothing listens: connection refused, retried within --timeout, then exit 7.
port=$(source "$SRC/tests/lib/http.sh"; free_port)
sed -i "s|$URL|http://127.0.0.1:$port|g" "$T/spec.yaml"
start=$(date +%s%N)
rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" --timeout 3 >"$T/log2" 2>&1 || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc == 7 ]] || { cat "$T/log2"; fail "refused connection: exit $rc, not 7"; }
grep -Eq "did not answer listZones in time after ([2-9]|[1-9][0-9]) attempts" "$T/log2" || { cat "$T/log2"; fail "refused: not retried or unclear error"; }
(( ms < 8000 )) || fail "refused connection: took ${ms} ms with --timeout 3"
echo "refused connection: gave up after ${ms} ms"
assert_no_secrets "$T"/log*
echo "ok"
