#!/bin/bash
# kiln plan against recorded inventories:
#  - every template in templates/ has its plan kept in tests/expected/NAME.plan
#    (text, compared byte for byte) and NAME.json (compared byte for byte and
#    checked with jq: parses, same step kinds as the text, no step touches an
#    unselected disk);
#  - every refusal case in tests/plan/*.yaml exits with its code and prints
#    exactly tests/expected/CASE.err, and nothing on stdout.
# Header lines of a case: "# inventory: NAME" (tests/inventories/NAME.json),
# optional "# jq: FILTER" (applied to that inventory first), "# exit: N".
# KILN_UPDATE_EXPECTED=1 rewrites the expected files instead of comparing.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
command -v jq >/dev/null || { echo "jq missing"; exit 77; }
"$KILN" plan --help >/dev/null 2>&1 || { echo "kiln plan not built in"; exit 77; }
compgen -G "$SRC/templates/*.yaml" >/dev/null || { echo "no templates yet"; exit 77; }

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir plan
cd "$SRC" || exit 1    # diagnostics name the spec as given: keep paths relative
update=${KILN_UPDATE_EXPECTED:-0}
checked=0

same() {  # same EXPECTED ACTUAL WHAT
        if [[ $update == 1 ]]; then cp "$2" "$1"; return 0; fi
        [[ -f $1 ]] || { not_ok "$3: no expected file $1"; return 1; }
        diff -u "$1" "$2" >"$T/diff" || { not_ok "$3 differs from $1:"; cat "$T/diff"; return 1; }
}

# --- templates ---------------------------------------------------------------
# tests/expected/templates.map: "TEMPLATE INVENTORY [EXPECTED]"; EXPECTED
# defaults to TEMPLATE. Every template needs at least one line.
for t in templates/*.yaml; do
        name=$(basename "$t" .yaml)
        awk -v n="$name" '$1 == n { f = 1 } END { exit !f }' tests/expected/templates.map \
                || not_ok "template $name has no inventory in tests/expected/templates.map"
done
while read -r tname inv ename; do
        [[ -z $tname || $tname == \#* ]] && continue
        t=templates/$tname.yaml name=${ename:-$tname}
        [[ -f $t ]] || { not_ok "templates.map names $t, which does not exist"; continue; }
        invf=tests/inventories/$inv.json
        "$KILN" plan "$t" --inventory "$invf" >"$T/$name.plan" 2>"$T/$name.err"
        rc=$?
        ((rc == 0)) || { not_ok "kiln plan $t --inventory $invf exited $rc:"; cat "$T/$name.err"; continue; }
        same "tests/expected/$name.plan" "$T/$name.plan" "plan of $name"
        "$KILN" plan "$t" --inventory "$invf" --json >"$T/$name.json" 2>"$T/$name.err" \
                || { not_ok "kiln plan --json $t exited $?"; cat "$T/$name.err"; continue; }
        same "tests/expected/$name.json" "$T/$name.json" "JSON plan of $name"
        jq -e . "$T/$name.json" >/dev/null || { not_ok "JSON plan of $name does not parse"; continue; }
        # the JSON has the text's steps, in the same order
        jq -r '.steps[] | "\(.n) \(.kind)"' "$T/$name.json" >"$T/kinds.json"
        sed -nE 's/^ *([0-9]+)  ([a-z-]+) .*/\1 \2/p' "$T/$name.plan" >"$T/kinds.text"
        cmp -s "$T/kinds.json" "$T/kinds.text" || not_ok "$name: JSON and text list different steps"
        # the storage steps are all there and the plan ends with configure and finish
        for k in mkfs mount configure finish; do
                jq -e --arg k "$k" 'any(.steps[]; .kind == $k)' "$T/$name.json" >/dev/null || not_ok "$name: no $k step"
        done
        jq -e '.steps[-1].kind == "finish"' "$T/$name.json" >/dev/null || not_ok "$name: last step is not finish"
        # a disk with signatures or holders is wiped before it is partitioned
        for d in $(jq -r '.disks[] | select(.selected) | .path' "$T/$name.json"); do
                if jq -e --arg d "$d" '.disks[] | select(.path == $d)' "$invf" >/dev/null &&
                   jq -e --arg d "$d" '.disks[] | select(.path == $d) | (.signatures | length) + ([.partitions[] | .signatures[]] | length) + (.holders | length) + ([.partitions[] | .holders[]] | length) > 0' "$invf" >/dev/null; then
                        jq -e --arg d "$d" '(first(.steps[] | select(.device == $d and .kind == "wipe")) | .n) as $w
                                | ($w != null) and ([.steps[] | select(.device == $d and .kind == "partition") | .n] | all(. > $w))' \
                                "$T/$name.json" >/dev/null || not_ok "$name: $d holds data but is not wiped first"
                fi
        done
        # no step names a disk the plan leaves untouched (nor its partitions)
        for d in $(jq -r '.disks[] | select(.selected | not) | .path' "$T/$name.json"); do
                jq -e --arg d "$d" '[.steps[] | (.device // ""), .inputs[], (.partitions // [] | .[].device), .description, (.destroys // "")
                        | select(test("\($d)(p?[0-9]+)?\\b"))] | length == 0' "$T/$name.json" >/dev/null \
                        || not_ok "$name: a step touches untouched disk $d"
                grep -qE "^  $d .*: untouched\$" "$T/$name.plan" || not_ok "$name: $d not listed as untouched"
        done
        checked=$((checked + 1))
