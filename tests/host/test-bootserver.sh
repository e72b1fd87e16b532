#!/bin/bash
# kickstart/setup.sh sets up a boot server that answers real DHCP, TFTP and
# HTTP, in network namespaces of the test's own (nothing in or to the host's
# namespace): the server ns holds a bridge br0 (192.0.2.1/24) and setup.sh's
# dnsmasq and nginx, plus an image store (nginx on 127.0.0.1:8081); a client
# ns and a "lab" ns (the lab's own DHCP server, busybox udhcpd on
# 192.0.2.2) hang on br0 by veth pairs whose both ends are in test-made
# namespaces. Checked: --dry-run writes and starts nothing; each bad setting
# is refused with its message and nothing written; the first run, a second
# that changes nothing, a changed setting that rewrites only boot.ipxe; full
# DHCP hands the client an address in the range and the boot file (dnsmasq's
# log shows it); TFTP and HTTP serve what boot.ipxe asks for; the slice cache
# fetches an image once for two downloads; full DHCP is refused beside the
# lab's DHCP server, and proxy DHCP beside it hands out no address.
set -euo pipefail
: "${SRC:?}"
for t in /usr/sbin/dnsmasq nginx busybox curl ss ip; do
  command -v "$t" >/dev/null || { echo "skip: $t is missing (bash tests/deps.sh)"; exit 77; }
done
[[ $EUID -eq 0 ]] || { echo "skip: needs root (network namespaces)"; exit 77; }
source "$SRC/tests/lib/assert.sh"
source "$SRC/tests/lib/cleanup.sh"
source "$SRC/tests/lib/mountns.sh"
test_tmpdir bootserver
chmod 0755 "$T"      # nginx's workers (www-data) read the served tree
SETUP=$SRC/kickstart/setup.sh
SRV=kiln-bs-$$-srv CLI=kiln-bs-$$-cli LAB=kiln-bs-$$-lab
in_srv() { netns_exec "$SRV" "$@"; }
in_cli() { netns_exec "$CLI" "$@"; }
in_lab() { netns_exec "$LAB" "$@"; }

# --- the namespaces: br0 in the server ns, a veth port each for client and lab ---
for n in "$SRV" "$CLI" "$LAB"; do
  ip netns add "$n" || fail "ip netns add $n"
  cleanup_do ip netns delete "$n"
  ip -n "$n" link set lo up
done
# the servers in the namespaces are stopped (cleanup_pid, latest first) before
# the namespaces go (cleanup_do runs first: stop them there too)
stop_ns_pids() {
  local n p
  for n in "$SRV" "$CLI" "$LAB"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do stop_pid "$p"; done
  done
}
cleanup_do stop_ns_pids
ip -n "$SRV" link add br0 type bridge
ip -n "$SRV" addr add 192.0.2.1/24 dev br0
ip -n "$SRV" link set br0 up
for n in cli lab; do
  ns=$CLI; [[ $n == lab ]] && ns=$LAB
  ip -n "$SRV" link add "p-$n" type veth peer name eth0 netns "$ns"
  ip -n "$SRV" link set "p-$n" master br0 up
  ip -n "$ns" link set eth0 up
done
ip -n "$CLI" link set eth0 address 52:54:00:bb:00:01
ip -n "$LAB" addr add 192.0.2.2/24 dev eth0
CMAC=52:54:00:bb:00:01
check "the host's namespace has none of the test's links" bash -c '! ip -o link | grep -q "p-cli\|p-lab"'

# --- the inputs: kernel, initramfs, iPXE files, specs, an image store -----------
mkdir -p "$T/in/ipxe" "$T/specs" "$T/store/kiln/images" "$T/store/tmp"
head -c 300000 /dev/urandom >"$T/in/vmlinuz"
head -c 500000 /dev/urandom >"$T/in/initrd.img"
if [[ -f /usr/lib/ipxe/undionly.kpxe && -f /usr/lib/ipxe/ipxe.efi ]]; then IPXE=/usr/lib/ipxe
else  # Debian's ipxe package (tests/deps.sh) is missing: stand-ins, nothing boots them here
  IPXE=$T/in/ipxe; echo bios-ipxe >"$IPXE/undionly.kpxe"; echo uefi-ipxe >"$IPXE/ipxe.efi"
