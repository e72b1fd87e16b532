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
[[ -s $tmp/err ]] && bad "templates: unexpected stderr: $(cat "$tmp/err")"
printf '%s: ok\n' "${tpl[@]}" | cmp -s - "$tmp/out" || bad "templates: stdout '$(cat "$tmp/out")'"
((t >= 5)) || bad "only $t templates"
echo "templates checked: $t"

# several files: ok lines for the good ones, diagnostics for the bad, exit 2
cd "$SRC/tests/bad-specs" || exit 1
"$KILN" validate ../../templates/single-disk.yaml version-2.yaml >"$tmp/out" 2>"$tmp/err"
rc=$?
((rc == 2)) || bad "mixed files: exit $rc, expected 2"
[[ $(cat "$tmp/out") == "../../templates/single-disk.yaml: ok" ]] || bad "mixed files: stdout '$(cat "$tmp/out")'"
cmp -s "$tmp/err" version-2.expected || bad "mixed files: stderr '$(cat "$tmp/err")'"

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
