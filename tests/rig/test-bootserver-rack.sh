#!/bin/bash
# The boot server on a real network (issue 26), and one rack spec for
# mixed boxes on real boots (issue 27): a network namespace of the test's
# own (tests/rig/lib/netns.sh) holds a bridge, the boot server that
# kickstart/setup.sh sets up there (real dnsmasq, nginx; its files as
# setup.sh writes them, only the settings on its command line), an image
# store behind the boot server's slice cache, the stand-in controller for
# enlisting, the shared install's Tang, and QEMU nodes on taps. A second
# namespace on the bridge is the lab's own DHCP server (busybox udhcpd)
# for the proxy-DHCP half. Nothing links either namespace to the host's.
#
#   setup.sh   --dry-run writes nothing; full DHCP; a second run changes
#              nothing; a bad range is refused with nothing written
#   node A     BIOS, four disks: PXE (the NIC's iPXE ROM), DHCP from
#              dnsmasq, TFTP boot.ipxe, the rack spec from nginx: layout
#              raid10-4, hostname from the nodes table; the image through
#              the slice cache; then it boots its own disks
#   node E     BIOS, one disk: the same spec, layout single (no md); then it
#              boots its own disk
#   node C     UEFI HTTP boot (OVMF, PXE off), one small disk: ipxe.efi
#              over HTTP; fits no layout, enlists with the reasons, and
#              its disk is unwritten
#   setup.sh   proxy DHCP beside the lab's udhcpd: only dnsmasq restarts
#   node B     UEFI PXE (OVMF's own, no option ROM): its address from the
#              lab's server, ipxe.efi over TFTP from the proxy; layout
#              mirror-2; its image bytes come from the cache (the image
#              store saw them once); then it boots its own disks (SeaBIOS:
#              the spec's firmware is both, so the UEFI install wrote GRUB
#              for BIOS too)
#   node D     deployed, BIOS, still under proxy DHCP: its iPXE ROM takes the
#              lab's address and boot.ipxe from the proxy (the ProxyDHCP ACK
#              names the next-server: kickstart/dnsmasq.conf), then
#              hosts/<mac>.ipxe (local.ipxe) boots the shared install's
#              disks; LUKS opens through Tang on the namespace's network;
#              kiln never runs, nothing fetches a spec
#   network    no packet for an address outside the namespaces (their own
#              counters), no route or link out
set -uo pipefail
. "$SRC/tests/rig/lib.sh"
rig_init
command -v jq >/dev/null || rig_skip "no jq"
[[ -x /usr/libexec/tangd ]] || rig_skip "no tangd"
rig_boot_image
rig_fixture_boot boot-tang specs/boot-tang.yaml   # node D's disks and Tang keys
FIX_MAC=$RIG_MAC FIX_DISK=("${RIG_DISK[@]}") FIX_SERIAL=("${RIG_DISK_SERIAL[@]}")
MAC_A=52:54:00:6b:69:a1 MAC_B=52:54:00:6b:69:b1 MAC_C=52:54:00:6b:69:c1 MAC_E=52:54:00:6b:69:e1
IMAGE=boot.tar.zst   # the bootable image, which rig_boot_image serves
IP=$RIG_NETNS_IP

# --- the namespaces ------------------------------------------------------------
rig_netns_start
for t in tap0 tap1 tap2 tap3 tap4; do rig_netns_tap "$t"; done
# the shared install's Tang pin names 10.0.2.102 (the user network's
# address): the boot server holds that address too, and serves the
# install's Tang keys there (the installed system routes to it through
# its DHCP router, the boot server)
ip -n "$RIG_NETNS" addr add 10.0.2.102/32 dev br0
rig_netns_bg "$RIG_TANG_LOG" socat TCP-LISTEN:80,bind=10.0.2.102,reuseaddr,fork "EXEC:/usr/libexec/tangd $RIG_TMP/tang/db"
# the image store: a plain nginx on the namespace's loopback, its access log
# one line per request with the Range asked for
mkdir -p "$RIG_TMP/store/www/kiln/images" "$RIG_TMP/store/tmp"
cp "$RIG_TMP/www/images/$IMAGE" "$RIG_TMP/store/www/kiln/images/"
cat >"$RIG_TMP/store/nginx.conf" <<EOF
daemon off; user root; worker_processes 1; pid $RIG_TMP/store/nginx.pid;
error_log $RIG_TMP/store/error.log;
events { worker_connections 64; }
http {
  log_format store '\$request_method \$uri range=\$http_range status=\$status bytes=\$body_bytes_sent';
  access_log $RIG_TMP/store/access.log store;
  client_body_temp_path $RIG_TMP/store/tmp; proxy_temp_path $RIG_TMP/store/tmp;
  fastcgi_temp_path $RIG_TMP/store/tmp; uwsgi_temp_path $RIG_TMP/store/tmp; scgi_temp_path $RIG_TMP/store/tmp;
  server { listen 127.0.0.1:8081; root $RIG_TMP/store/www; }
}
EOF
rig_netns_bg "$RIG_TMP/store/nginx.out" nginx -e "$RIG_TMP/store/error.log" -c "$RIG_TMP/store/nginx.conf" -p "$RIG_TMP/store"
# the stand-in controller (enlisting), on the namespace's loopback, reached
# by the nodes at $IP:8082
out=$(rig_netns_exec bash "$SRC/tests/controller/start.sh" "$RIG_TMP/controller" 2>&1) \
  || { printf '%s\n' "$out" >&2; rig_die "the stand-in controller did not start"; }