fi
printf 'version: 1\n# the own spec of %s\n' "$CMAC" >"$T/specs/$CMAC.yaml"
cp "$SRC/templates/rack.yaml" "$T/specs/rack.yaml"
head -c $((20 << 20)) /dev/urandom >"$T/store/kiln/images/base.tar"
cat >"$T/store/nginx.conf" <<EOF
user root;
pid $T/store/nginx.pid;
events { worker_connections 64; }
http {
    client_body_temp_path $T/store/tmp; proxy_temp_path $T/store/tmp;
    fastcgi_temp_path $T/store/tmp; uwsgi_temp_path $T/store/tmp; scgi_temp_path $T/store/tmp;
    log_format bytes '\$request_uri \$status \$body_bytes_sent';
    access_log $T/store/access.log bytes;
    server { listen 127.0.0.1:8081; root $T/store; }
}
EOF
netns_bg "$SRV" nginx -c "$T/store/nginx.conf" -p "$T/store" -e "$T/store/error.log" -g 'daemon off;'
cleanup_pid "$NETNS_PID"

COMMON=(--interface br0 --no-systemd --kernel "$T/in/vmlinuz" --initrd "$T/in/initrd.img" --ipxe-dir "$IPXE"
        --specs "$T/specs" --image-store http://127.0.0.1:8081)
FULL=(--dhcp full --range 192.0.2.100,192.0.2.120 --root "$T/full")
R=$T/full
tree_sum() { [[ -e $1 ]] || { echo absent; return; }; (cd "$1" && find . -printf '%p %y %m %s %l\n' | sort && find . -type f -exec sha256sum {} + | sort); }

# --- bad settings: refused with their message, nothing written ---------------------
refused() {  # refused NAME MESSAGE ARGS...: setup.sh exits non-zero with MESSAGE, $R untouched
  local name=$1 msg=$2 out rc before; shift 2
  before=$(tree_sum "$R")
  out=$(in_srv "$SETUP" "$@" 2>&1) && rc=0 || rc=$?
  check "refused: $name (rc=$rc: $out)" bash -c '(( $1 != 0 )) && grep -qF -- "$2" <<<"$3"' _ "$rc" "$msg" "$out"
  check "refused: $name: $R unchanged" test "$(tree_sum "$R")" = "$before"
}
bad_args() {  # COMMON and FULL with one option replaced or added
  local a=("${COMMON[@]}" "${FULL[@]}") i
  for ((i = 0; i < ${#a[@]}; i++)); do [[ ${a[i]} == "$1" ]] && { a[i+1]=$2; set -- "${@:3}"; break; }; done
  printf '%s\0' "${a[@]}" "$@"
}
with() { mapfile -d '' -t ARGS < <(bad_args "$@"); }
with --interface nosuch0; refused "no such interface" "setup.sh: no such interface 'nosuch0'" "${ARGS[@]}"
with --interface br0 --address 192.0.2.9
refused "an address not on the interface" "setup.sh: address 192.0.2.9 is not on interface 'br0' (it has 192.0.2.1/24)" "${ARGS[@]}"
with --range 192.0.3.10,192.0.3.20
refused "a range outside the subnet" "setup.sh: range 192.0.3.10,192.0.3.20 is outside br0's subnet 192.0.2.0/24" "${ARGS[@]}"
with --range 192.0.2.120,192.0.2.100
refused "a reversed range" "setup.sh: range 192.0.2.120,192.0.2.100 is reversed (start after end)" "${ARGS[@]}"
with --dhcp proxy
refused "--range with proxy" "setup.sh: --range is for --dhcp full only" "${ARGS[@]}"
with --kernel "$T/in/nosuch"
refused "a missing kernel" "setup.sh: kernel file '$T/in/nosuch' does not exist" "${ARGS[@]}"
with --initrd "$T/in/nosuch"
refused "a missing initrd" "setup.sh: initrd file '$T/in/nosuch' does not exist" "${ARGS[@]}"
listener() {  # listener tcp|udp PORT: a process of the test's own holds 192.0.2.1:PORT (or *:PORT)
  netns_bg "$SRV" python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if sys.argv[1] == "tcp" else socket.SOCK_DGRAM)
s.bind((sys.argv[3], int(sys.argv[2])))
s.listen() if sys.argv[1] == "tcp" else None
time.sleep(600)' "$@"
  busy=$NETNS_PID; cleanup_pid "$busy"
  for _ in $(seq 50); do in_srv ss -Hln 2>/dev/null | grep -q ":$2 " && break; sleep 0.1; done
}
listener tcp 8088 192.0.2.1
with --http-port 8088
refused "the HTTP port in use" "setup.sh: HTTP port 8088 is already in use on 192.0.2.1 (users:((\"python3\",pid=$busy," "${ARGS[@]}"
busy80=$busy
listener udp 67 0.0.0.0; busy67=$busy
refused "the DHCP port in use (full)" "setup.sh: DHCP port 67 is already in use on 192.0.2.1 (users:((\"python3\",pid=$busy67," "${COMMON[@]}" "${FULL[@]}"
listener udp 69 0.0.0.0; busy69=$busy
refused "the TFTP port in use" "setup.sh: TFTP port 69 is already in use on 192.0.2.1 (users:((\"python3\",pid=$busy69," "${COMMON[@]}" --root "$R"
stop_pid "$busy80" "$busy67" "$busy69"

# --- --dry-run: shows every file and command, writes and starts nothing --------------
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" --dry-run 2>&1) && rc=0 || rc=$?
check "--dry-run succeeds (rc=$rc)" test "$rc" -eq 0
check "--dry-run writes nothing" test ! -e "$R"
check "--dry-run starts nothing" bash -c '! ip netns exec "$1" ss -Hln 2>/dev/null | grep -q ":80 \|:69 "' _ "$SRV"
check "--dry-run shows boot.ipxe with its set lines" grep -qx '    set kiln-base http://192.0.2.1/kiln/boot' <<<"$out"
check "--dry-run shows dnsmasq.conf's range" grep -qx '    dhcp-range=192.0.2.100,192.0.2.120,12h' <<<"$out"
check "--dry-run shows the commands" grep -qx "+ /usr/sbin/dnsmasq --conf-file=$R/etc/dnsmasq.conf" <<<"$out"
check "--dry-run shows the DHCP probe" grep -q '^+ busybox udhcpc -i br0 -n -q -R' <<<"$out"
# packages: only the missing ones, and nothing when all are there
out=$(in_srv "$SETUP" --interface br0 --no-systemd --kernel "$T/in/vmlinuz" --initrd "$T/in/initrd.img" --ipxe-dir "$IPXE" --root "$T/pk" --dry-run 2>&1)
check "every package present: nothing installed" bash -c '! grep -q apt-get <<<"$1" && grep -q "^packages: all present" <<<"$1"' _ "$out"
out=$(KILN_IPXE_DIR=$T/no-ipxe in_srv "$SETUP" --interface br0 --no-systemd --kernel "$T/in/vmlinuz" --initrd "$T/in/initrd.img" --root "$T/pk" --dry-run 2>&1)
check "iPXE missing: only the ipxe package is installed" grep -qx '+ DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ipxe' <<<"$out"
check "and with a policy-rc.d that starts no service" grep -q '^+ printf .*exit 101.* >/usr/sbin/policy-rc.d' <<<"$out"
check "the dry run wrote nothing there either" test ! -e "$T/pk"

# --- full DHCP: first run, second run, a changed setting ------------------------------
KARGS=(--kiln-args "kiln.enlist=http://192.0.2.1:8000/kiln/enlist")
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" 2>&1) && rc=0 || rc=$?
echo "$out" | sed 's/^/# /'
check "full: the first run succeeds (rc=$rc)" test "$rc" -eq 0
check "full: it started dnsmasq and nginx" grep -qx 'started: dnsmasq nginx' <<<"$out"
check "full: it prints the first commands" bash -c 'grep -q "kiln validate" <<<"$1" && grep -q "hosts/<mac>.ipxe" <<<"$1" && grep -q "log/dnsmasq.log" <<<"$1"' _ "$out"
for f in tftp/{undionly.kpxe,ipxe.efi,boot.ipxe,vmlinuz,initrd.img} www/kiln/boot/{undionly.kpxe,ipxe.efi,boot.ipxe,vmlinuz,initrd.img} \
         etc/dnsmasq.conf etc/nginx.conf run/dnsmasq.pid run/nginx.pid log/dnsmasq.log; do
  check "full: $f is there" test -s "$R/$f"
done
check "full: www/kiln/specs is the spec dir" test "$(readlink "$R/www/kiln/specs")" = "$T/specs"
check "full: boot.ipxe's set lines" bash -c 'grep -qx "set kiln-base http://192.0.2.1/kiln/boot" "$1" && grep -qx "set kiln-specs http://192.0.2.1/kiln/specs" "$1" &&
  grep -qx "set kiln-hosts http://192.0.2.1/kiln/hosts" "$1" && grep -qx "set kiln-args console=tty0 console=ttyS0,115200n8 kiln.enlist=http://192.0.2.1:8000/kiln/enlist" "$1"' _ "$R/tftp/boot.ipxe"
check "full: dnsmasq's UEFI HTTP boot URL is this server's" grep -qx 'dhcp-boot=tag:efihttp,http://192.0.2.1/kiln/boot/ipxe.efi' "$R/etc/dnsmasq.conf"
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" 2>&1) && rc=0 || rc=$?
check "full: a second run changes nothing and says so (rc=$rc)" bash -c '(( $1 == 0 )) && grep -q "^nothing changed" <<<"$2"' _ "$rc" "$out"
before=$(tree_sum "$R/etc")
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" --kiln-args "kiln.enlist=http://192.0.2.1:8000/kiln/enlist kiln.debug" 2>&1) && rc=0 || rc=$?
check "full: a changed kiln-args rewrites only boot.ipxe (rc=$rc)" bash -c '(( $1 == 0 )) && [[ $(grep -c "^written: " <<<"$2") == 2 ]] &&
  grep -qx "written: $3/tftp/boot.ipxe" <<<"$2" && grep -qx "written: $3/www/kiln/boot/boot.ipxe" <<<"$2"' _ "$rc" "$out" "$R"
check "full: and restarts nothing" bash -c 'grep -qx "restarted: none" <<<"$1" && grep -qx "running unchanged: dnsmasq nginx" <<<"$1"' _ "$out"
check "full: the config files are as they were" test "$(tree_sum "$R/etc")" = "$before"
before=$(tree_sum "$R")
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" --dry-run 2>&1) && rc=0 || rc=$?
check "full: --dry-run shows the change back as a diff of boot.ipxe (rc=$rc)" bash -c '(( $1 == 0 )) &&
  grep -qx -- "-set kiln-args console=tty0 console=ttyS0,115200n8 kiln.enlist=http://192.0.2.1:8000/kiln/enlist kiln.debug" <<<"$2" &&
  grep -qx -- "+set kiln-args console=tty0 console=ttyS0,115200n8 kiln.enlist=http://192.0.2.1:8000/kiln/enlist" <<<"$2"' _ "$rc" "$out"
check "full: and writes nothing" test "$(tree_sum "$R")" = "$before"
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" --http-port 8080 2>&1) && rc=0 || rc=$?
check "full: a changed --http-port rewrites nginx.conf, dnsmasq.conf and boot.ipxe (rc=$rc)" bash -c '(( $1 == 0 )) && [[ $(grep -c "^written: " <<<"$2") == 4 ]] &&
  grep -qx "written: $3/etc/nginx.conf" <<<"$2" && grep -qx "written: $3/etc/dnsmasq.conf" <<<"$2"' _ "$rc" "$out" "$R"
check "full: and restarts dnsmasq and nginx" grep -qx "restarted: dnsmasq nginx" <<<"$out"
check "full: the UEFI HTTP boot URL and boot.ipxe name the port" bash -c 'grep -qx "dhcp-boot=tag:efihttp,http://192.0.2.1:8080/kiln/boot/ipxe.efi" "$1/etc/dnsmasq.conf" &&
  grep -qx "set kiln-base http://192.0.2.1:8080/kiln/boot" "$1/tftp/boot.ipxe" && ip netns exec "$2" ss -Htln | grep -q "192.0.2.1:8080 "' _ "$R" "$SRV"
out=$(in_srv "$SETUP" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" 2>&1) && rc=0 || rc=$?
check "full: back to port 80 (rc=$rc)" bash -c '(( $1 == 0 )) && grep -qx "restarted: dnsmasq nginx" <<<"$2"' _ "$rc" "$out"
# a port in use with the server set up: refused, nothing changed
listener tcp 8089 192.0.2.1
refused "the HTTP port in use, once set up" "setup.sh: HTTP port 8089 is already in use on 192.0.2.1" "${COMMON[@]}" "${FULL[@]}" "${KARGS[@]}" --http-port 8089
stop_pid "$busy"

# a DHCP client that only records what it is told
cat >"$T/record.sh" <<'EOF'
#!/bin/sh
[ "$1" = bound ] && env | grep -E '^(ip|siaddr|serverid|boot_file|subnet)=' >"$RECORD"
exit 0
EOF
chmod 0755 "$T/record.sh"
dhcp_client() {  # dhcp_client OUT [udhcpc options]: the answer the client ns gets
  local out=$1; shift
  rm -f "$out"
  in_cli env RECORD="$out" busybox udhcpc -i eth0 -n -q -t 5 -T 1 -A 1 -s "$T/record.sh" "$@" >/dev/null 2>&1 || true
  [[ -f $out ]] || : >"$out"
}
val() { sed -n "s/^$1=//p" "$2"; }
dhcp_client "$T/full.env"
ipaddr=$(val ip "$T/full.env")
check "full: the client gets an address in the range ($ipaddr)" bash -c '[[ $1 =~ ^192\.0\.2\.([0-9]+)$ ]] && (( BASH_REMATCH[1] >= 100 && BASH_REMATCH[1] <= 120 ))' _ "$ipaddr"
check "full: from the boot server" test "$(val serverid "$T/full.env")" = 192.0.2.1
check "full: with the BIOS boot file undionly.kpxe from 192.0.2.1" bash -c '[[ $(sed -n "s/^boot_file=//p" "$1") == undionly.kpxe && $(sed -n "s/^siaddr=//p" "$1") == 192.0.2.1 ]]' _ "$T/full.env"
grep "$CMAC" "$R/log/dnsmasq.log" | sed 's/^/# dnsmasq: /'
check "full: dnsmasq's log shows the lease" grep -q "DHCPACK(br0) $ipaddr $CMAC" "$R/log/dnsmasq.log"
dhcp_client "$T/efi.env" -x 0x5d:0007
check "full: a UEFI client gets ipxe.efi" test "$(val boot_file "$T/efi.env")" = ipxe.efi
dhcp_client "$T/http.env" -x 0x5d:0010 -V HTTPClient:Arch:00016:UNDI:003001
check "full: a UEFI HTTP boot client gets ipxe.efi's URL on this server ($(tr '\n' ' ' <"$T/http.env"))" \
  test "$(val boot_file "$T/http.env")" = http://192.0.2.1/kiln/boot/ipxe.efi

# TFTP and HTTP from the client
ip -n "$CLI" addr add "${ipaddr:-192.0.2.100}/24" dev eth0
check "TFTP: boot.ipxe from the client matches" bash -c 'ip netns exec "$1" curl -fsS tftp://192.0.2.1/boot.ipxe | cmp -s - "$2"' _ "$CLI" "$R/tftp/boot.ipxe"
check "TFTP: undionly.kpxe" bash -c 'ip netns exec "$1" curl -fsS tftp://192.0.2.1/undionly.kpxe | cmp -s - "$2"' _ "$CLI" "$IPXE/undionly.kpxe"
check "dnsmasq's log shows the TFTP fetch" grep -q "sent $R/tftp/boot.ipxe to ${ipaddr:-192.0.2.100}" "$R/log/dnsmasq.log"
H=http://192.0.2.1/kiln
code() { in_cli curl -s -o /dev/null -w '%{http_code}' "$1"; }
check "HTTP: boot.ipxe" bash -c 'ip netns exec "$1" curl -fsS "$2/boot/boot.ipxe" | cmp -s - "$3"' _ "$CLI" "$H" "$R/tftp/boot.ipxe"
check "HTTP: ipxe.efi (UEFI HTTP boot)" bash -c 'ip netns exec "$1" curl -fsS "$2/boot/ipxe.efi" | cmp -s - "$3"' _ "$CLI" "$H" "$IPXE/ipxe.efi"
check "HTTP: the initramfs" bash -c 'ip netns exec "$1" curl -fsS "$2/boot/initrd.img" | cmp -s - "$3"' _ "$CLI" "$H" "$T/in/initrd.img"
check "HTTP: a MAC's own spec" bash -c 'ip netns exec "$1" curl -fsS "$2/specs/$3.yaml" | cmp -s - "$4"' _ "$CLI" "$H" "$CMAC" "$T/specs/$CMAC.yaml"
check "HTTP: another MAC gets rack.yaml" bash -c 'ip netns exec "$1" curl -fsS "$2/specs/52:54:00:bb:00:99.yaml" | cmp -s - "$3"' _ "$CLI" "$H" "$T/specs/rack.yaml"
c=$(code "$H/hosts/$CMAC.ipxe")
check "HTTP: hosts/<mac>.ipxe is 404 for a node not deployed (got $c)" test "$c" = 404
cp "$SRC/kickstart/local.ipxe" "$R/www/kiln/hosts/$CMAC.ipxe"
c=$(code "$H/hosts/$CMAC.ipxe")
check "HTTP: and 200 once local.ipxe is there (got $c)" test "$c" = 200
check "nginx's access log shows the client's fetches" grep -q "^${ipaddr:-192.0.2.100} .*GET /kiln/specs/$CMAC.yaml" "$R/log/nginx-access.log"
check "HTTP: an image through the slice cache" bash -c 'ip netns exec "$1" curl -fsS "$2/images/base.tar" | cmp -s - "$3"' _ "$CLI" "$H" "$T/store/kiln/images/base.tar"
check "HTTP: the same image again" bash -c 'ip netns exec "$1" curl -fsS "$2/images/base.tar" | cmp -s - "$3"' _ "$CLI" "$H" "$T/store/kiln/images/base.tar"
sent=$(awk '$1 == "/kiln/images/base.tar" { s += $3 } END { print s + 0 }' "$T/store/access.log")
check "the image store sent the image's bytes once for two fetches ($sent of $((20 << 20)))" test "$sent" -eq $((20 << 20))
ip -n "$CLI" addr flush dev eth0

# --- the lab's own DHCP server: full refused, proxy beside it ----------------------
mkdir -p "$T/lab"
printf 'start 192.0.2.150\nend 192.0.2.160\ninterface eth0\nlease_file %s/leases\npidfile %s/udhcpd.pid\nopt subnet 255.255.255.0\n' "$T/lab" "$T/lab" >"$T/lab/udhcpd.conf"
: >"$T/lab/leases"
netns_bg "$LAB" busybox udhcpd -f "$T/lab/udhcpd.conf" >"$T/lab/log" 2>&1
cleanup_pid "$NETNS_PID"
sleep 0.5
out=$(in_srv "$SETUP" --stop --root "$R" --no-systemd 2>&1)
check "--stop stops what it started" bash -c 'grep -qx "stopped: dnsmasq nginx" <<<"$1" && ! ip netns exec "$2" ss -Hln 2>/dev/null | grep -q "192.0.2.1:80 "' _ "$out" "$SRV"
R=$T/proxy
refused "full DHCP beside the lab's DHCP server" "setup.sh: another DHCP server answers on br0: 192.0.2.2" \
  "${COMMON[@]}" --dhcp full --range 192.0.2.100,192.0.2.120 --root "$R"
PROXY=("${COMMON[@]}" --root "$R" --tang --tang-port 7500)
out=$(in_srv "$SETUP" "${PROXY[@]}" 2>&1) && rc=0 || rc=$?
echo "$out" | sed 's/^/# /'
check "proxy: the run succeeds (rc=$rc)" bash -c '(( $1 == 0 )) && grep -qx "started: dnsmasq nginx tang" <<<"$2"' _ "$rc" "$out"
check "proxy: tang's keys are under the root, in a 0700 dir" bash -c '[[ $(stat -c %a "$1/tang") == 700 ]] && ls "$1"/tang/db/*.jwk >/dev/null' _ "$R"
check "proxy: tang answers on 192.0.2.1:7500" bash -c 'ip netns exec "$1" curl -fsS http://192.0.2.1:7500/adv | grep -q "\"payload\""' _ "$SRV"
check "proxy: dnsmasq.conf is proxy DHCP on br0's subnet" grep -qx 'dhcp-range=192.0.2.0,proxy' "$R/etc/dnsmasq.conf"
out=$(in_srv "$SETUP" "${PROXY[@]}" 2>&1) && rc=0 || rc=$?
check "proxy: a second run changes nothing" bash -c '(( $1 == 0 )) && grep -q "^nothing changed" <<<"$2"' _ "$rc" "$out"
ip -n "$CLI" addr flush dev eth0
dhcp_client "$T/plain.env"
check "proxy: a client gets its address from the lab's server ($(tr '\n' ' ' <"$T/plain.env"))" \
  bash -c '[[ $(sed -n "s/^serverid=//p" "$1") == 192.0.2.2 && $(sed -n "s/^ip=//p" "$1") == 192.0.2.15* ]]' _ "$T/plain.env"
dhcp_client "$T/pxe.env" -V PXEClient:Arch:00000:UNDI:002001 -x 0x5d:0000
grep -i "$CMAC\|proxy" "$R/log/dnsmasq.log" | sed 's/^/# dnsmasq: /'
check "proxy: a PXE client gets the boot options from dnsmasq (proxy)" grep -qi "PXE(br0) .*$CMAC proxy" "$R/log/dnsmasq.log"
check "proxy: dnsmasq hands out no address" bash -c '! grep -q "DHCPACK\|DHCPOFFER" "$1"' _ "$R/log/dnsmasq.log"
out=$(in_srv "$SETUP" --stop --root "$R" --no-systemd 2>&1)
check "proxy: --stop stops what it started" grep -qx "stopped: dnsmasq nginx tang" <<<"$out"
checks_done
