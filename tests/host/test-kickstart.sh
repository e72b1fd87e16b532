#!/bin/bash
# The boot server examples in kickstart/ are valid for the real servers:
# dnsmasq.conf for dnsmasq (--test), nginx.conf for nginx (-t, with its
# state paths moved into a temp dir so the test writes nothing else), and a
# broken copy of each is refused (so the checks can fail). The iPXE script
# and /init agree on the NIC: boot.ipxe names the NIC it booted from
# (${netX/...}, never net0) and passes BOOTIF, which /init reads.
set -euo pipefail
: "${SRC:?}"
command -v dnsmasq >/dev/null || { echo "skip: dnsmasq is missing (bash tests/deps.sh)"; exit 77; }
command -v nginx >/dev/null || { echo "skip: nginx is missing (bash tests/deps.sh)"; exit 77; }
K=$SRC/kickstart
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
test_tmpdir kickstart

# --- dnsmasq ----------------------------------------------------------------
out=$(dnsmasq --test --conf-file="$K/dnsmasq.conf" 2>&1) && rc=0 || rc=$?
echo "# dnsmasq: $out"
check "dnsmasq --test accepts kickstart/dnsmasq.conf" bash -c '(( $1 == 0 )) && grep -q "syntax check OK" <<<"$2"' _ "$rc" "$out"
sed "s/^dhcp-match=set:efihttp,/dhcp-matsh=set:efihttp,/" "$K/dnsmasq.conf" >"$T/bad-dnsmasq.conf"
out=$(dnsmasq --test --conf-file="$T/bad-dnsmasq.conf" 2>&1) && rc=0 || rc=$?
line=$(grep -n '^dhcp-match=set:efihttp,' "$K/dnsmasq.conf" | cut -d: -f1)
check "dnsmasq --test refuses a broken copy with its line $line (rc=$rc: $out)" bash -c '(( $1 != 0 )) && grep -q "bad option at line $3 of" <<<"$2"' _ "$rc" "$out" "$line"

# --- nginx ------------------------------------------------------------------
# the example as shipped, with only its state paths (pid, logs, cache) moved
nginx_copy() {  # nginx_copy IN OUT
  sed -e "s|/run/nginx-kiln.pid|$T/nginx.pid|" -e "s|/var/log/nginx/|$T/|g" \
      -e "s|/var/cache/nginx/kiln|$T/cache|" "$1" >"$2"
}
nginx_copy "$K/nginx.conf" "$T/nginx.conf"
check "only the state paths differ from the example" \
  test "$(diff "$K/nginx.conf" "$T/nginx.conf" | grep -c '^>')" -eq 4
out=$(nginx -t -q -c "$T/nginx.conf" -e "$T/error.log" 2>&1) && rc=0 || rc=$?
[[ -z $out ]] || echo "# nginx: $out"
check "nginx -t accepts kickstart/nginx.conf (rc=$rc)" test "$rc" -eq 0
sed 's/slice 16m;/slice 16m/' "$K/nginx.conf" >"$T/bad.conf"
nginx_copy "$T/bad.conf" "$T/bad-nginx.conf"
out=$(nginx -t -q -c "$T/bad-nginx.conf" -e "$T/error.log" 2>&1) && rc=0 || rc=$?
check "nginx -t refuses a broken copy (rc=$rc)" bash -c '(( $1 != 0 )) && grep -q "emerg" <<<"$2"' _ "$rc" "$out"

# --- the example serves: a MAC's own spec, else the rack spec, else 404 --------
# The example as shipped, run for real on 127.0.0.1 (listen, root, user and
# temp paths moved into the temp dir); what boot.ipxe asks for,
# specs/<mac>.yaml, is answered with the node's file when it has one, else
# with specs/rack.yaml, and 404 once there is no rack spec either.
source "$SRC/tests/lib/port.sh"
port=$(free_port)
mkdir -p "$T/www/kiln/specs" "$T/tmp"
nginx_copy "$K/nginx.conf" "$T/serve.conf"
sed -i -e "s|^user www-data;|user root;|" -e "s|listen 80; |listen 127.0.0.1:$port; |" -e "s|root /srv/kiln/www;|root $T/www;|" \
  -e "s|^http {|http {\n    client_body_temp_path $T/tmp; proxy_temp_path $T/tmp; fastcgi_temp_path $T/tmp;\n    uwsgi_temp_path $T/tmp; scgi_temp_path $T/tmp;|" "$T/serve.conf"
check "the served copy listens on 127.0.0.1 and serves the temp dir" bash -c 'grep -q "listen 127.0.0.1:$2;" "$1" && grep -q "root $3/www;" "$1"' _ "$T/serve.conf" "$port" "$T"
printf 'version: 1\n# the own spec of 52:54:00:12:34:56\n' >"$T/www/kiln/specs/52:54:00:12:34:56.yaml"
cp "$SRC/templates/rack.yaml" "$T/www/kiln/specs/rack.yaml"
nginx -e "$T/error.log" -c "$T/serve.conf" -p "$T" -g 'daemon off;' &
nginx_pid=$!
cleanup_pid "$nginx_pid"
if wait_listen "$port" "$nginx_pid"; then
  base=http://127.0.0.1:$port/kiln/specs
  check "a MAC with a file of its own gets that file" bash -c 'curl -fsS "$1/52:54:00:12:34:56.yaml" | cmp -s - "$2"' _ "$base" "$T/www/kiln/specs/52:54:00:12:34:56.yaml"
  check "a MAC without one gets the rack spec" bash -c 'curl -fsS "$1/52:54:00:00:00:99.yaml" | cmp -s - "$2"' _ "$base" "$SRC/templates/rack.yaml"
  check "the rack spec is served with 'Cache-Control: no-store' (it may change between boots)" \
    bash -c 'curl -fsS -D - -o /dev/null "$1/52:54:00:00:00:98.yaml" | tr -d "\r" | grep -qix "cache-control: no-store"' _ "$base"
  rm "$T/www/kiln/specs/rack.yaml"
  code=$(curl -s -o /dev/null -w '%{http_code}' "$base/52:54:00:00:00:99.yaml")
  check "without a rack spec such a MAC gets 404, the answer kiln enlists on (got $code)" test "$code" = 404
  code=$(curl -s -o /dev/null -w '%{http_code}' "$base/52:54:00:12:34:56.yaml")
  check "and the node with its own file still gets it (got $code)" test "$code" = 200
else
  not_ok "the example nginx.conf did not start on 127.0.0.1:$port: $(cat "$T/error.log")"
fi

# --- iPXE and /init agree on the NIC ------------------------------------------
check "boot.ipxe never names net0 (it uses netX, the NIC it booted from)" bash -c '! grep -v "^#" "$1" | grep -q "net0"' _ "$K/boot.ipxe"
check "boot.ipxe passes BOOTIF from that NIC's MAC" grep -q 'BOOTIF=01-${netX/mac:hexhyp}' "$K/boot.ipxe"
check "/init reads BOOTIF and tries only that NIC" grep -q 'BOOTIF=01-\*) BOOTIF_MAC=' "$SRC/initramfs/init"
check "pxelinux passes BOOTIF too (IPAPPEND 2)" grep -q '^  IPAPPEND 2' "$K/pxelinux.cfg/default"

checks_done
