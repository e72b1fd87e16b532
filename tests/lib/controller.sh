# The stand-in controller for host tests that bring their own temp dir and
# on_exit (tests/lib/http.sh, loop.sh); register-lib.sh writes its own
# config and has its own cleanup. Sourced, not a test.
#   controller_start DIR [start.sh options]  start it in DIR (127.0.0.1):
#                                            sets CTL_PID and CTL (its URL)
#   controller_stop                          end it, by its PID (for on_exit)
controller_start() {
  "$SRC/tests/controller/start.sh" "$@" >/dev/null || return 1
  CTL_PID=$(cat "$1/pid")
  CTL="http://127.0.0.1:$(cat "$1/port")"
}
controller_stop() {
  [[ -n ${CTL_PID:-} ]] || return 0
  # start.sh's child, not this shell's: wait(1) cannot wait for it, so
  # look until it is gone (5 s), then end it hard. Every command here must
  # succeed: under set -e a failing one would end the EXIT trap before
  # http.sh stops nginx, and ctest would wait for nginx's stdout
  kill "$CTL_PID" 2>/dev/null || true
  local _
  for _ in $(seq 50); do
    kill -0 "$CTL_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$CTL_PID" 2>/dev/null || true
  CTL_PID=
  return 0
}
