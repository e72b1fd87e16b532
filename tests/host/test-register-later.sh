#!/bin/bash
# CloudStack's "later" (issue 27 item 5): an answer that says "not now" is
# retried within the registration's budget, CloudStack's verdicts stay final.
# "Later" is HTTP 503 or 429 whatever the body (CloudStack's error JSON
# included: API_LIMIT_EXCEED is 429) and errorcode 534
# (RESOURCE_UNAVAILABLE_ERROR); agent/report/cloudstack.c lists the rest as
# verdicts. Against the stand-in controller, failing its first calls with
# CloudStack's error JSON ({"<command>response": {"errorcode": C, ...}}):
#   - 503 "busy", no Retry-After: retried at the push-back pace (after at
#     least 1 s), registered, addHost once;
#   - 429 on addHost twice, Retry-After 1: each time kiln waits at least the
#     Retry-After, looks (listHosts) and sends again: one host, addHost sent
#     3 times, never while the host was there;
#   - 534 on listPods: retried (a fault's pace), registered;
#   - 533 INSUFFICIENT_CAPACITY_ERROR is a verdict: exit 7 at once, its
#     text, one request, no addHost;
#   - 429 (Retry-After 1: a wait of 1-5 s) until the budget ends
#     (--timeout 10: CloudStack's part 7.5 s, so at least two attempts):
#     exit 7 with CloudStack's text, for listZones (no addHost) and for
#     addHost (no host).
source "$(dirname "$0")/register-lib.sh"
node="registration of node '52:54:00:12:34:56' failed"
requests() { controller_sql "SELECT group_concat(command || ':' || status) FROM requests WHERE path = '/client/api'"; }
# gap A B: seconds from API request A to API request B (1-based, the controller's clock)
api_time() { controller_sql "SELECT time FROM requests WHERE path = '/client/api' ORDER BY id LIMIT 1 OFFSET $(( $1 - 1 ))"; }
gap() { controller_sql "SELECT printf('%.2f', (julianday('$(api_time "$2")') - julianday('$(api_time "$1")')) * 86400)"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
# register LOG [kiln register options]: exit code in rc, wall ms in ms
register() {
  local log=$1; shift
  local start; start=$(date +%s%N)
  rc=0; "$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" "$@" >"$log" 2>&1 || rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
}
fresh() {   # fresh ADMIN_JSON: a new controller, spec and report, the fault set
  start_controller
  controller_admin "$1"
  write_spec "$T/spec.yaml"
  write_report "$T/report.json" 10.0.2.15
}
ok_chain="listPods:200,listClusters:200,listHosts:200,addHost:200"

# 1. the issue's case: 503 with CloudStack's error JSON, no Retry-After
fresh '{"fail_503": 1, "fail_command": "listZones", "fail_status": 503, "fail_errorcode": 503, "fail_text": "busy"}'
register "$T/log1"
[[ $rc == 0 ]] || { cat "$T/log1"; fail "503 busy: exit $rc, not 0"; }
[[ $(requests) == "listZones:503,listZones:200,$ok_chain" ]] || fail "503 busy: requests $(requests)"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "503 busy: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
g=$(gap 1 2)
ge "$g" 1.0 || fail "503 busy: retried after $g s, before the push-back floor (1 s)"
echo "503 busy (errorcode 503), no Retry-After: retried after $g s, one addHost"
controller_stop

# 2. API_LIMIT_EXCEED on addHost, twice, Retry-After 1
fresh '{"fail_503": 2, "fail_command": "addHost", "fail_status": 429, "fail_errorcode": 429, "retry_after": 1}'
register "$T/log2"
[[ $rc == 0 ]] || { cat "$T/log2"; fail "429 addHost: exit $rc, not 0"; }
[[ $(requests) == listZones:200,listPods:200,listClusters:200,listHosts:200,addHost:429,listHosts:200,addHost:429,listHosts:200,addHost:200 ]] \
  || fail "429 addHost: requests $(requests)"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "429 addHost: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
[[ $(controller_sql "SELECT reason FROM requests WHERE command = 'addHost' LIMIT 1") == "fault: 429" ]] || fail "429 addHost: $(controller_sql 'SELECT * FROM requests')"
for pair in "5 6" "7 8"; do
  g=$(gap $pair)
  ge "$g" 1.0 || fail "429 addHost: looked again after $g s, before the Retry-After (1 s)"
done
id=$(controller_sql "SELECT id FROM hosts")
[[ $(jq -r '.registration.cloudstack | [.result, (.added|tostring), (.addhost_sent|tostring), .host_id] | join(" ")' "$T/report.json") \
   == "SUCCESS true 3 $id" ]] || fail "429 addHost: report $(jq -c .registration.cloudstack "$T/report.json")"
echo "429 API_LIMIT_EXCEED on addHost twice, Retry-After 1: looked before each resend, one host, addHost sent 3 times"
controller_stop

# 3. RESOURCE_UNAVAILABLE_ERROR (534) on listPods
fresh '{"fail_503": 1, "fail_command": "listPods", "fail_status": 534, "fail_errorcode": 534}'
register "$T/log3"
[[ $rc == 0 ]] || { cat "$T/log3"; fail "534: exit $rc, not 0"; }
[[ $(requests) == "listZones:200,listPods:534,$ok_chain" ]] || fail "534: requests $(requests)"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1 ]] || fail "534: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
echo "534 on listPods: retried, one addHost"
controller_stop

