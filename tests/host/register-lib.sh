# Shared by tests/host/test-register-*.sh (sourced, not a test itself).
# Starts the stand-in controller on 127.0.0.1, writes a spec whose register
# section points at it and a saved run report, and cleans up on exit.
set -euo pipefail
: "${KILN:?}" "${SRC:?}"
for c in python3 sqlite3 jq curl openssl; do command -v $c >/dev/null || { echo "no $c"; exit 77; }; done

# Until main.c's table has the command (it needs spec_load from the spec module).
need_kiln_register() {
  "$KILN" register --help >/dev/null 2>&1 || { echo "kiln has no 'register' command yet"; exit 77; }
}

T=$(mktemp -d /tmp/kiln-register-XXXXXX)
CTL_PID=
cleanup() {
  [[ -n $CTL_PID ]] && kill "$CTL_PID" 2>/dev/null && wait "$CTL_PID" 2>/dev/null || true
  rm -rf "$T"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# The secrets of the spec: none may appear in any log, report or event.
SECRET_KEY="cs-secret-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
HOST_PASSWORD="host-pw-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
HMAC_KEY="hmac-key-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"
API_KEY="kiln-test-api-key"
ADMIN_API_KEY="kiln-test-admin-key"
ADMIN_SECRET_KEY="cs-admin-secret-$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')"

# start_controller [controller options...]
start_controller() {
  [[ ${NO_KILN:-} ]] || need_kiln_register
  rm -rf "$T/ctl"
  mkdir -p "$T/ctl"
  (umask 077; cat >"$T/ctl/config.json" <<JSON
{"api_key": "$API_KEY", "secret_key": "$SECRET_KEY", "hmac_key": "$HMAC_KEY",
 "admin_api_key": "$ADMIN_API_KEY", "admin_secret_key": "$ADMIN_SECRET_KEY",
 "zones": [{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]},
           {"name": "other", "pods": [{"name": "p9", "clusters": ["c9"]}]}]}
JSON
  )
  "$SRC/tests/controller/start.sh" "$T/ctl" "$@" >"$T/ctl/started"
  CTL_PID=$(cat "$T/ctl/pid")
  PORT=$(cat "$T/ctl/port")
  URL="http://127.0.0.1:$PORT"
}

stop_controller() {
  kill "$CTL_PID" 2>/dev/null || true
  wait "$CTL_PID" 2>/dev/null || true
  CTL_PID=
}

# write_spec FILE [secret_key]
write_spec() {
  cat >"$1" <<YAML
version: 1
hostname: kvm-test
disks:
  - {id: d, match: {path: /dev/vda}}
register:
  cloudstack:
    endpoint: "$URL/client/api"
    zone: lab
    pod: p1
    cluster: c1
    api_key: "$API_KEY"
    secret_key: "${2:-$SECRET_KEY}"
    host_username: root
    host_password: "$HOST_PASSWORD"
  webhook:
    url: "$URL/kiln/webhook"
    hmac_key: "$HMAC_KEY"
YAML
}

# write_report FILE IP [RESULT]
write_report() {
  cat >"$1" <<JSON
{"kiln_report": 1,
 "run_id": "$(cat /proc/sys/kernel/random/uuid)",
 "node": {"id": "52:54:00:12:34:56", "mac": "52:54:00:12:34:56", "ip": "$2", "hostname": "kvm-test"},
 "started": "2026-11-30T05:00:00.000Z",
 "result": "${3:-SUCCESS}",
 "stages": [{"name": "mkfs root", "started": "2026-11-30T05:00:01.000Z", "finished": "2026-11-30T05:00:03.000Z",
             "duration_ms": 2000, "result": "SUCCESS"}],
 "bench": {"cipher_mbps": 812.5, "raw_write_mbps": 410.0, "crypt_write_mbps": 388.2, "overhead": 0.05}}
JSON
}

# What the controller recorded: `sql QUERY` on its SQLite database (fast; the
# full JSON dump is `controller.py --dump DB`, used where bodies are needed).
sql() { sqlite3 -batch -noheader "$T/ctl/controller.db" "$1"; }
dump() { python3 "$SRC/tests/controller/controller.py" --dump "$T/ctl/controller.db"; }

# No secret in the given files.
assert_no_secrets() {
  local f s
  for f in "$@"; do
    for s in "$SECRET_KEY" "$HOST_PASSWORD" "$HMAC_KEY" "$ADMIN_SECRET_KEY"; do
      if grep -qF -- "$s" "$f"; then fail "a secret of the spec appears in $f"; fi
    done
  done
}
