#!/bin/bash
# Concurrent registrations cannot duplicate: 25 kiln register processes
# started at once for 21 distinct node addresses (4 of them twice), against a
# stand-in that takes 100 ms for every call, end with exactly 21 hosts, one per
# address, every time (KILN_RACE_RUNS rounds, default 3), and every process
# succeeds. The stand-in refuses a second addHost for an address with
# CloudStack's 530 "... is already in the database ..."; the process that gets
# it looks again and finds the host the other one added.
source "$(dirname "$0")/register-lib.sh"
runs=${KILN_RACE_RUNS:-3}
addrs=()
for i in $(seq 1 21); do addrs+=("10.0.3.$i"); done
addrs+=(10.0.3.1 10.0.3.2 10.0.3.3 10.0.3.4)   # the same nodes, registered twice at once

for run in $(seq "$runs"); do
  start_controller --delay-ms 100
  write_spec "$T/spec.yaml"
  pids=()
  for i in "${!addrs[@]}"; do write_report "$T/r$i.json" "${addrs[$i]}"; done
  for i in "${!addrs[@]}"; do
    "$KILN" register --report "$T/r$i.json" --spec "$T/spec.yaml" --timeout 120 >"$T/log$i" 2>&1 &
    pids+=($!)
  done
  failed=0
  for i in "${!pids[@]}"; do
    rc=0; wait "${pids[$i]}" || rc=$?
    if [[ $rc != 0 ]]; then echo "--- process $i (${addrs[$i]}) exit $rc:"; cat "$T/log$i"; failed=1; fi
  done
  (( failed == 0 )) || fail "round $run: a registration failed"
  hosts=$(controller_sql "SELECT count(*) FROM hosts")
  distinct=$(controller_sql "SELECT count(DISTINCT ipaddress) FROM hosts")
  [[ $hosts == 21 && $distinct == 21 ]] || fail "round $run: $hosts hosts for 21 addresses ($distinct distinct): $(controller_sql 'SELECT ipaddress FROM hosts ORDER BY ipaddress')"
  [[ $(controller_sql "SELECT count(*) FROM hosts WHERE state != 'Up'") == 0 ]] || fail "round $run: hosts not Up: $(controller_sql "SELECT ipaddress, state FROM hosts WHERE state != 'Up'")"
  adds=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'")
  exists=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost' AND status = 530 AND reason LIKE 'Skipping host % is already in the database for resource %'")
  other=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost' AND status NOT IN (200, 530)")
  (( other == 0 )) || fail "round $run: addHost refused otherwise: $(controller_sql "SELECT status, reason FROM requests WHERE command = 'addHost' AND status != 200")"
  (( adds - exists == 21 )) || fail "round $run: $adds addHost, $exists refused as already there: not 21 added"
  # Each process says what it did: 21 added, and the doubles found (before their addHost or after its 530).
  added=$(grep -l "added to CloudStack zone 'lab'" "$T"/log* | wc -l)
  found=$(grep -lE "(was already in|found in) CloudStack zone 'lab'" "$T"/log* | wc -l)
  (( added == 21 && found == 4 )) || fail "round $run: $added processes say added, $found found (want 21 and 4)"
  echo "round $run: 21 hosts for 25 processes; addHost sent $adds times, $exists refused as already there"
  assert_no_secrets "$T"/log* "$T"/r*.json
  controller_stop
done
echo "ok: $runs rounds, 21 hosts each"
