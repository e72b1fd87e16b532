#!/bin/bash
# The network section, end to end on this host: kiln apply on a loop disk
# (ext4 root, a file:// tar image that stands for the KVM host image) writes
# the systemd-networkd files into the target; their exact text is checked
# (networkctl cannot run on a target directory, and systemd-analyze verify
# reads unit files, not .network/.netdev). The NICs are this machine's, from
# `kiln inventory`. Negative cases: a MAC no NIC has is refused before any
# write (exit 3, the disk hashes the same); an image without systemd-networkd
# fails the network step (exit 4) with no file written under
# /etc/systemd/network.
set -uo pipefail
: "${KILN:?}" "${SRC:?}"
source "$SRC/tests/lib/assert.sh"
skip_unless_root "for loop devices"
skip_unless_tools losetup mkfs.ext4 blkid sha256sum jq tar
. "$SRC/tests/lib/loop.sh"
loop_init network
source "$SRC/tests/lib/spec.sh"
export KILN_TARGET="$T/target" KILN_RUN_DIR="$T/run"

MAC=$("$KILN" inventory --json | jq -r '[.nics[] | select(.mac != null and .mac != "")][0].mac')
NIC=$("$KILN" inventory --json | jq -r --arg m "$MAC" '.nics[] | select(.mac == $m) | .name')
[[ -n $MAC && $MAC != null ]] || { echo "SKIP: this machine lists no NIC with a MAC"; exit 77; }
HEX=${MAC//:/}

truncate -s 128M "$T/a.img"
attach "$T/a.img"; A=$ATTACHED

# the image: a stand-in systemd-networkd where Debian's systemd has it
mkdir -p "$T/root/lib/systemd" "$T/root/etc" "$T/bare/etc"
printf '#!/bin/sh\n' >"$T/root/lib/systemd/systemd-networkd"; chmod 755 "$T/root/lib/systemd/systemd-networkd"
echo "nameserver 192.0.2.53" >"$T/root/etc/resolv.conf"
echo "nameserver 192.0.2.53" >"$T/bare/etc/resolv.conf"
tar -C "$T/root" -cf "$T/image.tar" .
tar -C "$T/bare" -cf "$T/bare.tar" .
SHA=$(sha256sum <"$T/image.tar" | cut -d' ' -f1)
BARE_SHA=$(sha256sum <"$T/bare.tar" | cut -d' ' -f1)

spec() { # OUT IMAGE-TAR ITS-SHA256 MAC-OF-CLOUDBR0S-NIC
  spec_write "$1" whole-disk image bridges finish -- HOSTNAME=kiln-net-test DISK="$A" \
    IMAGE_URL="file://$2" IMAGE_SHA256="$3" MAC="$4" FINISH=none
}

# 1. an unknown NIC: refused at plan time, nothing written
spec "$T/unknown.yaml" "$T/image.tar" "$SHA" "52:54:00:de:ad:01"
before=$(sha256sum <"$T/a.img")
out=$("$KILN" apply --yes "$T/unknown.yaml" 2>&1); rc=$?
[[ $rc == 3 ]] && ok "unknown MAC: exit 3" || not_ok "unknown MAC: exit $rc, expected 3: $out"
grep -qF "$T/unknown.yaml:10:29: 'nic' of bridge 'cloudbr0': no NIC of this machine matches MAC 52:54:00:de:ad:01 (this machine has " <<<"$out" \
  && ok "unknown MAC: named, with this machine's NICs" || not_ok "unknown MAC: wrong message: $out"
[[ $(sha256sum <"$T/a.img") == "$before" ]] && ok "unknown MAC: the disk is unchanged" || not_ok "unknown MAC: the disk changed"
[[ -e $T/target/etc ]] && not_ok "unknown MAC: the target has files"

# 2. an image without systemd-networkd: the network step fails, writes no network file
spec "$T/bare.yaml" "$T/bare.tar" "$BARE_SHA" "$MAC"
out=$("$KILN" apply --yes "$T/bare.yaml" 2>&1); rc=$?
[[ $rc == 4 ]] && ok "image without systemd-networkd: exit 4" || not_ok "image without systemd-networkd: exit $rc, expected 4: $out"
grep -qF "the image has no systemd-networkd (/lib/systemd/systemd-networkd)" <<<"$out" \
  && ok "image without systemd-networkd: says so" || not_ok "image without systemd-networkd: wrong message: $out"
[[ -e $T/target/etc/systemd/network ]] && not_ok "image without systemd-networkd: $(find "$T/target/etc/systemd/network")"
[[ $(cat "$T/target/etc/resolv.conf" 2>/dev/null) == "nameserver 192.0.2.53" ]] \
  && ok "image without systemd-networkd: resolv.conf untouched" || not_ok "image without systemd-networkd: resolv.conf changed"

# 3. the same disk again, systemd-networkd now in the root: the run resumes
# (image done) and writes the network files; a stale kiln file goes
cp -a "$T/root/lib" "$T/target/"
mkdir -p "$T/target/etc/systemd/network" && echo stale >"$T/target/etc/systemd/network/10-kiln-old.network"
umount -R "$T/target"
spec "$T/spec.yaml" "$T/image.tar" "$SHA" "$MAC"
out=$("$KILN" plan "$T/spec.yaml" 2>&1) || not_ok "plan failed: $out"
grep -qF "network      write systemd-networkd files to $T/target/etc/systemd/network: cloudbr0 over $NIC ($MAC), DHCP; cloudbr1 over $NIC ($MAC) VLAN 200, 10.1.0.5/24 via 10.1.0.1, dns 10.1.0.1 fd00::53" <<<"$out" \
  && ok "plan: the network step names each bridge's NIC" || not_ok "plan: no network step as expected: $out"
out=$("$KILN" apply --yes "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] && ok "resumed apply: exit 0" || not_ok "resumed apply: exit $rc: $out"
grep -q "image .*skipped, the interrupted run did it" <<<"$out" && ok "the run resumed" || not_ok "the run did not resume: $out"
N=$T/target/etc/systemd/network
files_ok() {
H="# written by kiln from the host spec's network section"
in_target() { expect_file "${1#$T/target}" "$@"; }  # FILE TEXT: FILE holds exactly TEXT
in_target "$N/10-kiln-cloudbr0.netdev" "$H
[NetDev]
Name=cloudbr0
Kind=bridge
MACAddress=$MAC"
in_target "$N/10-kiln-cloudbr0.network" "$H
[Match]
Name=cloudbr0

[Network]
DHCP=yes"
in_target "$N/10-kiln-cloudbr1.netdev" "$H
[NetDev]
Name=cloudbr1
Kind=bridge
MACAddress=$MAC"
in_target "$N/10-kiln-cloudbr1.network" "$H
[Match]
Name=cloudbr1

[Network]
Address=10.1.0.5/24
Gateway=10.1.0.1
DNS=10.1.0.1
DNS=fd00::53"
in_target "$N/10-kiln-vlan200.netdev" "$H
[NetDev]
Name=vlan200
Kind=vlan

[VLAN]
Id=200"
in_target "$N/10-kiln-vlan200.network" "$H
[Match]
Name=vlan200

[Network]
Bridge=cloudbr1
LinkLocalAddressing=no"
in_target "$N/20-kiln-$HEX.network" "$H
[Match]
PermanentMACAddress=$MAC

[Network]
Bridge=cloudbr0
VLAN=vlan200
LinkLocalAddressing=no"
in_target "$T/target/etc/resolv.conf" "$H
nameserver 10.1.0.1
nameserver fd00::53"
# the bridges' and the VLAN's modules, loaded before systemd-networkd starts (no bond here)
in_target "$T/target/etc/modules-load.d/kiln-network.conf" "$H
bridge
8021q"
n=$(ls "$N" | wc -l)
[[ $n == 7 ]] && ok "7 files in /etc/systemd/network" || not_ok "$n files in /etc/systemd/network: $(ls "$N")"
for l in multi-user.target.wants/systemd-networkd.service:systemd-networkd.service \
         dbus-org.freedesktop.network1.service:systemd-networkd.service \
         sockets.target.wants/systemd-networkd.socket:systemd-networkd.socket \
         network-online.target.wants/systemd-networkd-wait-online.service:systemd-networkd-wait-online.service; do
  [[ $(readlink "$T/target/etc/systemd/system/${l%%:*}") == "/lib/systemd/system/${l#*:}" ]] \
    && ok "enabled: ${l%%:*}" || not_ok "not enabled: ${l%%:*}"
done
# the unit that restarts systemd-networkd where it gave up (test-network-heal.sh runs its command)
in_target "$T/target/etc/systemd/system/kiln-network-heal.service" "# written by kiln: restart systemd-networkd when it gave up on a link (docs/spec.md \"When systemd-networkd gives up\")
[Unit]
Description=kiln: bring up the network systemd-networkd gave up on
After=systemd-networkd.service
Before=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/kiln network heal cloudbr0 cloudbr1
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target"
[[ $(readlink "$T/target/etc/systemd/system/multi-user.target.wants/kiln-network-heal.service") == /etc/systemd/system/kiln-network-heal.service ]] \
  && ok "enabled: kiln-network-heal.service" || not_ok "not enabled: kiln-network-heal.service"
if command -v systemd-analyze >/dev/null; then
  out=$(systemd-analyze verify --man=no "$T/target/etc/systemd/system/kiln-network-heal.service" 2>&1 | grep -v "/usr/local/sbin/kiln" )
  [[ -z $out ]] && ok "systemd-analyze verify: the unit" || not_ok "systemd-analyze verify: $out"
fi
grep -q "^UUID=$(blkid -o value -s UUID "$A") / ext4 defaults,x-systemd.device-timeout=300s 0 1$" "$T/target/etc/fstab" || not_ok "fstab lacks the root"
}
files_ok

# 4. a fresh install from the real image writes the same
umount -R "$T/target"
out=$("$KILN" apply --yes --fresh "$T/spec.yaml" 2>&1); rc=$?
[[ $rc == 0 ]] && ok "fresh apply: exit 0" || not_ok "fresh apply: exit $rc: $out"
files_ok
checks_done
