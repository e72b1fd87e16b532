# For host tests that run kiln on loop devices (sourced after the test's own
# skip checks; it brings assert.sh and cleanup.sh):
#   loop_init NAME     T=/tmp/kiln-NAME.XXXXXX; on exit $T/target is
#                      unmounted, this test's loop devices (only those) are
#                      detached and T is removed, also when the test fails
#   attach FILE        losetup -P FILE -> ATTACHED; kiln sees only the loop
#                      devices attached here (KILN_INVENTORY_INCLUDE_LOOP lists
#                      them), never another checkout's test running at once
source "$(dirname "${BASH_SOURCE[0]}")/assert.sh"
source "$(dirname "${BASH_SOURCE[0]}")/cleanup.sh"

loop_init() {
  test_tmpdir "$1"
  cleanup_umount "$T/target"
  export KILN_INVENTORY_INCLUDE_LOOP=
}

attach() {
  ATTACHED=$(losetup -P -f --show "$1") || exit 1
  cleanup_loop "$ATTACHED"
  KILN_INVENTORY_INCLUDE_LOOP+="${KILN_INVENTORY_INCLUDE_LOOP:+ }$ATTACHED"
}
