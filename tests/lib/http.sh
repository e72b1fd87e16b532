# A real nginx on 127.0.0.1 with its own config in a temp dir, on a free
# port picked at run time, and a fault-injecting proxy in front of it
# (sourced, not a test; it brings assert.sh, cleanup.sh and port.sh):
#   nginx_run DIR PORT HTTP...   nginx with DIR/nginx.conf: the common head
#                                (pid, logs DIR/error.log and DIR/access.log,
#                                temp paths in DIR) and the directives HTTP...
#                                inside its http block; waits until PORT
#                                answers; NGINX_CONNECTIONS (64) per worker.
#                                Sets NGINX_PID; stopped on exit
#   http_start ROOT [CERT KEY]   nginx serving ROOT -> HTTP_PORT, HTTP_DIR
#                                (and HTTPS_PORT with a cert); HTTP_LOCATIONS
#                                (nginx directives) go into both servers,
#                                e.g. 'location = /hook { return 204; }'
#   http_stop                    nginx ends now (else on exit)
#   proxy_start ACTION...        tests/lib/faultproxy.py in front of nginx ->
#                                PROXY_PORT, PROXY_LOG (one line a request)
#   proxy_stop, requests         end it; how many requests it has seen
#   run_kiln RC ARGS...          kiln ARGS (stdin /dev/null, stderr in $T/err,
#                                stdout in $T/stdout); fails unless it exits RC
#   expect_err TEXT              $T/err holds TEXT, else fail
_lib=$(dirname "${BASH_SOURCE[0]}")
source "$_lib/assert.sh"
source "$_lib/cleanup.sh"
source "$_lib/port.sh"

nginx_run() {
  local dir=$1 port=$2; shift 2
  command -v nginx >/dev/null || { echo "SKIP: nginx not installed"; exit 77; }
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<CONF
daemon off;
user root;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log;
events { worker_connections ${NGINX_CONNECTIONS:-64}; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp;
  fastcgi_temp_path $dir/tmp; uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  default_type application/octet-stream;
  sendfile on;
$(printf '  %s\n' "$@")
}
CONF
  nginx -e "$dir/error.log" -c "$dir/nginx.conf" -p "$dir" &
  NGINX_PID=$!
  cleanup_pid "$NGINX_PID"
  wait_listen "$port" "$NGINX_PID" && return 0
  echo "nginx did not start:"; cat "$dir/error.log"; return 1
}

http_start() {
  local root=$1 cert=${2:-} key=${3:-} tls=""
  HTTP_DIR=$(mktemp -d /tmp/kiln-nginx.XXXXXX)
  cleanup_path "$HTTP_DIR"
  HTTP_PORT=$(free_port)
  if [[ -n $cert ]]; then
    HTTPS_PORT=$(free_port)
    tls="server { listen 127.0.0.1:$HTTPS_PORT ssl; ssl_certificate $cert; ssl_certificate_key $key; root $root; ${HTTP_LOCATIONS:-} }"
  fi
  nginx_run "$HTTP_DIR" "$HTTP_PORT" \
    "server { listen 127.0.0.1:$HTTP_PORT; root $root; ${HTTP_LOCATIONS:-} }" "$tls" || return 1
  HTTP_PID=$NGINX_PID
}

http_stop() {
  [[ -n ${HTTP_PID:-} ]] && stop_pid "$HTTP_PID"
  HTTP_PID=
  [[ -n ${HTTP_DIR:-} ]] && rm -rf "$HTTP_DIR"
  HTTP_DIR=
  return 0
}

proxy_start() {
  PROXY_LOG=$(mktemp /tmp/kiln-proxy-log.XXXXXX)
  cleanup_path "$PROXY_LOG"
  local pf
  pf=$(mktemp -u /tmp/kiln-proxy-port.XXXXXX)
  python3 "$_lib/faultproxy.py" "$HTTP_PORT" "$pf" "$PROXY_LOG" "$@" &
  PROXY_PID=$!
  cleanup_pid "$PROXY_PID"
  for _ in $(seq 50); do [[ -s $pf ]] && break; sleep 0.1; done
  PROXY_PORT=$(cat "$pf"); rm -f "$pf"
}

proxy_stop() {
  [[ -n ${PROXY_PID:-} ]] && stop_pid "$PROXY_PID"
  PROXY_PID=
  [[ -n ${PROXY_LOG:-} ]] && rm -f "$PROXY_LOG"
  PROXY_LOG=
  return 0
}

requests() { wc -l <"$PROXY_LOG"; }

run_kiln() {
  local want=$1; shift
  local rc=0
  "$KILN" "$@" </dev/null >"$T/stdout" 2>"$T/err" || rc=$?
  [[ $rc == "$want" ]] || { cat "$T/stdout" "$T/err"; fail "kiln $* exited $rc, expected $want"; }
}

expect_err() { grep -qF -- "$1" "$T/err" || { cat "$T/err"; fail "expected message: $1"; }; }
