#!/bin/bash
# The kiln demo, on a fresh Debian 12 as root:
#
#   bash tests/demo.sh
#
# installs the dependencies, builds kiln fully static (the binary the
# initramfs ships and installs on the node), the netboot initramfs and the
# small bootable base image, then netboots one QEMU node (software emulation;
# QEMU's iPXE, TFTP, and nginx on 127.0.0.1 serving the node's spec and
# image) with four blank 2 GiB disks, which kiln provisions with the storage
# of the encrypted KVM host template (md RAID1 /boot, md RAID10 far 2, LUKS2
# bound to a Tang server on 127.0.0.1, LVM, XFS; tests/rig/specs/demo.yaml),
# streams the image onto, benchmarks through dm-crypt, makes bootable (GRUB
# on every disk), gives the CloudStack bridge cloudbr0 and the first-boot
# registration unit, and reports "installed" to the stand-in CloudStack
# controller's webhook (tests/controller/, on 127.0.0.1). While the node runs
# it prints kiln's progress from the node's console, then what the node's
# kernel reports (disks, md, LUKS, LVs, mounts) and what the controller
# holds. Then the node PXE-boots again, as a node left network-first does:
# kiln finds its finished install, changes nothing and boots the installed
# system (kexec); its initramfs asks Tang for the LUKS key (nobody types a
# passphrase), cloudbr0 comes up with the node's address, and its first-boot
# unit registers with the controller, whose addHost logs in to the node over
# SSH (a QEMU hostfwd on 127.0.0.1) with the spec's host password and runs
# the image's stub cloudstack-setup-agent. Last, what the installed system
# reports from its own kernel and what the controller recorded from the
# running host (the SSH login, the agent's arguments, the host Up).
#
# Takes about 3.5 minutes with the caches warm on a quiet 2-core machine
# under TCG (194 s on 2026-12-02; docs/benchmarks.md, "Install speed"), and
# two to three times that under load; the first run also builds
# the static libraries from Debian's sources (about 4.5 min), downloads the
# Debian kernel package, builds the initramfs and the bootable image (about
# 3 min). Everything it starts (QEMU, nginx, Tang, the controller) is
# stopped by PID, and its temp dir removed, when it ends, fails or is
# interrupted (Ctrl-C); RIG_KEEP=1 keeps the temp dir. It prints no
# secret (and checks that none reached the consoles, the reports or the
# controller's records). Exit 0 when the node was provisioned, booted its
# installed system, registered from there, and the controller holds it Up
# after one SSH login.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
cd "$SRC"
T0=$(date +%s)
step() { printf '\n==> [%3ds] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }
since() { echo $(( $(date +%s) - $1 )); }   # since T: seconds from T to now
# A failing command names itself once; not an exit (rig's EXIT trap
# returns the exit status, which fires ERR again after `exit N`)
interrupted() { trap - ERR; echo "demo: interrupted" >&2; exit 130; }
die() { trap - ERR; printf 'demo: FAILED: %s\n' "$@"; exit 1; }
trap interrupted INT TERM HUP
trap '[[ $BASH_COMMAND == exit* ]] || { trap - ERR; echo "demo: FAILED at line $LINENO of tests/demo.sh: $BASH_COMMAND" >&2; }' ERR
# an install boot takes about 500 s at load 6, and more under heavier load
: "${RIG_TIMEOUT:=1500}"

cat <<'EOF'
kiln demo: one QEMU node netboots, is provisioned from four blank disks, and
joins the cloud as a running KVM host
  1. dependencies (apt-get), 2. build kiln (static), 3. the netboot initramfs,
  4. the bootable image, nginx (spec, image), Tang and the stand-in
     CloudStack controller on 127.0.0.1,
  5. boot 1: the node PXE-boots; kiln fetches its spec, builds RAID1 /boot +
     RAID10 f2 -> LUKS2 (Tang-bound) -> LVM -> XFS, benchmarks dm-crypt,
     streams the image, installs GRUB on every disk, writes cloudbr0 and the
     first-boot unit, reports "installed", stops the storage,
  6. what the node's kernel and the controller report,
  7. boot 2: PXE first again: kiln boots the installed system, which
     registers; the controller logs in over SSH and sets the agent up,
  8. what the installed system reports, and what the controller recorded.
EOF

step "dependencies (tests/deps.sh)"
bash tests/deps.sh

step "build kiln, fully static (out/build-static; the first time its libraries are built from Debian's sources, about 4.5 min, then cached)"
# The node runs the static kiln and installs a copy of it as the installed
# system's first-boot registration; a dynamic build would not run there.
t=$(date +%s)
mkdir -p out
prefix=$(bash initramfs/static/build.sh 2>out/demo-static-deps.log | tail -n 1) ||
  { tail -30 out/demo-static-deps.log; die "the static libraries (out/demo-static-deps.log)"; }
if ! { cmake -S . -B out/build-static -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_STATIC=ON -DKILN_STATIC_PREFIX="$prefix" &&
       nice -n 5 cmake --build out/build-static -j"$(nproc)"; } >out/demo-build.log 2>&1; then
  tail -30 out/demo-build.log; die "the build (out/demo-build.log)"
fi
export KILN=$SRC/out/build-static/kiln KILN_RIG_BINARY=$SRC/out/build-static/kiln.stripped SRC
echo "built $("$KILN" version), $(file -b "$KILN" | grep -o 'statically linked'), in $(since "$t") s"
T_BUILD=$(since "$t")

step "netboot initramfs (initramfs/build.sh; cached in /var/cache/kiln)"
t=$(date +%s)
bash initramfs/build.sh --kiln "$KILN_RIG_BINARY" >out/demo-initramfs.env   # its progress goes to stderr
T_INITRD=$(since "$t")

step "the bootable image (initramfs/base-image/build-boot.sh; cached), nginx, Tang and the stand-in controller on 127.0.0.1"
t=$(date +%s)
# shellcheck source=rig/lib.sh
. "$SRC/tests/rig/lib.sh"
rig_init            # from here on, an exit of any kind stops what was started
trap interrupted INT TERM HUP
# the whole job's servers, secrets and disks (as tests/rig/test-whole-job.sh):
# the bootable image, Tang, the controller, the node's sshd on 127.0.0.1 for
# the controller's addHost, and tests/rig/specs/demo.yaml (the template's
# storage with /boot on RAID1, the LUKS volume bound to the demo's Tang,
# image, bench and register sections pointed at the demo's servers)
rig_job_setup specs/demo.yaml demo-
echo "spec: tests/rig/specs/demo.yaml, served as $RIG_HTTP_HOST_URL/specs/$RIG_MAC.yaml"

# What the node checks before it stops (an extra initramfs segment with a
# report hook): what is on /target and where the run report ended up.
seg=$RIG_TMP/hook-root
mkdir -p "$seg/etc/kiln/report.d"
cat >"$seg/etc/kiln/report.d/50-demo" <<'HOOK'
echo "--- demo-image"
if [ -f /target/etc/kiln-image ]; then
  echo "$(cat /target/etc/kiln-image); $(ls /target/boot | grep -cE '^(vmlinuz|initrd)') kernel files in /boot; GRUB: $(ls /target/boot/grub/i386-pc/core.img /target/boot/efi/EFI/BOOT/BOOTX64.EFI 2>/dev/null | tr '\n' ' ')"
else
  echo "no image on /target"
fi
echo "--- demo-report-files"
for f in /run/kiln/report.json /target/var/lib/kiln/report.json; do
  [ -f "$f" ] && echo "$f $(wc -c <"$f") bytes sha256 $(sha256sum <"$f" | cut -c1-16)"
done
HOOK
rig_add_initrd_segment "$seg"

# A node's console as it grows: the new lines that match REGEX, without
# escapes, indented, with kiln's own clock ("kiln +S s", seconds since kiln
# started) and the kernel's ("kernel S s", guest uptime) told apart. After
# each minute with nothing new, one line says what the console shows last
# (an image without the generic initramfs has the boot-loader step run the
# target's update-initramfs for minutes under TCG). One process, stopped with the rest (rig_cleanup kills
# RIG_PIDS).
console_clean() { tr -d '\r' | sed 's/\x1b\[[0-9;]*[A-Za-z]//g'; }
console_render() {
  sed -E 's/^\[ *([0-9]+\.[0-9]{3})\] /kiln +\1 s  /; s/^\[ *([0-9]+\.[0-9]{6})\] /kernel \1 s  /
          s/Please unlock disk ([^:]*):.*/cryptroot asks for the passphrase of \1: clevis answers it with Tang, nobody types/
          s/^/    node: /'
}
follow_log() {  # follow_log FILE REGEX
  local f=$1 re=$2 seen=0 n out quiet_from=$SECONDS next=60 last shown=
  while sleep 2; do
    [[ -f $f ]] || continue
    n=$(wc -l <"$f") out=
    if ((n > seen)); then
      out=$(sed -n "$((seen + 1)),${n}p" "$f" | console_clean | grep -aE -- "$re" | console_render || true)
      seen=$n
    fi
    if [[ -n $out ]]; then
      printf '%s\n' "$out"; quiet_from=$SECONDS next=60
    elif ((SECONDS - quiet_from >= next)); then
      # a progress line redraws itself after CRs: its last state
      last=$(tail -c 4096 "$f" | tr '\r' '\n' | console_clean | grep -a '[^[:space:]]' | tail -1 |
             console_render | sed 's/^    node: //' | cut -c1-110 || true)
      if [[ $last == "$shown" ]]; then echo "    node: ... nothing new for $next s"
      else echo "    node: ... nothing new for $next s; the console shows: $last"; shown=$last; fi
      next=$((next + 60))
    fi
  done
}

# kiln's progress, as the node's console shows it
follow_console() {  # follow_console FILE
  follow_log "$1" 'kiln-init: (network|kiln boot|error|done)|fetched spec|step [0-9]+/[0-9]+ .* done in|error|benchmark gate|registered with|applied [0-9]+ step|\] (update-initramfs|grub-install|grub-bios-setup|update-grub|debconf-set-selections|clevis): '
}

T_SERVERS=$(since "$t")
step "boot 1: the node PXE-boots and kiln provisions it (QEMU under TCG: 1-4 min by the load)"
follow_console "$RIG_TMP/serial-1.log" &
follower=$!
RIG_PIDS+=("$follower")
booted=0
rig_boot --pxe && booted=1
sleep 2.5   # the last console lines
kill "$follower" 2>/dev/null || true

step "what the node's kernel reports"
if ((booted == 0)) && [[ ! -s $RIG_REPORT ]]; then
  echo "the node sent no report; its console:"; tail -40 "$RIG_SERIAL"; die "boot 1: no report from the node"
fi
rc=$(rig_exit_code)
show() {  # show TITLE SECTION [FILTER-REGEX]
  local title=$1 sec=$2 re=${3:-.} out
  out=$(rig_report_section "$sec" | grep -E -- "$re" || true)
  [[ -n $out ]] || return 0
  printf '\n%s\n' "$title"; sed 's/^/    /' <<<"$out"
}
show "disks and partitions (1 KiB blocks):" partitions 'vd[a-z]'
show "md arrays (/proc/mdstat):" mdstat 'md|blocks'
show "md detail:" mdadm-detail '^/dev/md|Raid Level|Layout|Chunk Size|Active Devices|State :'
show "LUKS header (keyslot 0: the spec's passphrase, the recovery key; keyslot 1: the Tang binding):" luksdump '^Version|Flags|cipher:|sector:|^(Keyslots|Tokens):|^  [0-9]+: (luks2|clevis)|PBKDF:'
show "LVM volume groups (name|PVs|LVs|size|free|extent):" vgs .
show "LVM logical volumes (vg|lv|bytes|active|devices):" lvs .
show "mounted under /target:" mounts ' /target'
show "target /etc/fstab:" "target /etc/fstab" .
show "target /etc/crypttab:" "target /etc/crypttab" .
show "the image on /target (and the boot loader kiln installed):" demo-image .
show "the run report (one JSON, saved by kiln in both places):" demo-report-files .

printf '\nwhat the stand-in controller holds:\n'
rig_controller_dump "$RIG_TMP/controller.json" || true
jq -r '
  def mbps: if . == null then "-" else (. * 10 | round / 10 | tostring) end;
  (.zones | map({(.id): .name}) | add // {}) as $zone
  | (.pods | map({(.id): .name}) | add // {}) as $pod
  | (.clusters | map({(.id): .name}) | add // {}) as $cluster
  | "    hosts: \(.hosts | length)",
    (.hosts[] | "      \(.name // "-")  ip \(.ipaddress)  \(.hypervisor)  state \(.state)  zone \($zone[.zone_id] // .zone_id) / pod \($pod[.pod_id] // .pod_id) / cluster \($cluster[.cluster_id] // .cluster_id)"),
    "    webhook events: \(.events | length) (\(.events | group_by(.type) | map("\(.[0].type) \(length)") | join(", ")))",
    "    run reports: \(.reports | length)",
    (.reports[-1].body // empty
     | "      last: node \(.node.hostname // .node.id), result \(.result), \(.duration_ms / 1000 | round) s, \(.stages | length) stages, failed stage \(.failed_stage // "none")",
       "      image: \(.image.bytes // "-") bytes, sha256 \((.image.sha256 // "-")[0:16])…",
       "      bench: write raw \(.bench.raw_write_mbps | mbps) MB/s, through dm-crypt \(.bench.crypt_write_mbps | mbps) MB/s; read raw \(.bench.raw_read_mbps | mbps), through dm-crypt \(.bench.crypt_read_mbps | mbps); gate \(.bench.result // "-"): \(.bench.verdict // "-")",
       "      registration: cloudstack \(.registration.cloudstack.result // "-") (host \(.registration.cloudstack.host_id // "-")), webhook \(.registration.webhook.result // "-")")' \
  "$RIG_TMP/controller.json" || echo "    (could not read the controller's database)"

booted_rc=$rc

T_BOOT1=$RIG_BOOT_SECONDS
step "boot 2: PXE first again; kiln finds the finished install and boots it, which registers (2-5 min by the load)"
follow_installed() {  # kiln's and the installed system's console: the lines that tell the story
  follow_log "$1" 'kiln-init: (started|network|kiln boot|error|done)|installed system is loaded|Linux version|Unlocked .* with clevis|Please unlock|Reached target.*(Multi-User|Local File|Network)|kiln-register|cloudbr0: .*forwarding|kiln test image|Power-Off'
}
follow_installed "$RIG_TMP/serial-$((RIG_BOOT_N + 1)).log" &
follower=$!
RIG_PIDS+=("$follower")
installed=0
# the controller's addHost reaches the node's sshd through the hostfwd
if [[ $booted_rc == 0 ]]; then rig_job_boot_installed "$RIG_JOB_NODE_IP" && installed=1; else echo "    (skipped: provisioning failed)"; fi
sleep 2.5
kill "$follower" 2>/dev/null || true

step "what the installed system reports, from its own kernel"
if ((installed == 0)); then
  echo "the installed system sent no report; its console:"; tail -40 "$RIG_SERIAL"
else
  show "system:" system .
  show "kernel command line (the installed one, as kiln handed over):" cmdline .
  show "what / sits on (lsblk -s):" root-stack .
  show "what /boot sits on:" boot-stack .
  show "md arrays (/proc/mdstat):" mdstat 'md|blocks'
  show "dm-crypt mapping:" crypt-status 'type|cipher|keysize|device|sector'
  show "clevis pins on the LUKS volume (clevis luks list):" clevis .
  show "/etc/crypttab (no key in it):" crypttab .
  show "mounted filesystems:" findmnt .
  show "addresses (ip -br addr; cloudbr0 holds the node's):" ip-addr .
  show "sshd:" ssh .
  show "the first-boot registration (kiln-register.service):" registration .
  printf '\nTang (127.0.0.1) answered %s recovery request(s) during this boot:\n    %s\n' \
    "$(( $(rig_tang_requests) - RIG_TANG_BEFORE ))" "$(grep 'POST /rec/' "$RIG_TANG_LOG" | tail -1)"
fi

step "what the controller recorded from the running host"
rig_controller_dump "$RIG_TMP/controller-2.json" || true
jq -r '
  "    hosts: \(.hosts | length)",
  (.hosts[] | "      \(.name // "-")  ip \(.ipaddress)  \(.hypervisor)  state \(.state)  guid \(.guid)"),
  "    SSH logins (addHost, as CloudStack does it): \(.logins | length)",
  (.logins[] | "      \(.time)  \(.username)@\(.address) via 127.0.0.1:\(.port): \(.result), exit \(.exit_status // "-")",
               "        ran: \(.command // "-" | gsub("  +"; " "))"),
  "    addHost calls: \([.requests[] | select(.command == "addHost")] | length), answered \([.requests[] | select(.command == "addHost") | .status] | map(tostring) | join(", "))",
  "    run reports: \(.reports | length)",
  (.reports[] | .body | "      run \(.run_id[0:8])…  result \(.result)  cloudstack \(.registration.cloudstack.result // "-")\(if .registration.cloudstack.host_id then " (host \(.registration.cloudstack.host_id))" else "" end)")' \
  "$RIG_TMP/controller-2.json" || echo "    (could not read the controller's database)"
printf '\nwhat the management server ran on the running host (the stub cloudstack-setup-agent logs its caller and arguments):\n'
rig_report_section setup-agent | sed 's/^/    /'

up=$(jq -r '[.hosts[] | select(.state == "Up" and .ipaddress == "'"$RIG_JOB_NODE_IP"'")] | length' "$RIG_TMP/controller-2.json" 2>/dev/null || echo 0)
logins=$(jq -r '[.logins[] | select(.result == "ok")] | length' "$RIG_TMP/controller-2.json" 2>/dev/null || echo 0)
kiln_s=$(jq -r '.reports[0].body.duration_ms / 1000 | round' "$RIG_TMP/controller.json" 2>/dev/null || echo '?')
registered=0
if ((installed == 1)) && rig_section_has registration '^Result=success' && rig_section_has registration '^marker present'; then
  registered=1
fi
# The secrets (the LUKS passphrase, the host password, the API secret, the
# webhook's HMAC key) must be in nothing the demo showed: its consoles, the
# reports and the controller's records.
secrets_seen=0
rig_no_secret_in "$RIG_TMP"/serial-*.log "$RIG_TMP"/report-*.txt* "$RIG_TMP"/controller*.json || secrets_seen=1

problems=()
[[ $booted_rc == 0 ]] || problems+=("boot 1: kiln exited ${booted_rc:-without a report}")
((installed == 1)) || problems+=("boot 2: the installed system did not report")
((installed == 0 || registered == 1)) || problems+=("boot 2: the first-boot unit did not register (its status above)")
((up == 1)) || problems+=("the controller holds $up host(s) Up at $RIG_JOB_NODE_IP, not 1")
((logins == 1)) || problems+=("the controller made $logins successful SSH login(s), not 1")
((secrets_seen == 0)) || problems+=("a secret is in a console, a report or the controller's records")
trap - ERR
cat <<EOF

initramfs: $RIG_INITRD_SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $RIG_INITRD_SIZE/1048576}") MiB)
boot 1 (netboot, provision): kiln exited ${booted_rc:-?} after its ${kiln_s} s run; ${T_BOOT1} s from power-on to power-off
boot 2 (PXE first, kiln kexecs the installed system, which registers): $( ((installed == 1)) && echo "$RIG_BOOT_SECONDS s from power-on to the installed system's report" || echo "no report from the installed system" )
first boot: $( ((registered == 1)) && echo "kiln-register.service registered the node" || echo "not registered" ); controller: $up host(s) Up at $RIG_JOB_NODE_IP, $logins SSH login(s) that set the agent up; secrets seen: $( ((secrets_seen == 0)) && echo none || echo YES )
timings: build ${T_BUILD} s, initramfs ${T_INITRD} s, image and servers ${T_SERVERS} s, boot 1 ${T_BOOT1} s, boot 2 ${RIG_BOOT_SECONDS} s; $(since "$T0") s in all$( [[ ${RIG_KEEP:-0} == 1 ]] && echo "; kept: $RIG_TMP" )
EOF
((${#problems[@]} == 0)) || die "${problems[@]}"
echo "demo: OK: the node was provisioned from blank disks, booted its installed system (LUKS opened through Tang), registered, and is Up in the controller after one SSH login ($(since "$T0") s)"