RIG_CTL_DIR=$RIG_TMP/controller
RIG_NETNS_PIDS+=("$(cat "$RIG_CTL_DIR/pid")")
RIG_CTL_PORT=$(cat "$RIG_CTL_DIR/port")
rig_netns_bg "$RIG_TMP/controller/relay.log" socat "TCP-LISTEN:8082,bind=$IP,reuseaddr,fork" "TCP:127.0.0.1:$RIG_CTL_PORT"
for hp in 127.0.0.1/8081 "$IP/8082"; do
  for _ in $(seq 50); do rig_netns_exec bash -c "exec 3<>/dev/tcp/$hp" 2>/dev/null && break; sleep 0.1; done
done
# the enlist key: one more initramfs archive, as docs/register.md says
mkdir -p "$RIG_TMP/key/etc/kiln"
(umask 077; rig_ctl_config hmac_key >"$RIG_TMP/key/etc/kiln/enlist.key")
(cd "$RIG_TMP/key" && find . | cpio -o -H newc --quiet) >"$RIG_TMP/enlist-key.cpio"
rig_initrd_join "$RIG_TMP/initrd-boot.img" "$RIG_INITRD" "$RIG_TMP/enlist-key.cpio"

# --- the rack spec -----------------------------------------------------------------
SPECS=$RIG_TMP/specs
mkdir -p "$SPECS"
RIG_VAR_MAC_A=$MAC_A RIG_VAR_MAC_B=$MAC_B RIG_VAR_MAC_E=$MAC_E RIG_VAR_IMAGE_URL=http://$IP/kiln/images/$IMAGE
rig_subst <"$SRC/tests/rig/specs/bootserver-rack.yaml" >"$SPECS/rack.yaml" || rig_die "the rack spec: a @VAR@ is not set"
"$KILN" validate "$SPECS/rack.yaml" >/dev/null || rig_die "the rack spec does not validate"

# --- setup.sh: dry run, full DHCP, again, a bad setting ------------------------
BS=$RIG_TMP/bs
KARGS="console=ttyS0,115200n8 loglevel=4 panic=-1 kiln.report=/dev/ttyS1 kiln.enlist=http://$IP:8082/kiln/enlist kiln.enlist.timeout=120"
setup() {  # setup LOG ARGS...: kickstart/setup.sh in the namespace, with the test's settings
  local log=$1; shift
  rig_netns_exec bash "$SRC/kickstart/setup.sh" --interface br0 --address "$IP" --root "$BS" \
    --specs "$SPECS" --image-store http://127.0.0.1:8081 --kernel "$RIG_KERNEL" \
    --initrd "$RIG_TMP/initrd-boot.img" --kiln-args "$KARGS" --no-systemd "$@" >"$log" 2>&1
}
RIG_NETNS_STOP_CMD='setup "$RIG_TMP/setup-stop.log" --stop'
tree_sum() {  # what setup.sh wrote under BS: every file but the daemons' logs, pid files and cache
  (cd "$BS" 2>/dev/null && find . -path ./log -prune -o -path ./run -prune -o -path ./cache -prune -o -type f -print0 \
    | sort -z | xargs -0r sha256sum)
}
FULL=(--dhcp full --range 192.0.2.100,192.0.2.150)
rc=0; setup "$RIG_TMP/setup-dry.log" "${FULL[@]}" --dry-run || rc=$?
rig_check "setup.sh --dry-run exits 0 (got $rc)" [ "$rc" = 0 ]
rig_check "setup.sh --dry-run shows the dnsmasq configuration it would write" grep -q 'dhcp-range=192.0.2.100,192.0.2.150' "$RIG_TMP/setup-dry.log"
rig_check "setup.sh --dry-run wrote nothing ($BS does not exist)" [ ! -e "$BS" ]
rig_check "setup.sh --dry-run started nothing (nothing listens on UDP 67 or on $IP:80)" \
  eval '! rig_netns_exec ss -Hlnu "sport = :67" | grep -q . && ! rig_netns_exec ss -Hlnt "sport = :80" | grep -qv 10.0.2.102:80'
