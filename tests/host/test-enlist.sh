#!/bin/bash
# Enlist (docs/register.md "Enlist"): a node whose spec URL answers 404 and
# that has kiln.enlist=URL, or that has only kiln.enlist=, posts its
# inventory (signed like the webhook) to the stand-in controller and
# finishes with poweroff; it plans and writes nothing. The controller keeps
# the body byte for byte, and `kiln plan SPEC --inventory` of what it kept
# gives the plan of the recorded inventory. Negative cases: a wrong key (401,
# nothing kept), no key file, an unreachable controller (bounded by
# kiln.enlist.timeout), a 404 without kiln.enlist= (exit 8 as before).
# A machine that fits none of the rack spec's layouts enlists with every
# layout's reason beside its inventory; one that fits plans as before.
set -euo pipefail
: "${KILN:?}" "${SRC:?}"
. "$SRC/tests/lib/http.sh"
for c in python3 sqlite3 curl; do command -v $c >/dev/null || { echo "SKIP: no $c"; exit 77; }; done
test_tmpdir enlist
. "$SRC/tests/lib/controller.sh"

mkdir -p "$T/www/specs" "$T/run" "$T/target"
http_start "$T/www"
controller_start "$T/ctl"
(umask 077; controller_key hmac_key >"$T/enlist.key")
KEY=$(cat "$T/enlist.key")
INV=$SRC/tests/inventories/qemu-4disk.json
NODE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["machine_uuid"])' "$INV")
export KILN_RUN_DIR=$T/run KILN_TARGET=$T/target KILN_ENLIST_KEY=$T/enlist.key
boot() {   # boot RC CMDLINE [kiln boot options]
  local rc=$1; shift
  echo "$1" >"$T/cmdline"; shift
  run_kiln "$rc" boot --cmdline "$T/cmdline" --inventory "$INV" "$@"
}
SPEC_URL="http://127.0.0.1:$HTTP_PORT/specs/\${mac}.yaml"

