# A real Tang server (Debian's tangd behind socat) on 127.0.0.1 and a free
# port (sourced, not a test; it brings cleanup.sh and port.sh):
#   tang_start DIR [PORT]
#                    keys made fresh in DIR/db the first time (tangd-keygen)
#                    and kept across a stop and start; socat runs one
#                    `tangd DIR/db` a connection, its log (one line a
#                    request, "POST /rec/KID => 200") goes to DIR/log.
#                    Sets TANG_PORT, TANG_PID, TANG_URL (http://127.0.0.1:PORT)
#                    and TANG_THP (`jose jwk thp` of the signing key);
#                    PORT: listen there (another Tang at a URL a token names)
#                    stopped on exit. Skips (77) without tangd or jose
#   tang_stop        Tang goes away now (its port is closed)
#   tang_requests    the recovery requests Tang answered with 200 so far
source "$(dirname "${BASH_SOURCE[0]}")/cleanup.sh"
source "$(dirname "${BASH_SOURCE[0]}")/port.sh"

tang_start() {
  local k
  TANG_DIR=$1
  [[ -x /usr/libexec/tangd ]] || { echo "SKIP: no /usr/libexec/tangd (bash tests/deps.sh: tang)"; exit 77; }
  command -v jose >/dev/null || { echo "SKIP: no jose (bash tests/deps.sh)"; exit 77; }
  if [[ ! -d $TANG_DIR/db ]]; then
    mkdir -p "$TANG_DIR/db"
    /usr/libexec/tangd-keygen "$TANG_DIR/db" || { echo "tangd-keygen failed" >&2; return 1; }
  fi
  TANG_THP=
  for k in "$TANG_DIR"/db/*.jwk; do
    if jq -e '.key_ops | index("verify")' "$k" >/dev/null; then TANG_THP=$(jose jwk thp -i "$k"); fi
  done
  [[ -n $TANG_THP ]] || { echo "tangd-keygen made no signing key" >&2; return 1; }
  TANG_PORT=${2:-$(free_port)}
  socat "TCP-LISTEN:$TANG_PORT,bind=127.0.0.1,reuseaddr,fork" "EXEC:/usr/libexec/tangd $TANG_DIR/db" \
    2>>"$TANG_DIR/log" &
  TANG_PID=$!
  cleanup_pid "$TANG_PID"
  wait_listen "$TANG_PORT" "$TANG_PID" || { echo "Tang did not start" >&2; return 1; }
  TANG_URL=http://127.0.0.1:$TANG_PORT
}

tang_stop() {
  [[ -n ${TANG_PID:-} ]] && stop_pid "$TANG_PID"
  TANG_PID=
  return 0
}

tang_requests() { grep -c 'POST /rec/.* => 200' "$TANG_DIR/log" 2>/dev/null || true; }
