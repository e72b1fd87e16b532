# Shared by host tests: a real nginx on 127.0.0.1 with its own config in a
# temp dir, on a free port picked at run time. Source it, then:
#   http_test_init NAME          T=/tmp/kiln-test-NAME.XXXXXX and an EXIT trap
#                                that runs the test's on_exit (if it defines
#                                one), stops the proxy and nginx, removes T
#   http_start ROOT [CERT KEY]   -> sets HTTP_PORT (and HTTPS_PORT with a cert);
#                                HTTP_LOCATIONS (nginx directives) go into both
#                                servers, e.g. 'location = /hook { return 204; }'
#   http_stop                    (also done by the EXIT trap)
#   proxy_start ACTION...        a fault-injecting proxy in front of nginx
#   run_kiln RC ARGS...          kiln ARGS (stdin /dev/null, stderr in $T/err,
#                                stdout in $T/stdout); fails unless it exits RC
#   expect_err TEXT              $T/err holds TEXT
#   requests                     how many requests the proxy has seen
#   fail MSG                     says so and exits 1
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

http_start() {
  local root=$1 cert=${2:-} key=${3:-}
  command -v nginx >/dev/null || { echo "SKIP: nginx not installed"; exit 77; }
  HTTP_DIR=$(mktemp -d /tmp/kiln-nginx.XXXXXX)
  HTTP_PORT=$(free_port)
  local tls=""
  if [[ -n $cert ]]; then
    HTTPS_PORT=$(free_port)
    tls="server { listen 127.0.0.1:$HTTPS_PORT ssl; ssl_certificate $cert; ssl_certificate_key $key; root $root; ${HTTP_LOCATIONS:-} }"
  fi
  mkdir -p "$HTTP_DIR/tmp"
  cat >"$HTTP_DIR/nginx.conf" <<CONF
daemon off;
user root;
worker_processes 1;
pid $HTTP_DIR/nginx.pid;
error_log $HTTP_DIR/error.log;
events { worker_connections 64; }
http {
  access_log $HTTP_DIR/access.log;
  client_body_temp_path $HTTP_DIR/tmp; proxy_temp_path $HTTP_DIR/tmp;
  fastcgi_temp_path $HTTP_DIR/tmp; uwsgi_temp_path $HTTP_DIR/tmp; scgi_temp_path $HTTP_DIR/tmp;
  default_type application/octet-stream;
  sendfile on;
  server { listen 127.0.0.1:$HTTP_PORT; root $root; ${HTTP_LOCATIONS:-} }
  $tls
}
CONF
  nginx -e "$HTTP_DIR/error.log" -c "$HTTP_DIR/nginx.conf" -p "$HTTP_DIR" &
  HTTP_PID=$!
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$HTTP_PORT/" && return 0
    sleep 0.1
  done
  echo "nginx did not start:"; cat "$HTTP_DIR/error.log"; return 1
}

http_stop() {
  if [[ -n ${HTTP_PID:-} ]]; then
    kill "$HTTP_PID" 2>/dev/null || true
    wait "$HTTP_PID" 2>/dev/null || true
    HTTP_PID=
  fi
  [[ -n ${HTTP_DIR:-} ]] && rm -rf "$HTTP_DIR"
  HTTP_DIR=
}

# proxy_start ACTION...  -> PROXY_PORT, PROXY_LOG (one line per request)
proxy_start() {
  PROXY_LOG=$(mktemp /tmp/kiln-proxy-log.XXXXXX)
  local pf
  pf=$(mktemp -u /tmp/kiln-proxy-port.XXXXXX)
  python3 "$(dirname "${BASH_SOURCE[0]}")/faultproxy.py" "$HTTP_PORT" "$pf" "$PROXY_LOG" "$@" &
  PROXY_PID=$!
  for _ in $(seq 50); do [[ -s $pf ]] && break; sleep 0.1; done
  PROXY_PORT=$(cat "$pf"); rm -f "$pf"
}

proxy_stop() {
  if [[ -n ${PROXY_PID:-} ]]; then
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true
    PROXY_PID=
  fi
  [[ -n ${PROXY_LOG:-} ]] && rm -f "$PROXY_LOG"
  PROXY_LOG=
}

http_test_init() {
  T=$(mktemp -d "/tmp/kiln-test-$1.XXXXXX") || exit 1
  trap http_test_cleanup EXIT
}

http_test_cleanup() {
  if declare -F on_exit >/dev/null; then on_exit; fi
  proxy_stop; http_stop; rm -rf "$T"
}

fail() { echo "FAIL: $*"; exit 1; }

run_kiln() {
  local want=$1; shift
  local rc=0
  "$KILN" "$@" </dev/null >"$T/stdout" 2>"$T/err" || rc=$?
  [[ $rc == "$want" ]] || { cat "$T/stdout" "$T/err"; fail "kiln $* exited $rc, expected $want"; }
}

expect_err() { grep -qF -- "$1" "$T/err" || { cat "$T/err"; fail "expected message: $1"; }; }

requests() { wc -l <"$PROXY_LOG"; }
