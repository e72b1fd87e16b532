#!/bin/bash
# After addHost without an answer kiln looks before it sends again. A 4 s
# addHost with a 2 s request timeout: the request times out, CloudStack goes
# on (the host is Connecting), kiln looks, waits for the host to come Up and
# sends no second addHost: one host. An addHost lost on the way (a proxy's
# 503, no CloudStack verdict): kiln looks, finds nothing, sends it again: one host.
source "$(dirname "$0")/register-lib.sh"
start_controller --addhost-ms 4000
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15
"$KILN" -v register --report "$T/report.json" --spec "$T/spec.yaml" --request-timeout 2 >"$T/log1" 2>&1 || { cat "$T/log1"; fail "timed-out addHost: registration failed"; }
id=$(controller_sql "SELECT id FROM hosts")
grep -qF "found in CloudStack zone 'lab', cluster 'c1' as host $id after its addHost" "$T/log1" || { cat "$T/log1"; fail "timed-out addHost: no 'found after its addHost'"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "timed-out addHost: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] || fail "timed-out addHost: sent $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") times"
[[ $(controller_sql "SELECT state FROM hosts") == Up ]] || fail "timed-out addHost: host $(controller_sql 'SELECT state FROM hosts')"
# every look came after the addHost was sent (none before kiln knew it had sent it)
looks=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'listHosts' AND id > (SELECT id FROM requests WHERE command = 'addHost')")
(( looks >= 1 )) || fail "timed-out addHost: no look after it"
[[ $(jq -r '.registration.cloudstack | [.result, (.added|tostring), (.found_after_addhost|tostring), (.addhost_sent|tostring), .host_state] | join(" ")' "$T/report.json") \
   == "SUCCESS false true 1 Up" ]] || fail "timed-out addHost: report $(jq -c .registration.cloudstack "$T/report.json")"
echo "4 s addHost, 2 s timeout: 1 host, addHost sent once, $looks looks after it"
controller_stop

start_controller
controller_admin '{"fail_503": 1, "fail_command": "addHost"}'
write_spec "$T/spec.yaml"
write_report "$T/r2.json" 10.0.2.16
"$KILN" register --report "$T/r2.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "lost addHost: registration failed"; }
[[ $(controller_sql "SELECT group_concat(command || ':' || status) FROM requests WHERE path = '/client/api'") == \
   listZones:200,listPods:200,listClusters:200,listHosts:200,addHost:503,listHosts:200,addHost:200 ]] || fail "lost addHost: requests $(controller_sql "SELECT command, status FROM requests")"
grep -q "added to CloudStack zone 'lab'" "$T/log2" || { cat "$T/log2"; fail "lost addHost: no 'added'"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "lost addHost: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
assert_no_secrets "$T"/log* "$T/report.json" "$T/r2.json"
echo "ok: looked before every resend"
