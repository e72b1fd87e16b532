#!/bin/bash
# Least privilege: the stand-in enforces CloudStack's dynamic roles. kiln's
# key belongs to an account whose role allows exactly listZones, listPods,
# listClusters, listHosts and addHost (then "*": deny); kiln registers with
# it, and any other call with that key is refused with CloudStack's 432 while
# the root admin may make it. The role made step by step as docs/register.md
# tells operators (createRole, createRolePermission, updateAccount) works the
# same; a role that lacks listHosts stops kiln with CloudStack's text before
# anything is added; and an Admin-type role without the "*" deny rule allows
# every admin call, which is why the docs insist on it.
source "$(dirname "$0")/register-lib.sh"
start_controller
write_spec "$T/spec.yaml"
write_report "$T/report.json" 10.0.2.15
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 || { cat "$T/log1"; fail "registration under the kiln-register role failed"; }
[[ $(controller_sql "SELECT group_concat(DISTINCT account) FROM requests WHERE path = '/client/api'") == kiln ]] || fail "not made as account kiln"
hid=$(controller_sql "SELECT id FROM hosts")

refused_for_kiln() {  # COMMAND [params...]: refused for kiln with the exact 432, allowed for the admin
  local cmd=$1; shift
  [[ $(cs_api kiln "$cmd" "$@") == 432 ]] || fail "$cmd with kiln's key: not refused: $(cat "$T/body")"
  [[ $(jq -r '.[] | "\(.errorcode) \(.errortext)"' "$T/body") == "432 The API [$cmd] does not exist or is not available for the account kiln." ]] \
    || fail "$cmd: not CloudStack's refusal: $(cat "$T/body")"
}
n=$(controller_sql "SELECT count(*) FROM hosts")
refused_for_kiln deleteHost "id=$hid"
refused_for_kiln listAccounts
refused_for_kiln createRole name=mine type=Admin
refused_for_kiln updateAccount account=kiln "roleid=$(controller_sql "SELECT id FROM roles WHERE name = 'Root Admin'")"
[[ $(controller_sql "SELECT count(*) FROM hosts") == "$n" && $(controller_sql "SELECT count(*) FROM roles") == 2 ]] || fail "a refused call changed something"
[[ $(controller_sql "SELECT roles.name FROM accounts JOIN roles ON roles.id = accounts.role_id WHERE accounts.name = 'kiln'") == kiln-register ]] \
  || fail "kiln's role was changed by a refused call"
[[ $(cs_api admin listAccounts) == 200 ]] || fail "listAccounts as admin: $(cat "$T/body")"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE status = 432 AND account = 'kiln'") == 4 ]] || fail "refusals not recorded: $(controller_sql "SELECT command, status, reason FROM requests WHERE status = 432")"

# The operator's procedure (docs/register.md), through the API as the root admin.
make_role() {  # NAME RULE:PERM...  -> prints the role id
  local name=$1; shift
  [[ $(cs_api admin createRole "name=$name" type=Admin "description=kiln node registration") == 200 ]] || fail "createRole: $(cat "$T/body")"
  local rid; rid=$(jq -r .createroleresponse.role.id "$T/body")
  for r in "$@"; do
    [[ $(cs_api admin createRolePermission "roleid=$rid" "rule=${r%%:*}" "permission=${r##*:}") == 200 ]] || fail "createRolePermission $r: $(cat "$T/body")"
  done
  echo "$rid"
}
assign() { [[ $(cs_api admin updateAccount account=kiln "roleid=$1") == 200 ]] || fail "updateAccount: $(cat "$T/body")"; }
rid=$(make_role kiln-register-ops listZones:allow listPods:allow listClusters:allow listHosts:allow addHost:allow '*:deny')
assign "$rid"
write_report "$T/r2.json" 10.0.2.16
"$KILN" register --report "$T/r2.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "registration under the documented role failed"; }
refused_for_kiln deleteHost "id=$hid"

# A role without listHosts: kiln stops with CloudStack's refusal, nothing added.
assign "$(make_role kiln-no-list listZones:allow listPods:allow listClusters:allow addHost:allow '*:deny')"
write_report "$T/r3.json" 10.0.2.17
n=$(controller_sql "SELECT count(*) FROM hosts")
rc=0; "$KILN" register --report "$T/r3.json" --spec "$T/spec.yaml" >"$T/log3" 2>&1 || rc=$?
[[ $rc == 7 ]] || { cat "$T/log3"; fail "role without listHosts: exit $rc, not 7"; }
grep -qF "registration of node '52:54:00:12:34:56' failed: CloudStack refused listHosts (HTTP 432, errorcode 432): The API [listHosts] does not exist or is not available for the account kiln." "$T/log3" \
  || { cat "$T/log3"; fail "role without listHosts: not CloudStack's refusal"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == "$n" ]] || fail "role without listHosts: a host was added"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost' AND account = 'kiln' AND id > (SELECT max(id) FROM requests WHERE command = 'createRolePermission')") == 0 ]] \
  || fail "role without listHosts: addHost was sent without looking first"

# An Admin-type role without "*: deny" falls back to every admin call.
assign "$(make_role kiln-no-deny listZones:allow listPods:allow listClusters:allow listHosts:allow addHost:allow)"
[[ $(cs_api kiln listAccounts) == 200 ]] || fail "an Admin role without the deny rule refused listAccounts (the stand-in differs from CloudStack)"
assert_no_secrets "$T"/log* "$T"/r*.json "$T/report.json"
echo "ok: the kiln-register role allows the five calls and nothing else"
