#!/bin/bash
# Start the stand-in controller in the background on 127.0.0.1 and a free port.
#   start.sh DIR [controller options...]
# DIR gets controller.db, config.json (written here with test keys unless it
# exists), controller.log, port and pid. Prints "port=N pid=P" once it listens.
# Stop it with: kill "$(cat DIR/pid)"
set -euo pipefail
dir=${1:?usage: start.sh DIR [controller options...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
if [[ ! -e $dir/config.json ]]; then
  (umask 077; cat >"$dir/config.json" <<JSON
{"api_key": "kiln-test-api-key",
 "secret_key": "kiln-test-secret-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')",
 "hmac_key": "kiln-test-hmac-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')",
 "admin_api_key": "kiln-test-admin-key",
 "admin_secret_key": "kiln-test-admin-secret-$(od -An -tx1 -N12 /dev/urandom | tr -d ' \n')",
 "zones": [{"name": "lab", "pods": [{"name": "p1", "clusters": ["c1"]}]}]}
JSON
  )
fi
rm -f "$dir/port"
# Debian's python3: the one python3-paramiko (tests/deps.sh) is installed for
py=/usr/bin/python3
[[ -x $py ]] || py=python3
"$py" "$here/controller.py" --db "$dir/controller.db" --config "$dir/config.json" \
  --port 0 --port-file "$dir/port" "$@" >>"$dir/controller.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/pid"
for _ in $(seq 100); do
  [[ -s $dir/port ]] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/controller.log" >&2; echo "controller did not start" >&2; exit 1; }
  sleep 0.05
done
[[ -s $dir/port ]] || { kill "$pid"; echo "controller did not start in time" >&2; exit 1; }
echo "port=$(cat "$dir/port") pid=$pid"
