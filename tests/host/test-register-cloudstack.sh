#!/bin/bash
# kiln register against the stand-in controller: resolves zone/pod/cluster,
# adds the host once (a second run finds it by IP and adds nothing), sends the
# stage events and the final report to the webhook with a valid HMAC (the
# controller refuses any other), reports a failed run without adding it, and
# no secret of the spec reaches kiln's log, the report or any event.
source "$(dirname "$0")/register-lib.sh"
start_controller
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15

"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 || { cat "$T/log1"; fail "first registration failed"; }
grep -q "added to CloudStack zone 'lab', cluster 'c1' as host" "$T/log1" || { cat "$T/log1"; fail "no 'added' message"; }

[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "expected exactly one host: $(controller_sql 'SELECT * FROM hosts')"
[[ $(controller_sql "SELECT ipaddress || ' ' || url || ' ' || username || ' ' || password_given || ' ' || hypervisor FROM hosts") == "10.0.2.15 http://10.0.2.15 root 1 KVM" ]] \
  || fail "host recorded as: $(controller_sql 'SELECT * FROM hosts')"
[[ $(controller_sql "SELECT z.name || '/' || p.name || '/' || c.name FROM hosts h JOIN zones z ON z.id = h.zone_id
          JOIN pods p ON p.id = h.pod_id JOIN clusters c ON c.id = h.cluster_id") == lab/p1/c1 ]] || fail "host in the wrong zone/pod/cluster"
# Every request verified, none refused (the webhook HMACs included).
[[ $(controller_sql "SELECT count(*) FROM requests WHERE status != 200") == 0 ]] || fail "controller refused requests: $(controller_sql 'SELECT * FROM requests')"
[[ $(controller_sql "SELECT group_concat(command) FROM requests WHERE path = '/client/api'") == listZones,listPods,listClusters,listHosts,addHost ]] \
  || fail "unexpected CloudStack calls: $(controller_sql 'SELECT * FROM requests')"
# Events: the register stage's begin, the report, the stage's end; each with run and node id.
run_id=$(jq -r .run_id "$T/report.json")
[[ $(controller_sql "SELECT group_concat(type) FROM events") == stage-begin,report,stage-end ]] || fail "events: $(controller_sql 'SELECT type FROM events')"
[[ $(controller_sql "SELECT count(*) FROM events WHERE run_id = '$run_id' AND node_id = '52:54:00:12:34:56'") == 3 ]] \
  || fail "events do not all carry the run id and node id"
[[ $(controller_sql "SELECT body FROM events WHERE type = 'stage-end'" | jq -r '.stage + " " + .result + " " + .run_id') == "register SUCCESS $run_id" ]] \
  || fail "stage-end event: $(controller_sql "SELECT body FROM events WHERE type = 'stage-end'")"
controller_sql "SELECT body FROM reports" >"$T/received.json"
[[ $(jq -r '.registration.cloudstack.result + " " + (.bench.crypt_write_mbps|tostring)' "$T/received.json") == "SUCCESS 388.2" ]] \
  || fail "the report received lacks the CloudStack result or the bench figures"
# The saved report now records the registration.
[[ $(jq -r '[.registration.cloudstack.result, (.registration.cloudstack.added|tostring), .registration.webhook.result,
             ([.stages[].name]|join(","))] | join(" ")' "$T/report.json") == "SUCCESS true SUCCESS mkfs root,register" ]] \
  || fail "saved report does not record the registration: $(cat "$T/report.json")"

# Second run: found by IP, nothing added.
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "second registration failed"; }
grep -q "was already in CloudStack zone 'lab'" "$T/log2" || { cat "$T/log2"; fail "second run did not find the host"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "second run added a second host"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] || fail "second run called addHost"

# A failed run is reported to the webhook but not added.
write_report "$T/failed.json" 10.0.2.16 FAIL
"$KILN" register --report "$T/failed.json" --spec "$T/spec.yaml" >"$T/log3" 2>&1 || { cat "$T/log3"; fail "reporting a failed run failed"; }
grep -q "not added to CloudStack" "$T/log3" || { cat "$T/log3"; fail "failed run: no message"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "a failed run was added as a host"
[[ $(controller_sql "SELECT body FROM reports WHERE run_id = '$(jq -r .run_id "$T/failed.json")'" | jq -r .registration.cloudstack.result) == SKIPPED ]] \
  || fail "the failed run's report lacks SKIPPED"

# --ip overrides the report's address (first boot with a new address).
write_report "$T/other.json" 10.0.2.15
"$KILN" register --report "$T/other.json" --spec "$T/spec.yaml" --ip 10.0.2.20 >"$T/log4" 2>&1 || { cat "$T/log4"; fail "--ip run failed"; }
[[ $(controller_sql "SELECT group_concat(ipaddress) FROM (SELECT ipaddress FROM hosts ORDER BY ipaddress)") == 10.0.2.15,10.0.2.20 ]] || fail "--ip did not register 10.0.2.20"

# An unknown cluster: a clear error naming what exists, exit 7, nothing added.
sed -i 's/cluster: c1/cluster: c7/' "$T/spec.yaml"
write_report "$T/r5.json" 10.0.2.30
rc=0; "$KILN" register --report "$T/r5.json" --spec "$T/spec.yaml" >"$T/log5" 2>&1 || rc=$?
[[ $rc == 7 ]] || { cat "$T/log5"; fail "unknown cluster: exit $rc, not 7"; }
grep -q "CloudStack has no cluster 'c7' (it has: 'c1')" "$T/log5" || { cat "$T/log5"; fail "unknown cluster: unclear error"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 2 ]] || fail "unknown cluster still added a host"

# No secret anywhere: kiln's output, the saved reports, everything the controller got.
controller_dump >"$T/dump.json"
jq -e '.events | length >= 9' "$T/dump.json" >/dev/null || fail "dump lacks the events"
assert_no_secrets "$T"/log* "$T/report.json" "$T/failed.json" "$T/other.json" "$T/r5.json" "$T/dump.json"
echo "ok: registered once, events and report delivered and signed, no secrets leaked"
