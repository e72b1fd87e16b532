#!/bin/bash
# CloudStack answers every failed addHost with HTTP 530. "... is already in
# the database ..." means another run added the host meanwhile: kiln looks
# again, finds it and succeeds without a second addHost. Any other 530 is
# final: kiln looks once more (an older CloudStack says "Cannot find the
# server resources" for a host it has), then exits 7 with CloudStack's text,
# at once (no retries), having sent addHost once and added nothing.
source "$(dirname "$0")/register-lib.sh"

# Exists: the host appears between kiln's listHosts and its addHost (the
# stand-in takes 1 s a call, so the test adds it meanwhile, as a second run would).
start_controller --delay-ms 1000
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 &
pid=$!
for _ in $(seq 400); do
  [[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'listHosts'") -ge 1 ]] && break
  sleep 0.02
done
controller_admin '{"seed_hosts": {"zone": "lab", "addresses": ["10.0.2.15"]}}'
rc=0; wait "$pid" || rc=$?
[[ $rc == 0 ]] || { cat "$T/log1"; fail "530 'already in the database': exit $rc, not 0"; }
id=$(controller_sql "SELECT id FROM hosts")
grep -qF "found in CloudStack zone 'lab', cluster 'c1' as host $id after its addHost" "$T/log1" || { cat "$T/log1"; fail "exists: no 'found after its addHost' message"; }
[[ $(controller_sql "SELECT group_concat(command || ':' || status) FROM requests WHERE path = '/client/api'") == \
   listZones:200,listPods:200,listClusters:200,listHosts:200,addHost:530,listHosts:200 ]] || fail "exists: requests $(controller_sql "SELECT command, status, reason FROM requests")"
[[ $(controller_sql "SELECT reason FROM requests WHERE command = 'addHost'") == "Skipping host 10.0.2.15 because "*" is already in the database for resource "*"-LibvirtComputingResource with ID $id" ]] \
  || fail "exists: the stand-in's 530 text: $(controller_sql "SELECT reason FROM requests WHERE command = 'addHost'")"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "exists: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
[[ $(jq -r '.registration.cloudstack | [.result, (.added|tostring), (.found_after_addhost|tostring), (.addhost_sent|tostring), .host_id] | join(" ")' "$T/report.json") \
   == "SUCCESS false true 1 $id" ]] || fail "exists: report $(jq -c .registration.cloudstack "$T/report.json")"
controller_stop

# Final: the host cannot be reached (SSH required, none behind the address).
start_controller
controller_admin '{"ssh": {"hosts": {}, "required": true}}'
write_spec "$T/spec.yaml"
write_report "$T/r2.json" 10.0.2.16
start=$(date +%s%N)
rc=0; "$KILN" register --report "$T/r2.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[[ $rc == 7 ]] || { cat "$T/log2"; fail "final 530: exit $rc, not 7"; }
grep -qxF "kiln: error: registration of node '52:54:00:12:34:56' failed: CloudStack refused addHost (HTTP 530, errorcode 530): Unable to add the host: Cannot find the server resources at http://10.0.2.16" "$T/log2" \
  || grep -qF "registration of node '52:54:00:12:34:56' failed: CloudStack refused addHost (HTTP 530, errorcode 530): Unable to add the host: Cannot find the server resources at http://10.0.2.16" "$T/log2" \
  || { cat "$T/log2"; fail "final 530: not CloudStack's text"; }
[[ $(controller_sql "SELECT group_concat(command || ':' || status) FROM requests WHERE path = '/client/api'") == \
   listZones:200,listPods:200,listClusters:200,listHosts:200,addHost:530,listHosts:200 ]] || fail "final 530: requests $(controller_sql "SELECT command, status FROM requests")"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "final 530: a host was added"
(( ms < 10000 )) || fail "final 530: took ${ms} ms (retried?)"
[[ $(jq -r '.registration.cloudstack.result' "$T/r2.json") == FAIL ]] || fail "final 530: report $(jq -c .registration "$T/r2.json")"
# the report delivered to the webhook says why
[[ $(controller_sql "SELECT body FROM reports" | jq -r .registration.cloudstack.error) == "CloudStack refused addHost (HTTP 530, errorcode 530): Unable to add the host: Cannot find the server resources at http://10.0.2.16" ]] \
  || fail "final 530: the delivered report: $(controller_sql 'SELECT body FROM reports')"
assert_no_secrets "$T"/log* "$T/report.json" "$T/r2.json"
echo "ok: 530 'already there' -> looked again and found (one addHost); other 530 final in ${ms} ms"
