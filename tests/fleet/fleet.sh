#!/bin/bash
# A rack at once: N simulated nodes run the network half of `kiln boot` at
# the same time against one nginx and one stand-in controller on 127.0.0.1.
#
#   KILN=out/build/kiln SRC=. FLEET_N=100 bash tests/fleet/fleet.sh
#
# Each node is one `kiln boot --cmdline FILE --inventory FILE --skip-storage
# --no-finish` (niced) with its own identity (MAC, serial, UUID, IP) on one
# box of the mix (MIX below: the recorded inventories of tests/inventories/
# and the generated ones of tests/fleet/inventories.py, in turn), its own
# KILN_RUN_DIR and KILN_TARGET (a plain directory). It fetches its spec by
# the templated URL kiln.spec=.../specs/${mac}.yaml, which nginx answers for
# every MAC with the one rack spec (kickstart/nginx.conf's try_files): the
# layouts of templates/rack.yaml, the register section, the image. A box
# that fits a layout plans it, streams the image into its target, posts the
# webhook events and the report, and installs the first-boot registration
# there; then, as the installed system's kiln-register.service would, `kiln
# register --firstboot` (with --root for the directory) fetches the spec
# again and registers with the controller's CloudStack API (docs/register.md
# "Where addHost belongs"). A box that fits none enlists (kiln.enlist=) with
# every layout's reason, and registers nothing. analyse.py checks each node's
# layout against MIX's, the enlisted ones against the controller's table.
#
# nginx pushes back: limit_req on the specs, limit_conn on the images (both
# answer 503, with Retry-After when FLEET_RETRY_AFTER is set) and limit_rate
# on every image transfer. The images go through tests/lib/faultproxy.py,
# which cuts the first FLEET_CUTS image responses half way. One node runs
# alone first (node 0, the baseline time); then the other N start at once.
#
# tests/fleet/analyse.py checks the results (exit 1 on a broken bound) and
# prints the figures docs/benchmarks.md reports; FLEET_OUT=DIR keeps the
# logs and summary.json there.
#
# Knobs (environment): FLEET_N (100), FLEET_IMAGE_KIB (4096), FLEET_RATE
# (nginx limit_rate, 512k), FLEET_CONN (limit_conn on images, 10),
# FLEET_SPEC_RATE (limit_req rate, r/s, 10), FLEET_SPEC_BURST (10),
# FLEET_CUTS (N/10), FLEET_RETRY_AFTER (seconds; unset: no header);
# the bounds analyse.py asserts (issue 27): FLEET_PEAK_SHARE (0.2: fewer
# than 20% of N retrying in any one second), FLEET_WALL_RATIO (1.2) and
# FLEET_WALL_SLACK (0 s): wall time within RATIO x node 0's time x N / CONN
# + SLACK.
set -euo pipefail
: "${KILN:?set KILN to the kiln binary}" "${SRC:?set SRC to the source tree}"
for c in nginx python3 zstd tar sqlite3; do
  command -v $c >/dev/null || { echo "SKIP: $c not installed"; exit 77; }
done
KILN=$(realpath "$KILN")
N=${FLEET_N:-100}
IMAGE_KIB=${FLEET_IMAGE_KIB:-4096}
RATE=${FLEET_RATE:-512k}
CONN=${FLEET_CONN:-10}
SPEC_RATE=${FLEET_SPEC_RATE:-10}
SPEC_BURST=${FLEET_SPEC_BURST:-10}
CUTS=${FLEET_CUTS:-$(( N / 10 ))}
RETRY_AFTER=${FLEET_RETRY_AFTER:-}

source "$SRC/tests/lib/http.sh"
source "$SRC/tests/lib/controller.sh"
source "$SRC/tests/lib/spec.sh"
test_tmpdir fleet
PIDS=()
keep_logs() {
  [[ -n ${FLEET_OUT:-} ]] || return 0
  mkdir -p "$FLEET_OUT"
  cp -r "$T/logs" "$FLEET_OUT/" 2>/dev/null || true
  cp "$T/summary.json" "$FLEET_OUT/" 2>/dev/null || true
}
cleanup_do keep_logs
cleanup_do eval 'stop_pid "${PIDS[@]}"'
mkdir -p "$T/www/specs" "$T/www/images" "$T/logs" "$T/nodes"

