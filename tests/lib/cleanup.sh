# One EXIT trap for a test (sourced, not a test): it stops what the test
# was given to stop and removes what it made, also when the test fails or is
# interrupted, and keeps the test's exit status.
#   test_tmpdir NAME [PARENT]   T=PARENT/kiln-NAME.XXXXXX (PARENT: /tmp), removed
#   cleanup_pid PID...          ended on exit: TERM, then KILL after 5 s; waited
#                               for when it is this shell's child
#   cleanup_umount DIR          umount -R DIR on exit (lazily if busy), the
#                               latest first, before the loop devices
#   cleanup_loop DEV            losetup -d DEV on exit (partx's partitions first)
#   cleanup_path PATH           rm -rf PATH on exit (last; never through a
#                               mount: a PATH with one left is kept and named)
#   cleanup_do CMD...           run CMD on exit, first (the latest first);
#                               CLEANUP_RC then holds the test's exit status
# The trap is installed by the first of these calls; a test that needs
# nothing else calls cleanup_init.
[[ -n ${CLEANUP_SOURCED:-} ]] && return 0   # sourced again by another lib: keep what is registered
CLEANUP_SOURCED=1
CLEANUP_PIDS=() CLEANUP_UMOUNTS=() CLEANUP_LOOPS=() CLEANUP_PATHS=() CLEANUP_CMDS=()

cleanup_init() {
  [[ -n ${CLEANUP_TRAP:-} ]] && return 0
  CLEANUP_TRAP=1
  trap cleanup_run EXIT
  trap 'exit 130' INT TERM HUP
}

test_tmpdir() {
  cleanup_init
  T=$(mktemp -d "${2:-/tmp}/kiln-$1.XXXXXX") || { echo "FAIL: mktemp" >&2; exit 1; }
  CLEANUP_PATHS+=("$T")
}
cleanup_pid() { cleanup_init; local p; for p in "$@"; do [[ -n $p ]] && CLEANUP_PIDS+=("$p"); done; return 0; }
cleanup_umount() { cleanup_init; CLEANUP_UMOUNTS+=("$1"); }
cleanup_loop() { cleanup_init; CLEANUP_LOOPS+=("$1"); }
cleanup_path() { cleanup_init; CLEANUP_PATHS+=("$1"); }
cleanup_do() { cleanup_init; CLEANUP_CMDS=("$(printf '%q ' "$@")" "${CLEANUP_CMDS[@]}"); }

# stop_pid PID...: TERM, up to 5 s to go, then KILL; reaped if ours. Every
# command succeeds, so that under set -e the trap runs to its end.
stop_pid() {
  local p _
  for p in "$@"; do kill "$p" 2>/dev/null || true; done
  for p in "$@"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  return 0
}

cleanup_run() {
  local rc=$? c i
  set +e
  trap - EXIT
  CLEANUP_RC=$rc
  for c in "${CLEANUP_CMDS[@]}"; do eval "$c"; done
  stop_pid "${CLEANUP_PIDS[@]}"
  for ((i = ${#CLEANUP_UMOUNTS[@]} - 1; i >= 0; i--)); do
    umount -R "${CLEANUP_UMOUNTS[i]}" 2>/dev/null || umount -R -l "${CLEANUP_UMOUNTS[i]}" 2>/dev/null
  done
  for c in "${CLEANUP_LOOPS[@]}"; do partx -d "$c" 2>/dev/null; losetup -d "$c" 2>/dev/null; done
  for c in "${CLEANUP_PATHS[@]}"; do
    if findmnt -rn -o TARGET | grep -qF -- "$c/"; then echo "# $c still has mounts: left in place" >&2
    else rm -rf --one-file-system "$c"; fi
  done
  exit "$rc"
}
