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

source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/controller.sh"
source "$SRC/tests/lib/mountns.sh"
source "$SRC/tests/lib/port.sh"
source "$SRC/tests/lib/spec.sh"
test_tmpdir register
SSHD_PID=

# The secrets of the spec: none may appear in any log, report or event
# (a test may set others before it starts the controller).
SECRET_KEY=$(secret cs-secret-)
HOST_PASSWORD=$(secret host-pw-)
HMAC_KEY=$(secret hmac-key-)
API_KEY="kiln-test-api-key"
ADMIN_API_KEY="kiln-test-admin-key"
ADMIN_SECRET_KEY=$(secret cs-admin-secret-)

# start_controller [controller options...]: a fresh one (empty database)
start_controller() {
  [[ ${NO_KILN:-} ]] || need_kiln_register
  rm -rf "$T/ctl"
  CTL_SECRET_KEY=$SECRET_KEY CTL_HMAC_KEY=$HMAC_KEY CTL_ADMIN_SECRET_KEY=$ADMIN_SECRET_KEY \
    controller_config "$T/ctl" '[{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]},
           {"name": "other", "pods": [{"name": "p9", "clusters": ["c9"]}]}]'
  controller_start "$T/ctl" "$@" || fail "the stand-in controller did not start"
  PORT=$CTL_PORT
  URL=$CTL
}

# write_spec FILE [secret_key]     (with HOST_URL set: that host_url)
write_spec() {
  local auth=$'\n'"    host_password: \"$HOST_PASSWORD\""
  [[ -n ${HOST_URL:-} ]] && auth+=$'\n'"    host_url: \"$HOST_URL\""
  spec_write "$1" vda register -- HOSTNAME=kvm-test CTL="$URL" API_KEY="$API_KEY" \
    SECRET_KEY="${2:-$SECRET_KEY}" HOST_USERNAME=root HOST_AUTH="$auth" HMAC_KEY="$HMAC_KEY"
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

# register_expect CODE LOG REPORT WHAT: kiln register with $T/spec.yaml and
# REPORT must exit CODE (7: the registration failed); its output is in LOG.
register_expect() {
  local want=$1 log=$2 report=$3 what=$4 rc=0
  "$KILN" register --report "$report" --spec "$T/spec.yaml" >"$log" 2>&1 || rc=$?
  [[ $rc == "$want" ]] || { cat "$log"; fail "$what: exit $rc, not $want"; }
}

# What the controller recorded: controller_sql QUERY on its SQLite database
# (fast), controller_dump (JSON) where bodies are needed.

# No secret in the given files.
assert_no_secrets() {
  local f s
  for f in "$@"; do
    for s in "$SECRET_KEY" "$HOST_PASSWORD" "$HMAC_KEY" "$ADMIN_SECRET_KEY"; do
      if grep -qF -- "$s" "$f"; then fail "a secret of the spec appears in $f"; fi
    done
  done
}

# cs_api ACCOUNT COMMAND [name=value...]: one signed CloudStack call as the
# registration account ("kiln") or the root admin ("admin"), signed with the
# key from the controller's config (never on a command line). Prints the HTTP
# status; the body is in $T/body.
cs_api() {
  local who=$1; shift
  local q
  q=$(CTL_SRC="$SRC/tests/controller" python3 - "$T/ctl/config.json" "$who" "$@" <<'PY'
import datetime, json, os, sys, urllib.parse
sys.path.insert(0, os.environ["CTL_SRC"])
import controller
cfg = json.load(open(sys.argv[1]))
key, secret = ((cfg["api_key"], cfg["secret_key"]) if sys.argv[2] == "kiln"
               else (cfg["admin_api_key"], cfg["admin_secret_key"]))
t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=300)
p = {"command": sys.argv[3], "response": "json", "apikey": key, "signatureversion": "3",
     "expires": t.strftime("%Y-%m-%dT%H:%M:%S+0000")}
for a in sys.argv[4:]:
    k, v = a.split("=", 1)
    p[k] = v
p["signature"] = controller.cloudstack_signature(p, secret)
print(urllib.parse.urlencode(p, quote_via=urllib.parse.quote))
PY
  ) || fail "could not sign $*"
  curl -s -o "$T/body" -w '%{http_code}' --data-binary "$q" -H 'Content-Type: application/x-www-form-urlencoded' "$URL/client/api"
}

# start_sshd: Debian's OpenSSH on 127.0.0.1 and a free port (SSH_PORT), with
# its own config and host key, in a mount namespace of its own where
# /etc/passwd and /etc/shadow are the test's (root, password HOST_PASSWORD,
# hashed; shell /bin/sh) and /usr/local/sbin is $T/sbin, which holds the stub
# cloudstack-setup-agent (it records its arguments in $T/sbin/setup-agent.calls).
# Nothing outside the namespace changes. Skips (77) without root or sshd.
start_sshd() {
  [[ $(id -u) == 0 ]] || { echo "needs root (a mount namespace for the test sshd)"; exit 77; }
  [[ -x /usr/sbin/sshd ]] || { echo "no /usr/sbin/sshd (openssh-server)"; exit 77; }
  /usr/bin/python3 -c 'import paramiko' 2>/dev/null || { echo "no python3-paramiko (for Debian's /usr/bin/python3)"; exit 77; }
  local d=$T/sshd
  mkdir -p "$d" "$T/sbin"
  install -m 0755 "$SRC/tests/controller/cloudstack-setup-agent-stub" "$T/sbin/cloudstack-setup-agent"
  ssh-keygen -q -t ed25519 -N '' -f "$d/host_key"
  grep -E '^(sshd|nobody):' /etc/passwd >"$d/passwd.base" || true
  { echo "root:x:0:0:root:/root:/bin/sh"; cat "$d/passwd.base"; } >"$d/passwd"
  (umask 077; printf 'root:%s:19000:0:99999:7:::\n' "$(printf '%s' "$HOST_PASSWORD" | openssl passwd -6 -stdin)" >"$d/shadow")
  SSH_PORT=$(free_port)
  cat >"$d/sshd_config" <<CFG
Port $SSH_PORT
ListenAddress 127.0.0.1
HostKey $d/host_key
PidFile $d/pid
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication no
PermitRootLogin yes
AuthorizedKeysFile none
StrictModes no
LogLevel VERBOSE
CFG
  unshare --mount --propagation private /bin/sh -c "$MOUNTNS_DROP_LOOPS"'
    d=$1 t=$2
    mount --bind "$d/passwd" /etc/passwd && mount --bind "$d/shadow" /etc/shadow &&
    mount --bind "$t/sbin" /usr/local/sbin && mount -t tmpfs tmpfs /run && mkdir -m 0755 /run/sshd &&
    exec /usr/sbin/sshd -D -e -f "$d/sshd_config"' sh "$d" "$T" >"$d/log" 2>&1 &
  SSHD_PID=$!
  cleanup_pid "$SSHD_PID"
  wait_listen "$SSH_PORT" "$SSHD_PID" && return 0
  cat "$d/log"
  kill -0 "$SSHD_PID" 2>/dev/null || fail "the test sshd did not start"
  fail "the test sshd did not listen on 127.0.0.1:$SSH_PORT"
}
