#!/bin/bash
# kiln validate: every bad spec in tests/bad-specs gives exactly the lines in
# its .expected file on stderr and exit 2; every template validates (exit 0).
set -u
: "${KILN:?} ${SRC:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cd "$SRC/tests/bad-specs" || exit 1
# One run over all files (sanitizer builds start slowly), then each file's lines
# are compared with its .expected; a few files also run alone for the exit code.
files=(*.yaml)
n=${#files[@]}
"$KILN" validate "${files[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "all bad specs: exit $rc, expected 2"
[[ -s $tmp/out ]] && bad "unexpected stdout: $(cat "$tmp/out")"
for y in "${files[@]}"; do
  name=${y%.yaml}
  [[ -f $name.expected ]] || { bad "$y: no $name.expected"; continue; }
  awk -v p="$y:" 'substr($0, 1, length(p)) == p' "$tmp/err" >"$tmp/one"
  if ! cmp -s "$tmp/one" "$name.expected"; then
    bad "$y: stderr differs from $name.expected:"
    diff -u "$name.expected" "$tmp/one" | sed 's/^/    /'
  fi
done
[[ $(cat *.expected | wc -l) == $(wc -l <"$tmp/err") ]] || bad "all bad specs: extra lines on stderr"
for y in yaml-syntax.yaml many-errors.yaml key-ambiguous.yaml; do
  "$KILN" validate "$y" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  ((rc == 2)) || bad "$y: exit $rc, expected 2"
  cmp -s "$tmp/err" "${y%.yaml}.expected" || bad "$y alone: stderr differs"
done
((n >= 40)) || bad "only $n bad specs, want at least 40"
# a value that may be a secret is never echoed
grep -l 'hunter2' *.expected && bad "a diagnostic echoes a secret"
echo "bad specs checked: $n"

cd "$SRC" || exit 1
tpl=(templates/*.yaml)
t=${#tpl[@]}
"$KILN" validate "${tpl[@]}" >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 0)) || bad "templates: exit $rc, expected 0: $(cat "$tmp/err")"
# templates carry placeholders (all-zero sha256, fake secrets): those warnings
# only (their exact wording: tests/warn-specs)
grep -vE "^templates/[^:]+:[0-9]+:[0-9]+: warning: '[a-z0-9_.]+' of [^:]* (is all zeros, a placeholder: no download will match it|looks like a placeholder: put the real secret in before a node uses this spec)$" "$tmp/err" \
  && bad "templates: a line on stderr that is not a placeholder warning"
grep -q "warning: 'sha256' of image is all zeros" "$tmp/err" || bad "templates: no all-zero sha256 warning"
printf '%s: ok\n' "${tpl[@]}" | cmp -s - "$tmp/out" || bad "templates: stdout '$(cat "$tmp/out")'"
((t >= 5)) || bad "only $t templates"
echo "templates checked: $t"

# --- warnings: shown, the spec is valid; --strict makes them errors ----------
cd "$SRC/tests/warn-specs" || exit 1
for y in *.yaml; do
  name=${y%.yaml}
  "$KILN" validate "$y" >"$tmp/out" 2>"$tmp/err"; rc=$?
  ((rc == 0)) || bad "$y: exit $rc, expected 0"
  [[ $(cat "$tmp/out") == "$y: ok" ]] || bad "$y: stdout '$(cat "$tmp/out")'"
  diff -u "$name.expected" "$tmp/err" || bad "$y: stderr differs from $name.expected"
  n_warn=$(wc -l <"$name.expected")
  ((n_warn > 0)) || bad "$y: no warning expected"
  "$KILN" validate --strict "$y" >"$tmp/out" 2>"$tmp/err"; rc=$?
  ((rc == 2)) || bad "$y --strict: exit $rc, expected 2"
  [[ -s $tmp/out ]] && bad "$y --strict: unexpected stdout"
  { cat "$name.expected"; echo "$y: $n_warn warning$( ((n_warn == 1)) || echo s), which --strict makes errors"; } | diff -u - "$tmp/err" \
    || bad "$y --strict: stderr differs"
done
grep -l 'hunter2' *.expected && bad "a warning echoes a secret"
cd "$SRC" || exit 1

# --- kiln validate -: a spec on standard input --------------------------------
"$KILN" validate - <tests/bad-specs/sector-size.yaml >"$tmp/out" 2>"$tmp/err"; rc=$?
((rc == 2)) || bad "stdin: exit $rc, expected 2"
sed 's/^sector-size.yaml:/<stdin>:/' tests/bad-specs/sector-size.expected | diff -u - "$tmp/err" || bad "stdin: stderr differs"
"$KILN" validate - <templates/single-disk.yaml >"$tmp/out" 2>/dev/null; rc=$?
((rc == 0)) && [[ $(cat "$tmp/out") == "<stdin>: ok" ]] || bad "stdin: good spec: exit $rc, stdout '$(cat "$tmp/out")'"

# --- kiln validate --json: one document, nothing on stderr ---------------------
"$KILN" validate --json tests/bad-specs/sector-size.yaml tests/warn-specs/sha256-zero.yaml >"$tmp/out" 2>"$tmp/err"; rc=$?
((rc == 2)) || bad "--json: exit $rc, expected 2"
[[ -s $tmp/err ]] && bad "--json: unexpected stderr: $(cat "$tmp/err")"
want='{"files":[{"file":"tests/bad-specs/sector-size.yaml","valid":false,"errors":1,"warnings":1},{"file":"tests/warn-specs/sha256-zero.yaml","valid":true,"errors":0,"warnings":2}],"diagnostics":[{"file":"tests/bad-specs/sector-size.yaml","line":4,"col":33,"severity":"error","message":"'"'"'sector_size'"'"' of luks '"'"'a'"'"' must be 512, 1024, 2048 or 4096, not '"'"'40960'"'"'","rule":null,"disk":null},'
[[ $(cat "$tmp/out") == "$want"* ]] || bad "--json: stdout '$(cat "$tmp/out")'"
jq -e '.diagnostics | length == 4 and (map(.severity) == ["error", "warning", "warning", "warning"])' "$tmp/out" >/dev/null \
  || bad "--json: not the 4 diagnostics expected"
"$KILN" validate --json --strict tests/warn-specs/sha256-zero.yaml >"$tmp/out" 2>/dev/null; rc=$?
((rc == 2)) && jq -e '.files[0].valid == false' "$tmp/out" >/dev/null || bad "--json --strict: exit $rc, $(cat "$tmp/out")"
"$KILN" validate --json "$tmp/none.yaml" >"$tmp/out" 2>/dev/null; rc=$?
((rc == 2)) && jq -e '.diagnostics[0].line == null and (.diagnostics[0].message == "cannot read spec: No such file or directory")' "$tmp/out" >/dev/null \
  || bad "--json, missing file: $(cat "$tmp/out")"

# several files: ok lines for the good ones, diagnostics for the bad, exit 2
cd "$SRC/tests/bad-specs" || exit 1
"$KILN" validate ../../templates/single-disk.yaml version-2.yaml >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "mixed files: exit $rc, expected 2"
[[ $(cat "$tmp/out") == "../../templates/single-disk.yaml: ok" ]] || bad "mixed files: stdout '$(cat "$tmp/out")'"
{ echo "../../templates/single-disk.yaml:22:11: warning: 'sha256' of image is all zeros, a placeholder: no download will match it"; cat version-2.expected; } | cmp -s - "$tmp/err" || bad "mixed files: stderr '$(cat "$tmp/err")'"

# unreadable and missing files: exit 2 with the reason
"$KILN" validate "$tmp/does-not-exist.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "missing file: exit $rc, expected 2"
[[ $(cat "$tmp/err") == "$tmp/does-not-exist.yaml: cannot read spec: No such file or directory" ]] ||
  bad "missing file: stderr '$(cat "$tmp/err")'"
"$KILN" validate "$tmp" >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "directory: exit $rc, expected 2"
[[ $(cat "$tmp/err") == "$tmp: cannot read spec: Is a directory" ]] || bad "directory: stderr '$(cat "$tmp/err")'"

# larger than 1 MiB: refused before parsing
{ echo "version: 1"; head -c 1100000 /dev/zero | tr '\0' '#'; echo; } >"$tmp/big.yaml"
"$KILN" validate "$tmp/big.yaml" >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "big file: exit $rc, expected 2"
[[ $(cat "$tmp/err") == "$tmp/big.yaml: spec is larger than 1048576 bytes" ]] || bad "big file: stderr '$(cat "$tmp/err")'"

# no arguments: usage
"$KILN" validate >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 64)) || bad "no arguments: exit $rc, expected 64"

exit $fail