# 1. the image: incompressible files, so the bytes on the wire are the image's
mkdir -p "$T/imgroot/etc" "$T/imgroot/data"
echo fleet >"$T/imgroot/etc/hostname"
head -c $(( IMAGE_KIB * 1024 - 4096 )) /dev/urandom >"$T/imgroot/data/blob"
tar -C "$T/imgroot" --numeric-owner -cf - . | zstd -q -1 -o "$T/www/images/fleet.tar.zst"
IMAGE_SHA=$(sha256sum "$T/www/images/fleet.tar.zst" | cut -d' ' -f1)
IMAGE_SIZE=$(stat -c %s "$T/www/images/fleet.tar.zst")
BLOB_SHA=$(sha256sum "$T/imgroot/data/blob" | cut -d' ' -f1)

# 2. the controller
controller_start "$T/ctl" || exit 1
API_KEY=$(controller_key api_key) SECRET_KEY=$(controller_key secret_key) HMAC_KEY=$(controller_key hmac_key)

# 3. nginx, pushing back; it also stands in front of the controller (as a
# reverse proxy often does), so that its log shows the nodes' connections
NGINX_PORT=$(free_port)
CTL_FRONT=$(free_port)
CTL="http://127.0.0.1:$CTL_FRONT"
ra=""
[[ -n $RETRY_AFTER ]] && ra="add_header Retry-After $RETRY_AFTER always;"
NGINX_CONNECTIONS=2048 nginx_run "$T/nginx" "$NGINX_PORT" \
  "error_log $T/logs/nginx-error.log;" \
  "log_format fleet '\$msec \$status \$request_method \$request_uri \$body_bytes_sent \"\$http_range\" \$connection \$connection_requests \$http_x_kiln_node_id';" \
  "access_log $T/logs/nginx-access.log fleet;" \
  "keepalive_timeout 75s;" \
  "keepalive_requests 10000;" \
  "limit_req_zone \$server_port zone=specs:1m rate=${SPEC_RATE}r/s;" \
  "limit_conn_zone \$server_port zone=images:1m;" \
  "limit_req_status 503;" \
  "limit_conn_status 503;" \
  "server {
    listen 127.0.0.1:$NGINX_PORT backlog=1024;
    root $T/www;
    location /specs/ { limit_req zone=specs burst=$SPEC_BURST nodelay; try_files \$uri /specs/rack.yaml =404; $ra }
    location /images/ { limit_conn images $CONN; limit_rate $RATE; $ra }
  }" \
  "upstream controller { server 127.0.0.1:$CTL_PORT; keepalive 16; }" \
  "server {
    listen 127.0.0.1:$CTL_FRONT backlog=1024;
    location / {
      proxy_pass http://controller;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      client_max_body_size 4m;
    }
  }" || exit 1

# 4. the fault proxy in front of the images: the first CUTS responses are
# cut half way (a cut on a 503 is spent on it: the log says which were)
cuts=(pass)   # node 0, the baseline, runs uncut
for _ in $(seq "$CUTS"); do cuts+=("cut:$(( IMAGE_SIZE / 2 ))"); done
HTTP_PORT=$NGINX_PORT proxy_start "${cuts[@]}"