rc=0; setup "$RIG_TMP/setup-1.log" "${FULL[@]}" || rc=$?
[[ $rc == 0 ]] || { cat "$RIG_TMP/setup-1.log" >&2; rig_die "setup.sh (full DHCP) failed: exit $rc"; }
rig_ok "setup.sh (full DHCP) set up the boot server"
sed 's/^/rig: setup: /' "$RIG_TMP/setup-1.log" >&2
rc=0; setup "$RIG_TMP/setup-2.log" "${FULL[@]}" || rc=$?
rig_check "setup.sh again with the same settings: exit 0 (got $rc), and it says nothing changed" \
  eval '[ "$rc" = 0 ] && grep -qi "nothing changed" "$RIG_TMP/setup-2.log"'
before=$(tree_sum)
rc=0; setup "$RIG_TMP/setup-bad.log" --dhcp full --range 198.51.100.10,198.51.100.20 || rc=$?
rig_check "setup.sh refuses a range outside br0's subnet (exit $rc): $(head -1 "$RIG_TMP/setup-bad.log")" \
  eval '[ "$rc" != 0 ] && grep -q "198.51.100.10" "$RIG_TMP/setup-bad.log" && grep -q "192.0.2.0/24" "$RIG_TMP/setup-bad.log"'
rig_check "the refused setting wrote nothing (the boot server's files are as they were)" [ "$(tree_sum)" = "$before" ]
rig_check "the refused setting left the running dnsmasq answering" eval 'rig_netns_exec ss -Hlnu "sport = :67" | grep -q .'

# where setup.sh keeps what the checks read (its --root layout, docs/bootserver.md)
DNSMASQ_LOG=$BS/log/dnsmasq.log NGINX_LOG=$BS/log/nginx-access.log HOSTS=$BS/www/kiln/hosts
[[ -f $DNSMASQ_LOG && -f $NGINX_LOG && -d $HOSTS ]] || rig_die "setup.sh's layout: no $DNSMASQ_LOG, $NGINX_LOG or $HOSTS"

