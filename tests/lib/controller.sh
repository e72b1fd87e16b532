# The stand-in CloudStack controller (tests/controller/controller.py) on
# 127.0.0.1 and a free port (sourced, not a test; it brings cleanup.sh).
#   controller_config DIR [ZONES]  DIR/config.json with test keys: the API key
#                        kiln-test-api-key and admin key kiln-test-admin-key,
#                        the secrets CTL_SECRET_KEY, CTL_HMAC_KEY and
#                        CTL_ADMIN_SECRET_KEY (random unless set: a test
#                        looks for them where they must not be), and ZONES
#                        (JSON; default: zone lab, pod p1, cluster c1)
#   controller_launch DIR [controller.py options...]
#                        start it in DIR (controller.db, controller.log, port,
#                        pid; config.json made as above unless it exists);
#                        sets CTL_DIR, CTL_PID, CTL_PORT and CTL (its URL).
#                        Not stopped on exit (tests/controller/start.sh)
#   controller_start DIR [options...]   the same, stopped on exit
#   controller_stop      end it now, by its PID
#   controller_key NAME  one string field of its config.json (api_key, ...)
#   controller_sql QUERY what it recorded (its SQLite database)
#   controller_dump      all it recorded, as JSON
#   controller_admin JSON  change the running controller (fault modes,
#                        delays, ssh, seed_hosts); fails the test if refused
_ctl_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$_ctl_here/cleanup.sh"
_ctl_random() { printf '%s%s' "$1" "$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')"; }

controller_config() {
  : "${CTL_SECRET_KEY:=$(_ctl_random kiln-test-secret-)}" "${CTL_HMAC_KEY:=$(_ctl_random kiln-test-hmac-)}"
  : "${CTL_ADMIN_SECRET_KEY:=$(_ctl_random kiln-test-admin-secret-)}"
  local zones='[{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]}]'
  mkdir -p "$1"
  (umask 077; cat >"$1/config.json" <<JSON
{"api_key": "kiln-test-api-key", "secret_key": "$CTL_SECRET_KEY", "hmac_key": "$CTL_HMAC_KEY",
 "admin_api_key": "kiln-test-admin-key", "admin_secret_key": "$CTL_ADMIN_SECRET_KEY",
 "zones": ${2:-$zones}}
JSON
  )
}

controller_launch() {
  local dir=$1 py=/usr/bin/python3 _; shift
  mkdir -p "$dir"
  [[ -e $dir/config.json ]] || controller_config "$dir"
  rm -f "$dir/port"
  # Debian's python3: the one python3-paramiko (tests/deps.sh) is installed for
  [[ -x $py ]] || py=python3
  "$py" "$_ctl_here/../controller/controller.py" --db "$dir/controller.db" --config "$dir/config.json" \
    --port 0 --port-file "$dir/port" "$@" >>"$dir/controller.log" 2>&1 &
  CTL_PID=$! CTL_DIR=$dir
  echo "$CTL_PID" >"$dir/pid"
  for _ in $(seq 100); do
    [[ -s $dir/port ]] && break
    kill -0 "$CTL_PID" 2>/dev/null || { cat "$dir/controller.log" >&2; echo "controller did not start" >&2; return 1; }
    sleep 0.05
  done
  [[ -s $dir/port ]] || { kill "$CTL_PID"; echo "controller did not start in time" >&2; return 1; }
  CTL_PORT=$(cat "$dir/port")
  CTL="http://127.0.0.1:$CTL_PORT"
}

controller_start() {
  controller_launch "$@" || return 1
  cleanup_pid "$CTL_PID"
}

controller_stop() {
  [[ -n ${CTL_PID:-} ]] && stop_pid "$CTL_PID"
  CTL_PID=
  return 0
}

controller_key() {
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$CTL_DIR/config.json" "$1"
}
controller_sql() { sqlite3 -batch -noheader "$CTL_DIR/controller.db" "$1"; }
controller_dump() { python3 "$_ctl_here/../controller/controller.py" --dump "$CTL_DIR/controller.db"; }
controller_admin() {
  curl -sf -o /dev/null --data-binary "$1" "$CTL/kiln/admin" || { echo "FAIL: controller admin call failed: $1" >&2; exit 1; }
}