# 4. a verdict stays final: INSUFFICIENT_CAPACITY_ERROR (533)
fresh '{"fail_503": 1, "fail_command": "listZones", "fail_status": 533, "fail_errorcode": 533, "fail_text": "Insufficient capacity"}'
register "$T/log4"
[[ $rc == 7 ]] || { cat "$T/log4"; fail "533: exit $rc, not 7"; }
grep -qxF "error: $node: CloudStack refused listZones (HTTP 533, errorcode 533): Insufficient capacity" "$T/log4" \
  || { cat "$T/log4"; fail "533: not CloudStack's verdict"; }
[[ $(requests) == listZones:533 ]] || fail "533: requests $(requests) (retried?)"
(( ms < 5000 )) || fail "533: took $ms ms"
echo "533: final in $ms ms, one request"
controller_stop

# 5. 429 until the budget ends: on listZones (nothing added), then on addHost (no host)
fresh '{"fail_503": 1000, "fail_command": "listZones", "fail_status": 429, "fail_errorcode": 429, "retry_after": 1}'
register "$T/log5" --timeout 10
[[ $rc == 7 ]] || { cat "$T/log5"; fail "429 forever: exit $rc, not 7"; }
n=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'listZones'")
grep -qxF "error: $node: CloudStack still said later to listZones when the time ran out, after $n attempts (HTTP 429, errorcode 429): The given user has reached his/her account api limit, please retry after 1000 ms." "$T/log5" \
  || { cat "$T/log5"; fail "429 forever: message ($n listZones)"; }
(( n >= 2 )) || fail "429 forever: $n listZones, not retried"
[[ $(requests) == $(printf 'listZones:429,%.0s' $(seq "$n") | sed 's/,$//') ]] || fail "429 forever: requests $(requests)"
(( ms < 14000 )) || fail "429 forever: took $ms ms with --timeout 10"
controller_stop

fresh '{"fail_503": 1000, "fail_command": "addHost", "fail_status": 429, "fail_errorcode": 429, "retry_after": 1}'
register "$T/log6" --timeout 10
[[ $rc == 7 ]] || { cat "$T/log6"; fail "429 addHost forever: exit $rc, not 7"; }
grep -qxF "error: $node: CloudStack said later to addHost (HTTP 429, errorcode 429): The given user has reached his/her account api limit, please retry after 1000 ms., and the time ran out" "$T/log6" \
  || { cat "$T/log6"; fail "429 addHost forever: message"; }
adds=$(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'")
(( adds >= 2 )) || fail "429 addHost forever: addHost sent $adds times"
# every addHost came right after a look that found nothing
[[ $(requests) =~ ^listZones:200,listPods:200,listClusters:200(,listHosts:200,addHost:429)+(,listHosts:200)?$ ]] || fail "429 addHost forever: requests $(requests)"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "429 addHost forever: a host was added"
(( ms < 14000 )) || fail "429 addHost forever: took $ms ms with --timeout 10"
echo "429 until the budget: exit 7, $n listZones / $adds addHost, nothing added"
assert_no_secrets "$T"/log*
echo "ok"
