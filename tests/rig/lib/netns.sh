# A real network for the rig: a network namespace of the test's own, with a
# Linux bridge and a tap device per QEMU node, where the boot server runs
# (kickstart/setup.sh: real dnsmasq, nginx, tang) instead of QEMU's user
# network. Nothing links it to the host's namespace: no veth, no route, no
# forwarding (ip_forward stays 0 in the namespace); a guest's packet for
# any other address ends at the bridge, where the namespace's own counters
# (rig_netns_snmp) see it. Sourced by tests/rig/lib.sh (its header is the index).
#
#   rig_netns_start                 the namespace RIG_NETNS, br0 at RIG_NETNS_IP/24
#   rig_netns_exec CMD...           CMD inside it
#   rig_netns_bg LOG CMD...         CMD inside it in the background (stopped on exit)
#   rig_netns_tap NAME              a tap on br0; then RIG_NET_TAP=NAME rig_boot --pxe
#                                   boots on it (RIG_FIRMWARE=bios|uefi|uefi-http)
#   rig_netns_snmp FIELD            a counter of the namespace's /proc/net/snmp (Ip:)

RIG_NETNS_IP=192.0.2.1                  # the boot server's address on br0 (TEST-NET-1)

rig_netns_start() {
  command -v ip >/dev/null || rig_skip "no ip (iproute2)"
  [[ -c /dev/net/tun ]] || rig_skip "no /dev/net/tun"
  RIG_NETNS=kiln-rig-$$
  RIG_NETNS_PIDS=()
  ip netns add "$RIG_NETNS" || rig_die "cannot make the network namespace $RIG_NETNS"
  cleanup_do rig_netns_stop
  rig_netns_exec sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.forwarding=0 >/dev/null
  ip -n "$RIG_NETNS" link set lo up
  ip -n "$RIG_NETNS" link add br0 type bridge
  # forward at once (no STP listening delay before the firmware's DHCP)
  ip -n "$RIG_NETNS" link set br0 type bridge forward_delay 0 stp_state 0
  ip -n "$RIG_NETNS" addr add "$RIG_NETNS_IP/24" dev br0
  ip -n "$RIG_NETNS" link set br0 up || rig_die "cannot bring up br0 in $RIG_NETNS"
  rig_log "network namespace $RIG_NETNS: br0 $RIG_NETNS_IP/24, no link to the host's namespace"
}

# rig_netns_stop (on exit, first): what runs in the namespace stopped by
# PID, then the namespace deleted (its taps with it)
rig_netns_stop() {
  [[ -n ${RIG_NETNS:-} ]] || return 0
  [[ -n ${RIG_NETNS_STOP_CMD:-} ]] && eval "$RIG_NETNS_STOP_CMD" >/dev/null 2>&1
  stop_pid "${RIG_NETNS_PIDS[@]}" "${RIG_PIDS[@]}"
  ip netns delete "$RIG_NETNS" 2>/dev/null
  return 0
}

rig_netns_exec() { netns_exec "$RIG_NETNS" "$@"; }

rig_netns_bg() {
  local log=$1; shift
  netns_bg "$RIG_NETNS" "$@" >>"$log" 2>&1
  RIG_NETNS_PIDS+=("$NETNS_PID")
}

rig_netns_tap() {
  ip -n "$RIG_NETNS" tuntap add dev "$1" mode tap || rig_die "cannot make tap $1"
  ip -n "$RIG_NETNS" link set "$1" master br0
  ip -n "$RIG_NETNS" link set "$1" up
}

# rig_netns_snmp FIELD: the namespace's IPv4 counter FIELD (e.g.
# InAddrErrors: packets that came in for an address not its own, which
# with forwarding off it drops)
rig_netns_snmp() {
  rig_netns_exec awk -v f="$1" '$1 == "Ip:" && !h { for (i = 2; i <= NF; i++) n[i] = $i; h = 1; next }
    $1 == "Ip:" { for (i = 2; i <= NF; i++) if (n[i] == f) print $i }' /proc/net/snmp
}