node() {  # node MAC TAP FIRMWARE: the next boot is this node's, on the real network
  RIG_MAC=$1 RIG_NET_TAP=$2 RIG_FIRMWARE=$3
  RIG_SMBIOS_SERIAL=RIG-${1//:/} RIG_SMBIOS_UUID=6b696c6e-0000-4000-8000-${1//:/}
  RIG_DISK=() RIG_DISK_SERIAL=() RIG_DISK_BUS=()
}
served() {  # served MAC PATH STATUS: nginx's log has a request of PATH with STATUS from the node's address
  grep -E "^$(lease_ip "$1") .*\"GET $2 HTTP/[0-9.]+\" $3 " "$NGINX_LOG" >/dev/null
}
lab_lease() {  # lab_lease MAC: the address the lab's udhcpd leased to MAC, from its lease file
  # udhcpd rewrites that file in place every second (auto_time 1: truncate,
  # then write), so a read can fall between the two and see none or part of
  # it; a MAC the server leased to shows up again within a few rewrites
  local i ip
  for ((i = 0; i < 10; i++)); do
    ip=$(busybox dumpleases -f "$RIG_TMP/lab/leases" 2>/dev/null | awk -v m="$1" 'tolower($1) == m {print $2}' | tail -1)
    [[ -n $ip ]] && { echo "$ip"; return 0; }
    sleep 0.5
  done
  return 1
}
lease_ip() {  # the address the node's MAC was given last: by the lab's server (its leases), or by dnsmasq (its log)
  { [[ -e $RIG_TMP/lab/leases ]] && lab_lease "$1"; } \
    || grep -ohE "DHCPACK\(br0\) [0-9.]+ $1" "$DNSMASQ_LOG" | tail -1 | awk '{print $2}'
}
sent() {  # sent FILE IP: dnsmasq's log has FILE sent over TFTP to IP
  [[ -n $2 ]] && grep -qE "sent .*/$1 to $2\$" "$DNSMASQ_LOG"
}
layout_of() { rig_report_section 'kiln-file report.json' | jq -r '.node.layout // empty' 2>/dev/null; }
arrays() { rig_report_section mdstat | grep -Eo '\[[0-9]/[0-9]\] \[[U_]+\]' | sort | paste -sd' '; }
own_disks() {  # own_disks NODE HOSTNAME ROOT_RE ARRAYS: the node's next boot is from its own disks (SeaBIOS), checked from its installed system's report
  local n=$1 host=$2 root=$3 want=$4
  rig_boot_disk || rig_not_ok "node $n: its installed system did not report (see its console above)"
  rig_expect_section system '^multi-user active$' "node $n: its installed system reached multi-user from its own disks"
  rig_expect_section system '^firmware bios$' "node $n: booted by SeaBIOS through the GRUB kiln put on its disks"
  rig_expect_section system "^hostname $host\$" "node $n: the installed system's hostname is $host"
  rig_expect_section root-stack "$root" "node $n: / sits on its layout's stack (/$root/)"
  rig_check "node $n: its arrays are whole (${want:-no md}; the report: $(arrays))" [ "$(arrays)" = "$want" ]
}

# --- node A: BIOS, four disks, full DHCP -----------------------------------------
node "$MAC_A" tap0 bios
for i in 0 1 2 3; do rig_disk "a$i" 2G; done
RIG_NET_TAP=tap0 RIG_FIRMWARE=bios rig_boot --pxe || rig_not_ok "node A: the guest did not finish (see the console above)"
rig_expect_exit 0
A_IP=$(lease_ip "$MAC_A")
rig_check "node A: dnsmasq gave it an address in the range ($A_IP)" eval '[[ $A_IP == 192.0.2.1[0-4][0-9] || $A_IP == 192.0.2.150 ]]'
rig_check "node A: dnsmasq's log shows its iPXE asking, and boot.ipxe as the boot file" \
  eval 'grep -q "user class: iPXE" "$DNSMASQ_LOG" && grep -qE "bootfile-name +boot.ipxe" "$DNSMASQ_LOG"'
rig_check "node A: dnsmasq sent it boot.ipxe over TFTP" sent boot.ipxe "$A_IP"
rig_check "node A: iPXE asked nginx for hosts/<mac>.ipxe (404: not deployed)" served "$MAC_A" "/kiln/hosts/[^ ]+\\.ipxe" 404
rig_check "node A: kiln fetched its spec from nginx (the rack spec, no file of its own)" served "$MAC_A" "/kiln/specs/$MAC_A.yaml" 200
rig_check "node A: kiln fetched the image from nginx" served "$MAC_A" "/kiln/images/$IMAGE" '20[06]'
rig_check "node A: installed layout raid10-4 (its report: '$(layout_of)')" [ "$(layout_of)" = raid10-4 ]
rig_expect_section 'target /etc/hostname' '^rack-a$' "node A: hostname rack-a from the nodes table"
rig_expect_raid10_f2
own_disks A rack-a '^md[0-9]+ raid10 ' '[4/4] [UUUU] [4/4] [UUUU] [4/4] [UUUU]'

# --- node E: BIOS, one disk, full DHCP -----------------------------------------
node "$MAC_E" tap4 bios
rig_disk e0 2G
RIG_NET_TAP=tap4 RIG_FIRMWARE=bios rig_boot --pxe || rig_not_ok "node E: the guest did not finish (see the console above)"
rig_expect_exit 0
rig_check "node E: kiln fetched the rack spec from nginx" served "$MAC_E" "/kiln/specs/$MAC_E.yaml" 200
rig_check "node E: installed layout single (its report: '$(layout_of)')" [ "$(layout_of)" = single ]
rig_expect_section 'target /etc/hostname' '^rack-e$' "node E: hostname rack-e from the nodes table"
own_disks E rack-e '^vda3 part xfs' ''

# --- node C: UEFI HTTP boot, one small disk: enlists -----------------------------
node "$MAC_C" tap2 uefi-http
rig_disk c0 1G
dd if=/dev/urandom of="${RIG_DISK[0]}" bs=1M count=2 conv=notrunc status=none
rig_disk_layer
RIG_NET_TAP=tap2 RIG_FIRMWARE=uefi-http rig_boot --pxe || rig_not_ok "node C: the guest did not finish"
rig_expect_exit 0
C_IP=$(lease_ip "$MAC_C")
rig_check "node C: the firmware asked as an HTTP client (arch 16) and got ipxe.efi's URL" \
  eval 'grep -q "HTTPClient:Arch:00016" "$DNSMASQ_LOG" && grep -qE "bootfile-name +http://$IP(:80)?/kiln/boot/ipxe.efi" "$DNSMASQ_LOG"'
rig_check "node C: the firmware fetched ipxe.efi from nginx over HTTP" served "$MAC_C" /kiln/boot/ipxe.efi 200
rig_check "node C: its spec was the rack spec" served "$MAC_C" "/kiln/specs/$MAC_C.yaml" 200
rig_check "node C: nothing was written to its disk" rig_disks_unwritten
rig_controller_dump "$RIG_TMP/ctl.json"
rig_check "node C: the controller enlisted it, with its MAC" \
  eval 'jq -e --arg m "$MAC_C" "[.enlisted[] | tostring | test(\$m; \"i\")] | any" "$RIG_TMP/ctl.json" >/dev/null'
not_fitting=$(jq -r '[.enlisted[].body | fromjson | .enlist.layouts_not_fitting[]? | select(.reason != "") | .layout] | sort | join(" ")' "$RIG_TMP/ctl.json")
rig_check "node C: the enlisted record names why each layout did not fit (with a reason: ${not_fitting:-none})" \
  [ "$not_fitting" = "mirror-2 raid10-4 single" ]

# --- proxy DHCP beside the lab's own DHCP server ----------------------------------
LAB=$RIG_NETNS-lab
mkdir -p "$RIG_TMP/lab"
ip netns add "$LAB" || rig_die "cannot make the lab's namespace"
cleanup_do ip netns delete "$LAB"
ip -n "$LAB" link set lo up
# both ends of this veth are in the test's own namespaces
ip -n "$RIG_NETNS" link add lab0 type veth peer name eth0 netns "$LAB"
ip -n "$RIG_NETNS" link set lab0 master br0
ip -n "$RIG_NETNS" link set lab0 up
ip -n "$LAB" addr add 192.0.2.2/24 dev eth0
ip -n "$LAB" link set eth0 up
cat >"$RIG_TMP/lab/udhcpd.conf" <<EOF
start 192.0.2.200
end 192.0.2.220
interface eth0
lease_file $RIG_TMP/lab/leases
auto_time 1
option subnet 255.255.255.0
option router 192.0.2.1
EOF
: >"$RIG_TMP/lab/leases"
netns_bg "$LAB" busybox udhcpd -f "$RIG_TMP/lab/udhcpd.conf" >>"$RIG_TMP/lab/udhcpd.log" 2>&1
RIG_NETNS_PIDS+=("$NETNS_PID")
rc=0; setup "$RIG_TMP/setup-3.log" --dhcp proxy || rc=$?
sed 's/^/rig: setup: /' "$RIG_TMP/setup-3.log" >&2
rig_check "setup.sh --dhcp proxy beside the lab's server: exit 0 (got $rc)" [ "$rc" = 0 ]
rig_check "setup.sh (proxy): restarted dnsmasq, left nginx as it was" \
  eval 'grep -qi "restart.*dnsmasq\|dnsmasq.*restart" "$RIG_TMP/setup-3.log" && ! grep -qi "restart.*nginx\|nginx.*restart" "$RIG_TMP/setup-3.log"'
rig_check "setup.sh (proxy): dnsmasq's configuration hands out no addresses" grep -q '^dhcp-range=[0-9.]*,proxy' "$BS/etc/dnsmasq.conf"

# --- node B: UEFI PXE, two disks, proxy DHCP ---------------------------------------
node "$MAC_B" tap1 uefi
for i in 0 1; do rig_disk "b$i" 2G; done
RIG_NET_TAP=tap1 RIG_FIRMWARE=uefi rig_boot --pxe || rig_not_ok "node B: the guest did not finish"
rig_expect_exit 0
B_IP=$(lease_ip "$MAC_B")
rig_check "node B: its address came from the lab's server ($B_IP)" eval '[[ $B_IP == 192.0.2.2[0-2][0-9] ]]'
rig_check "node B: dnsmasq answered its firmware as a proxy, with ipxe.efi" \
  eval 'grep -qE "PXE\(br0\) $MAC_B proxy" "$DNSMASQ_LOG" && sent ipxe.efi "$B_IP"'
rig_check "node B: then boot.ipxe over TFTP" sent boot.ipxe "$B_IP"
rig_check "node B: installed layout mirror-2 (its report: '$(layout_of)')" [ "$(layout_of)" = mirror-2 ]
rig_expect_section 'target /etc/hostname' '^rack-b$' "node B: hostname rack-b from the nodes table"
rig_expect_section mdstat '^md[0-9]+ : active raid1 ' "node B: an md raid1"
rig_check "node B: fetched the image from nginx" served "$MAC_B" "/kiln/images/$IMAGE" '20[06]'
n=$(grep -c "/images/$IMAGE" "$RIG_TMP/store/access.log")
size=$(stat -c %s "$RIG_TMP/store/www/kiln/images/$IMAGE")
bytes=$(awk -v f="/images/$IMAGE" 'index($0, f) {sub("bytes=", "", $NF); s += $NF} END {print s + 0}' "$RIG_TMP/store/access.log")
rig_check "the image store saw the image's bytes once for three nodes ($n requests, $bytes of $size bytes)" \
  eval '[ "$bytes" -le "$size" ] && [ "$bytes" -gt 0 ]'
own_disks B rack-b '^md[0-9]+ raid1 ' '[2/2] [UU] [2/2] [UU] [2/2] [UU]'

# --- node D: deployed, boots its disks through local.ipxe -------------------------
cp "$SRC/kickstart/local.ipxe" "$HOSTS/$FIX_MAC.ipxe" && chmod 0644 "$HOSTS/$FIX_MAC.ipxe"
node "$FIX_MAC" tap3 bios
RIG_DISK=("${FIX_DISK[@]}") RIG_DISK_SERIAL=("${FIX_SERIAL[@]}")
tang_before=$(rig_tang_requests)
RIG_NET_TAP=tap3 RIG_FIRMWARE=bios rig_boot --pxe || rig_not_ok "node D: the installed system did not finish its boot"
D_IP=$(lease_ip "$FIX_MAC")
rig_check "node D: its address came from the lab's server ($D_IP)" eval '[[ $D_IP == 192.0.2.2[0-2][0-9] ]]'
rig_check "node D: boot.ipxe from the proxy's answer, over TFTP" sent boot.ipxe "$D_IP"
rig_check "node D: iPXE fetched hosts/<mac>.ipxe (200)" served "$FIX_MAC" "/kiln/hosts/[^ ]+\\.ipxe" 200
rig_check "node D: nothing fetched a spec for it (kiln never ran)" eval '! grep -q "/kiln/specs/$FIX_MAC.yaml" "$NGINX_LOG"'
rig_expect_section findmnt '^/ /dev/mapper/kvm_vg-root xfs ' "node D: its installed system booted from its disks (/ on the LUKS volume's LV)"
rig_expect_section system '^multi-user active$' "node D: the installed system reached multi-user"
rig_check "node D: the installed system opened LUKS through Tang on the namespace's network ($(( $(rig_tang_requests) - tang_before )) recoveries)" \
  [ "$(rig_tang_requests)" -gt "$tang_before" ]

# --- nothing left the namespaces ---------------------------------------------------
rig_check "the namespace does not forward (ip_forward 0)" [ "$(rig_netns_exec sysctl -n net.ipv4.ip_forward)" = 0 ]
rig_check "no packet came in for an address outside the namespace (InAddrErrors $(rig_netns_snmp InAddrErrors))" \
  [ "$(rig_netns_snmp InAddrErrors)" = 0 ]
rig_check "the namespace's only route is br0's subnet" \
  eval '[ "$(rig_netns_exec ip -4 route show | grep -v "^192.0.2.0/24 dev br0 ")" = "" ]'
rig_check "the namespace's links: lo, br0, the taps and the lab's veth" \
  eval '[ "$(rig_netns_exec ip -o link show | awk -F": " "{print \$2}" | sed "s/@.*//" | sort | tr "\n" " ")" = "br0 lab0 lo tap0 tap1 tap2 tap3 tap4 " ]'
rig_done
