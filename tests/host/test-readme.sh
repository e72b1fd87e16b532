#!/bin/bash
# The README a newcomer reads (issue 29): at most 200 lines, its annotated
# spec validates with no error (warnings only for its placeholders), every
# docs/ page it names exists, and it shows the one test command that
# .ci/run runs. The size figure it gives is checked by test-static.
set -u
: "${KILN:?} ${SRC:?}"
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir readme
readme=$SRC/README.md

n=$(wc -l <"$readme")
check "README is at most 200 lines ($n)" test "$n" -le 200

sed -n '/^```yaml$/,/^```$/p' "$readme" | sed '1d;$d' >"$T/readme.yaml"
check "README has an annotated spec ($(wc -l <"$T/readme.yaml") lines)" test -s "$T/readme.yaml"
"$KILN" validate "$T/readme.yaml" >"$T/out" 2>"$T/err"; rc=$?
expect_eq "the README's spec validates" 0 "$rc"
errs=$(grep -v ': warning: ' "$T/err")
check "the README's spec draws only placeholder warnings ($(wc -l <"$T/err"))" test -z "$errs"

missing=
for doc in $(grep -oE 'docs/[a-z-]+\.md' "$readme" | sort -u); do
  [[ -f $SRC/$doc ]] || missing+=" $doc"
done
check "every docs page the README names exists${missing:+ (missing:$missing)}" test -z "$missing"

cmd=$(grep -v '^#' "$SRC/.ci/run" | grep -oE 'bash tests/[a-z-]+\.sh' | head -1)
check "the README shows .ci/run's command ('$cmd')" grep -qF -- "$cmd" "$readme"
checks_done
