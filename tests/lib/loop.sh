# Shared by host tests that run kiln on loop devices. Source it after the
# test's own skip checks, then:
#   loop_init NAME     T=/tmp/kiln-NAME.XXXXXX, FAILS=0, and an EXIT trap that
#                      runs the test's on_exit (if it defines one), unmounts
#                      $T/target, detaches this test's loop devices (only
#                      those) and removes T, also when the test fails
#   attach FILE        losetup -P FILE -> ATTACHED; kiln sees only the loop
#                      devices attached here (KILN_INVENTORY_INCLUDE_LOOP lists
#                      them), never another checkout's test running at once
#   ok MSG, fail MSG   a result line; fail counts in FAILS
#   loop_done          exit 1 if anything failed
loop_init() {
  T=$(mktemp -d "/tmp/kiln-$1.XXXXXX") || exit 1
  LOOPS=()
  FAILS=0
  export KILN_INVENTORY_INCLUDE_LOOP=
  trap loop_cleanup EXIT
}

loop_cleanup() {
  local rc=$? l
  if declare -F on_exit >/dev/null; then on_exit; fi
  umount -R "$T/target" 2>/dev/null
  for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
  rm -rf "$T"
  exit $rc
}

fail() { echo "FAIL: $*" >&2; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }

attach() {
  ATTACHED=$(losetup -P -f --show "$1") || exit 1
  LOOPS+=("$ATTACHED")
  KILN_INVENTORY_INCLUDE_LOOP+="${KILN_INVENTORY_INCLUDE_LOOP:+ }$ATTACHED"
}

loop_done() {
  ((FAILS == 0)) || { echo "$FAILS check(s) failed"; exit 1; }
  echo "all ok"
}
