#!/bin/bash
# The stand-in logs in to the host as CloudStack's management server does on
# addHost for KVM: over SSH (a real OpenSSH on 127.0.0.1, the node's address
# mapped to its port), with the username and password kiln sends, and runs
# cloudstack-setup-agent there (a stub that records its arguments). A wrong
# password, and an address it cannot reach, answer CloudStack's 530 texts:
# kiln gives up at once (exit 7, CloudStack's text, one addHost), nothing is
# added and the stub is not run.
source "$(dirname "$0")/register-lib.sh"
need_kiln_register
start_sshd
start_controller
controller_admin "{\"ssh\": {\"hosts\": {\"10.0.2.15\": $SSH_PORT}, \"required\": true}}"
zone=$(controller_sql "SELECT id FROM zones WHERE name = 'lab'"); pod=$(controller_sql "SELECT id FROM pods WHERE name = 'p1'")
cluster=$(controller_sql "SELECT id FROM clusters WHERE name = 'c1'")

# A wrong password: CloudStack's authentication error, final.
write_spec "$T/spec.yaml"
sed -i "s|host_password: \"$HOST_PASSWORD\"|host_password: \"$HOST_PASSWORD-wrong\"|" "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15
start=$(date +%s)
register_expect 7 "$T/log1" "$T/report.json" "wrong password"
want="registration of node '52:54:00:12:34:56' failed: CloudStack refused addHost (HTTP 530, errorcode 530): Could not add host at [http://10.0.2.15] with zone [$zone], pod [$pod] and cluster [$cluster] due to: [Authentication error with host password]."
grep -qxF "kiln: error: $want" "$T/log1" || grep -qF "$want" "$T/log1" || { cat "$T/log1"; fail "wrong password: not CloudStack's error"; }
(( $(date +%s) - start < 30 )) || fail "wrong password: not final (took $(( $(date +%s) - start )) s)"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 1 ]] || fail "wrong password: addHost sent again"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "wrong password: a host was added"
[[ $(controller_sql "SELECT result FROM logins") == "authentication failed" ]] || fail "logins: $(controller_sql 'SELECT * FROM logins')"
[[ ! -e $T/sbin/setup-agent.calls ]] || fail "the agent setup ran after a failed login"

# An address with no SSH behind it: "Cannot find the server resources", final.
write_spec "$T/spec.yaml"
write_report "$T/r2.json" 10.0.2.16
register_expect 7 "$T/log2" "$T/r2.json" "unreachable host"
grep -qF "failed: CloudStack refused addHost (HTTP 530, errorcode 530): Unable to add the host: Cannot find the server resources at http://10.0.2.16" "$T/log2" \
  || { cat "$T/log2"; fail "unreachable host: not CloudStack's error"; }
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 2 ]] || fail "unreachable host: addHost sent again"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 0 ]] || fail "unreachable host: a host was added"

# The right password: logged in, the agent set up with CloudStack's arguments, host Up.
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log3" 2>&1 || { cat "$T/log3" "$T/sshd/log"; fail "registration with the right password failed"; }
grep -q "added to CloudStack zone 'lab', cluster 'c1' as host" "$T/log3" || { cat "$T/log3"; fail "no 'added' message"; }
[[ $(controller_sql "SELECT ipaddress || ' ' || state FROM hosts") == "10.0.2.15 Up" ]] || fail "host: $(controller_sql 'SELECT * FROM hosts')"
guid=$(python3 -c 'import hashlib, uuid; d = bytearray(hashlib.md5(b"10.0.2.15").digest()); d[6] = d[6] & 15 | 48; d[8] = d[8] & 63 | 128; print(uuid.UUID(bytes=bytes(d)))')
[[ $(controller_sql "SELECT guid FROM hosts") == "$guid-LibvirtComputingResource" ]] || fail "guid $(controller_sql 'SELECT guid FROM hosts'), want $guid-LibvirtComputingResource"
[[ $(cat "$T/sbin/setup-agent.calls") == "-m 127.0.0.1 -z $zone -p $pod -c $cluster -g $guid -a -s --pubNic=cloudbr0 --prvNic=cloudbr0 --guestNic=cloudbr0 --hypervisor=kvm" ]] \
  || fail "the stub recorded: $(cat "$T/sbin/setup-agent.calls")"
[[ $(controller_sql "SELECT group_concat(result, ',') FROM logins") == "authentication failed,unreachable: no SSH mapping for this address,ok" ]] \
  || fail "logins: $(controller_sql 'SELECT * FROM logins')"
grep -q "Accepted password for root from 127.0.0.1" "$T/sshd/log" || { cat "$T/sshd/log"; fail "sshd did not see the password login"; }
controller_dump >"$T/dump.json"
assert_no_secrets "$T"/log* "$T/report.json" "$T/dump.json" "$T/sshd/log"
echo "ok: the stand-in logged in over SSH and set up the agent; a wrong password and an unreachable host are final 530s"
