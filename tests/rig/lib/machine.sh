# The rig's machine: the temp dir and its cleanup, the kernel and initramfs,
# QEMU booting them (rig_boot) or the installed disks (rig_boot_disk).
# Sourced by tests/rig/lib.sh (its header is the index).

# On exit (tests/lib/cleanup.sh runs it first, then stops nginx and Tang
# and removes RIG_TMP unless RIG_KEEP=1): what the rig started is stopped,
# and a failure shows the guest console's end (a skip or an interrupt, 130,
# does not).
rig_cleanup() {
  local rc=$CLEANUP_RC
  stop_pid "${RIG_PIDS[@]}"
  if ((rc != 0 && rc != 77 && rc != 130)) && [[ -n ${RIG_TMP:-} && -f $RIG_TMP/serial.log ]]; then
    echo "rig: last lines of the guest console ($RIG_TMP/serial.log):" >&2
    tail -40 "$RIG_TMP/serial.log" | sed 's/^/  | /' >&2
    [[ -s $RIG_TMP/relay.log ]] && { echo "rig: the relays' own messages ($RIG_TMP/relay.log):" >&2; tail -20 "$RIG_TMP/relay.log" | sed 's/^/  | /' >&2; }
  fi
  [[ ${RIG_KEEP:-0} == 1 && -n ${RIG_TMP:-} ]] && rig_log "kept $RIG_TMP"
  return 0
}

