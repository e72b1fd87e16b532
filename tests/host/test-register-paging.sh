#!/bin/bash
# listHosts is paged: CloudStack answers at most 500 hosts a page (500 when no
# pagesize is given) and says in "count" how many there are. With 1200 hosts,
# a node that is host number 1100 (on the third page) is found there and not
# added again; a new node is looked for on all three pages, then added once.
source "$(dirname "$0")/register-lib.sh"
start_controller
python3 -c 'import json; print(json.dumps({"seed_hosts": {"zone": "lab", "addresses": ["10.1.%d.%d" % (i // 250, i % 250 + 1) for i in range(1200)]}}))' >"$T/seed.json"
controller_admin "@$T/seed.json"
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1200 ]] || fail "seeding: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
node=$(controller_sql "SELECT ipaddress FROM hosts ORDER BY seq LIMIT 1 OFFSET 1099")
[[ $node == 10.1.4.100 ]] || fail "host 1100 is $node"
write_spec "$T/spec.yaml"
write_report "$T/report.json" "$node"
"$KILN" register --report "$T/report.json" --spec "$T/spec.yaml" >"$T/log1" 2>&1 || { cat "$T/log1"; fail "registration of host 1100 failed"; }
grep -qF "node '52:54:00:12:34:56' ($node) was already in CloudStack zone 'lab', cluster 'c1' as host $(controller_sql "SELECT id FROM hosts WHERE ipaddress = '$node'")" "$T/log1" \
  || { cat "$T/log1"; fail "host 1100 not found on the third page"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1200 ]] || fail "host 1100 was added again"
[[ $(controller_sql "SELECT group_concat(detail, ',') FROM requests WHERE command = 'listHosts'") == "page=1 pagesize=500,page=2 pagesize=500,page=3 pagesize=500" ]] \
  || fail "listHosts pages: $(controller_sql "SELECT detail FROM requests WHERE command = 'listHosts'")"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'addHost'") == 0 ]] || fail "addHost sent for a host that is there"

# A node that is not there: every page looked at, then added once.
write_report "$T/r2.json" 10.2.0.1
"$KILN" register --report "$T/r2.json" --spec "$T/spec.yaml" >"$T/log2" 2>&1 || { cat "$T/log2"; fail "registration of a new node failed"; }
grep -q "added to CloudStack zone 'lab'" "$T/log2" || { cat "$T/log2"; fail "new node: not added"; }
[[ $(controller_sql "SELECT count(*) FROM hosts") == 1201 ]] || fail "new node: $(controller_sql 'SELECT count(*) FROM hosts') hosts"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE command = 'listHosts'") == 6 ]] || fail "new node: not every page looked at"
# The stand-in refuses a page larger than CloudStack allows, as CloudStack does.
[[ $(cs_api kiln listHosts type=Routing pagesize=501) == 431 ]] || fail "pagesize 501 was not refused"
grep -qF '"errortext": "Page size can'"'"'t exceed max allowed page size value: 500"' "$T/body" || fail "pagesize 501: $(cat "$T/body")"
assert_no_secrets "$T"/log* "$T/report.json" "$T/r2.json"
echo "ok: 1200 hosts on three pages; the node on the third found, a new one added once"