# 1. the spec answers 404: enlist, finish poweroff, nothing else
boot 0 "kiln.spec=$SPEC_URL kiln.enlist=$CTL/kiln/enlist" --no-finish
expect_err "is not there (HTTP 404): enlisting"
expect_err "enlisted '$NODE' at '$CTL/kiln/enlist'"
[[ $(cat "$T/run/finish") == poweroff ]] || fail "finish is '$(cat "$T/run/finish")', expected poweroff"
[[ -z $(ls -A "$T/target") ]] || fail "the target got files: $(ls -A "$T/target")"
[[ $(ls "$T/run" | sort | tr '\n' ' ') == "enlist.json finish " ]] || fail "run dir holds $(ls "$T/run")"
[[ $(grep -c "/specs/52:54:00:12:34:56.yaml" "$HTTP_DIR/access.log") == 1 ]] || fail "the 404 was retried"
[[ $(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'") == 1 ]] || fail "not enlisted once"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/kiln/enlist' AND status = 200") == 1 ]] || fail "enlist requests"

# what the controller keeps is what was posted, byte for byte, and plans
curl -sf "$CTL/kiln/enlisted/$NODE" -o "$T/enlisted.json"
cmp "$T/enlisted.json" "$T/run/enlist.json" || fail "the controller keeps another body than the one posted"
python3 - "$T/enlisted.json" <<'PY' || fail "the enlisted inventory lacks what the operator needs"
import json, sys
inv = json.load(open(sys.argv[1]))
d = inv["disks"][0]
assert all(k in d for k in ("serial", "model", "size", "rotational", "transport")), d.keys()
assert inv["nics"][0]["mac"] == "52:54:00:12:34:56" and inv["cpu"]["count"] == 2 and inv["memory"]["total"] > 0
PY
for spec in "$SRC"/templates/kvm-raid10-luks-lvm.yaml "$SRC"/templates/single-disk.yaml; do
  rc1=0; rc2=0
  "$KILN" plan "$spec" --inventory "$INV" >"$T/plan.recorded" 2>&1 || rc1=$?
  "$KILN" plan "$spec" --inventory "$T/enlisted.json" >"$T/plan.enlisted" 2>&1 || rc2=$?
  [[ $rc1 == "$rc2" ]] || fail "plan of $spec exits $rc1 on the recorded and $rc2 on the enlisted inventory"
  sed -i "s|$T/enlisted.json|INV|; s|$INV|INV|" "$T/plan.recorded" "$T/plan.enlisted"
  diff "$T/plan.recorded" "$T/plan.enlisted" || fail "plan of $spec differs on the enlisted inventory"
done
grep -q "fingerprint:" "$T/plan.enlisted" || fail "no plan made: $(cat "$T/plan.enlisted")"

# 2. kiln.enlist= alone: straight to enlisting, no spec fetched
rm -f "$T/run/finish"
boot 0 "kiln.enlist=$CTL/kiln/enlist" --no-finish
expect_err "(kiln.enlist= and no kiln.spec=)"
[[ $(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'") == 2 ]] || fail "second enlist not kept"
[[ $(grep -c "/specs/" "$HTTP_DIR/access.log") == 1 ]] || fail "a spec was fetched without kiln.spec="

# 3. dry run: says what it would do, posts nothing
boot 0 "kiln.enlist=$CTL/kiln/enlist" --dry-run
grep -q "would enlist '$NODE'" "$T/stdout" || fail "dry run: $(cat "$T/stdout")"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/kiln/enlist'") == 2 ]] || fail "the dry run posted"

# 4. a wrong key: 401, final, nothing kept
echo "not-the-key-$RANDOM$RANDOM" >"$T/wrong.key"
KILN_ENLIST_KEY=$T/wrong.key boot 7 "kiln.enlist=$CTL/kiln/enlist"
expect_err "failed to enlist '$NODE' at '$CTL/kiln/enlist': webhook '$CTL/kiln/enlist' refused the enlist event: HTTP status 401"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/kiln/enlist' AND status = 401") == 1 ]] || fail "401 retried"
[[ $(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'") == 2 ]] || fail "a badly signed inventory was kept"

# 5. no key file
KILN_ENLIST_KEY=$T/missing.key boot 7 "kiln.enlist=$CTL/kiln/enlist"
expect_err "failed to read the enlist key '$T/missing.key': No such file or directory"

# 6. an unreachable controller: retried, bounded by kiln.enlist.timeout
port=$(free_port)
t0=$(date +%s)
boot 7 "kiln.enlist=http://127.0.0.1:$port/kiln/enlist kiln.enlist.timeout=3"
t=$(( $(date +%s) - t0 ))
(( t <= 10 )) || fail "enlisting an unreachable controller took $t s with kiln.enlist.timeout=3"
expect_err "did not take the enlist event in time after"
boot 64 "kiln.enlist=$CTL/kiln/enlist kiln.enlist.timeout=0"
expect_err "invalid kernel command line option 'kiln.enlist.timeout=0'"

# 7. a 404 without kiln.enlist=: fails as before, nothing posted
boot 8 "kiln.spec=$SPEC_URL"
expect_err "failed to fetch spec"
[[ $(controller_sql "SELECT count(*) FROM requests WHERE path = '/kiln/enlist'") == 3 ]] || fail "posted without kiln.enlist="

# 8. the rack spec (templates/rack.yaml, served for every MAC) and a machine
# that fits none of its layouts (one 1 GiB disk): the refusals are said as
# kiln plan says them, and the machine enlists with every layout's reason
# beside its inventory, finishes with poweroff and writes nothing; the file
# the controller keeps still plans (and refuses the same way)
jq '.disks = [.disks[] | select(.size < 2147483648)]' "$INV" >"$T/small.json"
cp "$SRC/templates/rack.yaml" "$T/www/specs/52:54:00:12:34:56.yaml"
rm -f "$T/run/finish" "$T/run/enlist.json"
posts=$(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'")
echo "kiln.spec=$SPEC_URL kiln.enlist=$CTL/kiln/enlist" >"$T/cmdline"
run_kiln 0 boot --cmdline "$T/cmdline" --inventory "$T/small.json" --no-finish
expect_err "this machine fits none of its 4 layouts: enlisting with the reasons"
expect_err "enlisting '$NODE' at '$CTL/kiln/enlist' (it fits none of the spec's layouts)"
[[ $(cat "$T/run/finish") == poweroff ]] || fail "no fit: finish is '$(cat "$T/run/finish")', expected poweroff"
[[ -z $(ls -A "$T/target") ]] || fail "no fit: the target got files: $(ls -A "$T/target")"
[[ $(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'") == $((posts + 1)) ]] || fail "no fit: not enlisted"
curl -sf "$CTL/kiln/enlisted/$NODE" -o "$T/nofit.json"
cmp "$T/nofit.json" "$T/run/enlist.json" || fail "no fit: the controller keeps another body than the one posted"
rc=0; "$KILN" plan "$SRC/templates/rack.yaml" --inventory "$T/small.json" >/dev/null 2>"$T/plan.err" || rc=$?
[[ $rc == 3 ]] || fail "kiln plan of rack on the small inventory exits $rc, expected 3"
# the reasons that reached the receiver are the plan's, layout by layout, in order
grep -oE "layout '[^']+' does not fit: .*" "$T/plan.err" >"$T/plan.reasons"
[[ $(wc -l <"$T/plan.reasons") == 4 ]] || fail "kiln plan gave $(wc -l <"$T/plan.reasons") reasons, expected 4"
jq -r '.enlist.layouts_not_fitting[] | "layout \u0027\(.layout)\u0027 does not fit: \(.reason)"' "$T/nofit.json" >"$T/got.reasons"
diff "$T/plan.reasons" "$T/got.reasons" || fail "the enlisted reasons are not the plan's"
grep -qF "below min_size" "$T/got.reasons" || fail "the reasons do not say what matched: $(cat "$T/got.reasons")"
jq -e --arg spec "http://127.0.0.1:$HTTP_PORT/specs/52:54:00:12:34:56.yaml" \
  '.enlist.why == "this machine fits none of the spec'"'"'s layouts" and .enlist.spec == $spec and
   ([.enlist.layouts_not_fitting[].layout] == ["raid10-4hdd", "raid10-4ssd", "mirror-2ssd", "single"]) and
   ([.enlist.layouts_not_fitting[].rule] == ["d", "d", "d", "sys"]) and (.disks | length) == 1' "$T/nofit.json" >/dev/null \
  || fail "no fit: the enlisted body lacks why, the spec or the layouts: $(jq -c .enlist "$T/nofit.json")"
rc=0; "$KILN" plan "$SRC/templates/rack.yaml" --inventory "$T/nofit.json" >/dev/null 2>"$T/plan2.err" || rc=$?
[[ $rc == 3 ]] || fail "the enlisted file does not plan: exit $rc: $(cat "$T/plan2.err")"
# a machine that fits a layout of the same spec is not enlisted: it plans (dry run)
echo "kiln.spec=$SPEC_URL kiln.enlist=$CTL/kiln/enlist" >"$T/cmdline"
run_kiln 0 boot --cmdline "$T/cmdline" --inventory "$INV" --dry-run
grep -q "would enlist" "$T/stdout" && fail "a machine that fits a layout enlisted: $(cat "$T/stdout")"
[[ $(controller_sql "SELECT posts FROM enlisted WHERE node_id = '$NODE'") == $((posts + 1)) ]] || fail "a fitting machine posted"
grep -q "20 step(s)" "$T/stdout" || fail "the fitting machine made no plan: $(head -3 "$T/stdout")"

# the key never shows
grep -rqF -- "$KEY" "$T/err" "$T/stdout" "$T/run" "$T/ctl/controller.log" && fail "the enlist key appears in output"
echo "PASS: test-enlist"