# rig_init: check the tools, make the temp dir, install the trap, build (or
# reuse) the kernel and initramfs, start nginx.
rig_init() {
  local t
  [[ $(id -u) == 0 ]] || rig_skip "the rig needs root (apt-get, /var/cache/kiln)"
  for t in qemu-system-x86_64 nginx socat zstd cpio; do
    command -v "$t" >/dev/null || rig_skip "'$t' is missing (bash tests/deps.sh)"
  done
  : "${SRC:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}"
  : "${KILN:=$SRC/out/build/kiln}"
  [[ -x $KILN ]] || rig_die "no kiln binary at '$KILN'"
  "$KILN" help 2>/dev/null | grep -q '^  boot ' || rig_skip "this kiln has no 'boot' command yet"
  RIG_TMP=$(mktemp -d /tmp/kiln-rig.XXXXXX)
  cleanup_do rig_cleanup
  [[ ${RIG_KEEP:-0} == 1 ]] || cleanup_path "$RIG_TMP"
  mkdir -p "$RIG_TMP/www/specs" "$RIG_TMP/www/images" "$RIG_TMP/www/keys" "$RIG_TMP/www/reports" "$RIG_TMP/tftp" "$RIG_TMP/nginx"
  # nginx's workers run unprivileged: they traverse the temp dir, read www
  # and may write reports (PUT)
  chmod 0711 "$RIG_TMP"; chmod 0755 "$RIG_TMP/www" "$RIG_TMP/www"/*; chmod 0777 "$RIG_TMP/www/reports"
  rig_build_initramfs
  rig_http_start
}

# The initramfs: built (or reused from the cache) from the kiln under test.
# A sanitizer build cannot run in the initramfs; KILN_RIG_BINARY overrides.
rig_build_initramfs() {
  if [[ -n ${KILN_RIG_INITRD:-} && -n ${KILN_RIG_KERNEL:-} ]]; then
    RIG_INITRD=$KILN_RIG_INITRD RIG_KERNEL=$KILN_RIG_KERNEL
    return
  fi
  local bin=${KILN_RIG_BINARY:-$KILN} out
  if [[ ${KILN_SANITIZE:-} == ON ]]; then rig_skip "the rig runs the normal build, not the sanitizer build"; fi
  local t0; t0=$(date +%s.%N)
  out=$(bash "$SRC/initramfs/build.sh" --kiln "$bin" ${RIG_EXTRA:+--extra "$RIG_EXTRA"} 2>"$RIG_TMP/initramfs.log") \
    || { cat "$RIG_TMP/initramfs.log" >&2; rig_die "initramfs build failed"; }
  RIG_KERNEL=$(sed -n 's/^KILN_KERNEL=//p' <<<"$out")
  RIG_INITRD=$(sed -n 's/^KILN_INITRD=//p' <<<"$out")
  RIG_INITRD_EXTRA=$(sed -n 's/^KILN_INITRD_EXTRA=//p' <<<"$out")
  RIG_INITRD_SIZE=$(sed -n 's/^KILN_INITRD_SIZE=//p' <<<"$out")
  # a private copy: other builds sharing the cache prune old images
  cp "$RIG_INITRD" "$RIG_TMP/initrd.img" && RIG_INITRD=$RIG_TMP/initrd.img
  rig_log "initramfs: $RIG_INITRD, $RIG_INITRD_SIZE bytes ($(awk "BEGIN{printf \"%.1f\", $RIG_INITRD_SIZE/1048576}") MiB), ready in $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s"
}

# rig_initrd_join OUT FILE...: the initramfs archives FILE... one after the
# other in OUT. The kernel finds a further uncompressed archive only at a
# 4-byte boundary and skips NUL padding between archives, so each FILE but
# the last is padded to a multiple of 4 bytes.
rig_initrd_join() {
  local out=$1 f pad; shift
  {
    for f in "$@"; do
      cat "$f" || return 1
      shift; (($#)) || break
      pad=$(( (4 - $(stat -c %s "$f") % 4) % 4 ))
      head -c "$pad" /dev/zero
    done
  } >"$out"
}

# rig_add_initrd_segment DIR [COMPRESSOR...]: DIR's tree as one more initramfs
# archive (newc cpio, piped through COMPRESSOR such as `gzip -1` when given),
# appended to RIG_INITRD_EXTRA, which rig_boot loads after the kiln
# initramfs: a test's report hooks (etc/kiln/report.d/), tools or pre-init
# scripts. Call it after rig_init, once per segment.
rig_add_initrd_segment() {
  local dir=$1 n; shift
  [[ -d $dir ]] || rig_die "rig_add_initrd_segment: no directory '$dir'"
  RIG_SEGMENTS=$((${RIG_SEGMENTS:-0} + 1)); n=$RIG_SEGMENTS
  if (($#)); then
    (cd "$dir" && find . | cpio -o -H newc --quiet | "$@") >"$RIG_TMP/segment-$n.img"
  else
    (cd "$dir" && find . | cpio -o -H newc --quiet) >"$RIG_TMP/segment-$n.img"
  fi || rig_die "cannot pack the initramfs segment '$dir'"
  if [[ -n ${RIG_INITRD_EXTRA:-} ]]; then
    rig_initrd_join "$RIG_TMP/extra-$n.img" "$RIG_INITRD_EXTRA" "$RIG_TMP/segment-$n.img" \
      || rig_die "cannot append the initramfs segment '$dir'"
    RIG_INITRD_EXTRA=$RIG_TMP/extra-$n.img
  else
    RIG_INITRD_EXTRA=$RIG_TMP/segment-$n.img
  fi
}

# rig_drive I: QEMU's -drive for RIG_DISK[I] (id dI): a raw image, or a
# qcow2 overlay (a name ending in .qcow2: rig_fixture_boot, rig_disk_layer)
rig_drive() {
  local f=${RIG_DISK[$1]} fmt=raw
  [[ $f == *.qcow2 ]] && fmt=qcow2
  printf 'file=%s,if=none,id=d%s,format=%s,%s,discard=unmap' "$f" "$1" "$fmt" "$RIG_DISK_CACHE"
}

# rig_disk_controllers: the -device arguments (one a line) of the host
# adapters the disks' buses need, each once: an AHCI controller (SATA), an
# LSI MegaRAID SAS 1078 (megasas, Linux's megaraid_sas), a virtio-scsi
# HBA, an xHCI USB controller. Always all of a boot's disks, a pulled one
# too: the adapter stays, its port is empty.
rig_disk_controllers() {
  local b
  for b in $(printf '%s\n' "${RIG_DISK_BUS[@]%%:*}" | sort -u); do
    case $b in
      sata) echo ahci,id=ahci0 ;;
      sas) echo megasas,id=sas0 ;;
      scsi) echo virtio-scsi-pci,id=vscsi0 ;;
      usb) echo qemu-xhci,id=xhci0 ;;
    esac
  done
}
# rig_disk_device I [PROPS]: the -device argument of disk I (drive dI) on
# its bus (RIG_DISK_BUS[I], default virtio): virtio-blk, an NVMe
# controller of its own, an ide-hd on the AHCI port, a scsi-hd at the SCSI
# id (SAS or virtio-scsi) or a usb-storage stick; the port or id is the
# disk's place among the disks of its bus, so a pulled disk leaves its port
# empty. BUS:4k adds 4096-byte logical and physical sectors. PROPS (e.g.
# bootindex=1) are appended.
rig_disk_device() {
  local i=$1 props=${2:+,$2} bus=${RIG_DISK_BUS[$1]:-virtio} j port=0 dev
  local serial=serial=${RIG_DISK_SERIAL[$i]}
  local b
  for ((j = 0; j < i; j++)); do
    b=${RIG_DISK_BUS[$j]:-virtio}
    [[ ${b%%:*} == "${bus%%:*}" ]] && port=$((port + 1))
  done
  [[ $bus == *:4k ]] && props=",logical_block_size=4096,physical_block_size=4096$props"
  case ${bus%%:*} in
    virtio) dev="virtio-blk-pci,drive=d$i,$serial" ;;
    nvme) dev="nvme,drive=d$i,$serial" ;;
    sata) dev="ide-hd,drive=d$i,bus=ahci0.$port,$serial" ;;
    sas) dev="scsi-hd,drive=d$i,bus=sas0.0,scsi-id=$port,$serial" ;;
    scsi) dev="scsi-hd,drive=d$i,bus=vscsi0.0,scsi-id=$port,$serial" ;;
    usb) dev="usb-storage,drive=d$i,bus=xhci0.0,$serial,removable=on" ;;
    *) rig_die "disk $i: unknown bus '$bus'" ;;
  esac
  printf '%s%s' "$dev" "$props"
}

# rig_boot [--pxe|--direct] [--append ARGS] [--no-report]: boot the guest with
# RIG_DISK, wait until it powers off (or RIG_TIMEOUT), then parse the report.
# --pxe:    QEMU's iPXE → DHCP → TFTP boot.ipxe (from kickstart/) → kernel+initrd
# --direct: -kernel/-initrd/-append (no PXE; a few seconds faster)
# Sets RIG_REPORT (file), RIG_SERIAL (console log), RIG_BOOT_SECONDS,
# RIG_INIT_SECONDS (guest uptime when /init started). Returns 0 when the guest
# stopped by itself, 1 on timeout.
rig_boot() {
  local mode=direct extra_append= i until=
  while (($#)); do
    case $1 in
      --pxe) mode=pxe; shift ;;
      --direct) mode=direct; shift ;;
      --append) extra_append+=" $2"; shift 2 ;;
      --until) until=$2; shift 2 ;;   # stop the guest once its console matches (no report needed)
      *) rig_die "rig_boot: unknown option '$1'" ;;
    esac
  done
  RIG_BOOT_N=$((${RIG_BOOT_N:-0} + 1))
  if [[ -n ${RIG_REPLAY:-} ]]; then      # re-run a test's checks on a kept run's files
    RIG_REPORT=$RIG_REPLAY/report-$RIG_BOOT_N.txt RIG_SERIAL=$RIG_REPLAY/serial-$RIG_BOOT_N.log
    RIG_BOOT_SECONDS=replay RIG_INIT_SECONDS=replay
    return 0
  fi
  RIG_SERIAL=$RIG_TMP/serial-$RIG_BOOT_N.log
  RIG_REPORT=$RIG_TMP/report-$RIG_BOOT_N.txt
  : >"$RIG_SERIAL"; : >"$RIG_REPORT"
  ln -sf "$RIG_SERIAL" "$RIG_TMP/serial.log"
  local initrd=$RIG_INITRD
  if [[ -n ${RIG_INITRD_EXTRA:-} ]]; then
    initrd=$RIG_TMP/initrd-combined.img
    rig_initrd_join "$initrd" "$RIG_INITRD" "$RIG_INITRD_EXTRA"
  fi
  local spec_url="$RIG_HTTP_URL/specs/\${mac}.yaml"
  local append="console=ttyS0,115200n8 loglevel=4 panic=-1 kiln.report=/dev/ttyS1 ${RIG_APPEND:-}$extra_append"
  local net="user,id=n0,restrict=on,guestfwd=tcp:$RIG_HTTP_IP:80-cmd:$RIG_TMP/relay${RIG_NET_EXTRA:-}"
  local nic_rom=
  local args=(-accel tcg,thread=multi -cpu "$RIG_CPU" -m "$RIG_MEM" -smp "$RIG_SMP"
    -display none -monitor none -parallel none -no-reboot -nodefaults
    -smbios "type=1,manufacturer=kiln-rig,product=rig,serial=$RIG_SMBIOS_SERIAL,uuid=$RIG_SMBIOS_UUID"
    -serial "file:$RIG_SERIAL" -serial "file:$RIG_REPORT")
  if [[ -n ${RIG_NET_TAP:-} ]]; then
    # the netns boot server's network (lib/netns.sh): the firmware's own
    # network boot, answered by the boot server's dnsmasq and nginx
    [[ $mode == pxe ]] || rig_die "rig_boot: a node on a tap boots from the network (--pxe)"
    net="tap,id=n0,ifname=$RIG_NET_TAP,script=no,downscript=no"
    case ${RIG_FIRMWARE:-bios} in
      bios) args+=(-boot n) ;;    # SeaBIOS runs the NIC's option ROM: iPXE, as QEMU ships it
      # OVMF's own PXE or HTTP boot (no option ROM on the NIC: the firmware's
      # network stack loads the boot server's ipxe.efi, as on a real server)
      uefi) rig_firmware_uefi args; nic_rom=",romfile=" ;;
      uefi-http) rig_firmware_uefi args; nic_rom=",romfile="
                 args+=(-fw_cfg name=opt/org.tianocore/IPv4PXESupport,string=n
                        -fw_cfg name=opt/org.tianocore/IPv6PXESupport,string=n) ;;
      *) rig_die "rig_boot: RIG_FIRMWARE is bios, uefi or uefi-http, not '$RIG_FIRMWARE'" ;;
    esac
    args+=(-device VGA)          # GRUB's i386-pc console needs one (rig_boot_disk)
  elif [[ $mode == pxe ]]; then
    cp "$RIG_KERNEL" "$RIG_TMP/tftp/vmlinuz"
    cp "$initrd" "$RIG_TMP/tftp/initrd.img"
    # the operator's iPXE script, pointed at the rig's TFTP and nginx
    sed -e "s|^set kiln-base .*|set kiln-base tftp://10.0.2.2|" \
        -e "s|^set kiln-specs .*|set kiln-specs $RIG_HTTP_URL/specs|" \
        -e "s|^set kiln-hosts .*|set kiln-hosts $RIG_HTTP_URL/hosts|" \
        -e "s|^set kiln-args .*|set kiln-args $append|" \
        "$SRC/kickstart/boot.ipxe" >"$RIG_TMP/tftp/boot.ipxe"
    net+=",tftp=$RIG_TMP/tftp,bootfile=boot.ipxe"
    args+=(-boot n)
  else
    args+=(-kernel "$RIG_KERNEL" -initrd "$initrd" -append "$append kiln.spec=$spec_url")
  fi
  rig_nic_args args "$net" "$nic_rom"
  local c
  for c in $(rig_disk_controllers); do args+=(-device "$c"); done
  for i in "${!RIG_DISK[@]}"; do
    args+=(-drive "$(rig_drive "$i")" -device "$(rig_disk_device "$i")")
  done
  rig_log "boot $RIG_BOOT_N ($mode${RIG_NET_TAP:+ on $RIG_NET_TAP, ${RIG_FIRMWARE:-bios}}, ${#RIG_DISK[@]} disks, ${RIG_MEM} MiB): console $RIG_SERIAL"
  local rc=0
  RIG_UNTIL=$until RIG_HOLD=0 rig_qemu "${args[@]}" || rc=1
  RIG_INIT_SECONDS=$(sed -n 's/.*kiln-init: started at \([0-9.]*\) s.*/\1/p' "$RIG_SERIAL" | head -1)
  rig_log "boot $RIG_BOOT_N: guest stopped after $RIG_BOOT_SECONDS s (/init at ${RIG_INIT_SECONDS:-?} s guest uptime), report $(wc -c <"$RIG_REPORT") bytes"
  ((rc == 0)) || return 1
  [[ -n $until ]] && return 0
  # the report is complete only with its end marker
  grep -q '^=== kiln-report end' "$RIG_REPORT" || { rig_log "the guest sent no complete report"; return 1; }
  return 0
}

