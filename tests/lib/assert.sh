# The shell assertions every test uses (sourced, not a test). Two kinds:
# a check that stops the test, and checks that count and let it go on.
#   fail MSG              "FAIL: MSG" on stderr, exit 1 (the EXIT trap of
#                         tests/lib/cleanup.sh still stops what was started)
#   ok MSG                "ok - MSG"
#   not_ok MSG            "not ok - MSG", counted in FAILS; the test goes on
#   check DESC CMD...     ok DESC when CMD succeeds, else not_ok DESC
#   expect_eq DESC WANT GOT       GOT is exactly WANT (else not_ok and a diff)
#   expect_file DESC FILE WANT    FILE's whole text is exactly WANT
#   expect_in DESC FILE TEXT      FILE holds the line fragment TEXT (grep -F)
#   expect_not_in DESC FILE TEXT  FILE does not hold TEXT
#   secret PREFIX         PREFIX and 16 random hex digits: a throwaway
#                         password or key that a test then looks for where
#                         it must not be
#   no_secret_forms FILE...  no line of the file $SECRET_FORMS (every form a
#                         secret may take, one a line) in any FILE (a
#                         directory is searched); an empty FILE fails too:
#                         nothing was checked
#   expect_kiln RC OUT ARGS...  kiln ARGS ($KILN), stdout and stderr in OUT;
#                         unless it exits RC: OUT's end shown, not_ok, and
#                         it returns 1
#   skip_unless_root WHY  exit 77 ("SKIP: needs root WHY") unless root
#   skip_unless_tools T...  exit 77 ("SKIP: T missing") for the first T not
#                         on PATH
#   checks_done           the verdict of the counting checks: exit 1 with
#                         their count when any failed, else exit 0
# The output is TAP's shape ("ok - ", "not ok - ", "# ..."), as the rig's
# (tests/rig/lib.sh: rig_ok, rig_not_ok, rig_check, rig_done) is.
FAILS=${FAILS:-0}

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; FAILS=$((FAILS + 1)); }
check() {
  local what=$1; shift
  if "$@"; then ok "$what"; else not_ok "$what"; fi
}

expect_eq() {
  if [[ $3 == "$2" ]]; then ok "$1"; return 0; fi
  not_ok "$1"
  diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | sed 's/^/#   /'
  return 1
}
expect_file() {
  local got
  got=$(cat "$2" 2>/dev/null) || { not_ok "$1 (no file $2)"; return 1; }
  expect_eq "$1" "$3" "$got"
}
expect_in() {
  if grep -qF -- "$3" "$2" 2>/dev/null; then ok "$1"; return 0; fi
  not_ok "$1 (no '$3' in $2)"
  sed -n '1,20s/^/#   /p' "$2" 2>/dev/null
  return 1
}
expect_not_in() {
  if ! grep -qF -- "$3" "$2" 2>/dev/null; then ok "$1"; return 0; fi
  not_ok "$1 ('$3' is in $2)"
  return 1
}

secret() { printf '%s%s\n' "$1" "$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"; }

no_secret_forms() {
  local f hit
  for f in "$@"; do
    [[ -s $f || -d $f ]] || fail "$f is empty: nothing was checked"
    if hit=$(grep -raFf "$SECRET_FORMS" -- "$f"); then fail "a secret appears in $f: ${hit:0:300}"; fi
  done
  return 0
}

skip_unless_root() { [[ $(id -u) == 0 ]] || { echo "SKIP: needs root $*"; exit 77; }; }
skip_unless_tools() {
  local t
  for t in "$@"; do command -v "$t" >/dev/null || { echo "SKIP: $t missing"; exit 77; }; done
}

expect_kiln() {
  local want=$1 out=$2 rc=0; shift 2
  "$KILN" "$@" >"$out" 2>&1 || rc=$?
  [[ $rc == "$want" ]] && return 0
  tail -20 "$out"
  not_ok "kiln $1 exited $rc, expected $want"
  return 1
}

checks_done() {
  if ((FAILS)); then echo "# $FAILS check(s) failed"; exit 1; fi
  echo "# all checks passed"
  exit 0
}