# 5. the rack spec: templates/rack.yaml's layouts (and hostname), the
# register section, the fleet's image (the node's MAC in its URL, so that
# nginx's log names the node), no boot loader (a --skip-storage target is a
# plain directory), a nodes table (node 1 by its MAC, node 2 by its serial,
# the others the default row); one file, served for every MAC
{
  sed -n '/^version:/p; /^hostname:/p' "$SRC/templates/rack.yaml"
  awk '/^layouts:/ { on = 1; print; next } on && /^[a-z]/ { on = 0 } on' "$SRC/templates/rack.yaml"
  spec_write - register -- CTL="$CTL" API_KEY="$API_KEY" SECRET_KEY="$SECRET_KEY" HOST_USERNAME=root HOST_AUTH= HMAC_KEY="$HMAC_KEY"
  cat <<YAML
image:
  url: "http://127.0.0.1:$PROXY_PORT/images/fleet.tar.zst?node=\${mac}"
  sha256: "$IMAGE_SHA"
finish: none
nodes:
  "52:54:00:fe:00:01": {hostname: rack-n1}
  fleet-002: {hostname: rack-n2}
  default: {hostname: "spare-\${mac:hexraw}"}
YAML
} >"$T/www/specs/rack.yaml"
"$KILN" validate "$T/www/specs/rack.yaml" >/dev/null 2>"$T/validate.err" || { cat "$T/validate.err"; echo "the fleet's rack spec does not validate"; exit 1; }
(umask 077; printf '%s\n' "$HMAC_KEY" >"$T/enlist.key")   # the stand-in takes enlists under hmac_key

# the mix: a box (tests/inventories/NAME.json, or gen-*: tests/fleet/inventories.py)
# and the layout of the rack spec it must get ("-": it fits none and enlists);
# node i is box i mod the table's length, so node 0 (the baseline) is the first
MIX=(
  "qemu-4disk      raid10-4ssd"
  "junk-box        raid10-4hdd"
  "raid1-boot      mirror-2ssd"
  "single-disk     single"
  "gen-2hdd        -"
  "gen-4hdd-odd    raid10-4hdd"
  "gen-6mix        raid10-4hdd"
  "gen-2ssd-2hdd   mirror-2ssd"
  "gen-3ssd        -"
  "gen-4ssd-twins  raid10-4ssd"
)
mkdir -p "$T/boxes"
for f in qemu-4disk junk-box raid1-boot single-disk; do cp "$SRC/tests/inventories/$f.json" "$T/boxes/"; done
python3 "$SRC/tests/fleet/inventories.py" "$SRC" "$T/boxes"

# 6. the nodes: identity, box, command line
make_node() {
  local i=$1 mac serial ip uuid d box want
  read -r box want <<<"${MIX[i % ${#MIX[@]}]}"
  mac=$(printf '52:54:00:fe:%02x:%02x' $(( i / 256 )) $(( i % 256 )))
  serial=$(printf 'fleet-%03d' "$i")
  ip=$(printf '10.77.%d.%d' $(( i / 250 )) $(( i % 250 + 2 )))
  uuid=$(printf '6b1f2c3d-4e5f-4a6b-8c7d-%012x' "$i")
  d=$T/nodes/$i
  mkdir -p "$d/run" "$d/target"
  python3 - "$T/boxes/$box.json" "$d/inventory.json" "$mac" "$serial" "$ip" "$uuid" <<'PY'
import json, sys
src, dst, mac, serial, ip, uuid = sys.argv[1:]
inv = json.load(open(src))
inv["serial"], inv["machine_uuid"], inv["hostname"] = serial, uuid, None
inv["nics"][0]["mac"], inv["nics"][0]["ipv4"], inv["nics"][0]["up"] = mac, [ip], True
json.dump(inv, open(dst, "w"))
PY
  echo "kiln.spec=http://127.0.0.1:$NGINX_PORT/specs/\${mac}.yaml kiln.enlist=$CTL/kiln/enlist" >"$d/cmdline"
  echo "$i $mac $serial $ip" >>"$T/nodes.txt"
  echo "$i $box $want" >>"$T/expect.txt"
}
umask 077
for i in $(seq 0 "$N"); do make_node "$i"; done
umask 022