done < tests/expected/templates.map

# --- layouts: the winner per inventory, the reasons of the earlier ones ---------
# tests/expected/layouts.map: "TEMPLATE INVENTORY WINNER" ("-": fits none).
# no-disks: an inventory of junk-box without its disks (made here).
jq '.disks = []' tests/inventories/junk-box.json >"$T/no-disks.json"
while read -r tname inv want; do
        [[ -z $tname || $tname == \#* ]] && continue
        t=templates/$tname.yaml invf=tests/inventories/$inv.json
        [[ $inv == no-disks ]] && invf=$T/no-disks.json
        n_layouts=$(grep -c '^  - name: ' "$t")
        "$KILN" plan "$t" --inventory "$invf" --json >"$T/lay.json" 2>"$T/lay.err"; rc=$?
        if [[ $want == - ]]; then
                [[ $rc == 3 ]] || { not_ok "$tname on $inv: exit $rc, expected 3 (fits no layout)"; continue; }
                jq -e '.refused and .kind == "refused"' "$T/lay.json" >/dev/null || not_ok "$tname on $inv: JSON refusal is not a refusal"
                n=$(jq '[.problems[] | select(.message | startswith("layout "))] | length' "$T/lay.json")
                ((n == n_layouts)) || not_ok "$tname on $inv: $n layout reasons in the JSON, expected $n_layouts"
                "$KILN" plan "$t" --inventory "$invf" >"$T/lay.out" 2>"$T/lay.err"; rc=$?
                [[ $rc == 3 && ! -s $T/lay.out ]] || not_ok "$tname on $inv: text plan exit $rc or printed a plan"
                grep -q "fits none of the spec's $n_layouts layouts; nothing was written" "$T/lay.err" \
                        || { not_ok "$tname on $inv: no 'fits none' message"; cat "$T/lay.err"; }
                for l in $(sed -n 's/^  - name: //p' "$t"); do
                        grep -q "layout '$l' does not fit: disk rule '[a-z]*' must match exactly [0-9]* disk" "$T/lay.err" \
                                || not_ok "$tname on $inv: no reason for layout $l"
                done
                ok "$tname on $inv: fits none of $n_layouts layouts, exit 3, every reason named"
                continue
        fi
        ((rc == 0)) || { not_ok "$tname on $inv: exit $rc"; cat "$T/lay.err"; continue; }
        got=$(jq -r .layout "$T/lay.json")
        [[ $got == "$want" ]] || { not_ok "$tname on $inv chose layout '$got', expected '$want'"; continue; }
        # every layout before the winner has its reason, none after it
        before=$(sed -n 's/^  - name: //p' "$t" | sed "/^$want\$/,\$d" | paste -sd' ')
        misses=$(jq -r '[.layouts_not_fitting[].layout] | unique | join(" ")' "$T/lay.json")
        [[ $(tr ' ' '\n' <<<"$before" | sort | paste -sd' ') == "$misses" ]] \
                || not_ok "$tname on $inv: reasons for '$misses', expected for '$before'"
        jq -e '[.layouts_not_fitting[] | .reason | test("^disk rule .* must match exactly [0-9]+ disks? but")] | all' \
                "$T/lay.json" >/dev/null || not_ok "$tname on $inv: a reason does not name the rule, the count and what matched"
        ok "$tname on $inv: layout $want${before:+ (not: $before)}"
done < tests/expected/layouts.map
# two layouts on one machine are two plans: another layout is another fingerprint
sed 's/^  - name: raid10-4hdd$/  - name: raid10-4hdd-x/' templates/rack.yaml >"$T/rack-renamed.yaml"
a=$("$KILN" plan templates/rack.yaml --inventory tests/inventories/junk-box.json --json 2>/dev/null | jq -r .fingerprint)
b=$("$KILN" plan "$T/rack-renamed.yaml" --inventory tests/inventories/junk-box.json --json 2>/dev/null | jq -r .fingerprint)
[[ -n $a && $a != null && $a != "$b" ]] && ok "another layout name, another fingerprint" || not_ok "layout name not in the fingerprint ($a, $b)"

# --- the fifth disk of the QEMU rig is never touched by the rig's templates ----
for name in $(awk '$2 == "qemu-4disk" { print $1 }' tests/expected/templates.map); do
        t=templates/$name.yaml
        [[ -f $t ]] || { not_ok "templates.map names $t, which does not exist"; continue; }
        "$KILN" plan "$t" --inventory tests/inventories/qemu-4disk.json --json >"$T/five.json" 2>/dev/null \
                || { not_ok "$t does not plan on qemu-4disk"; continue; }
        jq -e '[.steps[] | tostring | select(test("vde"))] | length == 0' "$T/five.json" >/dev/null \
                || not_ok "$t: a step names /dev/vde"
        jq -e '.disks[] | select(.path == "/dev/vde") | .selected == false' "$T/five.json" >/dev/null \
                || not_ok "$t: /dev/vde is selected"
done

# --- kiln plan and kiln apply --dry-run: one hostname, one set of steps ---------
# qemu-4disk records no machine serial: both show 'kvm-${serial}' unexpanded; a
# real apply refuses before it writes (exit 2, before the --yes check, so a
# regression cannot reach the recorded disks). With a serial, both expand it.
t=templates/kvm-raid10-luks-lvm.yaml
jq '.serial = "SN-TEST-42"' tests/inventories/qemu-4disk.json >"$T/with-serial.json"
for inv in tests/inventories/qemu-4disk.json "$T/with-serial.json"; do
        "$KILN" plan "$t" --inventory "$inv" >"$T/h.plan" 2>"$T/h.err" || { not_ok "plan on $inv failed:"; cat "$T/h.err"; }
        "$KILN" apply --dry-run "$t" --inventory "$inv" >"$T/h.dry" 2>"$T/h.err"; rc=$?
        [[ $rc == 0 ]] || { not_ok "apply --dry-run on $inv exited $rc:"; cat "$T/h.err"; continue; }
        sed -nE 's/^ *[0-9]+  ([a-z-]+) +(.*)/\1 \2/p' "$T/h.plan" | sed -E 's/ +/ /g' >"$T/h.plan.steps"
        sed -nE 's/^ *[0-9]+\. ([a-z-]+) +(.*)/\1 \2/p' "$T/h.dry" | sed -E 's/ +/ /g' >"$T/h.dry.steps"
        [[ -s $T/h.plan.steps ]] || not_ok "no steps read from the plan on $inv"
        diff -u "$T/h.plan.steps" "$T/h.dry.steps" >"$T/diff" || { not_ok "plan and apply --dry-run list different steps on $inv:"; cat "$T/diff"; }
        checked=$((checked + 1))
done
grep -qxF "hostname: 'kvm-\${serial}' (not expanded: the inventory has no serial)" "$T/h.plan" && not_ok "serial given, hostname not expanded"
grep -qxF "hostname: kvm-SN-TEST-42 (from 'kvm-\${serial}')" "$T/h.plan" || { not_ok "hostname not expanded from the serial:"; head -1 "$T/h.plan"; }
grep -qF "hostname 'kvm-SN-TEST-42'" "$T/h.dry.steps" || not_ok "apply --dry-run does not configure hostname kvm-SN-TEST-42"
"$KILN" apply "$t" --inventory tests/inventories/qemu-4disk.json >"$T/h.out" 2>"$T/h.err"; rc=$?
[[ $rc == 2 ]] || not_ok "apply without a serial for the hostname exited $rc, expected 2"
grep -qF "refusing to apply '$t': hostname 'kvm-\${serial}' needs \${serial}, which this machine's inventory lacks; nothing was written" "$T/h.err" \
        || { not_ok "apply without a serial: wrong message:"; cat "$T/h.err"; }

# A placeholder serial counts as missing: the real apply refuses and says why.
t=tests/plan/hostname-placeholder.yaml
"$KILN" apply "$t" --inventory tests/inventories/junk-box.json >"$T/h.out" 2>"$T/h.err"; rc=$?
[[ $rc == 2 ]] || not_ok "apply with a placeholder serial exited $rc, expected 2"
grep -qxF "error: refusing to apply '$t': hostname 'junk-\${serial}' needs \${serial}, but this machine reports the placeholder 'To be filled by O.E.M.'; nothing was written" "$T/h.err" \
        || { not_ok "apply with a placeholder serial: wrong message:"; cat "$T/h.err"; }

# Without --yes, apply names each disk it would destroy (size, model, serial,
# rule) with what it holds now, and nothing about devices the run would make.
jq '.serial = "JB-1"' tests/inventories/junk-box.json >"$T/jb.json"
"$KILN" apply templates/junk-box.yaml --inventory "$T/jb.json" >"$T/h.out" 2>"$T/h.err"; rc=$?
[[ $rc == 3 ]] || not_ok "apply without --yes exited $rc, expected 3"
same tests/expected/junk-box.apply-refusal.err "$T/h.err" "apply refusal without --yes"

# --- refusals and bad input ---------------------------------------------------
for c in tests/plan/*.yaml; do
        [[ -f $c ]] || continue
        name=$(basename "$c" .yaml)
        inv=$(sed -nE 's/^# inventory: *//p' "$c")
        filter=$(sed -nE 's/^# jq: *//p' "$c")
        want=$(sed -nE 's/^# exit: *//p' "$c")
        invf=tests/inventories/$inv.json
        if [[ -n $filter ]]; then
                jq "$filter" "$invf" >"$T/$name.inv.json" || { not_ok "$name: jq filter failed"; continue; }
                invf=$T/$name.inv.json
        fi
        "$KILN" plan "$c" --inventory "$invf" >"$T/$name.out" 2>"$T/$name.err"
        rc=$?
        [[ $rc == "$want" ]] || { not_ok "$name: exit $rc, expected $want:"; cat "$T/$name.err"; continue; }
        if [[ $want == 0 ]]; then
                # a plan that must be made: its text is kept, and it says nothing on stderr
                same "tests/expected/$name.plan" "$T/$name.out" "plan of $name"
                if [[ -f tests/expected/$name.err ]]; then      # its warnings
                        same "tests/expected/$name.err" "$T/$name.err" "warnings of $name"
                        "$KILN" plan --strict "$c" --inventory "$invf" >"$T/$name.out" 2>"$T/$name.err"; rc=$?
                        [[ $rc == 3 ]] || not_ok "$name --strict: exit $rc, expected 3"
                        [[ -s $T/$name.out ]] && not_ok "$name --strict: printed a plan"
                        same "tests/expected/$name.strict.err" "$T/$name.err" "$name --strict"
                        "$KILN" plan --strict --json "$c" --inventory "$invf" >"$T/$name.out" 2>/dev/null
                        same "tests/expected/$name.strict.json" "$T/$name.out" "$name --strict --json"
                elif [[ -s $T/$name.err ]]; then
                        not_ok "$name: unexpected stderr:"; cat "$T/$name.err"
                fi
        else
                [[ -s $T/$name.out ]] && not_ok "$name: printed a plan although it failed"
                same "tests/expected/$name.err" "$T/$name.err" "diagnostics of $name"
                # --json: the refusal as one object on stdout (rule, disk, reason, problems)
                "$KILN" plan --json "$c" --inventory "$invf" >"$T/$name.out" 2>/dev/null; rc=$?
                [[ $rc == "$want" ]] || not_ok "$name --json: exit $rc, expected $want"
                same "tests/expected/$name.refusal.json" "$T/$name.out" "$name --json refusal"
        fi
        checked=$((checked + 1))
done

# --- match alternatives: the JSON says which one won, per disk -----------------
"$KILN" plan tests/plan/match-fallback.yaml --inventory tests/inventories/junk-box.json --json >"$T/mf.json" 2>"$T/mf.err" \
        || { not_ok "match-fallback --json failed:"; cat "$T/mf.err"; }
jq -e '[.disks[] | select(.selected) | "\(.path) \(.rule) \(.match)"] == ["/dev/sda sys 2", "/dev/sdc data 2", "/dev/sdd data 2"]' \
        "$T/mf.json" >/dev/null || { not_ok "match-fallback --json: wrong alternatives:"; jq -c '.disks' "$T/mf.json"; }
jq -e 'all(.disks[]; has("match") | not)' tests/expected/junk-box.json >/dev/null || not_ok "a rule without alternatives has 'match' in JSON"

# --- nodes: the row that applies, by the boot MAC, the serial, or the default --
# tests/plan/nodes-row.yaml is planned above for single-disk (its MAC's row);
# here the same spec for raid1-boot (its serial's row) and junk-box (no row:
# the default row). The text is kept; the JSON names the row.
for pair in "raid1-boot CZ20340ABC serial" "junk-box default default" "single-disk b0:26:28:4f:8a:10 mac"; do
        read -r inv row by <<<"$pair"
        out=tests/expected/nodes-row.$inv.plan
        [[ $inv == single-disk ]] && out=tests/expected/nodes-row.plan
        "$KILN" plan tests/plan/nodes-row.yaml --inventory "tests/inventories/$inv.json" >"$T/nr.plan" 2>"$T/nr.err" \
                || { not_ok "nodes-row on $inv failed:"; cat "$T/nr.err"; continue; }
        same "$out" "$T/nr.plan" "nodes-row on $inv"
        "$KILN" plan tests/plan/nodes-row.yaml --inventory "tests/inventories/$inv.json" --json >"$T/nr.json" 2>/dev/null
        jq -e --arg row "$row" --arg by "$by" '.node.row == $row and .node.by == $by and (.node.line | type) == "number"' \
                "$T/nr.json" >/dev/null || { not_ok "nodes-row on $inv: JSON names another row:"; jq -c .node "$T/nr.json"; }
        checked=$((checked + 1))
done
# a spec with nodes and no row for this machine and no default: the spec's own values
jq '.nics[0].mac = "02:00:00:00:00:01" | .serial = "NOT-IN-THE-TABLE"' tests/inventories/single-disk.json >"$T/stranger.json"
grep -v '^  default:' tests/plan/nodes-row.yaml >"$T/nodefault.yaml"
"$KILN" plan "$T/nodefault.yaml" --inventory "$T/stranger.json" --json >"$T/nr.json" 2>"$T/nr.err" \
        || { not_ok "nodes without a default row failed:"; cat "$T/nr.err"; }
jq -e '.node == {"row": null, "by": "none", "line": null} and .hostname == "kvm-020000000001"' "$T/nr.json" >/dev/null \
        || { not_ok "no row, no default: wrong node or hostname:"; jq -c '[.node, .hostname]' "$T/nr.json"; }
jq -e 'all(.steps[]; .kind != "network" or (.description | test("DHCP$")))' "$T/nr.json" >/dev/null \
        || not_ok "no row, no default: cloudbr0 is not DHCP"
# a spec without nodes says nothing of rows
jq -e 'has("node") | not' tests/expected/single-disk.json >/dev/null || not_ok "a spec without nodes has 'node' in its JSON"

# --- usage and unreadable inventory --------------------------------------------
"$KILN" plan >/dev/null 2>&1; rc=$?
[[ $rc == 64 ]] || not_ok "kiln plan without a spec exited $rc, expected 64"
"$KILN" plan templates/single-disk.yaml --inventory "$T/missing.json" >/dev/null 2>"$T/err"; rc=$?
[[ $rc == 1 ]] || not_ok "missing inventory: exit $rc, expected 1"
grep -q "failed to read the inventory of '$T/missing.json'" "$T/err" || { not_ok "missing inventory: wrong message"; cat "$T/err"; }

echo "$checked plans and refusals checked"
checks_done