# rig_nic_args ARRAY NETDEV [ROM]: the NICs' arguments added to the array
# named ARRAY: the boot NIC (RIG_NIC_MODEL, RIG_MAC, QEMU id nic0; ROM
# ",romfile=" takes its option ROM away) on the network NETDEV (-netdev's
# value, id n0), and with RIG_NICS ("MODEL MAC" each) those NICs too (ids
# nic1, nic2 ..., no option ROM: the boot NIC netboots), all on one QEMU
# hub over NETDEV: one DHCP server and the same guestfwd and hostfwd
# relays for every NIC, so a bond that fails over to another member keeps
# its MAC, its address and the relays (rig_bond_failover).
rig_nic_args() {
  local -n into=$1
  local net=$2 rom=${3:-} i model mac
  into+=(-netdev "$net")
  if ((${#RIG_NICS[@]} == 0)); then
    into+=(-device "$RIG_NIC_MODEL,netdev=n0,mac=$RIG_MAC,id=nic0$rom")
    return
  fi
  into+=(-netdev hubport,id=hub0n0,hubid=0,netdev=n0
         -netdev hubport,id=hub0p0,hubid=0 -device "$RIG_NIC_MODEL,netdev=hub0p0,mac=$RIG_MAC,id=nic0$rom")
  for i in "${!RIG_NICS[@]}"; do
    read -r model mac <<<"${RIG_NICS[$i]}"
    into+=(-netdev "hubport,id=hub0p$((i + 1)),hubid=0"
           -device "$model,netdev=hub0p$((i + 1)),mac=$mac,id=nic$((i + 1)),romfile=")
  done
}
# rig_nic_id MAC: the QEMU id (rig_nic_args) of the NIC with MAC (any case)
rig_nic_id() {
  local i mac
  [[ ${1,,} == "${RIG_MAC,,}" ]] && { echo nic0; return 0; }
  for i in "${!RIG_NICS[@]}"; do
    mac=${RIG_NICS[$i]#* }
    [[ ${1,,} == "${mac,,}" ]] && { echo "nic$((i + 1))"; return 0; }
  done
  return 1
}

# rig_firmware_uefi ARRAY: OVMF's arguments added to the array named ARRAY
# (OVMF_CODE_4M.fd and a fresh copy of OVMF_VARS_4M.fd for this boot)
rig_firmware_uefi() {
  local -n into=$1
  local code=/usr/share/OVMF/OVMF_CODE_4M.fd vars=/usr/share/OVMF/OVMF_VARS_4M.fd
  [[ -r $code && -r $vars ]] || rig_skip "no OVMF firmware (bash tests/deps.sh: ovmf)"
  cp "$vars" "$RIG_TMP/ovmf-vars-$RIG_BOOT_N.fd"
  into+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$code"
         -drive "if=pflash,format=raw,unit=1,file=$RIG_TMP/ovmf-vars-$RIG_BOOT_N.fd")
}

# rig_console_shows_all REGEXES: the console (RIG_SERIAL) matches each of the
# newline-separated REGEXES (in any order)
rig_console_shows_all() {
  local re text
  text=$(tr -d '\r' <"$RIG_SERIAL")
  while IFS= read -r re; do
    [[ -z $re ]] || grep -Eq -- "$re" <<<"$text" || return 1
  done <<<"$1"
}

# rig_qemu ARGS...: run qemu-system-x86_64 ARGS (the command saved as
# qemu-N.cmd) until the guest stops by itself, RIG_TIMEOUT passes, or, with
# RIG_UNTIL=REGEX set, the console (RIG_SERIAL) matches REGEX (each line of
# it, when it has several) and then
# RIG_HOLD more seconds (default 0) pass. Sets RIG_BOOT_SECONDS and
# RIG_UNTIL_SECONDS (when REGEX matched); strips CRs from the report.
# Returns 0 when the guest stopped by itself or REGEX matched, 1 on timeout.
rig_qemu() {
  local run=(qemu-system-x86_64)
  # a node on a tap runs in the tap's namespace (ip netns exec and sh exec
  # QEMU: the PID is QEMU's; tests/lib/mountns.sh says why the sh)
  [[ -n ${RIG_NET_TAP:-} ]] && run=(ip netns exec "$RIG_NETNS" /bin/sh -c "$MOUNTNS_EXEC" sh qemu-system-x86_64)
  printf '%q ' "${run[@]}" "$@" >"$RIG_TMP/qemu-$RIG_BOOT_N.cmd"
  local t0; t0=$(date +%s.%N)
  "${run[@]}" "$@" 2>"$RIG_TMP/qemu-$RIG_BOOT_N.err" &
  local qpid=$! timed_out=0 matched=0 stop_at=
  RIG_PIDS+=("$qpid")
  RIG_UNTIL_SECONDS=
  local deadline=$(( $(date +%s) + RIG_TIMEOUT ))
  while kill -0 "$qpid" 2>/dev/null; do
    if [[ -n ${RIG_UNTIL:-} && $matched == 0 ]] && rig_console_shows_all "$RIG_UNTIL"; then
      matched=1
      RIG_UNTIL_SECONDS=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
      stop_at=$(( $(date +%s) + ${RIG_HOLD:-0} ))
      rig_log "boot $RIG_BOOT_N: the console shows /${RIG_UNTIL//$'\n'/\/ and \/}/ after $RIG_UNTIL_SECONDS s; stopping in ${RIG_HOLD:-0} s"
    fi
    if [[ -n $stop_at ]] && (( $(date +%s) >= stop_at )); then
      kill "$qpid" 2>/dev/null
      break
    fi
    if (( $(date +%s) > deadline )); then
      rig_log "the guest did not stop within ${RIG_TIMEOUT}s: stopping QEMU (pid $qpid)"
      kill "$qpid" 2>/dev/null; timed_out=1
      break
    fi
    sleep 0.5
  done
  local rc=0
  wait "$qpid" 2>/dev/null || rc=$?
  RIG_BOOT_SECONDS=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  [[ -s $RIG_TMP/qemu-$RIG_BOOT_N.err ]] && sed 's/^/rig: qemu: /' "$RIG_TMP/qemu-$RIG_BOOT_N.err" >&2
  # QEMU itself killed by a signal nobody here sent (a CI run: TCG under
  # load, "Segmentation fault" 21 s into a boot): the emulator's fault, not
  # the guest's, so the same boot runs once more, said in the log; its
  # console is kept beside (serial-N.log.crashed)
  if ((rc > 128 && timed_out == 0)) && [[ -z $stop_at && -z ${RIG_QEMU_AGAIN:-} ]]; then
    rig_log "boot $RIG_BOOT_N: QEMU died of signal $((rc - 128)) after $RIG_BOOT_SECONDS s (the emulator, not the guest): the same boot once more"
    cp "$RIG_SERIAL" "$RIG_SERIAL.crashed" 2>/dev/null
    : >"$RIG_REPORT"
    RIG_QEMU_AGAIN=1 rig_qemu "$@"
    return
  fi
  tr -d '\r' <"$RIG_REPORT" >"$RIG_REPORT.tmp" && mv "$RIG_REPORT.tmp" "$RIG_REPORT"
  ((timed_out == 0))
}

# rig_late_plug SOCKET N S (rig_boot_disk --late, in the background): S
# seconds after it starts (QEMU's start), or with RIG_LATE_AFTER=REGEX S
# seconds after the console (RIG_SERIAL) first matches REGEX, disk N's
# virtio-blk device added through QMP; prints QMP's answers, "console
# matched at T s", and "plugged at T s" when device_add returned
# {"return": {}}.
rig_late_plug() {
  local sock=$1 n=$2 s=$3 t0=$SECONDS
  rig_qmp_wait "$sock"
  if [[ -n ${RIG_LATE_AFTER:-} ]]; then
    rig_console_wait "$RIG_LATE_AFTER" || return 1
    echo "console matched at $((SECONDS - t0)) s"
  fi
  sleep "$s"
  rig_qmp "$sock" "$(printf '{"execute":"device_add","arguments":{"driver":"virtio-blk-pci","drive":"d%s","serial":"%s","id":"late%s"}}' \
      "$n" "${RIG_DISK_SERIAL[$n]}" "$n")" && echo "plugged at $((SECONDS - t0)) s"
}

# rig_qmp_wait SOCKET: until QEMU's QMP socket is there (10 s at most)
rig_qmp_wait() {
  local i
  for ((i = 0; i < 100; i++)); do [[ -S $1 ]] && return 0; sleep 0.1; done
  return 1
}
# rig_console_wait REGEX: until the console (RIG_SERIAL) matches REGEX
# (grep -E), RIG_CONSOLE_LINE the first match; 1 after RIG_TIMEOUT s or
# when the console is gone. No subshell: a kill of the caller's background
# job ends the wait too.
rig_console_wait() {
  local deadline=$((SECONDS + RIG_TIMEOUT))
  until RIG_CONSOLE_LINE=$(tr -d '\r' <"$RIG_SERIAL" 2>/dev/null | grep -Eo -m1 -- "$1"); do
    [[ -e $RIG_SERIAL ]] && ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
# rig_qmp SOCKET COMMAND...: QMP's capabilities, then each COMMAND (a JSON
# object) on SOCKET; prints QMP's answers; 0 when each returned {"return": {}}
rig_qmp() {
  local sock=$1 out; shift
  out=$({ printf '{"execute":"qmp_capabilities"}\n'; printf '%s\n' "$@"; sleep 2; } | socat -t 5 - "UNIX-CONNECT:$sock")
  printf '%s\n' "$out"
  (( $(grep -c '"return": {}' <<<"$out") == $# + 1 ))
}

# rig_bond_failover SOCKET (rig_boot_disk --qmp, with rig_failover_disk's
# disk attached): once the installed system's kiln-report says on the
# console which NIC is bond0's active one, that NIC's link goes down (QMP
# set_link, as a pulled cable); prints QMP's answers and "link of NIC
# (MAC) down at T s" when set_link returned {"return": {}}
rig_bond_failover() {
  local sock=$1 t0=$SECONDS line mac id
  rig_qmp_wait "$sock"
  rig_console_wait 'kiln-report: bond0 active NIC [^ ]+ [0-9a-f:]{17}' || return 1
  line=$RIG_CONSOLE_LINE mac=${RIG_CONSOLE_LINE##* }
  echo "console: $line (at $((SECONDS - t0)) s)"
  id=$(rig_nic_id "$mac") || { echo "no NIC of this machine has MAC $mac"; return 1; }
  rig_qmp "$sock" "{\"execute\":\"set_link\",\"arguments\":{\"name\":\"$id\",\"up\":false}}" &&
    echo "link of $id ($mac) down at $((SECONDS - t0)) s"
}
# rig_failover_disk: the disk (virtio serial kiln-failover) that makes the
# installed system's kiln-report wait for a bond to fail over, and the file
# it then fetches through the bond from nginx: RIG_FAILOVER_TOKEN, its one
# line. Call it after the install, before the boot that fails over.
rig_failover_disk() {
  if [[ -n ${RIG_REPLAY:-} ]]; then RIG_FAILOVER_TOKEN=$(cat "$RIG_REPLAY/www/failover.txt"); return; fi
  RIG_FAILOVER_TOKEN=failover-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
  echo "$RIG_FAILOVER_TOKEN" >"$RIG_TMP/www/failover.txt"
  rig_disk failover 1M
  printf '%s 80 /failover.txt\n' "$RIG_HTTP_IP" | dd of="${RIG_DISK[-1]}" conv=notrunc status=none
}

# rig_boot_disk [--uefi] [--without N]... [--late N:S] [--until REGEX] [--hold S]: boot
# the installed system from RIG_DISK (no kernel, no PXE): SeaBIOS with
# `-boot c` (it tries only the first disk: --without 0 leaves disk 0 off
# the command line, as a pulled disk), or with --uefi OVMF
# (OVMF_CODE_4M.fd and a fresh copy of OVMF_VARS_4M.fd per boot; OVMF
# writes to the second serial port too, which the report parser skips).
# The guest's NIC is on the rig's user network (restrict=on, the relays of
# RIG_NET_EXTRA such as Tang). Waits until the guest powers off (the
# bootable image's kiln-report unit does, after writing its report to
# ttyS1), or with --until until the console matches REGEX and --hold S
# seconds more have passed, or RIG_TIMEOUT. --late N:S leaves disk N out at
# power-on and plugs it in S seconds later (or S seconds after the console
# shows RIG_LATE_AFTER, rig_late_plug) (QMP device_add on a socket of
# this boot: a slow HBA or a disk that spins up late; its drive is there
# from the start, as the HBA's is); RIG_LATE_LOG holds QMP's answers.
# --qmp FUNC runs `FUNC SOCKET` in the background over the boot, SOCKET
# this boot's QMP (e.g. rig_bond_failover); its output goes to RIG_QMP_LOG. Sets
# RIG_REPORT, RIG_SERIAL, RIG_BOOT_SECONDS, RIG_UNTIL_SECONDS. Returns 0
# when the guest powered off with a complete report or REGEX matched, 1
# otherwise.
rig_boot_disk() {
  local fw=bios until= hold=0 i skip=" " late= late_s= qmp_fn=
  while (($#)); do
    case $1 in
      --uefi) fw=uefi; shift ;;
      --without) skip+="$2 "; shift 2 ;;
      --late) late=${2%%:*} late_s=${2#*:}; shift 2
              [[ $late =~ ^[0-9]+$ && $late_s =~ ^[0-9]+$ && -n ${RIG_DISK[$late]:-} ]] \
                || rig_die "rig_boot_disk: --late wants DISK:SECONDS, got '$late:$late_s'" ;;
      --until) until=$2; shift 2 ;;
      --hold) hold=$2; shift 2 ;;
      --qmp) qmp_fn=$2; shift 2 ;;
      *) rig_die "rig_boot_disk: unknown option '$1'" ;;
    esac
  done
  [[ -n $late && -n $qmp_fn ]] && rig_die "rig_boot_disk: --late and --qmp take the one QMP socket"
  RIG_BOOT_N=$((${RIG_BOOT_N:-0} + 1))
  if [[ -n ${RIG_REPLAY:-} ]]; then
    RIG_REPORT=$RIG_REPLAY/report-$RIG_BOOT_N.txt RIG_SERIAL=$RIG_REPLAY/serial-$RIG_BOOT_N.log
    RIG_BOOT_SECONDS=replay RIG_UNTIL_SECONDS=replay RIG_QMP_LOG=$RIG_REPLAY/qmp-$RIG_BOOT_N.log
    return 0
  fi
  RIG_SERIAL=$RIG_TMP/serial-$RIG_BOOT_N.log RIG_REPORT=$RIG_TMP/report-$RIG_BOOT_N.txt
  : >"$RIG_SERIAL"; : >"$RIG_REPORT"
  ln -sf "$RIG_SERIAL" "$RIG_TMP/serial.log"
  local args=(-accel tcg,thread=multi -cpu "$RIG_CPU" -m "$RIG_MEM" -smp "$RIG_SMP"
    -display none -monitor none -parallel none -no-reboot -nodefaults
    -smbios "type=1,manufacturer=kiln-rig,product=rig,serial=$RIG_SMBIOS_SERIAL,uuid=$RIG_SMBIOS_UUID"
    -serial "file:$RIG_SERIAL" -serial "file:$RIG_REPORT")
  if [[ $fw == uefi ]]; then
    rig_firmware_uefi args
  else
    args+=(-boot c)
  fi
  # a VGA adapter, as servers have: without one GRUB's i386-pc console (BIOS
  # int 10h) hangs before it loads the kernel
  args+=(-device VGA)
  # no option ROM on the NIC: the firmware boots the disks, not the network
  rig_nic_args args "user,id=n0,restrict=on,guestfwd=tcp:$RIG_HTTP_IP:80-cmd:$RIG_TMP/relay${RIG_NET_EXTRA:-}" ",romfile="
  local n=0 idx=1 c
  for c in $(rig_disk_controllers); do args+=(-device "$c"); done
  for i in "${!RIG_DISK[@]}"; do
    [[ $skip == *" $i "* ]] && continue
    if [[ $i == "$late" ]]; then
      args+=(-drive "$(rig_drive "$i")")
      continue
    fi
    args+=(-drive "$(rig_drive "$i")" -device "$(rig_disk_device "$i" "bootindex=$idx")")
    n=$((n + 1)) idx=$((idx + 1))
  done
  local qmp=$RIG_TMP/qmp-$RIG_BOOT_N.sock late_pid=
  if [[ -n $late || -n $qmp_fn ]]; then
    args+=(-qmp "unix:$qmp,server=on,wait=off")
    RIG_QMP_LOG=$RIG_TMP/qmp-$RIG_BOOT_N.log RIG_LATE_LOG=$RIG_TMP/qmp-$RIG_BOOT_N.log
    if [[ -n $late ]]; then rig_late_plug "$qmp" "$late" "$late_s"; else "$qmp_fn" "$qmp"; fi >"$RIG_QMP_LOG" 2>&1 &
    late_pid=$!; RIG_PIDS+=("$late_pid")
  fi
  rig_log "boot $RIG_BOOT_N (disks, $fw, $n of ${#RIG_DISK[@]} disks${late:+, disk $late plugged in $late_s s after ${RIG_LATE_AFTER:+/$RIG_LATE_AFTER/ on the console}${RIG_LATE_AFTER:-power-on}}${qmp_fn:+, $qmp_fn on QMP}, ${RIG_MEM} MiB): console $RIG_SERIAL"
  local rc=0
  RIG_UNTIL=$until RIG_HOLD=$hold rig_qemu "${args[@]}" || rc=1
  [[ -n $late_pid ]] && { kill "$late_pid" 2>/dev/null; wait "$late_pid" 2>/dev/null; }
  rig_log "boot $RIG_BOOT_N: guest stopped after $RIG_BOOT_SECONDS s, report $(wc -c <"$RIG_REPORT") bytes"
  ((rc == 0)) || return 1
  [[ -n $until ]] && return 0
  grep -q '^=== kiln-report end' "$RIG_REPORT" || { rig_log "the guest sent no complete report"; return 1; }
  return 0
}
