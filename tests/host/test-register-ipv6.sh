#!/bin/bash
# IPv6: kiln sends url http://[ADDR] (brackets), and finds the host again by
# its address although CloudStack writes it in Java's long form
# (fd00:0:0:0:0:0:0:15). With host_url set, the host is the one at host_url's
# address, not at the report's: a host that has the report's address does not
# stop the node at host_url's from being added.
source "$(dirname "$0")/register-lib.sh"
start_controller
write_spec "$T/spec.yaml"
write_report "$T/report.json" fd00::15
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 || { cat "$T/log1"; fail "IPv6 registration failed"; }
[[ $(controller_sql "SELECT url || ' ' || ipaddress FROM hosts") == "http://[fd00::15] fd00:0:0:0:0:0:0:15" ]] || fail "IPv6 host: $(controller_sql 'SELECT url, ipaddress FROM hosts')"
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "second IPv6 registration failed"; }
grep -q "(fd00::15) was already in CloudStack zone 'lab'" "$T/log2" || { cat "$T/log2"; fail "IPv6 host not found again"; }
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] || fail "IPv6 host added twice"

# host_url: matched by its address. A host with the report's address exists already.
controller_admin '{"seed_hosts": {"zone": "lab", "addresses": ["10.0.2.15"]}}'
HOST_URL="http://[fd00::0:16]" write_spec "$T/spec2.yaml"
write_report "$T/r3.json" 10.0.2.15
"$KILN" register --report "$T/r3.json" --spec "$T/spec2.yaml" >"$T/log3" 2>&1 || { cat "$T/log3"; fail "host_url registration failed"; }
grep -q "added to CloudStack zone 'lab'" "$T/log3" || { cat "$T/log3"; fail "host_url: the host at 10.0.2.15 was taken for the one at fd00::16"; }
[[ $(controller_sql "SELECT url FROM hosts WHERE ipaddress = 'fd00:0:0:0:0:0:0:16'") == "http://[fd00::0:16]" ]] || fail "host_url host: $(controller_sql 'SELECT url, ipaddress FROM hosts')"
# and a rerun from another address finds it by host_url
write_report "$T/r4.json" 10.0.2.99
"$KILN" register --report "$T/r4.json" --spec "$T/spec2.yaml" >"$T/log4" 2>&1 || { cat "$T/log4"; fail "host_url rerun failed"; }
grep -q "was already in CloudStack zone 'lab'" "$T/log4" || { cat "$T/log4"; fail "host_url rerun: not found by host_url's address"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 3 ]] || fail "hosts: $(controller_sql 'SELECT url, ipaddress FROM hosts')"
# A host_url without a host is refused when the spec is read: nothing is sent.
HOST_URL="http://" write_spec "$T/spec3.yaml"
n=$(controller_sql "SELECT count(*) FROM requests")
rc=0; "$KILN" register --report "$T/r4.json" --spec "$T/spec3.yaml" >"$T/log5" 2>&1 || rc=$?
[[ $rc == 2 ]] || { cat "$T/log5"; fail "empty host_url: exit $rc, not 2"; }
grep -qF "$T/spec3.yaml:15:15: 'cloudstack.host_url' of register has no host: 'http://'" "$T/log5" || { cat "$T/log5"; fail "empty host_url: unclear error"; }
[[ $(controller_sql "SELECT count(*) FROM requests") == "$n" ]] || fail "empty host_url: something was sent"
assert_no_secrets "$T"/log* "$T"/r*.json
echo "ok: IPv6 in brackets, matched by address; host_url's address is the host's"
