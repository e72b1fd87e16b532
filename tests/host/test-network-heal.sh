#!/bin/bash
# kiln network heal (apply/netheal.h, docs/spec.md "When systemd-networkd
# gives up"): the installed system's unit restarts systemd-networkd when it
# gave up on a link. Driven here against a state directory in networkd's own
# form (/run/systemd/netif/links/IFINDEX, ADMIN_STATE=...), a /sys/class/net
# that names the links, and a stand-in systemctl that plays the networkd that
# comes up after the restart: it records its arguments and writes the next
# set of state files (a real networkd writes them anew, so they are newer than
# the restart; one case writes none and keeps the old "failed" files).
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
T=$(mktemp -d /tmp/kiln-netheal.XXXXXX)
trap 'rm -rf "$T"' EXIT
export KILN_SYSFS="$T/sys" KILN_NETIF_LINKS="$T/links" KILN_SYSTEMCTL="$T/systemctl"

for l in lo:1 ens4:2 ens5:3 bond0:4 cloudbr0:5; do
  mkdir -p "$T/sys/class/net/${l%:*}"; echo "${l#*:}" >"$T/sys/class/net/${l%:*}/ifindex"
done
state() {  # state DIR IFINDEX ADMIN_STATE: networkd's state file of one link, as systemd 252 writes it
  mkdir -p "$1"
  printf '# This is private data. Do not parse.\nADMIN_STATE=%s\nOPER_STATE=routable\nCARRIER_STATE=carrier\nNETWORK_FILE=/etc/systemd/network/10-kiln-x.network\n' "$3" >"$1/$2"
}
scene() {  # scene DIR STATE-OF-ens4 ens5 bond0 cloudbr0 (lo: unmanaged)
  rm -rf "$1"; state "$1" 1 unmanaged
  local i=2 s; for s in "${@:2}"; do state "$1" $i "$s"; i=$((i + 1)); done
}
# the stand-in systemctl: "restart ..." into systemctl.log; then the scene
# named in $T/next (copied over the links, or none), and the next one after it
cat >"$T/systemctl" <<EOF
#!/bin/bash
echo "\$*" >>"$T/systemctl.log"
[[ -s $T/fail ]] && { cat "$T/fail" >&2; exit 1; }
n=\$(head -n 1 "$T/next"); sed -i 1d "$T/next"
[[ -n \$n && \$n != none ]] && cp "$T/scenes/\$n/"* "$T/links/"
exit 0
EOF
chmod 755 "$T/systemctl"
mkdir -p "$T/scenes"
scene "$T/scenes/up" configured configured configured configured
scene "$T/scenes/gaveup" failed failed failed failed
run() {  # run DESC WANT-RC ARGS...: kiln network heal ARGS, fresh systemctl.log, output in $T/out
  local desc=$1 want=$2; shift 2
  : >"$T/systemctl.log"
  "$KILN" network heal "$@" >"$T/out" 2>&1; local rc=$?
  [[ $rc == "$want" ]] && ok "$desc: exit $want" || not_ok "$desc: exit $rc, expected $want: $(cat "$T/out")"
}
old() { touch -d '-30 sec' "$T/links/"*; }  # files networkd wrote before the restart

# 1. every bridge configured: done at once, networkd left alone
scene "$T/links" configured configured configured configured; old
run "all configured" 0 cloudbr0
expect_in "all configured: says the network is up" "$T/out" "network up: cloudbr0 configured by systemd-networkd"
expect_not_in "all configured: no restart" "$T/out" "restarting"
expect_eq "all configured: systemctl not run" "" "$(cat "$T/systemctl.log")"

# 2. the CI failure: networkd gave up on the bond, its members and the bridge;
# one restart, and the new networkd configures them
scene "$T/links" failed failed failed failed; old
echo up >"$T/next"
run "gave up once" 0 cloudbr0
expect_in "gave up once: names the failed links in ifindex order, the restart counted" "$T/out" \
  "systemd-networkd gave up on ens4, ens5, bond0, cloudbr0 (its state reads 'failed'): restarting it (1 of 3)"
expect_in "gave up once: up after the restart" "$T/out" "network up: cloudbr0 configured by systemd-networkd, after it was restarted"
expect_eq "gave up once: one systemctl restart of systemd-networkd" "restart systemd-networkd.service" "$(cat "$T/systemctl.log")"

# 3. it gives up again every time: at most --restarts restarts, then an error
scene "$T/links" configured configured failed failed; old
printf 'gaveup\ngaveup\ngaveup\n' >"$T/next"
run "gives up every time" 1 --restarts 2 cloudbr0
expect_in "gives up every time: first restart" "$T/out" "gave up on bond0, cloudbr0 (its state reads 'failed'): restarting it (1 of 2)"
expect_in "gives up every time: second restart" "$T/out" "restarting it (2 of 2)"
expect_in "gives up every time: the error" "$T/out" \
  "systemd-networkd gave up on ens4, ens5, bond0, cloudbr0 again, after 2 restart(s): not restarting it once more (journalctl -b -u systemd-networkd.service says why)"
expect_eq "gives up every time: exactly 2 restarts" "restart systemd-networkd.service
restart systemd-networkd.service" "$(cat "$T/systemctl.log")"

# 4. a failed state from before the restart is the old networkd's: not
# restarted for again; the window runs out on it
scene "$T/links" configured configured failed failed; old
echo none >"$T/next"
run "old state after the restart" 1 --window 2 cloudbr0
expect_eq "old state after the restart: one restart" "restart systemd-networkd.service" "$(cat "$T/systemctl.log")"
expect_in "old state after the restart: the window's end, and what the bridge reads" "$T/out" \
  "network not up 2 s after systemd-networkd was restarted: cloudbr0 (failed); left to systemd-networkd"

# 5. nothing failed, the bridge waits (no DHCP answer), a bridge that is not there
scene "$T/links" configured configured configured configuring; old
run "still configuring" 1 --window 1 cloudbr0 cloudbr9
expect_in "still configuring: each bridge and why" "$T/out" \
  "network not up 1 s after systemd-networkd started: cloudbr0 (configuring), cloudbr9 (no such link); left to systemd-networkd"
expect_eq "still configuring: systemctl not run" "" "$(cat "$T/systemctl.log")"
rm "$T/links/5"
run "no state yet" 1 --window 1 cloudbr0
expect_in "no state yet: says so" "$T/out" "cloudbr0 (not set up yet)"

# 6. systemctl cannot restart it: its own words, exit 1
scene "$T/links" failed configured configured configured; old
echo "Failed to restart systemd-networkd.service: Unit systemd-networkd.service not found." >"$T/fail"
run "systemctl fails" 1 cloudbr0
expect_in "systemctl fails: its message" "$T/out" \
  "failed to restart systemd-networkd.service: Failed to restart systemd-networkd.service: Unit systemd-networkd.service not found."
: >"$T/fail"

# 7. the command line
run "no bridge" 64
expect_in "no bridge: says so" "$T/out" "kiln network heal needs the bridges to wait for (see 'kiln network --help')"
run "a path for a bridge" 64 ../x
expect_in "a path for a bridge: refused" "$T/out" "'../x' is no network interface name"
run "window 0" 64 --window 0 cloudbr0
expect_in "window 0: refused" "$T/out" "--window wants a number of seconds above 0, not '0'"
"$KILN" network frob >"$T/out" 2>&1; rc=$?
expect_eq "unknown action: exit 64" 64 "$rc"
expect_in "unknown action: named" "$T/out" "unknown network action 'frob': expected heal"
checks_done