# run_node I: one kiln boot, its start and end times and exit code in nodes/I/
run_node() {
  local i=$1 d=$T/nodes/$1 rc=0
  date +%s.%N >"$d/start"
  KILN_RUN_DIR=$d/run KILN_TARGET=$d/target KILN_ENLIST_KEY=$T/enlist.key nice -n 10 "$KILN" boot --cmdline "$d/cmdline" \
    --inventory "$d/inventory.json" --skip-storage --no-finish </dev/null >"$d/stdout" 2>"$d/log" || rc=$?
  # its first boot: what kiln-register.service runs (an enlisted box powered off instead)
  [[ $rc == 0 && ! -e $d/run/enlist.json ]] && { nice -n 10 "$KILN" register --firstboot "$d/target/etc/kiln/firstboot.conf" --root "$d/target" \
    </dev/null >>"$d/stdout" 2>>"$d/log" || rc=$?; }
  date +%s.%N >"$d/end"
  echo "$rc" >"$d/rc"
}

# 7. the baseline: node 0 alone
run_node 0
FLEET_START=$(date +%s.%N)
echo "baseline: node 0 took $(python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 2))" \
  "$(cat "$T/nodes/0/start")" "$(cat "$T/nodes/0/end")") s (rc $(cat "$T/nodes/0/rc"))"

# 8. the rack: nodes 1..N at once
for i in $(seq 1 "$N"); do
  run_node "$i" &
  PIDS+=($!)
done
for p in "${PIDS[@]}"; do wait "$p" || true; done
PIDS=()
FLEET_END=$(date +%s.%N)
sleep 0.5       # nginx writes its log lines as the responses end

# 9. results: every node's log, exit code, image check, the layout its
# report names and what it enlisted with; then the analysis
for i in $(seq 0 "$N"); do
  d=$T/nodes/$i
  cp "$d/log" "$T/logs/node-$i.log"
  got=$(sha256sum "$d/target/data/blob" 2>/dev/null | cut -d' ' -f1 || true)
  echo "$i $(cat "$d/rc") $(cat "$d/start") $(cat "$d/end") ${got:-none} $([[ -e $d/target/.kiln-incomplete ]] && echo incomplete || echo complete)" \
    >>"$T/logs/nodes.txt"
done
python3 - "$T/nodes" "$N" >"$T/logs/outcomes.txt" <<'PY'
import json, os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n + 1):
    d = os.path.join(root, str(i), "run")
    layout, reasons, row, hostname = "none", -1, "none", "none"
    try:
        node = json.load(open(os.path.join(d, "report.json")))["node"]
        layout, row, hostname = (node.get(k) or "none" for k in ("layout", "nodes_row", "hostname"))
    except (OSError, ValueError, KeyError):
        pass
    try:
        reasons = len(json.load(open(os.path.join(d, "enlist.json")))["enlist"]["layouts_not_fitting"])
    except (OSError, ValueError, KeyError):
        pass
    print(i, layout, reasons, row, hostname)
PY
controller_dump >"$T/logs/controller.json"
cp "$PROXY_LOG" "$T/logs/proxy.log"
cp "$T/nodes.txt" "$T/logs/identities.txt"
cp "$T/expect.txt" "$T/logs/expect.txt"
args=(--n "$N" --image-size "$IMAGE_SIZE" \
  --blob-sha "$BLOB_SHA" --fleet-start "$FLEET_START" --fleet-end "$FLEET_END" --conn "$CONN" \
  --rate "$RATE" --spec-rate "$SPEC_RATE" --spec-burst "$SPEC_BURST" --cuts "$CUTS" \
  --backoff "$SRC/agent" --peak-share "${FLEET_PEAK_SHARE:-0.2}" --wall-ratio "${FLEET_WALL_RATIO:-1.2}" \
  --wall-slack "${FLEET_WALL_SLACK:-0}")
printf '%s\n' "${args[@]}" >"$T/logs/analyse.args"
# the same again on kept logs: mapfile -t a <DIR/logs/analyse.args; analyse.py --logs DIR/logs --summary S "${a[@]}"
python3 "$SRC/tests/fleet/analyse.py" --logs "$T/logs" --summary "$T/summary.json" "${args[@]}"
